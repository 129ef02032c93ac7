#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Remote consumers through daqiri-relay over UCX (UCX_TLS=tcp, loopback),
# against ucx_perftest moving messages of the same size in the same run.
#
# Throughput: the daemon replays a capture of $BENCH_REMOTE_BATCHES
# (300) batches of the default stream (4 MB fp16 tensors) at max speed
# (--replay, held until the consumer is subscribed): a replay waits for
# a lossless consumer, so the source never drops and runs as fast as the
# consumer takes tensors. The consumer is build/bench_handoff consume
# --lossless (its gbps: the bytes of every tensor after the first over
# the time from the first to the last; no latencies: a replay's
# publish_ns is on the capture's clock),
# once through the relay (-s ucx://...) and once local (the source's own
# ceiling on this machine, for reference). The baseline: ucx_perftest
# -t ucp_am_bw, 4096000-byte messages, server and client on loopback,
# the median of three runs.
#   bench remote gbps=... perftest_gbps=... ratio=... local_gbps=... msg_bytes=...
# Goal: ratio >= 0.8. BENCH_REMOTE_BUSY=1: the consumers busy-poll
# (DAQIRI_SUB_BUSY_POLL spins on the UCX worker).
#
# Latency: a live stream (daqiri-sim, $BENCH_REMOTE_RATE 20kpps, about
# 156 tensors a second) read at once by a local and a remote bench_handoff;
# publish -> seen per tensor, both on this host's clock, so the relay's
# added latency is the difference:
#   bench remote_latency p50_us=... p99_us=... local_p50_us=... local_p99_us=... added_p50_us=... added_p99_us=...
set -eu
BUILD=${BUILD:-build}
N=${BENCH_REMOTE_BATCHES:-300}
RATE=${BENCH_REMOTE_RATE:-20kpps}
LAT_N=${BENCH_REMOTE_SAMPLES:-600}
STREAM=sensor0/sensor_tensor
TENSOR=4096000
for p in daqirid daqiri-sim daqiri-relay daqirictl bench_handoff tests/mkpcap; do
	[ -x "$BUILD/$p" ] || { echo "bench-remote: build first (make all bench): no $BUILD/$p" >&2; exit 1; }
done
command -v ucx_perftest > /dev/null || { echo "bench-remote: no ucx_perftest (ucx-utils)" >&2; exit 1; }
export UCX_TLS=tcp
T=$(mktemp -d /tmp/daqiri-bench-remote.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
RPORT=$((PORT + 1))
PPORT=$((PORT + 2))
URL=ucx://127.0.0.1:$RPORT
SOCK=$T/daqirid.sock
sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	-e 's/socket_group: daqiri /socket_group: "" /' etc/daqirid.yaml > "$T/daqirid.yaml"

die() { echo "bench-remote: $*" >&2; for f in "$T"/*.log "$T"/*.out; do echo "--- $f" >&2; tail -5 "$f" >&2; done; exit 1; }
ctl() { "$BUILD/daqirictl" -s "$SOCK" "$@"; }
# kv FILE NAME: NAME=value from the last line of FILE that has it.
kv() { sed -n 's/.*\b'"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1; }

start_daemon() {
	"$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" "$@" 2> "$T/daemon.log" &
	DAEMON=$!
	PIDS="$PIDS $DAEMON"
	i=0
	until ctl status > /dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 400 ] || die "daqirid did not start"
		sleep 0.05
	done
}
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
start_relay() {
	"$BUILD/daqiri-relay" -s "$SOCK" --listen "$URL" 2> "$T/relay.log" &
	RELAY=$!
	PIDS="$PIDS $RELAY"
	i=0
	until grep -q 'listening on' "$T/relay.log"; do
		i=$((i + 1)); [ $i -lt 400 ] || die "daqiri-relay did not start"
		sleep 0.05
	done
}
# consumer_ready FILE: until bench_handoff said "ready" (subscribed).
consumer_ready() {
	i=0
	until grep -q '^ready' "$1"; do
		i=$((i + 1)); [ $i -lt 600 ] || die "no consumer ready in $1"
		sleep 0.05
	done
}

# ---- throughput: a held replay, read through the relay, then locally
"$BUILD/tests/mkpcap" -o "$T/cap.pcap" --batches "$N" --port "$PORT" --quiet > /dev/null
# run_replay SOCKET-OR-URL NAME: the consumer's line in $T/NAME.out
run_replay() {
	start_daemon --replay "sensor0/q0=$T/cap.pcap" --replay-hold
	[ "$1" = "$SOCK" ] || start_relay
	"$BUILD/bench_handoff" -s "$1" consume "$STREAM" --lossless ${BENCH_REMOTE_BUSY:+--busy} --samples "$N" \
		--warmup 1 --idle-ms 3000 > "$T/$2.out" 2> "$T/$2.log" &
	C=$!
	PIDS="$PIDS $C"
	consumer_ready "$T/$2.out"
	ctl replay start > /dev/null
	wait "$C" || die "bench_handoff $2 failed"
	[ "$1" = "$SOCK" ] || stop "$RELAY"
	stop "$DAEMON"
}
run_replay "$URL" remote
run_replay "$SOCK" local
remote_gbps=$(kv "$T/remote.out" gbps)
local_gbps=$(kv "$T/local.out" gbps)
for c in remote local; do
	[ "$(kv "$T/$c.out" seen)" = "$N" ] || die "the $c consumer saw $(kv "$T/$c.out" seen) of $N tensors"
done

# ---- the baseline: ucx_perftest, same message size, same transport;
# the median of three runs (one varies by 2x on this shared machine)
for k in 1 2 3; do
	ucx_perftest -p "$PPORT" > "$T/perftest-server.log" 2>&1 &
	PS=$!
	PIDS="$PIDS $PS"
	i=0
	until ucx_perftest 127.0.0.1 -p "$PPORT" -t ucp_am_bw -s $TENSOR -n "$N" -w 20 \
		> "$T/perftest.log" 2>&1; do
		i=$((i + 1)); [ $i -lt 50 ] || die "ucx_perftest failed"
		sleep 0.1
	done
	wait "$PS" 2>/dev/null || true
	# "Final: iterations  p50 avg overall  MB/s-avg MB/s-overall ..." (MB = 2^20)
	awk '/^Final:/ {print $7}' "$T/perftest.log" | tail -1 >> "$T/perftest.mbs"
done
pt_mbs=$(sort -n "$T/perftest.mbs" | sed -n 2p)
[ -n "$pt_mbs" ] || die "no Final line from ucx_perftest"
pt_gbps=$(awk -v m="$pt_mbs" 'BEGIN {printf "%.3f", m * 1048576 * 8 / 1e9}')
ratio=$(awk -v a="$remote_gbps" -v b="$pt_gbps" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
echo "bench remote gbps=$remote_gbps perftest_gbps=$pt_gbps ratio=$ratio local_gbps=$local_gbps msg_bytes=$TENSOR tensors=$N"

# ---- latency: one live stream, a local and a remote consumer at once
start_daemon
start_relay
"$BUILD/bench_handoff" -s "$SOCK" consume "$STREAM" --samples "$LAT_N" --warmup 20 \
	--idle-ms 3000 > "$T/lat-local.out" 2> "$T/lat-local.log" &
CL=$!
PIDS="$PIDS $CL"
"$BUILD/bench_handoff" -s "$URL" consume "$STREAM" --samples "$LAT_N" --warmup 20 \
	--idle-ms 3000 > "$T/lat-remote.out" 2> "$T/lat-remote.log" &
CR=$!
PIDS="$PIDS $CR"
consumer_ready "$T/lat-local.out"
consumer_ready "$T/lat-remote.out"
"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches $((LAT_N + 40)) --rate "$RATE" -q \
	> "$T/sim.log" 2>&1 || die "daqiri-sim failed"
wait "$CL" || die "local latency consumer failed"
wait "$CR" || die "remote latency consumer failed"
stop "$RELAY"
stop "$DAEMON"
lp50=$(kv "$T/lat-local.out" p50_us); lp99=$(kv "$T/lat-local.out" p99_us)
rp50=$(kv "$T/lat-remote.out" p50_us); rp99=$(kv "$T/lat-remote.out" p99_us)
echo "bench remote_latency p50_us=$rp50 p99_us=$rp99 local_p50_us=$lp50 local_p99_us=$lp99" \
	"added_p50_us=$(awk -v a="$rp50" -v b="$lp50" 'BEGIN {printf "%.1f", a - b}')" \
	"added_p99_us=$(awk -v a="$rp99" -v b="$lp99" 'BEGIN {printf "%.1f", a - b}')" \
	"samples=$LAT_N rate=$RATE"
