/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daqirid configuration: the parsed, validated form of the YAML in
 * REFERENCE.md, and the pure parser that produces it. Nothing here exits,
 * prints or touches the system: text in, struct and diagnostics out.
 */
#ifndef DAQIRI_CONFIG_H
#define DAQIRI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daqiri_limits.h"
#include "daqiri_types.h"	/* dtype, memory kind, fill: the wire's enums */

/* Limits of one configuration; exceeding one is a diagnostic, not a crash.
 * What the protocol and rings also limit comes from daqiri_limits.h. */
#define CFG_NAME_MAX		DAQIRI_NAME_MAX	/* bytes, NUL included */
#define CFG_PATH_MAX		256
/* What daqirid reads without -c when it exists (and daqiri-sim too, so
 * that the two agree), else the built-in default. */
#define CFG_DEFAULT_FILE	"/etc/daqiri/daqirid.yaml"
#define CFG_MAX_REGIONS		32
/* An rx queue's num_rx_desc (daqiri extension), when given. */
#define CFG_RX_DESC_MIN		32
#define CFG_RX_DESC_MAX		32768
/* DPDK's RTE_PKTMBUF_HEADROOM in Debian's build (engine_dpdk.c asserts
 * it): what the DPDK engine keeps in front of each rx buffer. */
#define CFG_DPDK_MBUF_HEADROOM	128
#define CFG_MAX_INTERFACES	8
#define CFG_MAX_QUEUES		32	/* per interface and direction */
#define CFG_MAX_FLOWS		64	/* per interface and direction */
#define CFG_MAX_REORDERS	16	/* per interface */
#define CFG_MAX_FLOW_IDS	16	/* per reorder config */
#define CFG_MAX_QUEUE_REGIONS	2	/* two = header-data split */
#define CFG_MAX_QUEUE_IDS	8	/* queues of one flow action */
#define CFG_MAX_DPDK_ARGS	32
#define CFG_MAX_DIAGS		256	/* kept; more are counted only */
#define CFG_WINDOW_DEFAULT	4
#define CFG_WINDOW_MAX		64
#define CFG_REORDER_TIMEOUT_US_DEFAULT 100000u
/* resync_after_us, when not given, is this many times timeout_us (0, the
 * time rule off, when there is no deadline): a real straggler arrives
 * within its batch's deadline, so at most timeout_us after the batch was
 * published; the margin covers a burst's processing time. */
#define CFG_RESYNC_AFTER_DEADLINES 2u
#define CFG_MAX_MARKS		2048	/* value positions kept (cfg_pos_of) */
#define CFG_MAX_CHANGES		128	/* differences kept by cfg_diff() */

/* Where a node started in its file (1-based; 0 = not from a file). */
struct cfg_pos {
	int line;
	int col;
};

enum cfg_stream_type { CFG_STREAM_RAW, CFG_STREAM_SOCKET, CFG_STREAM_MAX };
enum cfg_engine { CFG_ENGINE_DPDK, CFG_ENGINE_SOCKET, CFG_ENGINE_MAX };
enum cfg_log_level {
	CFG_LOG_TRACE, CFG_LOG_DEBUG, CFG_LOG_INFO, CFG_LOG_WARN,
	CFG_LOG_ERROR, CFG_LOG_CRITICAL, CFG_LOG_OFF, CFG_LOG_MAX
};
enum cfg_loopback { CFG_LOOPBACK_NONE, CFG_LOOPBACK_SW, CFG_LOOPBACK_MAX };
enum cfg_access {			/* bit mask */
	CFG_ACCESS_LOCAL = 1u << 0,
	CFG_ACCESS_RDMA_READ = 1u << 1,
	CFG_ACCESS_RDMA_WRITE = 1u << 2,
};
enum cfg_sock_mode { CFG_SOCK_CLIENT, CFG_SOCK_SERVER, CFG_SOCK_MAX };
enum cfg_transport { CFG_TRANSPORT_UDP, CFG_TRANSPORT_TCP, CFG_TRANSPORT_MAX };
enum cfg_poll_mode { CFG_POLL_INDIRECT, CFG_POLL_MAX };
enum cfg_reorder_type { CFG_REORDER_CPU, CFG_REORDER_GPU, CFG_REORDER_MAX };
enum cfg_method {
	CFG_METHOD_SEQ_BATCH_NUMBER, CFG_METHOD_SEQ_PACKETS_PER_BATCH,
	CFG_METHOD_MAX
};
enum cfg_endian { CFG_ENDIAN_HOST, CFG_ENDIAN_NETWORK, CFG_ENDIAN_MAX };
/* What a reorder config does with a batch that did not complete
 * (missing_action): publish it with its gaps filled, or drop it. */
enum cfg_missing {
	CFG_MISSING_PASSTHROUGH, CFG_MISSING_DROP, CFG_MISSING_MAX
};
/* How RX workers wait for packets (daemon.rx_mode). */
enum cfg_rx_mode { CFG_RX_BLOCKING, CFG_RX_BUSY_POLL, CFG_RX_MODE_MAX };

struct cfg_region {
	char name[CFG_NAME_MAX];
	enum daqiri_mem_kind kind;
	int affinity;
	uint32_t num_bufs;
	uint64_t buf_size;
	unsigned access;		/* enum cfg_access bits; 0 = not given */
	/* Derived (cfg_check_rx_headroom): bytes the engine keeps in front
	 * of each buffer, beyond buf_size (DPDK's mbuf headroom for an rx
	 * queue's region, as the reference adds it); the region's buffers
	 * are buf_size + headroom apart. */
	uint32_t headroom;
	struct cfg_pos pos;
};

/* A udp:// or tcp:// endpoint; addr and port in host byte order. */
struct cfg_endpoint {
	bool set;
	enum cfg_transport transport;
	uint32_t addr;
	uint16_t port;
};

struct cfg_socket {
	bool present;
	enum cfg_sock_mode mode;
	struct cfg_endpoint local;
	struct cfg_endpoint remote;
	uint16_t max_payload_size;	/* 0 = largest UDP datagram */
	int retry_connect_s;
};

/*
 * Where a tx queue sends: the headers the daemon writes (daqiri's
 * `destination:` map of a tx queue, daqirid.yaml(5) "tx"). Addresses and
 * ports in host byte order. The loader fills in every default it can
 * know, so a has_ flag says whether the field holds a value to use:
 *  - ttl (default 64) and dscp (default 0) always do; has_ttl and
 *    has_dscp only say they were written in the file;
 *  - DPDK engine: eth_dst, ipv4_src, ipv4_dst and udp_dst are required;
 *    udp_src defaults to udp_dst; !has_eth_src means the port's MAC,
 *    or the NIC's when the queue has offload_tx_eth_src (the two never
 *    come together);
 *  - socket engine: ipv4_dst and udp_dst default to (and are then set
 *    from) socket_config.remote_addr; !has_ipv4_src means local_addr's
 *    address (or the kernel's choice), !has_udp_src a port the kernel
 *    chooses; the eth_ fields are never set (the kernel writes the
 *    Ethernet header; the loader warns);
 *  - reply_peer (socket engine only): a server (socket_config.mode
 *    server) with no remote_addr, whose queue has no destination map,
 *    sends to the source (IPv4 address and UDP port) of the datagram
 *    its interface received last, as the reference library does; no
 *    other field is set then, and ttl and dscp keep their defaults.
 * pos: the map's place in the file, 0:0 when there is none.
 */
struct cfg_tx_dest {
	bool reply_peer;
	bool has_eth_src, has_eth_dst;
	bool has_ipv4_src, has_ipv4_dst;
	bool has_udp_src, has_udp_dst;
	bool has_ttl, has_dscp;
	uint8_t eth_src[6], eth_dst[6];
	uint32_t ipv4_src, ipv4_dst;
	uint16_t udp_src, udp_dst;
	uint8_t ttl;			/* 1..255, default 64 */
	uint8_t dscp;			/* 0..63, default 0 */
	struct cfg_pos pos;
};

struct cfg_queue {
	char name[CFG_NAME_MAX];
	uint32_t id;
	int cpu_core;			/* -1 = not given */
	uint32_t batch_size;
	uint32_t timeout_us;
	int nregions;
	char region_names[CFG_MAX_QUEUE_REGIONS][CFG_NAME_MAX];
	int region_idx[CFG_MAX_QUEUE_REGIONS];	/* into cfg.regions */
	enum cfg_poll_mode poll_mode;
	/* rx only: the DPDK port's descriptors for the queue (daqiri
	 * extension); 0 = sized from batch_size and the buffers */
	uint32_t num_rx_desc;
	/* tx only */
	bool offload_tx_eth_src;
	struct cfg_tx_dest dest;
	struct cfg_pos pos;
};

/* Match fields of a flow; a field applies only when its has_ flag is set.
 * Ports and lengths in host byte order, addresses too. */
struct cfg_match {
	bool has_udp_src, has_udp_dst, has_ipv4_len, has_ipv4_src, has_ipv4_dst;
	uint16_t udp_src_lo, udp_src_hi;	/* inclusive range */
	uint16_t udp_dst_lo, udp_dst_hi;
	uint16_t ipv4_len;
	uint32_t ipv4_src, ipv4_dst;
};

struct cfg_flow {
	char name[CFG_NAME_MAX];
	uint32_t id;
	int nqueue_ids;			/* the final queue action's targets */
	uint32_t queue_ids[CFG_MAX_QUEUE_IDS];
	bool has_match;			/* false = matches everything */
	struct cfg_match match;
	struct cfg_pos pos;
};

struct cfg_bitfield {
	uint32_t bit_offset;		/* from the first bit of the frame */
	uint32_t bit_width;		/* 1..32 */
};

struct cfg_reorder {
	char name[CFG_NAME_MAX];
	enum cfg_reorder_type type;
	char region_name[CFG_NAME_MAX];
	int region_idx;			/* into cfg.regions */
	uint32_t payload_byte_offset;
	/* Input bytes per packet after payload_byte_offset: `payload_bytes`
	 * (daqiri extension) or derived from the frame buffers of the queues
	 * the flows target. A packet with any other payload length is
	 * malformed. */
	uint32_t payload_bytes;
	uint64_t slot_bytes;		/* output bytes of one slot (derived) */
	int nflow_ids;
	uint32_t flow_ids[CFG_MAX_FLOW_IDS];
	enum cfg_method method;
	struct cfg_bitfield seq;
	struct cfg_bitfield batch;	/* CFG_METHOD_SEQ_BATCH_NUMBER only */
	uint32_t packets_per_batch;	/* given or derived */
	bool has_data_types;
	enum daqiri_dtype input_type;	/* NONE when !has_data_types */
	enum daqiri_dtype output_type;
	enum cfg_endian endianness;
	uint32_t window;		/* open batches, 1..64 */
	enum daqiri_fill fill;
	uint32_t timeout_us;		/* from a batch's first packet; 0 = none */
	/* a late packet for a batch published longer ago than this starts
	 * a new epoch; given or derived from timeout_us; 0 = never by time */
	uint32_t resync_after_us;
	bool resync_after_given;	/* false: derived (follows timeout_us) */
	enum cfg_missing missing_action;	/* default passthrough */
	/* The reference's statement that the sender's sequence field cycles;
	 * daqiri's ids always wrap at the field's width, so it is kept only
	 * to be printed (daqirid.yaml(5) cyclic_sequence). */
	bool cyclic_sequence;
	struct cfg_pos pos;
};

struct cfg_rx {
	int nqueues;
	struct cfg_queue queues[CFG_MAX_QUEUES];
	int nflows;
	struct cfg_flow flows[CFG_MAX_FLOWS];
	bool flow_isolation;
	uint32_t dynamic_flow_capacity;
	bool hardware_timestamps;
	int nreorders;
	struct cfg_reorder reorders[CFG_MAX_REORDERS];
};

/* tx: daqiri refuses tx flows (a queue sends to its destination) and
 * accepts accurate_send with a warning (no timestamped send), so
 * neither is kept. */
struct cfg_tx {
	int nqueues;
	struct cfg_queue queues[CFG_MAX_QUEUES];
	/* every tx queue of the interface, each on its own, in software:
	 * Mb/s of wire bytes (payload + 42 header bytes a packet) */
	uint32_t pacing_mbps;		/* 0 = not paced */
};

struct cfg_interface {
	char name[CFG_NAME_MAX];
	char address[CFG_NAME_MAX];
	struct cfg_socket socket;
	bool has_rx, has_tx;
	struct cfg_rx rx;
	struct cfg_tx tx;
	struct cfg_pos pos;
};

/* daqiri's own `daemon:` section. */
struct cfg_daemon {
	char control_socket[CFG_PATH_MAX];
	unsigned socket_mode;
	char socket_group[CFG_NAME_MAX];	/* "" = the daemon's own group */
	char admin_group[CFG_NAME_MAX];		/* "" = root only */
	uint32_t max_consumers;
	uint32_t stats_interval_ms;
	char metrics_listen[CFG_PATH_MAX];	/* "" = off; cfg_parse_listen() */
	enum cfg_rx_mode rx_mode;		/* default blocking */
	/* Consumer isolation (daqirid.yaml(5) "daemon"). */
	uint32_t hold_timeout_ms;		/* 0 = a buffer may be held forever */
	uint32_t hello_timeout_ms;		/* pre-hello connections closed after */
	uint32_t max_subscriptions_per_connection;
	uint32_t max_connections_per_uid;	/* root and admin group exempt */
	uint32_t reserved_admin_connections;	/* slots beyond max_consumers */
};

/* A metrics_listen value: IPV4:PORT, [IPV6]:PORT or unix:PATH. */
enum cfg_listen_kind {
	CFG_LISTEN_INET,
	CFG_LISTEN_INET6,
	CFG_LISTEN_UNIX,
	CFG_LISTEN_KIND_MAX
};

struct cfg_listen {
	enum cfg_listen_kind kind;
	unsigned char addr[16];		/* network byte order, 4 or 16 bytes */
	uint16_t port;			/* inet kinds, 1..65535 */
	const char *path;		/* unix: into the parsed text */
};

/* Parse text as a listen address into *out; false when it is none of the
 * three forms (a unix path must be absolute and fit sun_path). */
bool cfg_parse_listen(const char *text, struct cfg_listen *out);

/* Where the value of one field came from: the field's byte offset in
 * struct cfg and the position of its YAML value (cfg_pos_of()). */
struct cfg_mark {
	uint32_t off;
	struct cfg_pos pos;
};

struct cfg {
	int version;
	bool debug;
	int master_core;
	enum cfg_stream_type stream_type;
	enum cfg_engine engine;
	enum cfg_log_level log_level;
	enum cfg_loopback loopback;
	uint32_t tx_meta_buffers;
	uint32_t rx_meta_buffers;
	int ndpdk_args;
	char dpdk_args[CFG_MAX_DPDK_ARGS][CFG_PATH_MAX];
	int nregions;
	struct cfg_region regions[CFG_MAX_REGIONS];
	int ninterfaces;
	struct cfg_interface interfaces[CFG_MAX_INTERFACES];
	struct cfg_daemon daemon;
	/* Positions of the values read (not compared by cfg_equal()). */
	int nmarks;
	struct cfg_mark marks[CFG_MAX_MARKS];
};

enum cfg_severity { CFG_SEV_ERROR, CFG_SEV_WARNING, CFG_SEV_MAX };

struct cfg_diag {
	enum cfg_severity severity;
	struct cfg_pos pos;		/* 0:0 = about the whole file */
	char msg[256];
};

/*
 * daqirid -n --compat: what daqiri makes of each key of a file written
 * for the reference library. cfg_parse_compat() and cfg_load_compat()
 * fill the caller's, one entry per key they met, in file order.
 */
enum cfg_compat_class {
	CFG_COMPAT_SAME,		/* used as the reference means it */
	CFG_COMPAT_DIFFERS,		/* accepted, with another meaning */
	CFG_COMPAT_IGNORED,		/* accepted and ignored */
	CFG_COMPAT_REFUSED,		/* refused on purpose */
	CFG_COMPAT_OWN,			/* daqiri's own, unknown there */
	CFG_COMPAT_MAX
};

#define CFG_COMPAT_KEYS_MAX	2048

struct cfg_compat_entry {
	struct cfg_pos pos;
	enum cfg_compat_class cls;
	char key[96];			/* "rx queue: timeout_us" */
	const char *note;		/* why, or NULL (static text) */
};

struct cfg_compat {
	int n;				/* kept in e[] */
	int more;			/* met past CFG_COMPAT_KEYS_MAX */
	struct cfg_compat_entry e[CFG_COMPAT_KEYS_MAX];
};

extern const char *const cfg_compat_names[CFG_COMPAT_MAX];

struct cfg_diags {
	struct cfg_compat *compat;	/* the --compat report being
					 * made, or NULL (set by the
					 * parse) */
	char file[CFG_PATH_MAX];
	int ndiags;			/* kept in diags[] */
	int nerrors;			/* all errors, kept or not */
	int nwarnings;
	struct cfg_diag diags[CFG_MAX_DIAGS];
};

/*
 * Parse and validate a configuration. text need not be NUL-terminated;
 * file names the source in diagnostics. On return *out holds the config
 * with defaults filled in (meaningful only when the result is 0) and *d
 * every diagnostic in file order. Returns 0 when there were no errors,
 * -1 otherwise. Never exits, prints or allocates memory it does not free.
 */
int cfg_parse(const char *text, size_t len, const char *file,
	      struct cfg *out, struct cfg_diags *d);

/*
 * Read FILE and cfg_parse() it. A file that cannot be read is one
 * diagnostic ("cannot read: <strerror>"). Same return as cfg_parse().
 */
int cfg_load(const char *file, struct cfg *out, struct cfg_diags *d);

/*
 * cfg_load() with the file read on a thread of its own, waited for at
 * most timeout_ms (the main loop's reload: a file on a hung mount must
 * not stop the daemon). A read that does not return in time is left to
 * its thread and reported as one diagnostic ("cannot read: no answer
 * within ..."); until it returns, every call is refused at once the same
 * way, saying for how long it has been stuck. Main thread only.
 * CFG_READ_HANG_ENV (test only) names a file while which exists every
 * read hangs, as on a hung mount.
 */
#define CFG_READ_HANG_ENV	"DAQIRID_TEST_READ_HANG_FILE"
int cfg_load_within(const char *file, unsigned timeout_ms, struct cfg *out,
		    struct cfg_diags *d);

/* The same, also reporting every key in compat (daqirid -n --compat,
 * cfg_compat_print()); d->compat points to it afterwards. */
int cfg_parse_compat(const char *text, size_t len, const char *file,
		     struct cfg *out, struct cfg_diags *d,
		     struct cfg_compat *compat);
int cfg_load_compat(const char *file, struct cfg *out, struct cfg_diags *d,
		    struct cfg_compat *compat);

/* The embedded default config (etc/daqirid.yaml as built in). */
extern const char cfg_default_text[];
extern const size_t cfg_default_len;

/*
 * What an engine can do (cfg_engine.c): the one statement of the rules
 * that depend on it, asked by the config checker and the daemon.
 */
struct cfg_engine_traits {
	const char *name;		/* "dpdk", "socket" */
	const char *stream_type;	/* the reference's word for it */
	bool addr_ipv4;			/* interfaces by IPv4 address (else a
					 * PCI address or a DPDK vdev name) */
	bool socket_config;		/* required (else refused) */
	bool rx_device;			/* rx queues may receive into device
					 * memory (whole frames or payloads) */
	bool rx_split;			/* header-data split (two rx regions) */
	bool tx_device;			/* tx payloads may be device memory */
	bool tx_l2;			/* it writes the Ethernet header: a tx
					 * queue names eth_dst, offloads apply;
					 * else the kernel does, and a
					 * destination may come from
					 * socket_config */
	bool eal_args;			/* dpdk_args mean something */
	uint32_t rx_headroom;		/* bytes in front of each rx buffer
					 * (cfg_region.headroom) */
	const char *steer_by;		/* who steers flows to queues */
	const char *spread_by;		/* who spreads frames without that */
	bool sw_loopback;		/* loopback: sw (a ring port per
					 * interface, tx queue N to rx queue
					 * N) */
};

/*
 * Which rx queues feed reorder config r of interface ifc (cfg_owner.c),
 * the one statement of that rule. status OK: queues is the set of their
 * indexes in ifc->rx.queues (bit i for queue i), the union of its flows'
 * queues, nqueues of them; queue is the lowest, the stream's home (its
 * worker is woken for the stream's commands), flow its first flow. Else
 * NO_FLOW: flow names a flow that is missing or has no queue the
 * interface has (queue -1, queues 0).
 */
enum cfg_owner_status {
	CFG_OWNER_OK,
	CFG_OWNER_NO_FLOW,
};
_Static_assert(CFG_MAX_QUEUES <= 32, "a queue set is a uint32_t");
struct cfg_owner {
	enum cfg_owner_status status;
	int queue;
	uint32_t queues;
	int nqueues;
	uint32_t flow;
};
void cfg_rx_owner(const struct cfg_interface *ifc, const struct cfg_reorder *r,
		  struct cfg_owner *out);
/* The home queue's index of an OK answer, else -1. */
int cfg_rx_owner_queue(const struct cfg_interface *ifc,
		       const struct cfg_reorder *r);
/* The queue set of an OK answer, else 0. */
uint32_t cfg_rx_owner_queues(const struct cfg_interface *ifc,
			     const struct cfg_reorder *r);

/*
 * The closest of names[0..n) to s, or NULL when none is close: an edit
 * distance of at most 2, or at most a third of the longer word, or one
 * word the start of the other ("warning" for "warn"). Pure (cfg_yaml.c):
 * the config's "did you mean", and the daemon's for stream names.
 */
const char *cfg_closest(const char *s, size_t len, const char *const *names,
			size_t n);

/* The traits of engine e (NULL for none), and of an interface's. */
const struct cfg_engine_traits *cfg_engine_traits(enum cfg_engine e);
const struct cfg_engine_traits *cfg_iface_traits(const struct cfg *c,
						 const struct cfg_interface *ifc);

/* Write every diagnostic as "file:line:col: error: message\n". */
void cfg_diags_print(const struct cfg_diags *d, FILE *fp);

/* Write the --compat report of d (nothing when d->compat is NULL): one
 * "file:line:col: KEY: CLASS[: why]" line per key, then a tally. */
void cfg_compat_print(const struct cfg_diags *d, FILE *fp);

/*
 * Print the normalised config (every default filled in) as YAML that
 * cfg_parse() reads back to an equal struct. Returns 0 or -1 on a write
 * error.
 */
int cfg_print(const struct cfg *c, FILE *fp);

/* Equal in every field but source positions: 1 if equal, else 0. */
int cfg_equal(const struct cfg *a, const struct cfg *b);

/*
 * Where the value of field (a pointer into *c) was written in the file,
 * or fallback when it was not (a default) or is not known.
 */
struct cfg_pos cfg_pos_of(const struct cfg *c, const void *field,
			  struct cfg_pos fallback);

/*
 * The differences between a running config and a new one (cfg_diff.c),
 * each classified as applied live or needing a restart (daqirid.yaml(5)
 * "RELOAD"), positioned in the new file (0:0 = not in it, e.g. removed).
 */
struct cfg_change {
	bool live;
	struct cfg_pos pos;
	char msg[256];
};

struct cfg_changes {
	int n;				/* kept in ch[] */
	int nrestart;			/* every restart-only one, kept or not */
	int nlive;
	struct cfg_change ch[CFG_MAX_CHANGES];
};

/*
 * Compare old (running) and new (both checked by cfg_parse()) and list
 * every difference in *out. Pure. Returns the number of restart-only
 * differences: 0 means new can be applied live (out->nlive of them).
 */
int cfg_diff(const struct cfg *old, const struct cfg *new_cfg,
	     struct cfg_changes *out);

/*
 * Apply new_cfg's live parts to run (a reload: cfg_diff() found no
 * restart-only change): run then equals new_cfg (cfg_equal(); fuzz_cfgdiff
 * holds it to that), and its marks are new_cfg's. Pure.
 */
void cfg_apply_live(struct cfg *run, const struct cfg *new_cfg);

/* Write every change as "file:line:col: live|restart: message\n". */
void cfg_changes_print(const struct cfg_changes *ch, const char *file,
		       FILE *fp);

/* Defaults of a fresh config (used before parsing). */
void cfg_defaults(struct cfg *c);

/* Names of the enums, as they are spelt in YAML. */
const char *cfg_log_level_name(enum cfg_log_level l);

/* Bits of one input/output element (int4: 4; raw bytes: 8; 0 unknown). */
unsigned cfg_dtype_bits(enum daqiri_dtype t);

/*
 * Geometry of a reorder config: output bytes for one slot given the
 * payload bytes per packet (n), or 0 when n is not a whole number of
 * input elements.
 */
uint64_t cfg_reorder_slot_bytes(const struct cfg_reorder *r, uint64_t n);

/* Lookups; NULL when absent. */
const struct cfg_interface *cfg_interface_find(const struct cfg *c,
					       const char *name);
int cfg_region_find(const struct cfg *c, const char *name);

#endif
