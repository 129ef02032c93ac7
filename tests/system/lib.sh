# SPDX-License-Identifier: Apache-2.0
# Shared by the system tests: a private directory, a daemon on a private
# socket and UDP port, helpers to read its stats, and cleanup of every
# process a test started. Source it; the test then calls start_daemon.
set -eu
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/daqiri-systest.XXXXXX)
PIDS=""
DAEMON_PID=""
SOCK=$T/daqirid.sock
# A port of our own on loopback, so tests never meet each other.
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))

cleanup() {
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/daemon.log" ] && { echo "--- daemon log:" >&2; tail -30 "$T/daemon.log" >&2; }
	exit 1
}

note() {
	echo "== $*"
}

bg() {
	"$@" &
	PIDS="$PIDS $!"
	LAST_PID=$!
}

# make_config [sed expressions...]: the default config on our port.
make_config() {
	sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
		"$@" etc/daqirid.yaml > "$T/daqirid.yaml"
	"$BUILD/daqirid" -n -c "$T/daqirid.yaml" >/dev/null || fail "test config invalid"
}

# start_daemon: run daqirid with a notify socket of ours; wait for READY=1.
start_daemon() {
	[ -f "$T/daqirid.yaml" ] || make_config
	bg "$BUILD/tests/sdnotify-recv" "$T/notify" 30 > "$T/notify.log"
	NOTIFY_PID=$LAST_PID
	i=0
	while [ ! -S "$T/notify" ]; do
		i=$((i + 1)); [ $i -lt 100 ] || fail "notify listener did not start"
		sleep 0.05
	done
	NOTIFY_SOCKET=$T/notify bg "$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" -l info 2> "$T/daemon.log"
	DAEMON_PID=$LAST_PID
	i=0
	while ! grep -q '^READY=1$' "$T/notify.log" 2>/dev/null; do
		kill -0 "$DAEMON_PID" 2>/dev/null || fail "daqirid exited during start-up"
		i=$((i + 1)); [ $i -lt 200 ] || fail "no READY=1 within 10 s"
		sleep 0.05
	done
}

stop_daemon() {
	kill -TERM "$DAEMON_PID"
	i=0
	while kill -0 "$DAEMON_PID" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 200 ] || fail "daqirid did not stop within 10 s of SIGTERM"
		sleep 0.05
	done
	wait "$DAEMON_PID" || fail "daqirid exited non-zero after SIGTERM"
}

ctl() {
	"$BUILD/daqirictl" -s "$SOCK" "$@"
}

# stats JQ-EXPR: one value from `daqirictl -j stats`.
stat() {
	ctl -j stats | jq -r "$1"
}

# wait_for JQ-CONDITION [seconds]: until the stats satisfy it.
wait_for() {
	i=0
	lim=$(( ${2:-10} * 20 ))
	while [ "$(ctl -j stats | jq -r "$1")" != "true" ]; do
		i=$((i + 1)); [ $i -lt $lim ] || fail "timed out waiting for: $1"
		sleep 0.05
	done
}

# Reorder counters of the default stream, as shell variables r_<name>.
read_reorder() {
	eval "$(ctl -j stats | jq -r '.streams[0].reorder | to_entries[] | "r_\(.key)=\(.value)"')"
}

# sim_field NAME: a value from the simulator's closing "sim ..." line.
sim_field() {
	sed -n 's/^sim .*\b'"$1"'=\([0-9.]*\).*/\1/p' "$T/sim.out" | tail -1
}
