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

note "usage errors name the mistake (and need no daemon)"
N=$T/none.sock
expect_err "flow add, unknown key" 2 \
	'^daqirictl: flow add: unknown key "udp_port" \(valid: name, udp_src, udp_dst, ipv4_src, ipv4_dst, ipv4_len\); did you mean udp_src or udp_dst\?$' \
	"$BUILD/daqirictl" -s "$N" flow add eth0 7 1 udp_port=7000
expect_err "flow add, a typo" 2 'unknown key "udp_dts" .*; did you mean udp_dst\?$' \
	"$BUILD/daqirictl" -s "$N" flow add eth0 7 1 udp_dts=7000
expect_err "flow add, no =" 2 '"udp_dst" is not KEY=VALUE \(keys: name, udp_src' \
	"$BUILD/daqirictl" -s "$N" flow add eth0 7 1 udp_dst
expect_err "status with an argument" 2 "^daqirictl: status takes no arguments; got 'extra'$" \
	"$BUILD/daqirictl" -s "$N" status extra
grep -q '^usage: daqirictl \[-s SOCKET\] \[-j | -t\] status$' "$T/err" || fail "no usage line after it"
expect_err "flow del, too few" 2 "^daqirictl: flow del needs 2 arguments, got 1$" \
	"$BUILD/daqirictl" -s "$N" flow del eth0
expect_err "flow list, too many" 2 "^daqirictl: flow list takes at most 1 argument; 'b' is one too many$" \
	"$BUILD/daqirictl" -s "$N" flow list a b
expect_err "top, not a count" 2 "^daqirictl: top: COUNT must be a number of refreshes \(0: until q or Ctrl-C\); got 'x'$" \
	"$BUILD/daqirictl" -s "$N" top x
expect_err "unknown command" 2 '^daqirictl: unknown command "frob"; valid: status, streams, consumers, stats, flow, top, metrics, reload, doctor, learn, capture, trigger, replay, config, send$' \
	"$BUILD/daqirictl" -s "$N" frob

note "--help and --version"
"$BUILD/daqirictl" --help > "$T/out" 2> "$T/err" || fail "--help exits non-zero"
[ -s "$T/err" ] && fail "--help wrote to stderr: $(cat "$T/err")"
for c in status streams consumers stats "flow list" "flow add" "flow del" top metrics; do
	grep -q "^  $c" "$T/out" || fail "--help lacks command $c"
done
echo "   ok  --help: the usage and every command on stdout, exit 0"
"$BUILD/daqirictl" -h | cmp -s - "$T/out" || fail "-h differs from --help"
expect_eq "--version" "$("$BUILD/daqirictl" --version)" "daqirictl 0.1.0"
expect_eq "-V" "$("$BUILD/daqirictl" -V)" "daqirictl 0.1.0"
expect_err "unknown long option" 2 "^daqirictl: unknown option '--bogus' \(daqirictl --help lists the options\)$" \
	"$BUILD/daqirictl" --bogus status
expect_err "-s without a socket" 2 "^daqirictl: option '-s' needs an argument" \
	"$BUILD/daqirictl" -s
expect_err "--socket=PATH" 1 "no daqirid is listening at $N " "$BUILD/daqirictl" --socket="$N" status

note "a daemon's refusal: its message and status, exit 1; -j the reply on stdout"
start_daemon
expect_err "flow del of no flow" 1 "^daqirictl: flow del: interface 'sensor0' has no flow 99 \(no_such_flow\)$" \
	ctl flow del sensor0 99
rc=0
ctl -j flow del sensor0 99 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "-j refusal exit" "$rc" 1
expect_eq "-j refusal status" "$(jq -r .status "$T/out")" no_such_flow
[ -s "$T/err" ] && fail "-j refusal wrote to stderr: $(cat "$T/err")"
ctl flow add sensor0 99 0 udp_dst=7000 > "$T/out" || fail "flow add failed"
expect_eq "flow add prints the rule" "$(sed -n 's/^  id: //p' "$T/out")" 99
expect_eq "flow del prints nothing" "$(ctl flow del sensor0 99 | wc -c)" 0
stop_daemon

if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
	note "permission denied: the socket's group is named, with how to join it"
	chmod 755 "$T"
	start_daemon
	# socket_group unset: the daemon's group, root's; joining it is no advice
	expect_err "daqirictl as uid 65534, root's group" 1 \
		"^daqirictl: permission denied on $SOCK: the socket is for root only, socket_group in daqirid.yaml is unset or root \(set it, e.g. socket_group: daqiri, restart daqirid, then add yourself: usermod -aG daqiri \\\$USER, and log in again\)$" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$BUILD/daqirictl" -s "$SOCK" status
	stop_daemon
	# a group of its own: named, with how to join it
	# (a system group that uid 65534, gid 65534, is not in)
	grp=daemon
	getent group daemon > /dev/null || grp=""
	if [ -n "$grp" ]; then
		rm -f "$T/daqirid.yaml"
		make_config -e "s/socket_group: [^ ]*/socket_group: $grp/"
		start_daemon
		expect_eq "socket group" "$(command stat -c %G "$SOCK")" "$grp"	# lib.sh has a stat()
		expect_err "daqirictl as uid 65534, group $grp" 1 \
			"^daqirictl: permission denied on $SOCK: the socket is for root and the group set by socket_group in daqirid.yaml, here '$grp' \(add yourself to that group: usermod -aG $grp \\\$USER, then log in again\)$" \
			setpriv --reuid=65534 --regid=65534 --clear-groups "$BUILD/daqirictl" -s "$SOCK" status
		stop_daemon
	fi
fi
