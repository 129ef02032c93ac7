#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Software loopback (loopback: sw, the shipped etc/examples/sw-loopback.yaml)
# on the DPDK engine: daqirid's ring port loops what tx queue t0 sends back
# to rx queue q0, which lands each frame in its own buffers as a NIC's DMA
# would; the frames are classified, reordered and published. tx-client
# sends 256 numbered payloads of 1024 bytes through a TX channel, and every
# byte of the 16 tensors a consumer saves is checked against them, with the
# accounting of both directions. First in host memory (TX zero copy:
# the ring carries the channel's own buffers), then on the CUDA stand-in
# with every region in device memory: TX staged from the channel's device
# pool, frames landed in device memory by cudaMemcpy, their headers read
# through the header shadow, reordered by the CUDA backend into device
# tensors the consumer opens by CUDA IPC. What only hardware proves
# (GPUDirect, a NIC's DMA, speed) is not claimed here.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
N=256		# payloads: 16 tensors of 16
LEN=1024
B=16

# The example on our socket; lossless consumers may subscribe (the caller's
# group is the admin group).
sed -e "s|/run/daqiri/loopback.sock|$SOCK|" \
	-e "s|^    control_socket: .*|&\n    admin_group: \"$(id -gn)\"|" \
	etc/examples/sw-loopback.yaml > "$T/host.yaml"
grep -q "admin_group" "$T/host.yaml" || fail "sw-loopback.yaml changed: no control_socket line"
"$BUILD/daqirid" -n -c "$T/host.yaml" > /dev/null || fail "host config invalid"
sed -e 's/kind: host/kind: device/' -e 's/reorder_type: cpu/reorder_type: gpu/' \
	"$T/host.yaml" > "$T/device.yaml"

# check_tensors DIR: each saved tensor holds payloads seq = 16 k .. 16 k + 15
# as tx-client wrote them (bytes 0..7 seq little endian, byte j (seq + j)).
cat > "$T/check.py" <<'EOF'
import glob, sys
import numpy as np
files = sorted(f for f in glob.glob(sys.argv[1] + "/*.npy")
               if not f.endswith(".present.npy"))
n, ln = int(sys.argv[2]), int(sys.argv[3])
if len(files) != n:
    sys.exit("FAIL %d tensors saved, want %d" % (len(files), n))
for k, f in enumerate(files):
    a = np.load(f).view(np.uint8).reshape(16, ln)
    if not np.load(f[:-4] + ".present.npy").all():
        sys.exit("FAIL %s: its mask says a slot is missing" % f)
    for s in range(16):
        seq = 16 * k + s
        want = np.array([(seq >> (8 * j)) & 0xff if j < 8 else (seq + j) & 0xff
                         for j in range(ln)], dtype=np.uint8)
        bad = np.nonzero(a[s] != want)[0]
        if len(bad):
            sys.exit("FAIL %s slot %d: byte %d is %d, want %d" %
                     (f, s, bad[0], a[s][bad[0]], want[bad[0]]))
print("ok %d tensors, every byte" % n)
EOF

# phase NAME PREFIX TXFLAGS: the daemon on $T/NAME.yaml, a saving consumer,
# N payloads sent; tensors and counters checked.
phase() {
	name=$1 pre=$2 txflags=$3
	cp "$T/$name.yaml" "$T/daqirid.yaml"
	DAEMON_PREFIX=$pre
	start_daemon
	grep -q "EAL arguments: .*--vdev=net_ring_lb0" "$T/daemon.log" ||
		fail "$name: no ring port in the EAL arguments"
	grep -q "software loopback (port 'net_ring_lb0')" "$T/daemon.log" ||
		fail "$name: no loopback line in the log"
	mkdir -p "$T/$name"
	# shellcheck disable=SC2086 # pre is words on purpose
	bg $pre "$BUILD/daqiri-consume" -s "$SOCK" --lossless --quiet \
	    --save "$T/$name" --count $B --timeout 30 loop/echo > "$T/$name.out" \
	    2> "$T/$name.err"
	C=$LAST_PID
	STREAM=loop/echo
	wait_consumers "(.consumers | length) == 1"
	# shellcheck disable=SC2086
	$pre "$BUILD/tests/tx-client" $txflags --fixed "$SOCK" loop/t0 $N $LEN \
	    > "$T/$name.tx" 2>&1 || fail "$name: tx-client: $(cat "$T/$name.tx")"
	sed 's/^/   | /' "$T/$name.tx"
	wait_gone $C 60
	[ "$GONE_RC" -eq 0 ] || fail "$name: consumer exit $GONE_RC: $(cat "$T/$name.err")"
	/usr/bin/python3 "$T/check.py" "$T/$name" $B $LEN > "$T/$name.chk" 2>&1 ||
		fail "$name: $(cat "$T/$name.chk")"
	echo "   ok  $name: $(cat "$T/$name.chk")"
	read_stream
	expect_eq "$name: rx_packets (every frame looped)" "$i_rx_packets" $N
	expect_eq "$name: rx_bytes (frames of 42 + $LEN bytes)" \
		"$(ctl -j stats | jq -r '.interfaces[0].queues[0].rx_bytes')" $((N * (LEN + 42)))
	expect_eq "$name: kernel (no buffer to land in)" "$i_kernel" 0
	expect_eq "$name: truncated" "$i_truncated" 0
	expect_eq "$name: unmatched" "$i_unmatched" 0
	expect_eq "$name: placed" "$r_placed" $N
	expect_eq "$name: batches complete" "$r_batches_complete" $B
	expect_eq "$name: backend_error" "$r_backend_error" 0
	txq() {
		ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
	}
	expect_eq "$name: tx packets" "$(txq .packets)" $N
	expect_eq "$name: tx bytes" "$(txq .bytes)" $((N * LEN))
	for r in too_big bad_buffer engine_error closed no_peer; do
		expect_eq "$name: tx drops $r" "$(txq .drops.$r)" 0
	done
	TX_COPIED=$(txq .engine.copied)
	TX_STAGED=$(txq .engine.staged)
	stop_daemon
}

note "phase 1: host memory, the shipped example"
phase host "" ""
expect_eq "host: payloads copied (none: the ring carries the channel's buffers)" "$TX_COPIED" 0
expect_eq "host: payloads staged" "$TX_STAGED" 0

SI=scripts/cuda-standin
if [ -e "$BUILD/standin/libcudart.so.13" ]; then
	note "phase 2: every region in device memory, on the CUDA stand-in"
	phase device "$SI" --device
	expect_eq "device: payloads staged from the device pool" "$TX_STAGED" $N
	expect_eq "device: payloads copied" "$TX_COPIED" 0
	grep -q "are copied to host memory to be sent, counted in staged" "$T/daemon.log" ||
		fail "device: no staging line in the log"
else
	note "phase 2 skipped: no CUDA stand-in in $BUILD/standin (built only where nvcc is)"
fi
echo "ok"
