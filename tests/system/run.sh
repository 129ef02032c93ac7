#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run every system test (tests/system/NN-name.sh): real daemon, simulator
# and consumers on loopback. Each test cleans up after itself. Prints one
# line per test and a closing "system: N passed, N failed".
set -u
BUILD=${BUILD:-build}
export BUILD
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
failed=""
for t in tests/system/[0-9][0-9]-*.sh; do
	name=$(basename "$t" .sh)
	log=$BUILD/tests/system-$name.log
	mkdir -p "$BUILD/tests"
	start=$(date +%s)
	if timeout 300 sh "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS $name ($(( $(date +%s) - start )) s)"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "FAIL $name ($(( $(date +%s) - start )) s); its log:"
		sed 's/^/    /' "$log" | tail -60
	fi
done
echo "system: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
