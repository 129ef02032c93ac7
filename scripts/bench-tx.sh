#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Transmit benchmark (part of `make bench`): the daemon's tx path next to
# a bare sendmmsg loop measured in the same run, and the closed loop's
# latency at 1 kHz.
#
# Throughput. $BENCH_TX_COUNT (200000) payloads of $BENCH_TX_BYTES (8000)
# bytes to a loopback sink (build/bench_sendmmsg sink: recvmmsg, 64 MiB
# receive buffer) on core $BENCH_SIM_CORE (0), sent by
#  - sendmmsg: build/bench_sendmmsg send on core $BENCH_RX_CORE (1),
#    bursts of 64 from static buffers on a connected blocking socket, the
#    least a sender can do per datagram;
#  - daemon: build/tests/closed-loop flood (libdaqiri-client TX channel:
#    daqiri_tx_buf/daqiri_tx_send, bursts of 64, each pool buffer written
#    once, as the baseline's are; a pool of $BENCH_TX_NBUFS buffers, 0 =
#    the daemon's default) on core $BENCH_SIM_CORE, through daqirid's
#    tx queue tx0 whose worker is pinned to $BENCH_RX_CORE (socket engine,
#    socket_config.remote_addr = the sink), the daemon's main thread on
#    $BENCH_SIM_CORE.
# Both in two modes ($BENCH_TX_MODES): "plain", one datagram per message
# (the daemon with DAQIRID_TX_NO_GSO=1), and "gso", runs of payloads in
# one UDP_SEGMENT message (as many as fit 65507 bytes: 8 of 8000; the
# daemon's default). Each side runs $BENCH_TX_RUNS (5) times per mode,
# alternating with the other; the figures are the medians.
# Rates are what the sink received over its first to last datagram, in
# Gb/s (1e9 bits/s of UDP payload), the same place and unit for both;
# ratio = daemon / sendmmsg, one "bench tx" line per mode (a sink that
# drops, as on a busy core, lowers that side's rate: the drops are in the
# "tx:" lines). cpu_s_per_gb: the daemon's whole process
# (utime + stime from /proc/PID/stat over the flood) plus the flooding
# consumer's getrusage, per GB the channel completed as sent; the
# baseline's getrusage per GB sent (sendmmsg_cpu_s_per_gb). On loopback
# the sender's system time includes the delivery into the sink's socket.
#
# Loop latency: daqiri-sim sends a 1 kHz tensor stream (8 packets of 64
# int4 bytes each, 8000 packets/s) for $BENCH_TX_LOOP_TENSORS (5000)
# tensors; closed-loop loop sends a control packet back per tensor
# through tx0 (remote_addr = the simulator's --control port); the
# latency of each = the simulator's CLOCK_MONOTONIC when it takes the
# packet - the tensor's publish_ns, percentiles from its "control" line.
# The consumer is on $BENCH_SIM_CORE; the simulator, the daemon's rx and
# tx workers share $BENCH_RX_CORE as in the hand-off benchmark.
# Figures from a shared 2-core VM are noisy: compare ratios, not values.
set -eu
BUILD=${BUILD:-build}
SIM_CORE=${BENCH_SIM_CORE:-0}
RX_CORE=${BENCH_RX_CORE:-1}
BYTES=${BENCH_TX_BYTES:-8000}
COUNT=${BENCH_TX_COUNT:-200000}
LOOP_N=${BENCH_TX_LOOP_TENSORS:-5000}
REPS=${BENCH_TX_RUNS:-5}
NBUFS=${BENCH_TX_NBUFS:-0}	# the channel's pool; 0 = the daemon's default
MODES=${BENCH_TX_MODES:-plain gso}
# payloads per UDP_SEGMENT send: as many as fit 65507 bytes (the
# daemon's socket engine's limit too), at most 64
GSO_SEGS=$((65507 / BYTES))
[ "$GSO_SEGS" -le 64 ] || GSO_SEGS=64
[ "$GSO_SEGS" -ge 1 ] || GSO_SEGS=1
PPB=8

for p in bench_sendmmsg bench_e2e daqirid daqirictl daqiri-sim; do
	if [ ! -x "$BUILD/$p" ]; then
		echo "bench-tx: $BUILD/$p not built; skipping the transmit benchmark" >&2
		exit 0
	fi
done
command -v taskset >/dev/null || { echo "bench-tx: needs taskset" >&2; exit 1; }
command -v jq >/dev/null || { echo "bench-tx: needs jq" >&2; exit 1; }

T=$(mktemp -d /tmp/daqiri-bench-tx.XXXXXX)
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
SINK_PORT=$((PORT + 1))
CTL_PORT=$((PORT + 2))
SOCK=$T/daqirid.sock
PIDS=""
TCK=$(getconf CLK_TCK)

cleanup() {
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

say() {
	echo "tx: $*"
}

kv() {
	sed -n 's/.*\b'"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1
}

# wait_ready FILE: until a line starts with "ready" (10 s).
wait_ready() {
	i=0
	until grep -q '^ready' "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "bench-tx: no ready line in $1" >&2; cat "$1" >&2; return 1; }
		sleep 0.05
	done
}

# config FILE TX_REMOTE_PORT: a 1 kHz rx stream and the tx queue tx0.
config() {
	cat > "$1" <<EOF
%YAML 1.2
---
daqiri:
  cfg:
    version: 1
    master_core: $SIM_CORE
    log_level: warn
    stream_type: socket
    memory_regions:
    - {name: rx_frames, kind: host, affinity: 0, num_bufs: 1024, buf_size: 9000}
    - {name: tensors, kind: host, affinity: 0, num_bufs: 256, buf_size: 2048}
    - {name: tx_bufs, kind: host, affinity: 0, num_bufs: 256, buf_size: 9000}
    interfaces:
    - name: sensor0
      address: 127.0.0.1
      socket_config:
        mode: server
        local_addr: udp://127.0.0.1:$PORT
        remote_addr: udp://127.0.0.1:$2
      rx:
        queues:
        - {name: q0, id: 0, cpu_core: $RX_CORE, batch_size: 64, memory_regions: [rx_frames]}
        flows:
        - {name: sensor, id: 0, match: {udp_dst: $PORT}, action: {type: queue, id: 0}}
        reorder_configs:
        - name: sensor_tensor
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [0]
          payload_byte_offset: 50
          payload_bytes: 64
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: $PPB
          data_types: {input_type: int4, output_type: fp16}
          window: 4
          fill: zero
          timeout_us: 100000
      tx:
        queues:
        - {name: tx0, id: 0, cpu_core: $RX_CORE, batch_size: 64, memory_regions: [tx_bufs]}
  daemon:
    control_socket: $SOCK
    socket_group: ""
    admin_group: "$(id -gn)"
EOF
	"$BUILD/daqirid" -n -c "$1" >/dev/null
}

start_daemon() {
	rm -f "$SOCK"
	taskset -c "$SIM_CORE" "$BUILD/daqirid" -c "$1" -s "$SOCK" -l warn 2> "$T/daemon.log" &
	DPID=$!
	PIDS="$PIDS $DPID"
	"$BUILD/bench_e2e" -s "$SOCK" wait 10 ||
		{ echo "bench-tx: daqirid did not start" >&2; cat "$T/daemon.log" >&2; return 1; }
}

stop_daemon() {
	kill -TERM "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
}

proc_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

start_sink() {
	rm -f "$T/sink.out"
	taskset -c "$SIM_CORE" "$BUILD/bench_sendmmsg" sink -p "$SINK_PORT" --bytes "$BYTES" \
		--expect "$COUNT" --idle-ms 1000 > "$T/sink.out" &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_ready "$T/sink.out"
}

# median FILE: the median of the numbers in FILE, one a line
median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# baseline MODE: one bare sendmmsg run; appends to $T/MODE.base.{gbps,cpu}
baseline() {
	g=1
	[ "$1" = plain ] || g=$GSO_SEGS
	start_sink
	taskset -c "$RX_CORE" "$BUILD/bench_sendmmsg" send -p "$SINK_PORT" --bytes "$BYTES" \
		--count "$COUNT" --gso "$g" > "$T/send.out"
	wait "$SPID" || true
	say "$1: sendmmsg: $(cat "$T/send.out")"
	say "$1: sendmmsg: $(grep '^sink ' "$T/sink.out")"
	kv "$T/sink.out" gbps >> "$T/$1.base.gbps"
	kv "$T/send.out" cpu_s_per_gb >> "$T/$1.base.cpu"
}

# daemon_run MODE: one flood through the running daemon; appends to
# $T/MODE.daemon.{gbps,cpu}, or returns 1
daemon_run() {
	start_sink
	t0=$(proc_ticks "$DPID")
	if ! taskset -c "$SIM_CORE" "$BUILD/tests/closed-loop" -s "$SOCK" flood sensor0/tx0 \
		--bytes "$BYTES" --count "$COUNT" --nbufs "$NBUFS" > "$T/flood.out" 2> "$T/flood.err"; then
		kill "$SPID" 2>/dev/null || true
		wait "$SPID" 2>/dev/null || true
		say "$1: daemon: the flood failed: $(cat "$T/flood.err")"
		return 1
	fi
	t1=$(proc_ticks "$DPID")
	wait "$SPID" || true
	dcpu=$(awk -v a="$t0" -v b="$t1" -v t="$TCK" 'BEGIN { printf "%.2f", (b - a) / t }')
	say "$1: daemon: $(grep '^flood ' "$T/flood.out")"
	say "$1: daemon: $(grep '^sink ' "$T/sink.out"); daqirid cpu_s=$dcpu"
	kv "$T/sink.out" gbps >> "$T/$1.daemon.gbps"
	awk -v d="$dcpu" -v c="$(kv "$T/flood.out" cpu_s)" -v n="$(kv "$T/flood.out" tx_sent)" \
		-v p="$BYTES" 'BEGIN { printf "%.3f\n", (n > 0 ? (d + c) / (n * p / 1e9) : 0) }' \
		>> "$T/$1.daemon.cpu"
}

say "$COUNT payloads of $BYTES bytes to a loopback sink on core $SIM_CORE, $REPS runs per side and mode"
HAVE_DAEMON=1
if [ ! -x "$BUILD/tests/closed-loop" ]; then
	say "daemon: $BUILD/tests/closed-loop not built (make system-tools); baseline only"
	HAVE_DAEMON=0
elif ! config "$T/flood.yaml" "$SINK_PORT" 2> "$T/cfg.err"; then
	say "daemon: this daqirid does not take the tx config: $(head -3 "$T/cfg.err" | tr '\n' ' ')"
	HAVE_DAEMON=0
fi
for mode in $MODES; do
	: > "$T/$mode.base.gbps"
	: > "$T/$mode.base.cpu"
	: > "$T/$mode.daemon.gbps"
	: > "$T/$mode.daemon.cpu"
	if [ $HAVE_DAEMON = 1 ]; then
		# the daemon's socket engine sends runs of one length with
		# UDP_SEGMENT unless DAQIRID_TX_NO_GSO is set
		if [ "$mode" = plain ]; then
			DAQIRID_TX_NO_GSO=1 start_daemon "$T/flood.yaml"
		else
			start_daemon "$T/flood.yaml"
		fi
	fi
	r=0
	while [ $r -lt "$REPS" ]; do
		r=$((r + 1))
		baseline "$mode"
		[ $HAVE_DAEMON = 0 ] || daemon_run "$mode" || break
	done
	[ $HAVE_DAEMON = 0 ] || stop_daemon
	bg=$(median "$T/$mode.base.gbps")
	bc=$(median "$T/$mode.base.cpu")
	dg=$(median "$T/$mode.daemon.gbps")
	dc=$(median "$T/$mode.daemon.cpu")
	if [ -n "$dg" ]; then
		ratio=$(awk -v a="$dg" -v b="$bg" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		echo "bench tx daemon_gbps=$dg sendmmsg_gbps=$bg ratio=$ratio cpu_s_per_gb=$dc sendmmsg_cpu_s_per_gb=$bc mode=$mode bytes=$BYTES runs=$REPS"
	else
		echo "bench tx-baseline sendmmsg_gbps=$bg sendmmsg_cpu_s_per_gb=$bc mode=$mode bytes=$BYTES runs=$REPS (no daemon figure: see above)"
	fi
done

# --- the closed loop at 1 kHz
if [ -x "$BUILD/tests/closed-loop" ] && config "$T/loop.yaml" "$CTL_PORT" 2>/dev/null; then
	start_daemon "$T/loop.yaml"
	taskset -c "$SIM_CORE" "$BUILD/tests/closed-loop" -s "$SOCK" loop sensor0/sensor_tensor sensor0/tx0 \
		--count "$LOOP_N" --lossless > "$T/loop.out" 2> "$T/loop.err" &
	LPID=$!
	PIDS="$PIDS $LPID"
	wait_ready "$T/loop.out"
	# until the subscription is taken up by the rx worker
	i=0
	until [ "$("$BUILD/daqirictl" -s "$SOCK" -j consumers 2>/dev/null |
		jq -r '[.consumers[] | select(.state == "active")] | length')" = 1 ]; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "bench-tx: the loop consumer never became active" >&2; break; }
		sleep 0.05
	done
	if taskset -c "$RX_CORE" "$BUILD/daqiri-sim" -c "$T/loop.yaml" --rate $((PPB * 1000))pps \
		--batches "$LOOP_N" --quiet --control "udp://127.0.0.1:$CTL_PORT" \
		--control-expect "$LOOP_N" --control-wait-ms 30000 > "$T/sim.out" 2> "$T/sim.err"; then
		:
	else
		say "loop: the simulator saw fewer decisions than tensors: $(cat "$T/sim.err")"
	fi
	wait "$LPID" || true
	say "loop: $(grep '^sim ' "$T/sim.out")"
	say "loop: $(grep '^control ' "$T/sim.out")"
	say "loop: $(grep '^loop ' "$T/loop.out" || cat "$T/loop.err")"
	p50=$(sed -n 's/^control .* p50=\([^ ]*\).*/\1/p' "$T/sim.out")
	p99=$(sed -n 's/^control .* p99=\([^ ]*\).*/\1/p' "$T/sim.out")
	n=$(kv "$T/sim.out" applied)
	echo "bench loop p50_us=$p50 p99_us=$p99 tensors=${n:-0}"
	stop_daemon
else
	say "loop: needs $BUILD/tests/closed-loop and a daqirid that takes the tx config; skipped"
fi
