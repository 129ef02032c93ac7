#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqiri-sim refuses what a newcomer cannot have meant and says so before
# sending anything: a batch of more than 2^20 packets without
# --allow-huge-batch, --gso 0. It prints the batch geometry before it
# sends, and the four layout flags given together replace single values
# of the config's layout (the built-in one too): the input type and the
# destination stay, and the daemon takes every packet as well formed.
# (The sends are paced so that the kernel never drops one on a loaded
# machine.)
. tests/system/lib.sh

SIM="$BUILD/daqiri-sim"
start_daemon

note "a 2^28-packet batch is refused, nothing is sent"
for cfg in "-c $T/daqirid.yaml" ""; do
	rc=0
	# shellcheck disable=SC2086 # $cfg is words on purpose
	"$SIM" $cfg --batch-field 400:4 --batches 1 > "$T/huge.out" 2> "$T/huge.err" || rc=$?
	sed 's/^/   | /' "$T/huge.err"
	expect_eq "exit of a huge batch (${cfg:-built-in config})" "$rc" 1
	grep -q 'a batch of 268435456 packets .*is more than 1048576.*--allow-huge-batch' \
		"$T/huge.err" || fail "no explanation of the refusal"
	! grep -q '^sim sent=' "$T/huge.out" || fail "it sent something"
done
expect_eq "packets the daemon saw" "$(sstat '.reorder.placed')" 0

note "--gso 0 is refused"
rc=0
"$SIM" -c "$T/daqirid.yaml" --gso 0 --batches 1 > /dev/null 2> "$T/gso.err" || rc=$?
sed 's/^/   | /' "$T/gso.err"
expect_eq "exit of --gso 0" "$rc" 1
grep -q -- '--gso: 0 is not 1\.\.64' "$T/gso.err" || fail "no message for --gso 0"

note "the batch geometry comes before sending"
"$SIM" -c "$T/daqirid.yaml" --batches 2 --rate 20kpps > "$T/sim.out" 2> "$T/sim.err" || fail "daqiri-sim failed"
sed 's/^/   | /' "$T/sim.err"
grep -q '^daqiri-sim: 128 packets of 8008 bytes per batch (1025024 bytes); 2 batches: 256 packets, 2050048 bytes to send$' \
	"$T/sim.err" || fail "no batch geometry on stderr"
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.placed] | .[0] == 256"

note "the four layout flags on the built-in config keep its type and stream"
"$SIM" --seq 336:32 --ppb 128 --payload-offset 50 --payload-bytes 8000 \
	--dest "udp://127.0.0.1:$PORT" --batches 2 --rate 20kpps > "$T/sim.out" 2> "$T/sim.err" ||
	{ cat "$T/sim.err" >&2; fail "daqiri-sim with the four layout flags failed"; }
head -1 "$T/sim.out" | sed 's/^/   | /'
grep -q '^sim stream=sensor0/sensor_tensor .* samples=int4@50+8000 ' "$T/sim.out" ||
	fail "the layout flags dropped the built-in config"
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.packets_in] | .[0] == 512"

note "the four flags with -c: one changed value, the others stay"
"$SIM" -c "$T/daqirid.yaml" --seq 336:32 --ppb 64 --payload-offset 50 --payload-bytes 8000 \
	--batches 2 --rate 20kpps > "$T/sim.out" 2> "$T/sim.err" || fail "daqiri-sim -c with the four flags failed"
head -1 "$T/sim.out" | sed 's/^/   | /'
grep -q "^sim stream=sensor0/sensor_tensor dest=udp://127.0.0.1:$PORT .* ppb=64 .* samples=int4@50+8000 " \
	"$T/sim.out" || fail "the layout flags with -c lost a config value"
wait_for "[.streams[] | select(.name == \"$STREAM\") | .reorder.packets_in] | .[0] == 640"
# Every run starts at sequence 0: the later runs' first packets are late (until
# the daemon resyncs, daqirid(8) RESYNC) or
# duplicates to the reorder, but none is malformed.
read_stream
expect_eq "malformed" "$r_malformed" 0
stop_daemon
echo "ok"
