#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqirid --replay: a lossy, shuffled capture with bursts, gaps longer
# than the reorder timeout (so deadlines fall inside the capture) and a
# cut tail (so the last batch goes out at its deadline after the end of
# the file) replays into bit-identical tensors, bitmaps and reorder
# counters every time: twice with a lossless consumer subscribed before
# `daqirictl replay start`, and once more with a consumer much slower
# than the replay at max speed, which the replay waits for (no
# no_buffer); then the DPDK example config (its regions with the mbuf
# headroom) in host memory and, on the CUDA stand-in, with the frames
# landed in device memory by cudaMemcpy and reordered by the CUDA
# backend: the same tensors again. The -n checks and the replay request's
# errors too.
. tests/system/lib.sh

STREAM=sensor0/sensor_tensor
B=10
PPB=128

# A tensor region of 8 buffers: a slow lossless consumer makes the stream
# run out of free buffers within a few batches.
make_config -e 's/num_bufs: 32$/num_bufs: 8/'
grep -q 'num_bufs: 8$' "$T/daqirid.yaml" || fail "daqirid.yaml changed: no tensor num_bufs to shrink"

# 150 ms gaps every 500 frames against the 100 ms timeout: batches open
# across a gap time out in it, and their later frames are late.
"$BUILD/tests/mkpcap" -o "$T/cap.pcap" --batches $B --ppb $PPB --port "$PORT" \
	--seed 11 --shuffle 32 --loss 0.02 --dup 0.02 --junk 7 --burst 4 \
	--gap-every 500 --gap-us 150000 --cut 40 --quiet > "$T/mkpcap.out" ||
	fail "mkpcap failed"
note "$(cat "$T/mkpcap.out")"
FRAMES=$(sed -n 's/^mkpcap frames=\([0-9]*\).*/\1/p' "$T/mkpcap.out")

# ---------------------------------------------------------------------------
note "daqirid -n --replay: what is wrong, said"
# check_n WANT-RC PATTERN ARGS...: daqirid -n's exit status and message.
check_n() {
	want=$1 pat=$2
	shift 2
	rc=0
	"$BUILD/daqirid" -n -c "$T/daqirid.yaml" "$@" > "$T/n.out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { cat "$T/n.out" >&2; fail "daqirid -n $*: exit $rc, want $want"; }
	grep -q -- "$pat" "$T/n.out" || { cat "$T/n.out" >&2; fail "daqirid -n $*: no '$pat'"; }
	echo "   ok  -n $*: $(head -1 "$T/n.out")"
}
check_n 0 "replay files OK" --replay "sensor0/q0=$T/cap.pcap"
check_n 1 "no rx queue 'sensor0/q9'.*rx queues: sensor0/q0" --replay "sensor0/q9=$T/cap.pcap"
check_n 1 "No such file or directory" --replay "sensor0/q0=$T/none.pcap"
printf 'not a capture\n' > "$T/text.pcap"
check_n 1 "not a capture libpcap reads" --replay "sensor0/q0=$T/text.pcap"
# a pcap of another link type (LINUX_SLL, 113): the header alone
printf '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\161\000\000\000' > "$T/sll.pcap"
check_n 1 "link type LINUX_SLL (113), not Ethernet" --replay "sensor0/q0=$T/sll.pcap"
check_n 1 "expected INTERFACE/QUEUE=FILE.pcap" --replay "q0"
check_n 1 "given twice" --replay "sensor0/q0=$T/cap.pcap" --replay "sensor0/q0=$T/cap.pcap"
check_n 1 "real-time multiple above 0" --replay "sensor0/q0=$T/cap.pcap" --replay-speed -2
check_n 1 "real-time multiple above 0" --replay "sensor0/q0=$T/cap.pcap" --replay-speed fast
check_n 1 "go with --replay" --replay-hold

# ---------------------------------------------------------------------------
# replay_run NAME [CONSUME-ARGS...]: a held replay of the capture into
# rx queue $RQ with a lossless consumer of $STREAM subscribed first, both
# run by the words $PRE, saving into $T/NAME; afterwards $T/NAME.stats
# holds the counters that must not depend on timing.
RQ=sensor0/q0
PRE=
replay_run() {
	name=$1
	shift
	rm -f "$T/notify"
	DAEMON_PREFIX=$PRE DAEMON_ARGS="--replay $RQ=$T/cap.pcap --replay-hold" start_daemon
	expect_eq "$name: engine" "$(ctl -j status | jq -r .engine)" replay
	expect_eq "$name: held" "$(ctl -j replay status | jq -r .replay.running)" false
	mkdir -p "$T/$name"
	# shellcheck disable=SC2086 # PRE is words on purpose
	bg $PRE "$BUILD/daqiri-consume" -s "$SOCK" --lossless --save "$T/$name" \
		--count $B --quiet "$@" $STREAM
	cpid=$LAST_PID
	i=0
	while [ "$(ctl -j consumers | jq '.consumers | length')" != 1 ]; do
		i=$((i + 1)); [ $i -lt 200 ] || fail "$name: the consumer never subscribed"
		kill -0 "$cpid" 2>/dev/null || fail "$name: the consumer exited"
		sleep 0.05
	done
	# nothing moves while held: the consumer's subscription is the
	# first thing the stream sees
	expect_eq "$name: frames while held" "$(stat '.interfaces[0].rx_packets')" 0
	ctl replay start > "$T/start.out" || fail "$name: daqirictl replay start failed"
	grep -q '^replay running' "$T/start.out" || fail "$name: replay start said: $(cat "$T/start.out")"
	i=0
	while kill -0 "$cpid" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 1200 ] || fail "$name: the consumer did not get $B tensors within 60 s"
		sleep 0.05
	done
	wait "$cpid" || fail "$name: daqiri-consume failed"
	forget "$cpid"
	ctl -j replay status | jq -e '.replay.queues[0] | .done and .frames == '"$FRAMES" >/dev/null ||
		fail "$name: replay status: $(ctl -j replay status)"
	# the last batch went out at its deadline, after the end of the file
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $B"
	ctl -j stats | jq -S '{
		interface: (.interfaces[0] | del(.queues) | with_entries(select(.value | type == "number"))),
		queue: (.interfaces[0].queues[0] | del(.replay_waits, .bursts, .inflight, .inflight_waits)),
		streams: [.streams[] | {name, reorder, raw, published: .handoff.published,
			delivered: .handoff.delivered, unseen: .handoff.unseen}]}' > "$T/$name.stats" ||
		fail "$name: stats"
	echo "   ..  $name: replay_waits $(stat '.interfaces[0].queues[0].replay_waits')"
	stop_daemon
}

note "replay 1: a lossless consumer, then daqirictl replay start"
replay_run run1
read_reorder_of() {
	jq -r --arg s $STREAM '.streams[] | select(.name == $s) | .reorder | to_entries[] | "r_\(.key)=\(.value)"' "$1"
}
eval "$(read_reorder_of "$T/run1.stats")"
expect_eq "run1: rx = frames in the capture" "$(jq .interface.rx_packets "$T/run1.stats")" "$FRAMES"
expect_eq "run1: packets_in accounted" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "run1: no_buffer" "$r_no_buffer" 0
[ "$r_batches_timeout" -ge 2 ] || fail "run1: batches_timeout $r_batches_timeout: the deadlines did not matter (want >= 2)"
echo "   ok  run1: batches_timeout $r_batches_timeout, late $r_late, missing_slots $r_missing_slots"
n=$(find "$T/run1" -name '*.npy' ! -name '*.present.npy' | wc -l)
expect_eq "run1: tensors saved" "$n" $B

# compare NAME [REF]: NAME's tensors, bitmaps and counters are REF's
# (run1's), bit for bit.
compare() {
	ref=${2:-run1}
	for f in "$T/$ref"/*.npy; do
		cmp "$f" "$T/$1/$(basename "$f")" || fail "$1: $(basename "$f") differs from $ref's"
	done
	expect_eq "$1: files" "$(find "$T/$1" -name '*.npy' | wc -l)" $((2 * B))
	cmp "$T/$ref.stats" "$T/$1.stats" || {
		diff "$T/$ref.stats" "$T/$1.stats" >&2
		fail "$1: counters differ from $ref's"
	}
	echo "   ok  $1: $((2 * B)) .npy and .present.npy files and the counters identical to $ref's"
}

note "replay 2: the same, again"
replay_run run2
compare run2

note "replay 3: a consumer 30 ms per tensor, the replay at max speed"
replay_run slow --delay-ms 30
compare slow

# ---------------------------------------------------------------------------
note "replay 4: the DPDK example config (pcap-replay.yaml), host memory"
cp "$T/daqirid.yaml" "$T/socket.yaml"
sed -e "s|/run/daqiri/replay.sock|$SOCK|" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	-e 's/timeout_us: 10000$/timeout_us: 100000/' \
	etc/examples/pcap-replay.yaml > "$T/ph.yaml"
grep -q "udp_dst: $PORT" "$T/ph.yaml" || fail "pcap-replay.yaml changed: no udp_dst to point"
cp "$T/ph.yaml" "$T/daqirid.yaml"
RQ=replay/q0 STREAM=replay/sensor_tensor
replay_run host
SI=scripts/cuda-standin
if [ -e "$BUILD/standin/libcudart.so.13" ]; then
	note "replay 5: every region in device memory, on the CUDA stand-in"
	sed -e 's/kind: host/kind: device/' -e 's/reorder_type: cpu/reorder_type: gpu/' \
		"$T/ph.yaml" > "$T/daqirid.yaml"
	PRE=$SI
	replay_run device
	PRE=
	grep -q "replays '.*' (.*device memory)" "$T/daemon.log" ||
		fail "device: no replay line naming device memory"
	compare device host
else
	note "replay 5 skipped: no CUDA stand-in in $BUILD/standin (built only where nvcc is)"
fi
cp "$T/socket.yaml" "$T/daqirid.yaml"
RQ=sensor0/q0 STREAM=sensor0/sensor_tensor

# ---------------------------------------------------------------------------
note "the replay request"
rm -f "$T/notify"
DAEMON_ARGS="--replay sensor0/q0=$T/cap.pcap --replay-hold --replay-speed 1000" start_daemon
expect_eq "status: speed" "$(ctl -j status | jq -r .replay.speed)" 1000
expect_eq "status: file" "$(ctl -j status | jq -r .replay.queues[0].file)" "$T/cap.pcap"
ctl replay start > /dev/null || fail "replay start"
ctl replay start > "$T/again.out" || fail "a second replay start"
grep -q 'running already' "$T/again.out" || fail "a second replay start said: $(cat "$T/again.out")"
i=0
while [ "$(ctl -j replay status | jq -r .replay.queues[0].done)" != true ]; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "the paced replay (1000x real time) did not end within 30 s"
	sleep 0.05
done
stop_daemon
rm -f "$T/notify"
start_daemon
rc=0
ctl replay status > "$T/live.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q 'not replaying' "$T/live.out" || fail "replay status of a live daqirid: exit $rc: $(cat "$T/live.out")"
echo "   ok  a live daqirid: $(cat "$T/live.out")"
stop_daemon
echo "PASS"
