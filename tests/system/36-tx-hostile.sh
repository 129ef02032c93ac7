#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Hostile TX channels against one daemon while a well-behaved channel and
# an RX stream carry on. Each mode of tests/system/tx-raw: a length over
# buf_size (completed too_big), buffers out of the pool and one submitted
# twice (bad_buffer, no completion), sub_head far ahead (the channel is
# cut off: tx_closed, counted broken), submitting after tx_close (nothing
# comes back), a flood that never reads its completions (bad_buffer,
# bounded). Meanwhile every payload of the good channel arrives in order
# at a receiver of our own, paced (never faster than pacing_mbps), the
# RX stream's accounting identity holds and daqiri-consume --verify
# checks every tensor; afterwards the queue's identity holds: submitted
# = sent + every drop.
. tests/system/lib.sh

TXPORT=$(( PORT + 1 ))
NG=20000
LEN=1000
MBPS=100
B=60

make_config -e 's/timeout_us: 100000 /timeout_us: 1000000 /'
add_tx_queue host 256 9000 "$MBPS"
start_daemon
Q=sensor0/t0
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}
expect_eq "pacing_mbps" "$(txq .pacing_mbps)" $MBPS

note "the RX stream: a verifying consumer and the simulator"
"$BUILD/daqiri-consume" -s "$SOCK" --verify --quiet --count $B --timeout 30 "$STREAM" \
	> "$T/consume.out" 2> "$T/consume.err" &
CONS=$!
PIDS="$PIDS $CONS"
wait_consumers ".consumers | length == 1"
bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches $B --seed 7 --shuffle 64 \
	--loss 0.01 --dup 0.02 --rate 5kpps > "$T/sim.out"
SIM=$LAST_PID

note "the good channel: $NG payloads of $LEN bytes at $MBPS Mb/s"
bg /usr/bin/python3 tests/system/tx-recv.py --port "$TXPORT" --count $NG \
	--len $LEN --only-len --timeout 120 > "$T/recv.out" 2>&1
RECV=$LAST_PID
wait_line "$T/recv.out" '^(ready|FAIL)'
bg "$BUILD/tests/tx-raw" "$SOCK" "$Q" send $NG $LEN "" 64 > "$T/good.out" 2>&1
GOOD=$LAST_PID

note "hostile channels, one after another"
for m in too-big bad-index resubmit garbage-head after-close flood; do
	"$BUILD/tests/tx-raw" "$SOCK" "$Q" $m > "$T/$m.out" 2>&1 ||
		fail "mode $m: $(cat "$T/$m.out")"
	echo "   ok  $m: $(grep -v '^open\|^result' "$T/$m.out" | tr '\n' ' ')"
	ctl status > /dev/null || fail "no status after mode $m"
done
kill -0 "$GOOD" 2>/dev/null || note "(the good channel had finished before the last hostile one)"

note "the good channel and the RX stream carried on"
wait_gone "$GOOD" 120
sed 's/^/   | /' "$T/good.out"
expect_eq "good channel" "$GONE_RC" 0
wait_gone "$RECV" 120
sed 's/^/   | /' "$T/recv.out"
expect_eq "receiver" "$GONE_RC" 0
wait_gone "$SIM" 60
expect_eq "simulator" "$GONE_RC" 0
note "$(grep '^sim sent=' "$T/sim.out")"
wait_gone "$CONS" 60
sed 's/^/   | /' "$T/consume.err"
expect_eq "daqiri-consume --verify" "$GONE_RC" 0
sent=$(sim_field sent)
read_stream
expect_eq "rx_packets + kernel = sim sent" $((i_rx_packets + i_kernel)) "$sent"
expect_eq "stream packets_in = rx_packets" "$r_packets_in" "$i_rx_packets"
expect_eq "placed + duplicate + late + malformed + no_buffer = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "published" "$h_published" $B

note "pacing: never faster than $MBPS Mb/s (frame bytes: payload + 42)"
secs=$(kv "$T/recv.out" secs)
# the first datagram's line time is not in first-to-last, and the pacer
# may send its 1 ms of banked credit at once; secs is the kernel's
# arrival times (SO_TIMESTAMPNS), so the receiver's own scheduling is
# not in it either
min=$(awk -v n=$NG -v l=$LEN -v r=$MBPS 'BEGIN { printf "%.6f", (n - 1) * (l + 42) * 8 / (r * 1e6) - 0.001 }')
awk -v s="$secs" -v m="$min" 'BEGIN { exit !(s >= m) }' ||
	fail "the good channel's $NG payloads took $secs s, pacing allows no less than $min s"
awk -v p="$(txq .paced_s)" 'BEGIN { exit !(p > 0) }' ||
	fail "paced_s $(txq .paced_s): the pacer never waited"
note "took $secs s for $NG payloads ($min s at exactly $MBPS Mb/s): $(awk -v s="$secs" -v n=$NG -v l=$LEN 'BEGIN { printf "%.1f", (n - 1) * (l + 42) * 8 / s / 1e6 }') Mb/s"

note "the queue's counters"
wait_for '.interfaces[0].tx.queues[0].channels_open == 0'
expect_eq "too_big" "$(txq .drops.too_big)" 1
expect_eq "channels broken" "$(txq .broken)" 1
expect_eq "engine_error" "$(txq .drops.engine_error)" 0
bad=$(txq .drops.bad_buffer)
# bad-index 2, resubmit 1, the flood the rest
[ "$bad" -gt 3 ] || fail "bad_buffer $bad: the hostile modes make more than 3"
echo "   ok  bad_buffer = $bad"
sub=$(txq .submitted)
pk=$(txq .packets)
drops=$(ctl -j stats | jq '[.interfaces[0].tx.queues[0].drops[]] | add')
expect_eq "submitted = packets + drops" "$sub" $((pk + drops))
ctl metrics > "$T/metrics.txt" || fail "daqirictl metrics"
grep -q "^daqiri_tx_drops_total{interface=\"sensor0\",queue=\"t0\",reason=\"too_big\"} 1\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_drops "$T/metrics.txt")"
grep -q "^daqiri_tx_channels_broken_total{interface=\"sensor0\",queue=\"t0\"} 1\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_channels_broken "$T/metrics.txt")"
grep -q 'TX channel [0-9]*: its submission ring.s sub_head is impossible' "$T/daemon.log" ||
	fail "no log line for the channel cut off"
stop_daemon
echo "ok"
