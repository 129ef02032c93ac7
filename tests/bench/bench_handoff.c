/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_handoff: hand-off latency, publish -> the consumer sees it. As a
 * consumer it subscribes to a stream and, for every tensor daqiri_next()
 * returns, takes CLOCK_MONOTONIC and subtracts the descriptor's publish_ns
 * (set by the daemon just before the ring push); as `pipe` it measures the
 * reference: one byte ping-ponged between two processes over two pipes.
 * As `drain` (the C baseline of scripts/bench-python.sh) it lets tensors
 * pile up for a while, then times daqiri_next(0) + daqiri_release() of
 * each one already waiting: the per-tensor cost with no wait in it.
 * SOCKET may be a relay's ucx:// URL (scripts/bench-remote.sh): the same
 * latency through daqiri-relay, on the same host's clock, and the
 * consumer's throughput (gbps: the bytes of every tensor after the first
 * over the time from the first to the last).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daqiri_client.h"

#define HO_DEFAULT_SAMPLES	50000
#define HO_DEFAULT_WARMUP	1000	/* first samples thrown away */
#define HO_DEFAULT_IDLE_MS	1500	/* end this long after the last tensor */
#define HO_START_TIMEOUT_MS	30000	/* wait for the first tensor */
#define HO_DEFAULT_ROUNDS	100000
#define HO_PIPE_WARMUP		2000

static volatile sig_atomic_t ho_stop;

static void
on_signal(int sig)
{
	(void)sig;
	ho_stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void __attribute__((noreturn))
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
	    "usage: bench_handoff [-s SOCKET] consume STREAM [--busy] "
	    "[--samples N] [--warmup N]\n"
	    "                     [--idle-ms MS] [--cpu C] [--max-held N] [--lossless]\n"
	    "       bench_handoff pipe [--rounds N] [--cpu C] [--peer-cpu C] "
	    "[--peer-fifo]\n"
	    "       bench_handoff [-s SOCKET] drain STREAM [--samples N] "
	    "[--fill-ms MS]\n"
	    "                     [--cpu C] [--max-held N]\n"
	    "consume: prints 'ready' once subscribed, then after N samples "
	    "(or MS without a\ntensor) one 'handoff mode=busy|sleep ...' "
	    "line of publish -> seen latencies\nand the throughput (gbps).\npipe: one byte back and "
	    "forth between two processes; one 'pipe ...' line with\nthe "
	    "one-way time (round trip / 2); --peer-fifo runs the echo side "
	    "SCHED_FIFO 1\n(as bench.sh runs the daemon on that core).\n"
	    "drain: sleeps MS, then times next(timeout 0) + release of every "
	    "tensor waiting,\nagain until N samples; one 'drain ...' line.\n");
	exit(rc);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of sorted v[0..n), nearest rank. */
static uint64_t
quantile(const uint64_t *v, size_t n, double q)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(q * (double)n);
	if (k >= n)
		k = n - 1;
	return v[k];
}

static void
pin(int cpu, const char *who)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) == -1)
		fprintf(stderr, "bench_handoff: %s: cannot pin to cpu %d: %s\n",
		    who, cpu, strerror(errno));
}

static uint64_t
parse_num(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end != '\0') {
		fprintf(stderr, "bench_handoff: %s: bad value '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

static void
print_us(const char *name, uint64_t ns)
{
	printf(" %s=%.3f", name, (double)ns / 1e3);
}

static int
cmd_consume(const char *sock, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "busy", no_argument, NULL, 'b' },
		{ "samples", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "max-held", required_argument, NULL, 'm' },
		{ "lossless", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	struct daqiri_sub_opts so;
	struct daqiri_tensor t;
	struct daqiri_sub *sub;
	struct daqiri *d;
	struct sigaction sa;
	const char *stream;
	uint64_t *lat, want = HO_DEFAULT_SAMPLES, warm = HO_DEFAULT_WARMUP;
	uint64_t seen = 0, n = 0, gaps_seq = 0, last_seq = 0;
	uint64_t first_ns = 0, last_ns = 0, bytes = 0;
	int idle_ms = HO_DEFAULT_IDLE_MS, cpu = -1, ch, rc = 0;
	uint32_t max_held = 0;
	bool busy = false, lossless = false;

	optind = 0;	/* glibc: start afresh after main()'s getopt */
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'b':
			busy = true;
			break;
		case 'n':
			want = parse_num("--samples", optarg);
			break;
		case 'w':
			warm = parse_num("--warmup", optarg);
			break;
		case 'i':
			idle_ms = (int)parse_num("--idle-ms", optarg);
			break;
		case 'c':
			cpu = (int)parse_num("--cpu", optarg);
			break;
		case 'm':
			max_held = (uint32_t)parse_num("--max-held", optarg);
			break;
		case 'l':
			lossless = true;
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc - 1 || want == 0)
		usage(2);
	stream = argv[optind];
	if ((lat = calloc(want, sizeof(*lat))) == NULL) {
		fprintf(stderr, "bench_handoff: out of memory\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pin(cpu, "consumer");
	if ((rc = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "bench_handoff: connect: %s\n", strerror(-rc));
		return 1;
	}
	memset(&so, 0, sizeof(so));
	so.size = sizeof(so);
	so.flags = busy ? DAQIRI_SUB_BUSY_POLL : 0;
	so.max_held = max_held;
	so.policy = lossless ? DAQIRI_POLICY_LOSSLESS : DAQIRI_POLICY_LATEST;
	if ((rc = daqiri_subscribe(d, stream, &so, &sub)) < 0) {
		fprintf(stderr, "bench_handoff: subscribe '%s': %s %s\n", stream,
		    strerror(-rc), daqiri_last_error(d));
		daqiri_disconnect(d);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	while (!ho_stop && n < want) {
		uint64_t seen_ns;

		rc = daqiri_next(sub, &t, seen == 0 ? HO_START_TIMEOUT_MS :
		    idle_ms);
		seen_ns = now_ns();
		if (rc == -EINTR)
			continue;
		if (rc <= 0)
			break;
		/* tensors this consumer missed (overruns: it was away while
		 * max_held were unreclaimed) have no latency; count them */
		if (seen > 0 && t.seq != last_seq + 1)
			gaps_seq++;
		last_seq = t.seq;
		/* throughput: the bytes of every tensor after the first, over
		 * the time from the first to the last */
		if (seen == 0)
			first_ns = seen_ns;
		else
			bytes += t.bytes;
		last_ns = seen_ns;
		if (seen++ >= warm && seen_ns >= t.publish_ns)
			lat[n++] = seen_ns - t.publish_ns;
		if ((rc = daqiri_release(sub, &t)) < 0)
			break;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("handoff mode=%s samples=%llu seen=%llu seq_gaps=%llu",
	    busy ? "busy" : "sleep", (unsigned long long)n,
	    (unsigned long long)seen, (unsigned long long)gaps_seq);
	print_us("p50_us", quantile(lat, n, 0.50));
	print_us("p90_us", quantile(lat, n, 0.90));
	print_us("p99_us", quantile(lat, n, 0.99));
	print_us("p999_us", quantile(lat, n, 0.999));
	print_us("max_us", n ? lat[n - 1] : 0);
	printf(" gbps=%.3f", last_ns > first_ns ?
	    (double)bytes * 8 / (double)(last_ns - first_ns) : 0.0);
	printf(" end=%s\n", rc < 0 ? strerror(-rc) : rc == 0 && n < want ?
	    "idle" : "done");
	free(lat);
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return seen == 0;
}

static int
cmd_pipe(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "rounds", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "peer-cpu", required_argument, NULL, 'p' },
		{ "peer-fifo", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	bool peer_fifo = false;
	uint64_t rounds = HO_DEFAULT_ROUNDS, *half;
	int ping[2], pong[2], cpu = -1, peer_cpu = -1, ch, status;
	char b = 'x';
	pid_t pid;

	optind = 0;	/* glibc: start afresh after main()'s getopt */
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			rounds = parse_num("--rounds", optarg);
			break;
		case 'c':
			cpu = (int)parse_num("--cpu", optarg);
			break;
		case 'p':
			peer_cpu = (int)parse_num("--peer-cpu", optarg);
			break;
		case 'f':
			peer_fifo = true;
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc || rounds == 0)
		usage(2);
	if ((half = calloc(rounds, sizeof(*half))) == NULL ||
	    pipe2(ping, O_CLOEXEC) == -1 || pipe2(pong, O_CLOEXEC) == -1) {
		perror("bench_handoff: pipe");
		return 1;
	}
	if ((pid = fork()) == -1) {
		perror("bench_handoff: fork");
		return 1;
	}
	if (pid == 0) {
		/* the echo side: blocking read, write straight back */
		pin(peer_cpu, "pipe peer");
		if (peer_fifo) {
			struct sched_param sp = { .sched_priority = 1 };

			if (sched_setscheduler(0, SCHED_FIFO, &sp) == -1)
				fprintf(stderr, "bench_handoff: pipe peer: "
				    "SCHED_FIFO: %s\n", strerror(errno));
		}
		close(ping[1]);
		close(pong[0]);
		while (read(ping[0], &b, 1) == 1)
			if (write(pong[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	pin(cpu, "pipe");
	close(ping[0]);
	close(pong[1]);
	for (uint64_t i = 0; i < HO_PIPE_WARMUP + rounds; i++) {
		uint64_t t0 = now_ns(), t1;

		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1) {
			perror("bench_handoff: pipe round trip");
			return 1;
		}
		t1 = now_ns();
		if (i >= HO_PIPE_WARMUP)
			half[i - HO_PIPE_WARMUP] = (t1 - t0) / 2;
	}
	close(ping[1]);
	close(pong[0]);
	waitpid(pid, &status, 0);
	qsort(half, rounds, sizeof(*half), cmp_u64);
	printf("pipe rounds=%llu", (unsigned long long)rounds);
	print_us("oneway_p50_us", quantile(half, rounds, 0.50));
	print_us("oneway_p90_us", quantile(half, rounds, 0.90));
	print_us("oneway_p99_us", quantile(half, rounds, 0.99));
	print_us("oneway_max_us", half[rounds - 1]);
	printf("\n");
	free(half);
	return 0;
}

/*
 * The per-tensor cost of taking a tensor that is already waiting and
 * giving it back: sleep fill_ms so that up to max_held tensors pile up
 * (those beyond are overruns, expected here), then time each
 * daqiri_next(sub, &t, 0) + daqiri_release() until the ring is empty.
 */
static int
cmd_drain(const char *sock, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "samples", required_argument, NULL, 'n' },
		{ "fill-ms", required_argument, NULL, 'f' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "max-held", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	struct daqiri_sub_opts so = { .size = sizeof(so) };
	struct daqiri_tensor t = { .size = sizeof(t) };
	struct daqiri_sub *sub;
	struct daqiri *d;
	struct sigaction sa;
	struct timespec fill;
	uint64_t *lat, want = 2000, n = 0, fills = 0, idle_ms = 0, fill_ms = 20;
	int cpu = -1, ch, rc = 0;

	optind = 0;	/* glibc: start afresh after main()'s getopt */
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			want = parse_num("--samples", optarg);
			break;
		case 'f':
			fill_ms = parse_num("--fill-ms", optarg);
			break;
		case 'c':
			cpu = (int)parse_num("--cpu", optarg);
			break;
		case 'm':
			so.max_held = (uint32_t)parse_num("--max-held", optarg);
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc - 1 || want == 0 || fill_ms == 0)
		usage(2);
	fill.tv_sec = (time_t)(fill_ms / 1000);
	fill.tv_nsec = (long)(fill_ms % 1000) * 1000000L;
	if ((lat = calloc(want, sizeof(*lat))) == NULL) {
		fprintf(stderr, "bench_handoff: out of memory\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pin(cpu, "drain");
	if ((rc = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "bench_handoff: connect: %s\n", strerror(-rc));
		return 1;
	}
	if ((rc = daqiri_subscribe(d, argv[optind], &so, &sub)) < 0) {
		fprintf(stderr, "bench_handoff: subscribe '%s': %s %s\n",
		    argv[optind], strerror(-rc), daqiri_last_error(d));
		daqiri_disconnect(d);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	/* give up after HO_START_TIMEOUT_MS of fills that found nothing */
	while (!ho_stop && n < want && idle_ms < HO_START_TIMEOUT_MS) {
		uint64_t got = 0;

		nanosleep(&fill, NULL);
		while (n < want) {
			uint64_t t0 = now_ns();

			if ((rc = daqiri_next(sub, &t, 0)) <= 0)
				break;
			if ((rc = daqiri_release(sub, &t)) < 0)
				break;
			lat[n++] = now_ns() - t0;
			got++;
		}
		if (rc < 0 && rc != -EINTR)
			break;
		fills += got > 0;
		idle_ms = got > 0 ? 0 : idle_ms + fill_ms;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("drain samples=%llu fills=%llu", (unsigned long long)n,
	    (unsigned long long)fills);
	print_us("p50_us", quantile(lat, n, 0.50));
	print_us("p90_us", quantile(lat, n, 0.90));
	print_us("p99_us", quantile(lat, n, 0.99));
	printf(" end=%s\n", rc < 0 && rc != -EINTR ? strerror(-rc) :
	    n < want ? "idle" : "done");
	free(lat);
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return n == 0;
}

int
main(int argc, char **argv)
{
	const char *sock = NULL;
	int ch;

	while ((ch = getopt(argc, argv, "+s:h")) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(2);
	if (strcmp(argv[0], "consume") == 0)
		return cmd_consume(sock, argc, argv);
	if (strcmp(argv[0], "pipe") == 0)
		return cmd_pipe(argc, argv);
	if (strcmp(argv[0], "drain") == 0)
		return cmd_drain(sock, argc, argv);
	usage(2);
}
