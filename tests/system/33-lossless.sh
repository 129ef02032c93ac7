#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The lossless delivery policy end to end: a lossless consumer that
# sleeps 50 ms per tensor gets every published tensor, no seq missing,
# while the stream drops whole batches at ingest as no_buffer, charged
# to it (handoff.blocked_by, its blocked count); a latest consumer of the
# same stream verifies every tensor it gets and is charged nothing; the
# accounting identity holds. A lossless consumer that dies gives its
# buffers back and the stream resumes. An unprivileged user asking for
# lossless is refused with the reason.
. tests/system/lib.sh

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to become uid 65534"; exit 77; }
chmod 755 "$T"
NBUFS=32
CONS="$BUILD/daqiri-consume"
make_config -e 's/socket_mode: 0660/socket_mode: 0666/'
start_daemon

# sum SUMMARY-FILE FIELD: a number from daqiri-consume's closing line
# ("..., seq gaps 0, verified elements 123, errors 0").
sum() {
	sed -n 's/^daqiri-consume: .*[:,] '"$1"' \([0-9]*\).*/\1/p' "$2" | tail -1
}

note "an unprivileged user asks for lossless: refused, with the reason"
if setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$CONS" -s "$SOCK" --lossless --count 1 "$STREAM" > "$T/nobody.out" 2> "$T/nobody.err"; then
	fail "uid 65534 got a lossless subscription"
fi
grep -q "^daqiri-consume: subscribe \"$STREAM\": policy \"lossless\" needs root (set daemon.admin_group to a group, and add the user to it, to let others): a lossless subscriber can stop the stream for everyone" "$T/nobody.err" ||
	fail "refusal: $(cat "$T/nobody.err")"
echo "   ok  $(cat "$T/nobody.err")"
expect_eq "subscriptions after the refusal" "$(ctl -j consumers | jq '.consumers | length')" 0

note "a slow lossless consumer and a latest one on the same stream"
bg "$CONS" -s "$SOCK" --lossless --delay-ms 50 --verify --quiet "$STREAM" 2> "$T/lossless.err"
LL=$LAST_PID
bg "$CONS" -s "$SOCK" --verify --quiet "$STREAM" 2> "$T/latest.err"
LT=$LAST_PID
wait_consumers "[.consumers[] | select(.state == \"active\")] | length == 2"
LL_SUB=$(consumer "$LL" sub_id)
LT_SUB=$(consumer "$LT" sub_id)
expect_eq "policy of the lossless one" "$(consumer "$LL" policy)" lossless
expect_eq "policy of the latest one" "$(consumer "$LT" policy)" latest
ctl -t consumers > "$T/table"
awk -v p="$LL" '$4 == p { print $8 }' "$T/table" > "$T/col"
expect_eq "POLICY column of the lossless one" "$(cat "$T/col")" lossless

# 60 batches in well under a second; the lossless consumer takes 50 ms
# each, so the pool of 32 runs dry and later batches find no buffer.
B=60
run_sim --batches $B --rate 20kpps --quiet
sent=$(sim_field sent)
# the sender is done: wait until nothing is open (batches without a
# buffer end at their deadline) and the lossless one has caught up
wait_for ".interfaces[0].rx_packets + .interfaces[0].kernel == $sent" 20
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.open_bufs == 0" 20
read_stream
pub=$h_published
wait_consumers "[.consumers[] | select(.sub_id == $LL_SUB)][0] | .released == $pub and .pending == 0" 60
read_stream
expect_eq "published unchanged while the lossless one caught up" "$h_published" "$pub"
[ "$r_no_buffer" -gt 0 ] && [ "$r_batches_no_buffer" -gt 0 ] ||
	fail "no batch was dropped for want of a buffer (no_buffer $r_no_buffer)"
note "published $pub of $B batches; $r_batches_no_buffer batches ($r_no_buffer packets) dropped as no_buffer"
expect_eq "published + batches without a buffer = sim batches" \
	$((pub + r_batches_no_buffer)) $B
expect_eq "rx_packets + kernel = sim sent" $((i_rx_packets + i_kernel)) "$sent"
expect_eq "stream packets_in = rx_packets" "$r_packets_in" "$i_rx_packets"
expect_eq "placed + duplicate + late + malformed + no_buffer + backend_error = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
expect_eq "rx = packets_in + unmatched + no_stream + misrouted" \
	$((r_packets_in + i_unmatched + i_no_stream + i_misrouted)) "$i_rx_packets"
expect_eq "handoff.blocked_by" "$h_blocked_by" "$LL_SUB"
[ "$(consumer "$LL" blocked)" -gt 0 ] || fail "the lossless consumer was not charged (blocked $(consumer "$LL" blocked))"
expect_eq "latest consumer's blocked" "$(consumer "$LT" blocked)" 0
expect_eq "lossless: delivered" "$(consumer "$LL" delivered)" "$pub"
expect_eq "lossless: overruns" "$(consumer "$LL" overruns)" 0
expect_eq "latest: delivered + overruns = published" \
	$(( $(consumer "$LT" delivered) + $(consumer "$LT" overruns) )) "$pub"
wait_consumers "[.consumers[] | select(.sub_id == $LT_SUB)][0] | .released == .delivered"
lt_got=$(consumer "$LT" delivered)

kill -TERM "$LL" "$LT"
wait_gone "$LL"
expect_eq "lossless consumer exit" "$GONE_RC" 0
wait_gone "$LT"
expect_eq "latest consumer exit" "$GONE_RC" 0
cat "$T/lossless.err" "$T/latest.err" | grep '^daqiri-consume: .*tensors' | sed 's/^/   /'
expect_eq "lossless: tensors received" "$(sum tensors "$T/lossless.err")" "$pub"
expect_eq "lossless: seq gaps" "$(sum 'seq gaps' "$T/lossless.err")" 0
expect_eq "lossless: verification errors" "$(sum errors "$T/lossless.err")" 0
expect_eq "latest: tensors received" "$(sum tensors "$T/latest.err")" "$lt_got"
expect_eq "latest: verification errors" "$(sum errors "$T/latest.err")" 0
[ "$(sum 'verified elements' "$T/latest.err")" -gt 0 ] || fail "the latest consumer verified nothing"
wait_consumers '.consumers | length == 0'
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == $NBUFS"

note "a lossless consumer that stops reading, then dies: its buffers come back"
bg "$CONS" -s "$SOCK" --lossless --delay-ms 60000 --quiet "$STREAM" 2> "$T/stuck.err"
ST=$LAST_PID
wait_consumers "[.consumers[] | select(.state == \"active\")] | length == 1"
read_stream
pub0=$h_published; nb0=$r_batches_no_buffer
run_sim --batches 50 --rate 20kpps --quiet
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.open_bufs == 0 and .reorder.batches_no_buffer > $nb0" 20
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == 0"
[ "$(consumer "$ST" pending)" -gt 0 ] || fail "nothing pending for the stuck lossless consumer"
kill -KILL "$ST"
wait_gone "$ST"
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.free_bufs == $NBUFS"
wait_consumers '.consumers | length == 0'
echo "   ok  every buffer free again"
read_stream
pub1=$h_published; nb1=$r_batches_no_buffer
run_sim --batches 10 --rate 20kpps --quiet
wait_for ".streams[] | select(.name == \"$STREAM\") | .handoff.published == $((pub1 + 10)) and .handoff.open_bufs == 0" 20
read_stream
expect_eq "no batch dropped after it died" "$r_batches_no_buffer" "$nb1"
expect_eq "placed + duplicate + late + malformed + no_buffer + backend_error = packets_in" \
	$((r_placed + r_duplicate + r_late + r_malformed + r_no_buffer + r_backend_error)) "$r_packets_in"
kill -0 "$DAEMON_PID" || fail "daqirid died"
stop_daemon
echo "PASS"
