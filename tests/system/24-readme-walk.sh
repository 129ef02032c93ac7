#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# README.md as written: every line of its ```sh blocks, and its C example
# compiled with the README's own cc line, run against a daemon of ours.
# The blocks are read from README.md, so README and test cannot drift.
# How each line is run:
#  - make demo / make check / make install, and lines that need systemd or
#    root (systemd-sysusers, systemd-tmpfiles, systemctl): checked for
#    existence only (`make -n TARGET`, `command -v`, a note where this
#    machine has no systemd). make demo binds the fixed port 5005 and
#    installs packages; make check is the whole suite.
#  - the tools run from $BUILD, find our daemon by $DAQIRI_SOCKET, and
#    daqiri-sim reads the test's config (the default one on our port);
#  - a line ending in `&` runs in the background (in the C example's
#    directory, where the lines after it find its files) and the walk
#    waits until it has subscribed;
#  - the Python examples run from the checkout (`client/python/...`);
#    "Record and look" records lossless: as root only, a note otherwise; `wait` waits for it and wants exit 0;
#  - a tool of the build tree (`build/daqiri-sim`) is the same tool as
#    the lines without the prefix run;
#  - the Python example (`.../consume.py`, a line of its own terminal in
#    the README) runs in the background from the checkout, as its
#    PYTHONPATH=$PWD/build/python wants; after the walk it must have printed a
#    complete line for each of the simulator's batches, then SIGTERM
#    ends it (Ctrl-C is what a person would press);
#  - `./consumer` (the C example) runs in the background, outlives a gap
#    longer than its one-second timeout, receives and releases every
#    tensor two simulated batches publish, and ends
#    with an error message when the daemon stops.
. tests/system/lib.sh

README=README.md
for c in cc pkg-config; do
	command -v "$c" > /dev/null || { echo "SKIP: no $c"; exit 77; }
done
start_daemon
mkdir "$T/bin" "$T/pc" "$T/src"
cat > "$T/bin/daqiri-sim" <<SIM
#!/bin/sh
exec "$PWD/$BUILD/daqiri-sim" -c "$T/daqirid.yaml" "\$@"
SIM
chmod +x "$T/bin/daqiri-sim"
for p in daqirictl daqiri-consume daqiri-record daqirid; do
	ln -s "$PWD/$BUILD/$p" "$T/bin/$p"
done
# The build tree's .pc names the install prefix: the same file, pointed
# at the source and build trees.
sed -e "s|^includedir=.*|includedir=$PWD/client|" -e "s|^libdir=.*|libdir=$PWD/$BUILD|" \
	-e "s|^Cflags: .*|Cflags: -I\${includedir} -I$PWD/proto|" \
	"$BUILD/daqiri-client.pc" > "$T/pc/daqiri-client.pc"
export DAQIRI_SOCKET="$SOCK" PATH="$T/bin:$PATH" PKG_CONFIG_PATH="$T/pc"
# The build tree has the library without its soname link (make install
# makes that): one of ours, for ./consumer to run uninstalled.
mkdir "$T/lib"
ln -s "$PWD/$BUILD/libdaqiri-client.so" "$T/lib/libdaqiri-client.so.0"
export LD_LIBRARY_PATH="$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

note "the sh blocks of README.md, line by line; its C example"
awk '/^```c$/ { c = 1; next } /^```$/ { c = 0 } c' "$README" > "$T/src/consumer.c"
[ -s "$T/src/consumer.c" ] || fail "README.md has no \`\`\`c block"
# (the closing-the-loop section needs a TX config: test 40 walks it)
awk '/^## Closing the loop/ { s = 1 } /^## / && !/^## Closing the loop/ { s = 0 }
     !s && /^```sh$/ { c = 1; next } /^```$/ { c = 0 } !s && c' "$README" > "$T/lines"
[ -s "$T/lines" ] || fail "README.md has no \`\`\`sh block"

BG=""
nsubs=0
while IFS= read -r line; do
	cmd=$(echo "$line" | sed -e 's/[[:space:]]#.*//' -e 's/[[:space:]]*$//' \
	    -e 's|^build/||')
	[ -n "$cmd" ] || continue
	echo "   \$ $cmd"
	first=${cmd%% *}
	case "$cmd" in
	"make "*)
		tgt=${cmd#make }
		make -n "$tgt" > /dev/null 2>&1 || fail "README: no make target '$tgt'"
		echo "     (target exists)" ;;
	systemd-sysusers*|systemd-tmpfiles*|systemctl*)
		# a machine without systemd may run the tests: a note, not a failure
		if command -v "$first" > /dev/null; then
			echo "     (command exists)"
		else
			echo "     (no $first on this machine)"
		fi ;;
	./consumer)
		CPROG=1 ;;
	*daqiri-record*|h5dump*|*h5_look.py*)
		if [ "$(id -u)" -ne 0 ]; then
			echo "     (needs root: daqiri-record subscribes lossless)"
			continue
		fi
		case "$cmd" in
		*"&")
			(cd "$T/src" && exec sh -c "${cmd%&}") > "$T/bg.out" 2> "$T/bg.err" &
			BG="$BG $!"
			PIDS="$PIDS $!"
			wait_consumers '[.consumers[] | select(.policy == "lossless")] | length == 1' ;;
		*)
			rc=0
			abs=$(echo "$cmd" | sed "s| client/python/| $PWD/client/python/|")
			(cd "$T/src" && sh -c "$abs") > "$T/cmd.out" 2>&1 < /dev/null || rc=$?
			sed 's/^/     | /' "$T/cmd.out" | head -20
			expect_eq "exit of '$cmd'" "$rc" 0 ;;
		esac ;;
	*client/python/examples/consume.py*)
		sh -c "exec env $cmd" > "$T/py.out" 2> "$T/py.err" &
		PYC=$!
		PIDS="$PIDS $PYC"
		wait_consumers "[.consumers[] | select(.stream == \"$STREAM\")] | length == 1" ;;
	wait)
		[ -n "$BG" ] || fail "README: 'wait' with nothing in the background"
		for p in $BG; do
			wait_gone "$p" 30
			expect_eq "exit of the background command" "$GONE_RC" 0
		done
		sed 's/^/     | /' "$T/bg.err"
		BG="" ;;
	*"&")
		sh -c "${cmd%&}" > "$T/bg.out" 2> "$T/bg.err" &
		BG="$BG $!"
		PIDS="$PIDS $!"
		nsubs=$((nsubs + 1))
		wait_consumers ".consumers | length == $nsubs" ;;
	*)
		rc=0
		(cd "$T/src" && sh -c "$cmd") > "$T/cmd.out" 2>&1 < /dev/null || rc=$?
		sed 's/^/     | /' "$T/cmd.out" | head -20
		expect_eq "exit of '$cmd'" "$rc" 0 ;;
	esac
done < "$T/lines"
[ -z "$BG" ] || fail "README leaves a command in the background"
[ -n "${PYC:-}" ] || fail "README does not run the Python example"
wait_line "$T/py.out" "^tensor [0-9]*: batch 9, 128 of 128 packets, complete$" 30
kill -TERM "$PYC"
wait_gone "$PYC"
sed 's/^/     | /' "$T/py.out" "$T/py.err"
expect_eq "complete lines of the Python example" \
	"$(grep -c '^tensor [0-9]*: batch [0-9]*, 128 of 128 packets, complete$' "$T/py.out")" 10
make -n install > /dev/null 2>&1 || fail "README: no make target 'install'"
[ "${CPROG:-}" = 1 ] || fail "README does not run ./consumer"
[ -x "$T/src/consumer" ] || fail "the README's cc line built no ./consumer"

note "./consumer: waits across timeouts, ends on an error"
(cd "$T/src" && exec ./consumer) > "$T/consumer.out" 2> "$T/consumer.err" &
C=$!
PIDS="$PIDS $C"
wait_consumers ".consumers | length == 1"
# Longer than the example's one-second wait: the old example ended here.
sleep 1.5
kill -0 "$C" 2>/dev/null || fail "./consumer quit while waiting: $(cat "$T/consumer.err")"
read_stream
in0=$r_packets_in pub0=$((r_batches_complete + r_batches_timeout))
"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --quiet --batches 2 --rate 5kpps > /dev/null 2>&1 ||
	fail "daqiri-sim failed"
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.packets_in] | .[0] == $((in0 + 256))"
read_stream
pub=$((r_batches_complete + r_batches_timeout - pub0))
[ "$pub" -ge 1 ] || fail "nothing was published for ./consumer"
wait_line "$T/consumer.out" "^tensor " 10
wait_consumers "[.consumers[].released] | add == $pub" 10
sed 's/^/   | /' "$T/consumer.out"
stop_daemon
wait_gone "$C"
sed 's/^/   | /' "$T/consumer.err"
expect_eq "exit of ./consumer after the daemon stopped" "$GONE_RC" 1
grep -q '^daqiri_next: ' "$T/consumer.err" || fail "./consumer did not say why it ended"
echo "ok"
