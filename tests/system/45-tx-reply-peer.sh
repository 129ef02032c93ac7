#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A UDP server's tx queue with no destination and no remote_addr
# replies to the peer that sent last, as the reference library's server
# does. Before any datagram, submissions fail, counted no_peer (the
# consumer reads engine_error). Then a peer (tests/system/tx-recv.py
# --hello) sends datagrams to the server's port from its own socket and
# receives every payload a channel (tests/system/tx-raw) submits, at
# that socket, from the server's port. A second peer that sends takes
# the replies over: what daqirid.yaml(5) and daqirid(8) SECURITY warn of.
. tests/system/lib.sh

N=500
LEN=1000
M=50

# The default config with a tx queue of its own region, no destination,
# no remote_addr: the server mode of etc/daqirid.yaml implies replies.
make_config
awk '
/^    - name: tensors / {
	print "    - name: tx_frames"
	print "      kind: host"
	print "      affinity: 0"
	print "      num_bufs: 256"
	print "      buf_size: 2048"
}
/^      rx:$/ {
	print "      tx:"
	print "        queues:"
	print "        - name: t0"
	print "          id: 0"
	print "          batch_size: 64"
	print "          memory_regions: [tx_frames]"
}
{ print }' "$T/daqirid.yaml" > "$T/reply.yaml"
grep -q remote_addr "$T/reply.yaml" && fail "the test config has a remote_addr"
"$BUILD/daqirid" -n -v -c "$T/reply.yaml" > "$T/nv.out" 2>&1 ||
	fail "reply config refused: $(cat "$T/nv.out")"
grep -q "# no destination: replies to the peer that sent last" "$T/nv.out" ||
	fail "-n -v does not say the queue replies: $(cat "$T/nv.out")"
echo "   ok  -n -v: $(grep "# no destination" "$T/nv.out" | sed 's/^ *//')"
mv "$T/reply.yaml" "$T/daqirid.yaml"
start_daemon
Q=sensor0/t0
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}

note "before any datagram: no peer, every submission fails, counted no_peer"
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send 5 100 > "$T/tx0.out" 2>&1 || true
sed 's/^/   | /' "$T/tx0.out"
grep -q "engine_error=5" "$T/tx0.out" || fail "tx-raw: $(cat "$T/tx0.out")"
expect_eq "drops no_peer" "$(txq .drops.no_peer)" 5
expect_eq "drops engine_error (the daemon's count)" "$(txq .drops.engine_error)" 0
expect_eq "packets" "$(txq .packets)" 0
expect_eq "engine errors" "$(txq .engine.errors)" 0

# peer NAME COUNT: a peer that says hello, then receives COUNT replies
peer() {
	bg /usr/bin/python3 tests/system/tx-recv.py --port 0 --hello "$PORT" \
		--hello-count 3 --src-port "$PORT" --count "$2" --len "$LEN" \
		> "$T/$1.out" 2>&1
	RECV=$LAST_PID
	wait_line "$T/$1.out" '^(ready|FAIL)'
	grep -q '^ready' "$T/$1.out" || fail "$1: $(cat "$T/$1.out")"
}

note "a peer sends 3 datagrams, then receives $N payloads at its own port"
rx0=$(stat '.interfaces[0].rx_packets')
peer peer1 $N
P1=$(sed -n 's/^ready port=//p' "$T/peer1.out")
wait_for ".interfaces[0].rx_packets >= $((rx0 + 3))"
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send $N $LEN > "$T/tx1.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/tx1.out")"
sed 's/^/   | /' "$T/tx1.out"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/peer1.out"
expect_eq "peer 1" "$GONE_RC" 0
grep -q "^ok count=$N src=127.0.0.1:$PORT " "$T/peer1.out" ||
	fail "peer 1 did not get all from the server's port: $(cat "$T/peer1.out")"
expect_eq "packets" "$(txq .packets)" $N
expect_eq "bytes" "$(txq .bytes)" $((N * LEN))
expect_eq "drops no_peer" "$(txq .drops.no_peer)" 5
expect_eq "submitted = packets + drops" "$(txq .submitted)" $((N + 5))

note "another sender takes the replies over (the SECURITY note)"
rx1=$(stat '.interfaces[0].rx_packets')
peer peer2 $M
P2=$(sed -n 's/^ready port=//p' "$T/peer2.out")
[ "$P2" != "$P1" ] || fail "the two peers share port $P1"
wait_for ".interfaces[0].rx_packets >= $((rx1 + 3))"
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send $M $LEN > "$T/tx2.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/tx2.out")"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/peer2.out"
expect_eq "peer 2 (port $P2, not $P1)" "$GONE_RC" 0
expect_eq "packets" "$(txq .packets)" $((N + M))
for r in too_big bad_buffer engine_error closed; do
	expect_eq "drops $r" "$(txq .drops.$r)" 0
done
ctl metrics > "$T/metrics.txt" || fail "daqirictl metrics"
grep -q 'reason="no_peer"} 5$' "$T/metrics.txt" ||
	fail "no no_peer in the metrics: $(grep tx_drops "$T/metrics.txt")"
echo "   ok  $(grep 'reason="no_peer"' "$T/metrics.txt")"
ctl top 1 > "$T/top" || fail "daqirictl top"
col=$(awk '/^TX QUEUE/ { for (i = 1; i <= NF; i++) if ($i == "NO_PEER") c = i - 1 }
	c && $1 ~ /\// && !/^TX/ { print $c; exit }' "$T/top")
expect_eq "daqirictl top: the tx queue's NO_PEER column" "$col" 5
stop_daemon
echo "ok"
