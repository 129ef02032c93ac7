#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Direct placement (daqirid(8) NOTES): a stream that copies its payloads
# as they are gets them from the kernel straight into its tensor slots.
# On the default config without data_types, a verifying consumer checks
# every element of every tensor: after a GSO sender (UDP GRO reads of
# several datagrams, read one per call), a plain one, a shuffled one with
# loss and duplicates (wrong guesses: moved, never lost, missing slots
# still zero-filled), and datagrams of other lengths among them (received
# scattered, put back together, counted malformed). The accounting
# identity holds throughout, and the frames that came straight in are
# counted (engine_direct).
. tests/system/lib.sh

PPB=128
make_config -e '/^ *data_types:/d' -e '/^ *input_type:/d' -e '/^ *output_type:/d' \
	-e "s/buf_size: 4096000/buf_size: $((PPB * 8000))/"
start_daemon
SENT=0

bg "$BUILD/daqiri-consume" -s "$SOCK" --verify --timeout 30 "$STREAM" \
	> "$T/cons.out" 2> "$T/cons.err"
C=$LAST_PID
wait_line "$T/cons.err" ' raw \(8000 bytes per slot\), .* memory, ring '
wait_consumers "[.consumers[] | select(.pid == $C)][0].state == \"active\""

# sim ARGS...: one run; then every datagram it sent reached the stream (or
# the kernel dropped it) and every batch went out.
sim() {
	run_sim "$@"
	SENT=$((SENT + $(sim_field sent)))
	wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $SENT and ([.streams[] | select(.name == \"$STREAM\")][0].handoff.open_bufs == 0)" 20
}

identity() {
	read_stream
	expect_eq "$1: placed + drops = packets_in" \
		$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
}

direct() {
	ctl -j stats | jq -r ".interfaces[0].queues[0].engine_${1:-direct}"
}

note "a GSO sender: reads of eight datagrams, each payload in its slot"
sim --batches 20 --gso 8 --rate 400Mbps
identity "gso"
d1=$(direct)
g1=$(direct gro_reads)
note "engine_direct=$d1 of $SENT, engine_gro_reads=$g1"
[ "$g1" -gt 0 ] || fail "no read held several datagrams (engine_gro_reads $g1)"
# Reads of several datagrams each with one pair per message would place
# an eighth; read one per call, all but the first burst's go in (2545 of
# 2560 here). Half leaves room for a consumer slow enough to run the pool
# dry, which stops the hints at the batch being filled.
[ "$d1" -ge $((SENT / 2)) ] || fail "only $d1 of $SENT frames were placed directly"

note "a plain sender"
sim --batches 20 --rate 400Mbps
identity "plain"
d2=$(direct)
[ "$d2" -gt "$d1" ] || fail "the plain run placed nothing directly (engine_direct $d2)"

note "shuffled, with loss and duplicates: wrong guesses"
sim --batches 20 --shuffle 200 --loss 0.02 --dup 0.02 --seed 3 --rate 400Mbps
identity "shuffled"
[ "$r_duplicate" -gt 0 ] || fail "no duplicate reached the stream"
[ "$r_missing_slots" -gt 0 ] || fail "no slot went missing"

note "datagrams of other lengths among the stream's"
/usr/bin/python3 - "$PORT" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (4, 500, 8007, 8009, 12000):
    s.sendto(bytes(n), ("127.0.0.1", int(sys.argv[1])))
EOF
SENT=$((SENT + 5))
sim --batches 10 --rate 400Mbps
identity "other lengths"
expect_eq "malformed" "$r_malformed" 5

kill -TERM "$C"
wait_gone "$C" 30
sed 's/^/   | /' "$T/cons.err"
expect_eq "daqiri-consume exit" "$GONE_RC" 0
read_stream
expect_eq "tensors delivered" "$(sed -n 's/.*: tensors \([0-9]*\),.*/\1/p' "$T/cons.err")" "$h_published"
expect_eq "verification errors" "$(sed -n 's/.*, errors \([0-9]*\).*/\1/p' "$T/cons.err")" 0
[ "$(sed -n 's/.*verified elements \([0-9]*\),.*/\1/p' "$T/cons.err")" -gt 0 ] ||
	fail "nothing was verified"
stop_daemon
echo "ok"
