#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# DPDK receive benchmark (part of `make bench`): daqirid's DPDK engine next
# to dpdk-testpmd --forward-mode=rxonly on the same virtual device,
# measured in the same run, on net_af_packet and net_af_xdp over a veth
# pair between two network namespaces of our own (root only; says so and
# stops otherwise).
#
# daqiri-sim sends $BENCH_DPDK_BATCHES (2000) batches of 128 packets of
# 1024 int4 bytes (1074-byte frames) from the sender's namespace, pinned
# to core $BENCH_SIM_CORE (0) (the veth's delivery runs in its context
# too), paced at $BENCH_DPDK_RATE (100kpps) or unpaced (as fast as it
# goes: the overload case). The receiver's polling thread is not pinned
# (EAL lcore 0 for testpmd, the rx worker for daqirid); daqirid reorders
# into int4 -> fp16 tensors, testpmd frees every frame. Each side runs
# $BENCH_DPDK_RUNS (3) times per device and mode, alternating; the
# figures are medians. kpps = frames the receiver took / the sender's
# seconds / 1000; ratio = daqirid / testpmd. lost = sent - received;
# daqirid counts every lost frame (kernel: the af_packet ring's
# PACKET_STATISTICS, the XDP socket's rx_ring_full and the PMD's
# imissed), testpmd shows only the PMD's own counters.
# Figures from a shared 2-core VM are noisy: compare ratios, not values.
set -u
BUILD=${BUILD:-build}
SIM_CORE=${BENCH_SIM_CORE:-0}
BATCHES=${BENCH_DPDK_BATCHES:-2000}
RATE=${BENCH_DPDK_RATE:-100kpps}
REPS=${BENCH_DPDK_RUNS:-3}
DEVS=${BENCH_DPDK_VDEVS:-af_packet af_xdp}

say() {
	echo "dpdk: $*" >&2
}
if [ "$(id -u)" -ne 0 ]; then
	say "not root: no network namespaces, no DPDK benchmark"
	exit 0
fi
for p in dpdk-testpmd ip jq; do
	command -v "$p" > /dev/null 2>&1 || { say "no $p: no DPDK benchmark"; exit 0; }
done

T=$(mktemp -d /tmp/daqiri-bench-dpdk.XXXXXX)
NSD=dqbd$$ NSS=dqbs$$ VD=dqbd$$ VS=dqbs$$
RPID=""
cleanup() {
	[ -n "$RPID" ] && kill -9 "$RPID" 2>/dev/null
	ip netns del "$NSD" 2>/dev/null
	ip netns del "$NSS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
ip netns add "$NSD" && ip netns add "$NSS" &&
	ip link add "$VD" netns "$NSD" type veth peer name "$VS" netns "$NSS" ||
	{ say "cannot make namespaces and a veth pair here"; exit 0; }
for ns in "$NSD" "$NSS"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
done
ip netns exec "$NSD" ip link set "$VD" up
ip netns exec "$NSS" ip link set "$VS" up
ip netns exec "$NSS" ip addr add 10.78.0.2/24 dev "$VS"
MAC=$(ip netns exec "$NSD" cat "/sys/class/net/$VD/address")
ip netns exec "$NSS" ip neigh replace 10.78.0.1 lladdr "$MAC" dev "$VS" nud permanent

# config DEV: daqirid's config on that vdev
config() {
	cat > "$T/d.yaml" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: raw
    dpdk_args: ["--vdev=net_$1,iface=$VD", "--no-huge", "--no-shconf"]
    memory_regions:
    - {name: frames, kind: host, num_bufs: 8192, buf_size: 2048}
    - {name: tensors, kind: host, num_bufs: 16, buf_size: 524288}
    interfaces:
    - name: veth
      address: net_$1
      rx:
        flow_isolation: true
        queues:
        - {name: q0, id: 0, batch_size: 64, timeout_us: 1000, memory_regions: [frames]}
        flows:
        - {name: sensor, id: 0, action: {type: queue, id: 0}, match: {udp_dst: 5005}}
        reorder_configs:
        - name: t
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [0]
          payload_byte_offset: 50
          payload_bytes: 1024
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: 128
          data_types: {input_type: int4, output_type: fp16}
          timeout_us: 100000
  daemon:
    control_socket: $T/d.sock
EOF
}

# wait_line FILE REGEX: up to 10 s
wait_line() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.1
	done
}

# send MODE: the simulator; prints "SENT SECONDS"
send() {
	r="--rate $RATE"
	[ "$1" = unpaced ] && r=""
	# shellcheck disable=SC2086 # r is words on purpose
	taskset -c "$SIM_CORE" ip netns exec "$NSS" "$BUILD/daqiri-sim" -c "$T/d.yaml" \
		--dest udp://10.78.0.1:5005 --allow-remote --batches "$BATCHES" $r \
		--quiet > "$T/sim.out" 2>&1
	sed -n 's/^sim sent=\([0-9]*\) .* seconds=\([0-9.]*\).*/\1 \2/p' "$T/sim.out"
}

# run_daqirid DEV MODE: "RECEIVED SENT SECONDS KERNEL" into $T/run
# (not through $(...): the receiver's pid must reach cleanup)
run_daqirid() {
	rm -f "$T/d.log"
	ip netns exec "$NSD" "$BUILD/daqirid" -c "$T/d.yaml" -l info > "$T/d.log" 2>&1 &
	RPID=$!
	wait_line "$T/d.log" ' running: config' || { say "daqirid did not start: $(tail -3 "$T/d.log")"; return 1; }
	s=$(send "$2")
	n=${s% *}
	i=0
	# every frame received or counted lost, or 5 s
	while :; do
		j=$("$BUILD/daqirictl" -s "$T/d.sock" -j stats)
		rx=$(echo "$j" | jq '.interfaces[0].rx_packets')
		k=$(echo "$j" | jq '.interfaces[0].kernel')
		[ $((rx + k)) -ge "$n" ] && break
		i=$((i + 1))
		[ $i -lt 50 ] || break
		sleep 0.1
	done
	kill "$RPID"
	wait "$RPID" 2>/dev/null
	RPID=""
	echo "$rx $s $k" > "$T/run"
}

# run_testpmd DEV MODE: "RECEIVED SENT SECONDS" into $T/run
run_testpmd() {
	rm -f "$T/t.log"
	ip netns exec "$NSD" dpdk-testpmd -l 0,1 --no-huge --no-shconf \
		--vdev="net_$1,iface=$VD" -- --forward-mode=rxonly --auto-start \
		--stats-period=1 --total-num-mbufs=8192 < /dev/null > "$T/t.log" 2>&1 &
	RPID=$!
	wait_line "$T/t.log" 'Rx-pps:' ||
		{ say "testpmd did not start: $(tail -3 "$T/t.log")"; return 1; }
	sleep 0.3
	s=$(send "$2")
	sleep 1
	kill -INT "$RPID"
	wait "$RPID" 2>/dev/null
	RPID=""
	rx=$(grep 'RX-packets:' "$T/t.log" | tail -1 | awk '{print $2}')
	echo "${rx:-0} $s" > "$T/run"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for dev in $DEVS; do
	config "$dev"
	for mode in paced unpaced; do
		: > "$T/dq" ; : > "$T/tp"
		for rep in $(seq "$REPS"); do
			run_daqirid "$dev" "$mode" || exit 0
			d=$(cat "$T/run")
			run_testpmd "$dev" "$mode" || exit 0
			t=$(cat "$T/run")
			# shellcheck disable=SC2086 # the words of one line
			set -- $d
			say "$dev $mode run $rep: daqirid received $1 of $2 in $3 s (kernel counted $4 lost)"
			echo "$1 $2 $3" >> "$T/dq"
			# shellcheck disable=SC2086
			set -- $t
			say "$dev $mode run $rep: testpmd received $1 of $2 in $3 s"
			echo "$1 $2 $3" >> "$T/tp"
		done
		dk=$(awk '{ printf "%.1f\n", $1 / $3 / 1000 }' "$T/dq" | median)
		tk=$(awk '{ printf "%.1f\n", $1 / $3 / 1000 }' "$T/tp" | median)
		dl=$(awk '{ print $2 - $1 }' "$T/dq" | median)
		tl=$(awk '{ print $2 - $1 }' "$T/tp" | median)
		echo "bench dpdk vdev=net_$dev mode=$mode daqirid_kpps=$dk testpmd_kpps=$tk ratio=$(awk -v a="$dk" -v b="$tk" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }') daqirid_lost=$dl testpmd_lost=$tl"
	done
done
