/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the config loader (daemon/cfg_*.c): every rule of the
 * configuration contract (REFERENCE.md) broken alone, with the exact
 * line:col and message; the whole-file problems; defaults, derived
 * geometry and the print/parse round trip of every shipped config.
 */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

/* A socket config with one CPU reorder: parses without a diagnostic. */
static const char base_sock[] =
"daqiri:\n"
"  cfg:\n"
"    version: 1\n"
"    master_core: 0\n"
"    stream_type: socket\n"
"    memory_regions:\n"
"    - name: frames\n"
"      kind: host\n"
"      num_bufs: 1024\n"
"      buf_size: 9000\n"
"    - name: tensors\n"
"      kind: host\n"
"      num_bufs: 4\n"
"      buf_size: 4096000\n"
"    interfaces:\n"
"    - name: sensor0\n"
"      address: 127.0.0.1\n"
"      socket_config:\n"
"        mode: server\n"
"        local_addr: udp://127.0.0.1:5005\n"
"      rx:\n"
"        queues:\n"
"        - name: q0\n"
"          id: 0\n"
"          cpu_core: 1\n"
"          batch_size: 64\n"
"          memory_regions: [frames]\n"
"        flows:\n"
"        - name: sensor\n"
"          id: 0\n"
"          action: {type: queue, id: 0}\n"
"          match: {udp_dst: 5005}\n"
"        reorder_configs:\n"
"        - name: tensor\n"
"          reorder_type: cpu\n"
"          memory_region: tensors\n"
"          payload_byte_offset: 50\n"
"          payload_bytes: 8000\n"
"          flow_ids: [0]\n"
"          method:\n"
"            seq_packets_per_batch:\n"
"              sequence_number: {bit_offset: 336, bit_width: 32}\n"
"              packets_per_batch: 128\n"
"          data_types: {input_type: int4, output_type: fp16}\n"
"  daemon:\n"
"    socket_mode: 0660\n";

/* A raw (DPDK vdev) config: header-data split, GPU reorder, tx. */
static const char base_raw[] =
"daqiri:\n"
"  cfg:\n"
"    version: 1\n"
"    master_core: 0\n"
"    stream_type: raw\n"
"    dpdk_args: [\"--vdev=net_pcap0,rx_pcap=in.pcap\", --no-huge]\n"
"    memory_regions:\n"
"    - name: hdr\n"
"      kind: huge\n"
"      num_bufs: 1024\n"
"      buf_size: 64\n"
"    - name: data\n"
"      kind: host_pinned\n"
"      num_bufs: 1024\n"
"      buf_size: 1984\n"
"    - name: out\n"
"      kind: device\n"
"      num_bufs: 8\n"
"      buf_size: 4063232\n"
"    - name: txbuf\n"
"      kind: huge\n"
"      num_bufs: 64\n"
"      buf_size: 2048\n"
"    interfaces:\n"
"    - name: port0\n"
"      address: net_pcap0\n"
"      rx:\n"
"        flow_isolation: true\n"
"        queues:\n"
"        - name: q0\n"
"          id: 0\n"
"          batch_size: 256\n"
"          memory_regions: [hdr, data]\n"
"        - name: q1\n"
"          id: 1\n"
"          batch_size: 256\n"
"          memory_regions: [hdr, data]\n"
"        flows:\n"
"        - name: f0\n"
"          id: 100\n"
"          action: {type: queue, id: 0}\n"
"          match: {udp_src: 4096, udp_dst: \"4096-4100\"}\n"
"        - name: f1\n"
"          id: 101\n"
"          action: {type: queue, id: 1}\n"
"          match: {ipv4_src: 10.0.0.1}\n"
"        reorder_configs:\n"
"        - name: r0\n"
"          reorder_type: gpu\n"
"          memory_region: out\n"
"          payload_byte_offset: 64\n"
"          flow_ids: [100]\n"
"          method:\n"
"            seq_batch_number:\n"
"              sequence_number: {bit_offset: 128, bit_width: 10}\n"
"              batch_number: {bit_offset: 144, bit_width: 2}\n"
"          data_types: {input_type: int4, output_type: fp32}\n"
"          window: 2\n"
"      tx:\n"
"        queues:\n"
"        - name: t0\n"
"          id: 0\n"
"          batch_size: 64\n"
"          memory_regions: [txbuf]\n"
"          offloads: [tx_eth_src]\n"
"          destination:\n"
"            eth_dst: \"02:00:00:00:00:02\"\n"
"            ipv4_src: 10.0.0.1\n"
"            ipv4_dst: 10.0.0.2\n"
"            udp_dst: 4096\n";

/* A DPDK tx queue's destination, for a second queue (see base_raw). */
#define TXDEST "          destination: {eth_dst: \"02:00:00:00:00:03\", " \
	"ipv4_src: 10.0.0.1, ipv4_dst: 10.0.0.3, udp_dst: 4097}\n"

#define SOCK base_sock
#define RAW base_raw
#define E CFG_SEV_ERROR
#define W CFG_SEV_WARNING

/*
 * One rule broken alone: `from` in the base is replaced by `to`, in which
 * '@' marks the place the one diagnostic must point at (it is removed
 * before parsing). The message must match exactly. A second replacement
 * (from2 -> to2, done first, no '@') keeps the rest of the config valid.
 */
struct rule_case {
	const char *name;
	const char *base;
	const char *from;
	const char *to;
	enum cfg_severity sev;
	const char *msg;
	const char *from2;
	const char *to2;
};

/* The one error of a file whose only interface, sensor0, is RDMA. */
#define RDMA_SENSOR0 "not supported by daqiri: RDMA: interface 'sensor0' " \
	"is not read (daqiri receives and sends UDP, through the socket or " \
	"the DPDK engine)"

static const struct rule_case rules[] = {
	/* unknown and duplicate keys, YAML shape */
	{ "unknown key, suggestion", SOCK, "          batch_size: 64",
	  "          @batch_sz: 64", E,
	  "unknown key 'batch_sz' in rx queue; did you mean 'batch_size'?", NULL, NULL },
	{ "unknown key, no suggestion", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    @frobnicate: 1\n", E,
	  "unknown key 'frobnicate' in cfg", NULL, NULL },
	{ "unknown key in reorder", SOCK, "          payload_byte_offset: 50",
	  "          @payload_byte_ofset: 50", E,
	  "unknown key 'payload_byte_ofset' in reorder config; did you mean "
	  "'payload_byte_offset'?", NULL, NULL },
	{ "duplicate key", SOCK, "          batch_size: 64\n",
	  "          batch_size: 64\n          @batch_size: 32\n", E,
	  "duplicate key 'batch_size' in rx queue (first at line 26)", NULL, NULL },
	{ "merge key", SOCK, "          cpu_core: 1\n",
	  "          cpu_core: 1\n          @<<: {}\n", E,
	  "'<<': not supported by daqiri: YAML merge keys (write each key "
	  "out)", NULL, NULL },
	{ "syntax error", SOCK, "          batch_size: 64\n",
	  "          batch_size: 64\n         @- [\n", E,
	  "YAML syntax error: did not find expected key while parsing a "
	  "block mapping", NULL, NULL },
	{ "tab indentation", SOCK, "          batch_size: 64\n",
	  "          batch_size: 64\n@\t  x: 1\n", E,
	  "YAML syntax error: found a tab character that violates "
	  "indentation while scanning a plain scalar", NULL, NULL },
	{ "no cfg under daqiri", SOCK, "daqiri:\n  cfg:\n",
	  "daqiri:\n  @daemon: {}\napplication:\n  cfg:\n", E,
	  "missing required key 'cfg' in daqiri", NULL, NULL },
	{ "misspelt cfg", SOCK, "daqiri:\n  cfg:\n", "daqiri:\n  @cgf:\n", E,
	  "unknown key 'cgf' in daqiri; did you mean 'cfg'?", NULL, NULL },
	{ "daemon inside cfg", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    @daemon: {}\n", E,
	  "daemon: goes beside cfg under daqiri, not inside cfg", NULL, NULL },
	{ "section of the wrong type", SOCK,
	  "      socket_config:\n        mode: server\n"
	  "        local_addr: udp://127.0.0.1:5005\n",
	  "      socket_config: @[server]\n", E,
	  "socket_config: expected a map, got a list", NULL, NULL },

	/* cfg scalars */
	{ "version 2", SOCK, "    version: 1", "    version: @2", E,
	  "version: must be 1, got 2", NULL, NULL },
	{ "version missing", SOCK, "  cfg:\n    version: 1\n    master_core",
	  "  cfg:\n    @master_core", E,
	  "missing required key 'version' in cfg", NULL, NULL },
	{ "stream_type misspelt", SOCK, "stream_type: socket",
	  "stream_type: @sockets", E,
	  "stream_type: unknown value 'sockets'; did you mean 'socket'? "
	  "(valid: raw, socket)", NULL, NULL },
	{ "engine ibverbs", SOCK, "    stream_type: socket\n",
	  "    stream_type: socket\n    engine: @ibverbs\n", E,
	  "engine: not supported by daqiri: ibverbs (daqiri's engines are "
	  "dpdk, for stream_type raw, and socket)", NULL, NULL },
	{ "engine against stream_type", SOCK, "    stream_type: socket\n",
	  "    stream_type: socket\n    engine: @dpdk\n", E,
	  "engine: dpdk does not serve stream_type socket (use socket)", NULL, NULL },
	{ "log_level", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    log_level: @warning\n", E,
	  "log_level: unknown value 'warning'; did you mean 'warn'? (valid: "
	  "trace, debug, info, warn, error, critical, off)", NULL, NULL },
	{ "loopback hw", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    loopback: @hw\n", E,
	  "loopback: not supported by daqiri: hardware loopback, hw (sw loops "
	  "transmitted packets back in software)", NULL, NULL },
	{ "legacy manager", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    @manager: dpdk\n", E,
	  "manager: not supported by daqiri: the legacy key (use stream_type "
	  "and engine)", NULL, NULL },
	{ "master_core negative", SOCK, "master_core: 0",
	  "master_core: @-1", E,
	  "master_core: must be between 0 and 4095, got -1", NULL, NULL },
	{ "rx_meta_buffers 0", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    rx_meta_buffers: @0\n", E,
	  "rx_meta_buffers: must be between 1 and 4294967295, got 0", NULL, NULL },
	{ "debug not a YAML 1.2 boolean", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    debug: @yes\n", E,
	  "debug: expected true or false, got 'yes'", NULL, NULL },
	{ "quoted number", SOCK, "master_core: 0", "master_core: @\"0\"", E,
	  "master_core: expected an integer, got the quoted string '0'", NULL, NULL },
	{ "fraction", SOCK, "batch_size: 64", "batch_size: @6.4", E,
	  "batch_size: expected an integer, got the fraction '6.4'", NULL, NULL },
	{ "empty value", SOCK, "batch_size: 64", "batch_size:@", E,
	  "batch_size: expected an integer, got an empty value", NULL, NULL },
	{ "list for a number", RAW,
	  "    dpdk_args: [\"--vdev=net_pcap0,rx_pcap=in.pcap\", --no-huge]",
	  "    dpdk_args: [\"--vdev=net_pcap0,rx_pcap=in.pcap\", --no-huge]\n"
	  "    loopback: \"\"\n    tx_meta_buffers: @[]", E,
	  "tx_meta_buffers: expected an integer, got a list", NULL, NULL },
	{ "dpdk_args with socket", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    @dpdk_args: [--no-huge]\n", W,
	  "dpdk_args: has no effect with stream_type socket", NULL, NULL },

	/* memory regions */
	{ "region name twice", SOCK, "    interfaces:\n",
	  "    - name: @frames\n      kind: host\n      num_bufs: 1\n"
	  "      buf_size: 1\n    interfaces:\n", E,
	  "name: memory region 'frames' is already defined at line 7", NULL, NULL },
	{ "region kind", SOCK, "      kind: host\n      num_bufs: 4\n",
	  "      kind: @gpu\n      num_bufs: 4\n", E,
	  "kind: unknown value 'gpu' (valid: huge, device, host_pinned, "
	  "host)", NULL, NULL },
	{ "num_bufs 0", SOCK, "num_bufs: 1024", "num_bufs: @0", E,
	  "num_bufs: must be between 1 and 4294967295, got 0", NULL, NULL },
	{ "negative buf_size", SOCK, "buf_size: 9000", "buf_size: @-9000", E,
	  "buf_size: must be between 1 and 1099511627776, got -9000", NULL, NULL },
	{ "huge buf_size", SOCK, "buf_size: 9000",
	  "buf_size: @99999999999999999999999", E,
	  "buf_size: must be between 1 and 1099511627776, got "
	  "99999999999999999999999", NULL, NULL },
	{ "access word", SOCK, "      buf_size: 9000\n",
	  "      buf_size: 9000\n      access: [local, @rdma_wrte]\n", E,
	  "access: unknown value 'rdma_wrte'; did you mean 'rdma_write'? "
	  "(valid: local, rdma_read, rdma_write)", NULL, NULL },
	{ "application-owned memory", SOCK, "      buf_size: 9000\n",
	  "      buf_size: 9000\n      owned: @false\n", E,
	  "owned: not supported by daqiri: memory the application "
	  "provides, owned: false (daqiri allocates every region, and seals "
	  "what it shares with consumers; leave owned out)", NULL, NULL },
	{ "unused region", SOCK, "    interfaces:\n",
	  "    - @name: spare\n      kind: host\n      num_bufs: 1\n"
	  "      buf_size: 1\n    interfaces:\n", W,
	  "memory region 'spare' is used by no queue and no reorder config", NULL, NULL },
	{ "region name with a slash", SOCK, "    interfaces:\n",
	  "    - name: @sp/are\n      kind: host\n      num_bufs: 1\n"
	  "      buf_size: 1\n    interfaces:\n", E,
	  "name: 'sp/are' may hold only letters, digits, '_', '-' and "
	  "'.'", NULL, NULL },
	{ "empty name", SOCK, "        - name: q0", "        - name: @\"\"", E,
	  "name: must not be empty", NULL, NULL },
	{ "name too long", SOCK, "        - name: q0", "        - name: @q"
	  "123456789012345678901234567890123456789012345678901234567890123",
	  E, "name: too long (64 bytes, at most 63)", NULL, NULL },
	{ "name is a list", SOCK, "        - name: q0", "        - name: @[q0]",
	  E, "name: expected a string, got a list", NULL, NULL },

	/* interfaces and socket_config */
	{ "interface name twice", SOCK,
	  "    interfaces:\n",
	  "    interfaces:\n    - name: sensor0\n      address: 127.0.0.2\n"
	  "      socket_config: {mode: server, local_addr: "
	  "\"udp://127.0.0.2:1\", remote_addr: \"udp://127.0.0.3:2\"}\n"
	  "      tx: {queues: [{name: a, id: 0, "
	  "batch_size: 1, memory_regions: [frames]}]}\n", E,
	  "@", NULL, NULL },
	{ "socket address not IPv4", SOCK, "address: 127.0.0.1",
	  "address: @localhost", E,
	  "address: a socket stream needs an IPv4 address, got 'localhost'", NULL, NULL },
	{ "raw address", RAW, "address: net_pcap0", "address: @eth0", E,
	  "address: expected a PCI address (dddd:bb:dd.f) or a DPDK vdev "
	  "name (net_...), got 'eth0'", NULL, NULL },
	{ "vdev not created", RAW, "address: net_pcap0",
	  "address: @net_pcap1", W,
	  "address: no --vdev=net_pcap1 in dpdk_args creates this device", NULL, NULL },
	{ "socket_config missing", SOCK,
	  "    - name: sensor0\n      address: 127.0.0.1\n      socket_config:"
	  "\n        mode: server\n        local_addr: udp://127.0.0.1:5005\n",
	  "    - @name: sensor0\n      address: 127.0.0.1\n", E,
	  "missing required key 'socket_config' in interface (stream_type "
	  "is socket)", NULL, NULL },
	{ "socket_config on raw", RAW, "      address: net_pcap0\n",
	  "      address: net_pcap0\n      @socket_config: {mode: server}\n",
	  E, "socket_config: only for stream_type socket", NULL, NULL },
	/* RDMA: one error at the first sign, nothing of the interface read
	 * (its client needs no remote_addr, its queues name no regions) */
	{ "roce_config", SOCK, "      rx:\n",
	  "      @roce_config: {transport_mode: RC}\n      rx:\n", E,
	  RDMA_SENSOR0, NULL, NULL },
	{ "roce endpoint", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @roce://127.0.0.1:5005", E, RDMA_SENSOR0, NULL, NULL },
	{ "roce client without remote_addr", SOCK,
	  "        mode: server\n        local_addr: udp://127.0.0.1:5005\n",
	  "        mode: client\n        local_addr: @roce://127.0.0.1\n", E,
	  RDMA_SENSOR0, NULL, NULL },
	{ "roce_config before the endpoint", SOCK,
	  "      socket_config:\n",
	  "      @rdma_config: {}\n      socket_config:\n", E,
	  RDMA_SENSOR0, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: roce://127.0.0.1:5005" },
	{ "endpoint scheme", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @udq://127.0.0.1:5005", E,
	  "local_addr: unknown scheme 'udq' (valid: udp, tcp)", NULL, NULL },
	{ "endpoint without scheme", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @127.0.0.1:5005", E,
	  "local_addr: expected udp://IPV4:PORT or tcp://IPV4:PORT, got "
	  "'127.0.0.1:5005'", NULL, NULL },
	{ "endpoint port", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @udp://127.0.0.1:65536", E,
	  "local_addr: '65536' is not a port (0..65535)", NULL, NULL },
	{ "server port 0", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @udp://127.0.0.1:0", E,
	  "local_addr: a server needs a port other than 0", NULL, NULL },
	{ "server without local_addr", SOCK,
	  "      socket_config:\n        mode: server\n"
	  "        local_addr: udp://127.0.0.1:5005\n",
	  "      socket_config:\n        @mode: server\n", E,
	  "socket_config: server mode needs local_addr", NULL, NULL },
	{ "client without remote_addr", SOCK, "mode: server",
	  "@mode: client", E, "socket_config: client mode needs remote_addr", NULL, NULL },
	{ "tcp remote_addr", SOCK, "        local_addr: udp://127.0.0.1:5005\n",
	  "        local_addr: udp://127.0.0.1:5005\n"
	  "        remote_addr: @tcp://127.0.0.1:6000\n", E,
	  "socket_config: not supported by daqiri: TCP, tcp:// (daqiri "
	  "receives and sends UDP datagrams, whose boundaries its frames and "
	  "reorder need; use udp://)", NULL, NULL },
	{ "tcp with a stream's max_payload_size", SOCK,
	  "        local_addr: udp://127.0.0.1:5005\n",
	  "        local_addr: @tcp://127.0.0.1:5005\n"
	  "        max_payload_size: 1048576\n", E,
	  "socket_config: not supported by daqiri: TCP, tcp:// (daqiri "
	  "receives and sends UDP datagrams, whose boundaries its frames and "
	  "reorder need; use udp://)", NULL, NULL },
	{ "min_ipg_ns", SOCK, "        local_addr: udp://127.0.0.1:5005\n",
	  "        local_addr: udp://127.0.0.1:5005\n        @min_ipg_ns: 100\n",
	  W, "min_ipg_ns: has no effect in daqiri (no inter-packet gap "
	  "control)", NULL, NULL },
	{ "legacy local_ip", SOCK, "        local_addr: udp://127.0.0.1:5005\n",
	  "        local_addr: udp://127.0.0.1:5005\n"
	  "        @local_ip: 127.0.0.1\n", E,
	  "local_ip: not supported by daqiri: the legacy form (use "
	  "local_addr: udp://IPV4:PORT)", NULL, NULL },
	{ "max_payload_size", SOCK, "        local_addr: udp://127.0.0.1:5005\n",
	  "        local_addr: udp://127.0.0.1:5005\n"
	  "        max_payload_size: @70000\n", E,
	  "max_payload_size: must be between 0 and 65535, got 70000", NULL, NULL },

	/* rx queues */
	{ "tx without queues", RAW, "      tx:\n        queues:\n"
	  "        - name: t0\n          id: 0\n          batch_size: 64\n"
	  "          memory_regions: [txbuf]\n          offloads: [tx_eth_src]\n"
	  "          destination:\n"
	  "            eth_dst: \"02:00:00:00:00:02\"\n"
	  "            ipv4_src: 10.0.0.1\n            ipv4_dst: 10.0.0.2\n"
	  "            udp_dst: 4096\n",
	  "      tx: @{}\n", E,
	  "missing required key 'queues' in tx",
	  "    - name: txbuf\n      kind: huge\n      num_bufs: 64\n"
	  "      buf_size: 2048\n", "" },
	{ "queue id twice", RAW, "        - name: q1\n          id: 1\n",
	  "        - @name: q1\n          id: 0\n", E,
	  "rx queue id 0 is already used by queue 'q0' at line 30",
	  "action: {type: queue, id: 1}", "action: {type: queue, id: 0}" },
	{ "queue name twice", RAW, "        - name: q1\n",
	  "        - @name: q0\n", E,
	  "rx queue name 'q0' is already used at line 30", NULL, NULL },
	{ "queue region unknown", SOCK, "memory_regions: [frames]",
	  "memory_regions: [@frame]", E,
	  "memory_regions: no memory region named 'frame'; did you mean "
	  "'frames'?", NULL, NULL },
	{ "queue regions empty", RAW, "          memory_regions: [hdr, data]\n"
	  "        flows:", "          memory_regions: @[]\n        flows:", E,
	  "memory_regions: must not be an empty list", NULL, NULL },
	{ "queue region twice", RAW, "          memory_regions: [hdr, data]\n"
	  "        flows:",
	  "          memory_regions: [hdr, @hdr]\n        flows:", E,
	  "memory_regions: 'hdr' is listed twice", NULL, NULL },
	{ "three queue regions", RAW, "          memory_regions: [hdr, data]\n"
	  "        flows:",
	  "          memory_regions: @[hdr, data, txbuf]\n        flows:",
	  E, "memory_regions: too many entries (3, at most 2)", NULL, NULL },
	{ "device region on a socket queue", SOCK, "      kind: host\n"
	  "      num_bufs: 1024", "      kind: device\n      num_bufs: 1024",
	  E, "@", NULL, NULL },
	{ "poll_mode direct", SOCK, "          batch_size: 64\n",
	  "          batch_size: 64\n          poll_mode: @direct\n", E,
	  "poll_mode: not supported by daqiri: direct polling (use "
	  "indirect)", NULL, NULL },
	{ "cpu_core string", SOCK, "cpu_core: 1", "cpu_core: @\"one\"", E,
	  "cpu_core: expected an integer, got the quoted string 'one'", NULL, NULL },
	{ "batch_size 0", SOCK, "batch_size: 64", "batch_size: @0", E,
	  "batch_size: must be between 1 and 65535, got 0", NULL, NULL },
	{ "batch_size missing", SOCK, "        - name: q0\n          id: 0\n"
	  "          cpu_core: 1\n          batch_size: 64\n",
	  "        - @name: q0\n          id: 0\n          cpu_core: 1\n", E,
	  "missing required key 'batch_size' in rx queue", NULL, NULL },
	{ "queue id out of range", SOCK, "        - name: q0\n          id: 0",
	  "        - name: q0\n          id: @65536", E,
	  "id: must be between 0 and 65535, got 65536", NULL, NULL },

	/* tx */
	{ "tx queue timeout_us", RAW, "          offloads: [tx_eth_src]\n",
	  "          offloads: [tx_eth_src]\n          @timeout_us: 5\n", W,
	  "timeout_us: has no effect on a tx queue", NULL, NULL },
	{ "tx offload", RAW, "offloads: [tx_eth_src]",
	  "offloads: [@tx_eth_dst]", E,
	  "offloads: unknown value 'tx_eth_dst'; did you mean 'tx_eth_src'? "
	  "(valid: tx_eth_src)", NULL, NULL },
	{ "tx pacing rates", RAW, "          offloads: [tx_eth_src]\n",
	  "          offloads: [tx_eth_src]\n          pacing_mbps: 100\n"
	  TXDEST "        - name: t1\n          id: 1\n          batch_size: 64\n"
	  "          memory_regions: [txbuf]\n          pacing_mbps: @200\n",
	  E, "pacing_mbps: daqiri paces all tx queues of an interface at one "
	  "rate; line 66 gives 100", NULL, NULL },
	/* a tx queue sends to its destination map: no tx flows, of any
	 * action (vlan_push included) */
	{ "tx flows", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n        @flows:\n"
	  "        - name: v\n          id: 1\n          actions:\n"
	  "          - type: vlan_push\n            vlan_id: 100\n"
	  "          - {type: queue, id: 0}\n", E,
	  "flows: not supported by daqiri: tx flows (a tx queue sends to "
	  "its destination map)", NULL, NULL },

	/* tx destination, DPDK: every header comes from it */
	{ "tx dest no eth_dst", RAW, "          destination:\n"
	  "            eth_dst: \"02:00:00:00:00:02\"\n"
	  "            ipv4_src: 10.0.0.1\n",
	  "          destination:\n            @ipv4_src: 10.0.0.1\n", E,
	  "missing required key 'eth_dst' in tx destination", NULL, NULL },
	/* (a missing key is reported at the map, its first key) */
	{ "tx dest no ipv4_src", RAW, "            eth_dst:",
	  "            @eth_dst:", E,
	  "missing required key 'ipv4_src' in tx destination",
	  "            ipv4_src: 10.0.0.1\n", "" },
	{ "tx dest no ipv4_dst", RAW, "            eth_dst:",
	  "            @eth_dst:", E,
	  "missing required key 'ipv4_dst' in tx destination",
	  "            ipv4_dst: 10.0.0.2\n", "" },
	{ "tx dest no udp_dst", RAW, "            eth_dst:",
	  "            @eth_dst:", E,
	  "missing required key 'udp_dst' in tx destination",
	  "            udp_dst: 4096\n", "            udp_src: 4096\n" },
	{ "tx no destination", RAW, "        - name: t0\n",
	  "        - @name: t0\n", E, "tx queue 't0' has no destination: "
	  "not supported by daqiri: frames built by the sender (daqiri writes "
	  "every header itself, so a consumer reaches only configured "
	  "destinations; give destination with eth_dst, ipv4_src, ipv4_dst "
	  "and udp_dst)", "          destination:\n"
	  "            eth_dst: \"02:00:00:00:00:02\"\n"
	  "            ipv4_src: 10.0.0.1\n            ipv4_dst: 10.0.0.2\n"
	  "            udp_dst: 4096\n", "" },
	{ "tx dest bad MAC", RAW, "eth_dst: \"02:00:00:00:00:02\"",
	  "eth_dst: @\"02:00:00:00:00:0g\"", E, "eth_dst: '02:00:00:00:00:0g' "
	  "is not a MAC address (six hex pairs joined by ':', as "
	  "02:00:5e:10:00:01)", NULL, NULL },
	{ "tx dest MAC too long", RAW, "eth_dst: \"02:00:00:00:00:02\"",
	  "eth_dst: @02:00:00:00:00:02:03", E, "eth_dst: '02:00:00:00:00:02:03' "
	  "is not a MAC address (six hex pairs joined by ':', as "
	  "02:00:5e:10:00:01)", NULL, NULL },
	{ "tx dest multicast source", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            eth_src: @03:00:00:00:00:01\n",
	  E, "eth_src: a source MAC address must be unicast and not all zeros",
	  "          offloads: [tx_eth_src]\n", "" },
	{ "tx dest eth_src and offload", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            @eth_src: 02:00:00:00:00:01\n",
	  E, "eth_src: the queue's offloads: [tx_eth_src] leaves the source MAC "
	  "to the NIC; give one or the other", NULL, NULL },
	{ "tx dest port 0", RAW, "udp_dst: 4096", "udp_dst: @0", E,
	  "udp_dst: must be between 1 and 65535, got 0", NULL, NULL },
	{ "tx dest port too big", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            udp_src: @65536\n", E,
	  "udp_src: must be between 1 and 65535, got 65536", NULL, NULL },
	{ "tx dest unknown key", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            @dscpp: 3\n", E,
	  "unknown key 'dscpp' in tx destination; did you mean 'dscp'?",
	  NULL, NULL },
	{ "tx dest ttl 0", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            ttl: @0\n", E,
	  "ttl: must be between 1 and 255, got 0", NULL, NULL },
	{ "tx dest dscp 64", RAW, "            udp_dst: 4096\n",
	  "            udp_dst: 4096\n            dscp: @64\n", E,
	  "dscp: must be between 0 and 63, got 64", NULL, NULL },
	{ "tx dest to 0.0.0.0", RAW, "ipv4_dst: 10.0.0.2",
	  "ipv4_dst: @0.0.0.0", E, "ipv4_dst: 0.0.0.0 is not a destination",
	  NULL, NULL },
	{ "tx dest not a map", RAW, "          destination:\n"
	  "            eth_dst: \"02:00:00:00:00:02\"\n"
	  "            ipv4_src: 10.0.0.1\n            ipv4_dst: 10.0.0.2\n"
	  "            udp_dst: 4096\n", "          destination: @10.0.0.2\n",
	  E, "destination: expected a map, got '10.0.0.2'", NULL, NULL },
	{ "tx accurate_send", RAW, "      tx:\n        queues:\n",
	  "      tx:\n        @accurate_send: true\n        queues:\n", W,
	  "accurate_send: has no effect in daqiri (no timestamped send)",
	  NULL, NULL },
	{ "tx two regions", RAW, "memory_regions: [txbuf]",
	  "memory_regions: @[txbuf, hdr]", E, "memory_regions: not supported "
	  "by daqiri: a tx queue's header region (daqiri writes every header "
	  "itself; give one region, the payload buffers)",
	  NULL, NULL },
	{ "loopback sw on the socket engine", SOCK, "    master_core: 0\n",
	  "    master_core: 0\n    loopback: @sw\n", E,
	  "loopback: sw is the dpdk engine's software loopback (stream_type: "
	  "raw); a socket stream loops back through the kernel: send to "
	  "127.0.0.1", NULL, NULL },
	{ "tx buffers too small", RAW, "memory_regions: [txbuf]",
	  "memory_regions: [@txbuf]", E, "memory_regions: buf_size 63 of "
	  "'txbuf' is less than the 64 bytes a tx queue's buffers need at "
	  "least", "      num_bufs: 64\n      buf_size: 2048\n",
	  "      num_bufs: 64\n      buf_size: 63\n" },

	/* tx destination, socket engine: socket_config gives it */
	/* a server's queue without one replies to the last peer (golden
	 * 112, 113); a client without remote_addr is told once */
	{ "socket tx client without remote_addr", SOCK, "mode: server",
	  "@mode: client", E, "socket_config: client mode needs remote_addr",
	  "      rx:\n", "      tx:\n        queues:\n        - {name: t0, "
	  "id: 0, batch_size: 8, memory_regions: [frames]}\n      rx:\n" },
	{ "socket tx without udp_dst", SOCK, "      rx:\n",
	  "      tx:\n        queues:\n        - {name: t0, id: 0, "
	  "batch_size: 8, memory_regions: [frames],\n           destination: "
	  "@{ipv4_dst: 127.0.0.1}}\n      rx:\n", E,
	  "tx queue 't0' has no udp_dst: set socket_config.remote_addr or "
	  "destination.udp_dst", NULL, NULL },
	{ "socket tx over tcp", SOCK, "local_addr: udp://127.0.0.1:5005",
	  "local_addr: @tcp://127.0.0.1:5005", E,
	  "socket_config: not supported by daqiri: TCP, tcp:// (daqiri "
	  "receives and sends UDP datagrams, whose boundaries its frames and "
	  "reorder need; use udp://)", "      rx:\n",
	  "      tx:\n        queues:\n        - {name: t0, id: 0, "
	  "batch_size: 8, memory_regions: [frames],\n           destination: "
	  "{ipv4_dst: 127.0.0.1, udp_dst: 5010}}\n      rx:\n" },
	{ "socket tx eth_dst", SOCK, "      rx:\n",
	  "      tx:\n        queues:\n        - {name: t0, id: 0, "
	  "batch_size: 8, memory_regions: [frames],\n           destination: "
	  "{@eth_dst: \"02:00:00:00:00:01\", ipv4_dst: 127.0.0.1, "
	  "udp_dst: 5010}}\n      rx:\n", W,
	  "eth_dst: has no effect with the socket engine (the kernel writes "
	  "Ethernet headers)", NULL, NULL },
	{ "socket tx offloads", SOCK, "      rx:\n",
	  "      tx:\n        queues:\n        - {name: t0, id: 0, "
	  "batch_size: 8, memory_regions: [frames], @offloads: [tx_eth_src],\n"
	  "           destination: {ipv4_dst: 127.0.0.1, udp_dst: 5010}}\n"
	  "      rx:\n", W, "offloads: has no effect with the socket engine "
	  "(the kernel writes Ethernet headers)", NULL, NULL },
	{ "socket tx from another address", SOCK, "      rx:\n",
	  "      tx:\n        queues:\n        - {name: t0, id: 0, "
	  "batch_size: 8, memory_regions: [frames],\n           destination: "
	  "{ipv4_src: @127.0.0.2, ipv4_dst: 127.0.0.1, udp_dst: 5010}}\n"
	  "      rx:\n", E, "ipv4_src: 127.0.0.2 is not local_addr's address "
	  "127.0.0.1; the socket engine sends from local_addr", NULL, NULL },

	/* flows */
	{ "action and actions", SOCK,
	  "          action: {type: queue, id: 0}\n",
	  "          action: {type: queue, id: 0}\n"
	  "          @actions: [{type: queue, id: 0}]\n", E,
	  "flow: give 'action' or 'actions', not both", NULL, NULL },
	{ "no action", SOCK, "        - name: sensor\n          id: 0\n"
	  "          action: {type: queue, id: 0}\n",
	  "        - @name: sensor\n          id: 0\n", E,
	  "missing required key 'action' in flow", NULL, NULL },
	{ "action names no queue", SOCK, "action: {type: queue, id: 0}",
	  "action: {type: queue, id: @3}", E, "id: no rx queue has id 3", NULL, NULL },
	{ "action id and ids", SOCK, "action: {type: queue, id: 0}",
	  "action: {type: queue, id: 0, @ids: [0]}", E,
	  "flow action: give 'id' or 'ids', not both", NULL, NULL },
	{ "vlan_pop", SOCK, "          action: {type: queue, id: 0}\n",
	  "          actions:\n          - type: @vlan_pop\n"
	  "          - {type: queue, id: 0}\n", E,
	  "type: not supported by daqiri: the vlan_pop action (a flow steers "
	  "packets to a queue: type queue)", NULL, NULL },
	{ "tunnel_decap", SOCK, "action: {type: queue, id: 0}",
	  "action: {type: @tunnel_decap}", E,
	  "type: not supported by daqiri: the tunnel_decap action (a flow "
	  "steers packets to a queue: type queue)", NULL, NULL },
	{ "queue action not last", SOCK,
	  "          action: {type: queue, id: 0}\n",
	  "          actions:\n          - @{type: queue, id: 0}\n"
	  "          - {type: queue, id: 0}\n", E,
	  "actions: the queue action must be the last one", NULL, NULL },
	{ "action type", SOCK, "action: {type: queue, id: 0}",
	  "action: {type: @queu, id: 0}", E,
	  "type: unknown value 'queu'; did you mean 'queue'? (valid: queue, "
	  "vlan_push, vlan_pop, tunnel_encap, tunnel_decap)", NULL, NULL },
	{ "flex_item_id", SOCK, "match: {udp_dst: 5005}",
	  "match: {@flex_item_id: 1}", E,
	  "flex_item_id: not supported by daqiri: flex-item matching (flows "
	  "match udp_src, udp_dst, ipv4_src, ipv4_dst and ipv4_len)", NULL,
	  NULL },
	{ "ecpri", SOCK, "match: {udp_dst: 5005}",
	  "match: {@ecpri: {msg_type: 0}}", E,
	  "ecpri: not supported by daqiri: eCPRI matching (flows match "
	  "udp_src, udp_dst, ipv4_src, ipv4_dst and ipv4_len)", NULL, NULL },
	{ "empty match", SOCK, "match: {udp_dst: 5005}", "match: @{}", E,
	  "match: empty; leave 'match' out to match every packet", NULL, NULL },
	{ "hex port", SOCK, "udp_dst: 5005", "udp_dst: @0x138D", E,
	  "udp_dst: expected a decimal integer, got '0x138D'", NULL, NULL },
	{ "port 0", SOCK, "udp_dst: 5005", "udp_dst: @0", E,
	  "udp_dst: must be between 1 and 65535, got 0", NULL, NULL },
	{ "port range reversed", SOCK, "udp_dst: 5005",
	  "udp_dst: @\"5010-5005\"", E,
	  "udp_dst: the range 5010-5005 is empty (the first port must not be "
	  "above the second)", NULL, NULL },
	{ "port range text", SOCK, "udp_dst: 5005", "udp_dst: @5005-x", E,
	  "udp_dst: expected a decimal port or a range \"LO-HI\", got "
	  "'5005-x'", NULL, NULL },
	{ "ipv4_src", RAW, "ipv4_src: 10.0.0.1", "ipv4_src: @10.0.0.256", E,
	  "ipv4_src: '10.0.0.256' is not an IPv4 address", NULL, NULL },
	{ "ipv4_len", RAW, "ipv4_src: 10.0.0.1", "ipv4_len: @10", E,
	  "ipv4_len: must be between 20 and 65535, got 10", NULL, NULL },
	{ "flow id twice", RAW, "        - name: f1\n          id: 101\n",
	  "        - @name: f1\n          id: 100\n", E,
	  "rx flow id 100 is already used by flow 'f0' at line 39", NULL, NULL },

	/* reorder configs */
	{ "reorder name is a queue's", SOCK, "        - name: tensor",
	  "        - name: @q0", E,
	  "name: 'q0' is also an rx queue's name (line 23); stream names "
	  "<interface>/<name> must be unique", NULL, NULL },
	{ "reorder_type", SOCK, "reorder_type: cpu", "reorder_type: @cuda",
	  E, "reorder_type: unknown value 'cuda' (valid: cpu, gpu)", NULL, NULL },
	{ "reorder region unknown", SOCK, "memory_region: tensors",
	  "memory_region: @tensor", E,
	  "memory_region: no memory region named 'tensor'; did you mean "
	  "'tensors'?", NULL, NULL },
	{ "cpu reorder into device memory", RAW,
	  "          reorder_type: gpu\n          memory_region: out",
	  "          reorder_type: cpu\n          memory_region: @out", E,
	  "memory_region: a cpu reorder cannot write to 'out', a device "
	  "region (use host, huge or host_pinned)", NULL, NULL },
	{ "gpu reorder into host memory", SOCK, "reorder_type: cpu\n"
	  "          memory_region: tensors", "reorder_type: gpu\n"
	  "          memory_region: @tensors", E,
	  "memory_region: a gpu reorder cannot write to 'tensors', a host "
	  "region (use device or host_pinned)", NULL, NULL },
	{ "flow_ids empty", SOCK, "flow_ids: [0]", "flow_ids: @[]", E,
	  "flow_ids: must not be an empty list", NULL, NULL },
	{ "flow_ids unknown", SOCK, "flow_ids: [0]", "flow_ids: [@7]", E,
	  "flow_ids: no rx flow has id 7", NULL, NULL },
	{ "flow_ids twice", RAW, "flow_ids: [100]", "flow_ids: [100, @100]",
	  E, "flow_ids: flow 100 is listed twice", NULL, NULL },
	{ "flow in two reorder configs", RAW, "          window: 2\n",
	  "          window: 2\n        - name: r1\n"
	  "          reorder_type: gpu\n          memory_region: out2\n"
	  "          payload_byte_offset: 64\n          flow_ids: [@100]\n"
	  "          method: {seq_packets_per_batch: {sequence_number: "
	  "{bit_offset: 0, bit_width: 16}, packets_per_batch: 256}}\n", E,
	  "flow_ids: flow 100 already belongs to reorder config 'r0' (line "
	  "52)", "    - name: txbuf\n", "    - name: out2\n      kind: device\n"
	  "      num_bufs: 8\n      buf_size: 4063232\n    - name: txbuf\n" },
	{ "gpu reorder fed by two queues", RAW, "flow_ids: [100]",
	  "@flow_ids: [100, 101]", E,
	  "flow_ids: its flows reach 2 rx queues, and a gpu reorder is fed "
	  "by one (its kernels run in one worker's order): give its flows "
	  "one queue, or use reorder_type: cpu with a host region", NULL,
	  NULL },
	{ "both methods", SOCK, "              packets_per_batch: 128\n",
	  "              packets_per_batch: 128\n"
	  "            @seq_batch_number: {}\n", E,
	  "method: give one of seq_batch_number and seq_packets_per_batch, "
	  "not both", NULL, NULL },
	{ "no method", SOCK, "          method:\n            seq_packets_per_"
	  "batch:\n              sequence_number: {bit_offset: 336, bit_width:"
	  " 32}\n              packets_per_batch: 128\n",
	  "          method: @{}\n", E,
	  "method: needs seq_batch_number or seq_packets_per_batch", NULL, NULL },
	{ "bit_width 33", SOCK, "bit_width: 32", "bit_width: @33", E,
	  "bit_width: must be between 1 and 32, got 33", NULL, NULL },
	{ "bit_width 0", RAW, "bit_offset: 144, bit_width: 2",
	  "bit_offset: 144, bit_width: @0", E,
	  "bit_width: must be between 1 and 32, got 0", NULL, NULL },
	{ "bit field missing width", SOCK,
	  "sequence_number: {bit_offset: 336, bit_width: 32}",
	  "sequence_number: @{bit_offset: 336}", E,
	  "missing required key 'bit_width' in sequence_number", NULL, NULL },
	{ "batch wider than sequence", RAW, "batch_number: {bit_offset: 144, "
	  "bit_width: 2}", "batch_number: @{bit_offset: 144, bit_width: 11}",
	  E, "batch_number: bit_width 11 is wider than the sequence_number's "
	  "10 (packets_per_batch = 2^seq_bits / 2^batch_bits)", NULL, NULL },
	{ "ppb does not divide", SOCK, "packets_per_batch: 128",
	  "packets_per_batch: @100", E,
	  "packets_per_batch: 100 does not divide the 2^32 sequence numbers; "
	  "use a power of two up to 16777216", NULL, NULL },
	{ "ppb 0", SOCK, "packets_per_batch: 128", "packets_per_batch: @0",
	  E, "packets_per_batch: must be between 1 and 4294967295, got 0", NULL, NULL },
	{ "input_type", SOCK, "input_type: int4", "input_type: @uint8", E,
	  "input_type: unknown value 'uint8'; did you mean 'int8'? (valid: "
	  "int4, int8, int16, int32)", NULL, NULL },
	{ "output_type missing", SOCK,
	  "data_types: {input_type: int4, output_type: fp16}",
	  "data_types: @{input_type: int4}", E,
	  "missing required key 'output_type' in data_types", NULL, NULL },
	{ "input and input_type", SOCK,
	  "data_types: {input_type: int4, output_type: fp16}",
	  "data_types: {input_type: int4, output_type: fp16, @input: int4}",
	  E, "data_types: 'input_type' and 'input' are the same key; give "
	  "one", NULL, NULL },
	{ "endianness", SOCK, "output_type: fp16}",
	  "output_type: fp16, endianness: @big}", E,
	  "endianness: unknown value 'big' (valid: host, network)", NULL, NULL },
	{ "fill nan with int32", SOCK, "output_type: fp16}\n",
	  "output_type: int8}\n          fill: @nan\n", E,
	  "fill: nan needs a floating-point output_type (fp16, bf16, fp32 or "
	  "fp64)", NULL, NULL },
	{ "window 65", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          window: @65\n", E,
	  "window: must be between 1 and 64, got 65", NULL, NULL },
	/* the reference's newest reorder keys */
	{ "reorder_engine hw", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          reorder_engine: @hw\n", E,
	  "reorder_engine: not supported by daqiri: NIC hardware reorder "
	  "(daqiri places every payload in software, on the CPU or with its "
	  "GPU kernel; use sw)", NULL, NULL },
	{ "reorder_engine unknown", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          reorder_engine: @nic\n", E,
	  "reorder_engine: unknown value 'nic' (valid: sw, hw)", NULL, NULL },
	{ "missing_action unknown", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          missing_action: @skip\n", E,
	  "missing_action: unknown value 'skip' (valid: passthrough, "
	  "drop)", NULL, NULL },
	{ "cyclic_sequence not a boolean", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          cyclic_sequence: @yes\n", E,
	  "cyclic_sequence: expected true or false, got 'yes'", NULL, NULL },
	{ "fill with missing_action drop", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          @fill: nan\n"
	  "          missing_action: drop\n", W,
	  "fill: has no effect with missing_action drop (no tensor with a "
	  "missing slot is published)", NULL, NULL },
	{ "window capped", RAW, "          window: 2\n",
	  "          @window: 4\n", W,
	  "window: 4 capped to 2: the batch-id space has only 4 ids", NULL, NULL },
	{ "default window capped", RAW, "          window: 2\n", "", W, "@", NULL, NULL },
	{ "payload not whole elements", SOCK, "payload_bytes: 8000",
	  "payload_bytes: @7999", E,
	  "payload_bytes: 7999 is not a whole number of int16 elements (16 "
	  "bits each)", "input_type: int4", "input_type: int16" },
	{ "tensor larger than the buffer", SOCK, "      buf_size: 4096000",
	  "      buf_size: 4095999", E, "@", NULL, NULL },
	{ "payload does not fit the frames", SOCK, "payload_bytes: 8000",
	  "payload_bytes: @8951", E, "@", NULL, NULL },
	{ "payload cannot be derived", RAW, "payload_byte_offset: 64",
	  "payload_byte_offset: 2048", E, "@", NULL, NULL },
	{ "timeout_us negative", SOCK, "output_type: fp16}\n",
	  "output_type: fp16}\n          timeout_us: @-1\n", E,
	  "timeout_us: must be between 0 and 4294967295, got -1", NULL, NULL },

	/* one set of limits (daqiri_limits.h): what no stream can serve */
	{ "tensor num_bufs beyond the ring", SOCK, "      num_bufs: 4\n",
	  "      num_bufs: @65537\n", E,
	  "num_bufs: 65537 tensor buffers in region 'tensors', the output of "
	  "reorder config 'tensor'; a stream has at most 65536 "
	  "(DAQIRI_NBUFS_MAX: every buffer must fit a subscription's release "
	  "ring)", NULL, NULL },
	{ "packets_per_batch 2^25", SOCK, "packets_per_batch: 128",
	  "packets_per_batch: @33554432", E,
	  "packets_per_batch: 33554432 is more than a tensor holds: at most "
	  "2^24 = 16777216 packets (DAQIRI_PPB_MAX)", NULL, NULL },
	{ "batch field leaves 2^25 packets", SOCK,
	  "            seq_packets_per_batch:\n"
	  "              sequence_number: {bit_offset: 336, bit_width: 32}\n"
	  "              packets_per_batch: 128\n",
	  "            seq_batch_number:\n"
	  "              sequence_number: {bit_offset: 336, bit_width: 32}\n"
	  "              batch_number: @{bit_offset: 336, bit_width: 7}\n", E,
	  "batch_number: bit_width 7 leaves 2^25 packets per batch "
	  "(sequence_number bit_width 32 - 7); a tensor holds at most 2^24 = "
	  "16777216 packets (DAQIRI_PPB_MAX)", NULL, NULL },

	/* daemon: */
	{ "socket_mode decimal", SOCK, "socket_mode: 0660",
	  "socket_mode: @660", E,
	  "socket_mode: expected an octal mode with a leading 0 such as "
	  "0660, got '660'", NULL, NULL },
	{ "socket_mode too big", SOCK, "socket_mode: 0660",
	  "socket_mode: @01777", E,
	  "socket_mode: must be between 0 and 0777, got '01777'", NULL, NULL },
	{ "control_socket relative", SOCK, "    socket_mode: 0660\n",
	  "    socket_mode: 0660\n    control_socket: @run/d.sock\n", E,
	  "control_socket: must be an absolute path, got 'run/d.sock'", NULL, NULL },
	{ "max_consumers 0", SOCK, "    socket_mode: 0660\n",
	  "    socket_mode: 0660\n    max_consumers: @0\n", E,
	  "max_consumers: must be between 1 and 4096, got 0", NULL, NULL },
	{ "metrics_listen", SOCK, "    socket_mode: 0660\n",
	  "    socket_mode: 0660\n    metrics_listen: @localhost:9464\n", E,
	  "metrics_listen: expected IPV4:PORT, [IPV6]:PORT or unix:/PATH such as 127.0.0.1:9464, got "
	  "'localhost:9464'", NULL, NULL },
	{ "admin_group", SOCK, "    socket_mode: 0660\n",
	  "    socket_mode: 0660\n    admin_group: @\"a b\"\n", E,
	  "admin_group: 'a b' is not a group name", NULL, NULL },
	{ "daemon unknown key", SOCK, "    socket_mode: 0660\n",
	  "    socket_mode: 0660\n    @stats_interval: 5\n", E,
	  "unknown key 'stats_interval' in daemon; did you mean "
	  "'stats_interval_ms'?", NULL, NULL },
};

/*
 * Messages that hold numbers the case computes, or whose wording is
 * checked against a fixed expectation below (the "@" placeholders above).
 */
static const char *
computed_msg(const struct rule_case *rule)
{
	if (strcmp(rule->name, "interface name twice") == 0)
		return "name: interface 'sensor0' is already defined at line 16";
	if (strcmp(rule->name, "device region on a socket queue") == 0)
		return "memory_regions: socket streams receive into host "
		    "memory; 'frames' is a device region";
	if (strcmp(rule->name, "default window capped") == 0)
		return "window: 4 (the default) capped to 2: the batch-id space "
		    "has only 4 ids";
	if (strcmp(rule->name, "tensor larger than the buffer") == 0)
		return "memory_region: buf_size 4095999 of 'tensors' is smaller "
		    "than one tensor: packets_per_batch 128 x slot bytes 32000 "
		    "= 4096000";
	if (strcmp(rule->name, "payload does not fit the frames") == 0)
		return "payload_bytes: payload_byte_offset 50 + payload_bytes "
		    "8951 = 9001 bytes do not fit the 9000-byte frames of rx "
		    "queue 'q0'";
	if (strcmp(rule->name, "payload cannot be derived") == 0)
		return "payload_bytes: cannot be derived: frames of rx queue "
		    "'q0' hold at most 2048 bytes, not more than "
		    "payload_byte_offset 2048; set payload_bytes";
	return rule->msg;
}

/* Where a computed message points when the replacement has no '@'. */
static void
computed_pos(const struct rule_case *rule, const char *text, int *line,
	     int *col)
{
	const char *p = NULL;

	if (strcmp(rule->name, "interface name twice") == 0)
		p = strstr(text, "- name: sensor0\n      address: 127.0.0.1") +
		    2 + 6;
	else if (strcmp(rule->name, "device region on a socket queue") == 0)
		p = strstr(text, "[frames]") + 1;
	else if (strcmp(rule->name, "default window capped") == 0)
		p = strstr(text, "method:\n            seq_batch_number");
	else if (strcmp(rule->name, "tensor larger than the buffer") == 0)
		p = strstr(text, "memory_region: tensors") + 15;
	else if (strcmp(rule->name, "payload does not fit the frames") == 0)
		p = strstr(text, "payload_bytes: 8951") + 15;
	else if (strcmp(rule->name, "payload cannot be derived") == 0)
		p = strstr(text, "- name: r0") + 2;
	ck_assert_msg(p != NULL, "%s: no position", rule->name);
	*line = 1;
	for (const char *s = text; s < p; s++)
		if (*s == '\n')
			(*line)++;
	*col = (int)(p - text);
	for (const char *s = p; s > text && s[-1] != '\n'; s--)
		;
	{
		const char *bol = p;

		while (bol > text && bol[-1] != '\n')
			bol--;
		*col = (int)(p - bol) + 1;
	}
}

/* base with its first `from` replaced by `to`; *mark = offset of '@'
 * (removed), or -1. */
static char *
build(const char *base, const char *from, const char *to, long *mark)
{
	const char *at = strstr(base, from);
	size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n), *o;

	ck_assert_msg(at != NULL, "'%s' is not in the base config", from);
	ck_assert_ptr_nonnull(out);
	memcpy(out, base, (size_t)(at - base));
	o = out + (at - base);
	*mark = -1;
	for (const char *s = to; *s != '\0'; s++) {
		if (*s == '@' && *mark < 0) {
			*mark = (long)(o - out);
			continue;
		}
		*o++ = *s;
	}
	strcpy(o, at + strlen(from));
	return out;
}

static void
pos_of_offset(const char *text, long off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (long i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static void
dump_diags(const struct cfg_diags *d)
{
	cfg_diags_print(d, stderr);
}

static struct cfg *
new_cfg(void)
{
	struct cfg *c = malloc(sizeof(*c));

	ck_assert_ptr_nonnull(c);
	return c;
}

static struct cfg_diags *
new_diags(void)
{
	struct cfg_diags *d = malloc(sizeof(*d));

	ck_assert_ptr_nonnull(d);
	return d;
}

START_TEST(test_bases_are_clean)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	const char *bases[] = { base_sock, base_raw };

	for (int i = 0; i < 2; i++) {
		int rc = cfg_parse(bases[i], strlen(bases[i]), "t.yaml", c, d);

		if (d->ndiags)
			dump_diags(d);
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(d->ndiags, 0);
	}
	free(c);
	free(d);
}
END_TEST

/* The limits themselves pass, and a receive region (not a stream's
 * tensors) may have more buffers than a ring. */
START_TEST(test_limits_at_maximum)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	long mark;
	char *t1 = build(base_sock, "      num_bufs: 4\n",
	    "      num_bufs: 65536\n", &mark);
	char *t2 = build(t1, "      num_bufs: 1024\n",
	    "      num_bufs: 100000\n", &mark);
	char *t3 = build(base_sock, "packets_per_batch: 128",
	    "packets_per_batch: 16777216", &mark);
	char *t4 = build(t3, "      buf_size: 4096000",
	    "      buf_size: 536870912000", &mark);
	int rc;

	rc = cfg_parse(t2, strlen(t2), "t.yaml", c, d);
	if (d->ndiags)
		dump_diags(d);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(c->regions[1].num_bufs, DAQIRI_NBUFS_MAX);
	rc = cfg_parse(t4, strlen(t4), "t.yaml", c, d);
	if (d->ndiags)
		dump_diags(d);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(c->interfaces[0].rx.reorders[0].packets_per_batch,
	    DAQIRI_PPB_MAX);
	/* the limits the checker applies are the ring's and the protocol's */
	ck_assert_uint_eq(DAQIRI_NBUFS_MAX, DAQIRI_RING_DEPTH_MAX);
	ck_assert_uint_eq(CFG_NAME_MAX, DAQIRI_NAME_MAX);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_rule)
{
	const struct rule_case *rule = &rules[_i];
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	const char *msg = computed_msg(rule);
	long mark;
	char *base2 = NULL, *text;
	int line, col, ret;

	if (rule->from2 != NULL) {
		base2 = build(rule->base, rule->from2, rule->to2, &mark);
		ck_assert_int_eq(mark, -1);
	}
	text = build(base2 ? base2 : rule->base, rule->from, rule->to, &mark);

	if (mark >= 0)
		pos_of_offset(text, mark, &line, &col);
	else
		computed_pos(rule, text, &line, &col);
	ret = cfg_parse(text, strlen(text), "t.yaml", c, d);
	if (d->ndiags != 1 || d->diags[0].pos.line != line ||
	    d->diags[0].pos.col != col || strcmp(d->diags[0].msg, msg) != 0 ||
	    d->diags[0].severity != rule->sev) {
		fprintf(stderr, "case '%s': want %d:%d: %s\n", rule->name, line,
			col, msg);
		dump_diags(d);
	}
	ck_assert_msg(d->ndiags == 1, "%s: %d diagnostics", rule->name,
		      d->ndiags);
	ck_assert_msg(d->diags[0].severity == rule->sev, "%s: severity",
		      rule->name);
	ck_assert_msg(d->diags[0].pos.line == line && d->diags[0].pos.col == col,
		      "%s: at %d:%d, want %d:%d", rule->name,
		      d->diags[0].pos.line, d->diags[0].pos.col, line, col);
	ck_assert_str_eq(d->diags[0].msg, msg);
	ck_assert_int_eq(ret, rule->sev == CFG_SEV_ERROR ? -1 : 0);
	ck_assert_int_eq(d->nerrors, rule->sev == CFG_SEV_ERROR ? 1 : 0);
	free(base2);
	free(text);
	free(c);
	free(d);
}
END_TEST

/* Parse text; one diagnostic expected, about the whole file. */
static void
expect_whole_file(const char *text, size_t len, const char *msg)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();

	ck_assert_int_eq(cfg_parse(text, len, "w.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, 1);
	ck_assert_int_eq(d->diags[0].pos.line, 0);
	ck_assert_int_eq(d->diags[0].pos.col, 0);
	ck_assert_str_eq(d->diags[0].msg, msg);
	free(c);
	free(d);
}

START_TEST(test_whole_file)
{
	static const char nul[] = "daqiri:\n  cfg: \0\n";
	static const char ctl[] = "daqiri:\n\x01";
	static const char utf[] = "daqiri: \"\xc3\x28\"\n";
	static const char overlong[] = "a: \xc0\xaf\n";
	static const char cut[] = "a: \xe2\x82";

	expect_whole_file("", 0, "file is empty");
	expect_whole_file("# just a comment\n\n", 18,
			  "no YAML document in the file (only comments or "
			  "blank lines)");
	expect_whole_file(nul, sizeof(nul) - 1,
			  "not a text file (a NUL byte at offset 15)");
	expect_whole_file(ctl, sizeof(ctl) - 1,
			  "not a text file (a control character at offset 8)");
	expect_whole_file(utf, sizeof(utf) - 1,
			  "not a text file (invalid UTF-8 at offset 9)");
	expect_whole_file(overlong, sizeof(overlong) - 1,
			  "not a text file (invalid UTF-8 at offset 3)");
	expect_whole_file(cut, sizeof(cut) - 1,
			  "not a text file (invalid UTF-8 at offset 3)");
}
END_TEST

START_TEST(test_load_errors)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	char path[] = "/tmp/check_config.XXXXXX";
	char path_fifo[64];
	int fd;

	snprintf(path_fifo, sizeof(path_fifo), "/tmp/check_config.%d.fifo",
		 (int)getpid());
	ck_assert_int_eq(cfg_load("/nonexistent/daqirid.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, 1);
	ck_assert_str_eq(d->file, "/nonexistent/daqirid.yaml");
	ck_assert_str_eq(d->diags[0].msg,
			 "cannot read: No such file or directory");
	ck_assert_int_eq(cfg_load("/", c, d), -1);
	ck_assert_str_eq(d->diags[0].msg, "cannot read: a directory, not a "
			 "regular file (a configuration is read from a file "
			 "only)");
	/* a FIFO nobody writes to is refused at once, not waited on */
	ck_assert_int_eq(mkfifo(path_fifo, 0600), 0);
	ck_assert_int_eq(cfg_load(path_fifo, c, d), -1);
	ck_assert_str_eq(d->diags[0].msg, "cannot read: a FIFO, not a "
			 "regular file (a configuration is read from a file "
			 "only)");
	unlink(path_fifo);
	ck_assert_int_eq(cfg_load("/dev/zero", c, d), -1);
	ck_assert_str_eq(d->diags[0].msg, "cannot read: a character device, "
			 "not a regular file (a configuration is read from a "
			 "file only)");

	/* a file that loads goes through cfg_parse with its name */
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, base_sock, strlen(base_sock)),
			 (int)strlen(base_sock));
	close(fd);
	ck_assert_int_eq(cfg_load(path, c, d), 0);
	ck_assert_int_eq(d->ndiags, 0);
	ck_assert_str_eq(d->file, path);
	unlink(path);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_second_document)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	size_t n = strlen(base_sock);
	char *text = malloc(n + 16);

	ck_assert_ptr_nonnull(text);
	memcpy(text, base_sock, n);
	memcpy(text + n, "---\nx: 1\n", 10);
	ck_assert_int_eq(cfg_parse(text, strlen(text), "t.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, 1);
	/* the second document's root, on the line after its "---" */
	{
		int lines = 0;

		for (const char *p = base_sock; *p != '\0'; p++)
			lines += *p == '\n';
		ck_assert_int_eq(d->diags[0].pos.line, lines + 2);
	}
	ck_assert_int_eq(d->diags[0].pos.col, 1);
	ck_assert_str_eq(d->diags[0].msg,
			 "a second YAML document; a config file holds one");
	free(text);
	free(c);
	free(d);
}
END_TEST

/* Deep flow nesting is refused up front (libyaml is quadratic in it). */
START_TEST(test_deep_nesting)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	size_t n = 100000;
	char *t = malloc(2 * n + 16);

	ck_assert_ptr_nonnull(t);
	memcpy(t, "x:\n  y: ", 8);
	memset(t + 8, '[', n);
	ck_assert_int_eq(cfg_parse(t, n + 8, "t.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, 1);
	ck_assert_int_eq(d->diags[0].pos.line, 2);
	ck_assert_int_eq(d->diags[0].pos.col, 6 + 64);	/* the 65th [ */
	ck_assert_str_eq(d->diags[0].msg,
			 "brackets nested more than 64 levels deep");
	/* 64 levels are fine for the scanner (and wrong for the schema) */
	memset(t + 8 + 64, ']', 64);
	ck_assert_int_eq(cfg_parse(t, 8 + 128, "t.yaml", c, d), -1);
	ck_assert_str_eq(d->diags[0].msg, "no daqiri configuration here: "
			 "expected 'daqiri: {cfg: ...}' at the top level");
	free(t);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_not_daqiri)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	const char *t = "app: {x: 1}\n";

	ck_assert_int_eq(cfg_parse(t, strlen(t), "t.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, 1);
	ck_assert_str_eq(d->diags[0].msg, "no daqiri configuration here: "
			 "expected 'daqiri: {cfg: ...}' at the top level");
	t = "- 1\n";
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t.yaml", c, d), -1);
	ck_assert_str_eq(d->diags[0].msg, "the top level must be a map "
			 "(daqiri: {cfg: ...}), got a list");
	free(c);
	free(d);
}
END_TEST

/* Every problem is reported, in file order, and printed as
 * file:line:col: error|warning: message. */
START_TEST(test_all_reported_in_order)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	long m;
	char *t1 = build(base_sock, "cpu_core: 1", "cpu_core: -1", &m);
	char *t2 = build(t1, "version: 1", "version: 3", &m);
	char *t3 = build(t2, "socket_mode: 0660", "socket_mode: 7", &m);
	char *t4 = build(t3, "    interfaces:\n", "    - {name: spare, kind: "
			 "host, num_bufs: 1, buf_size: 1}\n    interfaces:\n",
			 &m);

	ck_assert_int_eq(cfg_parse(t4, strlen(t4), "x.yaml", c, d), -1);
	ck_assert_int_eq(d->nerrors, 3);
	ck_assert_int_eq(d->nwarnings, 1);
	fp = open_memstream(&buf, &len);
	cfg_diags_print(d, fp);
	fclose(fp);
	ck_assert_str_eq(buf,
	    "x.yaml:3:14: error: version: must be 1, got 3\n"
	    "x.yaml:15:7: warning: memory region 'spare' is used by no queue "
	    "and no reorder config\n"
	    "x.yaml:26:21: error: cpu_core: must be between 0 and 4095, got -1\n"
	    "x.yaml:47:18: error: socket_mode: expected an octal mode with a "
	    "leading 0 such as 0660, got '7'\n");
	free(buf);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
	free(c);
	free(d);
}
END_TEST

/* More problems than CFG_MAX_DIAGS: all counted, the first kept. */
START_TEST(test_many_errors)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	size_t cap = 400 * 32 + 64, o;
	char *t = malloc(cap);

	o = (size_t)sprintf(t, "daqiri:\n  cfg:\n");
	for (int i = 0; i < 400; i++)
		o += (size_t)sprintf(t + o, "    bogus%d: 1\n", i);
	ck_assert_int_eq(cfg_parse(t, o, "t.yaml", c, d), -1);
	ck_assert_int_eq(d->ndiags, CFG_MAX_DIAGS);
	ck_assert_int_eq(d->nerrors, 400 + 5);
	free(t);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_defaults_and_geometry)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	const struct cfg_interface *ifc;
	const struct cfg_reorder *r;

	ck_assert_int_eq(cfg_parse(base_sock, strlen(base_sock), "t", c, d), 0);
	ck_assert_int_eq(c->version, 1);
	ck_assert_int_eq(c->stream_type, CFG_STREAM_SOCKET);
	ck_assert_int_eq(c->engine, CFG_ENGINE_SOCKET);
	ck_assert_int_eq(c->log_level, CFG_LOG_WARN);
	ck_assert_uint_eq(c->tx_meta_buffers, 256);
	ck_assert_uint_eq(c->rx_meta_buffers, 256);
	ck_assert_str_eq(c->daemon.control_socket, "/run/daqiri/daqirid.sock");
	ck_assert_uint_eq(c->daemon.socket_mode, 0660);
	ck_assert_uint_eq(c->daemon.max_consumers, 64);
	ck_assert_uint_eq(c->daemon.stats_interval_ms, 1000);
	ck_assert_str_eq(c->daemon.metrics_listen, "");
	ifc = cfg_interface_find(c, "sensor0");
	ck_assert_ptr_nonnull(ifc);
	ck_assert_ptr_null(cfg_interface_find(c, "sensor1"));
	ck_assert(ifc->socket.present);
	ck_assert_int_eq(ifc->socket.mode, CFG_SOCK_SERVER);
	ck_assert_uint_eq(ifc->socket.local.addr, 0x7f000001u);
	ck_assert_uint_eq(ifc->socket.local.port, 5005);
	ck_assert_int_eq(ifc->socket.retry_connect_s, 1);
	ck_assert_int_eq(ifc->rx.queues[0].cpu_core, 1);
	ck_assert_uint_eq(ifc->rx.queues[0].timeout_us, 0);
	ck_assert_int_eq(ifc->rx.queues[0].region_idx[0],
			 cfg_region_find(c, "frames"));
	ck_assert(ifc->rx.flows[0].has_match);
	ck_assert_uint_eq(ifc->rx.flows[0].match.udp_dst_lo, 5005);
	ck_assert_uint_eq(ifc->rx.flows[0].match.udp_dst_hi, 5005);
	r = &ifc->rx.reorders[0];
	ck_assert_int_eq(r->region_idx, cfg_region_find(c, "tensors"));
	ck_assert_uint_eq(r->payload_bytes, 8000);
	ck_assert_uint_eq(r->slot_bytes, 32000);
	ck_assert_uint_eq(r->packets_per_batch, 128);
	ck_assert_uint_eq(r->window, CFG_WINDOW_DEFAULT);
	ck_assert_int_eq(r->fill, DAQIRI_FILL_ZERO);
	ck_assert_uint_eq(r->timeout_us, CFG_REORDER_TIMEOUT_US_DEFAULT);
	ck_assert_int_eq(r->endianness, CFG_ENDIAN_HOST);
	ck_assert_int_eq(r->missing_action, CFG_MISSING_PASSTHROUGH);
	ck_assert(!r->cyclic_sequence);

	/* REFERENCE.md: seq {128,10} batch {144,2} -> ppb 256; int4 -> fp32
	 * at offset 64 of 2048-byte frames: 1984 bytes in, 15872 a slot */
	ck_assert_int_eq(cfg_parse(base_raw, strlen(base_raw), "t", c, d), 0);
	r = &c->interfaces[0].rx.reorders[0];
	ck_assert_uint_eq(r->packets_per_batch, 256);
	ck_assert_uint_eq(r->payload_bytes, 1984);
	ck_assert_uint_eq(r->slot_bytes, 15872);
	ck_assert_uint_eq(r->packets_per_batch * r->slot_bytes, 4063232);
	ck_assert_uint_eq(r->window, 2);
	ck_assert_int_eq(c->engine, CFG_ENGINE_DPDK);
	ck_assert_int_eq(c->interfaces[0].rx.queues[0].cpu_core, -1);
	ck_assert_uint_eq(c->interfaces[0].rx.flows[0].match.udp_dst_lo, 4096);
	ck_assert_uint_eq(c->interfaces[0].rx.flows[0].match.udp_dst_hi, 4100);
	ck_assert_uint_eq(c->interfaces[0].rx.flows[1].match.ipv4_src,
			  0x0a000001u);
	ck_assert(c->interfaces[0].tx.queues[0].offload_tx_eth_src);
	ck_assert_int_eq(c->ndpdk_args, 2);
	ck_assert_str_eq(c->dpdk_args[0], "--vdev=net_pcap0,rx_pcap=in.pcap");
	free(c);
	free(d);
}
END_TEST

/* Forms the contract allows: bare engine config at the root with a
 * top-level daemon:, foreign keys beside daqiri:, YAML 1.2 booleans,
 * cpu_core as a string, 0o modes, aliases of data_types keys. */
START_TEST(test_accepted_forms)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	long m;
	char *t;

	/* drop "daqiri:\n  cfg:\n" and dedent: the root is the cfg, and
	 * daemon: moves to the top level beside it */
	{
		const char *s = base_sock + strlen("daqiri:\n  cfg:\n");
		size_t o = 0, cut = 4;

		t = malloc(strlen(base_sock) + 64);
		while (*s != '\0') {
			const char *nl = strchr(s, '\n');
			size_t n = (size_t)(nl - s);

			if (strncmp(s, "  daemon:", 9) == 0)
				cut = 2;
			memcpy(t + o, s + cut, n - cut);
			o += n - cut;
			t[o++] = '\n';
			s = nl + 1;
		}
		t[o] = '\0';
	}
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert_int_eq(d->ndiags, 0);
	ck_assert_uint_eq(c->interfaces[0].rx.reorders[0].slot_bytes, 32000);
	free(t);

	t = build(base_sock, "daqiri:\n", "bench_rx: {anything: [1, 2]}\n"
		  "daqiri:\n", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert_int_eq(d->ndiags, 0);
	free(t);

	/* loopback: sw is the dpdk engine's (golden 116-119) */
	t = build(base_sock, "    master_core: 0\n", "    master_core: 0\n"
		  "    debug: TRUE\n    loopback: \"\"\n", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert(c->debug);
	ck_assert_int_eq(c->loopback, CFG_LOOPBACK_NONE);
	free(t);

	t = build(base_sock, "cpu_core: 1", "cpu_core: \"3\"", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert_int_eq(c->interfaces[0].rx.queues[0].cpu_core, 3);
	free(t);

	t = build(base_sock, "socket_mode: 0660", "socket_mode: 0o750", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert_uint_eq(c->daemon.socket_mode, 0750);
	free(t);

	t = build(base_sock, "{input_type: int4, output_type: fp16}",
		  "{input: int16, output: bf16, input_endianness: network}", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert_int_eq(c->interfaces[0].rx.reorders[0].input_type,
			 DAQIRI_DTYPE_INT16);
	ck_assert_int_eq(c->interfaces[0].rx.reorders[0].output_type,
			 DAQIRI_DTYPE_BF16);
	ck_assert_int_eq(c->interfaces[0].rx.reorders[0].endianness,
			 CFG_ENDIAN_NETWORK);
	ck_assert_uint_eq(c->interfaces[0].rx.reorders[0].slot_bytes, 8000);
	free(t);

	/* a flow without match matches everything */
	t = build(base_sock, "          match: {udp_dst: 5005}\n", "", &m);
	ck_assert_int_eq(cfg_parse(t, strlen(t), "t", c, d), 0);
	ck_assert(!c->interfaces[0].rx.flows[0].has_match);
	free(t);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_payload_derived_socket)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	long m;
	char *t1 = build(base_sock, "          payload_bytes: 8000\n", "", &m);
	char *t2 = build(t1, "        local_addr: udp://127.0.0.1:5005\n",
			 "        local_addr: udp://127.0.0.1:5005\n"
			 "        max_payload_size: 8008\n", &m);

	/* frames: min(9000, 42 + 8008) - 50 = 8000 */
	ck_assert_int_eq(cfg_parse(t2, strlen(t2), "t", c, d), 0);
	ck_assert_uint_eq(c->interfaces[0].rx.reorders[0].payload_bytes, 8000);
	/* without max_payload_size: 9000 - 50 */
	ck_assert_int_eq(cfg_parse(t1, strlen(t1), "t", c, d), -1);
	ck_assert_int_eq(d->nerrors, 1);
	ck_assert_str_eq(d->diags[0].msg, "memory_region: buf_size 4096000 of "
			 "'tensors' is smaller than one tensor: "
			 "packets_per_batch 128 x slot bytes 35800 = 4582400");
	free(t1);
	free(t2);
	free(c);
	free(d);
}
END_TEST

/* No IPv4 UDP frame is longer than 42 + 65507 bytes, however large the
 * buffers: that is what a payload is derived from and must fit. */
START_TEST(test_payload_frame_ceiling)
{
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	long m;
	char *t1 = build(base_sock, "      buf_size: 9000\n",
			 "      buf_size: 131072\n", &m);
	char *t2 = build(t1, "      buf_size: 4096000\n",
			 "      buf_size: 16777216\n", &m);
	char *t3 = build(t2, "          data_types: {input_type: int4, "
			 "output_type: fp16}\n", "", &m);
	char *derived = build(t3, "          payload_bytes: 8000\n", "", &m);
	char *given = build(t3, "          payload_bytes: 8000\n",
			    "          payload_bytes: 65500\n", &m);

	ck_assert_int_eq(cfg_parse(derived, strlen(derived), "t", c, d), 0);
	ck_assert_uint_eq(c->interfaces[0].rx.reorders[0].payload_bytes,
			  42 + 65507 - 50);
	ck_assert_int_eq(cfg_parse(given, strlen(given), "t", c, d), -1);
	ck_assert_int_eq(d->nerrors, 1);
	ck_assert_str_eq(d->diags[0].msg, "payload_bytes: payload_byte_offset "
			 "50 + payload_bytes 65500 = 65550 bytes do not fit "
			 "the 65549-byte frames of rx queue 'q0'");
	free(t1);
	free(t2);
	free(t3);
	free(derived);
	free(given);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_dtype_and_slot)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_INT4), 4);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_INT8), 8);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_INT16), 16);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_INT32), 32);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_FP16), 16);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_BF16), 16);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_FP32), 32);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_FP64), 64);
	ck_assert_uint_eq(cfg_dtype_bits(DAQIRI_DTYPE_RAW), 8);
	ck_assert_str_eq(daqiri_dtype_name(DAQIRI_DTYPE_BF16), "bf16");
	ck_assert_str_eq(daqiri_mem_kind_name(DAQIRI_MEM_HOST_PINNED), "host_pinned");
	ck_assert_str_eq(cfg_log_level_name(CFG_LOG_CRITICAL), "critical");

	/* no data_types: bytes copied */
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 1500), 1500);
	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT4;
	r.output_type = DAQIRI_DTYPE_FP16;
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 8000), 32000);
	r.output_type = DAQIRI_DTYPE_FP32;
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 1984), 15872);
	r.input_type = DAQIRI_DTYPE_INT16;
	r.output_type = DAQIRI_DTYPE_FP64;
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 10), 40);
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 11), 0);
	r.input_type = DAQIRI_DTYPE_INT32;
	r.output_type = DAQIRI_DTYPE_BF16;
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 6), 0);
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 8), 4);
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 0), 0);
}
END_TEST

/* Print, parse again: an equal struct, and the same text again. */
static void
round_trip(const char *text, size_t len, const char *name)
{
	struct cfg *a = new_cfg(), *b = new_cfg();
	struct cfg_diags *d = new_diags();
	char *p1 = NULL, *p2 = NULL;
	size_t n1 = 0, n2 = 0;
	FILE *fp;

	if (cfg_parse(text, len, name, a, d) != 0 || d->ndiags != 0)
		dump_diags(d);
	ck_assert_msg(d->ndiags == 0, "%s: %d diagnostics", name, d->ndiags);
	fp = open_memstream(&p1, &n1);
	ck_assert_int_eq(cfg_print(a, fp), 0);
	fclose(fp);
	if (cfg_parse(p1, n1, "printed", b, d) != 0)
		dump_diags(d);
	ck_assert_msg(d->ndiags == 0, "%s: the printed config has %d "
		      "diagnostics", name, d->ndiags);
	ck_assert_msg(cfg_equal(a, b), "%s: printed config differs", name);
	fp = open_memstream(&p2, &n2);
	ck_assert_int_eq(cfg_print(b, fp), 0);
	fclose(fp);
	ck_assert_str_eq(p1, p2);
	free(p1);
	free(p2);
	free(a);
	free(b);
	free(d);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "re");
	char *buf;
	long n;

	ck_assert_msg(fp != NULL, "cannot open %s", path);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

START_TEST(test_round_trip_shipped)
{
	const char *top = getenv("DAQIRI_SRCDIR") ? getenv("DAQIRI_SRCDIR") :
	    ".";
	char pattern[512];
	glob_t g;
	size_t len;
	char *text;
	int n = 0;

	snprintf(pattern, sizeof(pattern), "%s/etc/daqirid.yaml", top);
	text = slurp(pattern, &len);
	round_trip(text, len, pattern);
	free(text);
	snprintf(pattern, sizeof(pattern), "%s/etc/examples/*.yaml", top);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			text = slurp(g.gl_pathv[i], &len);
			round_trip(text, len, g.gl_pathv[i]);
			free(text);
			n++;
		}
		globfree(&g);
	}
	ck_assert_int_ge(n, 4);
	round_trip(base_sock, strlen(base_sock), "base_sock");
	round_trip(base_raw, strlen(base_raw), "base_raw");
}
END_TEST

/* The built-in default is etc/daqirid.yaml, and it is clean. */
START_TEST(test_builtin_default)
{
	const char *top = getenv("DAQIRI_SRCDIR") ? getenv("DAQIRI_SRCDIR") :
	    ".";
	struct cfg *a = new_cfg(), *b = new_cfg();
	struct cfg_diags *d = new_diags();
	char path[512];
	size_t len;
	char *text;

	ck_assert_int_eq(cfg_parse(cfg_default_text, cfg_default_len,
				   "<built-in default>", a, d), 0);
	ck_assert_int_eq(d->ndiags, 0);
	snprintf(path, sizeof(path), "%s/etc/daqirid.yaml", top);
	text = slurp(path, &len);
	ck_assert_uint_eq(len, cfg_default_len);
	ck_assert_int_eq(cfg_parse(text, len, path, b, d), 0);
	ck_assert(cfg_equal(a, b));
	/* the layout the simulator and the demo rely on */
	ck_assert_str_eq(a->interfaces[0].name, "sensor0");
	ck_assert_str_eq(a->interfaces[0].rx.reorders[0].name, "sensor_tensor");
	ck_assert_uint_eq(a->interfaces[0].socket.local.port, 5005);
	ck_assert_uint_eq(a->interfaces[0].rx.reorders[0].seq.bit_offset, 336);
	ck_assert_uint_eq(a->interfaces[0].rx.reorders[0].seq.bit_width, 32);
	ck_assert_uint_eq(a->interfaces[0].rx.reorders[0].payload_byte_offset,
			  50);
	ck_assert_uint_eq(a->interfaces[0].rx.reorders[0].payload_bytes, 8000);
	ck_assert_uint_eq(a->interfaces[0].rx.reorders[0].packets_per_batch,
			  128);
	free(text);
	free(a);
	free(b);
	free(d);
}
END_TEST

/* cfg_equal looks at every field that matters and none that does not. */
START_TEST(test_equal)
{
	struct cfg *a = new_cfg(), *b = new_cfg();
	struct cfg_diags *d = new_diags();

	ck_assert_int_eq(cfg_parse(base_raw, strlen(base_raw), "t", a, d), 0);
	memcpy(b, a, sizeof(*a));
	ck_assert(cfg_equal(a, b));
	b->interfaces[0].rx.reorders[0].pos.line = 999;
	b->regions[0].pos.col = 7;
	ck_assert(cfg_equal(a, b));
	b->interfaces[0].rx.reorders[0].window = 1;
	ck_assert(!cfg_equal(a, b));
	memcpy(b, a, sizeof(*a));
	b->interfaces[0].rx.flows[0].match.udp_dst_hi = 4101;
	ck_assert(!cfg_equal(a, b));
	memcpy(b, a, sizeof(*a));
	b->daemon.socket_mode = 0600;
	ck_assert(!cfg_equal(a, b));
	memcpy(b, a, sizeof(*a));
	strcpy(b->dpdk_args[1], "--no-hugf");
	ck_assert(!cfg_equal(a, b));
	/* a tx destination: what is sent, not where it was written */
	memcpy(b, a, sizeof(*a));
	b->interfaces[0].tx.queues[0].dest.has_ttl = true;
	b->interfaces[0].tx.queues[0].dest.pos.line = 1;
	ck_assert(cfg_equal(a, b));
	b->interfaces[0].tx.queues[0].dest.eth_dst[5] = 9;
	ck_assert(!cfg_equal(a, b));
	memcpy(b, a, sizeof(*a));
	b->interfaces[0].tx.queues[0].dest.udp_src = 1;
	ck_assert(!cfg_equal(a, b));
	memcpy(b, a, sizeof(*a));
	b->interfaces[0].tx.queues[0].dest.dscp = 1;
	ck_assert(!cfg_equal(a, b));
	free(a);
	free(b);
	free(d);
}
END_TEST

/* A tx queue's destination with its defaults: the DPDK engine's udp_src
 * from udp_dst, ttl 64, dscp 0, eth_src left to the port (or NIC); the
 * socket engine's ipv4_dst and udp_dst from remote_addr, field by field. */
static void round_trip(const char *text, size_t len, const char *name);

START_TEST(test_tx_destination_defaults)
{
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 2 };
	struct cfg *c = new_cfg();
	struct cfg_diags *d = new_diags();
	const struct cfg_tx_dest *t;
	long m;
	char *t1, *t2;

	ck_assert_int_eq(cfg_parse(base_raw, strlen(base_raw), "t", c, d), 0);
	t = &c->interfaces[0].tx.queues[0].dest;
	ck_assert(t->has_eth_dst);
	ck_assert_mem_eq(t->eth_dst, mac, 6);
	ck_assert(!t->has_eth_src);
	ck_assert(c->interfaces[0].tx.queues[0].offload_tx_eth_src);
	ck_assert(t->has_ipv4_src && t->ipv4_src == 0x0a000001u);
	ck_assert(t->has_ipv4_dst && t->ipv4_dst == 0x0a000002u);
	ck_assert(t->has_udp_dst && t->udp_dst == 4096);
	ck_assert(t->has_udp_src && t->udp_src == 4096);
	ck_assert_uint_eq(t->ttl, 64);
	ck_assert_uint_eq(t->dscp, 0);
	ck_assert(!t->has_ttl && !t->has_dscp);
	ck_assert_int_gt(t->pos.line, 0);
	ck_assert_uint_eq(c->interfaces[0].tx.pacing_mbps, 0);

	t1 = build(base_sock, "        local_addr: udp://127.0.0.1:5005\n",
	    "        local_addr: udp://127.0.0.1:5005\n"
	    "        remote_addr: udp://127.0.0.1:5010\n", &m);
	t2 = build(t1, "      rx:\n", "      tx:\n        queues:\n"
	    "        - {name: t0, id: 0, batch_size: 8, memory_regions: "
	    "[frames], pacing_mbps: 50}\n"
	    "        - {name: t1, id: 1, batch_size: 8, memory_regions: "
	    "[frames],\n           destination: {udp_dst: 6000, ttl: 3, "
	    "dscp: 46, udp_src: 6001, ipv4_src: 127.0.0.1}}\n      rx:\n", &m);
	if (cfg_parse(t2, strlen(t2), "t", c, d) != 0 || d->ndiags != 0)
		dump_diags(d);
	ck_assert_int_eq(d->ndiags, 0);
	t = &c->interfaces[0].tx.queues[0].dest;
	ck_assert(t->has_ipv4_dst && t->ipv4_dst == 0x7f000001u);
	ck_assert(t->has_udp_dst && t->udp_dst == 5010);
	ck_assert(!t->has_udp_src && !t->has_ipv4_src);
	ck_assert(!t->has_eth_dst && !t->has_eth_src);
	ck_assert_int_eq(t->pos.line, 0);
	ck_assert_uint_eq(t->ttl, 64);
	t = &c->interfaces[0].tx.queues[1].dest;
	ck_assert(t->has_ipv4_dst && t->ipv4_dst == 0x7f000001u);
	ck_assert_uint_eq(t->udp_dst, 6000);
	ck_assert(t->has_udp_src && t->udp_src == 6001);
	ck_assert(t->has_ipv4_src && t->ipv4_src == 0x7f000001u);
	ck_assert(t->has_ttl && t->ttl == 3);
	ck_assert_uint_eq(t->dscp, 46);
	/* one rate for every tx queue of the interface */
	ck_assert_uint_eq(c->interfaces[0].tx.pacing_mbps, 50);
	round_trip(t2, strlen(t2), "socket tx");
	free(t1);
	free(t2);
	/* a tx queue in device memory: the socket engine takes it (it
	 * stages each payload through host memory) */
	t1 = build(base_sock, "        local_addr: udp://127.0.0.1:5005\n",
	    "        local_addr: udp://127.0.0.1:5005\n"
	    "        remote_addr: udp://127.0.0.1:5010\n", &m);
	t2 = build(t1, "      rx:\n", "      tx:\n        queues:\n"
	    "        - {name: t0, id: 0, batch_size: 8, memory_regions: "
	    "[gpu_tx]}\n      rx:\n", &m);
	free(t1);
	t1 = build(t2, "    interfaces:\n", "    - {name: gpu_tx, kind: "
	    "device, affinity: 0, num_bufs: 64, buf_size: 2048}\n"
	    "    interfaces:\n", &m);
	if (cfg_parse(t1, strlen(t1), "t", c, d) != 0 || d->ndiags != 0)
		dump_diags(d);
	ck_assert_int_eq(d->ndiags, 0);
	ck_assert_int_eq(c->regions[c->interfaces[0].tx.queues[0].region_idx[0]]
	    .kind, DAQIRI_MEM_DEVICE);
	round_trip(t1, strlen(t1), "socket tx in device memory");
	free(t1);
	free(t2);
	free(c);
	free(d);
}
END_TEST

/* daemon.metrics_listen: the three forms, and what is none of them. */
START_TEST(test_listen_forms)
{
	static const char *const bad[] = { "localhost:9464", "127.0.0.1",
	    "127.0.0.1:0", "127.0.0.1:65536", "[::1]", "::1:9464",
	    "[::1:9464", "unix:", "unix:rel/path", "[]:9464", ":9464",
	    "unix:/a/very/long/path/that/does/not/fit/in/sun_path/because/it"
	    "/is/longer/than/one/hundred/and/eight/bytes/all/told/x.sock" };
	struct cfg_listen l;

	ck_assert(cfg_parse_listen("127.0.0.1:9464", &l));
	ck_assert_int_eq(l.kind, CFG_LISTEN_INET);
	ck_assert_uint_eq(l.port, 9464);
	ck_assert_uint_eq(l.addr[0], 127);
	ck_assert_uint_eq(l.addr[3], 1);
	ck_assert(cfg_parse_listen("[::1]:9465", &l));
	ck_assert_int_eq(l.kind, CFG_LISTEN_INET6);
	ck_assert_uint_eq(l.port, 9465);
	ck_assert_uint_eq(l.addr[15], 1);
	ck_assert(cfg_parse_listen("unix:/run/daqiri/metrics.sock", &l));
	ck_assert_int_eq(l.kind, CFG_LISTEN_UNIX);
	ck_assert_str_eq(l.path, "/run/daqiri/metrics.sock");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!cfg_parse_listen(bad[i], &l), "'%s' accepted",
		    bad[i]);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, test_bases_are_clean);
	tcase_add_loop_test(tc, test_rule, 0,
			    (int)(sizeof(rules) / sizeof(rules[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("file");
	tcase_add_test(tc, test_whole_file);
	tcase_add_test(tc, test_listen_forms);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_second_document);
	tcase_add_test(tc, test_not_daqiri);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_all_reported_in_order);
	tcase_add_test(tc, test_many_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("values");
	tcase_add_test(tc, test_defaults_and_geometry);
	tcase_add_test(tc, test_accepted_forms);
	tcase_add_test(tc, test_payload_derived_socket);
	tcase_add_test(tc, test_payload_frame_ceiling);
	tcase_add_test(tc, test_dtype_and_slot);
	tcase_add_test(tc, test_equal);
	tcase_add_test(tc, test_tx_destination_defaults);
	tcase_add_test(tc, test_limits_at_maximum);
	tcase_add_test(tc, test_builtin_default);
	tcase_add_test(tc, test_round_trip_shipped);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? 0 : 1;
}
