#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqirictl capture and trigger (issue "Record, capture and replay"):
#  - a queue captured while a lossy, shuffled stream arrives: tshark
#    decodes every frame as UDP to our port with the simulator's length,
#    as many as the daemon received, with nanosecond times; --count
#    stops at that many; under a fast stream every frame is in the file
#    or counted as tap_full (frames + tap_full == rx_packets);
#  - an existing file is not overwritten without --force, and a usage
#    error, an unknown queue and a user who is not admin are each told;
#  - daqirictl trigger counts a stream's triggers; an unknown stream and
#    a user who is not admin are refused;
#  - the daemon killed mid-capture: the capture ends with exit 1 and says
#    why, and its file holds every frame the tap took.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
command -v tshark > /dev/null || skip "no tshark (scripts/install-deps.sh installs it)"
# a capture shows every flow's traffic: root and the admin group only
[ "$(id -u)" -eq 0 ] || skip "not root: daqirictl capture is for root and the admin group"
make_config -e 's/socket_mode: 0660 /socket_mode: 0666 /'
start_daemon
# tshark says it runs as root; nothing else of its stderr is expected
tsh() { tshark -r "$@" 2> "$T/tshark.err" || fail "tshark: $(cat "$T/tshark.err")"; }

note "usage and names"
rc=0; ctl capture sensor0/q0 > /dev/null 2> "$T/e" || rc=$?
expect_eq "no file: exit" $rc 2
grep -q "capture needs at least 2 arguments" "$T/e" || fail "no file: $(cat "$T/e")"
rc=0; ctl capture --snap 10 sensor0/q0 "$T/x.pcap" 2> "$T/e" || rc=$?
expect_eq "snap too small: exit" $rc 2
grep -q -- "--snap: bytes of each frame, 64..9728; got '10'" "$T/e" || fail "snap: $(cat "$T/e")"
rc=0; ctl capture --seconds 1 sensor0/q9 "$T/x.pcap" 2> "$T/e" || rc=$?
expect_eq "no such queue: exit" $rc 1
grep -q "no such rx queue 'sensor0/q9'; did you mean 'sensor0/q0'?" "$T/e" ||
	fail "no such queue: $(cat "$T/e")"
echo keep > "$T/keep.pcap"
rc=0; ctl capture --seconds 1 sensor0/q0 "$T/keep.pcap" 2> "$T/e" || rc=$?
expect_eq "existing file: exit" $rc 1
grep -q "keep.pcap exists: add --force to replace it" "$T/e" || fail "existing: $(cat "$T/e")"
expect_eq "existing file kept" "$(cat "$T/keep.pcap")" keep
if command -v setpriv > /dev/null 2>&1; then
	chmod 0755 "$T"
	cp "$BUILD/daqirictl" "$T/daqirictl"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$T/daqirictl" -s "$SOCK" \
		capture --seconds 1 sensor0/q0 /dev/null 2> "$T/e" || rc=$?
	expect_eq "capture, not admin: exit" $rc 1
	grep -q "^daqirictl: capture: sensor0/q0: needs root" "$T/e" || fail "not admin: $(cat "$T/e")"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$T/daqirictl" -s "$SOCK" \
		trigger sensor0/sensor_tensor 2> "$T/e" || rc=$?
	expect_eq "trigger, not admin: exit" $rc 1
	grep -q "needs root" "$T/e" || fail "trigger, not admin: $(cat "$T/e")"
else
	note "SKIP part: no setpriv, the non-admin refusals are not tried"
fi

# capture_bg ARGS: daqirictl capture in the background, once its tap is
# on; its messages in $T/cap.err.
capture_bg() {
	tap_bg cap capture "$@"
	CAP=$TAPPER
}

note "a lossy, shuffled stream, captured until Ctrl-C"
capture_bg sensor0/q0 "$T/live.pcap"
run_sim --batches 8 --rate 20kpps --loss 0.02 --shuffle 16 --seed 3
sent=$(sim_field sent)
wait_for "[.interfaces[0].queues[] | select(.queue == \"sensor0/q0\") | .rx_packets][0] == $sent" 20
kill -INT "$CAP"
wait_gone "$CAP" 20
sed 's/^/   | /' "$T/cap.err"
expect_eq "capture exit" "$GONE_RC" 0
grep -q "sensor0/q0: $sent frames, " "$T/cap.err" || fail "summary: $(cat "$T/cap.err")"
tsh "$T/live.pcap" -T fields -e udp.dstport -e frame.len -e frame.cap_len > "$T/fields"
expect_eq "frames tshark decodes" "$(wc -l < "$T/fields")" "$sent"
expect_eq "every one UDP to our port, 8050 bytes, whole" \
	"$(sort -u "$T/fields" | tr '\t' ' ')" "$PORT 8050 8050"
# nanosecond times (a microsecond file would end in 000 every time)
tsh "$T/live.pcap" -T fields -e frame.time_epoch > "$T/times"
grep -q '\.[0-9]\{9\}$' "$T/times" || fail "no nanosecond times: $(head -2 "$T/times")"
[ "$(grep -c '000$' "$T/times")" -lt "$sent" ] || fail "times end in 000: microseconds"
sort -c "$T/times" || fail "times go backwards"
echo "   ok  nanosecond times, in order"

note "--count stops at that many, --snap keeps the first bytes"
capture_bg --count 100 --snap 64 --force sensor0/q0 "$T/keep.pcap"
run_sim --batches 2 --rate 20kpps --seed 4
wait_gone "$CAP" 30
expect_eq "capture --count exit" "$GONE_RC" 0
tsh "$T/keep.pcap" -T fields -e frame.len -e frame.cap_len > "$T/fields"
expect_eq "frames of --count 100" "$(wc -l < "$T/fields")" 100
expect_eq "cut at --snap 64, length kept" "$(sort -u "$T/fields" | tr '\t' ' ')" "8050 64"
grep -q "100 frames were longer than --snap 64" "$T/cap.err" || fail "cut: $(cat "$T/cap.err")"

note "a fast stream: every frame in the file or counted as tap_full"
# No timing is assumed: however fast this machine drains the shared ring,
# frames + tap_full must equal what the queue received in the session.
qstat() { stat "[.interfaces[0].queues[] | select(.queue == \"sensor0/q0\") | $1][0]"; }
rx0=$(qstat .rx_packets); k0=$(qstat .kernel)
taken0=$(qstat .tap_taken); full0=$(qstat .tap_full)
capture_bg sensor0/q0 "$T/fast.pcap"
run_sim --batches 100 --rate 100kpps --seed 5
fast=$(sim_field sent)
# a slow batch after: the socket engine learns of earlier kernel drops
# with the next datagram, so then rx_packets + kernel add up to what was
# sent
run_sim --batches 1 --rate 1kpps --seed 6
fast=$((fast + $(sim_field sent)))
wait_for "[.interfaces[0].queues[] | select(.queue == \"sensor0/q0\") | .rx_packets + .kernel][0] == $((rx0 + k0 + fast))" 30
kill -INT "$CAP"
wait_gone "$CAP" 60
sed 's/^/   | /' "$T/cap.err"
expect_eq "fast capture exit" "$GONE_RC" 0
rx=$(( $(qstat .rx_packets) - rx0 ))
taken=$(( $(qstat .tap_taken) - taken0 ))
full=$(( $(qstat .tap_full) - full0 ))
frames=$(sed -n 's/.*sensor0\/q0: \([0-9]*\) frames, .*/\1/p' "$T/cap.err")
expect_eq "frames + tap_full == rx_packets" "$((frames + full))" "$rx"
expect_eq "frames written == tap_taken" "$frames" "$taken"
expect_eq "frames tshark reads" "$(tsh "$T/fast.pcap" -T fields -e frame.len | wc -l)" "$frames"
if [ "$full" -gt 0 ]; then
	grep -q "$full frames were not captured: the tap's ring was full (tap_full)" "$T/cap.err" ||
		fail "tap_full not said: $(cat "$T/cap.err")"
else
	! grep -q "were not captured" "$T/cap.err" || fail "tap_full said: $(cat "$T/cap.err")"
fi
echo "   ok  $frames of $rx frames captured, $full counted as tap_full"

note "daqirictl trigger"
ctl trigger sensor0/sensor_tensor > "$T/t1"
ctl trigger sensor0/sensor_tensor > "$T/t2"
grep -q "^sensor0/sensor_tensor: trigger 1 at [0-9]* ns" "$T/t1" || fail "trigger 1: $(cat "$T/t1")"
grep -q "^sensor0/sensor_tensor: trigger 2 at [0-9]* ns" "$T/t2" || fail "trigger 2: $(cat "$T/t2")"
expect_eq "trigger -j count" "$(ctl -j trigger sensor0/sensor_tensor | jq .count)" 3
rc=0; ctl trigger sensor0/nope 2> "$T/e" || rc=$?
expect_eq "unknown stream: exit" $rc 1
grep -q "no stream 'sensor0/nope'" "$T/e" || fail "unknown stream: $(cat "$T/e")"
grep -q "triggers stream 'sensor0/sensor_tensor' (trigger 3)" "$T/daemon.log" || fail "not logged"
echo "   ok  counted, logged, unknown streams refused"

note "the daemon killed mid-capture: the capture ends, saying so, the file whole"
capture_bg sensor0/q0 "$T/killed.pcap"
run_sim --batches 2 --rate 20kpps --seed 6
sent=$(sim_field sent)
wait_for "[.interfaces[0].queues[] | select(.queue == \"sensor0/q0\") | .tap_taken][0] >= $sent" 20
kill -9 "$DAEMON_PID"
wait_gone "$DAEMON_PID"
wait_gone "$CAP" 20
expect_eq "capture exit, daemon gone" "$GONE_RC" 1
grep -q "the daemon went away (control connection closed); the file holds every frame" "$T/cap.err" ||
	fail "daemon gone: $(cat "$T/cap.err")"
tsh "$T/killed.pcap" -T fields -e frame.len > "$T/fields"
expect_eq "frames in the file" "$(wc -l < "$T/fields")" "$sent"
