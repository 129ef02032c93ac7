#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqiri-consume says what happened and exits as its page says: 2 for a
# usage error; a --count not reached before --timeout says how many came;
# a --verify that saw no tensor fails; packets the daemon dropped as
# malformed (a sender whose layout is not the config's) are named when no
# tensor came; --save writes the file names the page gives; members of a
# shared group report the sequence numbers the other members got as
# such, not as gaps. No step waits on a clock it races: the timeouts run
# with no sender at all, and the other runs end on --count or a signal.
. tests/system/lib.sh

CONS="$BUILD/daqiri-consume"
start_daemon

note "usage errors exit 2"
for args in "" "--count 0 $STREAM" "--timeout x $STREAM" "--bogus $STREAM" "a b"; do
	rc=0
	# shellcheck disable=SC2086 # $args is words on purpose
	"$CONS" -s "$SOCK" $args > /dev/null 2>&1 || rc=$?
	expect_eq "exit of daqiri-consume $args" "$rc" 2
done

note "--count not reached before --timeout (no sender): says so, exits 1"
rc=0
"$CONS" -s "$SOCK" --quiet --count 3 --timeout 1 "$STREAM" 2> "$T/c.err" || rc=$?
sed 's/^/   | /' "$T/c.err"
expect_eq "exit" "$rc" 1
grep -q '^daqiri-consume: timeout: no tensor for 1 s: received 0 of 3 tensors$' "$T/c.err" ||
	fail "the timeout does not say how many tensors came"

note "--verify that saw no tensor fails"
rc=0
"$CONS" -s "$SOCK" --quiet --verify --timeout 1 "$STREAM" 2> "$T/c.err" || rc=$?
sed 's/^/   | /' "$T/c.err"
expect_eq "exit" "$rc" 1
grep -q '^daqiri-consume: --verify: no tensor arrived, nothing was verified$' "$T/c.err" ||
	fail "no message for a verification that saw nothing"

note "a sender with another payload size: the daemon's malformed count is named"
"$CONS" -s "$SOCK" --quiet --verify "$STREAM" 2> "$T/c.err" &
C=$!
PIDS="$PIDS $C"
# by pid: the consumer of the step before may still be listed for a tick
# (a TERM before this one set its handler would kill it unannounced)
wait_consumers "[.consumers[] | select(.pid == $C)] | length == 1"
run_sim --batches 1 --payload-bytes 4000 --rate 20kpps
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.malformed] | .[0] == 128"
kill -TERM "$C"
wait_gone "$C"
sed 's/^/   | /' "$T/c.err"
expect_eq "exit" "$GONE_RC" 1
grep -q '^daqiri-consume: 128 packets were dropped as malformed by the daemon: their length does not match payload_bytes' \
	"$T/c.err" || fail "no hint about the malformed packets"
wait_consumers ".consumers | length == 0"

note "--save: DIR/<iface>_<name>-<seq, 12 digits>.npy, and .present.npy beside it"
mkdir "$T/save"
"$CONS" -s "$SOCK" --quiet --save "$T/save" --count 2 "$STREAM" 2> "$T/c.err" &
C=$!
PIDS="$PIDS $C"
wait_consumers "[.consumers[] | select(.pid == $C)] | length == 1"
run_sim --batches 2 --rate 20kpps
wait_gone "$C" 30
sed 's/^/   | /' "$T/c.err"
expect_eq "exit" "$GONE_RC" 0
expect_eq "files saved" "$(find "$T/save" -type f | wc -l)" 4
for f in "$T"/save/*[0-9].npy; do
	echo "$f" | grep -q '/sensor0_sensor_tensor-[0-9]\{12\}\.npy$' || fail "file name $f"
	[ -f "${f%.npy}.present.npy" ] || fail "no mask beside $f"
done
# the mask: one boolean per slot, as the tensor's bitmap says; NumPy reads
# both (the sender lost nothing here: every slot present)
if /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
	/usr/bin/python3 - "$T/save" <<'EOF' || fail "the saved files do not load as they should"
import glob, sys
import numpy as np
for f in sorted(glob.glob(sys.argv[1] + "/*[0-9].npy")):
    a, p = np.load(f), np.load(f[:-4] + ".present.npy")
    assert a.dtype == np.float16 and a.shape == (128, 16000), (f, a.dtype, a.shape)
    assert p.dtype == np.bool_ and p.shape == (128,) and p.all(), (f, p.dtype, p.shape)
print("   ok  tensors and masks load: float16 (128, 16000), bool (128,)")
EOF
fi
wait_consumers ".consumers | length == 0"

note "a shared group: skipped sequence numbers are the other members'"
"$CONS" -s "$SOCK" --quiet --group g "$STREAM" 2> "$T/c1.err" &
C1=$!
"$CONS" -s "$SOCK" --quiet --group g "$STREAM" 2> "$T/c2.err" &
C2=$!
PIDS="$PIDS $C1 $C2"
wait_consumers "[.consumers[] | select(.pid == $C1 or .pid == $C2)] | length == 2"
# The simulator starts at sequence 0 again, close behind the batches
# earlier runs published: the daemon follows it after a batch's worth of
# late packets (daqirid(8) RESYNC), and that first batch goes out at its
# deadline. The members get what this run publishes.
read_stream
in0=$r_packets_in pub0=$((r_batches_complete + r_batches_timeout))
run_sim --batches 8 --rate 20kpps
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.packets_in == $((in0 + 1024)) and .handoff.open_bufs == 0] | .[0]"
read_stream
pub=$((r_batches_complete + r_batches_timeout - pub0))
[ "$pub" -ge 2 ] || fail "only $pub tensors published"
# What the group got it gives back (a tensor published as the resync
# settles may go to neither member; the point here is the report below).
wait_consumers "([.consumers[].delivered] | add) >= 2 and ([.consumers[].released] | add) == ([.consumers[].delivered] | add)" 30
kill -TERM "$C1" "$C2"
wait_gone "$C1"
expect_eq "exit of member 1" "$GONE_RC" 0
wait_gone "$C2"
expect_eq "exit of member 2" "$GONE_RC" 0
sed 's/^/   | /' "$T/c1.err" "$T/c2.err"
for f in "$T/c1.err" "$T/c2.err"; do
	grep -q ', seq skipped (other group members) [0-9]*,' "$f" || fail "$f: no 'seq skipped'"
	! grep -q 'seq gaps' "$f" || fail "$f: a shared member reports seq gaps"
done
stop_daemon
echo "ok"
