#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# client/daqirictl.bash-completion loads in bash and completes: commands
# (from daqirictl --help, or its fixed list when daqirictl cannot be
# run), options, flow's words, flow add's KEY= words, and the running
# daemon's interfaces (asked on the socket given with -s).
. tests/system/lib.sh

command -v bash > /dev/null || { echo "SKIP: no bash"; exit 77; }
F=client/daqirictl.bash-completion
bash -n "$F" || fail "$F does not parse"

# complete PATH-PREFIX WORD...: what bash completes for the last word.
complete_words() {
	p=$1
	shift
	PATH="$p" bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _daqirictl; echo "${COMPREPLY[*]}"' "$F" "$@"
}
B=$(cd "$BUILD" && pwd):$PATH

expect_eq "daqirictl st (no daqirictl to run)" "$(complete_words "$PATH" "$T/no-daqirictl" st)" "status streams stats"
expect_eq "daqirictl st (daqirictl --help)" "$(complete_words "$B" daqirictl st)" "stats status streams"
expect_eq "every command" "$(complete_words "$B" daqirictl '')" "capture config consumers doctor flow learn metrics reload replay send stats status streams top trigger"
expect_eq "options" "$(complete_words "$B" daqirictl --)" "--socket --json --table --help --version"
expect_eq "flow" "$(complete_words "$B" daqirictl flow '')" "list add del"
expect_eq "replay" "$(complete_words "$B" daqirictl replay '')" "start status"
expect_eq "f a (shortened)" "$(complete_words "$B" daqirictl f a)" "add"
expect_eq "flow add keys" "$(complete_words "$B" daqirictl flow add eth0 7 1 udp_)" "udp_src= udp_dst="
expect_eq "flow del has no keys" "$(complete_words "$B" daqirictl flow del eth0 7 '')" ""
expect_eq "no interfaces without a daemon" \
	"$(complete_words "$B" daqirictl -s "$T/none.sock" flow list '')" ""

start_daemon
expect_eq "interfaces of the daemon at -s" \
	"$(complete_words "$B" daqirictl -s "$SOCK" flow add '')" "sensor0"
expect_eq "interfaces, --socket=" \
	"$(complete_words "$B" daqirictl --socket="$SOCK" -j flow list s)" "sensor0"
expect_eq "learn: the rx queues" \
	"$(complete_words "$B" daqirictl -s "$SOCK" learn '')" "sensor0/q0"
expect_eq "learn: after an option's value" \
	"$(complete_words "$B" daqirictl -s "$SOCK" learn --count 100 '')" "sensor0/q0"
expect_eq "learn: no queue for an option's value" \
	"$(complete_words "$B" daqirictl -s "$SOCK" learn --seconds '')" ""
expect_eq "learn: options" "$(complete_words "$B" daqirictl learn --)" "--count --seconds"
expect_eq "capture: the rx queues" \
	"$(complete_words "$B" daqirictl -s "$SOCK" capture '')" "sensor0/q0"
expect_eq "capture: after an option's value" \
	"$(complete_words "$B" daqirictl -s "$SOCK" capture --snap 100 '')" "sensor0/q0"
expect_eq "capture: nothing for an option's value" \
	"$(complete_words "$B" daqirictl -s "$SOCK" capture --count '')" ""
expect_eq "capture: then the file" \
	"$(complete_words "$B" daqirictl -s "$SOCK" capture --force sensor0/q0 "$T/daqirid.y")" "$T/daqirid.yaml"
expect_eq "capture: options" "$(complete_words "$B" daqirictl capture --s)" "--seconds --snap"
expect_eq "trigger: the streams" \
	"$(complete_words "$B" daqirictl -s "$SOCK" trigger sensor0/s)" "sensor0/sensor_tensor"
stop_daemon
