#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqirictl learn (issue "Bring-up without guesswork"): the daemon taps
# an rx queue before classification, daqirictl infers the layout from a
# few thousand live packets of the simulator, whose layout is known:
#  - the default layout under loss, duplicates and reordering: the entry
#    it prints, spliced into the config, passes daqirid -n, and a daemon
#    on it publishes tensors that daqiri-consume --verify checks element
#    by element;
#  - the reference's seq_batch_number bit fields (neither ending on a
#    byte) from a sender that restarts: the fields, packets per batch and
#    the restart (the tap takes the frames whatever the stream's layout);
#  - usage errors, a queue that does not exist, a second tap on a busy
#    queue, a queue nothing reaches, and a user who is not admin, each
#    with its message.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
# the tap shows every flow's traffic: root and the admin group only
[ "$(id -u)" -eq 0 ] || skip "not root: daqirictl learn is for root and the admin group"
make_config -e 's/socket_mode: 0660 /socket_mode: 0666 /'
start_daemon

note "usage and names"
rc=0; ctl learn > /dev/null 2> "$T/e" || rc=$?
expect_eq "no queue: exit" $rc 2
grep -q "learn needs at least 1 argument" "$T/e" || fail "no queue: $(cat "$T/e")"
rc=0; ctl learn --count 5 sensor0/q0 2> "$T/e" || rc=$?
expect_eq "count too small: exit" $rc 2
grep -q -- "--count: a number of frames, 16..4096; got '5'" "$T/e" || fail "count: $(cat "$T/e")"
rc=0; ctl learn sensor0/q9 2> "$T/e" || rc=$?
expect_eq "no such queue: exit" $rc 1
grep -q "no such rx queue 'sensor0/q9'; did you mean 'sensor0/q0'?" "$T/e" ||
	fail "no such queue: $(cat "$T/e")"
if command -v setpriv > /dev/null 2>&1; then
	chmod 0755 "$T"
	cp "$BUILD/daqirictl" "$T/daqirictl"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$T/daqirictl" -s "$SOCK" \
		learn --seconds 1 sensor0/q0 > /dev/null 2> "$T/e" || rc=$?
	expect_eq "not admin: exit" $rc 1
	grep -q "^daqirictl: learn: sensor0/q0: needs root" "$T/e" || fail "not admin: $(cat "$T/e")"
	echo "   ok  $(cat "$T/e")"
else
	note "SKIP part: no setpriv, the non-admin refusal is not tried"
fi
rc=0; ctl learn --seconds 0.3 sensor0/q0 2> "$T/e" || rc=$?
expect_eq "nothing arrives: exit" $rc 1
grep -q "no frame reached sensor0/q0 in 0.3 s: is the instrument sending" "$T/e" ||
	fail "nothing arrives: $(cat "$T/e")"

# learn_bg ARGS: daqirictl learn in the background, once its tap is on.
learn_bg() {
	tap_bg learn "$@"
	LEARN=$TAPPER
}

note "the default layout, lossy, duplicated, shuffled"
learn_bg learn --count 2000 --seconds 60 sensor0/q0
# a second tap on the same queue waits its turn
rc=0; ctl learn sensor0/q0 2> "$T/e" || rc=$?
expect_eq "busy: exit" $rc 1
grep -q "rx queue 'sensor0/q0' is tapped by another connection" "$T/e" || fail "busy: $(cat "$T/e")"
run_sim --batches 20 --rate 50kpps --loss 0.01 --dup 0.01 --shuffle 16 --seed 5
wait_gone "$LEARN" 60
sed 's/^/   | /' "$T/learn.out" "$T/learn.err"
expect_eq "learn exit" "$GONE_RC" 0
grep -q "^daqirictl learn sensor0/q0: 2000 frames" "$T/learn.out" || fail "no summary"
grep -q "sequence: bit_offset 336, bit_width 32 (frame bytes 42..45), big-endian; .*confidence high" \
	"$T/learn.out" || fail "sequence field"
grep -q "payload_byte_offset 50, 8000 bytes" "$T/learn.out" || fail "samples"
grep -q "flow 0 of the interface matches them" "$T/learn.out" || fail "flow"

note "its entry in the config: daqirid -n accepts it, and it runs"
# The printed entry, with the region and sample types filled in, replaces
# the stream of the test config.
sed -n '/^- name: learned$/,$p' "$T/learn.out" |
	sed -e 's/REGION/tensors/' -e 's/^/        /' > "$T/entry"
printf '%s\n' "          data_types:" "            input_type: int4" \
	"            output_type: fp16" "          timeout_us: 100000" >> "$T/entry"
awk -v entry="$T/entry" '
	/^        - name: sensor_tensor/ { while ((getline l < entry) > 0) print l; skip = 1; next }
	skip && /^  [a-z]/ { skip = 0 }
	!skip { print }' "$T/daqirid.yaml" > "$T/learned.yaml"
grep -q "name: learned" "$T/learned.yaml" || fail "entry not spliced"
"$BUILD/daqirid" -n -c "$T/learned.yaml" > "$T/n.out" 2>&1 || fail "daqirid -n: $(cat "$T/n.out")"
echo "   ok  daqirid -n accepts the learned entry"
stop_daemon
cp "$T/learned.yaml" "$T/daqirid.yaml"
STREAM=sensor0/learned
rm -f "$T/notify" "$T/notify.log"
start_daemon
bg "$BUILD/daqiri-consume" -s "$SOCK" --verify --count 4 "$STREAM" > "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
wait_consumers ".consumers | length == 1"
run_sim --batches 4 --rate 20kpps --stream "$STREAM"
wait_gone "$C" 30
sed 's/^/   | /' "$T/c.err"
expect_eq "consumer exit" "$GONE_RC" 0
grep -q "tensors 4, complete 4, .* errors 0" "$T/c.err" || fail "tensors of the learned stream"

note "seq_batch_number bit fields, and a sender that restarts"
learn_bg -j learn --count 2500 --seconds 60 sensor0/q0
# 2^(10 - 2) = 256 packets per batch; the second run starts from 0
LAYOUT="--seq 340:10 --batch-field 356:2"
# shellcheck disable=SC2086 # LAYOUT is words on purpose
run_sim --batches 6 --rate 50kpps $LAYOUT --shuffle 8
# shellcheck disable=SC2086
run_sim --batches 6 --rate 50kpps $LAYOUT --shuffle 8
wait_gone "$LEARN" 60
expect_eq "learn -j exit" "$GONE_RC" 0
j() { jq -r "$1" "$T/learn.out"; }
expect_eq "sequence bit_offset" "$(j .seq_bit_offset)" 340
expect_eq "sequence bit_width" "$(j .seq_bit_width)" 10
expect_eq "wrapped" "$(j .seq_wrapped)" true
expect_eq "batch bit_offset" "$(j .batch_bit_offset)" 356
expect_eq "batch bit_width" "$(j .batch_bit_width)" 2
expect_eq "packets per batch (from the batch field)" "$(j .packets_per_batch)" 256
expect_eq "suggested" "$(j .packets_per_batch_suggested)" false
expect_eq "restarts" "$(j .restarts)" 1
expect_eq "confidence" "$(j .confidence)" high
# 1536 sent, then 964 of the second run: every one tapped, none lost
expect_eq "frames" "$(j .frames)" 2500
expect_eq "unique" "$(j .unique)" 2500
expect_eq "tap full" "$(j .tap_full)" 0
# the tap is outside the data-loss identity: the books still balance
read_stream
expect_eq "placed + dropped = packets in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
