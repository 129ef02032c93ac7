#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The closed loop end to end: daqiri-sim sends a 1 kHz tensor stream
# (8 packets of 64 int4 bytes per tensor, 8000 packets/s), the C consumer
# (build/tests/closed-loop) computes a decision from every tensor and
# sends it back through the daemon's tx queue sensor0/tx0 (socket engine,
# socket_config.remote_addr = the simulator's control port), and the
# simulator (--control, --control-expect) applies them. Asserted: every
# decision arrived, in order, none missing, none bad, each naming its
# tensor and carrying the gain computed from the pattern; the channel
# and the daemon's tx queue sent them all, 32 bytes each, none dropped. The loop latency (publish -> back at the
# simulator) is printed, never asserted. First the simulator's own
# bookkeeping on hand-made packets: bad ones, a late one, a gap, and the
# wait limit.
. tests/system/lib.sh

N=${CLOSED_LOOP_TENSORS:-2000}
PPB=8
CPORT=$((PORT + 1))	# the simulator's control port
LOOP="$BUILD/tests/closed-loop"
SIM="$BUILD/daqiri-sim"
[ -x "$LOOP" ] || fail "$LOOP not built (make system-tools)"

note "the simulator's control bookkeeping, on hand-made packets"
cat > "$T/ctl-send.py" <<'EOF'
import socket, struct, sys
data_port, ctl_port = int(sys.argv[1]), int(sys.argv[2])
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(("127.0.0.1", data_port))
sink.settimeout(20)
print("ready", flush=True)
sink.recv(65536)	# the simulator sends: its control socket is bound
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def ctl(seq, gain, magic=0x31435144):
    return struct.pack("<IIQQiI", magic, seq, 100 + seq, 0, gain, 0)
for p in (ctl(0, 1000), ctl(1, 1100), ctl(3, 1300), ctl(2, 1200),
          ctl(5, 1500, magic=0x12345678), ctl(5, 1500)[:31],
          ctl(5, 1500) + b"\0", ctl(4, 1400)):
    s.sendto(p, ("127.0.0.1", ctl_port))
EOF
bg /usr/bin/python3 "$T/ctl-send.py" "$PORT" "$CPORT" > "$T/py.out"
PY=$LAST_PID
wait_line "$T/py.out" '^ready' 10
"$SIM" --dest "udp://127.0.0.1:$PORT" --ppb 4 --payload-offset 50 --payload-bytes 8 \
	--seq 336:32 --dtype int8 --batches 1 --quiet --control "udp://127.0.0.1:$CPORT" \
	--control-expect 4 --control-log "$T/hand.log" > "$T/hand.out" ||
	fail "simulator on hand-made packets: $(cat "$T/hand.out")"
wait_gone "$PY" 20
line=$(grep '^control ' "$T/hand.out")
echo "   $line"
expect_eq "applied" "$(kv "$T/hand.out" applied)" 4
expect_eq "bad (wrong magic, 31 and 33 bytes)" "$(kv "$T/hand.out" bad)" 3
expect_eq "out_of_order (2 after 3)" "$(kv "$T/hand.out" out_of_order)" 1
expect_eq "missing (2 skipped by 3)" "$(kv "$T/hand.out" missing)" 1
expect_eq "last_seq" "$(kv "$T/hand.out" last_seq)" 4
expect_eq "gain" "$(kv "$T/hand.out" gain)" 1.400
expect_eq "log: seq tensor_seq gain of each applied one" \
	"$(awk '{ printf "%s:%s:%s ", $1, $2, $4 }' "$T/hand.log")" "0:100:1000 1:101:1100 3:103:1300 4:104:1400 "

note "--control-expect with nothing coming: exit 1 at --control-wait-ms"
bg /usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20); print("ready", flush=True); s.recv(65536)' "$PORT" > "$T/py2.out"
PY=$LAST_PID
wait_line "$T/py2.out" '^ready' 10
rc=0
"$SIM" --dest "udp://127.0.0.1:$PORT" --ppb 4 --payload-offset 50 --payload-bytes 8 \
	--seq 336:32 --batches 1 --quiet --control "udp://127.0.0.1:$CPORT" \
	--control-expect 1 --control-wait-ms 200 > "$T/none.out" 2> "$T/none.err" || rc=$?
wait_gone "$PY" 20
expect_eq "exit status" "$rc" 1
grep -q 'control-expect 1: 0 control packets applied within 200 ms' "$T/none.err" ||
	fail "no wait-limit message: $(cat "$T/none.err")"
expect_eq "applied" "$(kv "$T/none.out" applied)" 0

# The loop's config: one rx stream of 1 kHz tensors (8 x 64 int4 bytes ->
# 8 x 256 bytes of fp16), 256 tensor buffers so that a consumer held up
# for a while (the lossless policy holds the stream back for it) is
# waited for rather than missing tensors, and the tx queue tx0 whose
# datagrams go to socket_config.remote_addr, the simulator's control port.
cat > "$T/daqirid.yaml" <<EOF
%YAML 1.2
---
daqiri:
  cfg:
    version: 1
    master_core: 0
    log_level: warn
    stream_type: socket
    memory_regions:
    - {name: rx_frames, kind: host, affinity: 0, num_bufs: 1024, buf_size: 9000}
    - {name: tensors, kind: host, affinity: 0, num_bufs: 256, buf_size: 2048}
    - {name: tx_bufs, kind: host, affinity: 0, num_bufs: 256, buf_size: 2048}
    interfaces:
    - name: sensor0
      address: 127.0.0.1
      socket_config:
        mode: server
        local_addr: udp://127.0.0.1:$PORT
        remote_addr: udp://127.0.0.1:$CPORT
      rx:
        queues:
        - {name: q0, id: 0, cpu_core: 1, batch_size: 64, memory_regions: [rx_frames]}
        flows:
        - {name: sensor, id: 0, match: {udp_dst: $PORT}, action: {type: queue, id: 0}}
        reorder_configs:
        - name: sensor_tensor
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [0]
          payload_byte_offset: 50
          payload_bytes: 64
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: $PPB
          data_types: {input_type: int4, output_type: fp16}
          window: 4
          fill: zero
          timeout_us: 100000
      tx:
        queues:
        - {name: tx0, id: 0, cpu_core: 1, batch_size: 64, memory_regions: [tx_bufs]}
  daemon:
    control_socket: /run/daqiri/daqirid.sock
    socket_group: ""
    admin_group: "$(id -gn)"
EOF
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" >/dev/null || fail "test config invalid"
start_daemon

note "the loop: $N tensors at 1 kHz, a decision back for each"
bg "$LOOP" -s "$SOCK" loop "$STREAM" sensor0/tx0 --count "$N" --lossless > "$T/loop.out" 2> "$T/loop.err"
LP=$LAST_PID
i=0
until grep -q '^ready' "$T/loop.out"; do
	kill -0 "$LP" 2>/dev/null || fail "the consumer ended before it was ready: $(cat "$T/loop.err")"
	i=$((i + 1)); [ $i -lt 200 ] || fail "the consumer was not ready within 10 s"
	sleep 0.05
done
wait_consumers "[.consumers[] | select(.state == \"active\")] | length == 1"
rc=0
"$SIM" -c "$T/daqirid.yaml" --rate $((PPB * 1000))pps --batches "$N" --quiet \
	--control "udp://127.0.0.1:$CPORT" --control-expect "$N" --control-wait-ms 30000 \
	--control-log "$T/loop.log" > "$T/sim.out" 2> "$T/sim.err" || rc=$?
note "$(grep '^sim sent=' "$T/sim.out")"
note "$(grep '^control ' "$T/sim.out")"
wait_gone "$LP" 30
echo "   consumer: $(grep '^loop ' "$T/loop.out")"
[ "$rc" -eq 0 ] || { cat "$T/sim.err" "$T/loop.err" >&2; fail "simulator exit $rc"; }
expect_eq "consumer exit status" "$GONE_RC" 0
expect_eq "tensors the consumer got" "$(kv "$T/loop.out" tensors)" "$N"
expect_eq "decisions it sent" "$(kv "$T/loop.out" decisions)" "$N"
expect_eq "channel completions sent" "$(kv "$T/loop.out" tx_sent)" "$N"
expect_eq "channel completions failed" "$(kv "$T/loop.out" tx_failed)" 0
expect_eq "decisions applied" "$(kv "$T/sim.out" applied)" "$N"
expect_eq "bad" "$(kv "$T/sim.out" bad)" 0
expect_eq "out_of_order" "$(kv "$T/sim.out" out_of_order)" 0
expect_eq "missing" "$(kv "$T/sim.out" missing)" 0
expect_eq "last_seq" "$(kv "$T/sim.out" last_seq)" $((N - 1))
# Every decision in order, each for the next tensor: seq k came from
# tensor first + k (the consumer's first tensor need not be seq 0).
expect_eq "log lines" "$(wc -l < "$T/loop.log" | tr -d ' ')" "$N"
bad=$(awk 'NR == 1 { t0 = $2 } $1 != NR - 1 || $2 != t0 + NR - 1 { n++ } END { print n + 0 }' "$T/loop.log")
expect_eq "decisions out of step with seq or tensor" "$bad" 0
# The gain is target 4 / the mean |sample| of slot 0: 128 int4 samples
# of the pattern ((3 x 0 + e) mod 15) - 7, exact in fp16.
want=$(awk 'BEGIN { for (e = 0; e < 128; e++) { v = e % 15 - 7; s += v < 0 ? -v : v }
	g = 4 / (s / 128) * 1000; printf "%d", g + 0.5 }')
other=$(awk -v w="$want" '$4 != w { n++ } END { print n + 0 }' "$T/loop.log")
expect_eq "decisions with a gain other than $want" "$other" 0
expect_eq "simulator's gain" "$(kv "$T/sim.out" gain)" "$(awk -v w="$want" 'BEGIN { printf "%.3f", w / 1000 }')"
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}
expect_eq "tx0 packets (daemon)" "$(txq .packets)" "$N"
expect_eq "tx0 bytes (32 per decision)" "$(txq .bytes)" $((N * 32))
for r in too_big bad_buffer engine_error closed; do
	expect_eq "tx0 drops $r" "$(txq .drops.$r)" 0
done
p50=$(sed -n 's/^control .* p50=\([^ ]*\).*/\1/p' "$T/sim.out")
p99=$(sed -n 's/^control .* p99=\([^ ]*\).*/\1/p' "$T/sim.out")
mx=$(sed -n 's/^control .* max=\([^ ]*\).*/\1/p' "$T/sim.out")
echo "   loop latency (publish -> decision back at the simulator), not asserted: p50 ${p50} us, p99 ${p99} us, max ${mx} us over $N"
stop_daemon
echo "PASS"
