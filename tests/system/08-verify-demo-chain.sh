#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The demo chain on the default config: the simulator sends a shuffled,
# lossy, duplicated stream, daqiri-consume --verify checks every element
# of every tensor against the simulator's pattern (converted int4 -> fp16)
# and every missing slot against the fill; the missing slots are exactly
# the packets the simulator dropped on purpose, and it exits 0.
. tests/system/lib.sh

B=30
PPB=128
start_daemon
ELEMS=$(ctl -j streams | jq --arg s "$STREAM" '.streams[] | select(.name == $s) | .slot_bytes / 2')
expect_eq "elements per slot (8000 int4 bytes -> fp16)" "$ELEMS" 16000
"$BUILD/daqiri-consume" -s "$SOCK" --verify --quiet --count $B --timeout 20 "$STREAM" \
	> "$T/consume.out" 2> "$T/consume.err" &
CONS=$!
PIDS="$PIDS $CONS"
wait_consumers ".consumers | length == 1"

# Paced so that the verifying consumer (which checks 2 million elements a
# tensor, with the daemon's default max_held of 8) keeps up on a loaded
# machine: the daemon never waits for a consumer that falls behind.
run_sim --batches $B --seed 5 --shuffle 64 --loss 0.01 --dup 0.02 --rate 5kpps
unique=$(sim_field unique); dropped=$(sim_field dropped); dups=$(sim_field duplicates)
[ "$dropped" -gt 0 ] && [ "$dups" -gt 0 ] || fail "the seed gave no loss or no duplicates"
lossy=$(sed -n 's/^dropped seq=[0-9]* batch=\([0-9]*\) .*/\1/p' "$T/sim.out" | sort -u | wc -l)

wait_gone "$CONS" 30
sed 's/^/   | /' "$T/consume.err"
expect_eq "daqiri-consume exit" "$GONE_RC" 0
sum=$(grep ': tensors ' "$T/consume.err" | tail -1)
num() { echo "$sum" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"; }
read_stream
expect_eq "kernel drops" "$i_kernel" 0
expect_eq "placed = sim unique" "$r_placed" "$unique"
expect_eq "duplicate + late = sim duplicates" $((r_duplicate + r_late)) "$dups"
expect_eq "tensors" "$(num tensors)" $B
expect_eq "seq gaps" "$(num 'seq gaps')" 0
expect_eq "complete tensors = batches without a drop" "$(num complete)" $((B - lossy))
expect_eq "partial tensors" "$(num partial)" "$lossy"
expect_eq "missing slots = packets the sim dropped" "$(num 'missing slots')" "$dropped"
expect_eq "verified elements = placed slots x elements" "$(num 'verified elements')" $((unique * ELEMS))
expect_eq "errors" "$(num errors)" 0
stop_daemon
echo "ok"
