#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Golden configuration tests. For every tests/config/NN-name.yaml this runs
# `$DAQIRID -c NN-name.yaml -n` from inside tests/config (so the file names
# in the messages are short and stable) and compares, with diff -u, against
# NN-name.expected, whose first line is the exit status ("exit: 0" or
# "exit: 1") and whose other lines are stderr then stdout, exactly.
# A case that passes (exit 0) must also survive the round trip: `-n -v`
# prints the normalised config, which must print itself again unchanged.
# Then every shipped config (etc/daqirid.yaml, etc/examples/*.yaml) must
# print exactly "FILE: configuration OK" and survive the same round trip.
#
# Usage: DAQIRID=build/daqirid sh tests/config/run.sh [NN-name ...]
# UPDATE=1 rewrites the .expected files from the current output (review
# the diff before committing).

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
daqirid=${DAQIRID:-$top/build/daqirid}
case $daqirid in
/*) ;;
*) daqirid=$(pwd)/$daqirid ;;
esac
if [ ! -x "$daqirid" ]; then
	echo "golden: $daqirid is not built" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/daqiri-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

pass=0
fail=0

# Print "exit: N" then the combined output of daqirid -c FILE -n.
# A case named *-compat.yaml is checked with --compat: its expected output
# is the key-by-key report (stdout) after the diagnostics (stderr).
run_check() {
	case "$1" in
	*-compat.yaml)
		"$daqirid" -c "$1" -n --compat >"$tmp/out" 2>"$tmp/err"
		echo "exit: $?"
		cat "$tmp/err" "$tmp/out"
		;;
	*)
		"$daqirid" -c "$1" -n >"$tmp/out" 2>&1
		echo "exit: $?"
		cat "$tmp/out"
		;;
	esac
}

# The normalised config must print itself again unchanged.
round_trip() {
	if ! "$daqirid" -c "$1" -n -v >"$tmp/a.yaml" 2>"$tmp/a.err"; then
		echo "  $1: -n -v failed:"; cat "$tmp/a.err"
		return 1
	fi
	if ! "$daqirid" -c "$tmp/a.yaml" -n -v >"$tmp/b.yaml" 2>"$tmp/b.err"; then
		echo "  $1: the normalised config does not parse:"
		cat "$tmp/b.err"
		return 1
	fi
	if ! diff -u "$tmp/a.yaml" "$tmp/b.yaml"; then
		echo "  $1: the normalised config does not print itself"
		return 1
	fi
}

cd "$top/tests/config" || exit 1
if [ $# -gt 0 ]; then
	cases=$(for c in "$@"; do echo "${c%.yaml}.yaml"; done)
else
	cases=$(ls [0-9]*.yaml)
fi
for y in $cases; do
	base=${y%.yaml}
	run_check "$y" >"$tmp/got"
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$tmp/got" "$base.expected"
	fi
	ok=1
	if [ ! -f "$base.expected" ]; then
		echo "FAIL $base: no $base.expected"
		ok=0
	elif ! diff -u "$base.expected" "$tmp/got" >"$tmp/diff"; then
		echo "FAIL $base"
		cat "$tmp/diff"
		ok=0
	elif [ "$(head -n 1 "$base.expected")" = "exit: 0" ] &&
	    ! round_trip "$y"; then
		echo "FAIL $base: round trip"
		ok=0
	fi
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done

# Shipped configs: clean, and round-trip.
if [ $# -eq 0 ]; then
	for y in "$top"/etc/daqirid.yaml "$top"/etc/examples/*.yaml; do
		[ -f "$y" ] || continue
		name=${y#"$top"/}
		printf 'exit: 0\n%s: configuration OK\n' "$y" >"$tmp/want"
		run_check "$y" >"$tmp/got"
		if ! diff -u "$tmp/want" "$tmp/got"; then
			echo "FAIL $name"
			fail=$((fail + 1))
		elif ! round_trip "$y"; then
			echo "FAIL $name: round trip"
			fail=$((fail + 1))
		else
			pass=$((pass + 1))
		fi
	done
fi

echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ]
