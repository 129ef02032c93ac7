#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The one prepared check for a machine with a GPU (an H200, sm_90): build
# with CUDA, run the CUDA unit tests (kernel against convert.h, GPU plan
# against the CPU plan), the GPU benchmark and the two-process IPC check,
# with client/python/examples/cupy_fft.py on the same daemon where CuPy is
# installed for /usr/bin/python3 (skipped, and said so, where it is not).
# Everything goes to stdout and, when $OUT is set, to $OUT/gpu-check.log.
# Exits 0 only when every step passed. Usage: sh scripts/gpu-check.sh
#
# Where `make` cannot run (a bare CUDA image without DPDK, libyaml, ...),
# the CUDA pieces are built directly with nvcc and cc; where even Check is
# missing, a minimal stand-in written by this script runs the same tests.
#
# Before a GPU runs it, every step can be tried on the CUDA stand-in
# (scripts/cuda-standin): GPU_CHECK_STANDIN=1 runs each program with it,
# the benchmark one quick round (its numbers mean nothing there). make
# check does so (tests/system/43-gpu-check.sh), also with
# GPU_CHECK_DIRECT=1 (the direct build whatever make could do) and
# GPU_CHECK_SHIM=1 (the Check stand-in whatever pkg-config finds).
# GPU_CHECK_PORT is the UDP port of the IPC step (15005).

set -u
cd "$(dirname "$0")/.." || exit 1

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
GPU_ARCH=${GPU_ARCH:--gencode arch=compute_90,code=sm_90}
BUILD=${BUILD:-build}
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
JOBS=$(nproc 2>/dev/null || echo 4)
TEST_TIMEOUT=${TEST_TIMEOUT:-420}	# seconds per test program
BENCH_TIMEOUT=${BENCH_TIMEOUT:-240}

STANDIN=${GPU_CHECK_STANDIN:-0}
PORT=${GPU_CHECK_PORT:-15005}
# the prefix of every program that may call CUDA
RUN=""
[ "$STANDIN" = 1 ] && RUN="sh scripts/cuda-standin"

LOG=/dev/null
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT" && LOG=$OUT/gpu-check.log
fi
RCFILE=$(mktemp)
trap 'rm -f "$RCFILE"' EXIT

FAILED=""
say() { echo "gpu-check: $*"; }
fail() { FAILED="$FAILED $1"; say "FAIL: $1"; }

# The default config with a gpu reorder config writing device tensors,
# daqirid and a verifying consumer in two processes, 64 tensors.
ipc_check() {
	d=$(mktemp -d)
	# (a lossless consumer, as on the stand-in, needs root or the
	# admin group: the caller's group is made the admin group)
	sed -e 's/reorder_type: cpu/reorder_type: gpu/' \
	    -e "s/admin_group: \"\" /admin_group: \"$(id -gn)\" /" \
	    -e "s/127\\.0\\.0\\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	    etc/daqirid.yaml | awk '
		/- name: tensors/ { t = 1 }
		t && /kind: host/ { sub(/kind: host/, "kind: device"); t = 0 }
		{ print }' > "$d/gpu.yaml"
	"$BUILD/daqirid" -n -c "$d/gpu.yaml" || { rm -rf "$d"; return 1; }
	$RUN "$BUILD/daqirid" -c "$d/gpu.yaml" -s "$d/s" -l info &
	dpid=$!
	i=0
	until "$BUILD/daqirictl" -s "$d/s" status > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 $dpid 2>/dev/null; then
			kill $dpid 2>/dev/null; rm -rf "$d"; return 1
		fi
		sleep 0.1
	done
	# On the stand-in the kernels run on this machine's CPU: a gentler
	# rate, and a consumer that is never skipped while it lags.
	rate=1Gbps
	copts=""
	if [ "$STANDIN" = 1 ]; then
		rate=0.3Gbps
		copts=--lossless
	fi
	# shellcheck disable=SC2086 # copts: no word or one
	$RUN "$BUILD/daqiri-consume" -s "$d/s" --verify --quiet --count 64 \
	    --timeout 20 $copts sensor0/sensor_tensor &
	cpid=$!
	i=0
	until "$BUILD/daqirictl" -s "$d/s" -j consumers 2>/dev/null |
	    grep -q '"pid"'; do
		i=$((i + 1))
		if [ $i -gt 200 ] || ! kill -0 $cpid 2>/dev/null; then
			say "ipc: the consumer did not subscribe"
			break
		fi
		sleep 0.1
	done
	"$BUILD/daqiri-sim" -c "$d/gpu.yaml" --batches 64 --shuffle 16 \
	    --rate $rate --seed 5 --quiet
	wait $cpid
	rc=$?
	"$BUILD/daqirictl" -s "$d/s" stats
	cupy_step "$d"
	kill $dpid 2>/dev/null
	wait $dpid 2>/dev/null
	rm -rf "$d"
	return $rc
}

# CuPy on the IPC check's daemon (socket $1/s, config $1/gpu.yaml):
# client/python/examples/cupy_fft.py maps the same device tensors through
# the Python module and DLPack and transforms them. Reported as its own
# step; skipped, without failing, where /usr/bin/python3 has no CuPy or the
# module was not built.
cupy_step() {
	say "== cupy_fft: client/python/examples/cupy_fft.py on the ipc daemon"
	if ! /usr/bin/python3 -c 'import cupy' 2>/dev/null; then
		say "cupy_fft: not run: CuPy is not installed for /usr/bin/python3"
		return 0
	fi
	if ! ls "$BUILD"/python/daqiri*.so >/dev/null 2>&1; then
		say "cupy_fft: not run: no $BUILD/python/daqiri*.so (make python needs Python.h and dlpack.h)"
		return 0
	fi
	PYTHONPATH=$BUILD/python timeout 120 /usr/bin/python3 \
	    client/python/examples/cupy_fft.py -s "$1/s" --count 16 \
	    --timeout 20 sensor0/sensor_tensor > "$1/cupy.out" 2>&1 &
	fpid=$!
	# CuPy's import and first FFT plan take seconds: wait for its header.
	j=0
	until grep -q '^cupy_fft: sensor0' "$1/cupy.out" 2>/dev/null; do
		j=$((j + 1))
		if [ $j -gt 600 ] || ! kill -0 $fpid 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if kill -0 $fpid 2>/dev/null; then
		"$BUILD/daqiri-sim" -c "$1/gpu.yaml" --batches 32 --rate 0.2Gbps \
		    --seed 6 --quiet
	fi
	wait $fpid
	frc=$?
	cat "$1/cupy.out"
	if [ $frc -eq 0 ]; then
		say "ok: cupy_fft"
	else
		fail "cupy_fft (exit $frc)"
	fi
}

# run NAME CMD...: one step with its exit status reported
run() {
	name=$1
	shift
	say "== $name: $*"
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		say "ok: $name"
	else
		fail "$name (exit $rc)"
	fi
	return $rc
}

# A minimal Check stand-in (fork per test, per-case timeout, the same
# closing line), for machines without libcheck. Only what the suites use.
write_check_shim() {
	mkdir -p "$1"
	cat > "$1/check.h" <<'EOF'
/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal Check stand-in written by scripts/gpu-check.sh. */
#ifndef GPU_CHECK_SHIM_H
#define GPU_CHECK_SHIM_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef struct Suite Suite;
typedef struct TCase TCase;
typedef struct SRunner SRunner;
enum fork_status { CK_FORK, CK_NOFORK };
enum print_output { CK_NORMAL };
typedef void (*ck_tfun)(int);
#define START_TEST(n) static void n(int _i) { (void)_i;
#define END_TEST }
void ck_fail_at(const char *f, int l, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));
#define ck_abort_msg(...) ck_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define ck_assert_msg(c, ...) do { if (!(c)) \
	ck_fail_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define ck_assert(c) ck_assert_msg(c, "Assertion '%s' failed", #c)
#define CK_CMP_(T, F, x, op, y) do { T x_ = (T)(x), y_ = (T)(y); \
	if (!(x_ op y_)) ck_fail_at(__FILE__, __LINE__, \
	"Assertion '%s %s %s' failed: " F ", " F, #x, #op, #y, x_, y_); \
	} while (0)
#define ck_assert_int_eq(x, y) CK_CMP_(intmax_t, "%jd", x, ==, y)
#define ck_assert_int_ne(x, y) CK_CMP_(intmax_t, "%jd", x, !=, y)
#define ck_assert_int_ge(x, y) CK_CMP_(intmax_t, "%jd", x, >=, y)
#define ck_assert_uint_eq(x, y) CK_CMP_(uintmax_t, "%ju", x, ==, y)
#define ck_assert_uint_ne(x, y) CK_CMP_(uintmax_t, "%ju", x, !=, y)
#define ck_assert_uint_gt(x, y) CK_CMP_(uintmax_t, "%ju", x, >, y)
#define ck_assert_uint_ge(x, y) CK_CMP_(uintmax_t, "%ju", x, >=, y)
#define ck_assert_uint_lt(x, y) CK_CMP_(uintmax_t, "%ju", x, <, y)
#define ck_assert_uint_le(x, y) CK_CMP_(uintmax_t, "%ju", x, <=, y)
#define ck_assert_int_gt(x, y) CK_CMP_(intmax_t, "%jd", x, >, y)
#define ck_assert_int_lt(x, y) CK_CMP_(intmax_t, "%jd", x, <, y)
#define ck_assert_int_le(x, y) CK_CMP_(intmax_t, "%jd", x, <=, y)
#define ck_assert_str_eq(x, y) do { const char *a_ = (x), *b_ = (y); \
	if (strcmp(a_, b_)) ck_fail_at(__FILE__, __LINE__, \
	"'%s' != '%s'", a_, b_); } while (0)
#define ck_assert_ptr_null(p) ck_assert_msg((p) == NULL, "%s not NULL", #p)
#define ck_assert_ptr_nonnull(p) ck_assert_msg((p) != NULL, "%s NULL", #p)
#define ck_assert_ptr_eq(a, b) ck_assert_msg((const void *)(a) == \
	(const void *)(b), "%s != %s", #a, #b)
Suite *suite_create(const char *name);
TCase *tcase_create(const char *name);
void tcase_set_timeout(TCase *tc, double s);
void ck_add_(TCase *tc, ck_tfun f, const char *name, int lo, int hi);
#define tcase_add_loop_test(tc, f, lo, hi) ck_add_(tc, f, #f, lo, hi)
#define tcase_add_test(tc, f) ck_add_(tc, f, #f, 0, 1)
void suite_add_tcase(Suite *s, TCase *tc);
SRunner *srunner_create(Suite *s);
void srunner_set_fork_status(SRunner *sr, enum fork_status f);
void srunner_run_all(SRunner *sr, enum print_output p);
int srunner_ntests_failed(SRunner *sr);
void srunner_free(SRunner *sr);
#endif
EOF
	cat > "$1/check.c" <<'EOF'
/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal Check stand-in written by scripts/gpu-check.sh. */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#define MAXT 256
struct TCase { const char *name; double timeout; int n; ck_tfun f[MAXT];
	const char *fn[MAXT]; int lo[MAXT], hi[MAXT]; };
struct Suite { const char *name; int n; TCase *tc[32]; };
struct SRunner { Suite *s; int run, failed; };
static const char *cur_tc, *cur_fn;
static int cur_i;
void ck_fail_at(const char *f, int l, const char *fmt, ...)
{
	va_list ap;
	printf("%s:%d:F:%s:%s:%d: ", f, l, cur_tc, cur_fn, cur_i);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	_exit(1);
}
Suite *suite_create(const char *name)
{ Suite *s = calloc(1, sizeof(*s)); s->name = name; return s; }
TCase *tcase_create(const char *name)
{
	TCase *t = calloc(1, sizeof(*t));
	const char *e = getenv("CK_DEFAULT_TIMEOUT");
	t->name = name;
	t->timeout = e ? atof(e) : 4;
	return t;
}
void tcase_set_timeout(TCase *tc, double s) { tc->timeout = s; }
void ck_add_(TCase *tc, ck_tfun f, const char *name, int lo, int hi)
{ tc->f[tc->n] = f; tc->fn[tc->n] = name; tc->lo[tc->n] = lo;
  tc->hi[tc->n++] = hi; }
void suite_add_tcase(Suite *s, TCase *tc) { s->tc[s->n++] = tc; }
SRunner *srunner_create(Suite *s)
{ SRunner *r = calloc(1, sizeof(*r)); r->s = s; return r; }
void srunner_set_fork_status(SRunner *sr, enum fork_status f)
{ (void)sr; (void)f; }
void srunner_run_all(SRunner *sr, enum print_output p)
{
	int a, b, i, st;
	pid_t pid;
	(void)p;
	printf("Running suite(s): %s (gpu-check stand-in for Check)\n",
	    sr->s->name);
	for (a = 0; a < sr->s->n; a++) {
		TCase *t = sr->s->tc[a];
		for (b = 0; b < t->n; b++)
			for (i = t->lo[b]; i < t->hi[b]; i++) {
				cur_tc = t->name; cur_fn = t->fn[b]; cur_i = i;
				fflush(stdout);
				if ((pid = fork()) == 0) {
					alarm((unsigned)t->timeout);
					t->f[b](i);
					_exit(0);
				}
				sr->run++;
				st = 0;
				if (pid < 0 || waitpid(pid, &st, 0) < 0 ||
				    !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
					sr->failed++;
					if (pid > 0 && WIFSIGNALED(st))
						printf("%s:E:%s:%d: signal %d%s\n",
						    cur_tc, cur_fn, i, WTERMSIG(st),
						    WTERMSIG(st) == SIGALRM ?
						    " (timeout)" : "");
				}
			}
	}
	printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n", sr->run ?
	    100 * (sr->run - sr->failed) / sr->run : 100, sr->run,
	    sr->failed);
}
int srunner_ntests_failed(SRunner *sr) { return sr->failed; }
void srunner_free(SRunner *sr) { free(sr); }
EOF
}

# Build the CUDA pieces without make: nvcc for the backend, cc for the
# rest, Check from pkg-config or the stand-in. Flags are word-split on
# purpose.
# shellcheck disable=SC2086
direct_build() {
	D=$BUILD/gpu-direct
	mkdir -p "$D" || return 1
	CF="-std=c11 -D_GNU_SOURCE -O2 -g -pthread -Iproto -Idaemon \
-DDAQIRI_HAVE_CUDA=1 -I$CUDA_HOME/include"
	LIBS="-L$CUDA_HOME/lib64 -Wl,-rpath,$CUDA_HOME/lib64 -lcudart \
-lstdc++ -lm -pthread"
	if [ "${GPU_CHECK_SHIM:-0}" != 1 ] && $PKG_CONFIG --exists check 2>/dev/null; then
		CKF=$($PKG_CONFIG --cflags check)
		CKL=$($PKG_CONFIG --libs check)
		say "Check from pkg-config"
	else
		say "no libcheck here (or GPU_CHECK_SHIM=1): using the" \
		    "Check stand-in"
		write_check_shim "$D/shim" || return 1
		$CC -std=c11 -D_GNU_SOURCE -O2 -c "$D/shim/check.c" \
		    -o "$D/shim/check.o" || return 1
		CKF="-I$D/shim"
		CKL="$D/shim/check.o"
	fi
	$NVCC -O2 -std=c++17 $GPU_ARCH -Xcompiler -fPIC -DDAQIRI_HAVE_CUDA=1 \
	    -Iproto -Idaemon -c daemon/reorder_cuda.cu -o "$D/reorder_cuda.o" &&
	$NVCC -O2 -std=c++17 $GPU_ARCH -Xcompiler -fPIC -DDAQIRI_HAVE_CUDA=1 \
	    -Iproto -Idaemon -c daemon/gpu.cu -o "$D/gpu.o" &&
	$CC $CF -c daemon/reorder.c -o "$D/reorder.o" &&
	$CC $CF -c daemon/geometry.c -o "$D/geometry.o" &&
	$CC $CF -c daemon/convert_cpu.c -o "$D/convert_cpu.o" &&
	$CC $CF -c daemon/log.c -o "$D/log.o" || return 1
	OBJS="$D/reorder_cuda.o $D/gpu.o $D/reorder.o $D/geometry.o \
$D/convert_cpu.o $D/log.o"
	$CC $CF $CKF tests/unit/check_reorder_cuda.c $OBJS \
	    -o "$D/check_reorder_cuda" $CKL $LIBS &&
	$CC $CF $CKF tests/unit/check_convert.c \
	    -o "$D/check_convert" $CKL -lm &&
	$CC $CF $CKF tests/unit/check_reorder_kernel.c "$D/convert_cpu.o" \
	    "$D/log.o" -o "$D/check_reorder_kernel" $CKL -lm &&
	$CC $CF tests/bench/bench_reorder_gpu.c $OBJS \
	    -o "$D/bench_reorder_gpu" $LIBS || return 1
	TESTS=$D
	BENCH=$D/bench_reorder_gpu
}

main() {
	say "start $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(uname -m))"
	NOGPU=""
	if [ "$STANDIN" = 1 ]; then
		say "GPU_CHECK_STANDIN=1: every program on the CUDA stand-in"
		NOGPU=1
	elif command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=name,driver_version,memory.total \
		    --format=csv,noheader || NOGPU=1
	else
		say "nvidia-smi: not found"
		NOGPU=1
	fi
	if [ ! -x "$NVCC" ]; then
		fail "nvcc not found at $NVCC (set CUDA_HOME or NVCC)"
		return 1
	fi
	"$NVCC" --version | tail -n 2

	# 1. build: the project's make first, else the direct build
	TESTS=$BUILD/tests
	BENCH=$BUILD/bench_reorder_gpu
	VIA="make"
	say "== build: make HAVE_CUDA=1 CUDA_ARCH='$GPU_ARCH'"
	if [ "${GPU_CHECK_DIRECT:-0}" = 1 ]; then
		say "GPU_CHECK_DIRECT=1: building the CUDA pieces directly"
		VIA="direct"
		if ! direct_build; then
			fail "build"
			return 1
		fi
	elif ! make -j"$JOBS" HAVE_CUDA=1 CUDA_ARCH="$GPU_ARCH" BUILD="$BUILD" \
	    all unit "$BUILD/bench_reorder_gpu"; then
		say "make failed (above); building the CUDA pieces directly"
		VIA="direct"
		if ! direct_build; then
			fail "build"
			return 1
		fi
	fi
	say "ok: build ($VIA)"

	# 2. unit tests that exercise the GPU (and the arithmetic it shares)
	export CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-300}"
	run check_reorder_cuda timeout "$TEST_TIMEOUT" $RUN \
	    "$TESTS/check_reorder_cuda"
	run check_convert timeout "$TEST_TIMEOUT" "$TESTS/check_convert"
	if [ "$VIA" = make ] && [ -x "$TESTS/check_mem" ]; then
		run check_mem timeout "$TEST_TIMEOUT" $RUN "$TESTS/check_mem"
	fi
	run check_reorder_kernel timeout "$TEST_TIMEOUT" \
	    "$TESTS/check_reorder_kernel"

	# 3. benchmark (one quick round on the stand-in)
	if [ "$STANDIN" = 1 ]; then
		export BENCH_GPU_ITERS=1 BENCH_GPU_PLAN_BATCHES=2
	fi
	run bench_reorder_gpu timeout "$BENCH_TIMEOUT" $RUN "$BENCH"

	# 4. two-process IPC: daqirid reorders on the GPU into device memory,
	# a separate daqiri-consume opens the tensors by CUDA IPC, waits on
	# their events and checks every element.
	if [ "$VIA" = make ] && { [ -z "$NOGPU" ] || [ "$STANDIN" = 1 ]; }; then
		run ipc ipc_check
	else
		say "ipc: not run (needs the full make build and a GPU)"
		say "cupy_fft: not run (it runs on the ipc check's daemon)"
	fi

	if [ -n "$FAILED" ]; then
		say "RESULT: FAIL:$FAILED"
		return 1
	fi
	if [ "$STANDIN" = 1 ]; then
		say "RESULT: PASS on the CUDA stand-in: the steps and the logic" \
		    "ran, not nvcc's code, a driver or a GPU's speed"
	elif [ -n "$NOGPU" ]; then
		say "RESULT: PASS, but no GPU here: only the no-device paths ran"
	else
		say "RESULT: PASS"
	fi
	return 0
}

{ main; echo $? > "$RCFILE"; } 2>&1 | tee "$LOG"
exit "$(cat "$RCFILE")"
