#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The DPDK engine on net_pcap, with the shipped example config
# (etc/examples/pcap-replay.yaml) pointed at captures mkpcap writes: a
# shuffled, lossy, duplicated capture with frames for no flow and short
# ones comes out with exact accounting, a clean capture replayed in a
# loop (infinite_rx) verifies element by element in daqiri-consume, and
# daqirictl learn finds the example's layout in a capture's frames.
. tests/system/lib.sh

PPB=128
ELEMS=16000		# 8000 int4 bytes -> fp16 elements per slot
STREAM=replay/sensor_tensor
RAW=replay/q0

# pcap_config PCAP [VDEV-OPTIONS]: the example on PCAP, our socket, and a
# reorder deadline of 1 s instead of 10 ms (a loaded machine must not time
# a batch out while its own frames still wait in the capture).
pcap_config() {
	sed -e "s|rx_pcap=/var/lib/daqiri/capture.pcap|rx_pcap=$1${2:-}|" \
		-e 's|timeout_us: 10000$|timeout_us: 1000000|' \
		-e "s|/run/daqiri/replay.sock|$SOCK|" \
		etc/examples/pcap-replay.yaml > "$T/daqirid.yaml"
	grep -q "rx_pcap=$1" "$T/daqirid.yaml" || fail "pcap-replay.yaml changed: no rx_pcap to point"
	"$BUILD/daqirid" -n -c "$T/daqirid.yaml" >/dev/null || fail "test config invalid"
}

# mk_field NAME: a value from mkpcap's summary line.
mk_field() {
	sed -n 's/^mkpcap .*\b'"$1"'=\([0-9]*\).*/\1/p' "$T/mkpcap.out"
}

# ---------------------------------------------------------------------------
note "phase 1: a shuffled, lossy, duplicated capture, replayed once"
B=12
JUNK=20
SHORT=5
"$BUILD/tests/mkpcap" -o "$T/lossy.pcap" --batches $B --seed 7 --shuffle 32 \
	--loss 0.01 --dup 0.02 --junk $JUNK --short $SHORT > "$T/mkpcap.out" ||
	fail "mkpcap failed"
note "$(grep '^mkpcap ' "$T/mkpcap.out")"
frames=$(mk_field frames); sensor=$(mk_field sensor); unique=$(mk_field unique)
dropped=$(mk_field dropped); dups=$(mk_field duplicates); lossy=$(mk_field lossy_batches)
[ "$dropped" -gt 0 ] && [ "$dups" -gt 0 ] || fail "the seed gave no loss or no duplicates"
expect_eq "mkpcap: unique + dropped = batches x ppb" $((unique + dropped)) $((B * PPB))
expect_eq "mkpcap: frames = sensor + junk + short" "$frames" $((sensor + JUNK + SHORT))

pcap_config "$T/lossy.pcap"
t0=$(date +%s%N)
start_daemon
grep -q 'DPDK: EAL arguments: .*--no-huge' "$T/daemon.log" || fail "no EAL argument line in the log"
grep -q "DPDK port 0 'net_pcap0' (net_pcap)" "$T/daemon.log" || fail "no port line in the log"
expect_eq "engine" "$(ctl -j status | jq -r '.engine')" dpdk
wait_for ".interfaces[0].rx_packets == $frames"
t1=$(date +%s%N)
# The last lossy batches go out at their deadline (1 s after their first
# frame); the rest complete or are pushed out by newer batches.
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $B"
read_stream
expect_eq "rx_packets = frames in the capture" "$i_rx_packets" "$frames"
expect_eq "kernel (imissed + rx_nombuf)" "$i_kernel" 0
expect_eq "truncated" "$i_truncated" 0
expect_eq "streams_packets_in = rx_packets" "$i_streams_packets_in" "$i_rx_packets"
expect_eq "unmatched" "$i_unmatched" 0
expect_eq "misrouted" "$i_misrouted" 0
expect_eq "stream packets_in = sensor frames + short ones" "$r_packets_in" $((sensor + SHORT))
expect_eq "raw stream packets_in = frames for no flow" \
	"$(ctl -j stats | jq --arg s $RAW '.streams[] | select(.name == $s) | .raw.packets_in')" $JUNK
expect_eq "placed + duplicate + late + malformed + no_buffer = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "placed = mkpcap unique" "$r_placed" "$unique"
expect_eq "duplicate + late = mkpcap duplicates" $((r_duplicate + r_late)) "$dups"
expect_eq "malformed = short frames" "$r_malformed" $SHORT
expect_eq "missing_slots = mkpcap dropped" "$r_missing_slots" "$dropped"
expect_eq "no_buffer" "$r_no_buffer" 0
expect_eq "resync" "$r_resync" 0
expect_eq "published" "$h_published" $B
expect_eq "complete batches = batches without a drop" "$r_batches_complete" $((B - lossy))
expect_eq "complete + timeout + evicted = published" \
	$((r_batches_complete + r_batches_timeout + r_batches_evicted)) "$h_published"
ms=$(( (t1 - t0) / 1000000 ))
note "phase 1: $frames frames of $(mk_field frame_bytes) bytes in ${ms} ms from start-up (EAL included)"
stop_daemon
grep -q 'Terminated: stopping' "$T/daemon.log" || fail "daqirid did not stop through its signalfd"
cp "$T/daemon.log" "$T/daemon-1.log"
# the notify listener leaves with STOPPING=1; the next start needs its socket
wait_gone "$NOTIFY_PID"

# ---------------------------------------------------------------------------
note "phase 2: a clean capture in a loop (infinite_rx=1), verified by a consumer"
K=12
"$BUILD/tests/mkpcap" -o "$T/clean.pcap" --batches 8 --seed 1 --quiet > "$T/mkpcap.out" ||
	fail "mkpcap failed"
pcap_config "$T/clean.pcap" ",infinite_rx=1"
start_daemon
"$BUILD/daqiri-consume" -s "$SOCK" --verify --quiet --count $K --timeout 20 "$STREAM" \
	> "$T/consume.out" 2> "$T/consume.err" &
CONS=$!
PIDS="$PIDS $CONS"
wait_gone "$CONS" 60
sed 's/^/   | /' "$T/consume.err"
expect_eq "daqiri-consume exit" "$GONE_RC" 0
sum=$(grep ': tensors ' "$T/consume.err" | tail -1)
num() { echo "$sum" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"; }
expect_eq "tensors" "$(num tensors)" $K
expect_eq "partial tensors" "$(num partial)" 0
expect_eq "missing slots" "$(num 'missing slots')" 0
expect_eq "verified elements = tensors x ppb x elements" "$(num 'verified elements')" $((K * PPB * ELEMS))
expect_eq "errors" "$(num errors)" 0
read_stream
[ "$r_placed" -ge $((K * PPB)) ] || fail "placed $r_placed < $((K * PPB))"
expect_eq "malformed" "$r_malformed" 0
expect_eq "duplicate" "$r_duplicate" 0
expect_eq "placed + duplicate + late + malformed + no_buffer = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
note "phase 2: $i_rx_packets frames replayed, $r_resync loops (resync), $h_published tensors"
stop_daemon
wait_gone "$NOTIFY_PID"

# ---------------------------------------------------------------------------
note "phase 3: daqirictl learn on a capture of known layout, in a loop"
# 10 batches: 1280 frames a loop, so each loop's start is a jump of the
# counter (more than 1024 back), not a late packet. The example's layout
# is what mkpcap writes: the counter at bit 336, 32 bits, 8000 sample
# bytes from byte 50; 3840 frames span at least two loop starts.
"$BUILD/tests/mkpcap" -o "$T/learn.pcap" --batches 10 --seed 3 --shuffle 16 --quiet \
	> "$T/mkpcap.out" || fail "mkpcap failed"
pcap_config "$T/learn.pcap" ",infinite_rx=1"
start_daemon
ctl -j learn --count 3840 --seconds 60 "$RAW" > "$T/learn.json" 2> "$T/learn.err" ||
	fail "daqirictl learn: $(cat "$T/learn.err")"
j() { jq -r "$1" "$T/learn.json"; }
expect_eq "learn: frames" "$(j .frames)" 3840
expect_eq "learn: tap full" "$(j .tap_full)" 0
expect_eq "learn: confidence" "$(j .confidence)" high
expect_eq "learn: sequence bit_offset" "$(j .seq_bit_offset)" 336
expect_eq "learn: sequence bit_width" "$(j .seq_bit_width)" 32
expect_eq "learn: payload_byte_offset" "$(j .payload_byte_offset)" 50
expect_eq "learn: payload_bytes" "$(j .payload_bytes)" 8000
expect_eq "learn: frame length" "$(j .len)" 8050
expect_eq "learn: the flow that matches" "$(j .flow_id)" 0
[ "$(j .restarts)" -ge 2 ] || fail "learn: $(j .restarts) jumps in 3 loops of the capture"
[ "$(j .reorder_depth)" -lt 16 ] || fail "learn: reorder depth $(j .reorder_depth) from a shuffle of 16"
echo "   ok  learn: $(j .restarts) loop starts seen as jumps, reorder depth $(j .reorder_depth)"
stop_daemon
echo "ok"
