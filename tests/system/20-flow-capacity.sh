#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# rx.dynamic_flow_capacity bounds the flows added at run time: with 0 a
# flow add is refused with a message naming the key, its value, the
# interface and the config file; a deleted configured flow makes room
# for one; with 2, two more flows fit and the third is refused.
. tests/system/lib.sh

make_config -e 's/dynamic_flow_capacity: [0-9]*/dynamic_flow_capacity: 0/'
grep -q 'dynamic_flow_capacity: 0' "$T/daqirid.yaml" || fail "config has no dynamic_flow_capacity"
start_daemon
nflows() { ctl -j flow list | jq '.interfaces[0].flows | length'; }

note "capacity 0: no flow added at run time"
ctl flow add sensor0 9 0 udp_dst=9999 2> "$T/err" && fail "a flow was added with capacity 0"
grep -q "dynamic_flow_capacity 0 allows no flows added at run time beyond the 1 configured; raise it in interface 'sensor0' of $T/daqirid.yaml" \
	"$T/err" || fail "no clear reason: $(cat "$T/err")"
grep -q "no_resources" "$T/err" || fail "not no_resources: $(cat "$T/err")"
expect_eq "flows after the refusal" "$(nflows)" 1

note "a deleted flow makes room for another"
ctl flow del sensor0 0 || fail "flow del"
ctl flow add sensor0 9 0 udp_dst=9999 > /dev/null || fail "flow add after a delete"
expect_eq "flows after del and add" "$(nflows)" 1
stop_daemon

note "capacity 2: two more, not three"
make_config -e 's/dynamic_flow_capacity: [0-9]*/dynamic_flow_capacity: 2/'
start_daemon
ctl flow add sensor0 9 0 udp_dst=9999 > /dev/null || fail "first flow add"
ctl flow add sensor0 10 0 udp_dst=9998 > /dev/null || fail "second flow add"
ctl flow add sensor0 11 0 udp_dst=9997 2> "$T/err" && fail "a third flow was added with capacity 2"
grep -q "interface 'sensor0' holds 3 flows, its 1 configured and dynamic_flow_capacity 2; raise it" \
	"$T/err" || fail "no clear reason: $(cat "$T/err")"
expect_eq "flows at capacity" "$(nflows)" 3
stop_daemon
echo "ok"
