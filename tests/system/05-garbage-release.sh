#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Consumers that write garbage into their shared ring: an index past the
# stream's buffers, a buffer they do not hold, the same buffer twice, an
# impossible release position, an impossible completion position. Each
# is cut off alone (told why, its subscription ended, its buffer taken
# back); a well-behaved consumer beside them sees every tensor.
. tests/system/lib.sh

NBUFS=32
KINDS="range notheld double positions comp"
start_daemon
bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 16 "$STREAM" > "$T/good.out"
GOOD=$LAST_PID
wait_line "$T/good.out" '^subscribed'
for k in $KINDS; do
	bg "$BUILD/tests/bad-consumer" -s "$SOCK" --garbage $k "$STREAM" > "$T/bad-$k.out"
	eval "pid_$k=$LAST_PID"
	wait_line "$T/bad-$k.out" '^subscribed'
done
expect_eq "subscriptions" "$(ctl -j consumers | jq '.consumers | length')" 6

note "10 batches: each bad consumer gets one tensor and writes its garbage"
run_sim --batches 10 --rate 20kpps --quiet
for k in $KINDS; do
	wait_line "$T/bad-$k.out" "^garbage $k written"
done
note "10 more (the completion-ring liar is caught at its next tensor)"
run_sim --batches 10 --rate 20kpps --quiet
for k in $KINDS; do
	eval "p=\$pid_$k"
	wait_gone "$p" 15
	sed 's/^/   | /' "$T/bad-$k.out"
	expect_eq "$k: exit" "$GONE_RC" 0
	grep -q -E '^cut off end=(ESHUTDOWN|ENOTCONN)' "$T/bad-$k.out" || fail "$k: not cut off"
done

note "the daemon's reasons"
grep 'ending that subscription' "$T/daemon.log" | sed 's/^/   | /'
expect_eq "subscriptions ended" "$(grep -c 'ending that subscription' "$T/daemon.log")" 5
grep -q "pid $pid_range, subscription [0-9]*: released buffer $NBUFS, which it does not hold" "$T/daemon.log" ||
	fail "range: reason missing"
grep -q "pid $pid_notheld, subscription [0-9]*: released buffer [0-9]*, which it does not hold" "$T/daemon.log" ||
	fail "notheld: reason missing"
grep -q "pid $pid_double, subscription [0-9]*: released buffer [0-9]*, which it does not hold" "$T/daemon.log" ||
	fail "double: reason missing"
grep -q "pid $pid_positions, subscription [0-9]*: release ring positions corrupted" "$T/daemon.log" ||
	fail "positions: reason missing"
grep -q "pid $pid_comp, subscription [0-9]*: completion ring positions corrupted" "$T/daemon.log" ||
	fail "comp: reason missing"
expect_eq "subs_broken" "$(sstat .handoff.subs_broken)" 5
wait_consumers '.consumers | length == 1'
expect_eq "the one left" "$(consumer "$GOOD" state)" active

note "the good consumer saw every tensor; every buffer comes back"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == 20 and .handoff.open_bufs == 0"
wait_consumers "[.consumers[] | select(.pid == $GOOD)][0] | .released == 20"
expect_eq "good consumer overruns" "$(consumer "$GOOD" overruns)" 0
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == $NBUFS and .handoff.held_bufs == 0" 5
kill -TERM "$GOOD"
wait_gone "$GOOD"
expect_eq "good consumer exit" "$GONE_RC" 0
expect_eq "good consumer got" "$(kv "$T/good.out" got)" 20
expect_eq "good consumer missed seqs" "$(kv "$T/good.out" missed)" 0
[ "$(ctl -j status | jq -r .state)" = running ] || fail "daemon not running"
stop_daemon

# The daemon sends each one a sub_closed event with the reason and ends
# that subscription. daqiri_next() must report that as -ESHUTDOWN
# (daqiri_client.h: "the daemon ended the subscription") and keep the
# reason in daqiri_last_error(), whichever of the two it reads first.
note "each bad consumer was told why"
for k in $KINDS; do
	grep -q -E '^cut off end=ESHUTDOWN .*why=subscription [0-9]+ ended: ' "$T/bad-$k.out" ||
		fail "$k: the library reported '$(sed -n 's/^cut off //p' "$T/bad-$k.out")', not -ESHUTDOWN with the daemon's reason"
done
echo "ok"
