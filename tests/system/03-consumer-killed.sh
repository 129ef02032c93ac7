#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A consumer killed with SIGKILL while it holds buffers: the daemon takes
# them back at once (no further traffic needed), only that consumer's
# buffers come back, and the other consumers carry on unaffected: a
# second holder keeps exactly what it held, a well-behaved consumer sees
# every tensor before, during and after the kill.
. tests/system/lib.sh

NBUFS=32
HELD=8
# Holders keep their buffers for the whole test: no hold timeout.
make_config -e 's/hold_timeout_ms: 10000 /hold_timeout_ms: 0 /'
start_daemon
# 8 + two holders of 8: within the 27 of 32 buffers the window leaves
bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 8 "$STREAM" > "$T/good.out"
GOOD=$LAST_PID
wait_line "$T/good.out" '^subscribed'

# published == N and the good consumer has released all of them
settle() {
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $1 and .handoff.open_bufs == 0"
	wait_consumers "[.consumers[] | select(.pid == $GOOD)][0] | .released == $1"
}

note "holder A takes the first $HELD tensors"
bg "$BUILD/tests/bad-consumer" -s "$SOCK" --max-held $HELD --hold "$STREAM" > "$T/a.out"
A=$LAST_PID
wait_line "$T/a.out" '^subscribed'
run_sim --batches 20 --rate 20kpps
settle 20
wait_line "$T/a.out" "^held got=$HELD "

note "holder B takes the next $HELD"
bg "$BUILD/tests/bad-consumer" -s "$SOCK" --max-held $HELD --hold "$STREAM" > "$T/b.out"
B=$LAST_PID
wait_line "$T/b.out" '^subscribed'
run_sim --batches 20 --rate 20kpps
settle 40
wait_line "$T/b.out" "^held got=$HELD "
expect_eq "A holds" "$(consumer "$A" held)" $HELD
expect_eq "B holds" "$(consumer "$B" held)" $HELD
# A holds tensors 0-7, B tensors 20-27: sixteen different buffers.
expect_eq "buffers held" "$(sstat .handoff.held_bufs)" $((2 * HELD))
expect_eq "buffers free" "$(sstat .handoff.free_bufs)" $((NBUFS - 2 * HELD))

note "SIGKILL to A while the sensor sends"
bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches 60 --rate 20kpps --quiet > "$T/sim-bg.out"
SIM=$LAST_PID
sleep 0.1
kill -KILL "$A"
wait_gone "$SIM" 20
expect_eq "sim exit" "$GONE_RC" 0
settle 100
grep -q "consumer pid $A gone: 1 subscription(s) ended, their buffers returned" "$T/daemon.log" ||
	fail "no log line for the killed consumer"
# (the main thread frees ended subscriptions at its next 100 ms tick)
wait_consumers "[.consumers[] | select(.pid == $A)] | length == 0" 5
expect_eq "B still holds" "$(consumer "$B" held)" $HELD
expect_eq "B state" "$(consumer "$B" state)" active
expect_eq "buffers held (B's only)" "$(sstat .handoff.held_bufs)" $HELD
expect_eq "buffers free" "$(sstat .handoff.free_bufs)" $((NBUFS - HELD))
expect_eq "no_buffer" "$(sstat .reorder.no_buffer)" 0
expect_eq "good consumer delivered" "$(consumer "$GOOD" delivered)" 100
expect_eq "good consumer overruns" "$(consumer "$GOOD" overruns)" 0

note "SIGKILL to B with no traffic: its buffers come back by themselves"
t0=$(date +%s%N)
kill -KILL "$B"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.held_bufs == 0 and .handoff.free_bufs == $NBUFS" 5
t1=$(date +%s%N)
note "buffers back $(( (t1 - t0) / 1000000 )) ms after the kill (stats polled every 50 ms)"
expect_eq "published (nothing new)" "$(sstat .handoff.published)" 100
wait_consumers "[.consumers[] | .pid] == [$GOOD]" 5

note "more traffic; the good consumer saw every tensor"
run_sim --batches 5 --rate 20kpps
settle 105
kill -TERM "$GOOD"
wait_gone "$GOOD"
expect_eq "good consumer exit" "$GONE_RC" 0
expect_eq "good consumer got" "$(kv "$T/good.out" got)" 105
expect_eq "good consumer missed seqs" "$(kv "$T/good.out" missed)" 0
expect_eq "good consumer incomplete tensors" "$(kv "$T/good.out" missing_slots)" 0
stop_daemon
echo "ok"
