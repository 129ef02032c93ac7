#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The GPU path, whole, on the CUDA stand-in (scripts/cuda-standin,
# tests/standin/): daqirid reorders with the CUDA backend into device
# tensors, and consumers in other processes open them by CUDA IPC, wait on
# their interprocess events and check every element (daqiri-consume
# --verify), on a shuffled, lossy, duplicated stream, with the accounting
# identity; every tensor they save is byte for byte what the CPU backend
# made of the same traffic. Then the same with host_pinned frames and
# tensors (payloads read in place, bursts held until read), and a
# daemon killed and started again while a consumer holds a device tensor,
# which still reads the same. What only a GPU proves (nvcc's code, the
# real driver, speed) is scripts/gpu-check.sh's.
. tests/system/lib.sh

SI=scripts/cuda-standin
[ -e "$BUILD/standin/libcudart.so.13" ] ||
	skip "no CUDA stand-in in $BUILD (built only where nvcc is)"
PPB=128
B=24
# Deadlines of 2 s instead of 100 ms: the stand-in runs kernels on the
# CPU, which can hold the receive thread long enough for a 100 ms deadline
# to pass while a batch's packets still wait in the socket.
DEADLINE="s/timeout_us: 100000 /timeout_us: 2000000 /"
# The consumers subscribe lossless, which root or daemon.admin_group may:
# the group of whoever runs the test is made the admin group.
ADMIN="s/admin_group: \"\" /admin_group: \"$(id -gn)\" /"
SIM="--batches $B --seed 7 --shuffle 64 --loss 0.01 --dup 0.02 --rate 20kpps"

# phase NAME: the daemon on $T/daqirid.yaml, a verifying and saving
# consumer, the lossy stream; the accounting identity and the consumer's
# clean summary. The saved tensors are left in $T/NAME.
phase() {
	mkdir -p "$T/$1"
	start_daemon
	# lossless: a consumer slowed by its disk (or a busy machine) is not
	# skipped; 24 tensors fit in the buffers it may hold
	bg $CONS_PREFIX "$BUILD/daqiri-consume" -s "$SOCK" --verify --lossless \
	    --save "$T/$1" --count $B --timeout 30 "$STREAM" > "$T/$1.out" \
	    2> "$T/$1.err"
	C=$LAST_PID
	wait_consumers "(.consumers | length) == 1"
	run_sim $SIM
	wait_gone $C 60
	[ "$GONE_RC" -eq 0 ] || fail "$1: consumer exit $GONE_RC: $(cat "$T/$1.err")"
	read_stream
	expect_eq "$1: rx_packets + kernel = sim sent" $((i_rx_packets + i_kernel)) "$(sim_field sent)"
	expect_eq "$1: placed + duplicate + late + malformed + no_buffer + backend_error = packets_in" \
		$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
	expect_eq "$1: backend_error" "$r_backend_error" 0
	expect_eq "$1: no_buffer" "$r_no_buffer" 0
	expect_eq "$1: published" "$h_published" $B
	expect_eq "$1: placed + missing_slots = ppb x published" \
		$((r_placed + r_missing_slots)) $((PPB * h_published))
	note "$1: placed=$r_placed duplicate=$r_duplicate late=$r_late missing=$r_missing_slots kernel=$i_kernel timeout=$r_batches_timeout evicted=$r_batches_evicted"
	[ "$r_missing_slots" -gt 0 ] || fail "$1: the seed lost nothing"
	sum=$(grep 'daqiri-consume: .*: tensors' "$T/$1.err")
	note "$sum"
	expect_eq "$1: consumer tensors" "$(echo "$sum" | sed -n 's/.*tensors \([0-9]*\),.*/\1/p')" $B
	expect_eq "$1: consumer errors" "$(echo "$sum" | sed -n 's/.*errors \([0-9]*\).*/\1/p')" 0
	# each tensor is saved with its presence mask beside it
	expect_eq "$1: saved" "$(ls "$T/$1" | grep -vc "\.present\.npy$")" $B
	expect_eq "$1: masks saved" "$(ls "$T/$1" | grep -c "\.present\.npy$")" $B
	stop_daemon
	kill "$NOTIFY_PID" 2>/dev/null || true
	rm -f "$T/notify" "$T/notify.log"
}

# same_tensors A B: every tensor complete in both phases was saved the
# same, byte for byte (which slots a lossy batch lacks when it is
# published depends on when its deadline comes; the content of every
# slot is checked by --verify in both).
same_tensors() {
	n=0
	for q in $(sed -n 's/^seq \([0-9]*\) .*flags COMPLETE.*/\1/p' "$T/$1.out"); do
		grep -q "^seq $q .*flags COMPLETE" "$T/$2.out" || continue
		f=$(printf 'sensor0_sensor_tensor-%012d.npy' "$q")
		cmp -s "$T/$1/$f" "$T/$2/$f" || fail "$2: tensor $f differs from $1's"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || fail "$2: no tensor complete in both $1 and $2"
	echo "   ok  $2: $n tensors complete in both are the same as $1's"
}

note "the reference: the CPU backend, host tensors"
CONS_PREFIX=
make_config -e "$DEADLINE" -e "$ADMIN"
phase cpu

note "the GPU backend on the stand-in, device tensors opened by CUDA IPC"
DAEMON_PREFIX=$SI
CONS_PREFIX=$SI
make_config -e "$DEADLINE" -e "$ADMIN" -e 's/reorder_type: cpu/reorder_type: gpu/' \
	-e '/name: tensors/,/buf_size/s/kind: host$/kind: device/'
phase device
grep -q "device" "$T/daqirid.yaml" || fail "no device region in the config"
same_tensors cpu device

note "host_pinned frames and tensors: the GPU reads payloads where they landed"
# Registered host memory: the backend reads each payload in place, so the
# worker must hold a burst's frames until the kernel that reads them ran
# (a burst released early would be overwritten by the next receive).
make_config -e "$DEADLINE" -e "$ADMIN" -e 's/reorder_type: cpu/reorder_type: gpu/' \
	-e 's/kind: host$/kind: host_pinned/'
phase pinned
grep -q "without a CUDA device" "$T/daemon.log" &&
	fail "host_pinned fell back to host memory on the stand-in"
same_tensors cpu pinned

note "a daemon killed while a consumer holds a device tensor"
make_config -e 's/reorder_type: cpu/reorder_type: gpu/' \
	-e '/name: tensors/,/buf_size/s/kind: host$/kind: device/'
start_daemon
bg $SI "$BUILD/daqiri-consume" -s "$SOCK" --reconnect --verify --quiet \
    "$STREAM" 2> "$T/r.err"
C=$LAST_PID
wait_consumers "(.consumers | length) == 1"
run_sim --batches 4 --rate 20kpps --quiet
# Killed once the consumer has read all four (it holds the first, has
# released the others): the daemon's kernels run only when waited for on
# the stand-in, so a tensor not yet read when its daemon dies stays
# unwritten (on a GPU its context goes with the process too).
wait_consumers "(.consumers | map(.released == 3 and .held == 1) | all)" 20
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
forget "$DAEMON_PID"
kill "$NOTIFY_PID" 2>/dev/null || true
rm -f "$T/notify" "$T/notify.log"
start_daemon
wait_consumers "(.consumers | length) == 1" 20
run_sim --batches 4 --rate 20kpps --quiet
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == 4"
wait_consumers "(.consumers | map(.delivered == 4) | all)"
kill -INT "$C"
wait_gone $C 20
sum=$(grep 'daqiri-consume: .*: tensors' "$T/r.err")
note "$sum"
expect_eq "restart: tensors" "$(echo "$sum" | sed -n 's/.*tensors \([0-9]*\),.*/\1/p')" 8
expect_eq "restart: errors" "$(echo "$sum" | sed -n 's/.*errors \([0-9]*\),.*/\1/p')" 0
expect_eq "restart: restarts seen" "$(echo "$sum" | sed -n 's/.*restarts \([0-9]*\),.*/\1/p')" 1
expect_eq "restart: held across a restart and checked again" \
	"$(echo "$sum" | sed -n 's/.*checked again \([0-9]*\).*/\1/p')" 1
stop_daemon
echo "PASS"
