#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TX from GPU memory, whole, on the CUDA stand-in (scripts/cuda-standin,
# tests/standin/): a tx queue whose region is kind device gives its
# channel a device pool; tests/system/tx-client --device opens it by CUDA
# IPC, fills each buffer with cudaMemcpyAsync from host patterns,
# synchronises its stream and submits; the socket engine copies every
# payload to host memory and sends it to a receiver of our own
# (tests/system/tx-recv.py, Python's standard library only), which checks
# every byte, the order and the count. The daemon's stats and metrics
# count each payload once as staged, with its bytes, and nothing
# dropped. A sender that submits without synchronising (--no-sync)
# sends bytes its copies had not yet written: the stand-in runs queued
# work only when something waits, so the receiver sees it at once. What
# only a GPU proves (the real driver's IPC and copies, speed) is
# scripts/gpu-check.sh's. The DPDK engine's staging is 46-sw-loopback's.
. tests/system/lib.sh

SI=scripts/cuda-standin
[ -e "$BUILD/standin/libcudart.so.13" ] ||
	skip "no CUDA stand-in in $BUILD/standin/libcudart.so.13 (built only where nvcc is)"
command -v jq > /dev/null || skip "no jq"
TXPORT=$(( PORT + 1 ))
BUFSZ=2048
N=3000
LEN=1500

# The default config with a device region for the tx queue's payloads
# and the receiver's port as socket_config.remote_addr.
make_config
note "a tx queue in device memory passes -n on the socket engine"
add_tx_queue device 64 "$BUFSZ"

DAEMON_PREFIX=$SI
start_daemon
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}
expect_eq "queue memory" "$(txq .memory)" device
expect_eq "max_payload (the region's buf_size)" "$(txq .max_payload)" $BUFSZ
grep -q "payloads in device memory .* are copied to host memory" "$T/daemon.log" ||
	fail "no staging line in the log"

# recv NAME ARGS...: the receiver in the background, ready to receive
recv() {
	name=$1
	shift
	bg /usr/bin/python3 tests/system/tx-recv.py --port "$TXPORT" "$@" \
		> "$T/$name.out" 2>&1
	RECV=$LAST_PID
	wait_line "$T/$name.out" '^(ready|FAIL)'
}

note "phase 1: $N payloads of about $LEN bytes from a device pool"
recv recv1 --count $N --len $LEN --vary
$SI "$BUILD/tests/tx-client" --device "$SOCK" sensor0/t0 $N $LEN 32 \
	> "$T/tx1.out" 2>&1 || fail "tx-client --device: $(cat "$T/tx1.out")"
sed 's/^/   | /' "$T/tx1.out"
wait_gone "$RECV" 70
sed 's/^/   | /' "$T/recv1.out"
expect_eq "receiver (every byte, in order)" "$GONE_RC" 0
bytes=0
i=0
while [ $i -lt $N ]; do
	bytes=$((bytes + LEN - i % 3))
	i=$((i + 1))
done
wait_for '.interfaces[0].tx.queues[0].channels_open == 0'
expect_eq "packets" "$(txq .packets)" $N
expect_eq "bytes" "$(txq .bytes)" $bytes
expect_eq "submitted" "$(txq .submitted)" $N
expect_eq "engine staged (one copy to host per payload sent)" "$(txq .engine.staged)" $N
expect_eq "engine staged_bytes" "$(txq .engine.staged_bytes)" $bytes
expect_eq "engine tx_packets" "$(txq .engine.tx_packets)" $N
expect_eq "engine errors" "$(txq .engine.errors)" 0
for r in too_big bad_buffer engine_error closed; do
	expect_eq "drops $r" "$(txq .drops.$r)" 0
done

note "the metrics say the same"
ctl metrics > "$T/metrics.txt" || fail "daqirictl metrics"
grep -q "^daqiri_tx_staged_total{interface=\"sensor0\",queue=\"t0\"} $N\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_staged "$T/metrics.txt")"
grep -q "^daqiri_tx_staged_bytes_total{interface=\"sensor0\",queue=\"t0\"} $bytes\$" "$T/metrics.txt" ||
	fail "metrics: $(grep daqiri_tx_staged_bytes "$T/metrics.txt")"
if command -v promtool > /dev/null 2>&1; then
	promtool check metrics < "$T/metrics.txt" > "$T/promtool.out" 2>&1 ||
		fail "promtool: $(cat "$T/promtool.out")"
	echo "   ok  promtool check metrics"
fi

note "a sender that expects host memory is told the pool is device memory"
$SI "$BUILD/tests/tx-client" "$SOCK" sensor0/t0 1 $LEN > "$T/host.out" 2>&1 &&
	fail "tx-client without --device accepted a device pool"
grep -q "^FAIL the pool is device memory" "$T/host.out" ||
	fail "tx-client without --device: $(cat "$T/host.out")"
echo "   ok  $(head -1 "$T/host.out")"
note "a client whose CUDA cannot open the handle gets CUDA's reason"
# the machine's own libcudart (no driver here; on a GPU machine the real
# driver refuses the stand-in's handle)
"$BUILD/tests/tx-client" --device "$SOCK" sensor0/t0 1 $LEN > "$T/nocuda.out" 2>&1 &&
	fail "a device pool opened without the stand-in"
grep -q "^FAIL tx_open: .*(CUDA: cannot" "$T/nocuda.out" ||
	fail "no CUDA reason: $(cat "$T/nocuda.out")"
echo "   ok  $(head -1 "$T/nocuda.out")"
wait_for '.interfaces[0].tx.queues[0].channels_open == 0'

note "a sender that does not synchronise before it submits sends stale bytes"
recv recv2 --count 8 --len $LEN --vary --timeout 20
$SI "$BUILD/tests/tx-client" --device --no-sync "$SOCK" sensor0/t0 8 $LEN 32 \
	> "$T/tx2.out" 2>&1 || true
sed 's/^/   | /' "$T/tx2.out"
wait_gone "$RECV" 30
sed 's/^/   | /' "$T/recv2.out"
[ "$GONE_RC" -ne 0 ] || fail "the receiver got every payload right without the sender's synchronisation"
grep -q "^FAIL datagram 0:" "$T/recv2.out" ||
	fail "the receiver failed otherwise: $(cat "$T/recv2.out")"
echo "   ok  the receiver saw it: $(grep "^FAIL" "$T/recv2.out")"
stop_daemon

note "the DPDK engine takes a tx queue in device memory too (it stages; sent in 46-sw-loopback)"
awk '/^    - name: frames/ {
	print "    - name: tx_gpu"
	print "      kind: device"
	print "      affinity: 0"
	print "      num_bufs: 64"
	print "      buf_size: 2048"
}
/^      rx:$/ {
	print "      tx:"
	print "        queues:"
	print "        - name: t0"
	print "          id: 0"
	print "          batch_size: 32"
	print "          memory_regions: [tx_gpu]"
	print "          destination: {eth_dst: \"02:00:00:00:00:02\", ipv4_src: 10.0.0.1, ipv4_dst: 10.0.0.2, udp_dst: 9}"
}
{ print }' etc/examples/pcap-replay.yaml > "$T/dpdk.yaml"
grep -q "name: tx_gpu" "$T/dpdk.yaml" || fail "the DPDK example has no 'frames' region to put one beside"
"$BUILD/daqirid" -n -c "$T/dpdk.yaml" > "$T/dpdk.out" 2>&1 ||
	fail "a DPDK tx queue in device memory refused: $(cat "$T/dpdk.out")"
echo "   ok  $(tail -1 "$T/dpdk.out")"
echo "ok"
