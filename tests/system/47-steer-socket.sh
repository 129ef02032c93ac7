#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Flow steering on the socket engine: two rx queues share one address
# (SO_REUSEPORT), and two instruments, told apart by their UDP source
# ports, each feed a reorder stream on its own queue. The kernel would
# spread their datagrams by hash, and every one that reached the other
# queue was dropped as misrouted; the flows' BPF program on the queues'
# reuseport group now steers each to its flow's queue. Both streams
# account exactly, shuffled, lossy and duplicated, with nothing
# misrouted; after a flow changes (daqirictl flow del/add, a new source
# port) the program follows it.
# With SHARE_CORE set (test 49), both queues are pinned to that core, and
# one worker thread polls both (worker.c's top): the same outcome.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
PPB=64
B=12
P1=$(( PORT + 1 )) P2=$(( PORT + 2 )) P3=$(( PORT + 3 ))
CORE=""
[ -z "${SHARE_CORE:-}" ] || CORE=", cpu_core: $SHARE_CORE"

cat > "$T/daqirid.yaml" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: socket
    memory_regions:
    - {name: frames0, kind: host, num_bufs: 1024, buf_size: 2048}
    - {name: frames1, kind: host, num_bufs: 1024, buf_size: 2048}
    - {name: tensors_a, kind: host, num_bufs: 16, buf_size: 262144}
    - {name: tensors_b, kind: host, num_bufs: 16, buf_size: 262144}
    interfaces:
    - name: lo
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:$PORT"}
      rx:
        flow_isolation: true
        queues:
        - {name: q0, id: 0, batch_size: 64, memory_regions: [frames0]$CORE}
        - {name: q1, id: 1, batch_size: 64, memory_regions: [frames1]$CORE}
        flows:
        - {name: a, id: 1, action: {type: queue, id: 0}, match: {udp_src: $P1}}
        - {name: b, id: 2, action: {type: queue, id: 1}, match: {udp_src: $P2}}
        reorder_configs:
$(for x in a:1 b:2; do cat <<EOR
        - name: ${x%:*}
          reorder_type: cpu
          memory_region: tensors_${x%:*}
          flow_ids: [${x#*:}]
          payload_byte_offset: 50
          payload_bytes: 1024
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: $PPB
          data_types: {input_type: int4, output_type: fp16}
          timeout_us: 1000000
EOR
done)
  daemon:
    control_socket: $SOCK
EOF
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null || fail "test config invalid"
start_daemon
grep -q "interface 'lo': 2 rx queues: the kernel (a BPF program on the queues' reuseport group) steers each flow's frames to its queue" \
	"$T/daemon.log" || fail "no steering line in the log: $(cat "$T/daemon.log")"

if [ -n "${SHARE_CORE:-}" ]; then
	grep -q "interface 'lo': rx queues q0, q1 share core $SHARE_CORE: one worker thread polls them" \
		"$T/daemon.log" || fail "no core-sharing line in the log: $(cat "$T/daemon.log")"
	threads=$(cat /proc/"$DAEMON_PID"/task/*/comm | grep '^rx:' | sort | tr '\n' ' ')
	expect_eq "rx threads" "$threads" "rx:q0+ "
fi
expect_eq "q0 runs stream a (stats)" "$(ctl -j stats | jq -c '.interfaces[0].queues[0].streams')" '["lo/a"]'
expect_eq "q1 runs stream b (stats)" "$(ctl -j stats | jq -c '.interfaces[0].queues[1].streams')" '["lo/b"]'

# sim NAME STREAM SRC_PORT SEED: one instrument, in the background
sim() {
	bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --stream "lo/$2" --src-port "$3" \
		--batches $B --seed "$4" --shuffle 32 --loss 0.01 --dup 0.02 \
		--rate 20kpps > "$T/$1.out"
}
# field NAME KEY: a number from that simulator's summary
field() {
	kv "$T/$1.out" "$2"
}
# check NAME STREAM: the stream's counters against its simulator's
check() {
	STREAM=lo/$2
	wait_for ".streams[] | select(.name == \"lo/$2\") | .handoff.published == $B" 20
	read_stream
	expect_eq "$2: placed = its sender's unique" "$r_placed" "$(field "$1" unique)"
	expect_eq "$2: duplicate + late = its sender's duplicates" \
		$((r_duplicate + r_late)) "$(field "$1" duplicates)"
	expect_eq "$2: missing_slots = its sender's dropped" "$r_missing_slots" "$(field "$1" dropped)"
	expect_eq "$2: packets_in = its sender's sent" "$r_packets_in" "$(field "$1" sent)"
}

note "two instruments at once, each to its own queue"
sim sa a $P1 5
A=$LAST_PID
sim sb b $P2 6
Bp=$LAST_PID
wait_gone $A 60
[ "$GONE_RC" -eq 0 ] || fail "sender a: $(cat "$T/sa.out")"
wait_gone $Bp 60
[ "$GONE_RC" -eq 0 ] || fail "sender b: $(cat "$T/sb.out")"
check sa a
check sb b
q() { ctl -j stats | jq -r ".interfaces[0].queues[$1].$2"; }
expect_eq "misrouted (interface)" "$(stat '.interfaces[0].misrouted')" 0
expect_eq "q0 received exactly a's datagrams" "$(q 0 rx_packets)" "$(field sa sent)"
expect_eq "q1 received exactly b's datagrams" "$(q 1 rx_packets)" "$(field sb sent)"
expect_eq "kernel drops" "$(stat '.interfaces[0].kernel')" 0

note "flow b moves to another source port: the program follows"
ctl flow del lo 2 > /dev/null || fail "flow del"
ctl flow add lo 2 1 name=b udp_src=$P3 > /dev/null || fail "flow add"
before=$(q 1 rx_packets)
"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --stream lo/b --src-port $P3 --batches 2 \
	--seed 9 --quiet > "$T/sc.out" || fail "sender c: $(cat "$T/sc.out")"
n=$(field sc sent)
wait_for ".interfaces[0].queues[1].rx_packets == $((before + n))"
expect_eq "misrouted after the change" "$(stat '.interfaces[0].misrouted')" 0
expect_eq "q0 got none of them" "$(q 0 rx_packets)" "$(field sa sent)"
stop_daemon
echo "ok"
