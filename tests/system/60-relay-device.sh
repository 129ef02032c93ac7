#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A device stream through daqiri-relay, on the CUDA stand-in (every
# process's CUDA calls on the CPU; UCX_TLS=tcp on loopback): the daemon
# replays a capture with loss and reorders it into device memory, the relay copies each tensor to host
# memory to send it (Debian's UCX has no CUDA transport), says so once
# and counts the bytes, and the remote consumer gets device tensors on
# its own GPU, lossless, verified element by element (the simulator's
# pattern), its missing slots those of the daemon. Proves the staging, the copies and their
# accounting end to end; not nvcc's code, the driver, or a CUDA-enabled
# UCX sending GPU to GPU (only real hardware does).
. tests/system/lib.sh

relay_setup
[ -e "$BUILD/standin/libcudart.so.13" ] ||
	skip "no CUDA stand-in in $BUILD/standin (built only where nvcc is)"
SI=scripts/cuda-standin
B=12

# the tensors in device memory (the replay engine lands frames in host
# memory), fed by a held replay of a capture with loss: a replay waits
# for a lossless consumer, so what arrives is the same on any machine,
# however slow the stand-in's CPU kernels are
make_config -e '/name: tensors/{n;s/kind: host/kind: device/;}' -e 's/reorder_type: cpu/reorder_type: gpu/'
grep -q 'kind: device' "$T/daqirid.yaml" || fail "daqirid.yaml changed: no tensor region to put in device memory"
"$BUILD/tests/mkpcap" -o "$T/cap.pcap" --batches $B --ppb 128 --port "$PORT" \
	--seed 5 --shuffle 32 --loss 0.01 --quiet > "$T/mkpcap.out" || fail "mkpcap failed"
DAEMON_PREFIX=$SI DAEMON_ARGS="--replay sensor0/q0=$T/cap.pcap --replay-hold" start_daemon
RELAY_PREFIX=$SI relay_bg -v

bg $SI "$BUILD/daqiri-consume" -s "$URL" --lossless --verify --count $B --timeout 60 "$STREAM" \
	> "$T/c.out" 2> "$T/c.err"
C=$LAST_PID
wait_line "$T/c.err" ' buffers, .* memory, ring ' 30
grep -q ' buffers, device memory, ring ' "$T/c.err" ||
	fail "the remote consumer's tensors are not in device memory: $(head -1 "$T/c.err")"
echo "   ok  remote consumer: $(head -1 "$T/c.err")"
wait_consumers ".consumers | length == 1" 30
ctl replay start > /dev/null || fail "replay start"
wait_gone "$C" 120
sed 's/^/   | /' "$T/c.err" | tail -2
expect_eq "consumer exit" "$GONE_RC" 0
sum=$(grep ': tensors ' "$T/c.err" | tail -1)
num() { echo "$sum" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"; }
expect_eq "tensors" "$(num tensors)" $B
expect_eq "seq gaps" "$(num 'seq gaps')" 0
read_stream
expect_eq "missing slots = the daemon's missing slots" "$(num 'missing slots')" "$r_missing_slots"
[ "$r_missing_slots" -gt 0 ] || fail "the capture has no loss"
expect_eq "errors" "$(num errors)" 0
expect_eq "the relay says once that it stages" \
	"$(grep -c 'staged through host memory' "$T/relay.log")" 1
# the subscription's end, logged with what it staged (-v)
wait_line "$T/relay.log" 'ended after [0-9]* tensors' 20
staged=$(sed -n 's/.*ended after [0-9]* tensors, \([0-9]*\) bytes staged.*/\1/p' "$T/relay.log")
expect_eq "staged bytes = tensors x tensor bytes" "$staged" $((B * 4096000))
kill -TERM "$RELAY"
wait_gone "$RELAY" 10
expect_eq "relay exit after SIGTERM" "$GONE_RC" 0
stop_daemon
echo "ok"
