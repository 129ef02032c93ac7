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
a0=$(h accepted); j0=$(h rejected)
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
[ "$rej" -ge $((made - LIMIT)) ] || fail "rejected $rej, want at least $((made - LIMIT))"
echo "   ok  $made connections: $(( $(h accepted) - a0 )) accepted, $rej refused at the limit; $cur open"
ctl status > /dev/null || fail "the control socket does not answer during the flood"
delivers "during the flood"
rm "$T/hold"
wait_gone "$FLOOD_PID" 60
wait_for ".http.current == 0" 30

note "slow clients that go silent: closed by the idle timeout, counted"
t0=$(h timeouts)
$ABUSE slow 127.0.0.1 "$MPORT" 20 > "$T/slow.out" &
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
wait_for ".http.current == 20" 30
delivers "with slow clients connected"
wait_gone "$SLOW_PID" 60
expect_eq "slow clients closed by the server" "$(kv "$T/slow.out" closed)" 20
expect_eq "timeouts counted" $(( $(h timeouts) - t0 )) 20

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
echo ok
