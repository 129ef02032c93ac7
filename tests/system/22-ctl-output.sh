#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What daqirictl prints is what daqirictl(8) says: streams and consumers
# as tables with -t (and on a terminal), blocks otherwise, -j the daemon's
# JSON unchanged by either; top's labelled rates and totals; metrics in a
# text format promtool accepts, every family with HELP and TYPE.
. tests/system/lib.sh

start_daemon
bg "$BUILD/daqiri-consume" -s "$SOCK" --quiet "$STREAM"
CONSUMER_PID=$LAST_PID
wait_consumers "[.consumers[] | select(.pid == $CONSUMER_PID)] | length == 1"

note "streams and consumers: a table with -t"
ctl -t streams > "$T/out"
expect_eq "streams header" "$(head -1 "$T/out" | tr -s ' ')" \
	"NAME KIND DTYPE MEMORY BUFS PKTS/BATCH TENSOR_BYTES SUBS"
expect_eq "streams rows" "$(($(wc -l < "$T/out") - 1))" "$(ctl -j streams | jq '.streams | length')"
row=$(grep "^$STREAM " "$T/out" | tr -s ' ')
want=$(ctl -j streams | jq -r --arg s "$STREAM" '.streams[] | select(.name == $s) |
	"\(.name) \(.kind) \(.dtype) \(.memory_kind) \(.nbufs) \(.packets_per_batch) \(.tensor_bytes) \(.subscribers)"')
expect_eq "streams row of $STREAM" "$row" "$want"
ctl -t consumers > "$T/out"
expect_eq "consumers header" "$(head -1 "$T/out" | tr -s ' ')" \
	"STREAM CONN SUB PID UID MODE GROUP POLICY STATE DELIVERED RELEASED OVERRUNS HELD PENDING BLOCKED"
row=$(awk -v p="$CONSUMER_PID" '$4 == p' "$T/out" | tr -s ' ')
want=$(ctl -j consumers | jq -r --argjson p "$CONSUMER_PID" '.consumers[] | select(.pid == $p) |
	"\(.stream) \(.conn) \(.sub_id) \(.pid) \(.uid) \(.mode) \(if .group == "" then "-" else .group end) \(.policy) \(.state) \(.delivered) \(.released) \(.overruns) \(.held) \(.pending) \(.blocked)"')
expect_eq "consumers row of pid $CONSUMER_PID" "$row" "$want"
# the columns line up: every row's fields start where the header's do
awk 'NR == 1 { for (i = 1; i <= length($0); i++) h[i] = substr($0, i, 1) != " " && (i == 1 || substr($0, i - 1, 1) == " ") }
	NR > 1 { for (i = 1; i <= length($0); i++) if (substr($0, i, 1) != " " && (i == 1 || substr($0, i - 1, 1) == " ") && !h[i]) exit 1 }' \
	"$T/out" || fail "consumers table is not aligned: $(cat "$T/out")"

note "not a terminal, no -t: blocks with every field"
ctl streams > "$T/out"
expect_eq "streams first line" "$(head -1 "$T/out")" "streams:"
grep -q "^    name: $STREAM\$" "$T/out" || fail "no name: $STREAM block"
grep -q "^    slot_bytes: " "$T/out" || fail "blocks lack slot_bytes"
if command -v script > /dev/null; then
	note "a terminal: the table without -t"
	script -qec "$BUILD/daqirictl -s $SOCK consumers" /dev/null | tr -d '\r' > "$T/out"
	expect_eq "consumers on a tty" "$(head -1 "$T/out" | tr -s ' ')" \
		"STREAM CONN SUB PID UID MODE GROUP POLICY STATE DELIVERED RELEASED OVERRUNS HELD PENDING BLOCKED"
fi

note "-j is the daemon's JSON, whatever -t says"
for c in streams consumers status; do
	ctl -j "$c" > "$T/j1"
	ctl -t -j "$c" > "$T/j2"
	jq -e --arg c "$c" '.type == "reply" and .re == $c and .status == "ok"' "$T/j1" > /dev/null ||
		fail "-j $c is not the reply: $(cat "$T/j1")"
	[ "$(wc -l < "$T/j1")" -eq 1 ] || fail "-j $c is not one line"
done
ctl -j streams > "$T/j1"; ctl -t -j streams > "$T/j2"
cmp "$T/j1" "$T/j2" || fail "-t changed -j streams"
echo "   ok  -j unchanged by -t"

note "top: rates are /s, the rest totals; duplicate and late apart; consumers"
run_sim --batches 4 --dup 0.05 --seed 1 --rate 20kpps
sent=$(sim_field sent)
wait_for ".interfaces[0].rx_packets == $sent"
wait_for "[.streams[] | select(.name == \"$STREAM\")][0].reorder.packets_in == $sent"
wait_for "[.streams[] | select(.name == \"$STREAM\")][0].reorder.batches_complete == 4"
ctl top 2 > "$T/top"
expect_eq "top frames" "$(grep -c '^----$' "$T/top")" 2
grep -q '^/s: per second since the last refresh; other columns: totals since daqirid started$' "$T/top" ||
	fail "top does not say which columns are rates: $(cat "$T/top")"
expect_eq "interface header" "$(grep '^INTERFACE' "$T/top" | head -1 | tr -s ' ')" \
	"INTERFACE RX/s BYTES/s RX UNMATCHED KERNEL"
expect_eq "stream header" "$(grep '^STREAM' "$T/top" | head -1 | tr -s ' ')" \
	"STREAM PKTS/s TENSORS/s CONSUMERS COMPLETE TIMEOUT EVICTED DUPLICATE LATE MALFORMED NO_BUFFER OVERRUNS"
# the second frame: no traffic since the first, so every rate is 0
last=$(awk '/^----$/ { f++ } f == 2' "$T/top")
expect_eq "interface row (2nd frame)" "$(echo "$last" | grep '^sensor0 ' | tr -s ' ')" \
	"sensor0 0 0 $sent $(stat '.interfaces[0].unmatched') $(stat '.interfaces[0].kernel')"
read_stream
# (the stream table only: the LATENCY table below it has a row per stream too)
expect_eq "stream row (2nd frame)" "$(echo "$last" | awk '/^STREAM/ { f = 1 } /^LATENCY/ { f = 0 } f' | grep "^$STREAM " | tr -s ' ')" \
	"$STREAM 0 0.0 1 $r_batches_complete $r_batches_timeout $r_batches_evicted $r_duplicate $r_late $r_malformed $r_no_buffer $h_overruns"
[ "$r_duplicate" -gt 0 ] || fail "the simulator sent no duplicates"

note "stats: every field it prints is in daqirictl(8) STATS FIELDS"
ctl -j stats | jq -r '[paths(scalars) | map(select(type == "string")) | last] | unique[]' |
	grep -v -x -e type -e re -e status > "$T/keys"
sed -n '/^\.SH STATS FIELDS/,/^\.SH /p' client/daqirictl.8 > "$T/section"
[ -s "$T/section" ] || fail "daqirictl.8 has no STATS FIELDS section"
missing=""
while read -r k; do
	grep -q -w -- "$k" "$T/section" || missing="$missing $k"
done < "$T/keys"
[ -z "$missing" ] || fail "stats fields not in daqirictl(8) STATS FIELDS:$missing"
echo "   ok  $(wc -l < "$T/keys") stats fields, all documented"

note "metrics: HELP and TYPE for every family, and promtool accepts it"
ctl metrics > "$T/metrics"
fams=$(grep -v '^#' "$T/metrics" | sed 's/[{ ].*//' | sed -E 's/_(bucket|sum|count)$//' | sort -u)
for f in $fams; do
	grep -q "^# HELP $f [A-Z]" "$T/metrics" || fail "no HELP for $f"
	grep -q -E "^# TYPE $f (counter|gauge|histogram)\$" "$T/metrics" || fail "no TYPE for $f"
done
echo "   ok  $(echo "$fams" | wc -l) families, each with HELP and TYPE"
expect_eq "subscriptions ended is a counter" \
	"$(sed -n 's/^# TYPE daqiri_stream_subscriptions_ended_total //p' "$T/metrics")" counter
expect_eq "buffers is a gauge" "$(sed -n 's/^# TYPE daqiri_stream_buffers //p' "$T/metrics")" gauge
read_stream
expect_eq "duplicates in metrics = stats" \
	"$(sed -n 's/^daqiri_packets_dropped_total{interface="sensor0",stream="'"$(echo "$STREAM" | sed 's|/|\\/|g')"'",reason="duplicate"} //p' "$T/metrics")" "$r_duplicate"
grep -q "^daqiri_consumer_tensors_delivered_total{stream=\"$STREAM\",consumer=\"$CONSUMER_PID\"} " "$T/metrics" ||
	fail "no consumer series labelled with the consumer's pid"
if command -v promtool > /dev/null; then
	promtool check metrics < "$T/metrics" > "$T/promtool" 2>&1 || fail "promtool: $(cat "$T/promtool")"
	echo "   ok  promtool check metrics"
else
	fail "promtool not installed (Debian package prometheus; scripts/install-deps.sh installs it)"
fi
