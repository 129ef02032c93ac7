#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End-to-end benchmark (part of `make bench`): the highest paced rate
# daqirid takes with zero loss, each stream next to a baseline program
# doing the same work on the same traffic in the same run, and CPU-seconds
# per GB of payload of both.
#
# Method. Traffic: build/daqiri-sim on etc/daqirid.yaml (8000-byte int4
# payloads behind an 8-byte header, 128 per tensor) on a private port,
# pinned to core $BENCH_SIM_CORE (default 0), in two sender
# configurations: "plain" (one datagram per send) and "gso" (--gso 8,
# UDP_SEGMENT). Receivers, each started afresh for every run:
#  - daemon: daqirid on etc/daqirid.yaml's stream (int4 -> fp16, 4 x the
#    bytes it receives written), its main thread on the sender's core and
#    the rx worker pinned by the config (cpu_core) to $BENCH_RX_CORE
#    (default 1), blocking receive mode (the default; $BENCH_RX_MODE=
#    busy_poll spins, compare with $BENCH_RECV_WAIT=busy), UDP_GRO on (the
#    engine's default), plus a consumer (build/bench_e2e consume, on the
#    sender's core) that releases every tensor, so the whole chain runs;
#  - daemon-copy: the same with the stream's data_types removed, so the
#    payload bytes are copied as they are (8000-byte slots, 1 x the bytes):
#    by the kernel straight into their slots (direct placement, daqirid(8)
#    NOTES; direct= counts the frames that came in that way);
#  - recvmmsg: build/bench_recvmmsg on $BENCH_RX_CORE: the engine's socket
#    options (UDP_GRO, SO_RXQ_OVFL, the same SO_RCVBUF) and ring of read
#    slots, a blocking recvmmsg (MSG_WAITFORONE; $BENCH_RECV_WAIT=poll
#    waits like the engine, busy spins), counting datagrams only;
#  - recvconv: the same program with --convert int4:fp16: in the same
#    loop each datagram's samples are converted by the daemon's own kernel
#    (cvt_slot_fast, linked from libdaqirid-core.a) into slot seq % 128 of
#    tensor (seq / 128) % 32 of a 32 x 4096000-byte pool, fenced once per
#    read burst like the daemon's commit.
# Pairs, each from the same run: "e2e" = daemon / recvmmsg (conversion
# against a receiver that touches nothing, the figure as before),
# "e2e-copy" = daemon-copy / recvmmsg (no conversion on either side),
# "e2e-convert" = daemon / recvconv (the same conversion on both sides).
# A run is lossless when every datagram the simulator sent was received:
# daemon: kernel = truncated = 0, packets_in = placed = sent,
# no_buffer = missing_slots = 0, every batch complete and no
# consumer overrun; baselines: datagrams = sent, drops = truncated = 0
# (recvconv also placed = sent, malformed = 0).
# Search, per receiver and sender configuration, with probes of
# $BENCH_E2E_PROBE_SECONDS (3 s): first unpaced (the sender's ceiling);
# if that loses, paced probes from min(sent, received) x 0.85 down by
# x0.85 until one is lossless. A receiver may take in less while
# overloaded than it takes losslessly when paced (the daemon's RX worker
# does, zero-filling the slots the drops leave), so when that first
# paced probe is already lossless the search climbs by x1.15, below the
# sender's unpaced rate, until a probe loses. Then $BENCH_E2E_REFINE (1)
# bisection(s) (geometric) between the last lossy and the lossless rate. The lossless
# rate is then confirmed over $BENCH_E2E_SECONDS (default 20 s, so that
# the eight searches take about 8 minutes here; the 30 s measurement
# period that issue 11 sets as the target is BENCH_E2E_SECONDS=30, about
# 10 minutes, and the targets line says "no" below it); if it loses,
# the next try runs at 0.93 x what was sent, at most
# $BENCH_E2E_CONFIRM_TRIES (2) tries (an unconfirmed figure says so:
# confirmed=0). The figures
# (lossless_gbps and the baselines' *_gbps) are the sample payload rate
# of the confirmation run: datagrams received x 8000 bytes (the 8-byte
# sensor header and the UDP/IP headers not counted) / the simulator's
# sending time, in GB/s (1e9 bytes/s, not Gb/s), the same unit on both
# sides. CPU-seconds per GB: utime + stime of the whole daqirid process
# over the confirmation run (/proc/PID/stat) / GB of payload placed
# (baselines: their getrusage over the receive loop / GB received).
# Each "bench e2e*" line reports the sender configuration in which that
# daemon stream was fastest (confirmed figures first), with its
# baseline's figure from that same configuration; the figures of every
# configuration are the "e2e: ..., sender ..." lines.
# $BENCH_E2E_RECEIVERS (default "daemon recvmmsg daemon-copy recvconv")
# picks the receivers; a pair with a side left out prints no line.
# Zero loss is judged on a shared 2-core VM: anything else running on the
# receiving core for a few ms overflows the socket buffer, so run it on a
# quiet machine. Each run says how much CPU time other tasks (and
# interrupts) took on the receiving core: rx_core_others_s.
set -eu
BUILD=${BUILD:-build}
FULL_S=${BENCH_E2E_SECONDS:-20}
PROBE_S=${BENCH_E2E_PROBE_SECONDS:-3}
CONFIRM_TRIES=${BENCH_E2E_CONFIRM_TRIES:-2}
MODES=${BENCH_E2E_MODES:-plain gso}
RECEIVERS=${BENCH_E2E_RECEIVERS:-daemon recvmmsg daemon-copy recvconv}
RECV_WAIT=${BENCH_RECV_WAIT:-recv}
RX_MODE=${BENCH_RX_MODE:-blocking}	# daemon.rx_mode: blocking or busy_poll
SIM_CORE=${BENCH_SIM_CORE:-0}
RX_CORE=${BENCH_RX_CORE:-1}
GSO_SEGS=8
PAYLOAD=8000
HDR=8			# sensor header before the samples, per datagram
PPB=128
MIN_GBS=0.02		# give up searching below this rate
REFINE=${BENCH_E2E_REFINE:-1}	# bisection probes after the first lossless one
GUESS_PLAIN=2.5		# GB/s the unpaced sender may reach, to size its run
GUESS_GSO=10
NTENSORS=32		# etc/daqirid.yaml's tensors region
STREAM=sensor0/sensor_tensor
MAX_HELD=27		# of the 32 tensor buffers: the most admission allows
			# (32 - window 4 - 1)

for p in daqirid daqiri-sim bench_e2e bench_recvmmsg; do
	if [ ! -x "$BUILD/$p" ]; then
		echo "bench-e2e: $BUILD/$p not built; skipping the end-to-end benchmark" >&2
		exit 0
	fi
done
command -v jq >/dev/null || { echo "bench-e2e: needs jq" >&2; exit 1; }
command -v taskset >/dev/null || { echo "bench-e2e: needs taskset" >&2; exit 1; }

T=$(mktemp -d /tmp/daqiri-bench-e2e.XXXXXX)
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
SOCK=$T/daqirid.sock
CFG=$T/daqirid.yaml
CFG_COPY=$T/daqirid-copy.yaml
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
	echo "e2e: $*"
}

sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	-e "s/cpu_core: 1 /cpu_core: $RX_CORE /" \
	-e "s/rx_mode: blocking/rx_mode: $RX_MODE/" etc/daqirid.yaml > "$CFG"
"$BUILD/daqirid" -n -c "$CFG" >/dev/null || { echo "bench-e2e: config invalid" >&2; exit 1; }
# The copy stream: no data_types (bytes as they are), 8000-byte slots.
sed -e '/^ *data_types:/d' -e '/^ *input_type:/d' -e '/^ *output_type:/d' \
	-e "s/buf_size: 4096000/buf_size: $((PPB * PAYLOAD))/" "$CFG" > "$CFG_COPY"
"$BUILD/daqirid" -n -c "$CFG_COPY" >/dev/null ||
	{ echo "bench-e2e: copy config invalid" >&2; exit 1; }

# busy ticks (user, nice, system, irq, softirq) of the receiving core
core_ticks() {
	awk -v c="cpu$RX_CORE" '$1 == c { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

proc_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# The receiver of one run:
# rx_start daemon|daemon-copy|recvmmsg|recvconv EXPECTED_DATAGRAMS
rx_start() {
	RX=$1
	rm -f "$SOCK" "$T/rx.out" "$T/cons.out"
	cfg=$CFG
	if [ "$RX" = daemon-copy ]; then
		cfg=$CFG_COPY
	fi
	if [ "$RX" = daemon ] || [ "$RX" = daemon-copy ]; then
		taskset -c "$SIM_CORE" "$BUILD/daqirid" -c "$cfg" -s "$SOCK" -l warn \
			2> "$T/daemon.log" &
		DPID=$!
		PIDS="$PIDS $DPID"
		"$BUILD/bench_e2e" -s "$SOCK" wait 10 ||
			{ cat "$T/daemon.log" >&2; exit 1; }
		taskset -c "$SIM_CORE" "$BUILD/bench_e2e" -s "$SOCK" consume --max-held "$MAX_HELD" "$STREAM" \
			> "$T/cons.out" &
		CPID=$!
		PIDS="$PIDS $CPID"
	else
		conv=""
		if [ "$RX" = recvconv ]; then
			conv="--convert int4:fp16 --ppb $PPB --tensors $NTENSORS --payload-bytes $PAYLOAD"
		fi
		# shellcheck disable=SC2086
		taskset -c "$RX_CORE" "$BUILD/bench_recvmmsg" -p "$PORT" --wait "$RECV_WAIT" \
			--payload-skip "$HDR" --expect "$2" --idle-ms 1000 $conv > "$T/rx.out" &
		DPID=$!
		PIDS="$PIDS $DPID"
	fi
	i=0
	until grep -q '^ready' "$T/cons.out" "$T/rx.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "bench-e2e: $RX did not start" >&2; exit 1; }
		sleep 0.05
	done
	TICKS0=$(proc_ticks "$DPID")
	CORE0=$(core_ticks)
}

# run_sim RATE_GBS|max BATCHES plain|gso: sets SENT, SIM_S, SEND_GBS.
run_sim() {
	rate_opt="--rate $(awk -v r="$1" -v p="$PAYLOAD" 'BEGIN { printf "%.0f", r * 1e9 / p }')pps"
	if [ "$1" = max ]; then
		rate_opt=""
	fi
	gso_opt=""
	if [ "$3" = gso ]; then
		gso_opt="--gso $GSO_SEGS"
	fi
	# shellcheck disable=SC2086
	taskset -c "$SIM_CORE" "$BUILD/daqiri-sim" -c "$CFG" $rate_opt --batches "$2" \
		--seed 1 --quiet $gso_opt > "$T/sim.out"
	SENT=$(sed -n 's/^sim .*sent=\([0-9]*\).*/\1/p' "$T/sim.out")
	SIM_S=$(sed -n 's/^sim .*seconds=\([0-9.]*\).*/\1/p' "$T/sim.out")
	if [ -z "$SENT" ] || [ -z "$SIM_S" ]; then
		echo "bench-e2e: simulator failed" >&2
		exit 1
	fi
	SEND_GBS=$(awk -v n="$SENT" -v p="$PAYLOAD" -v s="$SIM_S" 'BEGIN { printf "%.3f", n * p / s / 1e9 }')
}

daemon_stats() {
	"$BUILD/bench_e2e" -s "$SOCK" stats > "$T/stats.json"
	jq -r --arg s "$STREAM" '[(.interfaces[0] | .kernel, .truncated,
	   (.queues[0].engine_direct // 0)),
	  (.streams[] | select(.name == $s) | (.reorder | .packets_in, .placed,
	   .no_buffer, .missing_slots, .batches_complete),
	   .handoff.overruns)] | map(tostring) | join(" ")' \
		"$T/stats.json" > "$T/stats.txt"
	read -r s_drops s_trunc s_direct s_in s_placed s_nobuf s_missing \
		s_complete s_overruns < "$T/stats.txt"
}

# rx_finish: stop the receiver, judge the run. Sets LOSSLESS (1/0), GBS,
# CPU_S, INFO.
rx_finish() {
	if [ "$RX" = daemon ] || [ "$RX" = daemon-copy ]; then
		# wait until every sent datagram is in, or nothing moves for 0.3 s
		last=-1 same=0 i=0
		while :; do
			daemon_stats
			[ "$s_in" -ge "$SENT" ] && break
			if [ "$s_in" = "$last" ]; then
				same=$((same + 1))
				[ $same -lt 3 ] || break
			else
				same=0
			fi
			last=$s_in
			i=$((i + 1))
			[ $i -lt 100 ] || break
			sleep 0.1
		done
		sleep 0.15	# a partial batch is published at its 100 ms deadline
		daemon_stats
		ticks=$(proc_ticks "$DPID")
		core=$(core_ticks)
		kill -TERM "$CPID" 2>/dev/null || true
		wait "$CPID" 2>/dev/null || true
		kill -TERM "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
		nbatch=$(( (SENT + PPB - 1) / PPB ))
		LOSSLESS=0
		if [ "$s_drops" -eq 0 ] && [ "$s_trunc" -eq 0 ] && [ "$s_in" -eq "$SENT" ] &&
		    [ "$s_placed" -eq "$SENT" ] && [ "$s_nobuf" -eq 0 ] &&
		    [ "$s_missing" -eq 0 ] && [ "$s_complete" -eq "$nbatch" ] &&
		    [ "$s_overruns" -eq 0 ]; then
			LOSSLESS=1
		fi
		CPU_S=$(awk -v a="$TICKS0" -v b="$ticks" -v t="$TCK" 'BEGIN { printf "%.3f", (b - a) / t }')
		GBS=$(awk -v n="$s_placed" -v p="$PAYLOAD" -v s="$SIM_S" 'BEGIN { printf "%.3f", n * p / s / 1e9 }')
		OTHER_S=$(awk -v a="$CORE0" -v b="$core" -v t="$TCK" -v c="$CPU_S" 'BEGIN { o = (b - a) / t - c; printf "%.2f", (o > 0 ? o : 0) }')
		INFO="sent=$SENT packets_in=$s_in placed=$s_placed kernel=$s_drops no_buffer=$s_nobuf missing_slots=$s_missing complete=$s_complete/$nbatch overruns=$s_overruns direct=$s_direct daemon_cpu_s=$CPU_S rx_core_others_s=$OTHER_S"
	else
		wait "$DPID" || true
		core=$(core_ticks)
		line=$(grep '^recvmmsg ' "$T/rx.out" || true)
		got=$(echo "$line" | sed -n 's/.* datagrams=\([0-9]*\).*/\1/p')
		drops=$(echo "$line" | sed -n 's/.* drops=\([0-9]*\).*/\1/p')
		trunc=$(echo "$line" | sed -n 's/.* truncated=\([0-9]*\).*/\1/p')
		CPU_S=$(echo "$line" | sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p')
		placed=${got:-0} malformed=0 pinfo=""
		if [ "$RX" = recvconv ]; then
			placed=$(echo "$line" | sed -n 's/.* placed=\([0-9]*\).*/\1/p')
			malformed=$(echo "$line" | sed -n 's/.* malformed=\([0-9]*\).*/\1/p')
			impl=$(echo "$line" | sed -n 's/.* impl=\([^ ]*\).*/\1/p')
			pinfo=" placed=${placed:-?} malformed=${malformed:-?} kernel=${impl:-?}"
		fi
		LOSSLESS=0
		if [ "${got:-0}" -eq "$SENT" ] && [ "${drops:-1}" -eq 0 ] && [ "${trunc:-1}" -eq 0 ] &&
		    [ "${placed:-0}" -eq "$SENT" ] && [ "${malformed:-1}" -eq 0 ]; then
			LOSSLESS=1
		fi
		GBS=$(awk -v n="${got:-0}" -v p="$PAYLOAD" -v s="$SIM_S" 'BEGIN { printf "%.3f", n * p / s / 1e9 }')
		OTHER_S=$(awk -v a="$CORE0" -v b="$core" -v t="$TCK" -v c="${CPU_S:-0}" 'BEGIN { o = (b - a) / t - c; printf "%.2f", (o > 0 ? o : 0) }')
		INFO="sent=$SENT received=${got:-0} drops=${drops:-?} truncated=${trunc:-?}$pinfo receiver_cpu_s=${CPU_S:-?} rx_core_others_s=$OTHER_S"
	fi
}

# one_run RX RATE|max SECONDS MODE: a run at RATE (GB/s; max = unpaced,
# sized by the guess of the sender's speed) for about SECONDS.
one_run() {
	guess=$2
	if [ "$guess" = max ]; then
		guess=$GUESS_PLAIN
		if [ "$4" = gso ]; then
			guess=$GUESS_GSO
		fi
	fi
	batches=$(awk -v r="$guess" -v s="$3" -v p="$PAYLOAD" -v k="$PPB" \
		'BEGIN { b = int(r * 1e9 / p * s / k + 0.5); print (b > 0 ? b : 1) }')
	rx_start "$1" $((batches * PPB))
	run_sim "$2" "$batches" "$4"
	rx_finish
	verdict=LOSS
	if [ "$LOSSLESS" = 1 ]; then
		verdict=lossless
	fi
}

# probe RATE [NOTE]: one probe of $rx/$mode at RATE GB/s, said with NOTE;
# lossless (LOSSLESS=1) sets lo=RATE, a loss hi=RATE. (Called as a
# command, not a condition, so that set -e still holds inside it.)
probe() {
	one_run "$rx" "$1" "$PROBE_S" "$mode"
	say "$rx/$mode: probe ${PROBE_S}s at $1 GB/s${2:-}: sent ${SEND_GBS}, received ${GBS} GB/s, $verdict ($INFO)"
	if [ "$LOSSLESS" = 1 ]; then
		lo=$1
	else
		hi=$1
	fi
}

# search RX MODE: sets BEST_GBS (the confirmed rate), BEST_CPU, BEST_OK.
search() {
	rx=$1 mode=$2
	one_run "$rx" max "$PROBE_S" "$mode"
	say "$rx/$mode: probe ${PROBE_S}s unpaced: sent ${SEND_GBS} GB/s, received ${GBS} GB/s, $verdict ($INFO)"
	lo="" hi=""
	if [ "$LOSSLESS" = 1 ]; then
		lo=max
	else
		# what it took in while saturated bounds what it takes losslessly
		hi=$(awk -v a="$SEND_GBS" -v b="$GBS" 'BEGIN { printf "%.3f", (b < a ? b : a) }')
		ceil=$SEND_GBS
		rate=$(awk -v r="$hi" 'BEGIN { printf "%.3f", r * 0.85 }')
		first=1
		while awk -v r="$rate" -v m="$MIN_GBS" 'BEGIN { exit !(r >= m) }'; do
			probe "$rate"
			if [ "$LOSSLESS" = 1 ]; then
				break
			fi
			first=0
			rate=$(awk -v r="$rate" 'BEGIN { printf "%.3f", r * 0.85 }')
		done
		# A receiver that collapses under overload takes in less than
		# it takes losslessly when paced, so the unpaced figure is no
		# bound: when the first paced probe was lossless, climb by
		# x1.15 (below the sender's unpaced rate) until a probe loses.
		while [ -n "$lo" ] && [ "$first" = 1 ]; do
			rate=$(awk -v r="$lo" 'BEGIN { printf "%.3f", r * 1.15 }')
			if ! awk -v r="$rate" -v c="$ceil" 'BEGIN { exit !(r < c) }'; then
				hi=$ceil
				break
			fi
			probe "$rate" " (climbing)"
			if [ "$LOSSLESS" != 1 ]; then
				break
			fi
		done
		k=0
		while [ -n "$lo" ] && [ $k -lt "$REFINE" ]; do
			k=$((k + 1))
			rate=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.3f", sqrt(a * b) }')
			probe "$rate"
		done
	fi
	BEST_OK=0 BEST_GBS=0 BEST_CPU=0
	if [ -z "$lo" ]; then
		say "$rx/$mode: no lossless rate down to $MIN_GBS GB/s"
		return 0
	fi
	tries=0
	while [ $tries -lt "$CONFIRM_TRIES" ]; do
		tries=$((tries + 1))
		one_run "$rx" "$lo" "$FULL_S" "$mode"
		say "$rx/$mode: confirm ${FULL_S}s at ${lo} GB/s: sent ${SEND_GBS}, received ${GBS} GB/s, $verdict ($INFO)"
		BEST_GBS=$GBS
		BEST_CPU=$(awk -v c="$CPU_S" -v g="$GBS" -v s="$SIM_S" 'BEGIN { printf "%.3f", (g > 0 ? c / (g * s) : 0) }')
		if [ "$LOSSLESS" = 1 ]; then
			BEST_OK=1
			return 0
		fi
		lo=$(awk -v r="$SEND_GBS" 'BEGIN { printf "%.3f", r * 0.93 }')
	done
	say "$rx/$mode: not lossless over ${FULL_S}s in $CONFIRM_TRIES tries; reporting the last run"
}

say "daqirid + consumer vs baselines, loopback port $PORT, sender on core $SIM_CORE, receiver on core $RX_CORE, $PAYLOAD-byte int4 payloads (int4->fp16 and copied), probes ${PROBE_S}s, confirmation ${FULL_S}s, receivers: $RECEIVERS"
: > "$T/results"
for mode in $MODES; do
	for rx in $RECEIVERS; do
		search "$rx" "$mode"
		echo "$mode $rx $BEST_GBS $BEST_CPU $BEST_OK" >> "$T/results"
	done
done

# pair NAME DAEMON_RX BASE_RX MIN_GBS: per sender configuration, the
# daemon stream's figure over its baseline's from the same run; sets the
# figures of the configuration where the daemon stream was fastest
# (confirmed first): P_D P_DC P_B P_BC P_RATIO P_DOK P_BOK P_MODE, P_MODE
# empty when a side was not run. The targets (ratio >= 0.9, at least
# MIN_GBS, lossless over 30 s) are reported, never enforced.
yn() {
	if [ "$1" = 1 ]; then echo yes; else echo "no, the last try's figure"; fi
}

pair() {
	: > "$T/pair"
	for mode in $MODES; do
		dl=$(awk -v m="$mode" -v r="$2" '$1 == m && $2 == r' "$T/results")
		bl=$(awk -v m="$mode" -v r="$3" '$1 == m && $2 == r' "$T/results")
		if [ -z "$dl" ] || [ -z "$bl" ]; then
			continue
		fi
		read -r _ _ d dc dok <<EOF
$dl
EOF
		read -r _ _ b bc bok <<EOF
$bl
EOF
		ratio=$(awk -v d="$d" -v r="$b" 'BEGIN { printf "%.3f", (r > 0 ? d / r : 0) }')
		say "$1, sender $mode: $2 ${d} GB/s (lossless over ${FULL_S}s: $(yn "$dok"), ${dc} CPU-s/GB), $3 ${b} GB/s (lossless over ${FULL_S}s: $(yn "$bok"), ${bc} CPU-s/GB), ratio ${ratio}"
		echo "$mode $d $dc $b $bc $ratio $dok $bok" >> "$T/pair"
	done
	P_MODE=""
	[ -s "$T/pair" ] || return 0
	read -r P_MODE P_D P_DC P_B P_BC P_RATIO P_DOK P_BOK <<EOF
$(sort -k7,7nr -k2,2gr "$T/pair" | head -1)
EOF
	met=$(awk -v d="$P_D" -v q="$P_RATIO" -v m="$4" -v s="$FULL_S" -v ok="$P_DOK$P_BOK" \
		'BEGIN { print ((q >= 0.9 && d >= m && s >= 30 && ok == "11") ? "yes" : "no") }')
	say "$1: best sender configuration for $2: $P_MODE (lossless over ${FULL_S}s confirmed: $2 $P_DOK, $3 $P_BOK); targets (ratio >= 0.9, >= $4 GB/s, lossless over 30 s): $met"
}

pair "e2e (int4->fp16 vs bare recvmmsg)" daemon recvmmsg 1
[ -z "$P_MODE" ] ||
	echo "bench e2e payload=$PAYLOAD lossless_gbps=$P_D recvmmsg_gbps=$P_B ratio=$P_RATIO cpu_s_per_gb=$P_DC"
pair "e2e-copy (copy vs bare recvmmsg)" daemon-copy recvmmsg 0
[ -z "$P_MODE" ] ||
	echo "bench e2e-copy lossless_gbps=$P_D recvmmsg_gbps=$P_B ratio=$P_RATIO cpu_s_per_gb=$P_DC recvmmsg_cpu_s_per_gb=$P_BC sender=$P_MODE seconds=$FULL_S confirmed=$P_DOK/$P_BOK"
pair "e2e-convert (int4->fp16 vs recvmmsg + the same conversion)" daemon recvconv 0
[ -z "$P_MODE" ] ||
	echo "bench e2e-convert lossless_gbps=$P_D baseline_gbps=$P_B ratio=$P_RATIO cpu_s_per_gb=$P_DC baseline_cpu_s_per_gb=$P_BC sender=$P_MODE seconds=$FULL_S confirmed=$P_DOK/$P_BOK"
