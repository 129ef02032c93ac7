#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: the whole chain on the default configuration. daqirid receives
# a simulated sensor on udp://127.0.0.1:5005; a consumer process verifies
# every element of every tensor it is handed; the simulator shuffles the
# packets, drops 1 % and duplicates some on purpose. The report shows that
# the daemon placed every packet that was sent and accounted for the rest.
set -eu
BUILD=${BUILD:-build}
STREAM=sensor0/sensor_tensor
BATCHES=${DEMO_BATCHES:-250}
# Paced so that the verifying consumer (which checks every element on one
# core) keeps up; the daemon itself runs far faster (make bench).
RATE=${DEMO_RATE:-0.6Gbps}
T=$(mktemp -d /tmp/daqiri-demo.XXXXXX)
SOCK=$T/daqirid.sock
pids=""

cleanup() {
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

say() {
	printf '%s\n' "$*"
}

say "== daqirid on etc/daqirid.yaml (the built-in default), control socket $SOCK"
"$BUILD/daqirid" -c etc/daqirid.yaml -s "$SOCK" -l info 2> "$T/daemon.log" &
dpid=$!
pids="$pids $dpid"
i=0
until "$BUILD/daqirictl" -s "$SOCK" status > /dev/null 2>&1; do
	if ! kill -0 "$dpid" 2>/dev/null; then
		cat "$T/daemon.log" >&2
		say "demo: daqirid did not start (is udp port 5005 in use?)" >&2
		exit 1
	fi
	i=$((i + 1))
	[ $i -lt 100 ] || { say "demo: daqirid is not answering" >&2; exit 1; }
	sleep 0.1
done
"$BUILD/daqirictl" -s "$SOCK" streams

say ""
say "== consumer: daqiri-consume --verify $STREAM"
"$BUILD/daqiri-consume" -s "$SOCK" --verify --quiet "$STREAM" 2> "$T/consume.log" &
cpid=$!
pids="$pids $cpid"
i=0
until [ "$("$BUILD/daqirictl" -s "$SOCK" -j consumers | jq '.consumers | length')" -ge 1 ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat "$T/consume.log" >&2; say "demo: consumer did not subscribe" >&2; exit 1; }
	sleep 0.1
done

say ""
say "== simulator: $BATCHES batches, shuffled within 32 packets, 1 % loss, 0.5 % duplicates"
"$BUILD/daqiri-sim" -c etc/daqirid.yaml --batches "$BATCHES" --shuffle 32 \
	--loss 0.01 --dup 0.005 --seed 7 --rate "$RATE" --quiet | tee "$T/sim.out"

# Batches with a lost packet are published at their 100 ms deadline.
sleep 0.5
"$BUILD/daqirictl" -s "$SOCK" -j stats > "$T/stats.json"
"$BUILD/daqirictl" -s "$SOCK" -j consumers > "$T/consumers.json"
kill -INT "$cpid"
wait "$cpid" && crc=0 || crc=$?
kill -TERM "$dpid"
wait "$dpid" || true
pids=""

sim() {
	sed -n 's/^sim .*\b'"$1"'=\([0-9.]*\).*/\1/p' "$T/sim.out"
}
st() {
	jq -r "$1" "$T/stats.json"
}
summary=$(grep "^daqiri-consume: $STREAM:" "$T/consume.log" | tail -1)
field() {
	printf '%s\n' "$summary" | sed -n 's/.*[ ,]'"$1"' \([0-9]*\).*/\1/p'
}

sent=$(sim sent); unique=$(sim unique); dropped=$(sim dropped); dups=$(sim duplicates)
rx=$(st '.interfaces[0].rx_packets'); kdrops=$(st '.interfaces[0].kernel')
placed=$(st '.streams[0].reorder.placed'); dup=$(st '.streams[0].reorder.duplicate')
late=$(st '.streams[0].reorder.late'); missing=$(st '.streams[0].reorder.missing_slots')
nobuf=$(st '.streams[0].reorder.no_buffer'); malformed=$(st '.streams[0].reorder.malformed')
published=$(st '.streams[0].handoff.published')
complete=$(st '.streams[0].reorder.batches_complete')
overruns=$(jq -r '.consumers[0].overruns' "$T/consumers.json")

say ""
say "== report"
printf '  %-34s %s\n' \
	"packets sent by the simulator" "$sent ($unique unique + $dups duplicates; $dropped dropped on purpose)" \
	"packets received by daqirid" "$rx (kernel drops: $kdrops)" \
	"placed in tensors" "$placed" \
	"duplicates counted (+ late)" "$dup (+ $late)" \
	"malformed / no buffer" "$malformed / $nobuf" \
	"tensors published" "$published ($complete complete, $((published - complete)) partial)" \
	"missing slots" "$missing (simulator dropped $dropped)" \
	"consumer" "${summary#daqiri-consume: }" \
	"tensors the consumer missed" "$overruns (overruns; the daemon never waits for a consumer)" \
	"simulator throughput" "$(sim gbps) Gb/s"

ok=1
[ "$rx" -eq $((sent - kdrops)) ] || { say "demo: received != sent - kernel drops"; ok=0; }
[ "$((placed + dup + late + malformed + nobuf))" -eq "$rx" ] || { say "demo: accounting does not add up"; ok=0; }
[ "$missing" -eq "$dropped" ] || [ "$kdrops" -ne 0 ] || { say "demo: missing slots != packets dropped on purpose"; ok=0; }
[ "$crc" -eq 0 ] || { say "demo: the consumer reported verification errors"; ok=0; }
[ "$(field errors)" = 0 ] || { say "demo: verification errors"; ok=0; }
if [ $ok -eq 1 ]; then
	say ""
	say "demo: every packet accounted for; every element the consumer saw was right."
else
	sed 's/^/  daemon: /' "$T/daemon.log" | tail -20
	exit 1
fi
