#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Admission control as a consumer meets it: one connection holds at most
# daemon.max_subscriptions_per_connection subscriptions, and the
# subscriptions of a stream together at most nbufs - window - 1 = 27 held
# buffers; each refusal names the numbers. A subscription that holds a
# tensor past daemon.hold_timeout_ms is ended with "held too long" and
# its buffers come back, while a good consumer sees every tensor.
. tests/system/lib.sh

NBUFS=32
make_config -e 's/max_subscriptions_per_connection: 16/max_subscriptions_per_connection: 4/' \
	-e 's/hold_timeout_ms: 10000 /hold_timeout_ms: 2000 /'
start_daemon

note "one connection: four subscriptions, then a refusal naming the cap"
bg "$BUILD/tests/sub-caps" -s "$SOCK" -n 10 --max-held 1 "$STREAM" > "$T/caps.out"
CAPS=$LAST_PID
wait_line "$T/caps.out" '^subscriptions '
expect_eq "subscriptions one connection got" "$(kv "$T/caps.out" n)" 4
grep -q '^refused k=4 .*msg=this connection has 4 subscriptions, the most daemon.max_subscriptions_per_connection (4) allows$' "$T/caps.out" ||
	fail "refusal: $(grep '^refused' "$T/caps.out")"

note "another connection: held buffers over the stream's budget are refused"
bg "$BUILD/tests/sub-caps" -s "$SOCK" -n 4 --max-held 12 "$STREAM" > "$T/greedy.out"
GREEDY=$LAST_PID
wait_line "$T/greedy.out" '^subscriptions '
# 4 x 1 + 12 + 12 = 28 > 27
expect_eq "subscriptions the greedy one got" "$(kv "$T/greedy.out" n)" 1
grep -q "^refused k=1 .*msg=stream '$STREAM': max_held 12 would make 28 held buffers, more than the 27 of $NBUFS buffers the reorder window leaves (window 4)$" "$T/greedy.out" ||
	fail "refusal: $(grep '^refused' "$T/greedy.out")"
bg "$BUILD/tests/sub-caps" -s "$SOCK" -n 4 "$STREAM" > "$T/dflt.out"
DFLT=$LAST_PID
wait_line "$T/dflt.out" '^subscriptions '
# no max_held asked: nbufs / 4 = 8 while it fits (11 left), then what
# is left (3), then nothing
expect_eq "default max_held: nbufs / 4" "$(sed -n 's/^subscribed k=0 .*max_held=\([0-9]*\)/\1/p' "$T/dflt.out")" 8
expect_eq "default max_held: what is left" "$(sed -n 's/^subscribed k=1 .*max_held=\([0-9]*\)/\1/p' "$T/dflt.out")" 3
grep -q "^refused k=2 .*msg=stream '$STREAM': no buffers left to hold: its subscriptions hold up to 27, all of the 27 of $NBUFS buffers the reorder window leaves (window 4)$" "$T/dflt.out" ||
	fail "refusal: $(grep '^refused' "$T/dflt.out")"
kill -TERM "$CAPS" "$GREEDY" "$DFLT"
wait_gone "$CAPS"
wait_gone "$GREEDY"
wait_gone "$DFLT"
wait_consumers '.consumers | length == 0' 5

note "a holder past hold_timeout_ms is ended; a good consumer carries on"
bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 8 "$STREAM" > "$T/good.out"
GOOD=$LAST_PID
wait_line "$T/good.out" '^subscribed'
bg "$BUILD/tests/sub-caps" -s "$SOCK" -n 1 --max-held 2 --hold "$STREAM" > "$T/hold.out"
HOLD=$LAST_PID
wait_line "$T/hold.out" '^subscriptions n=1'
run_sim --batches 30 --rate 10kpps --quiet
wait_line "$T/hold.out" '^ended ' 20
grep -q -E "^ended got=2 end=ESHUTDOWN why=.*held too long: buffer [0-9]+ for [0-9]+ ms, more than daemon.hold_timeout_ms 2000$" "$T/hold.out" ||
	fail "holder: $(grep '^ended' "$T/hold.out")"
wait_gone "$HOLD"
grep -q "held too long: buffer [0-9]* for [0-9]* ms" "$T/daemon.log" || fail "no log line for the held-too-long subscription"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.subs_held_too_long == 1 and .handoff.published == 30 and .handoff.held_bufs == 0"
expect_eq "subs_broken (a hold is not a broken ring)" "$(sstat .handoff.subs_broken)" 0
expect_eq "free buffers" "$(sstat .handoff.free_bufs)" $NBUFS
expect_eq "no_buffer" "$(sstat .reorder.no_buffer)" 0
wait_consumers "[.consumers[] | select(.pid == $GOOD)][0] | .released == 30"
expect_eq "good consumer overruns" "$(consumer "$GOOD" overruns)" 0
kill -TERM "$GOOD"
wait_gone "$GOOD"
expect_eq "good consumer exit" "$GONE_RC" 0
expect_eq "good consumer got" "$(kv "$T/good.out" got)" 30
expect_eq "good consumer missed seqs" "$(kv "$T/good.out" missed)" 0
stop_daemon
echo "ok"
