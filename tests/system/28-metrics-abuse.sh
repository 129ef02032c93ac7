#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The metrics endpoint under abuse, on loopback (tests/system/http-abuse.py):
# 1000 connections at once, slow clients that go silent, a 1 MB request
# line, unknown paths. Every connection is either served or refused at
# the limit (accepted + rejected = connections made, and never more than
# the limit open), each kind of abuse is counted in the stats "http"
# object, and all the while the control socket answers and a stream
# still delivers complete tensors; afterwards /metrics serves again.
. tests/system/lib.sh

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
command -v curl > /dev/null || { echo "SKIP: curl not installed"; exit 77; }
ABUSE="$PY tests/system/http-abuse.py"
LIMIT=$(sed -n 's/^#define HTTP_MAX_CONNECTIONS[[:space:]]*\([0-9]*\).*/\1/p' daemon/http.h)
[ -n "$LIMIT" ] || fail "no HTTP_MAX_CONNECTIONS in daemon/http.h"

MPORT=$((PORT + 20000))
URL=http://127.0.0.1:$MPORT
make_config -e "s|metrics_listen: \"\"|metrics_listen: 127.0.0.1:$MPORT|"
start_daemon
bg "$BUILD/daqiri-consume" -s "$SOCK" --quiet "$STREAM"
CONSUMER_PID=$LAST_PID
wait_consumers "[.consumers[] | select(.pid == $CONSUMER_PID)] | length == 1"
h() { stat ".http.$1"; }

# A simulator sends all along (a fresh one would restart the sequence,
# whose batches the window then takes for late ones). While abuse goes
# on, the stream must go on delivering whole tensors: 4 more complete
# batches, 4 more deliveries to the consumer, none partial meanwhile.
bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches 0 --rate 2kpps --quiet
SIM_PID=$LAST_PID
delivers() {
	read_stream
	c0=$r_batches_complete; p0=$((r_batches_timeout + r_batches_evicted)); m0=$r_missing_slots
	d0=$(consumer "$CONSUMER_PID" delivered)
	wait_for "[.streams[] | select(.name == \"$STREAM\")][0].reorder.batches_complete >= $((c0 + 4))" 30
	wait_consumers "[.consumers[] | select(.pid == $CONSUMER_PID)][0].delivered >= $((d0 + 4))" 30
	read_stream
	expect_eq "$1: partial batches meanwhile" $((r_batches_timeout + r_batches_evicted - p0)) 0
	expect_eq "$1: missing slots meanwhile" $((r_missing_slots - m0)) 0
	echo "   ok  $1: $((r_batches_complete - c0)) more complete tensors, delivered"
}
delivers "before"

note "1000 connections at once"
a0=$(h accepted); j0=$(h rejected); v0=$(h evicted)
touch "$T/hold"
$ABUSE flood 127.0.0.1 "$MPORT" 1000 "$T/hold" > "$T/flood.out" &
FLOOD_PID=$!
PIDS="$PIDS $FLOOD_PID"
wait_line "$T/flood.out" '^flood connected=' 60
cat "$T/flood.out"
made=$(kv "$T/flood.out" connected)
[ "$made" -ge 900 ] || fail "only $made of 1000 connections made"
# every connection made is accepted or refused, none lost
wait_for ".http.accepted + .http.rejected >= $((a0 + j0 + made))" 30
cur=$(h current)
[ "$cur" -le "$LIMIT" ] || fail "$cur connections open, over the limit $LIMIT"
rej=$(( $(h rejected) - j0 ))
ev=$(( $(h evicted) - v0 ))
# each one past the limit was refused, or took the place of the oldest
# silent one
[ $((rej + ev)) -ge $((made - LIMIT)) ] ||
	fail "rejected $rej + evicted $ev, want at least $((made - LIMIT))"
echo "   ok  $made connections: $(( $(h accepted) - a0 )) accepted, $rej refused at the limit, $ev evicted for newcomers; $cur open"
ctl status > /dev/null || fail "the control socket does not answer during the flood"
delivers "during the flood"
rm "$T/hold"
wait_gone "$FLOOD_PID" 60
wait_for ".http.current == 0" 30

note "slow clients that go silent: closed by the request deadline, counted"
t0=$(h deadline)
$ABUSE slow 127.0.0.1 "$MPORT" 20 > "$T/slow.out" &
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
wait_for ".http.current == 20" 30
delivers "with slow clients connected"
wait_gone "$SLOW_PID" 60
expect_eq "slow clients closed by the server" "$(kv "$T/slow.out" closed)" 20
expect_eq "deadline closes counted" $(( $(h deadline) - t0 )) 20

note "slowloris: $LIMIT connections trickling a header each forever, /healthz probed meanwhile"
d0=$(h deadline); v0=$(h evicted)
$ABUSE trickle 127.0.0.1 "$MPORT" "$LIMIT" 6 > "$T/trickle.out" || fail "trickle: $(cat "$T/trickle.out")"
cat "$T/trickle.out"
probes=$(kv "$T/trickle.out" probes)
[ "$probes" -ge 10 ] || fail "only $probes probes made"
expect_eq "every /healthz probe answered 200" "$(kv "$T/trickle.out" probes_ok)" "$probes"
[ "$(kv "$T/trickle.out" closed_by_server)" -gt 0 ] || fail "no trickling connection was closed"
[ $(( $(h deadline) + $(h evicted) - d0 - v0 )) -gt 0 ] || fail "closes not counted"
echo "   ok  closed for the deadline $(( $(h deadline) - d0 )), evicted $(( $(h evicted) - v0 ))"
wait_for ".http.current == 0" 30

note "a request body over the bound: 413"
head -c 100000 /dev/zero > "$T/body"
# curl may also say the server closed while it still sent: the code counts
code=$(curl -s -o /dev/null -w '%{http_code}' -X GET --data-binary "@$T/body" "$URL/metrics") || true
expect_eq "GET with a 100 kB body" "$code" 413

note "a 1 MB request line: refused by the server, counted"
i0=$(h incomplete)
$ABUSE bigline 127.0.0.1 "$MPORT" 1048576 > "$T/big.out"
cat "$T/big.out"
grep -q -E 'answer=(HTTP/1\.1 (400|413|414|431) |reset)' "$T/big.out" || fail "1 MB request line answered: $(cat "$T/big.out")"
wait_for ".http.incomplete == $((i0 + 1))" 15
echo "   ok  counted as incomplete"

note "unknown paths: 404, counted"
n0=$(stat '.http.responses["404"]')
$ABUSE paths 127.0.0.1 "$MPORT" 100 > "$T/paths.out"
expect_eq "404 answers" "$(kv "$T/paths.out" 404)" 100
expect_eq "404 counted" $(( $(stat '.http.responses["404"]') - n0 )) 100
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/metrics")
expect_eq "POST" "$code" 405

note "afterwards: /metrics serves, the abuse is in it, the stream delivers"
curl -sf -o "$T/metrics" "$URL/metrics" || fail "GET /metrics failed after the abuse"
promtool check metrics < "$T/metrics" > "$T/promtool" 2>&1 || fail "promtool: $(cat "$T/promtool")"
grep -q "^daqiri_http_connections_rejected_total $(h rejected)\$" "$T/metrics" ||
	fail "rejected in /metrics: $(grep rejected "$T/metrics")"
grep -q '^daqiri_http_responses_total{code="404"} [1-9]' "$T/metrics" || fail "no 404s in /metrics"
delivers "after the abuse"
kill -0 "$DAEMON_PID" || fail "daqirid died"
kill "$SIM_PID"
wait_gone "$SIM_PID"
stop_daemon

note "a main loop slow to build /metrics (8 s, test hook): /healthz answers meanwhile, and says so"
DAQIRID_TEST_METRICS_DELAY_MS=8000
export DAQIRID_TEST_METRICS_DELAY_MS
start_daemon
unset DAQIRID_TEST_METRICS_DELAY_MS
bg curl -s -o "$T/slow-metrics" -w '%{http_code}' "$URL/metrics" > "$T/slow-metrics.code"
M=$LAST_PID
wait_line "$T/daemon.log" 'metrics: this build takes 8000 ms longer' 10
# probes are answered while the build goes on; once the main loop has
# been held past the watchdog rule (1 s), they say so with a 503
n=0
while :; do
	code=$(curl -s -o "$T/hz" -w '%{http_code}' --max-time 30 "$URL/healthz") || true
	kill -0 "$M" 2> /dev/null ||
		fail "/metrics was answered before the probes saw the main loop stuck (last probe: $code $(cat "$T/hz"))"
	n=$((n + 1))
	[ "$code" = 503 ] && grep -q "daqirid's main loop has not turned for" "$T/hz" && break
	[ "$code" = 200 ] || fail "/healthz: $code $(cat "$T/hz")"
	sleep 0.1
done
echo "   ok  $n probes answered while /metrics waited; then: $(cat "$T/hz")"
wait_gone "$M" 30
expect_eq "/metrics afterwards" "$(cat "$T/slow-metrics.code")" 200
code=$(curl -s -o "$T/hz" -w '%{http_code}' "$URL/healthz") || true
expect_eq "/healthz once the main loop turns again" "$code" 200
stop_daemon
echo ok
