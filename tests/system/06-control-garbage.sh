#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# 1,000 random and malformed control messages over many connections:
# each is answered with a non-ok status or its connection is closed, no
# fd sent along is kept, the daemon's request and error counters match
# what was sent, and afterwards the daemon still answers, holds no more
# file descriptors than before and still delivers tensors.
. tests/system/lib.sh

start_daemon
# settle: the start-up check's connection is closed
sleep 0.2
fds0=$(ls "/proc/$DAEMON_PID/fd" | wc -l)

note "1000 messages"
"$BUILD/tests/ctl-garbage" "$SOCK" 1000 7 > "$T/garbage.out" 2>&1 || {
	cat "$T/garbage.out"
	fail "ctl-garbage"
}
sed 's/^/   | /' "$T/garbage.out"
expect_eq "messages sent" "$(kv "$T/garbage.out" sent)" 1000
expect_eq "answered or closed" $(($(kv "$T/garbage.out" replied) + $(kv "$T/garbage.out" closed))) 1000
expect_eq "wrong answers" "$(kv "$T/garbage.out" wrong)" 0
expect_eq "unanswered" "$(kv "$T/garbage.out" unanswered)" 0
expect_eq "fds kept by the daemon" "$(kv "$T/garbage.out" fd_leaks)" 0

kill -0 "$DAEMON_PID" || fail "daqirid died"
[ "$(ctl -j status | jq -r .state)" = running ] || fail "status does not say running"
# Connections close asynchronously: the count must come back, soon.
i=0
while fds1=$(ls "/proc/$DAEMON_PID/fd" | wc -l) && [ "$fds1" -ne "$fds0" ] && [ $i -lt 100 ]; do
	i=$((i + 1)); sleep 0.05
done
expect_eq "daemon's open fds (before vs after)" "$fds1" "$fds0"

note "the data path still works"
bg "$BUILD/tests/good-consumer" -s "$SOCK" "$STREAM" > "$T/good.out"
GOOD=$LAST_PID
wait_line "$T/good.out" '^subscribed'
run_sim --batches 5 --rate 20kpps --quiet
wait_consumers "[.consumers[] | select(.pid == $GOOD)][0] | .released == 5"
kill -TERM "$GOOD"
wait_gone "$GOOD"
expect_eq "consumer got" "$(kv "$T/good.out" got)" 5
stop_daemon
echo "ok"
