#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Live reload (daqirictl reload, SIGHUP) while the simulator sends and a
# consumer reads: each live change (log level, reorder timeout_us, fill,
# window up and down, a flow added, flow_isolation) is applied and shows
# in `daqirictl config`, and across all of them every datagram sent is
# received and placed (the accounting identity holds, nothing is late).
# Each restart-only change is refused naming the new file's line:col and
# changes nothing; a broken file is refused with its diagnostics and the
# daemon runs on. systemd hears RELOADING=1 then READY=1 per applied
# reload.
. tests/system/lib.sh

CFG=$T/daqirid.yaml
# A deadline far beyond any scheduling stall: a batch only completes.
make_config -e 's/timeout_us: 100000 /timeout_us: 2000000 /' \
	-e 's/hold_timeout_ms: 10000 /hold_timeout_ms: 0 /'
cp "$CFG" "$T/good.yaml"
# while $T/hang exists, a reload's read of the file hangs (the last step)
export DAQIRID_TEST_READ_HANG_FILE="$T/hang"
start_daemon

# pos_of REGEX VALUE: "line:col" of VALUE on the first line matching REGEX
pos_of() {
	awk -v re="$1" -v v="$2" '$0 ~ re { print NR ":" index($0, v); exit }' "$CFG"
}
# reload_ok WHAT: daqirictl reload succeeds and says it applied
reload_ok() {
	ctl reload > "$T/reload.out" 2> "$T/reload.err" ||
		fail "$1: reload refused: $(cat "$T/reload.out" "$T/reload.err")"
	grep -q '^reload applied: ' "$T/reload.out" ||
		fail "$1: not applied: $(cat "$T/reload.out")"
	echo "   ok  $1 applied"
}
# refused WHAT: daqirictl reload exits 1; its report in $T/reload.err
refused() {
	if ctl reload > "$T/reload.out" 2> "$T/reload.err"; then
		fail "$1: reload was not refused: $(cat "$T/reload.out")"
	fi
	grep -q '^reload refused: ' "$T/reload.err" ||
		fail "$1: no refusal line: $(cat "$T/reload.err")"
}
running() { ctl config > "$T/$1"; }

bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 8 "$STREAM" > "$T/consumer.out"
CONS=$LAST_PID
wait_line "$T/consumer.out" '^subscribed'

note "nothing changed: reload says so"
ctl reload > "$T/reload.out" || fail "an unchanged reload failed"
grep -q '^reload unchanged: no changes' "$T/reload.out" || fail "$(cat "$T/reload.out")"
running before.yaml
cmp -s "$T/before.yaml" "$("$BUILD/daqirid" -n -v -c "$CFG" > "$T/nv.yaml"; echo "$T/nv.yaml")" ||
	fail "daqirictl config differs from daqirid -n -v"

# ---------------------------------------------------------------------------
note "live changes while traffic runs"
B=300
bg "$BUILD/daqiri-sim" -c "$T/good.yaml" --batches $B --seed 7 --rate 6kpps
SIM=$LAST_PID
wait_for ".streams[0].reorder.packets_in > 1000"

sed -i 's/log_level: warn /log_level: info /' "$CFG"
reload_ok "log_level"
grep -q "^$CFG:$(pos_of 'log_level:' info): applied: log_level: warn -> info" "$T/reload.out" ||
	fail "log_level change not listed at its line:col: $(cat "$T/reload.out")"

sed -i 's/timeout_us: 2000000 /timeout_us: 1500000 /' "$CFG"
reload_ok "timeout_us"
grep -q "^$CFG:$(pos_of 'timeout_us: 1500000' 1500000): applied: stream 'sensor0/sensor_tensor': timeout_us: 2000000 -> 1500000" "$T/reload.out" ||
	fail "timeout change not listed at its line:col: $(cat "$T/reload.out")"

sed -i 's/fill: zero /fill: nan /' "$CFG"
reload_ok "fill"
sed -i 's/window: 4 /window: 8 /' "$CFG"
reload_ok "window 4 -> 8"
expect_eq "window in streams" "$(ctl -j streams | jq '.streams[0].window')" 8
sed -i 's/window: 8 /window: 2 /' "$CFG"
reload_ok "window 8 -> 2"
expect_eq "window in streams" "$(ctl -j streams | jq '.streams[0].window')" 2

# a flow added at run time is replaced with the file's table when the
# file changes that interface's flows
ctl flow add sensor0 9 0 udp_dst=$((PORT + 9)) > /dev/null || fail "flow add"
# a second flow (no traffic of its own) and isolation on
awk -v p=$((PORT + 1)) '
	{ print }
	/^        flows:/ { print "        - name: spare"; print "          id: 5";
		print "          match: {udp_dst: " p "}"; print "          action: {type: queue, id: 0}" }
' "$CFG" > "$T/x.yaml" && cp "$T/x.yaml" "$CFG"
reload_ok "flow added"
expect_eq "flows listed (the file's)" "$(ctl -j flow list | jq '[.interfaces[0].flows[].id] | sort | join(",")')" '"0,5"'
grep -q "reload: interface 'sensor0': its flow table is the file's again" "$T/daemon.log" ||
	fail "replacing a run-time flow was not logged"
sed -i 's/flow_isolation: false/flow_isolation: true/' "$CFG"
reload_ok "flow_isolation"
expect_eq "isolation in flow list" "$(ctl -j flow list | jq '.interfaces[0].flow_isolation')" true

note "SIGHUP reloads too, and logs the outcome"
sed -i 's/timeout_us: 1500000 /timeout_us: 1000000 /' "$CFG"
kill -HUP "$DAEMON_PID"
wait_line "$T/daemon.log" "reload of $CFG: 1 change applied"
grep -q 'timeout_us: 1000000' "$(running hup.yaml; echo "$T/hup.yaml")" ||
	fail "SIGHUP did not apply the timeout"

running live.yaml
"$BUILD/daqirid" -n -v -c "$CFG" > "$T/nv.yaml" || fail "-n -v"
cmp -s "$T/live.yaml" "$T/nv.yaml" || fail "running config is not the file's: $(diff "$T/live.yaml" "$T/nv.yaml")"

wait_gone "$SIM" 60
[ "$GONE_RC" -eq 0 ] || fail "daqiri-sim failed"
sent=$((B * 128))
wait_for ".streams[0].handoff.published == $B" 20
read_stream
expect_eq "rx_packets + kernel = sent" $((i_rx_packets + i_kernel)) $sent
expect_eq "interface: rx = streams_packets_in + unmatched + no_stream + misrouted" \
	$((i_streams_packets_in + i_unmatched + i_no_stream + i_misrouted)) "$i_rx_packets"
expect_eq "stream packets_in = rx_packets" "$r_packets_in" "$i_rx_packets"
expect_eq "placed + drops = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "placed + kernel = sent (no packet lost to a reload)" $((r_placed + i_kernel)) $sent
expect_eq "late" "$r_late" 0
expect_eq "no_buffer" "$r_no_buffer" 0

# RELOADING=1, then READY=1, for each of the 8 applied reloads
expect_eq "RELOADING=1 sent" "$(grep -c '^RELOADING=1$' "$T/notify.log")" 8
expect_eq "READY=1 sent (start + reloads)" "$(grep -c '^READY=1$' "$T/notify.log")" 9
[ "$(grep -E '^(RELOADING|READY)=1$' "$T/notify.log" | tail -2 | tr '\n' ' ')" = "RELOADING=1 READY=1 " ] ||
	fail "RELOADING=1 is not followed by READY=1"

# ---------------------------------------------------------------------------
note "restart-only changes: refused at their line:col, nothing changed"
cp "$CFG" "$T/live-file.yaml"
restart_case() {
	what=$1 expr=$2 re=$3 val=$4 words=$5
	cp "$T/live-file.yaml" "$CFG"
	sed -i "$expr" "$CFG"
	refused "$what"
	at=$(pos_of "$re" "$val")
	grep -q "^$CFG:$at: .*$words" "$T/reload.err" ||
		fail "$what: not reported at $at: $(cat "$T/reload.err")"
	running after.yaml
	cmp -s "$T/live.yaml" "$T/after.yaml" || fail "$what: the running config changed"
	echo "   ok  $what refused at $at"
}
restart_case "region size" '0,/num_bufs: 32/s//num_bufs: 16/' 'num_bufs: 16' 16 \
	"memory region 'tensors': num_bufs: 32 -> 16: needs a restart"
restart_case "queue" 's/batch_size: 64 /batch_size: 32 /' 'batch_size: 32' 32 \
	"rx queue 'q0': batch_size changed: needs a restart"
restart_case "interface endpoint" "s/local_addr: udp:\/\/127.0.0.1:$PORT/local_addr: udp:\/\/127.0.0.1:$((PORT + 2))/" \
	'local_addr:' udp "socket_config changed: needs a restart"
restart_case "engine" 's/master_core: 0 /master_core: 1 /' 'master_core: 1' 1 \
	"master_core: 0 -> 1: needs a restart"
# a live and a restart-only change together: all or nothing
cp "$T/live-file.yaml" "$CFG"
sed -i -e 's/batch_size: 64 /batch_size: 32 /' -e 's/fill: nan /fill: keep /' "$CFG"
refused "live + restart-only"
running after.yaml
cmp -s "$T/live.yaml" "$T/after.yaml" || fail "a refused reload applied its live change"
grep -q 'fill: nan' "$T/after.yaml" || fail "fill changed"
echo "   ok  live + restart-only: neither applied"

note "a broken file: refused with its diagnostics, the daemon runs on"
cp "$T/live-file.yaml" "$CFG"
sed -i 's/window: 2 /window: 99 /' "$CFG"
refused "config errors"
grep -q "^$CFG:[0-9]*:[0-9]*: error: window: must be between 1 and 64, got 99" "$T/reload.err" ||
	fail "no diagnostic: $(cat "$T/reload.err")"
grep -q '^reload refused: the configuration has 1 error; nothing changed' "$T/reload.err" ||
	fail "$(cat "$T/reload.err")"
printf 'daqiri: [\n' > "$CFG"
refused "YAML syntax error"
grep -q "^$CFG:[0-9]*:[0-9]*: error: YAML syntax error" "$T/reload.err" || fail "$(cat "$T/reload.err")"
kill -HUP "$DAEMON_PID"
wait_line "$T/daemon.log" "reload of $CFG refused: the configuration has 1 error"
running after.yaml
cmp -s "$T/live.yaml" "$T/after.yaml" || fail "a broken file changed the running config"
kill -0 "$DAEMON_PID" || fail "daqirid is gone"
before=$(sstat .reorder.placed)
"$BUILD/daqiri-sim" -c "$T/good.yaml" --batches 2 --seed 8 --quiet > "$T/sim.out" || fail "sim"
wait_for ".streams[0].reorder.placed == $((before + 256))"
echo "   ok  still receiving on the old configuration"

note "the file replaced by a FIFO nobody writes: refused at once, the main loop free"
rm -f "$CFG"
mkfifo "$CFG"
refused "a FIFO"
grep -q "^$CFG: error: cannot read: a FIFO, not a regular file" "$T/reload.err" ||
	fail "no reason: $(cat "$T/reload.err")"
ctl status > /dev/null || fail "status after the FIFO reload"
echo "   ok  $(grep 'error' "$T/reload.err" | head -1)"

note "the file on a hung mount: the reload gives up after 2 s, the daemon answers"
rm -f "$CFG"
cp "$T/good.yaml" "$CFG"
touch "$T/hang"
refused "a hung read"
grep -q "^$CFG: error: cannot read: no answer within 2000 ms (a hung mount?); the running configuration stays, and no file is read until that read returns" \
	"$T/reload.err" || fail "no reason: $(cat "$T/reload.err")"
ctl status > /dev/null || fail "status after the hung reload"
refused "while the read still hangs"
grep -q "^$CFG: error: cannot read: the read of '$CFG' begun [0-9]* s ago has not returned (a hung mount?); no file is read until it does" \
	"$T/reload.err" || fail "no reason: $(cat "$T/reload.err")"
rm -f "$T/hang"
i=0
until ctl reload > "$T/reload.out" 2>&1; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "reload after the read returned: $(cat "$T/reload.out")"
	sleep 0.1
done
echo "   ok  $(head -1 "$T/reload.out")"

kill -TERM "$CONS"
wait_gone "$CONS"
grep -q ' bad=0 ' "$T/consumer.out" || fail "consumer saw a bad tensor: $(cat "$T/consumer.out")"
stop_daemon
echo "ok"
