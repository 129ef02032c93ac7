#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Sender restarts (daqirid(8) RESYNC), on the default config: every run of
# the simulator starts its counter at 0 again, close behind (within the
# window of) the batches the daemon last published. Run three times, then
# killed mid-batch (--packets) and run again, against one daemon: every
# run's tensors reach a verifying consumer and each restart is one resync.
# First, on the fresh daemon, a shuffled stream whose stragglers arrive
# after their batch went out but within its deadline: they count as late,
# each one slot missing, and never as a resync. Last, with the time rule
# turned off by a live reload, a restart too short for the volume rule:
# nothing is placed, and daqiri-consume says why.
. tests/system/lib.sh

PPB=128
CFG=$T/daqirid.yaml
make_config
start_daemon
SENT=0

# sim ARGS...: one run; afterwards every datagram it sent reached the
# stream (or the kernel dropped it) and every batch went out.
sim() {
	run_sim "$@"
	SENT=$((SENT + $(sim_field sent)))
	wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $SENT and ([.streams[] | select(.name == \"$STREAM\")][0].handoff.open_bufs == 0)"
}

identity() {
	read_stream
	expect_eq "$1: placed + drops = packets_in" \
		$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
}

# ---------------------------------------------------------------------------
note "stragglers within the deadline are late, never a resync"
# --shuffle 640 sends every 5 batches in random order: a batch whose
# packets arrive after newer ones pushed it out of the window (4) loses
# them -- some 30 ms later, well within the 100 ms deadline -- and a
# batch the window slid past before its first packet never opens (its
# packets are all late, no tensor). The consumer gets what is published.
B=20
consume shuffled 0
sim --batches $B --shuffle 640 --seed 7 --rate 20kpps
read_stream
wait_consumers "[.consumers[] | select(.pid == $C)][0].delivered == $h_published"
kill -TERM "$C"
consumed shuffled "$h_published"
identity "shuffled"
expect_eq "resync" "$r_resync" 0
[ "$r_late" -gt 0 ] || fail "the shuffle gave no straggler"
[ "$h_published" -ge $((B / 2)) ] || fail "only $h_published of $B batches published"
expect_eq "placed + late + kernel drops = sent" $((r_placed + r_late + i_kernel)) "$SENT"
expect_eq "placed + missing_slots = ppb x published" $((r_placed + r_missing_slots)) $((PPB * h_published))
note "stragglers: late=$r_late of $SENT"
late0=$r_late resync0=$r_resync

# ---------------------------------------------------------------------------
note "the simulator run three times: each run's tensors arrive"
# Run 1 is far behind batch 19 (a resync as ever); runs 2 and 3 restart
# two batches behind, within the window: a whole batch of late packets in
# a row, or resync_after_us (200000, twice timeout_us) since the last
# tensor, starts the new epoch. Either way each run gives two tensors.
expect_eq "resync_after_us (derived)" "$(ctl config | sed -n 's/^ *resync_after_us: //p')" 200000
consume runs 6
for run in 1 2 3; do
	sim --batches 2 --rate 20kpps
done
consumed runs 6
identity "three runs"
expect_eq "resync" $((r_resync - resync0)) 3
expect_eq "tensors flagged RESYNC" "$(grep -c 'flags [A-Z_|]*RESYNC' "$T/runs.out")" 3
# what a restart costs: at most a batch's worth less one packet, each
[ $((r_late - late0)) -le $((3 * (PPB - 1))) ] || fail "late grew by $((r_late - late0))"
late0=$r_late resync0=$r_resync

# ---------------------------------------------------------------------------
note "a sender killed mid-batch, then run again"
consume midbatch 4
sim --batches 0 --packets 200 --rate 20kpps
expect_eq "sim sent (killed after 200)" "$(sim_field sent)" 200
sim --batches 2 --rate 20kpps
consumed midbatch 4
identity "mid-batch"
expect_eq "resync" $((r_resync - resync0)) 2
grep -q 'batch 1 flags TIMEOUT|HAS_GAPS received 72/128' "$T/midbatch.out" ||
	fail "no partial batch 1 of the killed run: $(cat "$T/midbatch.out")"
late0=$r_late resync0=$r_resync

# ---------------------------------------------------------------------------
note "time rule off (live reload): a short restart is named by daqiri-consume"
sed -i '/^          timeout_us: 100000 /a\          resync_after_us: 0' "$CFG"
ctl reload > "$T/reload.out" || fail "reload refused: $(cat "$T/reload.out")"
grep -q "resync_after_us: 200000 -> 0" "$T/reload.out" || fail "reload: $(cat "$T/reload.out")"
expect_eq "resync_after_us (reloaded)" "$(ctl config | sed -n 's/^ *resync_after_us: //p')" 0
consume short 1
# 100 packets: fewer than a batch's worth of late packets in a row
sim --batches 1 --packets 100 --rate 20kpps
wait_line "$T/short.err" 'packets were dropped as late' 15
kill -TERM "$C"
wait_gone "$C"
sed 's/^/   | /' "$T/short.err"
expect_eq "short: daqiri-consume exit (no tensor)" "$GONE_RC" 1
grep -q "^daqiri-consume: $STREAM: 100 packets arrived in the last seconds but none was placed$" "$T/short.err" ||
	fail "no 'none was placed' line"
grep -q "resync_after_us" "$T/short.err" || fail "the hint does not name resync_after_us"
identity "short restart"
expect_eq "late" $((r_late - late0)) 100
expect_eq "resync" $((r_resync - resync0)) 0
resync0=$r_resync

note "and the next full run is followed (its first 28 packets end the row)"
consume after 2
sim --batches 2 --rate 20kpps
consumed after 2
identity "after"
expect_eq "resync" $((r_resync - resync0)) 1
expect_eq "late" $((r_late - late0)) $((100 + 27))

stop_daemon
echo "ok"
