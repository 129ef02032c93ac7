#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Connection limits and replies of any size (issue 7, attacks 4 and 8).
# An unprivileged peer (uid 65534) opens 1000 connections that never say
# hello: the per-uid cap, then max_consumers turn most away with a reason,
# root's daqirictl still answers from the reserved slots, and the hello
# deadline closes the idle ones. Then 4096 subscriptions (16 streams x 256): "consumers"
# lists every one (in several reply parts), and stats, metrics and flow
# list still work; no connection is dropped for the size of a reply.
. tests/system/lib.sh

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to become uid 65534"; exit 77; }
chmod 755 "$T"
FLOOD=1000

# ctl_status JQ-EXPR: one value from `daqirictl -j status`.
ctl_status() {
	ctl -j status | jq -r "$1"
}

# wait_status JQ-CONDITION [seconds]: until the status satisfies it.
wait_status() {
	i=0
	lim=$(( ${2:-10} * 20 ))
	while [ "$(ctl_status "$1")" != "true" ]; do
		i=$((i + 1)); [ $i -lt $lim ] || fail "timed out waiting for: $1 (status: $(ctl -j status | jq -c .control))"
		sleep 0.05
	done
}

# flood EXPECTED_HELD REFUSED_COUNTER: 1000 idle connections from uid
# 65534 against the running daemon.
flood() {
	bg "$BUILD/tests/conn-flood" "$SOCK" $FLOOD > "$T/flood.out"
	FLOOD_PID=$LAST_PID
	wait_line "$T/flood.out" "^opened=$FLOOD" 60
	note "$FLOOD connections opened by uid 65534, none said hello"
	# the daemon has seen them all: every one is held or refused
	wait_status ".control.current - .control.current_admin + .control.$2 == $FLOOD" 30
	c=$(ctl -j status | jq -c .control)
	note "daqirictl status answers: $c"
	expect_eq "unprivileged connections held" \
		"$(echo "$c" | jq '.current - .current_admin')" "$1"
	expect_eq "refused ($2)" "$(echo "$c" | jq ".$2")" $((FLOOD - $1))
	# the attacker was told why
	wait_line "$T/flood.out" "refused=$((FLOOD - $1)) " 30
	note "the hello deadline closes the idle ones"
	wait_status ".control.hello_timeouts == $1 and .control.current == .control.current_admin" 30
	wait_line "$T/flood.out" "hello_timeout=$1 closed=$FLOOD open=0" 30
	wait_gone "$FLOOD_PID" 30
	expect_eq "conn-flood exit" "$GONE_RC" 0
	kill -0 "$DAEMON_PID" || fail "daqirid died"
}

note "phase 1: per-uid cap 16"
make_config -e 's/socket_mode: 0660/socket_mode: 0666/' \
	-e 's/hello_timeout_ms: 1000 /hello_timeout_ms: 5000 /'
start_daemon
flood 16 rejected_uid
stop_daemon

note "phase 2: no per-uid cap; max_consumers 64, then only root"
rm -f "$T/daqirid.yaml" "$T/notify"
make_config -e 's/socket_mode: 0660/socket_mode: 0666/' \
	-e 's/hello_timeout_ms: 1000 /hello_timeout_ms: 5000 /' \
	-e 's/max_connections_per_uid: 16/max_connections_per_uid: 4096/'
start_daemon
flood 64 rejected_full
stop_daemon

NSUBS=4096
note "phase 3: $NSUBS subscriptions"
rm -f "$T/daqirid.yaml" "$T/notify"
# gen_many_config FILE PORT NIFS NSTREAMS: NIFS interfaces with NSTREAMS
# small reorder streams each (1 + NSTREAMS regions per interface), ports
# from PORT up, admission limits high.
gen_many_config() {
	{
	cat <<EOT
%YAML 1.2
---
daqiri:
  cfg:
    version: 1
    master_core: 0
    log_level: warn
    stream_type: socket
    memory_regions:
EOT
	f=0
	while [ $f -lt "$3" ]; do
		cat <<EOT
    - name: rx$f
      kind: host
      affinity: 0
      num_bufs: 64
      buf_size: 2048
EOT
		i=0
		while [ $i -lt "$4" ]; do
			cat <<EOT
    - name: t${f}_$i
      kind: host
      affinity: 0
      num_bufs: 272
      buf_size: 4096
EOT
			i=$((i + 1))
		done
		f=$((f + 1))
	done
	echo "    interfaces:"
	f=0
	while [ $f -lt "$3" ]; do
		base=$(($2 + f * 32))
		cat <<EOT
    - name: sensor$f
      address: 127.0.0.1
      socket_config:
        mode: server
        local_addr: udp://127.0.0.1:$base
        max_payload_size: 0
      rx:
        flow_isolation: false
        queues:
        - name: q0
          id: 0
          cpu_core: 1
          batch_size: 64
          timeout_us: 0
          memory_regions: [rx$f]
        flows:
EOT
		i=0
		while [ $i -lt "$4" ]; do
			cat <<EOT
        - name: f$i
          id: $i
          match:
            udp_dst: $((base + i))
          action:
            type: queue
            id: 0
EOT
			i=$((i + 1))
		done
		echo "        reorder_configs:"
		i=0
		while [ $i -lt "$4" ]; do
			cat <<EOT
        - name: r$i
          reorder_type: cpu
          memory_region: t${f}_$i
          flow_ids: [$i]
          payload_byte_offset: 50
          payload_bytes: 64
          method:
            seq_packets_per_batch:
              sequence_number:
                bit_offset: 336
                bit_width: 32
              packets_per_batch: 4
          data_types:
            input_type: int8
            output_type: int8
          window: 2
EOT
			i=$((i + 1))
		done
		f=$((f + 1))
	done
	cat <<EOT
  daemon:
    socket_mode: 0666
    max_consumers: 4096
    max_subscriptions_per_connection: 128
    max_connections_per_uid: 4096
EOT
	} > "$1"
}

gen_many_config "$T/daqirid.yaml" "$PORT" 1 16
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null || fail "many-stream config invalid"
start_daemon
bg "$BUILD/tests/many-subs" "$SOCK" 256 16 > "$T/subs.out" 2> "$T/subs.err"
SUBS=$LAST_PID
i=0
while ! grep -q '^subscribed=' "$T/subs.out"; do
	kill -0 "$SUBS" 2>/dev/null || { cat "$T/subs.err"; fail "many-subs failed"; }
	i=$((i + 1)); [ $i -lt 1200 ] || fail "many-subs did not finish subscribing"
	sleep 0.05
done
note "$(cat "$T/subs.out")"
closed0=$(ctl_status .control.closed)
ctl -j consumers > "$T/consumers.json" || fail "daqirictl -j consumers failed"
bytes=$(wc -c < "$T/consumers.json")
note "consumers reply: $bytes bytes"
[ "$bytes" -gt $((4 * 65536)) ] || fail "the reply fits in fewer than 4 messages; the test proves nothing"
expect_eq "subscriptions listed (-j)" "$(jq '.consumers | length' "$T/consumers.json")" $NSUBS
expect_eq "distinct subscriptions" \
	"$(jq '[.consumers[] | "\(.conn)/\(.sub_id)"] | unique | length' "$T/consumers.json")" $NSUBS
expect_eq "no part markers left" "$(jq 'has("part") or has("more")' "$T/consumers.json")" false
ctl consumers > "$T/consumers.txt" || fail "daqirictl consumers failed"
expect_eq "subscriptions listed (text)" "$(grep -c '^    stream: ' "$T/consumers.txt")" $NSUBS
# 16 reorder streams and the raw stream of the queue
expect_eq "streams in stats" "$(ctl -j stats | jq ".streams | length")" 17
expect_eq "status subscriptions" "$(ctl_status .subscriptions)" $NSUBS
ctl metrics > "$T/metrics.txt" || fail "daqirictl metrics failed"
grep -q '^daqiri_control_connections_accepted_total ' "$T/metrics.txt" || fail "metrics lack the control counters"
ctl flow list > /dev/null || fail "daqirictl flow list failed"
ctl streams > /dev/null || fail "daqirictl streams failed"
ctl top 2 > /dev/null || fail "daqirictl top failed"
c=$(ctl -j status | jq -c .control)
note "control counters: $c"
expect_eq "connections dropped as slow" "$(echo "$c" | jq .dropped_slow)" 0
kill -TERM "$SUBS"
wait_gone "$SUBS" 30
wait_status ".subscriptions == 0" 30
stop_daemon
echo "ok"
