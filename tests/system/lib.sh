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
DAEMON_PREFIX=${DAEMON_PREFIX:-}

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

# make_config [sed expressions...]: the default config on our port. The
# shipped socket_group "daqiri" exists only where systemd-sysusers made
# it; unless a test's own expressions change it, the socket keeps the
# daemon's group, without the warning a missing group gives.
make_config() {
	sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
		"$@" -e 's/socket_group: daqiri /socket_group: "" /' \
		etc/daqirid.yaml > "$T/daqirid.yaml"
	"$BUILD/daqirid" -n -c "$T/daqirid.yaml" >/dev/null || fail "test config invalid"
}

# start_daemon: run daqirid with a notify socket of ours; wait for READY=1.
# $T/daqirid.yaml is the config (make_config's unless the test wrote one);
# DAEMON_PREFIX, when set, is words run before daqirid (e.g. "ip netns
# exec NS", which execs it: the pid stays the daemon's); DAEMON_ARGS,
# words after its own options (e.g. --replay ...).
start_daemon() {
	[ -f "$T/daqirid.yaml" ] || make_config
	bg "$BUILD/tests/sdnotify-recv" "$T/notify" 30 > "$T/notify.log"
	NOTIFY_PID=$LAST_PID
	i=0
	while [ ! -S "$T/notify" ]; do
		i=$((i + 1)); [ $i -lt 100 ] || fail "notify listener did not start"
		sleep 0.05
	done
	# shellcheck disable=SC2086 # DAEMON_PREFIX is words on purpose
	# shellcheck disable=SC2086 # DAEMON_ARGS too
	NOTIFY_SOCKET=$T/notify bg $DAEMON_PREFIX "$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$SOCK" -l info ${DAEMON_ARGS:-} 2> "$T/daemon.log"
	DAEMON_PID=$LAST_PID
	wait_ready
}

# Wait (30 s at most: DPDK's EAL under ASan, loading its drivers on a
# busy machine, was seen to take more than 10) for READY=1 from
# $DAEMON_PID on $T/notify.log.
wait_ready() {
	i=0
	while ! grep -q '^READY=1$' "$T/notify.log" 2>/dev/null; do
		kill -0 "$DAEMON_PID" 2>/dev/null || fail "daqirid exited during start-up"
		i=$((i + 1)); [ $i -lt 600 ] || fail "no READY=1 within 30 s"
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
	forget "$DAEMON_PID"
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

# ---- added for tests 02-08 ----------------------------------------------

STREAM=sensor0/sensor_tensor

# sstat JQ-EXPR: one value from the stats of $STREAM.
sstat() {
	ctl -j stats | jq -r --arg s "$STREAM" ".streams[] | select(.name == \$s) | $1"
}

# read_stream: counters of $STREAM and of interface 0 as shell variables:
# r_<reorder counter>, h_<handoff counter>, i_<interface counter>.
read_stream() {
	# Nothing from an earlier call survives: a stream that is gone must
	# not read as its old counters.
	# shellcheck disable=SC2046 # the names, one word each
	unset $(set | sed -n 's/^\([rhi]_[a-z0-9_]*\)=.*/\1/p')
	eval "$(ctl -j stats | jq -r --arg s "$STREAM" '
		(.streams[] | select(.name == $s) |
		 (.reorder | to_entries[] | "r_\(.key)=\(.value)"),
		 (.handoff | to_entries[] | "h_\(.key)=\(.value)")),
		(.interfaces[0] | to_entries[] | select(.value | type == "number") |
		 "i_\(.key)=\(.value)")')"
	[ -n "${r_packets_in:-}" ] || fail "read_stream: no reorder counters of $STREAM in stats"
}

# consumer PID FIELD: a field of that process's subscription ("" if none).
consumer() {
	ctl -j consumers | jq -r --argjson p "$1" \
		"[.consumers[] | select(.pid == \$p)][0] // {} | .$2 // empty"
}

# wait_consumers JQ-CONDITION [seconds]: until `consumers` satisfies it
# and no subscription is still "new" (answered, but not yet taken up by
# its receive thread: a tensor published then reaches it not).
wait_consumers() {
	i=0
	lim=$(( ${2:-10} * 20 ))
	while [ "$(ctl -j consumers | jq -r "($1) and ([.consumers[] | select(.state == \"new\")] | length == 0)")" != "true" ]; do
		i=$((i + 1)); [ $i -lt $lim ] || fail "timed out waiting for: $1"
		sleep 0.05
	done
}

# wait_line FILE REGEX [seconds]: until a line of FILE matches.
wait_line() {
	i=0
	lim=$(( ${3:-10} * 20 ))
	while ! grep -q -E "$2" "$1" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt $lim ] || fail "timed out waiting for '$2' in $1"
		sleep 0.05
	done
}

# wait_gone PID [seconds]: until a process we started has exited; its
# exit status in $GONE_RC.
wait_gone() {
	i=0
	lim=$(( ${2:-10} * 20 ))
	while kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt $lim ] || fail "process $1 did not exit"
		sleep 0.05
	done
	GONE_RC=0
	wait "$1" || GONE_RC=$?
	forget "$1"
}

# forget PID: a process we started and reaped leaves $PIDS, so cleanup's
# kill -9 cannot reach whatever later takes its pid.
forget() {
	PIDS=$(echo " $PIDS " | sed "s/ $1 / /g")
}

# run_sim ARGS...: the simulator on the test config, output in $T/sim.out.
run_sim() {
	"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" "$@" > "$T/sim.out" ||
		fail "daqiri-sim $* failed"
	note "$(grep '^sim sent=' "$T/sim.out")"
}

# tap_bg NAME ARGS...: daqirictl ARGS (learn or capture of sensor0/q0)
# in the background, stdout in $T/NAME.out and stderr in $T/NAME.err,
# once its tap is on (the daemon logs it; taps before this one are
# skipped); its pid in $TAPPER.
tap_bg() {
	tb_name=$1
	shift
	n0=$(grep -c "taps rx queue 'sensor0/q0'" "$T/daemon.log" || true)
	bg "$BUILD/daqirictl" -s "$SOCK" "$@" > "$T/$tb_name.out" 2> "$T/$tb_name.err"
	TAPPER=$LAST_PID
	i=0
	until [ "$(grep -c "taps rx queue 'sensor0/q0'" "$T/daemon.log")" -gt "$n0" ]; do
		kill -0 "$TAPPER" 2>/dev/null || fail "daqirictl $* exited: $(cat "$T/$tb_name.err")"
		i=$((i + 1)); [ $i -lt 400 ] || fail "no tap within 20 s"
		sleep 0.05
	done
}

# kv FILE NAME: NAME=value from the last line of FILE that has it.
kv() {
	sed -n 's/.*\b'"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got $2, want $3"
	echo "   ok  $1 = $3"
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# veth_pair: two network namespaces $NSD and $NSS joined by a veth pair
# ($VD in $NSD, $VS in $NSS), both ends up, no IPv6 chatter (router
# solicitations, DAD) on the wire a test counts; nsd/nss run a command in
# each. Skips (77) where namespaces or veth pairs are not permitted; the
# namespaces go at exit with the test's other cleanup.
veth_pair() {
	[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
	command -v ip >/dev/null 2>&1 || skip "no ip(8)"
	trap netns_cleanup EXIT INT TERM
	ip netns add "$NSD" 2>/dev/null || skip "network namespaces not permitted here"
	ip netns exec "$NSD" true 2>/dev/null ||
		skip "cannot enter network namespaces here (ip netns exec failed)"
	ip netns add "$NSS" || fail "second namespace"
	ip link add "$VD" netns "$NSD" type veth peer name "$VS" netns "$NSS" 2>/dev/null ||
		skip "veth pairs not permitted here"
	nsd sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	nss sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	nsd ip link set "$VD" up
	nss ip link set "$VS" up
}
nsd() { ip netns exec "$NSD" "$@"; }
nss() { ip netns exec "$NSS" "$@"; }
netns_cleanup() {
	cleanup
	ip netns del "$NSD" 2>/dev/null || true
	ip netns del "$NSS" 2>/dev/null || true
}

# add_tx_queue KIND NBUFS BUFSZ [PACING_MBPS]: $T/daqirid.yaml gains a
# region tx_frames of KIND (NBUFS buffers of BUFSZ bytes) and a tx queue
# t0 in it that sends to 127.0.0.1:$TXPORT (socket_config.remote_addr);
# the result must pass -n.
add_tx_queue() {
	awk -v txport="$TXPORT" -v kind="$1" -v nbufs="$2" -v bufsz="$3" \
	    -v mbps="${4:-}" '
/^    - name: tensors / {
	print "    - name: tx_frames"
	print "      kind: " kind
	print "      affinity: 0"
	print "      num_bufs: " nbufs
	print "      buf_size: " bufsz
}
/^      rx:$/ {
	print "      tx:"
	print "        queues:"
	print "        - name: t0"
	print "          id: 0"
	print "          batch_size: 32"
	print "          memory_regions: [tx_frames]"
	if (mbps != "")
		print "          pacing_mbps: " mbps
}
{ print }
/^        local_addr: udp:/ {
	print "        remote_addr: udp://127.0.0.1:" txport
}' "$T/daqirid.yaml" > "$T/tx.yaml"
	"$BUILD/daqirid" -n -c "$T/tx.yaml" > "$T/n.out" 2>&1 ||
		fail "tx test config invalid: $(head -3 "$T/n.out")"
	mv "$T/tx.yaml" "$T/daqirid.yaml"
}

# consume NAME N: a verifying consumer of $STREAM, N tensors (0: until
# stopped), its baseline taken (the banner follows it) and its
# subscription taken up by the worker; its pid in $C. $CONSUME_OPTS:
# more options (--lossless: a consumer slowed down, under ASan, still
# gets every tensor).
consume() {
	n=""
	[ "$2" -eq 0 ] || n="--count $2"
	# shellcheck disable=SC2086 # $n and $CONSUME_OPTS are words on purpose
	bg "$BUILD/daqiri-consume" -s "$SOCK" --verify $n ${CONSUME_OPTS:-} --timeout 30 "$STREAM" \
		> "$T/$1.out" 2> "$T/$1.err"
	C=$LAST_PID
	wait_line "$T/$1.err" ' buffers, .* memory, ring '
	wait_consumers "[.consumers[] | select(.pid == $C)][0].state == \"active\""
}

# consumed NAME N: it exited 0 after N tensors, every element verified.
consumed() {
	wait_gone "$C" 30
	sed 's/^/   | /' "$T/$1.err"
	expect_eq "$1: daqiri-consume exit" "$GONE_RC" 0
	expect_eq "$1: tensors" "$(sed -n 's/.*: tensors \([0-9]*\),.*/\1/p' "$T/$1.err")" "$2"
	expect_eq "$1: verification errors" "$(sed -n 's/.*, errors \([0-9]*\).*/\1/p' "$T/$1.err")" 0
}

# ---- daqiri-relay (tests 57-60) -------------------------------------------

# relay_setup: skip where there is no relay (HAVE_UCX=0); UCX over TCP
# only (loopback; no shared-memory transport between the test's
# processes); the relay's port, /metrics port and URL next to ours.
relay_setup() {
	[ -x "$BUILD/daqiri-relay" ] || skip "built without UCX (HAVE_UCX=0)"
	export UCX_TLS=tcp
	RPORT=$(( PORT + 1 ))
	MPORT=$(( PORT + 2 ))
	URL=ucx://127.0.0.1:$RPORT
}

# relay_bg ARGS...: daqiri-relay on our daemon, listening on $URL, with
# ARGS; $RELAY_PREFIX words before it (e.g. the CUDA stand-in); its log
# appended to $T/relay.log; its pid in $RELAY once it listens.
relay_bg() {
	rb_n=$(grep -c 'listening on' "$T/relay.log" 2>/dev/null || true)
	# shellcheck disable=SC2086 # RELAY_PREFIX is words on purpose
	bg ${RELAY_PREFIX:-} "$BUILD/daqiri-relay" -s "$SOCK" --listen "$URL" "$@" 2>> "$T/relay.log"
	RELAY=$LAST_PID
	i=0
	until [ "$(grep -c 'listening on' "$T/relay.log" 2>/dev/null || true)" -gt "${rb_n:-0}" ]; do
		kill -0 "$RELAY" 2>/dev/null || fail "daqiri-relay exited: $(tail -3 "$T/relay.log")"
		i=$((i + 1)); [ $i -lt 400 ] || fail "daqiri-relay did not listen within 20 s"
		sleep 0.05
	done
}
