#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run every system test (tests/system/NN-name.sh): real daemon, simulator
# and consumers on loopback. Each test cleans up after itself; one that
# cannot run on this machine prints "SKIP: why" and exits 77. Prints one
# line per test and a closing "system: N passed, N failed, N skipped".
# Arguments (make system T="48 50"): run only the tests whose numbers or
# names they are.
set -u
BUILD=${BUILD:-build}
export BUILD
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
skipped=0
failed=""
for t in tests/system/[0-9][0-9]-*.sh; do
	name=$(basename "$t" .sh)
	if [ $# -gt 0 ]; then
		want=no
		for a in "$@"; do
			case $name in "$a"|"$a"-*) want=yes ;; esac
		done
		[ $want = yes ] || continue
	fi
	log=$BUILD/tests/system-$name.log
	mkdir -p "$BUILD/tests"
	start=$(date +%s)
	timeout 300 sh "$t" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name ($(( $(date +%s) - start )) s)"
	elif [ $rc -eq 77 ]; then
		# exit 77: the test cannot run here, and says why
		skipped=$((skipped + 1))
		echo "SKIP $name: $(grep '^SKIP: ' "$log" | tail -1 | cut -c7-)"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "FAIL $name ($(( $(date +%s) - start )) s); its log:"
		sed 's/^/    /' "$log" | tail -60
	fi
done
echo "system: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
