#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Start-up and shutdown as systemd sees them: READY=1 with a STATUS line
# once the streams are up, a second daemon on the same socket refused, an
# orderly stop on SIGTERM with STOPPING=1, and a stale socket left by a
# killed daemon replaced by the next one.
. tests/system/lib.sh

start_daemon
grep -q '^STATUS=' "$T/notify.log" || fail "no STATUS= line"
note "ready; status says: $(ctl -j status | jq -c '{state, streams, interfaces}')"
[ "$(ctl -j status | jq -r .state)" = running ] || fail "status is not running"
[ "$(ctl -j streams | jq -r '.streams[0].name')" = sensor0/sensor_tensor ] || fail "stream missing"

note "a second daemon on the same socket must refuse"
if "$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" 2> "$T/second.log"; then
	fail "second daemon started"
fi
grep -q 'another daqirid is listening' "$T/second.log" || { cat "$T/second.log"; fail "no clear message"; }
ctl status > /dev/null || fail "first daemon hurt by the second"

note "SIGTERM: orderly stop"
stop_daemon
i=0
while ! grep -q '^STOPPING=1$' "$T/notify.log"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "no STOPPING=1"
	sleep 0.05
done
[ ! -e "$SOCK" ] || fail "socket file left behind after an orderly stop"

note "stale socket from a killed daemon is replaced"
start_daemon
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
[ -S "$SOCK" ] || fail "expected a stale socket file after SIGKILL"
start_daemon
ctl status > /dev/null || fail "restarted daemon does not answer"
stop_daemon
echo "ok"
