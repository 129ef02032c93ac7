#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# daqiri-record end to end. A lossy, shuffled fp16 stream recorded to
# HDF5: h5dump shows the layout, h5py reads float16 and finds every
# element of every present slot the simulator's pattern, present False
# exactly where the simulator dropped, no tensor missing. A recorder
# SIGKILLed mid-stream leaves a file h5py reads up to its last flushed
# tensor. A raw stream recorded to pcap: tshark decodes every frame as
# UDP to our port with the simulator's length, as many as the daemon
# placed; -C rotation makes several files, each valid. A full disk (a
# 2 MB tmpfs) stops the recorder with a clear error while another
# consumer goes on. A pre-trigger recording holds exactly the tensors of
# a full recording beside it that began within [T - pre, T + post], with
# T from SIGUSR1 and from daqirictl trigger (the daemon's time of it).
. tests/system/lib.sh

[ "$(id -u)" -eq 0 ] || skip "daqiri-record subscribes lossless: needs root"
command -v h5dump >/dev/null 2>&1 || skip "no h5dump (hdf5-tools)"
command -v tshark >/dev/null 2>&1 || skip "no tshark"
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || skip "no h5py for $PY (python3-h5py)"
REC="$BUILD/daqiri-record"
CHECK="$PY tests/system/record-check.py"
PPB=128
# raw bursts are published 1 ms after their first frame
make_config -e 's/timeout_us: 0 .*/timeout_us: 1000/' -e 's/socket_mode: 0660/socket_mode: 0666/'
chmod 755 "$T"
FULL=$T/full
umount_full() {
	umount "$FULL" 2>/dev/null || true
	cleanup
}
trap umount_full EXIT INT TERM
start_daemon

# recorder NAME ARGS...: daqiri-record in the background, stderr in
# $T/NAME.err, its pid in $R once its subscription is active.
recorder() {
	name=$1
	shift
	bg "$REC" -s "$SOCK" "$@" 2> "$T/$name.err"
	R=$LAST_PID
	wait_consumers "[.consumers[] | select(.pid == $R)][0].state == \"active\""
}

# summary NAME FIELD: a number from the recorder's closing line.
summary() {
	sed -n 's/^daqiri-record: .* -> .*[:,] '"$2"' \([0-9][0-9]*\).*/\1/p' "$T/$1.err" | tail -1
}

note "usage errors say what to do"
"$REC" -s "$SOCK" "$STREAM" "$T/x.csv" 2> "$T/err" && fail "a .csv file was accepted"
grep -q "the format comes from the name's ending: .h5 or .hdf5 .* or .pcap" "$T/err" ||
	fail "extension: $(cat "$T/err")"
: > "$T/exists.h5"
"$REC" -s "$SOCK" "$STREAM" "$T/exists.h5" 2> "$T/err" && fail "an existing file was replaced"
grep -q "exists.h5 exists: add --force to replace it" "$T/err" || fail "exists: $(cat "$T/err")"
"$REC" -s "$SOCK" "$STREAM" "$T/x.pcap" 2> "$T/err" && fail "a reorder stream went to pcap"
grep -q "is a reorder stream (tensors): record it to a .h5 file" "$T/err" || fail "kind: $(cat "$T/err")"
rc=0
"$REC" -s "$SOCK" --pre-trigger 1 "$STREAM" "$T/x.h5" 2> "$T/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--pre-trigger S and --post S go together" "$T/err" ||
	fail "pre without post: $(cat "$T/err")"
[ ! -e "$T/x.h5" ] && [ ! -e "$T/x.pcap" ] || fail "a refused run left a file"
echo "   ok  extension, --force, stream kind, --pre-trigger alone"
if setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$REC" -s "$SOCK" "$STREAM" /tmp/daqiri-record-nobody-$$.h5 2> "$T/err"; then
	fail "uid 65534 recorded"
fi
grep -q "^daqiri-record: a recording must not miss a tensor, so it subscribes lossless: run it as root or as a member of the daemon's admin_group" "$T/err" ||
	fail "refusal: $(cat "$T/err")"
[ ! -e /tmp/daqiri-record-nobody-$$.h5 ] || fail "a refused recorder left a file"
echo "   ok  $(tail -1 "$T/err")"

note "a lossy, shuffled fp16 stream to HDF5"
B=30
recorder h5 --count $B "$STREAM" "$T/a.h5"
run_sim --batches $B --seed 5 --shuffle 64 --loss 0.01 --rate 5kpps
[ "$(sim_field dropped)" -gt 0 ] || fail "the seed dropped nothing"
wait_gone "$R" 30
sed 's/^/   | /' "$T/h5.err"
expect_eq "recorder exit" "$GONE_RC" 0
expect_eq "tensors" "$(summary h5 tensors)" $B
expect_eq "tensors missed" "$(summary h5 'tensors missed')" 0
h5dump -H "$T/a.h5" > "$T/h5dump"
for ds in data present seq batch_id flags first_rx_ns publish_ns packets_received; do
	grep -q "DATASET \"$ds\"" "$T/h5dump" || fail "h5dump -H: no dataset $ds"
done
grep -A3 'DATASET "data"' "$T/h5dump" | grep -q "DATASPACE  SIMPLE { ( $B, $PPB, 16000 ) / ( H5S_UNLIMITED, $PPB, 16000 ) }" ||
	fail "data's shape: $(grep -A3 'DATASET "data"' "$T/h5dump")"
echo "   ok  h5dump -H: data ($B, $PPB, 16000), present and the descriptors"
$PY -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r").attrs["config"])' "$T/a.h5" |
	grep -q 'output_type: fp16' || fail "no config excerpt in the attributes"
$CHECK verify "$T/a.h5" "$T/sim.out" $B || fail "the HDF5 file is not what was sent"
$PY client/python/examples/h5_look.py -i 1 -o "$T/look.png" "$T/a.h5" > "$T/look.out" ||
	fail "h5_look.py: $(cat "$T/look.out")"
[ -s "$T/look.png" ] || fail "h5_look.py wrote no PNG"
read_stream
expect_eq "present slots = daemon's placed" \
	"$($PY -c 'import h5py, sys; print(int(h5py.File(sys.argv[1], "r")["present"][:].sum()))' "$T/a.h5")" \
	"$r_placed"

note "a recorder killed mid-stream leaves a readable file"
recorder kill "$STREAM" "$T/k.h5"
bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches 60 --rate 2kpps --quiet > "$T/sim.out"
SIM=$LAST_PID
wait_consumers "[.consumers[] | select(.pid == $R)][0].released >= 10" 30
# it releases a tensor after writing and flushing it
rel=$(consumer "$R" released)
kill -KILL "$R"
wait_gone "$R"
wait_gone "$SIM" 30
n=$($CHECK prefix "$T/k.h5") || fail "the killed recorder's file does not read"
[ "$n" -ge "$rel" ] || fail "only $n tensors readable after the kill, $rel were released"
echo "   ok  SIGKILL: $n tensors readable (>= $rel released), each complete and correct"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.open_bufs == 0"

note "a raw stream to pcap"
ctl flow del sensor0 0 || fail "flow del"
RAW=sensor0/q0
rawin() { stat "[.streams[] | select(.name == \"$RAW\")][0].raw.$1"; }
recorder pcap "$RAW" "$T/raw.pcap"
R1=$R
recorder pcap2 -C 1 "$RAW" "$T/rot.pcap"
R2=$R
in0=$(rawin packets_in)
placed0=$(rawin placed)
run_sim --batches 8 --rate 20kpps --quiet
sent=$(sim_field sent)
wait_for "[.streams[] | select(.name == \"$RAW\")][0] | .raw.packets_in == $((in0 + sent)) and .handoff.open_bufs == 0" 20
pub=$(stat "[.streams[] | select(.name == \"$RAW\")][0].handoff.published")
wait_consumers "[.consumers[] | select(.pid == $R1 or .pid == $R2) | .released == $pub] | all" 20
placed=$(( $(rawin placed) - placed0 ))
kill -INT "$R1" "$R2"
wait_gone "$R1"
expect_eq "pcap recorder exit" "$GONE_RC" 0
wait_gone "$R2"
expect_eq "rotating recorder exit" "$GONE_RC" 0
sed 's/^/   | /' "$T/pcap.err" "$T/pcap2.err"
tshark -r "$T/raw.pcap" -T fields -e udp.dstport -e udp.length -e frame.len > "$T/tshark" 2> "$T/tshark.err" ||
	fail "tshark cannot read the pcap: $(cat "$T/tshark.err")"
expect_eq "frames tshark decodes" "$(wc -l < "$T/tshark")" "$placed"
expect_eq "frames = sim sent" "$placed" "$sent"
expect_eq "frames as UDP to $PORT, 8016 bytes of UDP, 8050 of frame" \
	"$(sort -u "$T/tshark" | tr '\t' ' ')" "$PORT 8016 8050"
files=$(ls "$T"/rot.pcap*)
nf=$(echo "$files" | wc -l)
[ "$nf" -ge 3 ] || fail "-C 1 made $nf files"
total=0
for f in $files; do
	c=$(tshark -r "$f" -T fields -e udp.dstport 2> "$T/tshark.err" | grep -c "^$PORT\$") ||
		fail "$f: tshark: $(cat "$T/tshark.err")"
	[ "$(wc -c < "$f")" -le 1000000 ] || fail "$f is over 1 MB"
	total=$((total + c))
done
expect_eq "frames in the $nf rotated files" "$total" "$sent"
ctl flow add sensor0 0 0 name=sensor udp_dst="$PORT" > /dev/null || fail "flow add"

note "a full disk stops the recorder, not the daemon nor other consumers"
mkdir -p "$FULL"
mount -t tmpfs -o size=2m daqiri-test-full "$FULL" 2>/dev/null || skip "cannot mount a tmpfs here"
consume other 0
recorder full "$STREAM" "$FULL/x.h5"
run_sim --batches 4 --rate 5kpps --quiet
wait_gone "$R" 20
sed 's/^/   | /' "$T/full.err"
expect_eq "recorder exit on a full disk" "$GONE_RC" 1
grep -q "^daqiri-record: $FULL/x.h5: .*: the disk is full (No space left on device)" "$T/full.err" ||
	fail "no clear error: $(cat "$T/full.err")"
d0=$(consumer "$C" delivered)
run_sim --batches 5 --rate 5kpps --quiet
wait_consumers "[.consumers[] | select(.pid == $C)][0].delivered >= $((d0 + 5))" 20
kill -TERM "$C"
wait_gone "$C"
expect_eq "the other consumer's exit" "$GONE_RC" 0
expect_eq "its verification errors" "$(sed -n 's/.*, errors \([0-9]*\).*/\1/p' "$T/other.err")" 0
kill -0 "$DAEMON_PID" || fail "daqirid died"
umount "$FULL"

# pretrigger HOW: a pre-trigger recorder and a full one beside it; the
# trigger (HOW: usr1, a signal; daemon, daqirictl trigger) once the full
# one has 20 tensors; the triggered file must be the window of the full
# one's, [T - 0.5 s, T + 0.5 s].
pretrigger() {
	rm -f "$T/all.h5" "$T/trig.h5"
	recorder all "$STREAM" "$T/all.h5"
	RA=$R
	recorder trig --pre-trigger 0.5 --post 0.5 --memory 200 "$STREAM" "$T/trig.h5"
	RT=$R
	grep -q "pre-trigger: keeping the last 0.5 s of $STREAM in memory, at most [0-9]* tensors" "$T/trig.err" ||
		fail "no memory line: $(cat "$T/trig.err")"
	[ ! -e "$T/trig.h5" ] || fail "the pre-trigger recorder wrote before its trigger"
	read_stream
	pub2=$h_published
	bg "$BUILD/daqiri-sim" -c "$T/daqirid.yaml" --batches 60 --rate 2kpps --quiet > "$T/sim.out"
	SIM=$LAST_PID
	wait_consumers "[.consumers[] | select(.pid == $RA)][0].released >= 20" 30
	if [ "$1" = usr1 ]; then
		kill -USR1 "$RT"
	else
		ctl -j trigger "$STREAM" > "$T/trigger.json" || fail "daqirictl trigger failed"
	fi
	wait_gone "$RT" 30
	sed 's/^/   | /' "$T/trig.err"
	expect_eq "pre-trigger recorder exit" "$GONE_RC" 0
	wait_gone "$SIM" 30
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.open_bufs == 0" 20
	read_stream
	wait_consumers "[.consumers[] | select(.pid == $RA)][0].released == $((h_published - pub2))" 20
	kill -INT "$RA"
	wait_gone "$RA"
	expect_eq "full recorder exit" "$GONE_RC" 0
	$CHECK window "$T/trig.h5" "$T/all.h5" || fail "the triggered file is not the window"
	if [ "$1" = daemon ]; then
		# T is the daemon's time of the trigger
		expect_eq "trigger_ns is the daemon's" \
			"$($PY -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r", swmr=True).attrs["trigger_ns"])' "$T/trig.h5")" \
			"$(jq .ns "$T/trigger.json")"
	fi
}

note "pre-trigger: SIGUSR1 writes what began within [T - 0.5 s, T + 0.5 s]"
pretrigger usr1
note "pre-trigger: daqirictl trigger, the same"
# a trigger before the recorder started is not its own
ctl trigger "$STREAM" > /dev/null
pretrigger daemon
stop_daemon
echo "PASS"
