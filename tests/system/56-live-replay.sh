#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Live, then its replay (issue "Record, capture and replay"): a lossy,
# shuffled, duplicated simulator stream is received live by a lossless
# consumer while `daqirictl capture` takes the queue; the capture,
# replayed through daqirid --replay on the same config, gives the
# tensors and presence bitmaps the live run published, bit for bit, and
# the same reorder counters; and so does a second replay of it.
#
# What makes it exact whatever the machine does: the whole run is under
# the tap's ring (4096 frames), so the capture cannot miss a frame even
# if it is slow to read (checked: tap_full 0); and no deadline falls
# inside the live run (timeout 3 s against a run of a fraction of a
# second): an incomplete batch goes out when the window moves past it,
# by packet order, and the last ones at their deadlines after the last
# frame, in both runs.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
[ "$(id -u)" -eq 0 ] || skip "not root: daqirictl capture is for root and the admin group"
STREAM=sensor0/sensor_tensor
B=6

make_config -e 's/timeout_us: 100000 /timeout_us: 3000000 /'
grep -q 'timeout_us: 3000000 ' "$T/daqirid.yaml" || fail "daqirid.yaml changed: no timeout_us to raise"
start_daemon

# counters JSON: what must not depend on timing, as the replay test
# compares them
counters() {
	ctl -j stats | jq -S --arg s "$STREAM" '[.streams[] | select(.name == $s) |
		{reorder, published: .handoff.published}]'
}

note "live: a lossless consumer and a capture of the queue"
mkdir -p "$T/live"
bg "$BUILD/daqiri-consume" -s "$SOCK" --lossless --save "$T/live" --count $B --quiet $STREAM
C=$LAST_PID
wait_consumers ".consumers | length == 1"
bg "$BUILD/daqirictl" -s "$SOCK" capture sensor0/q0 "$T/live.pcap" 2> "$T/cap.err"
CAP=$LAST_PID
wait_line "$T/daemon.log" "taps rx queue 'sensor0/q0'" 20
run_sim --batches $B --rate 5kpps --loss 0.03 --dup 0.01 --shuffle 24 --seed 9
sent=$(sim_field sent)
[ "$sent" -le 4096 ] || fail "the run ($sent frames) must fit the tap's ring"
wait_gone "$C" 30
expect_eq "live consumer exit" "$GONE_RC" 0
wait_for "[.interfaces[0].queues[] | select(.queue == \"sensor0/q0\") | .rx_packets][0] == $sent" 20
kill -INT "$CAP"
wait_gone "$CAP" 20
sed 's/^/   | /' "$T/cap.err"
expect_eq "capture exit" "$GONE_RC" 0
grep -q "sensor0/q0: $sent frames, " "$T/cap.err" || fail "the capture missed frames"
expect_eq "tap_full" "$(stat '.interfaces[0].queues[0].tap_full')" 0
counters > "$T/live.stats"
eval "$(jq -r '.[0].reorder | to_entries[] | "r_\(.key)=\(.value)"' "$T/live.stats")"
[ "$r_duplicate" -gt 0 ] && [ "$r_missing_slots" -gt 0 ] ||
	fail "the live run had no loss or no duplicates: nothing to reproduce"
echo "   ok  live: missing_slots $r_missing_slots, duplicate $r_duplicate, late $r_late"
stop_daemon

# replay NAME: the capture replayed (held until a lossless consumer that
# saves into $T/NAME subscribed); its tensors, bitmaps and counters must
# be the live run's, bit for bit.
replay() {
	mkdir -p "$T/$1"
	rm -f "$T/notify"
	DAEMON_ARGS="--replay sensor0/q0=$T/live.pcap --replay-hold" start_daemon
	bg "$BUILD/daqiri-consume" -s "$SOCK" --lossless --save "$T/$1" --count $B --quiet $STREAM
	C=$LAST_PID
	wait_consumers ".consumers | length == 1"
	ctl replay start > /dev/null || fail "$1: daqirictl replay start failed"
	wait_gone "$C" 60
	expect_eq "$1: consumer exit" "$GONE_RC" 0
	wait_for "[.streams[] | select(.name == \"$STREAM\") | .handoff.published][0] == $B" 20
	counters > "$T/$1.stats"
	for f in "$T/live"/*.npy; do
		cmp "$f" "$T/$1/$(basename "$f")" || fail "$1: $(basename "$f") differs from the live run's"
	done
	expect_eq "$1: files compared" "$(find "$T/$1" -name '*.npy' | wc -l)" $((2 * B))
	cmp "$T/live.stats" "$T/$1.stats" || {
		diff "$T/live.stats" "$T/$1.stats" >&2
		fail "$1: the replay's counters differ from the live run's"
	}
	echo "   ok  $1: $B tensors, their bitmaps and the reorder counters as live"
	stop_daemon
}

note "replay of the capture, same config, twice"
replay replay1
replay replay2
