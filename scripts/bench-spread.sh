#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One stream on two workers against the same stream on one (part of
# `make bench`; daqirid(8) ONE STREAM ON SEVERAL CORES). The socket
# engine on loopback, the default config's layout (8000 int4 bytes ->
# fp16 per packet, 128 packets per tensor); daqiri-sim sends
# $BENCH_SPREAD_BATCHES (1500) batches unpaced from two source ports
# (one message of $BENCH_SPREAD_GSO (16) datagrams from each in turn),
# pinned to core 0 (taskset, where there is one). One worker: queue q0
# on core 1. Two: q0 on core 0 (beside the sender), q1 on core 1, the
# flow spread over both. On a 2-core machine the sender shares a core
# with a worker, so the rate says little about a machine with cores to
# spare; the efficiency is what this measures.
#
# gbps = payload bytes placed / the sender's seconds; cpu_s_per_gb =
# the worker thread's CPU seconds (utime + stime of its rx:QUEUE thread)
# per GB of payload it received (its queue's streams_packets_in x 8000);
# efficiency = the one worker's cpu_s_per_gb / a worker of two's (1.0:
# it spends as much CPU per GB as the one alone): q1 (alone on its core,
# as the one is) is the like-for-like figure, q0 shares the sender's
# core. The efficiency is compared at one rate both sustain, paced at
# $BENCH_SPREAD_GBPS (8) Gb/s, and at equal load per worker: one worker
# at half that rate (each worker's share of two) against the two (a
# worker's CPU per GB grows as its load falls: more waits and wake-ups,
# shorter reads); unpaced shows the rate each reaches.
# Each setup runs $BENCH_SPREAD_RUNS (3) times per mode, alternating;
# medians.
set -u
BUILD=${BUILD:-build}
BATCHES=${BENCH_SPREAD_BATCHES:-1500}
GSO=${BENCH_SPREAD_GSO:-16}
REPS=${BENCH_SPREAD_RUNS:-3}
RATE_GBPS=${BENCH_SPREAD_GBPS:-8}
RATE=${RATE_GBPS}Gbps
T=$(mktemp -d /tmp/daqiri-bench-spread.XXXXXX)
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
SP=$(( PORT + 1 ))
DPID=""
cleanup() {
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
say() {
	echo "spread: $*" >&2
}
command -v jq > /dev/null 2>&1 || { say "no jq: no spread benchmark"; exit 0; }
PIN=""
command -v taskset > /dev/null 2>&1 && PIN="taskset -c 0"

# config N: the stream on N queues
config() {
	if [ "$1" -eq 1 ]; then
		queues="        - {name: q0, id: 0, cpu_core: 1, batch_size: 64, memory_regions: [f0]}"
		ids="[0]"
	else
		queues="        - {name: q0, id: 0, cpu_core: 0, batch_size: 64, memory_regions: [f0]}
        - {name: q1, id: 1, cpu_core: 1, batch_size: 64, memory_regions: [f1]}"
		ids="[0, 1]"
	fi
	cat > "$T/w$1.yaml" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: socket
    memory_regions:
    - {name: f0, kind: host, num_bufs: 1024, buf_size: 9000}
    - {name: f1, kind: host, num_bufs: 1024, buf_size: 9000}
    - {name: tensors, kind: host, num_bufs: 32, buf_size: 4096000}
    interfaces:
    - name: lo
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:$PORT"}
      rx:
        flow_isolation: true
        queues:
$queues
        flows:
        - {name: f, id: 0, action: {type: queue, ids: $ids}, match: {udp_dst: $PORT}}
        reorder_configs:
        - name: s
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [0]
          payload_byte_offset: 50
          payload_bytes: 8000
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: 128
          data_types: {input_type: int4, output_type: fp16}
          timeout_us: 100000
  daemon:
    control_socket: $T/sock
EOF
}

ctl() {
	"$BUILD/daqirictl" -s "$T/sock" "$@"
}
# ticks Q: CPU ticks (utime + stime) of the rx:Q thread of the daemon
ticks() {
	for d in /proc/"$DPID"/task/*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = "rx:$1" ] || continue
		awk '{ print $14 + $15 }' "$d/stat"
		return
	done
	echo 0
}
median() {
	sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# run N: one daemon, one sender; appends "gbps cpu_s_per_gb..." to $T/rN
run() {
	rm -f "$T/sock"
	"$BUILD/daqirid" -c "$T/w$1.yaml" -l warn 2> "$T/d.log" &
	DPID=$!
	i=0
	while ! ctl status > /dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 200 ] && kill -0 "$DPID" 2>/dev/null ||
			{ say "daqirid did not start: $(cat "$T/d.log")"; exit 1; }
		sleep 0.05
	done
	t0q0=$(ticks q0) t0q1=$(ticks q1)
	n_=$1
	shift
	$PIN "$BUILD/daqiri-sim" -c "$T/w$n_.yaml" --src-port $SP --src-ports 2 --gso "$GSO" \
		--batches "$BATCHES" --quiet "$@" > "$T/sim.out" 2>&1 ||
		{ say "daqiri-sim: $(cat "$T/sim.out")"; exit 1; }
	sent=$(sed -n 's/.*\bsent=\([0-9]*\).*/\1/p' "$T/sim.out" | tail -1)
	secs=$(sed -n 's/.*\bseconds=\([0-9.]*\).*/\1/p' "$T/sim.out" | tail -1)
	# until every datagram is counted (one kernel drop of a GRO read
	# may be several datagrams, so also: until the counts stand still)
	i=0 last=-1
	while :; do
		rx=$(ctl -j stats | jq ".interfaces[0].rx_packets + .interfaces[0].kernel")
		[ "$rx" -ge "$sent" ] || [ "$rx" -eq "$last" ] || [ $i -ge 100 ] && break
		last=$rx i=$((i + 1))
		sleep 0.1
	done
	t1q0=$(ticks q0) t1q1=$(ticks q1)
	ctl -j stats > "$T/stats.json"
	kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
	hz=$(getconf CLK_TCK)
	jq -r --arg secs "$secs" --arg hz "$hz" --arg c0 $((t1q0 - t0q0)) --arg c1 $((t1q1 - t0q1)) '
		def gb(q): (.interfaces[0].queues[q].streams_packets_in // 0) * 8000 / 1e9;
		def eff(c; q): if gb(q) > 0 then ((c | tonumber) / ($hz | tonumber)) / gb(q) else 0 end;
		(.streams[0].reorder.placed * 8000 * 8 / 1e9 / ($secs | tonumber)) as $gbps
		| (.interfaces[0].kernel) as $lost
		| "\($gbps) \(eff($c0; 0)) \(eff($c1; 1)) \($lost)"' "$T/stats.json" >> "$T/r$n_"
}

config 1
config 2
# mode MODE [HALF] RATE-ARGS: both setups, REPS times each, and their
# lines; with HALF (a rate) also one worker at that rate, each of the two
# workers' share: equal load per worker
mode() {
	m=$1
	half=""
	shift
	case "${1:-}" in
	half=*) half=${1#half=}; shift ;;
	esac
	: > "$T/r1"
	: > "$T/r2"
	: > "$T/r1h"
	n=0
	while [ $n -lt "$REPS" ]; do
		run 1 "$@"
		run 2 "$@"
		if [ -n "$half" ]; then
			run 1 --rate "$half"
			tail -n 1 "$T/r1" >> "$T/r1h"
			sed -i '$d' "$T/r1"
		fi
		n=$((n + 1))
	done
	g1=$(awk '{ print $1 }' "$T/r1" | median)
	e1=$(awk '{ print $2 }' "$T/r1" | median)
	l1=$(awk '{ print $4 }' "$T/r1" | median)
	g2=$(awk '{ print $1 }' "$T/r2" | median)
	e2a=$(awk '{ print $2 }' "$T/r2" | median)
	e2b=$(awk '{ print $3 }' "$T/r2" | median)
	l2=$(awk '{ print $4 }' "$T/r2" | median)
	awk -v m="$m" -v g1="$g1" -v e1="$e1" -v l1="$l1" -v g2="$g2" -v a="$e2a" -v b="$e2b" -v l2="$l2" 'BEGIN {
		printf "bench spread mode=%s workers=1 gbps=%.2f cpu_s_per_gb=%.3f kernel_drops=%d\n", m, g1, e1, l1
		printf "bench spread mode=%s workers=2 gbps=%.2f cpu_s_per_gb_q0=%.3f cpu_s_per_gb_q1=%.3f kernel_drops=%d\n", m, g2, a, b, l2
		printf "bench spread mode=%s rate_ratio=%.3f efficiency_q1=%.3f efficiency_q0=%.3f\n", m, (g1 > 0 ? g2 / g1 : 0), (b > 0 ? e1 / b : 0), (a > 0 ? e1 / a : 0)
	}'
	[ -n "$half" ] || return 0
	gh=$(awk '{ print $1 }' "$T/r1h" | median)
	eh=$(awk '{ print $2 }' "$T/r1h" | median)
	awk -v m="$m" -v gh="$gh" -v eh="$eh" -v a="$e2a" -v b="$e2b" 'BEGIN {
		printf "bench spread mode=%s_equal_load workers=1 gbps=%.2f cpu_s_per_gb=%.3f (one worker at the share of each of two)\n", m, gh, eh
		printf "bench spread mode=%s_equal_load efficiency_q1=%.3f efficiency_q0=%.3f\n", m, (b > 0 ? eh / b : 0), (a > 0 ? eh / a : 0)
	}'
}
mode paced half="$(awk -v r="$RATE_GBPS" 'BEGIN { print r / 2 }')Gbps" --rate "$RATE"
mode unpaced
