#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Flows changed while daqirid runs (daqirictl flow del/add): with the
# sensor flow gone its packets land in the queue's raw stream (flow
# isolation off), and back in the reorder stream once it is added again.
# Every packet is in exactly one counter at every step.
. tests/system/lib.sh

start_daemon
raw_in() { stat '[.streams[] | select(.kind == "raw")][0].raw.packets_in'; }
tensor_in() { stat '.streams[0].reorder.packets_in'; }
send() {
	"$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches "$1" --seed 3 --quiet > "$T/sim.out"
	sim_field sent
}

note "bad requests are refused with a reason"
ctl flow del sensor0 7 2> "$T/err" && fail "deleting a missing flow succeeded"
grep -q 'no flow 7' "$T/err" || fail "no reason: $(cat "$T/err")"
ctl flow add sensor0 9 5 2> "$T/err" && fail "a flow to a missing queue was added"
grep -q 'no rx queue 5' "$T/err" || fail "no reason: $(cat "$T/err")"
ctl flow add nosuch 9 0 2> "$T/err" && fail "a flow on a missing interface was added"
ctl flow add sensor0 0 0 2> "$T/err" && fail "a duplicate flow id was added"

note "sensor flow deleted: its packets go to the raw stream of q0"
ctl flow del sensor0 0 || fail "flow del"
[ "$(ctl -j flow list | jq '.interfaces[0].flows | length')" -eq 0 ] || fail "flow still listed"
n=$(send 2)
wait_for "[.streams[] | select(.kind == \"raw\")][0].raw.packets_in == $n"
[ "$(tensor_in)" -eq 0 ] || fail "reorder stream got packets without its flow"

note "added again: back in the tensor stream"
ctl flow add sensor0 0 0 name=sensor udp_dst="$PORT" > /dev/null || fail "flow add"
m=$(send 3)
wait_for ".streams[0].reorder.packets_in == $m"
[ "$(raw_in)" -eq "$n" ] || fail "raw stream got packets of a restored flow"
wait_for ".streams[0].reorder.batches_complete == 3"
[ "$(stat '.interfaces[0].rx_packets')" -eq $((n + m)) ] || fail "rx != sent"
[ "$(stat '.interfaces[0].unmatched')" -eq 0 ] || fail "unmatched with isolation off"
echo "ok"
