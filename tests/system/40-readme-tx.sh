#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# README.md's "Closing the loop" section as written: its ```sh blocks are
# read from README.md (test 24 walks every other section) and run in
# order against a daemon of ours on etc/examples/tx-closed-loop.yaml,
# moved to ports of this test (its RX port and the simulator's control
# port: the example's 5005 and 5010 are fixed numbers):
#  - `make run CONFIG=...`: the target must take the config (make -n
#    shows scripts/run.sh given it); the daemon is then ours, on it;
#  - the Python example runs in the background (its own terminal in the
#    README) and must subscribe;
#  - the simulator line (with its continuation) runs to its end and must
#    report every decision applied, in order, none missing or bad; then
#    the example's sends are in the daemon's tx counters.
. tests/system/lib.sh

README=README.md
[ -x /usr/bin/python3 ] || fail "no /usr/bin/python3 (scripts/install-deps.sh installs it)"
ls "$BUILD"/python/daqiri*.so > /dev/null 2>&1 ||
	fail "no Python module in $BUILD/python (make python; scripts/install-deps.sh installs python3-dev and libdlpack-dev)"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: a TX channel needs root (or the admin group)"; exit 77; }

CPORT=$(( PORT + 1 ))
[ $CPORT -lt 65536 ] || CPORT=$(( PORT - 1 ))
sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	-e "s/udp_dst: 5010/udp_dst: $CPORT/" \
	-e 's/socket_group: daqiri$/socket_group: ""/' \
	etc/examples/tx-closed-loop.yaml > "$T/daqirid.yaml"
grep -q "udp_dst: $CPORT" "$T/daqirid.yaml" || fail "the example's control port is not 5010 any more"
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null || fail "example config invalid here"

# the section's sh blocks, continuation lines joined
awk '/^## Closing the loop/ { s = 1; next } /^## / { s = 0 }
     s && /^```sh$/ { c = 1; next } /^```$/ { c = 0 } s && c' "$README" |
	sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' > "$T/lines"
[ "$(wc -l < "$T/lines")" -eq 3 ] ||
	fail "README's closing-the-loop section has not the three command lines this test knows: $(cat "$T/lines")"

note "the closing-the-loop section of README.md, line by line"
while IFS= read -r line; do
	cmd=$(echo "$line" | sed -e 's/[[:space:]]#.*//' -e 's/[[:space:]]*$//' -e 's|^build/||')
	echo "   \$ $cmd"
	case "$cmd" in
	"make run CONFIG="*)
		cfg=${cmd#make run CONFIG=}
		[ -f "$cfg" ] || fail "README: no $cfg"
		make -n run CONFIG="$cfg" | grep -q "CONFIG=$cfg sh scripts/run.sh" ||
			fail "make run does not pass CONFIG to scripts/run.sh"
		grep -q '"$CONFIG"' scripts/run.sh || fail "scripts/run.sh ignores CONFIG"
		start_daemon
		echo "     (daqirid on $cfg, our ports)" ;;
	*client/python/examples/closed_loop.py*)
		DAQIRI_SOCKET=$SOCK sh -c "exec env $cmd" > "$T/py.out" 2> "$T/py.err" &
		PY=$!
		PIDS="$PIDS $PY"
		wait_consumers "[.consumers[] | select(.stream == \"sensor0/sensor_tensor\")] | length == 1" ;;
	"daqiri-sim "*)
		args=$(echo "${cmd#daqiri-sim }" | sed -e "s|-c etc/examples/tx-closed-loop.yaml|-c $T/daqirid.yaml|" \
		    -e "s|udp://127.0.0.1:5010|udp://127.0.0.1:$CPORT|")
		# shellcheck disable=SC2086 # the README's words
		"$BUILD/daqiri-sim" $args > "$T/sim.out" 2> "$T/sim.err" ||
			fail "daqiri-sim: $(cat "$T/sim.out" "$T/sim.err")"
		sed 's/^/     | /' "$T/sim.out" | tail -3
		n=$(echo "$args" | sed -n 's/.*--control-expect \([0-9]*\).*/\1/p')
		grep -q "^control applied=$n bad=0 out_of_order=0 missing=0 " "$T/sim.out" ||
			fail "not every decision applied: $(cat "$T/sim.out")" ;;
	*)
		fail "README line this test does not know: $cmd" ;;
	esac
done < "$T/lines"
[ -n "${PY:-}" ] || fail "README does not run the closed-loop example"
expect_eq "decisions the daemon sent" "$(stat '.interfaces[0].tx.queues[0].packets')" "$n"
kill -TERM "$PY"
wait_gone "$PY"
stop_daemon
echo "ok"
