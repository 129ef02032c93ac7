#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The HTTP endpoint at daemon.metrics_listen: /metrics is the text
# `daqirictl metrics` prints and promtool accepts, with streams, queues,
# consumers and drops in it; the accounting identity holds in it, and in
# PromQL on a real Prometheus server that scrapes the daemon every second,
# whose values equal `daqirictl -j stats` exactly once traffic stopped;
# /healthz goes 503 naming a wedged worker and back to 200 when it
# resumes; a port in use stops the start-up with an error naming it; a
# unix: socket serves the same. daqirid(8) lists every drop reason once.
. tests/system/lib.sh

command -v promtool > /dev/null ||
	fail "promtool not installed (Debian package prometheus; scripts/install-deps.sh installs it)"
command -v curl > /dev/null || { echo "SKIP: curl not installed"; exit 77; }

MPORT=$((PORT + 20000))
URL=http://127.0.0.1:$MPORT
make_config -e "s|metrics_listen: \"\"|metrics_listen: 127.0.0.1:$MPORT|"
# q0 wedges at a burst while $T/wedge exists (daqirid(8) ENVIRONMENT)
DAQIRID_TEST_WEDGE_WORKER=q0
DAQIRID_TEST_WEDGE_FILE=$T/wedge
export DAQIRID_TEST_WEDGE_WORKER DAQIRID_TEST_WEDGE_FILE
start_daemon
grep -q "metrics endpoint on 127.0.0.1:$MPORT" "$T/daemon.log" || fail "no log line for the endpoint"

note "the endpoint's thread blocks TERM, INT and HUP like every other"
nthreads=0
for st in /proc/"$DAEMON_PID"/task/*/status; do
	blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$st")
	[ $((0x$blk & 0x4003)) -eq $((0x4003)) ] ||
		fail "thread $(sed -n 's/^Name:[[:space:]]*//p' "$st") has SigBlk $blk"
	nthreads=$((nthreads + 1))
done
[ "$nthreads" -ge 3 ] || fail "expected main, a worker and the HTTP thread, found $nthreads threads"
echo "   ok  $nthreads threads, all block TERM/INT/HUP"

note "daqirid(8) DROP REASONS lists every reason of proto/metrics.c once"
sed -n 's/^	\[DAQIRI_DROP_[A-Z_]*\] = { "\([a-z_]*\)".*/\1/p' proto/metrics.c > "$T/reasons"
[ "$(wc -l < "$T/reasons")" -ge 10 ] || fail "found only $(wc -l < "$T/reasons") reasons in proto/metrics.c"
sed -n '/^\.SH DROP REASONS/,/^\.SH /p' daemon/daqirid.8 > "$T/section"
awk 'p && /^\.B / { print $2 } { p = /^\.TP$/ }' "$T/section" > "$T/listed"
sort "$T/reasons" > "$T/r1"; sort "$T/listed" > "$T/r2"
cmp -s "$T/r1" "$T/r2" || fail "DROP REASONS lists $(tr '\n' ' ' < "$T/r2"), the code has $(tr '\n' ' ' < "$T/r1")"
echo "   ok  $(wc -l < "$T/reasons") reasons, each listed once"

note "with the endpoint on, every stats field is in daqirictl(8) STATS FIELDS"
ctl -j stats | jq -r '.http | [paths(scalars) | map(select(type == "string")) | last] | unique[]' > "$T/keys"
[ "$(wc -l < "$T/keys")" -ge 8 ] || fail "stats has no http object: $(ctl -j stats | jq -c .http)"
sed -n '/^\.SH STATS FIELDS/,/^\.SH /p' client/daqirictl.8 > "$T/fields"
while read -r k; do
	grep -q -w -- "$k" "$T/fields" || fail "stats http field $k not in daqirictl(8) STATS FIELDS"
done < "$T/keys"
echo "   ok  $(wc -l < "$T/keys") http fields, all documented"

note "traffic with duplicates and a consumer"
bg "$BUILD/daqiri-consume" -s "$SOCK" --quiet "$STREAM"
CONSUMER_PID=$LAST_PID
wait_consumers "[.consumers[] | select(.pid == $CONSUMER_PID)] | length == 1"
run_sim --batches 6 --dup 0.05 --seed 3 --rate 20kpps
sent=$(sim_field sent)
wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $sent"
wait_for "[.streams[] | select(.name == \"$STREAM\")][0] | .reorder.packets_in == .reorder.placed + .reorder.duplicate + .reorder.late + .reorder.malformed + .reorder.no_buffer + .reorder.backend_error and .handoff.open_bufs == 0"
read_stream
[ "$r_duplicate" -gt 0 ] || fail "the simulator sent no duplicates"

note "/metrics: promtool accepts it; the same families as daqirictl metrics"
curl -sS -D "$T/headers" -o "$T/metrics" "$URL/metrics" || fail "GET /metrics failed"
grep -qi '^content-type: text/plain; version=0.0.4' "$T/headers" || fail "content type: $(cat "$T/headers")"
promtool check metrics < "$T/metrics" > "$T/promtool" 2>&1 || fail "promtool: $(cat "$T/promtool")"
echo "   ok  promtool check metrics"
ctl metrics > "$T/ctl-metrics"
fams() { sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$1" | sort; }
[ "$(fams "$T/metrics")" = "$(fams "$T/ctl-metrics")" ] ||
	fail "families differ: $(fams "$T/metrics" > "$T/f1"; fams "$T/ctl-metrics" > "$T/f2"; diff "$T/f1" "$T/f2" | tr '\n' ' ')"
for want in 'daqiri_build_info{version="' 'daqiri_rx_packets_total{interface="sensor0",queue="q0"}' \
    "daqiri_stream_packets_placed_total{interface=\"sensor0\",stream=\"$STREAM\"}" \
    "daqiri_packets_dropped_total{interface=\"sensor0\",stream=\"$STREAM\",reason=\"duplicate\"} $r_duplicate" \
    'daqiri_packets_dropped_total{interface="sensor0",queue="q0",reason="kernel"}' \
    "daqiri_consumer_tensors_delivered_total{stream=\"$STREAM\",consumer=\"$CONSUMER_PID\"}" \
    'daqiri_http_responses_total{code="200"}'; do
	grep -q -F "$want" "$T/metrics" || fail "no '$want' in /metrics"
done
echo "   ok  streams, queues, consumers, drops and build_info present"

# In the text: placed + dropped = in, for every stream (incomplete is a
# part of placed: daqirid(8) DROP REASONS).
awk '
	/^daqiri_stream_packets_in_total\{/ { s = $1; sub(/.*stream="/, "", s); sub(/".*/, "", s); in_[s] = $2 }
	/^daqiri_stream_packets_placed_total\{/ { s = $1; sub(/.*stream="/, "", s); sub(/".*/, "", s); pl[s] = $2 }
	/^daqiri_packets_dropped_total\{.*stream="/ && !/reason="incomplete"/ { s = $1; sub(/.*stream="/, "", s); sub(/".*/, "", s); dr[s] += $2 }
	END { n = 0; for (s in in_) { n++; if (pl[s] + dr[s] != in_[s]) { print "stream " s ": " pl[s] " + " dr[s] " != " in_[s]; exit 1 } }
	      if (n < 2) { print "only " n " streams"; exit 1 } }' "$T/metrics" > "$T/ident" ||
	fail "identity in /metrics: $(cat "$T/ident")"
echo "   ok  placed + dropped = packets in, every stream, in /metrics"

note "a real Prometheus server scraping every second"
PROM_PORT=$((PORT + 20001))
cat > "$T/prometheus.yml" << EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: daqirid
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
promtool check config "$T/prometheus.yml" > /dev/null || fail "promtool check config"
bg /usr/bin/prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn 2> "$T/prometheus.log"
PROM_PID=$LAST_PID
i=0
until curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" > /dev/null 2>&1; do
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -5 "$T/prometheus.log")"
	i=$((i + 1)); [ $i -lt 600 ] || fail "prometheus not ready within 30 s"
	sleep 0.05
done
# promql EXPR: the query's result vector as JSON lines {metric, value}.
promql() {
	curl -sf --data-urlencode "query=$1" "http://127.0.0.1:$PROM_PORT/api/v1/query" |
		jq -c '.data.result[] | {m: .metric, v: .value[1], t: .value[0]}'
}
# Traffic stopped and counted (above); wait for a scrape that began after now.
after=$(date +%s.%N)
i=0
until [ -n "$(promql "timestamp(daqiri_stream_packets_placed_total{stream=\"$STREAM\"}) > $after")" ]; do
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "daqirid died"
	i=$((i + 1)); [ $i -lt 600 ] || fail "no scrape after $after within 30 s: $(promql up)"
	sleep 0.05
done
expect_eq "up" "$(promql 'up{job="daqirid"}' | jq -r .v)" 1
read_stream
expect_eq "placed (Prometheus = stats)" \
	"$(promql "daqiri_stream_packets_placed_total{stream=\"$STREAM\"}" | jq -r .v)" "$r_placed"
expect_eq "packets in (Prometheus = stats)" \
	"$(promql "daqiri_stream_packets_in_total{stream=\"$STREAM\"}" | jq -r .v)" "$r_packets_in"
for r in duplicate late malformed no_buffer backend_error; do
	eval "want=\$r_$r"
	expect_eq "dropped $r (Prometheus = stats)" \
		"$(promql "daqiri_packets_dropped_total{stream=\"$STREAM\",reason=\"$r\"}" | jq -r .v)" "$want"
done
expect_eq "dropped, all reasons (Prometheus = stats)" \
	"$(promql "sum(daqiri_packets_dropped_total{stream=\"$STREAM\"})" | jq -r .v)" \
	$((r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error))
expect_eq "rx packets (Prometheus = stats)" \
	"$(promql 'sum(daqiri_rx_packets_total{interface="sensor0"})' | jq -r .v)" "$i_rx_packets"
# The identity in PromQL: one zero per stream.
promql 'sum by (stream) (daqiri_stream_packets_placed_total) + sum by (stream) (daqiri_packets_dropped_total{stream!="",reason!="incomplete"}) - sum by (stream) (daqiri_stream_packets_in_total)' > "$T/promid"
nstreams=$(ctl -j stats | jq '.streams | length')
expect_eq "identity: streams answered" "$(wc -l < "$T/promid")" "$nstreams"
expect_eq "identity: every difference 0" "$(jq -r .v "$T/promid" | sort -u)" 0
expect_eq "identity per queue (rx = streams in + queue reasons)" \
	"$(promql 'sum by (queue) (daqiri_rx_packets_total) - sum by (queue) (daqiri_queue_streams_packets_in_total) - sum by (queue) (daqiri_packets_dropped_total{reason=~"unmatched|no_stream|misrouted"})' | jq -r .v)" 0
# The Grafana dashboard: every query parses in this Prometheus and every
# series it names is one daqirid exports (or, for TX, documents), so none
# is a silent empty panel.
DASH=etc/grafana/daqiri.json
n=0
jq -r '.panels[].targets[]?.expr' "$DASH" | sed 's/\$stream/.*/g' > "$T/dash.exprs"
while IFS= read -r e; do
	st=$(curl -s --data-urlencode "query=$e" "http://127.0.0.1:$PROM_PORT/api/v1/query" | jq -r .status)
	[ "$st" = success ] || fail "dashboard query does not parse: $e"
	for m in $(echo "$e" | grep -o 'daqiri_[a-z_]*'); do
		# this daemon has no TX queue: its TX families must be documented ones
		grep -q "^$m[{ ]" "$T/metrics" ||
			{ case $m in daqiri_tx_*) grep -q "^\\.I[R]* $m" daemon/daqirid.8 ;; *) false ;; esac; } ||
			fail "dashboard query names $m, which /metrics lacks: $e"
	done
	n=$((n + 1))
done < "$T/dash.exprs"
[ $n -ge 13 ] || fail "only $n dashboard queries found in $DASH"
echo "   ok  the dashboard's $n queries parse and name only exported series"
# scripts/dashboard-png.py draws the same panels from this Prometheus
/usr/bin/python3 scripts/dashboard-png.py --prometheus "http://127.0.0.1:$PROM_PORT" \
	--minutes 1 -o "$T/dash.png" > "$T/dash.out" 2>&1 || fail "dashboard-png.py: $(cat "$T/dash.out")"
np=$(jq "[.panels[] | select(.targets)] | length" "$DASH")
grep -q "^dashboard-png: $np panels, [1-9][0-9]* series -> $T/dash.png\$" "$T/dash.out" ||
	fail "dashboard-png.py: $(cat "$T/dash.out")"
[ "$(head -c 4 "$T/dash.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] || fail "dash.png is not a PNG"
echo "   ok  $(cat "$T/dash.out")"
kill "$PROM_PID"
wait_gone "$PROM_PID"

note "/healthz: 200, then 503 naming a wedged worker, then 200 again"
code() { curl -s -o "$T/body" -w '%{http_code}' "$URL$1"; }
expect_eq "/healthz healthy" "$(code /healthz)" 200
expect_eq "healthy body" "$(cat "$T/body")" ok
touch "$T/wedge"
run_sim --batches 1
wait_line "$T/daemon.log" "queue 'sensor0/q0': DAQIRID_TEST_WEDGE_WORKER: this worker stops now"
i=0
while [ "$(code /healthz)" != 503 ]; do
	i=$((i + 1)); [ $i -lt 400 ] || fail "/healthz never 503 with the worker wedged: $(cat "$T/body")"
	sleep 0.05
done
grep -q "^queue 'sensor0/q0': its RX worker's heartbeat has not advanced for [0-9]* ms\$" "$T/body" ||
	fail "503 body does not name the worker: $(cat "$T/body")"
ctl -j status | jq -e '.workers[0].stale == true' > /dev/null || fail "status does not agree the worker is stale"
echo "   ok  503: $(cat "$T/body")"
rm "$T/wedge"
wait_line "$T/daemon.log" "this worker resumes"
i=0
while [ "$(code /healthz)" != 200 ]; do
	i=$((i + 1)); [ $i -lt 400 ] || fail "/healthz never back to 200: $(cat "$T/body")"
	sleep 0.05
done
echo "   ok  200 again once the worker resumed"
[ "$(stat '.http.responses["503"]')" -ge 1 ] || fail "stats http.responses 503 not counted"

note "a metrics port in use: the second daqirid says so and exits 1"
sed -e "s|udp://127.0.0.1:$PORT\$|udp://127.0.0.1:$((PORT + 1))|" \
	-e "s/udp_dst: $PORT /udp_dst: $((PORT + 1)) /" "$T/daqirid.yaml" > "$T/other.yaml"
grep -q "udp://127.0.0.1:$((PORT + 1))" "$T/other.yaml" || fail "other config keeps the UDP port"
rc=0
"$BUILD/daqirid" -c "$T/other.yaml" -s "$T/other.sock" 2> "$T/other.log" || rc=$?
expect_eq "exit status" "$rc" 1
grep -q "daemon.metrics_listen '127.0.0.1:$MPORT': Address already in use" "$T/other.log" ||
	fail "no error naming the address: $(cat "$T/other.log")"
expect_eq "the first one still serves" "$(code /healthz)" 200
stop_daemon

note "unix: socket"
unset DAQIRID_TEST_WEDGE_WORKER DAQIRID_TEST_WEDGE_FILE
rm -f "$T/daqirid.yaml" "$T/notify"
: > "$T/notify.log"
make_config -e "s|metrics_listen: \"\"|metrics_listen: unix:$T/metrics.sock|"
start_daemon
[ -S "$T/metrics.sock" ] || fail "no socket at $T/metrics.sock"
curl -sf --unix-socket "$T/metrics.sock" -o "$T/umetrics" http://localhost/metrics || fail "GET over unix: failed"
promtool check metrics < "$T/umetrics" > "$T/promtool" 2>&1 || fail "promtool (unix): $(cat "$T/promtool")"
grep -q '^daqiri_build_info{' "$T/umetrics" || fail "no build_info over unix:"
echo "   ok  /metrics over unix:$T/metrics.sock"
stop_daemon
[ ! -e "$T/metrics.sock" ] || fail "the unix socket was left behind"
echo "   ok  socket removed at stop"

if grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null; then
	note "[::1]:PORT"
	rm -f "$T/daqirid.yaml" "$T/notify"
	: > "$T/notify.log"
	make_config -e "s|metrics_listen: \"\"|metrics_listen: \"[::1]:$MPORT\"|"
	start_daemon
	expect_eq "/healthz over IPv6" "$(curl -s -g -o /dev/null -w '%{http_code}' "http://[::1]:$MPORT/healthz")" 200
	stop_daemon
else
	note "no ::1 on this machine: the IPv6 form is left to the unit test"
fi
echo ok
