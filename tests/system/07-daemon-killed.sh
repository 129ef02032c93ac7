#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The daemon killed with SIGKILL: every consumer, asleep on its wake-up socket,
# busy-polling or holding tensors, gets -ENOTCONN within a second. Then
# an orderly stop (SIGTERM): the batches still open are flushed to the
# consumer before it gets -ENOTCONN, so no tensor is lost at shutdown.
. tests/system/lib.sh

start_daemon
bg "$BUILD/tests/good-consumer" -s "$SOCK" "$STREAM" > "$T/block.out"
C1=$LAST_PID
bg "$BUILD/tests/good-consumer" -s "$SOCK" --busy-poll "$STREAM" > "$T/busy.out"
C2=$LAST_PID
bg "$BUILD/tests/bad-consumer" -s "$SOCK" --max-held 2 --hold "$STREAM" > "$T/hold.out"
C3=$LAST_PID
for f in block busy hold; do wait_line "$T/$f.out" '^subscribed'; done
run_sim --batches 5 --rate 20kpps --quiet
wait_consumers "[.consumers[] | select(.pid == $C1 or .pid == $C2)] | map(.released == 5) | all"
wait_line "$T/hold.out" '^held got=2 '

note "SIGKILL to the daemon"
t0=$(date +%s%N)
kill -KILL "$DAEMON_PID"
for c in block:$C1 busy:$C2 hold:$C3; do
	name=${c%%:*}; pid=${c#*:}
	wait_gone "$pid" 5
	f=$T/$name.out
	expect_eq "$name: exit" "$GONE_RC" 0
	expect_eq "$name: how it ended" "$(kv "$f" end)" ENOTCONN
	ms=$(( ($(kv "$f" end_ns) - t0) / 1000000 ))
	note "$name: -ENOTCONN $ms ms after the kill"
	[ "$ms" -ge 0 ] && [ "$ms" -lt 1000 ] || fail "$name: -ENOTCONN after $ms ms, not within a second"
done
expect_eq "blocking consumer got" "$(kv "$T/block.out" got)" 5
expect_eq "busy-polling consumer got" "$(kv "$T/busy.out" got)" 5
wait "$DAEMON_PID" 2>/dev/null || true

note "SIGTERM: open batches are flushed to the consumer first"
# No deadline comes before the stop: what is open at SIGTERM is flushed.
make_config -e 's/timeout_us: 100000 /timeout_us: 60000000 /'
start_daemon
bg "$BUILD/tests/good-consumer" -s "$SOCK" "$STREAM" > "$T/flush.out"
C4=$LAST_PID
wait_line "$T/flush.out" '^subscribed'
B=20
run_sim --batches $B --seed 11 --shuffle 64 --loss 0.01 --rate 20kpps
last_lossy=$(sed -n 's/^dropped seq=[0-9]* batch=\([0-9]*\) .*/\1/p' "$T/sim.out" | tail -1)
expect_eq "the seed drops a packet of the last batch" "$last_lossy" $((B - 1))
dropped=$(sim_field dropped)
wait_for ".interfaces[0].rx_packets == $(sim_field sent)"
open=$(sstat .handoff.open_bufs)
[ "$open" -ge 1 ] || fail "no batch open before the stop"
expect_eq "kernel drops" "$(stat '.interfaces[0].kernel')" 0
stop_daemon
wait_gone "$C4" 5
f=$T/flush.out
expect_eq "consumer exit" "$GONE_RC" 0
expect_eq "how it ended" "$(kv "$f" end)" ENOTCONN
expect_eq "tensors (every batch)" "$(kv "$f" got)" $B
expect_eq "flushed tensors = batches open at the stop" "$(kv "$f" flush)" "$open"
expect_eq "missing slots = sim dropped" "$(kv "$f" missing_slots)" "$dropped"
expect_eq "missed seqs" "$(kv "$f" missed)" 0
echo "ok"
