#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Tensors on another machine, over UCX (UCX_TLS=tcp on loopback):
# daqiri-relay serves the daemon's stream, with a shared secret.
#  1. A remote C consumer (daqiri-consume -s ucx://...) and a remote
#     Python one (daqiri.connect(socket="ucx://...")) verify every
#     element of a shuffled, lossy stream; the missing slots are exactly
#     the packets the simulator dropped, on both.
#  2. No secret, or a wrong one: refused, saying what to do.
#  3. A slow remote consumer (latest) overruns alone: a fast one beside it
#     gets every tensor; a slow lossless remote consumer gets every one.
# The relay's /metrics counts them per remote consumer.
. tests/system/lib.sh

relay_setup
head -c 32 /dev/urandom | base64 > "$T/secret"
chmod 600 "$T/secret"
head -c 32 /dev/urandom | base64 > "$T/wrong"
chmod 600 "$T/wrong"
PY=/usr/bin/python3

start_daemon
relay_bg --secret-file "$T/secret" --metrics "127.0.0.1:$MPORT"
note "relay: $(grep 'listening on' "$T/relay.log")"
grep -q 'transport' "$T/relay.log" || true

note "2. refused without the secret and with a wrong one"
rc=0
"$BUILD/daqirictl" -s "$URL" streams > "$T/nosecret.out" 2> "$T/nosecret.err" || rc=$?
[ $rc -ne 0 ] || fail "a consumer without the secret was let in"
grep -q 'DAQIRI_SECRET_FILE' "$T/nosecret.err" || fail "no hint: $(cat "$T/nosecret.err")"
echo "   ok  no secret: $(cat "$T/nosecret.err")"
rc=0
DAQIRI_SECRET_FILE=$T/wrong "$BUILD/daqiri-consume" -s "$URL" --count 1 --timeout 5 "$STREAM" \
	> "$T/wrong.out" 2> "$T/wrong.err" || rc=$?
[ $rc -ne 0 ] || fail "a consumer with a wrong secret was let in"
grep -q 'wrong secret' "$T/wrong.err" || fail "no clear refusal: $(cat "$T/wrong.err")"
echo "   ok  wrong secret: $(cat "$T/wrong.err")"
kill -0 "$RELAY" || fail "the relay died of a refused consumer"
export DAQIRI_SECRET_FILE=$T/secret
DAQIRI_SECRET_FILE=$T/secret "$BUILD/daqirictl" -s "$URL" -j streams | jq -e '.streams | length >= 1' >/dev/null ||
	fail "streams through the relay"

note "1. remote C and Python consumers verify a shuffled, lossy stream"
B=30
bg "$BUILD/daqiri-consume" -s "$URL" --verify --quiet --count $B --timeout 30 "$STREAM" \
	> "$T/c.out" 2> "$T/c.err"
CC=$LAST_PID
PYTHONPATH=$BUILD/python bg "$PY" tests/system/remote-consumer.py "$URL" "$STREAM" $B 30 > "$T/py.out" 2> "$T/py.err"
CPY=$LAST_PID
wait_consumers ".consumers | length == 2" 30
run_sim --batches $B --seed 5 --shuffle 64 --loss 0.01 --dup 0.02 --rate 5kpps
dropped=$(sim_field dropped)
[ "$dropped" -gt 0 ] || fail "the seed gave no loss"
lossy=$(sed -n 's/^dropped seq=[0-9]* batch=\([0-9]*\) .*/\1/p' "$T/sim.out" | sort -u | wc -l)
wait_gone "$CC" 60
sed 's/^/   | /' "$T/c.err" | tail -3
expect_eq "C: exit" "$GONE_RC" 0
sum=$(grep ': tensors ' "$T/c.err" | tail -1)
num() { echo "$sum" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"; }
expect_eq "C: tensors" "$(num tensors)" $B
expect_eq "C: seq gaps" "$(num 'seq gaps')" 0
expect_eq "C: partial tensors = batches with a drop" "$(num partial)" "$lossy"
expect_eq "C: missing slots = packets the sim dropped" "$(num 'missing slots')" "$dropped"
expect_eq "C: errors" "$(num errors)" 0
wait_gone "$CPY" 60
sed 's/^/   | /' "$T/py.err" | tail -3
expect_eq "Python: exit" "$GONE_RC" 0
expect_eq "Python: tensors" "$(kv "$T/py.out" tensors)" $B
expect_eq "Python: seq gaps" "$(kv "$T/py.out" seq_gaps)" 0
expect_eq "Python: partial tensors" "$(kv "$T/py.out" partial)" "$lossy"
expect_eq "Python: missing slots" "$(kv "$T/py.out" missing)" "$dropped"
expect_eq "Python: errors" "$(kv "$T/py.out" errors)" 0

note "3. a slow remote consumer overruns alone; a lossless one gets all"
wait_consumers ".consumers | length == 0" 20
# 2 kpps (16 tensors/s, 64 MB/s): the fast consumer keeps up with room to
# spare; the slow one (1 s a tensor) falls 100 tensors behind, more than
# its 10 receive buffers and the relay's ring hold, so its subscription in
# the daemon overruns, whatever the timing.
B=120
bg "$BUILD/daqiri-consume" -s "$URL" --quiet --count $B --timeout 20 "$STREAM" \
	> "$T/fast.out" 2> "$T/fast.err"
FAST=$LAST_PID
bg "$BUILD/daqiri-consume" -s "$URL" --quiet --delay-ms 1000 --timeout 20 "$STREAM" \
	> "$T/slow.out" 2> "$T/slow.err"
SLOW=$LAST_PID
wait_consumers ".consumers | length == 2" 30
run_sim --batches $B --seed 7 --rate 2kpps
wait_gone "$FAST" 60
sum=$(grep ': tensors ' "$T/fast.err" | tail -1)
expect_eq "fast: tensors" "$(num tensors)" $B
expect_eq "fast: seq gaps" "$(num 'seq gaps')" 0
# the fast one is gone (it got its count); the slow one's subscription
# in the daemon is the one that overran
ctl -j consumers > "$T/consumers.json"
expect_eq "the slow consumer's subscription overran" \
	"$(jq '[.consumers[] | select(.overruns > 0)] | length' "$T/consumers.json")" 1
curl -sf "http://127.0.0.1:$MPORT/metrics" > "$T/metrics.txt" || fail "no /metrics from the relay"
grep -q '^daqiri_relay_tensors_total{' "$T/metrics.txt" ||
	fail "no per-consumer tensors in the relay's metrics: $(head -20 "$T/metrics.txt")"
# the slow one, still there, with what it was sent
slow_n=$(grep '^daqiri_relay_tensors_total{' "$T/metrics.txt" | awk '{print $2}' | sort -n | tail -1)
[ "$slow_n" -ge 1 ] || fail "the relay's metrics: the slow consumer has $slow_n tensors"
echo "   ok  relay metrics: the slow remote consumer, $slow_n tensors sent"
kill -INT "$SLOW"
wait_gone "$SLOW" 30

wait_consumers ".consumers | length == 0" 20
B=40
bg "$BUILD/daqiri-consume" -s "$URL" --lossless --quiet --delay-ms 20 --count $B --timeout 30 "$STREAM" \
	> "$T/lossless.out" 2> "$T/lossless.err"
LL=$LAST_PID
wait_consumers ".consumers | length == 1" 30
expect_eq "the relay subscribed lossless" "$(ctl -j consumers | jq -r '.consumers[0].policy')" lossless
run_sim --batches $B --seed 9 --rate 5kpps
wait_gone "$LL" 60
sum=$(grep ': tensors ' "$T/lossless.err" | tail -1)
expect_eq "lossless: exit" "$GONE_RC" 0
expect_eq "lossless: tensors" "$(num tensors)" $B
expect_eq "lossless: seq gaps" "$(num 'seq gaps')" 0

kill -TERM "$RELAY"
wait_gone "$RELAY" 10
expect_eq "relay exit after SIGTERM" "$GONE_RC" 0
stop_daemon
echo "ok"
