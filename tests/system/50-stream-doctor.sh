#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A stream that explains itself (issue "Bring-up without guesswork";
# daqirid's doctor.c): the likeliest bring-up mistakes, each silent
# before, each now named in stats' verdict, in `daqirictl doctor`, in
# one log line, and where a consumer times out:
#  - the sender pointed elsewhere: nothing arrives, a consumer waits;
#  - a payload of the wrong size: the lengths seen and expected;
#  - the sequence field at the wrong place: mostly duplicates;
#  - a flow that matches none of the sender's packets;
# and a right sender brings it back to ok.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
make_config
start_daemon
verdict() { sstat ".verdict.$1"; }
# until the stream's verdict is $1 (the doctor looks once a second)
wait_verdict() {
	i=0
	while [ "$(verdict state)" != "$1" ]; do
		i=$((i + 1)); [ $i -lt 400 ] || fail "verdict $(verdict state), not $1: $(verdict why)"
		sleep 0.05
	done
	echo "   ok  $1: $(verdict why)"
}
send() {
	"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches 2 --rate 20kpps --quiet "$@" \
		> "$T/sim.out" 2>&1 || fail "daqiri-sim $*: $(cat "$T/sim.out")"
}

note "a stream name mistyped: the closest one named"
if "$BUILD/daqiri-consume" -s "$SOCK" --count 1 --timeout 1 sensor0/sensor_tensr > /dev/null 2> "$T/typo.err"; then
	fail "a mistyped stream was subscribed"
fi
grep -q "no stream 'sensor0/sensor_tensr'; did you mean '$STREAM'?" "$T/typo.err" ||
	fail "no suggestion: $(cat "$T/typo.err")"

note "nothing sent to where the stream listens, a consumer waits"
bg "$BUILD/daqiri-consume" -s "$SOCK" --count 1 --timeout 8 "$STREAM" > "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
send --dest "udp://127.0.0.1:$((PORT + 7))"
wait_verdict silent
verdict why | grep -q "interface 'sensor0' receives on udp://127.0.0.1:$PORT (socket_config.local_addr); is the sender running, and sending there?" ||
	fail "silent, but not where: $(verdict why)"
wait_line "$T/daemon.log" "stream '$STREAM': nothing has arrived for"
wait_gone "$C" 20
expect_eq "consumer exit (timeout)" "$GONE_RC" 1
grep -q "^daqiri-consume: the daemon on $STREAM: silent: nothing has arrived" "$T/c.err" ||
	fail "the consumer's timeout did not say why: $(cat "$T/c.err")"
if ctl doctor "$STREAM" > "$T/doc.out"; then
	fail "daqirictl doctor exited 0 on a silent stream"
fi
grep -q "^$STREAM: silent: " "$T/doc.out" || fail "doctor: $(cat "$T/doc.out")"

note "payloads of the wrong size"
send --payload-bytes 4000
wait_verdict malformed
verdict why | grep -q "frames of 4050 bytes, where this stream takes frames of exactly 8050 bytes (payload_byte_offset 50 + payload_bytes 8000)" ||
	fail "malformed, but not the lengths: $(verdict why)"
wait_line "$T/daemon.log" "stream '$STREAM': .* packets malformed: frames of 4050 bytes"

note "the sequence field at the wrong place"
send --seq 352:32
wait_verdict duplicates
verdict why | grep -q "sequence_number: bit_offset 336, bit_width 32" ||
	fail "duplicates, but not the field: $(verdict why)"

note "a right sender: ok again"
send
wait_verdict ok
wait_line "$T/daemon.log" "stream '$STREAM': receiving again"
ctl doctor "$STREAM" > "$T/doc.out" || fail "doctor exited 1 on an ok stream: $(cat "$T/doc.out")"
expect_eq "doctor" "$(cat "$T/doc.out")" "$STREAM: ok: receiving"

note "a flow that matches none of the sender's packets"
awk -v p="$PORT" '{ print } $1 == "udp_dst:" && $2 == p { sub(/udp_dst:.*/, "udp_src: 9"); print }' \
	"$T/daqirid.yaml" > "$T/x.yaml" && mv "$T/x.yaml" "$T/daqirid.yaml"
grep -q 'udp_src: 9' "$T/daqirid.yaml" || fail "could not edit the flow: $(grep -n udp_dst "$T/daqirid.yaml")"
ctl reload > "$T/reload.out" 2>&1 || fail "reload: $(cat "$T/reload.out")"
send
wait_verdict no_match
verdict why | grep -q "interface 'sensor0' received [0-9]* frames in the last [0-9]* ms but none reached this stream" ||
	fail "no_match, but: $(verdict why)"
stop_daemon
echo "ok"
