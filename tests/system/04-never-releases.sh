#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A consumer that never releases: it gets max_held tensors, then misses
# every later one (its overruns grow by exactly the tensors published),
# while a second consumer sees every tensor and the stream never runs out
# of buffers. In a shared group, such a member stops being picked and the
# other member takes every remaining tensor.
. tests/system/lib.sh

NBUFS=32
# The holders keep their buffers for the whole test: no hold timeout.
make_config -e 's/hold_timeout_ms: 10000 /hold_timeout_ms: 0 /'
start_daemon
bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 16 "$STREAM" > "$T/good.out"
GOOD=$LAST_PID
wait_line "$T/good.out" '^subscribed'
# max_held left to the daemon: a quarter of the buffers
bg "$BUILD/tests/bad-consumer" -s "$SOCK" --hold "$STREAM" > "$T/hold.out"
HOLD=$LAST_PID
wait_line "$T/hold.out" '^subscribed'
MAXH=$(kv "$T/hold.out" max_held)
expect_eq "the holder's max_held (daemon default nbufs/4)" "$MAXH" $((NBUFS / 4))

settle() {
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $1 and .handoff.open_bufs == 0" 10
	wait_consumers "[.consumers[] | select(.pid == $GOOD)][0] | .released == $1"
}

check() {
	pub=$1
	expect_eq "published" "$(sstat .handoff.published)" "$pub"
	expect_eq "holder delivered" "$(consumer "$HOLD" delivered)" "$MAXH"
	expect_eq "holder held" "$(consumer "$HOLD" held)" "$MAXH"
	expect_eq "holder released" "$(consumer "$HOLD" released)" 0
	expect_eq "holder overruns = published - max_held" "$(consumer "$HOLD" overruns)" $((pub - MAXH))
	expect_eq "good consumer delivered" "$(consumer "$GOOD" delivered)" "$pub"
	expect_eq "good consumer overruns" "$(consumer "$GOOD" overruns)" 0
	expect_eq "stream overruns (sum)" "$(sstat .handoff.overruns)" $((pub - MAXH))
	expect_eq "tensors nobody took" "$(sstat .handoff.unseen)" 0
	expect_eq "buffers held (the holder's)" "$(sstat .handoff.held_bufs)" "$MAXH"
	expect_eq "no_buffer" "$(sstat .reorder.no_buffer)" 0
}

note "30 batches, shuffled and lossy"
run_sim --batches 30 --seed 3 --shuffle 64 --loss 0.005 --rate 10kpps --quiet
settle 30
check 30
d1=$(sim_field dropped)
note "30 more: the holder's overruns keep growing"
run_sim --batches 30 --seed 4 --shuffle 64 --loss 0.005 --rate 10kpps --quiet
# (a new run restarts the sequence: one resync, no tensor lost)
settle 60
check 60
expect_eq "missing slots = sim dropped (both runs)" "$(sstat .reorder.missing_slots)" $((d1 + $(sim_field dropped)))

kill -TERM "$HOLD"
wait_gone "$HOLD"
expect_eq "holder popped" "$(kv "$T/hold.out" got)" "$MAXH"
wait_consumers "[.consumers[] | select(.pid == $HOLD)] | length == 0" 5
expect_eq "stream overruns stay when the holder leaves (a counter)" \
	"$(sstat .handoff.overruns)" $((60 - MAXH))
kill -TERM "$GOOD"
wait_gone "$GOOD"
expect_eq "good consumer exit" "$GONE_RC" 0
expect_eq "good consumer got" "$(kv "$T/good.out" got)" 60
expect_eq "good consumer missed seqs" "$(kv "$T/good.out" missed)" 0
expect_eq "missing slots seen = reorder missing_slots" "$(kv "$T/good.out" missing_slots)" "$(sstat .reorder.missing_slots)"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == $NBUFS"
wait_consumers '.consumers | length == 0' 5

note "shared group: a member that never releases; the other takes the rest"
bg "$BUILD/tests/bad-consumer" -s "$SOCK" --group g --hold "$STREAM" > "$T/ghold.out"
GHOLD=$LAST_PID
bg "$BUILD/tests/good-consumer" -s "$SOCK" --group g --max-held 16 "$STREAM" > "$T/ggood.out"
GGOOD=$LAST_PID
wait_line "$T/ghold.out" '^subscribed'
wait_line "$T/ggood.out" '^subscribed'
unseen0=$(sstat .handoff.unseen)
run_sim --batches 30 --rate 10kpps --quiet
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == 90 and .handoff.open_bufs == 0"
wait_consumers "[.consumers[] | select(.pid == $GGOOD)][0] | .released == .delivered and .delivered == $((30 - MAXH))"
expect_eq "holding member delivered" "$(consumer "$GHOLD" delivered)" "$MAXH"
expect_eq "holding member overruns" "$(consumer "$GHOLD" overruns)" 0
expect_eq "other member delivered (each tensor to one member)" "$(consumer "$GGOOD" delivered)" $((30 - MAXH))
expect_eq "other member overruns" "$(consumer "$GGOOD" overruns)" 0
expect_eq "tensors nobody took" "$(sstat .handoff.unseen)" "$unseen0"
expect_eq "buffers held (the holding member's)" "$(sstat .handoff.held_bufs)" "$MAXH"
kill -TERM "$GGOOD" "$GHOLD"
wait_gone "$GGOOD"
expect_eq "other member exit" "$GONE_RC" 0
expect_eq "other member got" "$(kv "$T/ggood.out" got)" $((30 - MAXH))
wait_gone "$GHOLD"
expect_eq "holding member popped" "$(kv "$T/ghold.out" got)" "$MAXH"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == $NBUFS"

note "shared group of two that keep up, beside two broadcast subscribers: each member gets half"
wait_consumers '.consumers | length == 0' 5
for who in b1 b2 s1 s2; do
	case $who in s*) g="--group g2" ;; *) g="" ;; esac
	# (four of 6: within the 27 of 32 buffers the window leaves)
	# shellcheck disable=SC2086
	bg "$BUILD/tests/good-consumer" -s "$SOCK" $g --max-held 6 "$STREAM" > "$T/$who.out"
	eval "PID_$who=\$LAST_PID"
	wait_line "$T/$who.out" '^subscribed'
done
pub0=$(sstat .handoff.published)
run_sim --batches 40 --rate 10kpps --quiet
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $((pub0 + 40)) and .handoff.open_bufs == 0"
wait_consumers "[.consumers[] | select(.mode == \"shared\") | .released] | add == 40"
expect_eq "broadcast b1 delivered" "$(consumer "$PID_b1" delivered)" 40
expect_eq "broadcast b2 delivered" "$(consumer "$PID_b2" delivered)" 40
expect_eq "member s1 delivered (round robin)" "$(consumer "$PID_s1" delivered)" 20
expect_eq "member s2 delivered (round robin)" "$(consumer "$PID_s2" delivered)" 20
stop_daemon
echo "ok"
