/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames to a pcap file (libpcap's format, nanosecond timestamps,
 * Ethernet link type), for the tools that write them: daqirictl capture
 * and daqiri-record. Each frame's time is given on CLOCK_MONOTONIC, as
 * the daemon stamps frames, and written as wall time (an offset taken
 * once at open), so tcpdump and tshark show when it arrived.
 */
#ifndef DAQIRI_PCAP_OUT_H
#define DAQIRI_PCAP_OUT_H

#include <stdbool.h>
#include <stdint.h>

struct pcap_out;

/*
 * Create path for frames of up to snap bytes each. An existing file is
 * refused unless force ("... exists; add --force to overwrite it").
 * Returns 0 with *out, or -1 with the reason on stderr.
 */
int pcap_out_open(struct pcap_out **out, const char *path, uint32_t snap,
		  bool force);

/* One frame: caplen bytes of data, of a frame len long, that arrived at
 * mono_ns. 0, or -1 with the reason on stderr (a full disk says so). */
int pcap_out_write(struct pcap_out *w, const void *data, uint32_t caplen,
		   uint32_t len, uint64_t mono_ns);

/* Bytes written so far (the file's size). */
uint64_t pcap_out_bytes(const struct pcap_out *w);

/* Flush and close (NULL-safe): 0, or -1 with the reason on stderr. */
int pcap_out_close(struct pcap_out *w);

#endif
