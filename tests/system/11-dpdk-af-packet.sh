#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The DPDK engine on net_af_packet, then on net_af_xdp, over a veth pair
# between two network namespaces this test makes (root only; skipped with
# a reason otherwise): daqirid receives in one, daqiri-sim sends a
# shuffled, lossy, duplicated stream from the other to the veth peer's
# address (never anywhere else), and the accounting is exact. Then the
# sender unpaced into the PMD's default ring (the overload case): what
# the ring dropped is counted (af_packet's PACKET_STATISTICS, the XDP
# socket's rx_ring_full, which the PMDs do not count), so rx + kernel =
# sent holds exactly, however many were lost.
. tests/system/lib.sh

PPB=128
STREAM=veth/sensor_tensor
NSD=dqd$$
NSS=dqs$$
VD=dqd$$			# the daemon's end (no address)
VS=dqs$$			# the sender's end
NET=10.201.$(( $$ % 200 + 20 ))	# a /24 of our own, inside the namespaces
DST=$NET.1			# the address the sender sends to

veth_pair
nss ip addr add "$NET.2/24" dev "$VS"
# The daemon's end has no address: the kernel there ignores the frames and
# answers nothing; the sender reaches $DST through a fixed neighbour entry.
MAC=$(nsd cat "/sys/class/net/$VD/address")
nss ip neigh replace "$DST" lladdr "$MAC" dev "$VS" nud permanent

# vdev DRV RING: the whole check on net_DRV (RING: extra vdev arguments)
vdev() {
DRV=$1 RING=$2
note "net_$DRV"
cat > "$T/daqirid.yaml" <<EOF
daqiri:
  cfg:
    version: 1
    master_core: 0
    stream_type: raw
    dpdk_args:
    - "--vdev=net_${DRV}0,iface=$VD$RING"
    - "--no-huge"
    - "--no-shconf"
    memory_regions:
    - {name: frames, kind: host, num_bufs: 4096, buf_size: 4096}
    - {name: tensors, kind: host, num_bufs: 16, buf_size: 524288}
    interfaces:
    - name: veth
      address: net_${DRV}0
      rx:
        flow_isolation: true
        queues:
        - {name: q0, id: 0, batch_size: 64, timeout_us: 1000,
           memory_regions: [frames]}
        flows:
        - name: sensor
          id: 0
          action: {type: queue, id: 0}
          match: {udp_dst: $PORT}
        reorder_configs:
        - name: sensor_tensor
          reorder_type: cpu
          memory_region: tensors
          flow_ids: [0]
          payload_byte_offset: 50
          payload_bytes: 1024
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 336, bit_width: 32}
              packets_per_batch: $PPB
          data_types: {input_type: int4, output_type: fp16}
          timeout_us: 1000000
  daemon:
    control_socket: $SOCK
EOF
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" >/dev/null || fail "test config invalid"

DAEMON_PREFIX="ip netns exec $NSD"
start_daemon
grep -q "DPDK port 0 'net_${DRV}0'" "$T/daemon.log" || fail "no port line in the log"
# flow_isolation asks the port first (a virtual device has no rte_flow)
grep -q "interface 'veth': port 'net_${DRV}0' cannot isolate (rte_flow_isolate: .*): it delivers every frame, and those no flow matches are dropped by software, counted unmatched (flow_isolation)" \
	"$T/daemon.log" || fail "no isolation line in the log: $(grep -i isolat "$T/daemon.log")"
expect_eq "engine" "$(ctl -j status | jq -r '.engine')" dpdk

B=40
# the simulator in the sender's namespace, to the peer's address only
nss "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --stream "$STREAM" --dest "udp://$DST:$PORT" \
	--allow-remote --batches $B --seed 11 --shuffle 64 --loss 0.01 --dup 0.02 \
	--rate 20kpps > "$T/sim.out" || fail "daqiri-sim failed: $(cat "$T/sim.out")"
note "$(grep '^sim sent=' "$T/sim.out")"
sent=$(sim_field sent); unique=$(sim_field unique)
dropped=$(sim_field dropped); dups=$(sim_field duplicates)
[ "$dropped" -gt 0 ] && [ "$dups" -gt 0 ] || fail "the seed gave no loss or no duplicates"
lossy=$(sed -n 's/^dropped seq=[0-9]* batch=\([0-9]*\) .*/\1/p' "$T/sim.out" | sort -u | wc -l)

wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel >= $sent"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $B" 15
read_stream
k=$i_kernel
expect_eq "rx_packets + kernel = sim sent + unmatched" $((i_rx_packets + k)) $((sent + i_unmatched))
expect_eq "stream packets_in = rx_packets - unmatched" "$r_packets_in" $((i_rx_packets - i_unmatched))
expect_eq "misrouted" "$i_misrouted" 0
expect_eq "placed + duplicate + late + malformed + no_buffer = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "malformed" "$r_malformed" 0
expect_eq "published" "$h_published" $B
expect_eq "placed + missing_slots = ppb x published" $((r_placed + r_missing_slots)) $((PPB * B))
if [ "$k" -eq 0 ]; then
	expect_eq "placed = sim unique" "$r_placed" "$unique"
	expect_eq "duplicate + late = sim duplicates" $((r_duplicate + r_late)) "$dups"
	expect_eq "missing_slots = sim dropped" "$r_missing_slots" "$dropped"
	expect_eq "complete batches = batches without a drop" "$r_batches_complete" $((B - lossy))
else
	note "$DRV dropped $k frames (kernel ring): placed/duplicate split bounded by it"
	[ $((unique - r_placed)) -ge 0 ] && [ $((unique - r_placed)) -le "$k" ] ||
		fail "placed $r_placed vs unique $unique with $k drops"
fi
note "unmatched frames on the wire: $i_unmatched"

note "net_$DRV: $((B * PPB)) x 3 frames unpaced into a small ring"
stop_daemon
sed -i "s/,framecnt=8192/,framecnt=64/" "$T/daqirid.yaml"
start_daemon
nss "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --stream "$STREAM" --dest "udp://$DST:$PORT" \
	--allow-remote --batches $((B * 3)) --seed 12 --quiet > "$T/sim.out" ||
	fail "daqiri-sim failed: $(cat "$T/sim.out")"
sent=$(sim_field sent)
wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel >= $sent + .interfaces[0].unmatched"
read_stream
note "net_$DRV unpaced: $i_rx_packets received, $i_kernel counted lost by the ring"
expect_eq "net_$DRV unpaced: rx_packets + kernel = sim sent + unmatched" \
	$((i_rx_packets + i_kernel)) $((sent + i_unmatched))
stop_daemon
}

vdev af_packet ",framecnt=8192"
# net_af_xdp needs the kernel's XDP sockets (and libxdp); skipped alone
ip netns exec "$NSD" true
vdev af_xdp ""
echo "ok"
