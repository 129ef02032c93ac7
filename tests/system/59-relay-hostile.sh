#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A hostile peer of daqiri-relay (tests/system/relay-hostile.c, over UCX
# with UCX_TLS=tcp on loopback): a request before auth, a wrong MAC, no
# MAC, then after a good auth garbage of every kind (not JSON, bad
# fields, a request remote consumers may not make, a tensor, bad
# credits, a rendezvous control message, an unknown AM id) and a flood.
# Each is answered as the protocol says or closed; the relay stays up,
# counts every one by reason in /metrics, and then serves a good remote
# consumer.
. tests/system/lib.sh

relay_setup
head -c 32 /dev/urandom | base64 > "$T/secret"
chmod 600 "$T/secret"

start_daemon
relay_bg --secret-file "$T/secret" --metrics "127.0.0.1:$MPORT"

rc=0
"$BUILD/tests/relay-hostile" 127.0.0.1 "$RPORT" "$T/secret" > "$T/hostile.out" 2>&1 || rc=$?
sed 's/^/   | /' "$T/hostile.out" | cut -c1-160
expect_eq "relay-hostile: every case answered as it must" "$rc" 0
grep -q '^hostile done' "$T/hostile.out" || fail "relay-hostile did not finish"
kill -0 "$RELAY" || fail "the relay died of a hostile peer"

curl -sf "http://127.0.0.1:$MPORT/metrics" > "$T/metrics.txt" || fail "no /metrics"
m() { sed -n "s/^$1 \([0-9]*\)$/\1/p" "$T/metrics.txt"; }
expect_eq "refused: wrong secret" "$(m 'daqiri_relay_refused_total{reason="secret"}')" 2
for r in ctrl_decode ctrl_rndv credit credit_no_sub unexpected_am; do
	n=$(m "daqiri_relay_garbage_total{reason=\"$r\"}")
	[ "${n:-0}" -gt 0 ] || fail "garbage of reason $r not counted: $(grep garbage "$T/metrics.txt")"
	echo "   ok  garbage counted: $r $n"
done

note "a good remote consumer after all that"
export DAQIRI_SECRET_FILE=$T/secret
bg "$BUILD/daqiri-consume" -s "$URL" --verify --quiet --count 3 --timeout 30 "$STREAM" \
	> "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
wait_consumers ".consumers | length == 1" 30
run_sim --batches 3 --rate 20kpps --quiet
consumed c 3
kill -TERM "$RELAY"
wait_gone "$RELAY" 10
expect_eq "relay exit after SIGTERM" "$GONE_RC" 0
stop_daemon
echo "ok"
