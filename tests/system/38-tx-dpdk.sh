#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The DPDK engine transmits: net_af_packet on one end of a veth pair
# between two network namespaces this test makes (root only; skipped with
# a reason otherwise; it fails without tshark, which install-deps
# installs), tshark capturing on the other end. dpdk-tx-tool
# drives the engine alone (tx_burst/tx_done): every frame on the wire must
# carry the configured Ethernet/IPv4/UDP headers with good IPv4 and UDP
# checksums and its payload intact, each payload exactly once, every tag
# back from tx_done exactly once; zero copy (external mbufs), the copying
# path, running out of in-flight slots (-EAGAIN) and a destination without
# eth_dst are each tried, and on net_ring (which holds sent frames until
# they are received) a full port and late completions.
. tests/system/lib.sh

NSD=dqtd$$
NSS=dqts$$
VD=dqtd$$			# the engine's end (no address)
VS=dqts$$			# the capturing end
NET=10.202.$(( $$ % 200 + 20 ))	# a /24 of our own, inside the namespaces
SRC=$NET.1			# the address the engine sends from
DST=$NET.2			# the capturing end's
SPORT=$(( PORT + 1 ))
TTL=17
DSCP=10

command -v tshark >/dev/null 2>&1 || fail "no tshark (scripts/install-deps.sh installs it)"
[ -x /usr/bin/python3 ] || fail "no /usr/bin/python3 (scripts/install-deps.sh installs it)"
[ -x "$BUILD/tests/dpdk-tx-tool" ] || fail "no $BUILD/tests/dpdk-tx-tool (make system-tools)"
veth_pair
nss ip addr add "$DST/24" dev "$VS"
DMAC=$(nss cat "/sys/class/net/$VS/address")
SMAC=$(nsd cat "/sys/class/net/$VD/address")

# tx_config FILE PACING_MBPS: the config (rx and tx queue on the port),
# for the engine alone and for daqirid; the destination is the config's.
tx_config() {
	cat > "$1" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: raw
    dpdk_args:
    - "--vdev=net_af_packet0,iface=$VD,framecnt=2048"
    - "--no-huge"
    - "--no-shconf"
    memory_regions:
    - {name: frames, kind: host, num_bufs: 1024, buf_size: 4096}
    - {name: txbuf, kind: host, num_bufs: 512, buf_size: 2048}
    interfaces:
    - name: veth
      address: net_af_packet0
      rx:
        queues:
        - {name: q0, id: 0, batch_size: 64, memory_regions: [frames]}
      tx:
        queues:
        - name: t0
          id: 0
          batch_size: 64
          memory_regions: [txbuf]
          pacing_mbps: $2
          destination: {eth_dst: "$DMAC", ipv4_src: $SRC, ipv4_dst: $DST,
                        udp_src: $SPORT, udp_dst: $PORT, ttl: $TTL, dscp: $DSCP}
  daemon:
    control_socket: $SOCK
EOF
	"$BUILD/daqirid" -n -c "$1" >/dev/null 2>"$T/check.err" ||
		fail "test config invalid: $(cat "$T/check.err")"
}
tx_config "$T/tx.yaml" 0

# capture_start NAME / capture_stop NAME: tshark on the capturing end,
# our frames only (ARP and the kernel's ICMP left out), and the probes:
# a datagram the capturing end sends to $SRC:$PPORT, which shows in
# tshark's live summary ($T/NAME.live) once the capture really runs
# (tshark says "Capturing on" a little before: frames sent at once were
# missed). capture_stop probes again so that every frame before it is in.
# CAP_NS and CAP_IF say where (the peer's end of the veth pair unless a
# phase says otherwise).
PPORT=$(( PORT + 2 ))
CAP_NS=$NSS
CAP_IF=$VS
nss ip neigh replace "$SRC" lladdr "$SMAC" dev "$VS" nud permanent
probe_wait() {
	n0=$(grep -c "$PPORT" "$T/$1.live" 2>/dev/null || true)
	i=0
	while [ "$(grep -c "$PPORT" "$T/$1.live" 2>/dev/null || true)" -le "$n0" ]; do
		kill -0 "$CAP_PID" 2>/dev/null || fail "tshark ended: $(cat "$T/$1.cap.err")"
		i=$((i + 1)); [ $i -lt 200 ] || fail "no probe in the capture within 10 s"
		ip netns exec "$CAP_NS" /usr/bin/python3 -c 'import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"probe",
    (sys.argv[1], int(sys.argv[2])))' "$SRC" "$PPORT"
		sleep 0.05
	done
}
capture_start() {
	rm -f "$T/$1.pcap" "$T/$1.cap.err" "$T/$1.live"
	bg ip netns exec "$CAP_NS" tshark -n -l -P -i "$CAP_IF" -B 64 -w "$T/$1.pcap" \
		-f "udp and (src host $SRC or dst port $PPORT)" > "$T/$1.live" 2> "$T/$1.cap.err"
	CAP_PID=$LAST_PID
	probe_wait "$1"
}
capture_stop() {
	probe_wait "$1"
	kill -INT "$CAP_PID"
	wait "$CAP_PID" 2>/dev/null || true
	forget "$CAP_PID"
	if grep -qE "[1-9][0-9]* packets? dropped" "$T/$1.cap.err"; then
		fail "the capture dropped frames: $(cat "$T/$1.cap.err")"
	fi
}

# verify NAME COUNT MIN MAX: every frame of the capture checked.
verify() {
	tshark -r "$T/$1.pcap" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
		-Y "udp.dstport == $PORT" \
		-T fields -E separator=/t -e frame.time_epoch -e eth.dst -e eth.src \
		-e ip.src -e ip.dst -e ip.ttl -e ip.dsfield.dscp -e ip.flags.df \
		-e ip.id -e udp.srcport -e udp.dstport -e udp.length \
		-e ip.checksum.status -e udp.checksum.status -e udp.payload \
		> "$T/$1.fields" 2> "$T/$1.tshark.err" ||
		fail "tshark -r: $(cat "$T/$1.tshark.err")"
	/usr/bin/python3 - "$T/$1.fields" "$2" "$3" "$4" "$DMAC" "$SMAC" "$SRC" \
		"$DST" "$TTL" "$DSCP" "$SPORT" "$PORT" <<'PY' || fail "$1: the frames on the wire are wrong"
import sys
(path, count, lo, hi, dmac, smac, src, dst, ttl, dscp, sport,
 dport) = sys.argv[1:]
count, lo, hi = int(count), int(lo), int(hi)
seen = {}
bad = []
prev_id = None
n = 0
for line in open(path):
    f = line.rstrip("\n").split("\t")
    n += 1
    (ts, ed, es, isrc, idst, ittl, idscp, df, iid, us, ud, ul, ics, ucs,
     pay) = f
    want = [(ed, dmac), (es, smac), (isrc, src), (idst, dst),
            (ittl, ttl), (idscp, dscp), (df, "1"), (us, sport),
            (ud, dport)]
    for got, exp in want:
        if got.lower() != exp.lower():
            bad.append("frame %d: %s != %s" % (n, got, exp))
    # 1 = good (0 bad, 2 unverified)
    if ics != "1" or ucs != "1":
        bad.append("frame %d: checksum status ip %s udp %s" % (n, ics, ucs))
    i = int(iid, 16) if iid.startswith("0x") else int(iid)
    if prev_id is not None and i != (prev_id + 1) & 0xffff:
        bad.append("frame %d: ip.id %d after %d" % (n, i, prev_id))
    prev_id = i
    b = bytes.fromhex(pay.replace(":", ""))
    if int(ul) != len(b) + 8:
        bad.append("frame %d: udp length %s for %d bytes" % (n, ul, len(b)))
    if hi == 0:
        # empty payloads: only their count says which came
        if b:
            bad.append("frame %d: %d bytes, want none" % (n, len(b)))
        seen[n - 1] = 1
        continue
    k = int.from_bytes(b[:4], "big")
    L = lo + (k * 37) % (hi - lo + 1)
    exp = bytearray((k + j) & 0xff for j in range(L))
    exp[0:4] = k.to_bytes(4, "big")
    if len(b) != L or b != bytes(exp):
        bad.append("frame %d: payload %d (%d bytes) is not its pattern"
                   % (n, k, len(b)))
    seen[k] = seen.get(k, 0) + 1
dups = [k for k, v in seen.items() if v > 1]
missing = [k for k in range(count) if k not in seen]
extra = [k for k in seen if k >= count]
if dups or missing or extra:
    bad.append("payloads: %d duplicated, %d missing (first %s), %d unknown"
               % (len(dups), len(missing), missing[:5], len(extra)))
for b in bad[:20]:
    print("   " + b)
print("   %d frames, %d payloads, %d problems" % (n, len(seen), len(bad)))
sys.exit(1 if bad else 0)
PY
	echo "   ok  $1: $2 frames, headers, checksums and payloads as sent"
}

tool() {
	nsd "$BUILD/tests/dpdk-tx-tool" -c "$T/tx.yaml" "$@"
}

# 1. Zero copy: payloads of every length from 16 to the queue's largest
# (odd ones too), the engine's slots run dry first (-EAGAIN), then a
# steady stream. af_packet takes chains (RTE_ETH_TX_OFFLOAD_MULTI_SEGS:
# it copies each segment into its ring itself).
N=3000
capture_start zc
tool -n $N --min 16 --max 1472 --fill --burst 32 --gap-us 100 > "$T/zc.out" 2> "$T/zc.err" ||
	fail "dpdk-tx-tool (zero copy): $(tail -5 "$T/zc.err")"
capture_stop zc
note "$(grep '^txtool' "$T/zc.out")"
grep -q "max payload 1472" "$T/zc.err" || fail "max payload is not 1500 - 28: $(grep 'tx queue' "$T/zc.err")"
expect_eq "zero copy: copied" "$(kv "$T/zc.out" copied)" 0
expect_eq "zero copy: tx_packets" "$(kv "$T/zc.out" tx_packets)" $N
[ "$(kv "$T/zc.out" eagain)" -ge 1 ] || fail "no -EAGAIN when the slots ran out"
expect_eq "slots before -EAGAIN (the region's 512 buffers)" "$(kv "$T/zc.out" fill)" 512
verify zc $N 16 1472

# 2. The copying path (a port without multi-segment tx): the same frames.
N=1000
capture_start cp
tool -n $N --min 4 --max 1472 --copy --burst 16 --gap-us 100 > "$T/cp.out" 2> "$T/cp.err" ||
	fail "dpdk-tx-tool (copy): $(tail -5 "$T/cp.err")"
capture_stop cp
note "$(grep '^txtool' "$T/cp.out")"
grep -q "payloads copied behind the headers" "$T/cp.err" || fail "no copy line in the log"
expect_eq "copy: copied" "$(kv "$T/cp.out" copied)" $N
verify cp $N 4 1472

# 2b. Empty payloads: a frame of headers alone (no payload segment).
N=64
capture_start empty
tool -n $N --min 0 --max 0 > "$T/empty.out" 2> "$T/empty.err" ||
	fail "dpdk-tx-tool (empty): $(tail -5 "$T/empty.err")"
capture_stop empty
note "$(grep '^txtool' "$T/empty.out")"
verify empty $N 0 0

# 3. A tx queue without eth_dst is refused by the engine too, by name
# (the config check refuses it first; the tool takes it out after).
if tool --no-eth-dst -n 1 > "$T/nodst.out" 2> "$T/nodst.err"; then
	fail "a tx queue without eth_dst was accepted"
fi
grep -q "tx queue 't0': destination has no eth_dst" "$T/nodst.err" ||
	fail "no message naming the queue: $(tail -3 "$T/nodst.err")"
echo "   ok  no eth_dst: refused naming tx queue 't0'"

# 4. A port that holds sent frames (net_ring loops them back to its rx
# queue, 1023 at most): when it is full tx_burst takes fewer (-EAGAIN,
# the rest not reported), no tag comes back while the port holds the
# payload, and each looped frame's payload is the pool's buffer itself.
sed -e "s/--vdev=net_af_packet0,iface=$VD,framecnt=2048/--vdev=net_ring0/" \
	-e 's/address: net_af_packet0/address: net_ring0/' \
	-e 's/num_bufs: 512, buf_size: 2048/num_bufs: 4096, buf_size: 2048/' \
	"$T/tx.yaml" > "$T/ring.yaml"
N=5000
"$BUILD/tests/dpdk-tx-tool" -c "$T/ring.yaml" -n $N --min 16 --max 1472 --loop \
	> "$T/ring.out" 2> "$T/ring.err" || fail "dpdk-tx-tool (net_ring): $(tail -5 "$T/ring.err")"
note "$(grep '^txtool' "$T/ring.out")"
held=$(kv "$T/ring.out" held)
[ "$held" -gt 0 ] && [ "$held" -lt 4096 ] ||
	fail "net_ring: $held accepted before -EAGAIN (want the port full before the 4096 slots)"
expect_eq "net_ring: tags back while the port held the frames" "$(kv "$T/ring.out" early)" 0
expect_eq "net_ring: looped frames" "$(kv "$T/ring.out" rx)" $N
expect_eq "net_ring: looped payloads that are the pool's buffers" "$(kv "$T/ring.out" rx_zc)" $N
expect_eq "net_ring: tags back" "$(kv "$T/ring.out" done)" $N

# 4b. A port that does the checksums (net_tap: its PMD computes what the
# flags ask for, as a NIC would): the IPv4 header checksum left to it and
# the UDP checksum field holding the pseudo-header sum; the frames as they
# reach the kernel's end of the tap, in the engine's namespace.
TAP=dqtp$$
sed -e "s/--vdev=net_af_packet0,iface=$VD,framecnt=2048/--vdev=net_tap0,iface=$TAP/" \
	-e 's/address: net_af_packet0/address: net_tap0/' \
	-e "s/destination: {eth_dst: \"$DMAC\",/destination: {eth_dst: \"$DMAC\", eth_src: \"$SMAC\",/" \
	"$T/tx.yaml" > "$T/tap.yaml"
grep -q "eth_src" "$T/tap.yaml" || fail "tap config"
N=2000
bg ip netns exec "$NSD" "$BUILD/tests/dpdk-tx-tool" -c "$T/tap.yaml" -n $N --min 16 --max 1472 \
	--go "$T/tap.go" --end "$T/tap.end" > "$T/tap.out" 2> "$T/tap.err"
TOOL_PID=$LAST_PID
i=0
until grep -q "port up, waiting" "$T/tap.err"; do
	kill -0 "$TOOL_PID" 2>/dev/null || fail "dpdk-tx-tool (net_tap): $(tail -5 "$T/tap.err")"
	i=$((i + 1)); [ $i -lt 600 ] || fail "net_tap port not up within 30 s"
	sleep 0.05
done
grep -q "tx queue 't0'.*checksums ip:port udp:port" "$T/tap.err" ||
	fail "net_tap: checksums not offloaded: $(grep "tx queue" "$T/tap.err")"
nsd ip link set "$TAP" up
nsd ip addr add "$DST/24" dev "$TAP"
nsd ip neigh replace "$SRC" lladdr "$SMAC" dev "$TAP" nud permanent
CAP_NS=$NSD
CAP_IF=$TAP
capture_start tap
touch "$T/tap.go"
wait_line "$T/tap.out" '^txtool'
capture_stop tap
touch "$T/tap.end"
wait "$TOOL_PID" || fail "dpdk-tx-tool (net_tap): $(tail -5 "$T/tap.err")"
forget "$TOOL_PID"
CAP_NS=$NSS
CAP_IF=$VS
note "$(grep '^txtool' "$T/tap.out")"
expect_eq "net_tap: copied" "$(kv "$T/tap.out" copied)" 0
verify tap $N 16 1472

# The full path: daqirid with the DPDK engine on net_af_packet in the
# engine's namespace, a channel (tests/system/tx-raw, the protocol by
# hand) sending, tshark on the peer.
DAEMON_PREFIX="ip netns exec $NSD"
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}

# verify_raw NAME COUNT LEN: every frame of the capture checked against
# tx-raw's payloads (bytes 0..7 the little-endian seq, byte k >= 8 is
# (seq + k) & 0xff; "vary": LEN - seq % 3 bytes), headers and checksums
# as verify's; prints the achieved rate between the first and last frame.
verify_raw() {
	tshark -r "$T/$1.pcap" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
		-Y "udp.dstport == $PORT" \
		-T fields -E separator=/t -e frame.time_epoch -e frame.len -e eth.dst \
		-e eth.src -e ip.src -e ip.dst -e ip.ttl -e ip.dsfield.dscp -e ip.flags.df \
		-e udp.srcport -e udp.dstport -e ip.checksum.status -e udp.checksum.status \
		-e udp.payload > "$T/$1.fields" 2> "$T/$1.tshark.err" ||
		fail "tshark -r: $(cat "$T/$1.tshark.err")"
	/usr/bin/python3 - "$T/$1.fields" "$2" "$3" "$DMAC" "$SMAC" "$SRC" "$DST" \
		"$TTL" "$DSCP" "$SPORT" "$PORT" > "$T/$1.verify" <<'PY' ||
import sys
(path, count, ln, dmac, smac, src, dst, ttl, dscp, sport,
 dport) = sys.argv[1:]
count, ln = int(count), int(ln)
seen, bad, ts, nbytes = {}, [], [], []
for n, line in enumerate(open(path), 1):
    (t, flen, ed, es, isrc, idst, ittl, idscp, df, us, ud, ics, ucs,
     pay) = line.rstrip("\n").split("\t")
    for got, exp in ((ed, dmac), (es, smac), (isrc, src), (idst, dst),
                     (ittl, ttl), (idscp, dscp), (df, "1"), (us, sport),
                     (ud, dport), (ics, "1"), (ucs, "1")):
        if got.lower() != exp.lower():
            bad.append("frame %d: %s, want %s" % (n, got, exp))
    b = bytes.fromhex(pay.replace(":", ""))
    seq = int.from_bytes(b[:8], "little")
    want = bytes((seq >> (8 * k)) & 0xff if k < 8 else (seq + k) & 0xff
                 for k in range(ln - seq % 3))
    if b != want:
        bad.append("frame %d: payload %d (%d bytes) is not its pattern"
                   % (n, seq, len(b)))
    seen[seq] = seen.get(seq, 0) + 1
    ts.append(float(t))
    nbytes.append(int(flen))
missing = [k for k in range(count) if k not in seen]
dups = [k for k, v in seen.items() if v > 1]
if missing or dups or len(seen) != count:
    bad.append("payloads: %d seen, %d missing (first %s), %d duplicated"
               % (len(seen), len(missing), missing[:5], len(dups)))
for x in bad[:20]:
    print("   " + x)
# bytes after the first frame over the time from the first to the last
span = ts[-1] - ts[0] if len(ts) > 1 else 0
rate = sum(nbytes[1:]) * 8 / span / 1e6 if span > 0 else 0
print("frames=%d problems=%d span_s=%.3f mbps=%.3f" % (len(ts), len(bad),
      span, rate))
sys.exit(1 if bad else 0)
PY
		{ cat "$T/$1.verify"; fail "$1: the frames on the wire are wrong"; }
	echo "   ok  $1: $2 frames, headers, checksums and payloads as sent"
	note "$(tail -1 "$T/$1.verify")"
}

# 5. Unpaced: payloads of three lengths as fast as the channel goes.
tx_config "$T/daqirid.yaml" 0
start_daemon
grep -q "tx queue 't0': port 0 tx queue 0" "$T/daemon.log" || fail "no tx queue line in the log"
expect_eq "max_payload (mtu 1500 - 28)" "$(txq .max_payload)" 1472
N=3000
capture_start full
"$BUILD/tests/tx-raw" "$SOCK" veth/t0 send $N 1472 vary > "$T/full.out" 2>&1 ||
	fail "tx-raw: $(cat "$T/full.out")"
capture_stop full
sed 's/^/   | /' "$T/full.out"
verify_raw full $N 1472
expect_eq "packets" "$(txq .packets)" $N
expect_eq "engine tx_packets" "$(txq .engine.tx_packets)" $N
expect_eq "engine copied (zero copy on af_packet)" "$(txq .engine.copied)" 0
for r in too_big bad_buffer engine_error closed; do
	expect_eq "drops $r" "$(txq .drops.$r)" 0
done
stop_daemon

# 6. Paced at 20 Mb/s (wire bytes: payload + 42): the rate between the
# first and last frame of a run of more than 2 s is at most 5% over.
# Faster is a pacer bug and fails at once. Slower happens when the TX
# worker is kept off its core for longer than the pacer's credit (1 ms)
# on a loaded machine (18.4 Mb/s was seen on this shared 2-core one), so
# that direction only catches a pacer that loses half the rate, measured
# up to three times.
MBPS=20
LEN=1400
N=$(( MBPS * 1000000 / 8 * 5 / 2 / (LEN + 41) ))	# ~2.5 s of frames
tx_config "$T/daqirid.yaml" $MBPS
start_daemon
try=1
while :; do
	capture_start paced
	"$BUILD/tests/tx-raw" "$SOCK" veth/t0 send $N $LEN vary > "$T/paced.out" 2>&1 ||
		fail "tx-raw: $(cat "$T/paced.out")"
	capture_stop paced
	sed 's/^/   | /' "$T/paced.out"
	verify_raw paced $N $LEN
	span=$(kv "$T/paced.verify" span_s)
	mbps=$(kv "$T/paced.verify" mbps)
	/usr/bin/python3 -c "import sys; sys.exit(0 if float('$span') >= 2.0 else 1)" ||
		fail "paced run lasted $span s on the wire, want >= 2 s"
	/usr/bin/python3 -c "import sys; sys.exit(0 if float('$mbps') <= $MBPS * 1.05 else 1)" ||
		fail "paced at $mbps Mb/s over $span s: faster than $MBPS + 5%"
	/usr/bin/python3 -c "import sys; sys.exit(0 if float('$mbps') >= $MBPS * 0.5 else 1)" &&
		break
	[ $try -lt 3 ] ||
		fail "paced at $mbps Mb/s over $span s in $try runs, want $MBPS (at most +5%, at least half)"
	note "paced at $mbps Mb/s over $span s: under half of $MBPS; measuring again"
	try=$((try + 1))
done
echo "   ok  paced: $mbps Mb/s over $span s (pacing_mbps $MBPS: at most +5%, at least half; run $try)"
expect_eq "paced: packets" "$(txq .packets)" $((N * try))
stop_daemon
echo "ok"
