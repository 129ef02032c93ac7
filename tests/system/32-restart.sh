#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Restart-transparent consumers: a C consumer (daqiri-consume --reconnect
# --verify), the same lossless (--lossless: re-subscribed lossless after
# each restart) and a Python one (reconnect, the default) keep running while
# the daemon is killed (SIGKILL) and started again, then stopped
# (SIGTERM) and started again, on the same socket and port. Each sees
# exactly one RESTART tensor per restart, every element of every tensor
# is the pattern, a tensor held across a restart reads the same after it,
# and the accounting holds for every daemon instance. Last, a new daemon
# whose stream has another dtype: both get an error naming the change.
. tests/system/lib.sh

PY=/usr/bin/python3
"$PY" -c 'import numpy' 2>/dev/null || { echo "skip: no numpy for $PY"; exit 77; }
[ -e "$BUILD/python" ] || { echo "skip: no Python module built"; exit 77; }
B=6
PPB=128

# restart_daemon SIG: end the daemon with SIG, start a new one on the
# same socket, port and config (a notify listener of its own).
restart_daemon() {
	if [ "$1" = TERM ]; then
		stop_daemon
	else
		kill -"$1" "$DAEMON_PID"
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	kill "$NOTIFY_PID" 2>/dev/null || true
	wait "$NOTIFY_PID" 2>/dev/null || true
	rm -f "$T/notify" "$T/notify.log"
	start_daemon
}

# phase N: the three consumers on the new daemon, B batches, the
# accounting of this instance, N tensors in all at each consumer.
phase() {
	wait_consumers "(.consumers | length) == 3 and (.consumers | map(.state != \"new\") | all)"
	expect_eq "lossless subscriptions" "$(ctl -j consumers | jq '[.consumers[] | select(.policy == "lossless")] | length')" 1
	inst=$(sed -n 's/.*control: daemon instance \([0-9a-f]*\).*/\1/p' "$T/daemon.log")
	note "instance $inst: $B batches"
	run_sim --batches $B --rate 20kpps --quiet
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $B and .handoff.open_bufs == 0"
	wait_consumers "(.consumers | length) == 3 and (.consumers | map(.delivered == $B) | all)"
	read_stream
	expect_eq "rx_packets + kernel = sim sent" $((i_rx_packets + i_kernel)) "$(sim_field sent)"
	expect_eq "published" "$h_published" $B
	expect_eq "complete + timeout + evicted = published" \
		$((r_batches_complete + r_batches_timeout + r_batches_evicted)) "$h_published"
	expect_eq "placed + missing_slots = ppb x published" \
		$((r_placed + r_missing_slots)) $((PPB * h_published))
	expect_eq "overruns" "$(ctl -j consumers | jq '[.consumers[].overruns] | add')" 0
	n=$(grep -c "^tensor .*instance=$inst" "$T/py.out" || true)
	expect_eq "Python consumer: tensors of instance $inst" "$n" $B
}

start_daemon
bg "$BUILD/daqiri-consume" -s "$SOCK" --reconnect --verify "$STREAM" > "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
bg "$BUILD/daqiri-consume" -s "$SOCK" --reconnect --lossless --verify "$STREAM" > "$T/l.out" 2> "$T/l.err"
L=$LAST_PID
PYTHONPATH=$BUILD/python bg "$PY" tests/system/restart-consumer.py "$SOCK" "$STREAM" > "$T/py.out" 2> "$T/py.err"
P=$LAST_PID
wait_line "$T/py.out" '^subscribed'
phase

note "SIGKILL and start again"
restart_daemon KILL
phase
note "SIGTERM and start again"
restart_daemon TERM
phase

expect_eq "C consumer: restarts seen" "$(grep -c 'the daemon restarted' "$T/c.err")" 2
expect_eq "lossless consumer: restarts seen" "$(grep -c 'the daemon restarted' "$T/l.err")" 2
expect_eq "Python consumer: RESTART tensors" "$(grep -c '^restart ' "$T/py.out")" 2
expect_eq "Python consumer: distinct instances" \
	"$(sed -n 's/^tensor .*instance=\([0-9a-f]*\)/\1/p' "$T/py.out" | sort -u | wc -l)" 3

note "a new daemon with int8 instead of fp16 for the stream"
stop_daemon
kill "$NOTIFY_PID" 2>/dev/null || true
wait "$NOTIFY_PID" 2>/dev/null || true
rm -f "$T/notify" "$T/notify.log"
make_config -e 's/output_type: fp16/output_type: int8/'
start_daemon
wait_gone "$C" 20
expect_eq "C consumer exit" "$GONE_RC" 1
grep -q 'stream "sensor0/sensor_tensor" changed when the daemon restarted: dtype fp16 -> int8' "$T/c.err" ||
	fail "C consumer: no error naming the change: $(cat "$T/c.err")"
wait_gone "$L" 20
expect_eq "lossless consumer exit" "$GONE_RC" 1
grep -q 'stream "sensor0/sensor_tensor" changed when the daemon restarted: dtype fp16 -> int8' "$T/l.err" ||
	fail "lossless consumer: no error naming the change: $(cat "$T/l.err")"
wait_gone "$P" 20
expect_eq "Python consumer exit" "$GONE_RC" 0
grep -q "^py .*end=error errno=116 .*dtype fp16 -> int8" "$T/py.out" ||
	fail "Python consumer: no ESTALE naming the change: $(tail -2 "$T/py.out")"
wait_consumers "(.consumers | length) == 0"
note "no subscription left on the new daemon"

expect_eq "C consumer: RESTART tensors" "$(grep -c '^seq .*RESTART' "$T/c.out")" 2
expect_eq "C consumer: RESTART tensors are seq 0" "$(grep '^seq .*RESTART' "$T/c.out" | grep -vc '^seq 0 ' || true)" 0
sum=$(grep 'daqiri-consume: .*: tensors' "$T/c.err")
note "$sum"
expect_eq "C consumer: tensors" "$(echo "$sum" | sed -n 's/.*tensors \([0-9]*\),.*/\1/p')" $((3 * B))
expect_eq "C consumer: errors" "$(echo "$sum" | sed -n 's/.*errors \([0-9]*\).*/\1/p')" 0
expect_eq "C consumer: restarts" "$(echo "$sum" | sed -n 's/.*restarts \([0-9]*\).*/\1/p')" 2
expect_eq "C consumer: held across a restart and checked" \
	"$(echo "$sum" | sed -n 's/.*checked again \([0-9]*\).*/\1/p')" 2
expect_eq "C consumer: verified elements" \
	"$(echo "$sum" | sed -n 's/.*verified elements \([0-9]*\).*/\1/p')" $((3 * B * PPB * 16000))
lsum=$(grep 'daqiri-consume: .*: tensors' "$T/l.err")
note "$lsum"
expect_eq "lossless consumer: tensors" "$(echo "$lsum" | sed -n 's/.*tensors \([0-9]*\),.*/\1/p')" $((3 * B))
expect_eq "lossless consumer: errors" "$(echo "$lsum" | sed -n 's/.*errors \([0-9]*\).*/\1/p')" 0
expect_eq "lossless consumer: restarts" "$(echo "$lsum" | sed -n 's/.*restarts \([0-9]*\).*/\1/p')" 2
expect_eq "lossless consumer: RESTART tensors" "$(grep -c '^seq .*RESTART' "$T/l.out")" 2
expect_eq "Python consumer: tensors" "$(kv "$T/py.out" tensors)" $((3 * B))
expect_eq "Python consumer: errors" "$(kv "$T/py.out" errors)" 0
expect_eq "Python consumer: held across a restart and checked" "$(kv "$T/py.out" rechecked)" 2
echo "ok"
