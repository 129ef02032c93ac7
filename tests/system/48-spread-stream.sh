#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One stream on two workers (issue "Line rate", reorder.c "Shared plans"):
# a flow whose action lists two queues spreads a reorder stream over
# them, and the sender spreads every batch over both (two source ports,
# one datagram from each in turn; the socket engine steers by source
# port). Both workers place into the same tensors. Checked: every element
# of every tensor against the sender's pattern, under shuffle, loss and
# duplicates; the stream's counters against the sender's; each queue's
# share (rx = streams_packets_in + drops per queue, and the shares sum to
# the stream's packets_in); a sender restart is one resync; a reload that
# changes the flow applies live and the counting stays exact; one that
# would change the queues feeding the stream is refused.
. tests/system/lib.sh

command -v jq > /dev/null || skip "no jq"
PPB=64
B=24
SP=$(( PORT + 1 ))
STREAM=lo/s
# every tensor to the verifying consumer however slow it runs (ASan): the
# 72 tensors of the test fit the buffers the window leaves
CONSUME_OPTS=--lossless

cat > "$T/daqirid.yaml" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: socket
    memory_regions:
    - {name: frames0, kind: host, num_bufs: 1024, buf_size: 2048}
    - {name: frames1, kind: host, num_bufs: 1024, buf_size: 2048}
    - {name: tensors, kind: host, num_bufs: 96, buf_size: 262144}
    interfaces:
    - name: lo
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:$PORT"}
      rx:
        flow_isolation: true
        queues:
        - {name: q0, id: 0, cpu_core: 0, batch_size: 64, memory_regions: [frames0]}
        - {name: q1, id: 1, cpu_core: 1, batch_size: 64, memory_regions: [frames1]}
        flows:
        - {name: f, id: 1, action: {type: queue, ids: [0, 1]}, match: {udp_dst: $PORT}}
        reorder_configs:
        - name: s
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [1]
          payload_byte_offset: 50
          payload_bytes: 1024
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: $PPB
          data_types: {input_type: int4, output_type: fp16}
          window: 8
          timeout_us: 1000000
  daemon:
    control_socket: $SOCK
EOF
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null || fail "test config invalid"
start_daemon

expect_eq "q0 feeds the stream" "$(stat '.interfaces[0].queues[0].streams | join(",")')" "$STREAM"
expect_eq "q1 feeds the stream" "$(stat '.interfaces[0].queues[1].streams | join(",")')" "$STREAM"

q() { stat ".interfaces[0].queues[$1].$2"; }
SENT=0
PUB=0
# spread NAME ARGS...: one sender run over two source ports; afterwards
# every datagram reached a queue and every batch went out.
spread() {
	name=$1
	shift
	"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --stream "$STREAM" --src-port "$SP" \
		--src-ports 2 --batches $B --rate 20kpps "$@" > "$T/$name.sim" ||
		fail "daqiri-sim $*: $(cat "$T/$name.sim")"
	note "$(grep '^sim sent=' "$T/$name.sim")"
	SENT=$((SENT + $(kv "$T/$name.sim" sent)))
	PUB=$((PUB + B))
	wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $SENT and ([.streams[] | select(.name == \"$STREAM\")][0].handoff.published == $PUB)" 30
}
# exact WHAT: the stream's identity and every queue's share.
exact() {
	read_stream
	expect_eq "$1: placed + drops = packets_in" \
		$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
	expect_eq "$1: kernel drops" "$i_kernel" 0
	expect_eq "$1: misrouted" "$i_misrouted" 0
	expect_eq "$1: rx = streams_packets_in + unmatched + no_stream (interface)" \
		$((i_streams_packets_in + i_unmatched + i_no_stream)) "$i_rx_packets"
	s0=$(q 0 streams_packets_in) s1=$(q 1 streams_packets_in)
	[ "$s0" -gt 0 ] && [ "$s1" -gt 0 ] || fail "$1: a queue took no share: q0 $s0, q1 $s1"
	expect_eq "$1: q0 + q1 shares = the stream's packets_in" $((s0 + s1)) "$r_packets_in"
	for k in 0 1; do
		expect_eq "$1: q$k rx = its share + its drops" \
			$(( $(q $k streams_packets_in) + $(q $k unmatched) + $(q $k no_stream) + $(q $k misrouted) )) \
			"$(q $k rx_packets)"
	done
}

note "shuffled, lossy, duplicated, every batch over both queues"
consume first $B
spread first --seed 5 --shuffle 32 --loss 0.01 --dup 0.02
consumed first $B
exact first
expect_eq "placed = the sender's unique" "$r_placed" "$(kv "$T/first.sim" unique)"
expect_eq "duplicate + late = the sender's duplicates" $((r_duplicate + r_late)) \
	"$(kv "$T/first.sim" duplicates)"
expect_eq "missing_slots = the sender's dropped" "$r_missing_slots" "$(kv "$T/first.sim" dropped)"
expect_eq "packets_in = sent" "$r_packets_in" "$SENT"

note "the sender restarts its counter: one resync, tensors exact"
consume again $B
spread again --seed 6 --shuffle 16
consumed again $B
exact restart
expect_eq "resync" "$r_resync" 1

note "a reload changes the flow (the queues stay): live, still exact"
sed -i "s/match: {udp_dst: $PORT}/match: {udp_dst: $PORT, udp_src: \"$SP-$((SP + 1))\"}/" "$T/daqirid.yaml"
ctl reload > "$T/reload.out" || fail "reload: $(cat "$T/reload.out")"
grep -q 'applied' "$T/reload.out" || fail "reload applied nothing: $(cat "$T/reload.out")"
consume third $B
spread third --seed 7 --shuffle 8 --dup 0.05
consumed third $B
exact "after the reload"

note "a reload that would move the stream to one queue is refused"
sed -i 's/ids: \[0, 1\]/ids: [0]/' "$T/daqirid.yaml"
if ctl reload > "$T/reload2.out" 2>&1; then
	fail "reload to one queue was applied: $(cat "$T/reload2.out")"
fi
grep -q "stream 'lo/s': its flows now reach queue(s) 0, not 0, 1: the queues that feed a stream change only at a restart" \
	"$T/reload2.out" || fail "refusal not explained: $(cat "$T/reload2.out")"
stop_daemon
echo "ok"
