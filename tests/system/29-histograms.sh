#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Latency histograms (daqirictl(8) STATS FIELDS, assembly_ns and hold_ns):
# a stream with timeout_us 2000 and lost packets. Every published tensor
# is counted once in assembly_ns, every release once in its consumer's
# hold_ns (and the stream's), the consumer's own histogram of its
# descriptors is the daemon's, the p99 of assembly is the bucket just
# above the 2 ms deadline, and daqirictl stats and top print it.
. tests/system/lib.sh

B=500
# 16 packets a batch at 20 kpps: a batch takes 0.8 ms to arrive, so a
# lossless one completes well before its 2 ms deadline and a lossy one
# waits for it. Window 8: the batch 8 ahead of a lossy one arrives 6.4 ms
# after it, long past the deadline, so lossy batches time out rather than
# being evicted unless the receive thread stalls for over 4 ms.
make_config -e 's/packets_per_batch: 128/packets_per_batch: 16/' \
	-e 's/timeout_us: 100000 /timeout_us: 2000 /' \
	-e 's/window: 4 /window: 8 /'
start_daemon

# max_held 20 of the 23 the window leaves: room to fall behind a while
bg "$BUILD/tests/good-consumer" -s "$SOCK" --max-held 20 "$STREAM" > "$T/consumer.out"
CONS=$LAST_PID
wait_line "$T/consumer.out" '^subscribed'

# snap FILE: the stats record of $STREAM.
snap() {
	ctl -j stats | jq -c --arg s "$STREAM" '.streams[] | select(.name == $s)' > "$1"
}
# s EXPR: EXPR of $T/stream.json (a phase's delta, or the whole run).
s() {
	jq -r "$1" "$T/stream.json"
}
# Counters and buckets of one traffic phase: after less before, le_ns kept.
MINUS='def minus($b): if type == "object" then
	with_entries(.key as $k | if $k == "le_ns" then . else .value |= minus($b[$k]) end)
	elif type == "array" then [range(length) as $i | .[$i] | minus($b[$i])]
	elif type == "number" then . - $b else . end;'
# P99: the le_ns of the bucket holding rank ceil(0.99 n), as
# daqiri_hist_quantile() finds it ("inf" past the last bound).
P99='. as $h | ($h.buckets | add) as $n | ((($n * 990) + 999) / 1000 | floor) as $rank |
	[foreach $h.buckets[] as $b (0; . + $b)] | map(. >= $rank) | index(true) |
	if . < ($h.le_ns | length) then $h.le_ns[.] else "inf" end'

# A phase: send, wait for every batch to go out and come back, check the
# phase's histogram; 0 when the p99 bound held, 1 when the receive thread
# visibly stalled and it did not (the caller may try once more).
phase() {
	snap "$T/before.json"
	run_sim --batches $B --loss 0.05 --seed "$1" --rate 20kpps
	sent=$(($(sim_field sent) + sent_before))
	sent_before=$sent
	wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $sent"
	wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.open_bufs == 0 and .handoff.held_bufs == 0"
	snap "$T/after.json"
	jq -c --slurpfile b "$T/before.json" "$MINUS . | minus(\$b[0])" "$T/after.json" > "$T/stream.json"
	published=$(s .handoff.published)
	complete=$(s .reorder.batches_complete)
	timeout=$(s .reorder.batches_timeout)
	evicted=$(s .reorder.batches_evicted)
	note "phase: published=$published complete=$complete timeout=$timeout evicted=$evicted"

	expect_eq "sum of assembly buckets = count" "$(s '.assembly_ns.buckets | add')" "$(s .assembly_ns.count)"
	expect_eq "assembly count = published" "$(s .assembly_ns.count)" "$published"
	expect_eq "complete + timeout + evicted = count" $((complete + timeout + evicted)) "$(s .assembly_ns.count)"
	# With 5% loss most batches of 16 lose a packet: well over 1% time out,
	# so the p99 rank falls among timed-out tensors.
	[ $((timeout * 100)) -gt "$published" ] ||
		fail "only $timeout of $published tensors timed out: the seed gave too little loss"
	# A batch times out when the worker's clock (read after its receive
	# call returns) is at or past its deadline, first packet + 2 ms, and
	# its publish time is read from the same clock later still: every
	# timed-out tensor took more than 2 ms, so lies in a bucket above le
	# 2 ms. This bound is exact.
	gt2=$(s '[.assembly_ns.le_ns as $le | .assembly_ns.buckets | to_entries[] |
		select(.key >= ($le | length) or $le[.key] > 2000000) | .value] | add')
	[ "$gt2" -ge "$timeout" ] || fail "$gt2 tensors took over 2 ms, fewer than the $timeout that timed out"
	echo "   ok  $gt2 tensors took over 2 ms, >= $timeout timed out"
	# So p99 is above le 2 ms. And below: the worker never sleeps past the
	# nearest deadline (its ppoll() timeout, ns resolution, 50 us timer
	# slack, is the time left to it), so a timed-out tensor is published
	# within about 0.1 ms of it, and a complete one waits at most for the
	# lossy batch ahead of it. More than 3 ms late (past 5 ms) takes the
	# receive thread being off its core that long; p99 leaves 1% of the
	# tensors (5) to such stalls. So the p99 bucket is le 5 ms, the one
	# just above the deadline; a worker that slept to its idle interval
	# (50 ms) puts it higher, an assembly time taken from a later packet
	# than the first lower.
	p99=$(s ".assembly_ns | $P99")
	if [ "$p99" = 5000000 ]; then
		echo "   ok  assembly p99 bucket = le 5 ms"
		return 0
	fi
	bad="assembly p99 bucket is le $p99 ns, not le 5 ms (buckets $(s '.assembly_ns.buckets | map(tostring) | join(",")'))"
	# An evicted batch means the batch 8 ahead of it arrived before the
	# worker looked at its 2 ms deadline: the thread was off its core for
	# over 4 ms while packets came (every receive burst drains expired
	# batches first). Without that witness, a late p99 is the daemon's.
	[ "$evicted" -gt 0 ] || fail "$bad"
	note "$bad, and $evicted batches evicted: the receive thread stalled"
	return 1
}

sent_before=0
note "lossy traffic: $B batches of 16 packets, 5% of the packets lost"
if ! phase 3; then
	# (seq restarts at 0: the stream resyncs, as sims do; see 02)
	note "once more: a stall of the machine, not of the daemon"
	phase 4 || note "stalled again: the p99 bound is not checked on this machine now (every exact check passed)"
fi

# What follows reads the whole run.
wait_consumers "[.consumers[] | select(.pid == $CONS)][0] | .released == .delivered and .held == 0"
ctl -j consumers > "$T/consumers.json"
snap "$T/stream.json"
published=$(s .handoff.published)
expect_eq "whole run: assembly count = published" "$(s .assembly_ns.count)" "$published"
expect_eq "le_ns" "$(s '.assembly_ns.le_ns | map(tostring) | join(",")')" \
	"1000,2000,5000,10000,20000,50000,100000,200000,500000,1000000,2000000,5000000,10000000,20000000,50000000,100000000,200000000,500000000,1000000000,2000000000,5000000000,10000000000"
expect_eq "buckets = le_ns + 1 (+Inf)" "$(s '.assembly_ns.buckets | length')" 23

note "daqirictl stats and top print the p99"
case "$(s ".assembly_ns | $P99")" in
inf) want=">10s" ;;
*000000000) want="$(($(s ".assembly_ns | $P99") / 1000000000))s" ;;
*000000) want="$(($(s ".assembly_ns | $P99") / 1000000))ms" ;;
*) want="$(($(s ".assembly_ns | $P99") / 1000))us" ;;
esac
ctl stats > "$T/stats.txt"
got=$(awk -v n="name: $STREAM" '$0 ~ n"$" { f = 1 } f && /assembly_ns:/ { g = 1 } g && /p99:/ { print $2, $3; exit }' "$T/stats.txt")
expect_eq "stats: assembly_ns p99" "$got" "<= $want"
ctl top 1 > "$T/top"
expect_eq "top latency header" "$(grep '^LATENCY' "$T/top" | tr -s ' ')" \
	"LATENCY ASSEMBLY_P50 ASSEMBLY_P99 HOLD_P50 HOLD_P99"
row=$(awk -v s="$STREAM" '/^LATENCY/ { f = 1; next } f && $1 == s' "$T/top")
expect_eq "top: assembly p99" "$(echo "$row" | awk '{ print $3 }')" "$want"
[ "$(echo "$row" | awk '{ print $5 }')" != "-" ] || fail "top shows no hold p99: $row"

note "hold_ns: one count per release"
c() {
	jq -r --argjson p "$CONS" "[.consumers[] | select(.pid == \$p)][0] | $1" "$T/consumers.json"
}
released=$(c .released)
[ "$released" -gt 0 ] || fail "the consumer released nothing"
expect_eq "consumer: released = delivered" "$released" "$(c .delivered)"
expect_eq "consumer: buckets = le_ns + 1" "$(c '.hold_ns.buckets | length')" "$(($(c '.hold_ns.le_ns | length') + 1))"
expect_eq "consumer: sum of hold buckets = count" "$(c '.hold_ns.buckets | add')" "$(c .hold_ns.count)"
expect_eq "consumer: hold count = released" "$(c .hold_ns.count)" "$released"
# the only subscription: the stream's hold_ns is the consumer's
expect_eq "stream: hold count = released" "$(s .hold_ns.count)" "$released"
expect_eq "stream: hold buckets = the consumer's" "$(s '.hold_ns.buckets | map(tostring) | join(",")')" \
	"$(c '.hold_ns.buckets | map(tostring) | join(",")')"

note "metrics: the histograms as Prometheus histograms, counts as in stats"
ctl metrics > "$T/metrics"
promtool check metrics < "$T/metrics" > "$T/promtool" 2>&1 || fail "promtool: $(cat "$T/promtool")"
echo "   ok  promtool check metrics"
# metric NAME: the value of the series of $STREAM in family NAME
metric() {
	grep "^$1{.*stream=\"$STREAM\"" "$T/metrics" | sed 's/.* //'
}
expect_eq "assembly _count = stats count" "$(metric daqiri_stream_assembly_seconds_count)" "$(s .assembly_ns.count)"
expect_eq "assembly +Inf bucket = stats count" \
	"$(grep '^daqiri_stream_assembly_seconds_bucket{.*stream="'"$STREAM"'".*le="+Inf"' "$T/metrics" | sed 's/.* //')" \
	"$(s .assembly_ns.count)"

note "the consumer's own assembly histogram, from the descriptors, agrees"
# A descriptor carries the first packet and publish times the daemon
# counted, so the consumer's histogram of what it got is the daemon's
# less the tensors it missed (a loaded machine may keep it off its core
# long enough to overrun): never more in any bucket, equal when it got
# every tensor.
kill -TERM "$CONS"
wait_gone "$CONS"
expect_eq "consumer exit" "$GONE_RC" 0
mine=$(kv "$T/consumer.out" assembly)
theirs=$(s '.assembly_ns.buckets | map(tostring) | join(",")')
jq -n -e --arg a "$mine" --arg b "$theirs" \
	'($a | split(",") | map(tonumber)) as $x | ($b | split(",") | map(tonumber)) as $y |
	 ($x | length) == ($y | length) and all(range($x | length); $x[.] <= $y[.])' > /dev/null ||
	fail "consumer's assembly buckets $mine exceed the daemon's $theirs"
got=$(kv "$T/consumer.out" got)
if [ "$got" -eq "$published" ]; then
	expect_eq "consumer (got every tensor): assembly buckets" "$mine" "$theirs"
	expect_eq "consumer: assembly sum_ns" "$(kv "$T/consumer.out" assembly_sum_ns)" "$(s .assembly_ns.sum_ns)"
else
	note "the consumer got $got of $published tensors: its buckets within the daemon's"
fi
stop_daemon
echo "ok"
