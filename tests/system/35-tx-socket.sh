#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TX through the socket engine on loopback: a channel (tests/system/
# tx-raw, the protocol by hand) sends payloads to a receiver of our own
# (tests/system/tx-recv.py, the standard library only) on a port this
# test chose. Every payload arrives exactly, in order, from the
# configured source port; as root a raw socket also checks each IPv4
# header's checksum and the UDP length. The daemon's stats count exactly
# what went and no drop, and a non-admin's tx_open is refused. Then a
# transmit-only interface, and the start-up refusals (a queue with no
# destination, a DPDK tx queue without the destination its header
# template needs).
. tests/system/lib.sh

TXPORT=$(( PORT + 1 ))
SRCPORT=$(( PORT + 2 ))
N=2000
LEN=1000
NV=600
LENV=1400

# The default config with a tx queue: a region for its payload size,
# the destination as socket_config.remote_addr, the source port as the
# queue's destination.udp_src. The control socket is open to everyone
# (0666) so that uid nobody reaches the permission check.
make_config -e 's/socket_mode: 0660 /socket_mode: 0666 /'
tx_config() {
	awk -v txport="$TXPORT" -v dest="$1" '
	/^    - name: tensors / {
		print "    - name: tx_frames"
		print "      kind: host"
		print "      affinity: 0"
		print "      num_bufs: 256"
		print "      buf_size: 9000"
	}
	/^      rx:$/ {
		print "      tx:"
		print "        queues:"
		print "        - name: t0"
		print "          id: 0"
		print "          batch_size: 64"
		print "          memory_regions: [tx_frames]"
		if (dest != "")
			print "          destination: " dest
	}
	{ print }
	/^        local_addr: udp:/ {
		print "        remote_addr: udp://127.0.0.1:" txport
	}' "$T/daqirid.yaml" > "$T/tx.yaml"
}
tx_config "{udp_src: $SRCPORT}"
"$BUILD/daqirid" -n -c "$T/tx.yaml" > "$T/n.out" 2>&1 ||
	fail "destination.udp_src refused: $(head -1 "$T/n.out")"
WANT_SRC=$SRCPORT
mv "$T/tx.yaml" "$T/daqirid.yaml"
start_daemon
expect_eq "status: tx queues" "$(ctl -j status | jq .tx_queues)" 1
Q=sensor0/t0
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}
expect_eq "max_payload (the region's buf_size)" "$(txq .max_payload)" 9000

# recv NAME ARGS...: the receiver in the background, ready to receive
recv() {
	name=$1
	shift
	bg /usr/bin/python3 tests/system/tx-recv.py --port "$TXPORT" \
		--src-port "$WANT_SRC" "$@" > "$T/$name.out" 2>&1
	RECV=$LAST_PID
	wait_line "$T/$name.out" '^(ready|FAIL)'
}

note "phase 1: $N payloads of $LEN bytes (one length: UDP_SEGMENT runs)"
recv recv1 --count $N --len $LEN
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send $N $LEN > "$T/tx1.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/tx1.out")"
sed 's/^/   | /' "$T/tx1.out"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/recv1.out"
expect_eq "receiver" "$GONE_RC" 0
expect_eq "packets" "$(txq .packets)" $N
expect_eq "bytes" "$(txq .bytes)" $((N * LEN))
expect_eq "submitted" "$(txq .submitted)" $N
expect_eq "engine tx_packets" "$(txq .engine.tx_packets)" $N
note "UDP_SEGMENT messages: $(txq .engine.gso_sends), sendmmsg calls: $(txq .engine.calls)"

note "phase 2: $NV payloads of varying length (one message each)"
RAW=""
if [ "$(id -u)" -eq 0 ]; then
	RAW=--raw
else
	note "not root: no raw socket, the IPv4 header checks are skipped"
fi
recv recv2 --count $NV --len $LENV --vary $RAW
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send $NV $LENV vary 16 > "$T/tx2.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/tx2.out")"
sed 's/^/   | /' "$T/tx2.out"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/recv2.out"
expect_eq "receiver" "$GONE_RC" 0
[ -z "$RAW" ] || grep -q "^ok .* raw=$NV " "$T/recv2.out" ||
	fail "raw socket saw too few: $(cat "$T/recv2.out")"
vbytes=0
i=0
while [ $i -lt $NV ]; do
	vbytes=$((vbytes + LENV - i % 3))
	i=$((i + 1))
done
expect_eq "packets" "$(txq .packets)" $((N + NV))
expect_eq "bytes" "$(txq .bytes)" $((N * LEN + vbytes))
for r in too_big bad_buffer engine_error closed; do
	expect_eq "drops $r" "$(txq .drops.$r)" 0
done
expect_eq "engine errors" "$(txq .engine.errors)" 0
expect_eq "channels broken" "$(txq .broken)" 0

note "the metrics say the same"
ctl metrics > "$T/metrics.txt" || fail "daqirictl metrics"
grep -q "^daqiri_tx_packets_total{interface=\"sensor0\",queue=\"t0\"} $((N + NV))\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_packets "$T/metrics.txt")"
grep -q "^daqiri_tx_drops_total{interface=\"sensor0\",queue=\"t0\",reason=\"bad_buffer\"} 0\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_drops "$T/metrics.txt")"

note "a channel asking for more buffers than the region has is refused"
if "$BUILD/tests/tx-raw" "$SOCK" "$Q" send 1 10 "" 257 > "$T/big.out" 2>&1; then
	fail "nbufs 257 of a 256-buffer region was granted"
fi
grep -q '^open: refused out_of_range (.*at most 256' "$T/big.out" ||
	fail "refusal: $(cat "$T/big.out")"
echo "   ok  $(head -1 "$T/big.out")"
"$BUILD/tests/tx-raw" "$SOCK" sensor0/nope open > "$T/noq.out" 2>&1 &&
	fail "a tx queue that does not exist was opened"
grep -q '^open: refused no_such_stream (no such tx queue' "$T/noq.out" ||
	fail "refusal: $(cat "$T/noq.out")"
"$BUILD/tests/tx-raw" "$SOCK" nope/t0 open > "$T/noif.out" 2>&1 &&
	fail "a tx queue of no interface was opened"
grep -q '^open: refused no_such_interface' "$T/noif.out" ||
	fail "refusal: $(cat "$T/noif.out")"

note "tx_open is for root and the admin group only"
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	chmod 0755 "$T"
	cp "$BUILD/tests/tx-raw" "$T/tx-raw"
	chmod 0755 "$T/tx-raw"
	if setpriv --reuid=65534 --regid=65534 --clear-groups \
	    "$T/tx-raw" "$SOCK" "$Q" open > "$T/nobody.out" 2>&1; then
		fail "uid 65534 opened a TX channel: $(cat "$T/nobody.out")"
	fi
	grep -q '^open: refused permission_denied' "$T/nobody.out" ||
		fail "uid 65534 refused, but not for permission: $(cat "$T/nobody.out")"
	echo "   ok  $(head -1 "$T/nobody.out")"
else
	note "SKIP part: not root or no setpriv, the non-admin refusal is not tried"
fi
expect_eq "packets unchanged" "$(txq .packets)" $((N + NV))
wait_for '.interfaces[0].tx.queues[0].channels_open == 0'
stop_daemon

note "a transmit-only interface (no rx section)"
awk '/^      rx:$/ { skip = 1; next }
	skip && /^      [a-z]/ { skip = 0 }
	skip && /^  [a-z]/ { skip = 0 }
	!skip' "$T/daqirid.yaml" > "$T/txonly.yaml"
grep -q '^      rx:' "$T/txonly.yaml" && fail "the rx section is still there"
"$BUILD/daqirid" -n -c "$T/txonly.yaml" > "$T/n.out" 2>&1 || fail "tx-only config: $(cat "$T/n.out")"
cp "$T/txonly.yaml" "$T/daqirid.yaml"
rm -f "$T/notify.log"
start_daemon
expect_eq "status: rx queues" "$(ctl -j status | jq .rx_queues)" 0
expect_eq "status: tx queues" "$(ctl -j status | jq .tx_queues)" 1
recv recv3 --count 100 --len 300
"$BUILD/tests/tx-raw" "$SOCK" "$Q" send 100 300 > "$T/tx3.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/tx3.out")"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/recv3.out"
expect_eq "receiver" "$GONE_RC" 0
expect_eq "packets" "$(txq .packets)" 100
stop_daemon

note "start-up refusals name the queue or the engine"
grep -v 'remote_addr' "$T/daqirid.yaml" > "$T/nodest.yaml"
if "$BUILD/daqirid" -c "$T/nodest.yaml" -s "$T/nodest.sock" > "$T/nodest.out" 2>&1; then
	fail "a tx queue without a destination started"
fi
grep -q "error: tx queue 't0' has no ipv4_dst: set socket_config.remote_addr or destination.ipv4_dst" "$T/nodest.out" ||
	fail "no reason: $(cat "$T/nodest.out")"
echo "   ok  $(grep "tx queue 't0' has no" "$T/nodest.out")"
awk '/^      rx:$/ {
	print "      tx:"
	print "        queues:"
	print "        - name: t0"
	print "          id: 0"
	print "          batch_size: 32"
	print "          memory_regions: [frames]"
}
{ print }' etc/examples/pcap-replay.yaml > "$T/dpdk.yaml"
# a DPDK tx queue writes its headers from its destination: without one
# the config is refused, naming the queue
if "$BUILD/daqirid" -n -c "$T/dpdk.yaml" > "$T/dpdk.out" 2>&1; then
	fail "a DPDK tx queue without a destination passed the check"
fi
grep -q "tx queue 't0'.*destination" "$T/dpdk.out" ||
	fail "no reason: $(cat "$T/dpdk.out")"
echo "   ok  $(grep "tx queue 't0'" "$T/dpdk.out" | head -1)"
echo "ok"
