#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Remote consumers survive restarts on the far side (UCX_TLS=tcp on
# loopback): a remote daqiri-consume --reconnect --verify keeps running
# while the relay is killed (SIGKILL) and started again on the same port,
# and while the daemon behind the relay is stopped and started again
# (the relay reconnects to it itself). After each, the first tensor
# carries RESTART, and every tensor of every phase arrives verified.
. tests/system/lib.sh

relay_setup
B=5

# wait_tensors N: until the consumer printed N tensor lines in all.
wait_tensors() {
	i=0
	while [ "$(grep -c '^seq ' "$T/c.out" || true)" -lt "$1" ]; do
		kill -0 "$C" 2>/dev/null || fail "the remote consumer exited: $(tail -3 "$T/c.err")"
		i=$((i + 1)); [ $i -lt 1200 ] || fail "the remote consumer has $(grep -c '^seq ' "$T/c.out") of $1 tensors after 60 s"
		sleep 0.05
	done
}

# phase N: the relay's subscription taken up, B batches, N tensors in all.
phase() {
	wait_consumers "(.consumers | length) == 1 and (.consumers | map(.state == \"active\") | all)" 30
	run_sim --batches $B --rate 20kpps --quiet
	wait_tensors "$1"
	echo "   ok  $1 tensors in all"
}

start_daemon
relay_bg
# line-buffered: its tensor lines are counted while it runs
bg stdbuf -oL "$BUILD/daqiri-consume" -s "$URL" --reconnect --verify "$STREAM" > "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
phase $B

note "the relay killed and started again"
kill -KILL "$RELAY"
wait "$RELAY" 2>/dev/null || true
forget "$RELAY"
relay_bg
phase $((2 * B))

note "the daemon behind the relay stopped and started again"
stop_daemon
kill "$NOTIFY_PID" 2>/dev/null || true
wait "$NOTIFY_PID" 2>/dev/null || true
rm -f "$T/notify" "$T/notify.log"
start_daemon
phase $((3 * B))

kill -INT "$C"
wait_gone "$C" 20
sed 's/^/   | /' "$T/c.err" | tail -4
expect_eq "consumer exit" "$GONE_RC" 0
expect_eq "RESTART tensors" "$(grep -c '^seq .*RESTART' "$T/c.out")" 2
sum=$(grep ': tensors ' "$T/c.err" | tail -1)
expect_eq "tensors" "$(echo "$sum" | sed -n 's/.*: tensors \([0-9]*\),.*/\1/p')" $((3 * B))
expect_eq "verification errors" "$(echo "$sum" | sed -n 's/.*, errors \([0-9]*\).*/\1/p')" 0
kill -0 "$RELAY" || fail "the relay died"
stop_daemon
echo "ok"
