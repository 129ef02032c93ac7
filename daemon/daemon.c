/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running daemon: memory regions, engines, flow tables, streams and
 * RX workers brought up in that order (and down in reverse), then one
 * epoll loop on the main thread for the control socket, signals (through
 * signalfd) and a timer that reaps subscriptions, feeds the systemd
 * watchdog while every worker's heartbeat advances and sends STATUS.
 * The main thread never touches packet data. Control requests are
 * answered in daemon_ops.c; SIGHUP reloads the configuration (reload.c).
 *
 * A map of daemon/ (DESIGN.md "Threads and ownership"): which file owns
 * which concern, and the thread that runs it. "main" is the thread of
 * this file's loop; "worker" is the RX worker of one rx queue.
 *
 *   daqirid.c        main, start-up: options, config, signal mask, then
 *                    daemon_run()
 *   cfg_load.c       main, start-up (and daqirid -n): the loader, text in,
 *                    a checked struct cfg and file:line:col diagnostics
 *                    out (a pure function; config.h is its interface)
 *   cfg_yaml.c       the loader's YAML access: typed getters, maps with
 *                    "did you mean", the diagnostics list
 *   cfg_parse.c      the schema walk, section by section, with defaults
 *   cfg_reorder.c    the walk's rx.reorder_configs section: methods, data
 *                    types, and how a batch is finished
 *   cfg_check.c      the checks across sections (regions, queues, flows,
 *                    addresses, reorder geometry)
 *   cfg_print.c      the normalised printout (-n -v) and cfg_equal()
 *   cfg_names.c      the YAML spelling of every config enum, lookups
 *   cfg_engine.c     any thread, pure: what each engine can do (address
 *                    forms, socket_config, device memory on rx and tx,
 *                    Ethernet headers), the one table the checker and
 *                    the daemon ask instead of branching on stream_type
 *   cfg_owner.c      any thread, pure: which rx queues (workers) feed
 *                    each reorder stream, the one rule the checker,
 *                    workers, diff and stats ask
 *   cfg_diff.c       any thread, pure: a running config against a new
 *                    one, each difference live or restart-only, at the
 *                    new file's line:col
 *   geometry.c       any thread, pure: frame, slot, window and tensor
 *                    sizes, the one place both the checker and the
 *                    stages take them from
 *   daemon.c         main: bring-up and teardown, interfaces up/down, the
 *                    loop, signals, watchdog, sd_notify
 *   daemon_ops.c     main: answers to control requests (status, streams,
 *                    stats, consumers, subscribe/unsubscribe and the
 *                    daemon-wide admission limits, flow list/add/del,
 *                    reload, config)
 *   doctor.c         main, pure: a stream that explains itself: what
 *                    each reorder stream receives judged once a second,
 *                    the likeliest cause of a problem named (stats,
 *                    daqirictl doctor, one log line)
 *   reload.c         main: SIGHUP and daqirictl reload: re-read, check,
 *                    diff, then apply all (flow tables, plan retunes,
 *                    new streams and their regions made for every
 *                    worker first) or nothing; removed streams freed
 *                    once their workers let go
 *   control.c        main: the control socket, connections, request
 *                    validation, fd passing, throttling slow clients
 *   http.c           its own thread (libmicrohttpd): /metrics, whose text
 *                    main builds on request (daemon_ops.c), and /healthz
 *                    from the workers' heartbeats
 *   log.c            any thread, never per packet: the logging API
 *   mem.c            main, start-up/teardown and reload: memory regions (sealed
 *                    memfds, huge pages, pinned, device)
 *   engine.c         main: the table of engines built in
 *   engine_socket.c  the socket engine: init/start/fini on main, receive,
 *                    release and counters on the queue's worker
 *   engine_replay.c  the replay engine (daqirid --replay): pcap files
 *                    opened on main, their frames landed in the queue's
 *                    buffers on its worker, on the capture's clock (the
 *                    worker's "now"); start and status asked by main
 *   steer_cbpf.c     main: the socket engine's flow steering, the flows
 *                    compiled into its reuseport group's BPF program
 *   engine_dpdk.c    the DPDK engine, split the same way (and, in software
 *                    loopback, frames landed in the rx queue's buffers)
 *   engine_dpdk_eal.c main: EAL's arguments, start-up and clean-up
 *   engine_dpdk_flow.c main: the port's flow rules (rte_flow)
 *   engine_dpdk_vdev.c the drops net_af_packet and net_af_xdp do not count,
 *                    read from their sockets (found on main, read by the
 *                    queue's worker)
 *   engine_dpdk_tx.c the DPDK engine's tx queues: set up on main, frames
 *                    built and sent on the queue's tx worker
 *   flow.c           flow tables: compiled on main, a copy per worker
 *                    classifies every frame on the worker
 *   worker.c         the worker's loop (receive, route by flow, feed the
 *                    streams, service them, publish counters); main
 *                    creates, starts, stops it and posts flow changes
 *   tap.c            a queue's tap: the worker copies frames as received
 *                    into a bounded ring (a memfd, proto/tapring.h), main
 *                    starts, drains (daqirictl learn) or hands out
 *                    (capture) and stops it for a control connection
 *   tx.c             the TX worker of one tx queue (channels' rings,
 *                    checks, pacing, the engine's tx_burst, completions);
 *                    main opens and closes channels (host or device
 *                    pools) through its commands
 *   engine_socket_tx.c  the socket engine's transmit half: a connected
 *                    UDP socket per tx queue, sendmmsg with UDP_SEGMENT;
 *                    device payloads staged to host memory on the worker
 *   stream_main.c    main: streams made and freed, subscriptions admitted,
 *                    made, ended and reaped, counter snapshots and JSON
 *   stream_worker.c  worker: a stream's buffer pool, publishing into the
 *                    subscribers' rings, releases, hold timeouts, the
 *                    main thread's commands, counters published
 *   reorder.c        worker (plans made on main): the window of open
 *                    batches, placement (and direct placement's hints),
 *                    accounting; the CPU backend
 *   convert_cpu.c    worker: vectorised payload conversion for the CPU
 *                    backend (element arithmetic in convert.h)
 *   raw.c            worker: raw bursts copied into burst tensors
 *   reorder_cuda.cu  worker (plans made on main): the CUDA backend and
 *                    its kernel launches, and the header shadow of
 *                    frames that land whole in device memory (the
 *                    worker's, made on main); the kernels' bodies are
 *                    shadow_kernel.h's and
 *                    reorder_kernel.h's (C11 and CUDA), which kernel.h's
 *                    grid runner also runs on the CPU (tests, the CUDA
 *                    stand-in)
 *   gpu.cu           CUDA device management: allocations, pinned host
 *                    memory, IPC handles and events, TX device pools
 *                    (main), the range and event lookups the backend
 *                    makes and TX staging copies (workers)
 *
 * Shared headers: rx_frame.h is the one descriptor of a received frame,
 * from engine to stage; seqlock.h is the counter snapshot every worker
 * publishes and main reads. Private headers: cfg_internal.h (the loader's
 * parse context, cfg_*.c only), stream_internal.h (struct stream and
 * struct sub, and how each field crosses between main and worker),
 * daemon_internal.h (struct daemon, shared by daemon.c and daemon_ops.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "control.h"
#include "daemon.h"
#include "daemon_internal.h"
#include "engine.h"
#include "engine_replay.h"
#include "flow.h"
#include "geometry.h"
#include "gpu.h"
#include "log.h"
#include "mem.h"
#include "reorder_cuda.h"
#include "stream.h"
#include "worker.h"

#define ERRLEN	256
/* fds of regions, engines, workers, epoll and timers, above the
 * connections' and subscriptions' */
#define DAEMON_FD_MARGIN	256

/* --- bring-up -------------------------------------------------------------- */

/* A tensor region belongs to one stream and nothing else. */
static int
check_region_owners(const struct cfg *c)
{
	int owner[CFG_MAX_REGIONS];

	for (int r = 0; r < CFG_MAX_REGIONS; r++)
		owner[r] = -1;
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_rx *rx = &c->interfaces[i].rx;

		for (int j = 0; j < rx->nreorders; j++) {
			int r = rx->reorders[j].region_idx;

			if (owner[r] >= 0) {
				log_warnx("memory region '%s' is the output of two "
				    "reorder configs; give each its own region",
				    c->regions[r].name);
				return -1;
			}
			owner[r] = i * CFG_MAX_REORDERS + j;
		}
		for (int q = 0; q < rx->nqueues; q++)
			for (int k = 0; k < rx->queues[q].nregions; k++) {
				int r = rx->queues[q].region_idx[k];

				if (owner[r] >= 0) {
					log_warnx("memory region '%s' is both a "
					    "reorder output and a receive region "
					    "of queue '%s'", c->regions[r].name,
					    rx->queues[q].name);
					return -1;
				}
			}
	}
	return 0;
}

static const struct reorder_backend *
backend_for(const struct cfg_interface *ifc, const struct cfg_reorder *r)
{
	char why[ERRLEN];

	if (r->type == CFG_REORDER_CPU)
		return &reorder_backend_cpu;
	if (reorder_cuda_backend() == NULL) {
		log_warnx("reorder config '%s/%s': reorder_type gpu: %s",
		    ifc->name, r->name, reorder_cuda_last_error());
		return NULL;
	}
	if (!gpu_available(why, sizeof(why))) {
		log_warnx("reorder config '%s/%s': reorder_type gpu: %s",
		    ifc->name, r->name, why);
		return NULL;
	}
	return reorder_cuda_backend();
}

/*
 * A stream may take every subscription the daemon admits, and as many
 * again that are ending: those keep their slot until the worker lets
 * them go, and a client that subscribes and hangs up in a loop must not
 * fill the stream with them.
 */
static int
apply_stream_limits(const struct cfg *c, struct stream *s)
{
	uint32_t room = 2 * (c->daemon.max_consumers +
	    c->daemon.reserved_admin_connections);
	int rc = stream_set_limits(s, room, c->daemon.hold_timeout_ms);

	if (rc != 0)
		log_warnx("stream '%s': room for %u subscriptions: %s",
		    stream_name(s), room, strerror(-rc));
	else if (stream_held_budget(s) == 0)
		log_warnx("stream '%s': its buffers leave none for consumers "
		    "beside the reorder window (nbufs - window - 1 = 0): every "
		    "subscribe is refused", stream_name(s));
	return rc;
}

int
daemon_stream_make(struct daemon *d, const struct cfg_interface *ifc,
		   const struct cfg_reorder *r, struct stream **out)
{
	const struct reorder_backend *be = backend_for(ifc, r);
	char err[ERRLEN];
	int rc;

	*out = NULL;
	if (be == NULL)
		return -ENODEV;
	rc = stream_create(out, ifc, r, &d->regions[r->region_idx], be, err,
	    sizeof(err));
	if (rc != 0) {
		log_warnx("%s", err);
		return rc;
	}
	if (d->replay != NULL)
		stream_use_capture_clock(*out);
	if ((rc = apply_stream_limits(d->cfg, *out)) != 0) {
		stream_destroy(*out);
		*out = NULL;
	}
	return rc;
}

/* Rx queues of the interface pinned to one core share one thread, the
 * first one's (worker.c's top): one line says which. */
static void
share_cores(struct daemon_iface *di)
{
	const struct cfg_rx *rx = &di->ifc->rx;

	for (int q = 0; q < di->nworkers; q++) {
		char names[CFG_MAX_QUEUES * (CFG_NAME_MAX + 2)];
		size_t at = 0;
		int n = 0;

		if (rx->queues[q].cpu_core < 0)
			continue;
		for (int p = 0; p < q; p++)
			if (rx->queues[p].cpu_core == rx->queues[q].cpu_core)
				goto next;	/* joined to p's already */
		for (int m = q; m < di->nworkers; m++) {
			if (rx->queues[m].cpu_core != rx->queues[q].cpu_core ||
			    (m > q && worker_join(di->workers[m],
			    di->workers[q]) != 0))
				continue;
			at += (size_t)snprintf(names + at, sizeof(names) - at,
			    "%s%s", n > 0 ? ", " : "", rx->queues[m].name);
			if (at >= sizeof(names))
				at = sizeof(names) - 1;
			n++;
		}
		if (n > 1)
			log_info("interface '%s': rx queues %s share core %d: "
			    "one worker thread polls them", di->ifc->name, names,
			    rx->queues[q].cpu_core);
next:		;
	}
}

static int
interface_up(struct daemon *d, struct daemon_iface *di,
	     const struct cfg_interface *ifc)
{
	const struct cfg *c = d->cfg;
	struct engine_opts opts = { .rx_mode = ENGINE_RX_BLOCKING };
	char err[ERRLEN] = "";
	bool has_tx;
	int rc;

	di->ifc = ifc;
	di->ops = d->replay != NULL ? &engine_replay_ops :
	    engine_lookup(c->engine);
	if (di->ops == NULL) {
		log_warnx("interface '%s': engine %s is not built into this "
		    "daqirid (use stream_type socket)", ifc->name,
		    cfg_iface_traits(c, ifc)->name);
		return -1;
	}
	has_tx = ifc->has_tx && ifc->tx.nqueues > 0;
	if (has_tx && d->replay != NULL) {
		log_info("interface '%s': replay: its tx queues are not "
		    "started", ifc->name);
		has_tx = false;
	}
	if (!ifc->has_rx || ifc->rx.nqueues == 0) {
		if (!has_tx) {
			log_info("interface '%s': no rx or tx queues; nothing "
			    "to do", ifc->name);
			return 0;
		}
		log_info("interface '%s': no rx queues; transmit only",
		    ifc->name);
	}
	if (has_tx && di->ops->tx == NULL) {
		log_warnx("interface '%s': the %s engine does not transmit "
		    "yet (remove its tx section, or use stream_type socket)",
		    ifc->name, di->ops->name);
		return -1;
	}
	if (ifc->rx.nqueues > 0 &&
	    (di->flows = flow_table_create(ifc)) == NULL) {
		log_warn("interface '%s': flow table", ifc->name);
		return -1;
	}
	opts.rx_mode = c->daemon.rx_mode == CFG_RX_BUSY_POLL ?
	    ENGINE_RX_BUSY_POLL : ENGINE_RX_BLOCKING;
	opts.replay = d->replay;
	rc = di->ops->init(&di->eng, c, ifc, d->regions, &opts, err, sizeof(err));
	if (rc != 0) {
		log_warnx("%s", err[0] != '\0' ? err : strerror(-rc));
		return -1;
	}
	for (int j = 0; j < ifc->rx.nreorders; j++) {
		const struct cfg_reorder *r = &ifc->rx.reorders[j];

		if (daemon_stream_make(d, ifc, r, &di->streams[j]) != 0)
			return -1;
		di->reorder_cfgs[j] = r;
		di->nstreams++;
	}
	for (int q = 0; q < ifc->rx.nqueues; q++) {
		const struct cfg_queue *cq = &ifc->rx.queues[q];

		/* a raw stream copies what the CPU may read (geometry.h) */
		rc = stream_create_raw(&di->raws[q], ifc, cq,
		    geom_queue_host_bytes(c, ifc, cq),
		    geom_queue_device_part(c, cq) >= 0, err, sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		if (apply_stream_limits(c, di->raws[q]) != 0)
			return -1;
		if (d->replay != NULL)
			stream_use_capture_clock(di->raws[q]);
		/* frames whole in device memory: a header shadow */
		rc = worker_create(&di->workers[q], ifc, q, di->eng, di->flows,
		    di->streams, di->reorder_cfgs, di->nstreams, di->raws[q],
		    geom_queue_device_part(c, cq) == 0 ?
		    (uint32_t)geom_queue_host_bytes(c, ifc, cq) : 0, err,
		    sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		di->nworkers++;
	}
	share_cores(di);
	for (int q = 0; has_tx && q < ifc->tx.nqueues; q++) {
		rc = tx_worker_create(&di->txw[q], ifc, q, di->eng, err,
		    sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		di->ntx++;
	}
	return 0;
}

static void
interface_down(struct daemon_iface *di)
{
	for (int q = 0; q < di->ntx; q++)
		tx_worker_destroy(di->txw[q]);
	for (int q = 0; q < di->nworkers; q++)
		worker_destroy(di->workers[q]);
	for (int j = 0; j < di->nstreams; j++)
		stream_destroy(di->streams[j]);
	for (int q = 0; q < CFG_MAX_QUEUES; q++)
		stream_destroy(di->raws[q]);
	if (di->ops != NULL && di->eng != NULL)
		di->ops->fini(di->eng);
	flow_table_free(di->flows);
	memset(di, 0, sizeof(*di));
}

/* The socket's directory: made when missing (e.g. /run/daqiri outside
 * systemd's RuntimeDirectory). */
static void
make_socket_dir(const char *path)
{
	char dir[CFG_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) == 0)
		log_info("made the control socket's directory %s", dir);
	else if (errno != EEXIST)
		log_warnx("control socket %s: cannot make its directory %s: "
		    "%s; make it, or choose another path with -s or "
		    "daemon.control_socket", path, dir, strerror(errno));
}

/*
 * daemon.socket_group, or "" when it names no group: the shipped
 * "daqiri" on a machine where systemd-sysusers never made it (make demo,
 * the tests) must not stop the daemon. The socket then keeps the
 * daemon's own group, which only narrows who may connect. Any other
 * lookup failure is left to control_init() to report.
 */
static const char *
socket_group(const struct cfg *c)
{
	const char *g = c->daemon.socket_group;
	struct group *own;

	if (g[0] == '\0')
		return g;
	errno = 0;
	if (getgrnam(g) != NULL || errno != 0)
		return g;
	own = getgrgid(getegid());
	log_warnx("daemon.socket_group \"%s\": no such group; the socket "
	    "keeps the daemon's group \"%s\" (create \"%s\", e.g. with "
	    "systemd-sysusers, or change the key)", g, own != NULL ?
	    own->gr_name : "?", g);
	return "";
}

/*
 * The control socket: the one systemd passes (daqirid.socket, socket
 * activation) or our own at socket_path.
 */
static int
control_up(struct daemon *d)
{
	const struct cfg *c = d->cfg;
	struct control_opts o = {
		.mode = c->daemon.socket_mode,
		.group = c->daemon.socket_group,
		.admin_group = c->daemon.admin_group,
		.max_clients = c->daemon.max_consumers,
		.reserved_admin = c->daemon.reserved_admin_connections,
		.max_per_uid = c->daemon.max_connections_per_uid,
		.hello_timeout_ms = c->daemon.hello_timeout_ms,
	};
	int n = sd_listen_fds(1);

	if (n == 1 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1,
	    NULL, 0) > 0) {
		log_info("control socket passed by systemd");
		d->socket_path = "(systemd socket)";
		return control_init_fd(&d->ctl, SD_LISTEN_FDS_START, &o,
		    &daemon_control_ops, d);
	}
	if (n > 0)
		log_warnx("systemd passed %d socket(s), expected one "
		    "SOCK_SEQPACKET listener; making our own at %s", n,
		    d->socket_path);
	make_socket_dir(d->socket_path);
	o.group = socket_group(c);
	return control_init(&d->ctl, d->socket_path, &o, &daemon_control_ops,
	    d);
}

/*
 * Every connection, subscription and region is an fd or more: take the
 * whole hard limit (systemd gives 524288) and say when even that cannot
 * hold what the configuration admits.
 */
static void
raise_nofile(const struct cfg *c)
{
	uint64_t conns = (uint64_t)c->daemon.max_consumers +
	    c->daemon.reserved_admin_connections;
	/* per connection its socket, per subscription its ring and wake-up socket
	 * while they are being sent, and a margin for the rest */
	uint64_t need = conns + 2 * (uint64_t)c->daemon.max_consumers *
	    DAQIRI_SUB_MAX_FDS + DAEMON_FD_MARGIN;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("setrlimit RLIMIT_NOFILE %llu",
			    (unsigned long long)rl.rlim_max);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need)
		log_warnx("open files limit %llu is below the %llu that "
		    "max_consumers %u and reserved_admin_connections %u can "
		    "take; connections past it are refused (raise LimitNOFILE)",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)need,
		    c->daemon.max_consumers,
		    c->daemon.reserved_admin_connections);
}

void
daemon_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static int
loop_setup(struct daemon *d)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = {
		.it_interval = { 0, DAEMON_TICK_MS * 1000000L },
		.it_value = { 0, DAEMON_TICK_MS * 1000000L },
	};
	sigset_t set;

	/* main() blocked these already; again, for a caller that did not */
	daemon_signals(&set);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->tick_fd < 0 || d->epfd < 0) {
		log_warn("main loop");
		return -1;
	}
	if (timerfd_settime(d->tick_fd, 0, &its, NULL) != 0)
		return -1;
	ev.data.fd = d->sigfd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sigfd, &ev) != 0)
		return -1;
	ev.data.fd = d->tick_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tick_fd, &ev) != 0)
		return -1;
	ev.data.fd = control_fd(d->ctl);
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
}

/*
 * The HTTP endpoint, when daemon.metrics_listen names one. An address
 * that cannot be bound stops the start-up: an operator who asked for
 * metrics is told at once, not by a scrape that never works.
 */
static int
http_up(struct daemon *d)
{
	struct http_opts o = {
		.listen = d->cfg->daemon.metrics_listen,
		.unix_mode = d->cfg->daemon.socket_mode,
		.stale_ns = d->stale_ns,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	char err[ERRLEN] = "";

	if (o.listen[0] == '\0')
		return 0;
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			if (o.nworkers < HTTP_MAX_WORKERS)
				o.workers[o.nworkers++] = d->ifs[i].workers[q];
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++)
			if (o.ntx < HTTP_MAX_WORKERS)
				o.txws[o.ntx++] = d->ifs[i].txw[q];
	if (http_init(&d->http, &o, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		return -1;
	}
	ev.data.fd = http_fd(d->http);
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
		log_warn("metrics endpoint: epoll");
		return -1;
	}
	return 0;
}

static void
notify_status(struct daemon *d)
{
	uint64_t placed = 0, tensors = 0, dropped = 0;
	struct stream *s;

	FOR_EACH_STREAM(d, s) {
		struct reorder_counters reorder;
		struct stream_counters handoff;

		stream_snapshot(s, &reorder, &handoff);
		placed += reorder.placed;
		tensors += handoff.published;
		/* incomplete ones were placed, then dropped with their
		 * batch: in both */
		dropped += reorder.duplicate + reorder.late + reorder.malformed +
		    reorder.no_buffer + reorder.backend_error +
		    reorder.incomplete;
	}
	sd_notifyf(0, "STATUS=%llu tensors published, %llu packets placed, "
	    "%llu dropped (see daqirictl stats)", (unsigned long long)tensors,
	    (unsigned long long)placed, (unsigned long long)dropped);
}

/*
 * True while every RX and TX worker's heartbeat advanced within stale_ns (half
 * the watchdog interval, the feeding period; a worker beats at least four
 * times in it). Otherwise the watchdog goes unfed and systemd restarts
 * the daemon: a wedged worker stops its streams for good while the main
 * thread would go on answering. Logged once per episode.
 */
static bool
workers_alive(struct daemon *d, uint64_t now)
{
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++) {
			struct worker *w = d->ifs[i].workers[q];
			uint64_t age = heartbeat_age(w, now);

			if (age <= d->stale_ns)
				continue;
			if (!d->wd_stuck)
				log_warnx("queue '%s': its RX worker's heartbeat "
				    "has not advanced for %llu ms; no longer "
				    "feeding the systemd watchdog, so systemd "
				    "restarts daqirid", worker_queue_name(w),
				    (unsigned long long)(age / 1000000));
			d->wd_stuck = true;
			return false;
		}
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++) {
			struct tx_worker *w = d->ifs[i].txw[q];
			uint64_t age = tx_heartbeat_age(w, now);

			if (age <= d->stale_ns)
				continue;
			if (!d->wd_stuck)
				log_warnx("tx queue '%s': its TX worker's "
				    "heartbeat has not advanced for %llu ms; no "
				    "longer feeding the systemd watchdog, so "
				    "systemd restarts daqirid",
				    tx_worker_name(w),
				    (unsigned long long)(age / 1000000));
			d->wd_stuck = true;
			return false;
		}
	if (d->wd_stuck)
		log_warnx("every worker's heartbeat advances again; feeding "
		    "the systemd watchdog");
	d->wd_stuck = false;
	return true;
}

static void
on_tick(struct daemon *d)
{
	uint64_t expirations, now = daqiri_mono_ns();
	struct stream *s;

	(void)!read(d->tick_fd, &expirations, sizeof(expirations));
	if (d->http != NULL)
		http_tick(d->http);
	FOR_EACH_STREAM(d, s)
		stream_reap(s, daemon_sub_broken, d);
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			worker_reap(d->ifs[i].workers[q]);
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++)
			tx_worker_reap(d->ifs[i].txw[q], daemon_tx_broken, d);
	daemon_reload_reap(d);
	if (now - d->last_doctor_ns >= DOCTOR_PERIOD_NS) {
		daemon_doctor(d, now);
		d->last_doctor_ns = now;
	}
	if (d->wd_usec != 0 && now - d->last_wd_ns >= d->wd_usec * 1000 / 2 &&
	    workers_alive(d, now)) {
		sd_notify(0, "WATCHDOG=1");
		d->last_wd_ns = now;
	}
	if (now - d->last_status_ns >=
	    (uint64_t)d->cfg->daemon.stats_interval_ms * 1000000u) {
		notify_status(d);
		d->last_status_ns = now;
	}
}

static void
on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			static struct reload_result r;	/* big */

			log_notice("SIGHUP: reloading %s", d->config_file !=
			    NULL ? d->config_file : "the built-in default");
			(void)daemon_reload(d, &r);
			daemon_reload_log(&r);
			continue;
		}
		log_info("%s: stopping", strsignal((int)si.ssi_signo));
		d->stop = true;
	}
}

static void
run_loop(struct daemon *d)
{
	struct epoll_event evs[16];

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == d->sigfd)
				on_signal(d);
			else if (fd == d->tick_fd)
				on_tick(d);
			else if (fd == control_fd(d->ctl))
				control_handle(d->ctl, fd, evs[i].events);
			else if (d->http != NULL && fd == http_fd(d->http))
				http_serve(d->http, daemon_metrics_text, d);
		}
	}
}

static void
teardown(struct daemon *d)
{
	/* The endpoint first: /healthz reads the workers. */
	http_fini(d->http);
	d->http = NULL;
	/* Workers first: they flush open batches to the subscribers. */
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			worker_stop(d->ifs[i].workers[q]);
	/* TX workers: what they hold completes closed where rings have
	 * room; the connections' ends then close channels on main */
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++)
			tx_worker_stop(d->ifs[i].txw[q]);
	control_fini(d->ctl);
	d->ctl = NULL;
	for (int i = d->nifs; i-- > 0;)
		interface_down(&d->ifs[i]);
	daemon_reload_fini(d);
	/* every slot: a reload may have made regions and let others go */
	if (d->regions_made)
		mem_regions_destroy(d->regions, CFG_MAX_REGIONS);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->tick_fd >= 0)
		close(d->tick_fd);
	if (d->sigfd >= 0)
		close(d->sigfd);
}

/* Streams of one interface, as `daqirictl streams` lists them. */
static int
iface_count_streams(struct daemon_iface *di)
{
	int n = 0;

	while (iface_stream_at(di, n) != NULL)
		n++;
	return n;
}

/*
 * The one line that says the daemon is up: the config it read, each
 * interface's engine and endpoint, its queues and streams, the control
 * socket. A notice: shown at the default level (warn) and below, so a
 * newcomer sees it; error, critical and off keep it quiet.
 */
static void
log_started(struct daemon *d)
{
	char line[900];
	size_t n = 0;

#define ADD(...) do {							\
		if (n < sizeof(line))					\
			n += (size_t)snprintf(line + n, sizeof(line) - n, \
			    __VA_ARGS__);				\
	} while (0)
	ADD("daqirid %s running: config %s", DAQIRI_VERSION,
	    d->config_file != NULL ? d->config_file : "<built-in default>");
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];
		const struct cfg_endpoint *e = &di->ifc->socket.local;
		int ns = iface_count_streams(di);

		ADD(": interface '%s' %s", di->ifc->name, di->ops->name);
		if (di->ifc->socket.present && e->set) {
			struct in_addr a = { .s_addr = htonl(e->addr) };
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &a, ip, sizeof(ip));
			ADD(" %s://%s:%u", e->transport == CFG_TRANSPORT_TCP ?
			    "tcp" : "udp", ip, e->port);
		} else if (di->ifc->address[0] != '\0')
			ADD(" %s", di->ifc->address);
		ADD(" (%d queue%s, %d stream%s", di->nworkers,
		    di->nworkers == 1 ? "" : "s", ns, ns == 1 ? "" : "s");
		if (di->ntx > 0)
			ADD(", %d tx queue%s", di->ntx, di->ntx == 1 ? "" : "s");
		ADD(")");
	}
	ADD("; control %s", d->socket_path);
#undef ADD
	log_notice("%s", line);
}

int
daemon_run(struct cfg *c, const char *socket_path, const char *config_file,
	   int level, const struct replay_cfg *replay)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	char err[ERRLEN] = "";
	int rc = 1;

	d->cfg = c;
	d->config_file = config_file;
	d->socket_path = socket_path;
	d->epfd = d->sigfd = d->tick_fd = -1;
	d->regions_keep = -1;
	d->start_ns = daqiri_mono_ns();
	d->level_override = level;
	d->replay = replay;
	log_init(level >= 0 ? (enum cfg_log_level)level : c->log_level,
	    getenv("JOURNAL_STREAM") != NULL);

	raise_nofile(c);
	if (check_region_owners(c) != 0)
		goto out;
	if (replay != NULL && replay_check(c, replay, stderr) > 0)
		goto out;
	/* The control socket first: a second daqirid on the same path is
	 * told so before it touches ports and memory. Nothing is served
	 * until the loop runs. */
	if (control_up(d) != 0)
		goto out;
	if (mem_regions_create(c, d->regions, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		goto out;
	}
	d->regions_made = true;
	for (int i = 0; i < c->ninterfaces; i++) {
		d->nifs++;
		if (interface_up(d, &d->ifs[i], &c->interfaces[i]) != 0)
			goto out;
	}
	if (loop_setup(d) != 0) {
		log_warn("main loop setup");
		goto out;
	}
	if (sd_watchdog_enabled(0, &d->wd_usec) <= 0)
		d->wd_usec = 0;
	/* a healthy worker beats four times per feeding period (wd/2) */
	d->stale_ns = d->wd_usec != 0 ? d->wd_usec * 1000 / 2 :
	    DAEMON_STALE_NS;
	if (d->stale_ns < DAEMON_STALE_MIN_NS)
		d->stale_ns = DAEMON_STALE_MIN_NS;
	if (http_up(d) != 0)
		goto out;
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		if (di->eng != NULL && di->ops->start(di->eng) != 0) {
			log_warnx("interface '%s': cannot start", di->ifc->name);
			goto out;
		}
		daemon_steer(d->cfg, di);
		for (int q = 0; q < di->nworkers; q++)
			worker_set_idle(di->workers[q], d->stale_ns / 4);
		for (int q = 0; q < di->nworkers; q++)
			if (worker_start(di->workers[q]) != 0) {
				log_warnx("queue '%s': cannot start its worker",
				    worker_queue_name(di->workers[q]));
				goto out;
			}
		for (int q = 0; q < di->ntx; q++) {
			tx_worker_set_idle(di->txw[q], d->stale_ns / 4);
			if (tx_worker_start(di->txw[q]) != 0) {
				log_warnx("tx queue '%s': cannot start its "
				    "worker", tx_worker_name(di->txw[q]));
				goto out;
			}
		}
	}
	log_started(d);
	if (replay != NULL && replay->hold)
		log_notice("replay held: it begins with 'daqirictl replay "
		    "start' (subscribe first)");
	sd_notifyf(0, "READY=1\nSTATUS=receiving; control socket %s\nMAINPID=%d",
	    d->socket_path, (int)getpid());
	d->last_status_ns = daqiri_mono_ns();
	run_loop(d);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	rc = 0;
out:
	teardown(d);
	if (rc != 0)
		log_warnx("start-up failed; daqirid exits");
	return rc;
}

void
daemon_steer(const struct cfg *c, struct daemon_iface *di)
{
	const struct cfg_engine_traits *tr = cfg_iface_traits(c, di->ifc);
	char why[256] = "";
	int rc, nq = di->ifc->rx.nqueues;

	/* software loopback: a frame arrives on the rx queue at its tx
	 * queue's place, which its sender chose */
	/* a replay: frames arrive where the capture recorded them */
	if (di->eng == NULL || di->flows == NULL || nq <= 1 ||
	    c->loopback == CFG_LOOPBACK_SW || di->ops == &engine_replay_ops) {
		di->steered = true;
		return;
	}
	rc = di->ops->steer != NULL ? di->ops->steer(di->eng, di->flows, why,
	    sizeof(why)) : -EOPNOTSUPP;
	if (rc == 0) {
		if (!di->steered)
			log_info("interface '%s': %d rx queues: the %s steers "
			    "each flow's frames to its queue", di->ifc->name, nq,
			    tr->steer_by);
		di->steered = true;
		return;
	}
	if (di->steered || !di->steer_said)
		log_warnx("interface '%s': %d rx queues and no flow steering "
		    "(%s): the %s spreads frames over the queues, and a frame "
		    "that reaches another queue than its flow's is counted "
		    "misrouted", di->ifc->name, nq, why[0] != '\0' ? why :
		    strerror(-rc), tr->spread_by);
	di->steered = false;
	di->steer_said = true;
}
