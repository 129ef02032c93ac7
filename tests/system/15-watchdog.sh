#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The systemd watchdog is fed only while every RX worker's heartbeat
# advances: with a worker wedged (the test-only DAQIRID_TEST_WEDGE_WORKER
# hook; it stops beating after its first burst), `daqirictl status` shows
# it stale and WATCHDOG=1 stops, while the main thread still answers. Also:
# every thread of the daemon has TERM/INT/HUP blocked (main() blocks them
# before anything can start a thread), and the orderly stop still works.
# Waits are bounded and ordered by the daemon's own heartbeat age, not by
# wall-clock thresholds.
. tests/system/lib.sh

WD_USEC=1000000		# systemd feeds are due every 500 ms
WD_MS=$((WD_USEC / 1000))
make_config

bg "$BUILD/tests/sdnotify-recv" "$T/notify" 120 > "$T/notify.log"
i=0
while [ ! -S "$T/notify" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "notify listener did not start"
	sleep 0.05
done
# WATCHDOG_PID must be the daemon's: the shell sets it to its own pid and
# execs daqirid, which keeps that pid.
# shellcheck disable=SC2016 # $$ and $0 are for the inner shell
NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=$WD_USEC DAQIRID_TEST_WEDGE_WORKER=q0 \
	bg sh -c 'WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$0" "$@"' \
	"$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" -l info 2> "$T/daemon.log"
DAEMON_PID=$LAST_PID
wait_ready

note "every thread blocks TERM, INT and HUP"
nthreads=0
for st in /proc/"$DAEMON_PID"/task/*/status; do
	blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$st")
	name=$(sed -n 's/^Name:[[:space:]]*//p' "$st")
	# bit n-1 is signal n: HUP 1, INT 2, TERM 15
	[ $((0x$blk & 0x4003)) -eq $((0x4003)) ] ||
		fail "thread '$name' ($st) has SigBlk $blk: TERM/INT/HUP not all blocked"
	nthreads=$((nthreads + 1))
done
[ "$nthreads" -ge 2 ] || fail "expected the main thread and a worker, found $nthreads threads"
echo "   ok  $nthreads threads, all block TERM/INT/HUP"

wd_count() {
	grep -c '^WATCHDOG=1$' "$T/notify.log" || true
}
age() {
	ctl -j status | jq -r '.workers[] | select(.queue == "sensor0/q0") | .heartbeat_age_ms'
}

note "healthy: WATCHDOG=1 arrives, status shows the worker fresh"
i=0
while [ "$(wd_count)" -lt 3 ]; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "fewer than 3 WATCHDOG=1 within 10 s"
	sleep 0.05
done
ctl -j status | jq -e '.workers | length == 1' > /dev/null || fail "status lists no workers"
ctl -j status | jq -e '.workers[0].queue == "sensor0/q0" and (.workers[0].heartbeat_age_ms | type) == "number"' \
	> /dev/null || fail "status worker record: $(ctl -j status | jq -c .workers)"
[ "$(ctl -j status | jq -r .watchdog_ms)" = "$WD_MS" ] || fail "status watchdog_ms is not $WD_MS"
ctl -j status | jq -e '.workers[0].stale == false and .watchdog_fed == true' > /dev/null ||
	fail "a healthy worker is not shown fresh and fed: $(ctl -j status | jq -c '{watchdog_fed, workers}')"
ctl status | grep -q 'HEARTBEAT_AGE_MS' || fail "daqirictl status does not show the heartbeat"
grep -q 'heartbeat has not advanced' "$T/daemon.log" && fail "a healthy worker was reported stuck"

note "one burst wedges worker q0"
run_sim --batches 1
i=0
while [ "$(ctl -j status | jq -r '.workers[0].stale')" != true ]; do
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "daqirid died"
	i=$((i + 1)); [ $i -lt 400 ] || fail "worker never shown stale within 20 s"
	sleep 0.05
done
grep -q 'DAQIRID_TEST_WEDGE_WORKER' "$T/daemon.log" || fail "the wedge hook did not fire"
n0=$(wd_count)
note "stale after $n0 WATCHDOG=1; status says: $(ctl status | grep -A2 HEARTBEAT | tr '\n' ' ')"

# Let three watchdog intervals pass by the daemon's clock, twice.
wait_age() {
	i=0
	while [ "$(age)" -lt "$1" ]; do
		i=$((i + 1)); [ $i -lt 600 ] || fail "heartbeat age never reached $1 ms"
		sleep 0.05
	done
}
wait_age $((3 * WD_MS))
n1=$(wd_count)
wait_age $((6 * WD_MS))
n2=$(wd_count)
# One feed may have been on its way when status first said stale.
[ "$n1" -le $((n0 + 1)) ] || fail "WATCHDOG=1 went on after the worker was stale: $n0 then $n1"
expect_eq "WATCHDOG=1 over three more watchdog intervals" "$n2" "$n1"
grep -q "queue 'sensor0/q0': its RX worker's heartbeat has not advanced" "$T/daemon.log" ||
	fail "no log line naming the stuck worker"
[ "$(grep -c 'heartbeat has not advanced' "$T/daemon.log")" -eq 1 ] || fail "stuck worker logged more than once"
ctl status > /dev/null || fail "daqirictl status does not answer"
[ "$(ctl -j status | jq -r .watchdog_fed)" = false ] || fail "status says the watchdog is fed"

note "SIGTERM still stops it in order"
stop_daemon

# Before the fix, TERM was blocked only in the main-loop set-up: a SIGTERM
# during start-up (here: while daqirid waits on DAQIRID_TEST_START_FIFO,
# just before it reads its config, so the moment is certain) took the
# default action and killed it unannounced.
note "SIGTERM during start-up: kept pending, then an orderly stop"
rm -f "$T/notify"
bg "$BUILD/tests/sdnotify-recv" "$T/notify" 60 > "$T/notify2.log"
i=0
while [ ! -S "$T/notify" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "notify listener did not start"
	sleep 0.05
done
mkfifo "$T/start.fifo"
DAQIRID_TEST_START_FIFO=$T/start.fifo NOTIFY_SOCKET=$T/notify \
	bg "$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" -l info 2> "$T/daemon2.log"
DAEMON_PID=$LAST_PID
exec 3> "$T/start.fifo"		# returns once daqirid has opened it
kill -TERM "$DAEMON_PID"
exec 3>&-
i=0
while kill -0 "$DAEMON_PID" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "daqirid did not stop within 10 s of its start"
	sleep 0.05
done
rc=0
wait "$DAEMON_PID" || rc=$?
expect_eq "exit status after a SIGTERM during start-up" "$rc" 0
i=0
while ! grep -q '^STOPPING=1$' "$T/notify2.log"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "no STOPPING=1: $(cat "$T/notify2.log")"
	sleep 0.05
done
grep -q '^READY=1$' "$T/notify2.log" || fail "no READY=1 before the stop"
echo "ok"
