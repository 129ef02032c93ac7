#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What a newcomer reads first: daqirid -n names the file it checked; the
# daemon, at the default log level, logs one start-up line naming the
# config file, each interface and the control socket; daqirictl status
# reports the file actually read, as an absolute path, and a stream count
# that agrees with daqirictl streams.
. tests/system/lib.sh

# socket_group: a group that exists, so the start-up line is the only
# one; as root, one other than our own, so the chown is seen
OWN_GROUP=$(id -gn)
SOCK_GROUP=$OWN_GROUP
if [ "$(id -u)" = 0 ] && getent group daemon > /dev/null; then
	SOCK_GROUP=daemon
fi
make_config -e "s/socket_group: daqiri/socket_group: $SOCK_GROUP/"
grep -q "socket_group: $SOCK_GROUP" "$T/daqirid.yaml" || fail "config has no socket_group daqiri"
B=$(cd "$BUILD" && pwd)

note "--help and --version, like -h and -V: stdout, exit 0"
"$B/daqirid" --help > "$T/help" 2> "$T/help.err" || fail "--help exited non-zero"
[ ! -s "$T/help.err" ] || fail "--help wrote to stderr: $(cat "$T/help.err")"
grep -q '^usage: daqirid ' "$T/help" || fail "--help printed no usage"
"$B/daqirid" -h | cmp -s - "$T/help" || fail "-h and --help differ"
expect_eq "--version" "$("$B/daqirid" --version)" "daqirid $("$B/daqirid" -V | cut -d' ' -f2)"
"$B/daqirid" --version | grep -q '^daqirid [0-9][0-9.]*$' || fail "--version: $("$B/daqirid" --version)"
# every tool says its version the same way (issue "Bring-up")
v=$("$B/daqirid" -V | cut -d' ' -f2)
for tool in daqirictl daqiri-consume daqiri-sim; do
	expect_eq "$tool --version" "$("$B/$tool" --version)" "$tool $v"
	expect_eq "$tool -V" "$("$B/$tool" -V)" "$tool $v"
done
"$B/daqirid" --no-such-option > /dev/null 2> "$T/err" && fail "an unknown long option was accepted"
grep -q "^daqirid: unknown option '--no-such-option'\$" "$T/err" || fail "--no-such-option: $(head -1 "$T/err")"
"$B/daqirid" -c > /dev/null 2> "$T/err" && fail "-c without a file was accepted"
grep -q "^daqirid: -c needs an argument\$" "$T/err" || fail "-c: $(head -1 "$T/err")"

note "-n names the file it checked"
out=$(cd "$T" && "$B/daqirid" -n -c daqirid.yaml) || fail "-n failed"
expect_eq "-n output" "$out" "daqirid.yaml: configuration OK"

note "at the default log level, one start-up line"
bg "$B/tests/sdnotify-recv" "$T/notify" 30 > "$T/notify.log"
i=0
while [ ! -S "$T/notify" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "notify listener did not start"
	sleep 0.05
done
# a relative -c, from the config's directory, and no -l
(cd "$T" && NOTIFY_SOCKET=$T/notify exec "$B/daqirid" -c daqirid.yaml \
	-s "$SOCK" 2> "$T/daemon.log") &
PIDS="$PIDS $!"
DAEMON_PID=$!
wait_ready
abs=$(realpath "$T/daqirid.yaml")
grep -q "^daqirid: daqirid [0-9.]* running: config $abs: interface 'sensor0' socket udp://127.0.0.1:$PORT (1 queue, 2 streams); control $SOCK\$" \
	"$T/daemon.log" || fail "no start-up line: $(cat "$T/daemon.log")"
expect_eq "start-up lines" "$(wc -l < "$T/daemon.log" | tr -d ' ')" 1

note "status reports the file read, absolute"
expect_eq "status config" "$(ctl -j status | jq -r .config)" "$abs"
ctl status | grep -q "^config: $abs\$" || fail "status text: no config line"

note "status counts the streams that streams lists (reorder and raw)"
expect_eq "status streams" "$(ctl -j status | jq .streams)" \
	"$(ctl -j streams | jq '.streams | length')"
expect_eq "streams listed" "$(ctl -j streams | jq '.streams | length')" 2
expect_eq "socket group" "$(command stat -c %G "$SOCK")" "$SOCK_GROUP"
stop_daemon

note "a socket_group that does not exist: a warning, the daemon's own group"
NOGROUP=daqiri-test-no-such-group
! getent group "$NOGROUP" > /dev/null || fail "group $NOGROUP exists here"
make_config -e "s/socket_group: daqiri/socket_group: $NOGROUP/"
start_daemon
grep -q "daemon.socket_group \"$NOGROUP\": no such group; the socket keeps the daemon's group \"$OWN_GROUP\"" \
	"$T/daemon.log" || fail "no warning naming the group: $(cat "$T/daemon.log")"
expect_eq "socket group" "$(command stat -c %G "$SOCK")" "$OWN_GROUP"
ctl status > /dev/null || fail "daemon does not answer"
stop_daemon

note "a receive port another process holds: the error says who to look for"
make_config
mkfifo "$T/held"
# A plain UDP socket on our port, without SO_REUSEPORT, so daqirid's bind
# fails; it says "bound" once it holds the port, then waits for a signal.
bg sh -c 'exec /usr/bin/python3 -c "
import signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((\"127.0.0.1\", int(sys.argv[1])))
print(\"bound\", flush=True)
signal.pause()
" "$1" > "$2"' holder "$PORT" "$T/held"
read -r word < "$T/held"
expect_eq "port holder" "$word" bound
"$B/daqirid" -c "$T/daqirid.yaml" -s "$T/held.sock" > /dev/null 2> "$T/held.log" &&
	fail "daqirid started on a port another process holds"
grep -q "bind udp://127.0.0.1:$PORT: Address already in use (another process receives on it, perhaps another daqirid: 'ss -ulpn' names it" \
	"$T/held.log" || fail "no hint in: $(cat "$T/held.log")"
kill "$LAST_PID"
echo "ok"
