#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TX from the client side: `daqirictl send` and libdaqiri-client's
# daqiri_tx_* through the socket engine to a UDP receiver of our own on
# loopback (Python's standard library only). Lines, --hex lines, --raw
# input and stdin arrive exactly and in order; a line longer than the
# channel's largest payload, or one that is not hex, is an error naming
# it and nothing goes; a non-admin is told to use root or the admin
# group; tests/system/tx-client sends 10000 payloads with
# daqiri_tx_buf / daqiri_tx_send / daqiri_tx_flush (-EAGAIN included)
# and the daemon's stats count exactly them. bash completion offers the
# daemon's tx queue after `send`.
. tests/system/lib.sh

command -v jq > /dev/null || { echo "SKIP: no jq"; exit 77; }
TXPORT=$(( PORT + 1 ))
BUFSZ=1000
N=10000
LEN=200

# The default config with a tx queue t0 whose region gives it BUFSZ-byte
# payloads, sending to our receiver's port; the control socket open to
# everyone (0666), so uid nobody reaches the permission check.
make_config -e 's/socket_mode: 0660 /socket_mode: 0666 /'
add_tx_queue host 64 "$BUFSZ"

# The receiver: exactly COUNT datagrams on TXPORT, each written as one
# line of hex to OUT, in arrival order; "ready" once bound.
cat > "$T/sink.py" << 'EOF'
import select, socket, sys, time
port, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("127.0.0.1", port))
print("ready", flush=True)
end = time.monotonic() + 60
with open(out, "w") as f:
    for i in range(count):
        left = end - time.monotonic()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            print("FAIL timed out after %d of %d" % (i, count), flush=True)
            sys.exit(1)
        f.write(s.recv(70000).hex() + "\n")
print("ok %d" % count, flush=True)
EOF

# The hex lines FILE's payloads must arrive as: one per line, newline
# stripped (--raw: the whole file); --hex: decoded, blanks dropped.
want_hex() {
	/usr/bin/python3 - "$@" << 'EOF'
import sys
mode, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
if mode == "raw":
    print(data.hex())
    sys.exit(0)
lines = data.split(b"\n")
if lines and lines[-1] == b"":
    lines.pop()
for l in lines:
    if mode == "hex":
        l = bytes.fromhex(l.decode().replace("\t", " ").replace("\r", ""))
    print(l.hex())
EOF
}

start_daemon
Q=sensor0/t0
txq() {
	ctl -j stats | jq -r ".interfaces[0].tx.queues[0] | $1"
}
expect_eq "max_payload" "$(txq .max_payload)" $BUFSZ

# sink NAME COUNT: the receiver in the background, ready to receive
sink() {
	bg /usr/bin/python3 "$T/sink.py" "$TXPORT" "$2" "$T/$1.got" > "$T/$1.out" 2>&1
	RECV=$LAST_PID
	wait_line "$T/$1.out" '^(ready|FAIL)'
}

# got NAME WANT-FILE: the receiver finished and got exactly WANT-FILE
got() {
	wait_gone "$RECV" 70
	expect_eq "receiver $1" "$GONE_RC:$(cat "$T/$1.out" | tail -1)" "0:ok $(wc -l < "$2" | tr -d ' ')"
	cmp -s "$T/$1.got" "$2" || fail "$1: the payloads differ: $(diff "$T/$1.got" "$2" | head -5)"
	echo "   ok  $1: every payload, in order"
}

note "lines: one payload each, in order (an empty line, a line of exactly $BUFSZ bytes)"
{
	echo "hello, instrument"
	echo "  leading and trailing blanks kept  "
	echo ""
	printf 'tab\there\r\n'
	printf '%s\n' "$(head -c $BUFSZ /dev/zero | tr '\0' x)"
	printf 'caf\303\251 \342\202\254 bytes as they are\n'
	printf 'a last line without its newline'
} > "$T/lines.txt"
want_hex lines "$T/lines.txt" > "$T/lines.want"
p0=$(txq .packets)
sink lines "$(wc -l < "$T/lines.want")"
expect_eq "send --count" "$(ctl send --count "$Q" "$T/lines.txt")" 7
got lines "$T/lines.want"
expect_eq "packets" "$(txq .packets)" $((p0 + 7))

note "--hex lines, from standard input"
printf '00 01 02 ff\ndeadbeef\n4142\t4344\n\n7e\n' > "$T/hex.txt"
want_hex hex "$T/hex.txt" > "$T/hex.want"
sink hex 5
ctl send --hex "$Q" - < "$T/hex.txt" > "$T/hex.send" 2>&1 ||
	fail "send --hex: $(cat "$T/hex.send")"
expect_eq "send prints nothing without --count" "$(cat "$T/hex.send")" ""
got hex "$T/hex.want"

note "--raw: the whole input as one payload, newlines and all"
printf 'line one\nline two\n\000binary\377\n' > "$T/raw.bin"
want_hex raw "$T/raw.bin" > "$T/raw.want"
sink raw 1
ctl -j send --raw "$Q" "$T/raw.bin" > "$T/raw.json" 2>&1 ||
	fail "send --raw: $(cat "$T/raw.json")"
got raw "$T/raw.want"
expect_eq "-j send: sent, failed" "$(jq -c '[.queue, .payloads, .sent, .failed]' "$T/raw.json")" \
	"[\"$Q\",1,1,0]"

note "a line longer than the channel's largest payload: an error naming it, nothing sent"
p0=$(txq .packets)
{
	echo "short"
	echo "fine too"
	head -c $((BUFSZ + 1)) /dev/zero | tr '\0' y
	echo
	echo "after"
} > "$T/long.txt"
if ctl send "$Q" "$T/long.txt" > "$T/long.out" 2>&1; then
	fail "an over-long line was sent"
fi
grep -q "long.txt:3: line of $((BUFSZ + 1)) bytes is longer than the largest payload of $Q ($BUFSZ bytes)" "$T/long.out" ||
	fail "over-long line: $(cat "$T/long.out")"
echo "   ok  $(cat "$T/long.out")"
if printf 'ab\nabc\n' | ctl send --hex "$Q" - > "$T/badhex.out" 2>&1; then
	fail "an odd hex line was sent"
fi
grep -q "stdin:2: not hex at column 3" "$T/badhex.out" ||
	fail "bad hex: $(cat "$T/badhex.out")"
echo "   ok  $(cat "$T/badhex.out")"
if ctl send "$Q" "$T/no-such-file" > "$T/nofile.out" 2>&1; then
	fail "a missing file was sent"
fi
grep -q "no-such-file: No such file" "$T/nofile.out" || fail "missing file: $(cat "$T/nofile.out")"
if echo x | ctl send sensor0/nope - > "$T/noq.out" 2>&1; then
	fail "a tx queue that does not exist was opened"
fi
grep -q "sensor0/nope: no such tx queue" "$T/noq.out" || fail "no such queue: $(cat "$T/noq.out")"
echo "   ok  $(cat "$T/noq.out")"
expect_eq "packets unchanged" "$(txq .packets)" "$p0"

note "not root and not the admin group: refused, with the hint"
if command -v setpriv > /dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	chmod 0755 "$T"
	chmod 0644 "$T/lines.txt"
	if setpriv --reuid=65534 --regid=65534 --clear-groups \
	    "$BUILD/daqirictl" -s "$SOCK" send "$Q" "$T/lines.txt" > "$T/nobody.out" 2>&1; then
		fail "uid 65534 sent: $(cat "$T/nobody.out")"
	fi
	grep -q "needs root (set daemon.admin_group to a group, and add the user to it, to let others)" "$T/nobody.out" ||
		fail "uid 65534 refused, but: $(cat "$T/nobody.out")"
	echo "   ok  $(cat "$T/nobody.out")"
else
	note "SKIP part: not root or no setpriv, the non-admin refusal is not tried"
fi
expect_eq "packets unchanged" "$(txq .packets)" "$p0"

note "the library: $N payloads with daqiri_tx_buf / daqiri_tx_send / daqiri_tx_flush, 16 buffers"
b0=$(txq .bytes)
f0=$(txq .ring_full)
bg /usr/bin/python3 tests/system/tx-recv.py --port "$TXPORT" --count $N --len $LEN --vary > "$T/recv.out" 2>&1
RECV=$LAST_PID
wait_line "$T/recv.out" '^(ready|FAIL)'
"$BUILD/tests/tx-client" "$SOCK" "$Q" $N $LEN 16 > "$T/client.out" 2>&1 ||
	fail "tx-client: $(cat "$T/client.out")"
echo "   |  $(cat "$T/client.out")"
wait_gone "$RECV" 70
expect_eq "receiver" "$GONE_RC:$(tail -1 "$T/recv.out" | cut -d' ' -f1-2)" "0:ok count=$N"
bytes=0
i=0
while [ $i -lt 3 ]; do
	# N payloads of LEN - seq % 3 bytes
	bytes=$((bytes + (N / 3 + (i < N % 3 ? 1 : 0)) * (LEN - i)))
	i=$((i + 1))
done
expect_eq "packets" "$(txq .packets)" $((p0 + N))
expect_eq "bytes" "$(txq .bytes)" $((b0 + bytes))
expect_eq "ring_full: the client's -EAGAIN count" "$(txq .ring_full)" \
	$((f0 + $(kv "$T/client.out" ring_full)))
for r in too_big bad_buffer engine_error closed; do
	expect_eq "drops $r" "$(txq .drops.$r)" 0
done
expect_eq "channels broken" "$(txq .broken)" 0
wait_for '.interfaces[0].tx.queues[0].channels_open == 0'

note "bash completion: send offers the daemon's tx queues, then files"
if command -v bash > /dev/null; then
	F=client/daqirictl.bash-completion
	complete_words() {
		PATH="$(cd "$BUILD" && pwd):$PATH" bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _daqirictl; echo "${COMPREPLY[*]}"' "$F" "$@"
	}
	expect_eq "send QUEUE" "$(complete_words daqirictl -s "$SOCK" send '')" "$Q"
	expect_eq "send --hex QUEUE" "$(complete_words daqirictl -s "$SOCK" send --hex s)" "$Q"
	expect_eq "send options" "$(complete_words daqirictl send --)" "--hex --raw --count"
	expect_eq "send QUEUE FILE" "$(complete_words daqirictl -s "$SOCK" send "$Q" "$T/lines.t")" "$T/lines.txt"
fi
stop_daemon
echo "ok"
