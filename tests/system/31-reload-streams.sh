#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Streams added and removed by a reload while the first stream runs: the
# new stream (with a memory region and a flow of its own) is made at the
# reload and takes traffic; removed again, its subscriber is ended with
# "stream removed" and it leaves every view. The running stream loses no
# packet across both reloads, and the interface identity holds with the
# removed stream's packets still counted. A stream added on the region of
# one it replaces is refused at its line:col.
. tests/system/lib.sh

CFG=$T/daqirid.yaml
make_config -e 's/timeout_us: 100000 /timeout_us: 2000000 /' \
	-e 's/hold_timeout_ms: 10000 /hold_timeout_ms: 0 /'
cp "$CFG" "$T/one.yaml"
# two.yaml: one.yaml and a second stream: 4000-byte payloads (IPv4 total
# length 4036, which its flow matches first), 32 packets per batch
awk '
	{ print }
	/^      buf_size: 4096000/ && !r { r = 1
		print "    - name: tensors2"; print "      kind: host"
		print "      num_bufs: 8"; print "      buf_size: 512000" }
	/^        flows:/ { print "        - name: second"; print "          id: 1"
		print "          match: {ipv4_len: 4036}"
		print "          action: {type: queue, id: 0}" }
	/^          timeout_us: [0-9]+ +# publish/ {
		print "        - name: sensor2"; print "          reorder_type: cpu"
		print "          memory_region: tensors2"; print "          flow_ids: [1]"
		print "          payload_byte_offset: 50"; print "          payload_bytes: 4000"
		print "          method:"; print "            seq_packets_per_batch:"
		print "              sequence_number: {bit_offset: 336, bit_width: 32}"
		print "              packets_per_batch: 32"
		print "          data_types: {input_type: int4, output_type: fp16}" }
' "$T/one.yaml" > "$T/two.yaml"
"$BUILD/daqirid" -n -c "$T/two.yaml" > /dev/null || fail "two.yaml is not valid"
start_daemon

same_as_file() {
	ctl config > "$T/running.yaml"
	"$BUILD/daqirid" -n -v -c "$CFG" > "$T/nv.yaml" || fail "-n -v"
	cmp -s "$T/running.yaml" "$T/nv.yaml" ||
		fail "$1: running config is not the file's: $(diff "$T/running.yaml" "$T/nv.yaml")"
}
has_stream() { ctl -j streams | jq --arg s "$1" '[.streams[].name] | index($s) != null'; }

bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 8 "$STREAM" > "$T/consumer.out"
CONS=$LAST_PID
wait_line "$T/consumer.out" '^subscribed'
B=250
bg "$BUILD/daqiri-sim" -c "$T/one.yaml" --batches $B --seed 11 --rate 6kpps
SIM=$LAST_PID
wait_for ".streams[0].reorder.packets_in > 1000"

note "a stream added with its region and flow"
cp "$T/two.yaml" "$CFG"
ctl reload > "$T/reload.out" || fail "reload refused: $(cat "$T/reload.out")"
at=$(awk '/- name: sensor2/ { print NR ":" index($0, "name"); exit }' "$CFG")
grep -q "^$CFG:$at: applied: stream 'sensor0/sensor2' added" "$T/reload.out" ||
	fail "not listed at $at: $(cat "$T/reload.out")"
grep -q "applied: memory region 'tensors2' added" "$T/reload.out" || fail "$(cat "$T/reload.out")"
expect_eq "sensor0/sensor2 listed" "$(has_stream sensor0/sensor2)" true
same_as_file "added"

bg "$BUILD/daqiri-consume" -s "$SOCK" --quiet sensor0/sensor2 2> "$T/cons2.err"
CONS2=$LAST_PID
wait_consumers '[.consumers[] | select(.stream == "sensor0/sensor2")] | length == 1'
"$BUILD/daqiri-sim" -c "$T/two.yaml" --stream sensor0/sensor2 --batches 5 --seed 12 --rate 5kpps \
	> "$T/sim2.out" || fail "sim for sensor2"
sent2=$(kv "$T/sim2.out" sent)
expect_eq "sim2 sent" "$sent2" 160
wait_for '.streams[] | select(.name == "sensor0/sensor2") | .handoff.published == 5'
expect_eq "sensor2 placed" "$(stat '.streams[] | select(.name == "sensor0/sensor2") | .reorder.placed')" 160

note "a later reload that only retunes: both streams stay"
sed -e 's/window: 4 /window: 6 /' "$T/two.yaml" > "$CFG"
ctl reload > "$T/reload.out" || fail "retune refused: $(cat "$T/reload.out")"
grep -q "applied: stream 'sensor0/sensor_tensor': window: 4 -> 6" "$T/reload.out" || fail "$(cat "$T/reload.out")"
[ "$(grep -c ": applied: " "$T/reload.out")" -eq 1 ] || fail "more than the retune: $(cat "$T/reload.out")"
expect_eq "streams" "$(ctl -j streams | jq -c '[.streams[] | select(.kind == "reorder") | [.name, .window]]')" \
	'[["sensor0/sensor_tensor",6],["sensor0/sensor2",4]]'
cp "$T/two.yaml" "$CFG"
ctl reload > /dev/null || fail "window back refused"

note "a new stream on the region of one it replaces: refused (needs a restart)"
sed -e 's/- name: sensor2/- name: sensor3/' "$T/two.yaml" > "$CFG"
if ctl reload > "$T/reload.out" 2> "$T/reload.err"; then
	fail "a stream was added on a region a running stream writes"
fi
at=$(awk '/memory_region: tensors2/ { print NR ":" index($0, "tensors2"); exit }' "$CFG")
grep -q "^$CFG:$at: stream 'sensor0/sensor3' added on memory region 'tensors2', which the running configuration uses" "$T/reload.err" ||
	fail "not reported at $at: $(cat "$T/reload.err")"
cp "$T/two.yaml" "$CFG"
same_as_file "refused"
note "two streams on one region: the loader's error, at its line:col"
sed -e 's/memory_region: tensors2/memory_region: tensors/' "$T/two.yaml" > "$CFG"
ctl reload > "$T/reload.out" 2> "$T/reload.err" && fail "two streams on one region"
at=$(awk '/memory_region: tensors$/ { n++ } n == 2 { print NR ":" index($0, "tensors"); exit }' "$CFG")
grep -q "^$CFG:$at: error: memory_region: 'tensors' is already the output of reorder config 'sensor_tensor'" "$T/reload.err" ||
	fail "not reported at $at: $(cat "$T/reload.err")"
cp "$T/two.yaml" "$CFG"
same_as_file "refused"

note "removed again: its subscriber is ended with the reason"
cp "$T/one.yaml" "$CFG"
ctl reload > "$T/reload.out" 2>&1 || fail "reload refused: $(cat "$T/reload.out")"
grep -q "applied: stream 'sensor0/sensor2' removed" "$T/reload.out" || fail "$(cat "$T/reload.out")"
wait_gone "$CONS2"
[ "$GONE_RC" -ne 0 ] || fail "the consumer of a removed stream exited 0"
grep -q 'the daemon ended the subscription: subscription [0-9]* ended: stream removed' "$T/cons2.err" ||
	fail "the consumer was not told why: $(cat "$T/cons2.err")"
wait_line "$T/daemon.log" "stream 'sensor0/sensor2' removed: 1 subscription"
expect_eq "sensor0/sensor2 listed" "$(has_stream sensor0/sensor2)" false
same_as_file "removed"

note "a region added alone is made at once, and a later reload's stream on it runs"
# three.yaml: one.yaml and two.yaml's region, no stream on it yet
awk '{ print } /^      buf_size: 4096000/ && !r { r = 1
	print "    - name: tensors2"; print "      kind: host"
	print "      num_bufs: 8"; print "      buf_size: 512000" }' "$T/one.yaml" > "$T/three.yaml"
regions2() { grep -c 'memfd:daqiri:tensors2 ' "/proc/$DAEMON_PID/maps" || true; }
wait_for '[.streams[] | select(.name == "sensor0/sensor2")] | length == 0'
i=0	# the region of the removed stream goes at a tick after it
while [ "$(regions2)" != 0 ]; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "tensors2 still mapped: $(regions2)"
	sleep 0.05
done
cp "$T/three.yaml" "$CFG"
ctl reload > "$T/reload.out" 2>&1 || fail "region alone refused: $(cat "$T/reload.out")"
expect_eq "tensors2 mapped at once" "$(regions2)" 1
cp "$T/two.yaml" "$CFG"
ctl reload > "$T/reload.out" 2>&1 || fail "a stream on the region refused: $(cat "$T/reload.out")"
"$BUILD/daqiri-sim" -c "$T/two.yaml" --stream sensor0/sensor2 --batches 2 --seed 13 --rate 5kpps \
	> "$T/sim3.out" || fail "sim for sensor2 again"
sent3=$(kv "$T/sim3.out" sent)
wait_for '.streams[] | select(.name == "sensor0/sensor2") | .reorder.placed == 64'

note "a region taken out and put back by quick reloads, 10 times: never leaked"
gone0=$(grep -c "stream 'sensor0/sensor2' removed: " "$T/daemon.log" || true)
cp "$T/three.yaml" "$CFG"
ctl reload > /dev/null 2>&1 || fail "back to the region alone"
# the next reload waits for the removed stream to be let go (said then)
i=0
while [ "$(grep -c "stream 'sensor0/sensor2' removed: " "$T/daemon.log")" -le "$gone0" ]; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "sensor2 was not let go"
	sleep 0.05
done
for i in 1 2 3 4 5 6 7 8 9 10; do
	cp "$T/one.yaml" "$CFG"
	ctl reload > "$T/reload.out" 2>&1 || fail "round $i, out: $(cat "$T/reload.out")"
	cp "$T/three.yaml" "$CFG"
	ctl reload > "$T/reload.out" 2>&1 || fail "round $i, back: $(cat "$T/reload.out")"
done
# each round's removed region went before the next put it back
expect_eq "tensors2 mappings after 10 rounds" "$(regions2)" 1
cp "$T/one.yaml" "$CFG"
ctl reload > /dev/null 2>&1 || fail "back to one.yaml"

wait_gone "$SIM" 60
[ "$GONE_RC" -eq 0 ] || fail "daqiri-sim failed"
sent1=$((B * 128))
wait_for ".streams[0].handoff.published == $B" 20
read_stream
expect_eq "rx_packets + kernel = sent (both streams)" $((i_rx_packets + i_kernel)) $((sent1 + sent2 + sent3))
expect_eq "rx = streams_packets_in + unmatched + no_stream + misrouted" \
	$((i_streams_packets_in + i_unmatched + i_no_stream + i_misrouted)) "$i_rx_packets"
expect_eq "the running stream: placed + drops = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "the running stream: placed + kernel = sent" $((r_placed + i_kernel)) $sent1
expect_eq "late" "$r_late" 0

kill -TERM "$CONS"
wait_gone "$CONS"
grep -q ' bad=0 ' "$T/consumer.out" || fail "consumer saw a bad tensor: $(cat "$T/consumer.out")"
stop_daemon
echo "ok"
