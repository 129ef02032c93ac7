#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What daqirictl and daqiri-consume say when something is wrong: no
# daemon, a path that is not a socket, an unknown flow key, arguments a
# command does not take, --help and --version. Each message says what
# went wrong and what to do next; the exit codes are daqirictl(8)'s.
. tests/system/lib.sh

# expect_err WHAT RC REGEX CMD...: CMD exits RC and its stderr matches.
expect_err() {
	what=$1 want_rc=$2 re=$3
	shift 3
	rc=0
	"$@" > "$T/out" 2> "$T/err" || rc=$?
	[ "$rc" -eq "$want_rc" ] || fail "$what: exit $rc, want $want_rc ($(cat "$T/err"))"
	grep -q -E -- "$re" "$T/err" || fail "$what: stderr '$(cat "$T/err")' lacks /$re/"
	echo "   ok  $what: $(head -1 "$T/err")"
}

note "no daemon at the socket"
expect_err "daqirictl, nothing there" 1 \
	"^daqirictl: no daqirid is listening at $T/none.sock \(is it running\? start it with 'systemctl start daqirid', or give its socket with -s / \\\$DAQIRI_SOCKET\)$" \
	"$BUILD/daqirictl" -s "$T/none.sock" status
expect_err "daqirictl, \$DAQIRI_SOCKET" 1 \
	"no daqirid is listening at $T/env.sock " env DAQIRI_SOCKET="$T/env.sock" "$BUILD/daqirictl" status
expect_err "daqiri-consume, nothing there" 1 \
	"^daqiri-consume: no daqirid is listening at $T/none.sock \(is it running\?" \
	"$BUILD/daqiri-consume" -s "$T/none.sock" sensor0/sensor_tensor
: > "$T/plain"
expect_err "daqirictl, a regular file" 1 "^daqirictl: $T/plain is not a socket" \
	"$BUILD/daqirictl" -s "$T/plain" status
expect_err "daqiri-consume, a regular file" 1 "^daqiri-consume: $T/plain is not a socket" \
	"$BUILD/daqiri-consume" -s "$T/plain" sensor0/sensor_tensor
