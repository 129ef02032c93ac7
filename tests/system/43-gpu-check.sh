#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-check.sh, the one prepared check for a machine with a GPU,
# run here on the CUDA stand-in so that it is known to work before a GPU
# runs it: every step through make (the unit suites, the benchmark's quick
# round, daqirid and a verifying consumer in two processes over CUDA IPC),
# then the direct build a bare CUDA image falls back to, with the script's
# own Check stand-in. Proves the script and the logic, not nvcc's code,
# the driver or the speed (only a GPU does).
. tests/system/lib.sh

[ -e "$BUILD/standin/libcudart.so.13" ] ||
	skip "no CUDA stand-in in $BUILD (built only where nvcc is)"

# gpu_check LOG VAR=VALUE...: the script with those settings, on the
# stand-in, its UDP port ours; its output in $T/LOG.
gpu_check() {
	log=$1
	shift
	env "$@" GPU_CHECK_STANDIN=1 GPU_CHECK_PORT=$PORT BUILD="$BUILD" \
	    OUT= sh scripts/gpu-check.sh > "$T/$log" 2>&1 ||
		{ tail -40 "$T/$log"; fail "gpu-check.sh $* failed"; }
	grep -q '^gpu-check: RESULT: PASS on the CUDA stand-in' "$T/$log" ||
		fail "gpu-check.sh $*: no PASS line"
	grep '^gpu-check: \(ok\|FAIL\|RESULT\)' "$T/$log"
}

note "through make"
gpu_check make.log
for step in build check_reorder_cuda check_convert check_mem \
    check_reorder_kernel bench_reorder_gpu ipc; do
	grep -q "^gpu-check: ok: $step\b" "$T/make.log" || fail "step $step did not pass"
done
grep -q 'daqiri-consume: .*tensors 64,.* errors 0' "$T/make.log" ||
	fail "ipc: the consumer did not verify 64 tensors"

note "the direct build, with the script's Check stand-in"
gpu_check direct.log GPU_CHECK_DIRECT=1 GPU_CHECK_SHIM=1
grep -q '^gpu-check: ok: build (direct)' "$T/direct.log" || fail "not the direct build"
grep -q 'using the Check stand-in' "$T/direct.log" || fail "not the Check stand-in"
for step in check_reorder_cuda check_convert check_reorder_kernel bench_reorder_gpu; do
	grep -q "^gpu-check: ok: $step\b" "$T/direct.log" || fail "direct: step $step did not pass"
done
echo PASS
