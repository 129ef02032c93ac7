#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Consumer isolation (issue 7): tests/system/hostile-consumer speaks the
# protocol itself and attacks the daemon with whatever a consumer is given
# (fds, mappings, its ring, connections), while a good consumer
# (daqiri-consume --verify) checks every element of a lossy, shuffled
# stream. Each attack prints one line:
#   attack NAME: refused (what the attacker was told)
#   attack NAME: ineffective (why it changed nothing)
#   attack NAME: EFFECTIVE (what broke)
# and the test fails if any attack is EFFECTIVE, if the daemon's pid
# changes, if `daqirictl status` stops answering or if the accounting
# invariant does not hold exactly. Release-ring garbage (indexes out of
# range, not held, twice, impossible positions) is 05-garbage-release.sh
# and random control messages are 06-control-garbage.sh; not repeated.
#
# The attacks (issue 7's numbers): write-tensor, write-bitmap (2: reopen
# through /proc/self/fd O_RDWR, write(2), mmap PROT_WRITE, mprotect,
# ftruncate), resize-ring, subscribe-ranges (7: depth, max_held),
# subscribe-10000 (per-connection cap), stray-fds, garbage-after-hello,
# slow-reader, abandoned-subscribe, bitmap-clear (2: zero the presence
# bitmap while duplicates arrive), release-flood and ring-scribble (the
# ring's daemon side), hold (3), sigstop-hold (hold timeout),
# connections-70 and -1000 (4: never say hello, as uid 65534),
# wakeup-stall (1), big-replies (8). 5 and 6 (backend errors, signals
# during CUDA) are not a consumer's doing: unit tests cover them.
#
# Alone: BUILD=build sh tests/system/18-hostile.sh (about 2 minutes).
# Under AddressSanitizer/UBSan (what `make system-asan` does):
#   make BUILD=build/asan SANITIZE=1 HAVE_CUDA=0 OPT='-O1 -g' all system-tools
#   BUILD=build/asan sh tests/system/18-hostile.sh
. tests/system/lib.sh

NBUFS=32
B=20			# tensors per phase
NOBODY=65534		# the attacker's uid where it needs no privilege
HC="$BUILD/tests/hostile-consumer"
RESULTS=$T/results

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the attacker drops to uid $NOBODY)"; exit 77; }
# uid 65534 must reach the socket in our directory
chmod 0755 "$T"
# Anyone may connect (the attacker is unprivileged); a consumer holding a
# buffer for two seconds is cut off (the SIGSTOP attack).
# The per-connection cap is 8, below the uid's share of the stream (13 of
# 27 buffers), so that the cap, not the share, stops subscribe-10000.
# Deadlines of 1 s, not 100 ms: the phases count every packet placed
# exactly, and a daemon built with ASan on a busy machine can be held
# past 100 ms while a batch's packets still wait in the socket (they then
# count as late, rightly, and a refused attack reads as effective).
make_config -e 's/socket_mode: 0660/socket_mode: 0666/' \
	-e 's/timeout_us: 100000 /timeout_us: 1000000 /' \
	-e 's/hold_timeout_ms: [0-9]*/hold_timeout_ms: 2000/' \
	-e 's/max_subscriptions_per_connection: [0-9]*/max_subscriptions_per_connection: 8/'
SUBCAP=$(sed -n 's/^ *max_subscriptions_per_connection: *\([0-9]*\).*/\1/p' "$T/daqirid.yaml")
SUBCAP=${SUBCAP:-16}
start_daemon
PID0=$DAEMON_PID
: > "$RESULTS"

# alive PID: running (a zombie is dead); dead PID: the opposite.
alive() {
	kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}
dead() {
	! alive "$1"
}

# sanitizer_says LOG: what ASan/UBSan reported in the daemon's log.
sanitizer_says() {
	if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$1"; then
		result "attack sanitizer: EFFECTIVE ($(grep -m1 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$1"))"
	fi
}

result() {
	echo "$*" | tee -a "$RESULTS"
}

# The daemon's answer to `status` within 10 s, or why not (never fails).
status_answers() {
	timeout 10 "$BUILD/daqirictl" -s "$SOCK" status > "$T/status.out" 2>&1
}

# until_true SECONDS CMD...: CMD every 50 ms until it succeeds; 1 if never.
until_true() {
	_ut_lim=$(($1 * 20)); shift; _ut_n=0
	while ! "$@" 2>/dev/null; do
		_ut_n=$((_ut_n + 1)); [ $_ut_n -lt $_ut_lim ] || return 1
		sleep 0.05
	done
}

# snap PREFIX: the counters of $STREAM and interface 0 as PREFIX_<name>
# (or "x" each when stats do not answer). drops is every packet drop
# reason the stream has, including ones added after this test was
# written (any counter named *_packets, as no_buffer).
snap() {
	for v in in placed dl drops missing pub nobuf open rx kd spin other; do
		eval "${1}_$v=x"
	done
	timeout 10 "$BUILD/daqirictl" -s "$SOCK" -j stats > "$T/snap.json" 2>/dev/null || return 0
	eval "$(jq -r --arg s "$STREAM" --arg p "$1" '
	  (.streams[] | select(.name == $s) | .reorder as $r | .handoff as $h |
	   "\($p)_in=\($r.packets_in) \($p)_placed=\($r.placed)",
	   "\($p)_dl=\($r.duplicate + $r.late) \($p)_missing=\($r.missing_slots)",
	   "\($p)_drops=\([$r | to_entries[] | select(.key == "duplicate" or
	       .key == "late" or .key == "malformed" or
	       (.key | endswith("_packets"))) | .value] | add)",
	   "\($p)_pub=\($h.published) \($p)_nobuf=\($r.no_buffer) \($p)_open=\($h.open_bufs)"),
	  "\($p)_spin=\([.streams[] | (.reorder // .raw).packets_in] | add)",
	  (.interfaces[0] | "\($p)_rx=\(.rx_packets) \($p)_kd=\(.kernel)",
	   "\($p)_other=\(.unmatched + .no_stream + .misrouted)")' "$T/snap.json" 2>/dev/null)" || true
}

settled() {
	snap s
	[ "$s_open" = 0 ] && [ "$s_pub" != x ] && [ "$s_pub" -ge "$1" ]
}

good_subscribed() {
	[ -n "$(consumer "$GOOD" state)" ]
}

# phase_begin NAME [BATCHES]: a good consumer that verifies the next
# BATCHES ($B) tensors element by element subscribes.
phase_begin() {
	PHASE=$1
	PB=${2:-$B}
	snap p0
	"$BUILD/daqiri-consume" -s "$SOCK" --verify --quiet --count $PB --timeout 10 \
		"$STREAM" > "$T/good-$PHASE.out" 2> "$T/good-$PHASE.err" &
	GOOD=$!
	PIDS="$PIDS $GOOD"
	until_true 10 good_subscribed || true
}

# phase_end SEED: the simulator sends PB (phase_begin's) lossy, shuffled, duplicated
# batches; PHASE_BROKE is what went wrong ("" when the good consumer
# got every tensor exact and every packet is accounted for).
phase_end() {
	PHASE_BROKE=""
	run_sim --batches $PB --seed "$1" --shuffle 64 --loss 0.01 --dup 0.05 --rate 5kpps
	unique=$(sim_field unique); dropped=$(sim_field dropped); dups=$(sim_field duplicates)
	broke() { PHASE_BROKE="$PHASE_BROKE${PHASE_BROKE:+; }$*"; }
	if [ "$p0_pub" = x ]; then
		broke "stats did not answer before the phase"
		return 0
	fi
	until_true 20 settled $((p0_pub + PB)) || true
	i=0
	while kill -0 "$GOOD" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$GOOD/status" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 600 ] || { kill -9 "$GOOD"; break; }
		sleep 0.05
	done
	grc=0; wait "$GOOD" || grc=$?
	alive "$PID0" || { broke "daqirid (pid $PID0) died"; return 0; }
	status_answers || broke "daqirictl status: $(tail -1 "$T/status.out")"
	snap p1
	if [ "$p1_pub" = x ]; then
		broke "stats did not answer after the phase"
		return 0
	fi
	sum=$(grep ': tensors ' "$T/good-$PHASE.err" | tail -1)
	num() { echo "$sum" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"; }
	[ $((p1_pub - p0_pub)) -eq $PB ] || broke "published $((p1_pub - p0_pub)) of $PB batches"
	[ $((p1_nobuf - p0_nobuf)) -eq 0 ] || broke "no_buffer +$((p1_nobuf - p0_nobuf))"
	[ "$grc" -eq 0 ] || broke "good consumer exit $grc: $(grep -v ': tensors ' "$T/good-$PHASE.err" | tail -1)"
	[ "$(num tensors)" = $PB ] || broke "good consumer got $(num tensors) of $PB tensors"
	[ "$(num 'seq gaps')" = 0 ] || broke "good consumer: $(num 'seq gaps') seq gaps"
	[ "$(num errors)" = 0 ] || broke "good consumer: $(num errors) elements wrong"
	if [ "$p1_kd" = "$p0_kd" ]; then
		[ $((p1_placed - p0_placed)) -eq "$unique" ] ||
			broke "placed $((p1_placed - p0_placed)) of $unique unique packets"
		[ $((p1_dl - p0_dl)) -eq "$dups" ] ||
			broke "duplicate + late $((p1_dl - p0_dl)), sim sent $dups duplicates"
		[ $((p1_missing - p0_missing)) -eq "$dropped" ] ||
			broke "missing_slots +$((p1_missing - p0_missing)), sim dropped $dropped"
		[ "$(num 'missing slots')" = "$dropped" ] ||
			broke "good consumer saw $(num 'missing slots') missing slots, sim dropped $dropped"
	fi
	[ "$p1_in" -eq $((p1_placed + p1_drops)) ] ||
		broke "accounting: packets_in $p1_in != placed $p1_placed + drops $p1_drops"
}

# judge NAME WHY [FILE]: the attack's line from the phase that ran beside
# it (the attacker's output in $T/hc-FILE.out, FILE defaulting to NAME):
# EFFECTIVE when the phase broke or the attacker never got going, else
# the attacker's own verdict (it was refused before it could start) or
# ineffective.
judge() {
	f=$T/hc-${3:-$1}.out
	if ! grep -q -E "^ready|^attack $1: " "$f" 2>/dev/null; then
		result "attack $1: EFFECTIVE (the attacker did not run: $(grep -v '^info ' "$f" 2>/dev/null | tail -1))"
	elif [ -n "$PHASE_BROKE" ]; then
		result "attack $1: EFFECTIVE ($PHASE_BROKE)"
	elif grep -q "^attack $1: " "$f"; then
		result "$(grep "^attack $1: " "$f" | tail -1)"
	else
		result "attack $1: ineffective ($2; the good consumer's $PB tensors exact)"
	fi
	grep '^info ' "$f" 2>/dev/null | sed 's/^/   | /' || true
}

# attacker NAME [-u UID] ARGS...: start one, output in $T/hc-NAME.out;
# wait for its "ready" or its end.
attacker() {
	name=$1; shift
	bg "$HC" -s "$SOCK" "$@" > "$T/hc-$name.out" 2>&1
	ATT=$LAST_PID
	until_true 60 grep -q -E '^ready|^attack ' "$T/hc-$name.out" || true
}

# stop_attacker: SIGTERM (after SIGCONT), and wait for it (bounded).
stop_attacker() {
	kill -CONT "$ATT" 2>/dev/null || true
	kill -TERM "$ATT" 2>/dev/null || true
	i=0
	while kill -0 "$ATT" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$ATT/status" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 200 ] || { kill -9 "$ATT" 2>/dev/null; break; }
		sleep 0.05
	done
	wait "$ATT" 2>/dev/null || true
}

# A finished attacker's own lines; NAMES... are the verdicts it must give.
own_lines() {
	f=$T/hc-$1.out; shift
	for a in "$@"; do
		grep -q "^attack $a: " "$f" ||
			result "attack $a: EFFECTIVE (the attacker gave no verdict: $(grep -v -E '^(attack|info) ' "$f" | tail -1))"
	done
	grep '^attack ' "$f" | while read -r line; do result "$line"; done
	grep '^info ' "$f" | sed 's/^/   | /' || true
	grep -v -E '^(attack|info|ready) ' "$f" | sed 's/^/   ! /' || true
}

# ---------------------------------------------------------------------------
note "baseline: the good consumer alone"
phase_begin baseline
phase_end 11
[ -z "$PHASE_BROKE" ] || fail "without any attack: $PHASE_BROKE"

note "memory: write or resize what was handed over read-only (uid $NOBODY)"
attacker memory -u $NOBODY memory "$STREAM"
until_true 30 grep -q '^attack resize-ring' "$T/hc-memory.out" || true
own_lines memory write-tensor write-bitmap resize-ring

note "limits: subscribe ranges, 10000 subscriptions on one connection (uid $NOBODY)"
attacker limits -u $NOBODY limits "$STREAM" "$SUBCAP"
until_true 60 grep -q '^attack subscribe-10000' "$T/hc-limits.out" || true
own_lines limits subscribe-ranges subscribe-10000

note "fds the daemon did not ask for; garbage after hello (uid $NOBODY)"
attacker stray-fds -u $NOBODY stray-fds "$STREAM"
until_true 30 grep -q '^attack stray-fds' "$T/hc-stray-fds.out" || true
own_lines stray-fds stray-fds
attacker garbage -u $NOBODY garbage
until_true 60 grep -q '^attack garbage' "$T/hc-garbage.out" || true
own_lines garbage garbage-after-hello

note "a client that never reads its replies; subscriptions abandoned (uid $NOBODY)"
attacker slow -u $NOBODY slow "$STREAM"
until_true 60 grep -q '^attack abandoned-subscribe' "$T/hc-slow.out" || true
own_lines slow slow-reader abandoned-subscribe

note "after those: the stream is still exact"
phase_begin aftermath
phase_end 12
[ -z "$PHASE_BROKE" ] || result "attack static-aftermath: EFFECTIVE (after the attacks above: $PHASE_BROKE)"

note "bitmap-clear: zero the presence bitmap while duplicates arrive (uid $NOBODY)"
phase_begin bitmap
attacker bitmap-clear -u $NOBODY bitmap-clear "$STREAM" 30
phase_end 13
stop_attacker
judge bitmap-clear "the sidecar the consumer maps is not the daemon's duplicate state"

note "ring: overwrite the daemon's side of the ring; flood the release ring (uid $NOBODY)"
phase_begin ring
attacker ring -u $NOBODY ring "$STREAM"
phase_end 14
stop_attacker
own_lines ring release-flood
judge ring-scribble "the daemon keeps the ring's geometry and positions privately" ring

# More batches than buffers: a holder of every buffer starves the rest.
note "hold: ask for every buffer, twice 8 subscriptions (uid $NOBODY)"
phase_begin hold $((NBUFS + 8))
attacker hold -u $NOBODY hold "$STREAM" $NBUFS 8
phase_end 15
stop_attacker
judge hold "held buffers are bounded"

note "sigstop-hold: a consumer stopped while it holds buffers"
phase_begin sigstop
attacker sigstop-hold -u $NOBODY hold "$STREAM" 2 1
phase_end 16
kill -STOP "$ATT"
held_now() {
	timeout 10 "$BUILD/daqirictl" -s "$SOCK" -j consumers |
		jq -r --argjson p "$ATT" '[.consumers[] | select(.pid == $p) | .held] | add // 0'
}
held_is_0() { [ "$(held_now)" = 0 ]; }
cut_off() {
	grep -q "consumer pid $ATT, subscription [0-9]*: held too long" "$T/daemon.log"
}
# The verdict is the daemon naming this stopped attacker (the worker
# returns the buffers before the main thread logs why).
if until_true 15 held_is_0 && until_true 5 cut_off; then
	why=$(grep -o "consumer pid $ATT, subscription [0-9]*: held too long[^\"]*" "$T/daemon.log" | tail -1)
	result "attack sigstop-hold: refused (its buffers came back: daemon: $why)"
elif ! grep -q '^ready' "$T/hc-sigstop-hold.out"; then
	result "attack sigstop-hold: EFFECTIVE (the attacker did not run: $(tail -1 "$T/hc-sigstop-hold.out"))"
else
	result "attack sigstop-hold: EFFECTIVE (stopped, it still holds $(held_now) buffers 15 s later; hold_timeout_ms is 2000)"
fi
stop_attacker
grep '^info ' "$T/hc-sigstop-hold.out" | sed 's/^/   | /' || true

for n in 70 1000; do
	note "connections: $n that never say hello, reopened when closed (uid $NOBODY)"
	attacker conn-$n -u $NOBODY connections $n
	grep '^info ' "$T/hc-conn-$n.out" | sed 's/^/   | /' || true
	if status_answers; then
		result "attack connections-$n: refused (daqirictl status answers as root with them open)"
	else
		result "attack connections-$n: EFFECTIVE (daqirictl status as root: $(tail -1 "$T/status.out"))"
	fi
	stop_attacker
	grep '^info ' "$T/hc-conn-$n.out" | tail -1 | sed 's/^/   | /' || true
	until_true 20 status_answers || true
done

# Last: on a daemon without the defence it wedges the worker (the
# attacker unwedges it when it ends, so the closing checks still run).
note "wakeup: make the daemon's wake-up write block (uid $NOBODY)"
phase_begin wakeup
attacker wakeup-stall -u $NOBODY wakeup "$STREAM"
phase_end 17
stop_attacker
judge wakeup-stall "the daemon's wake-up cannot block"

# ---------------------------------------------------------------------------
note "the daemon after all attacks"
broke=""
alive "$PID0" || broke="daqirid (pid $PID0) died"
if [ -z "$broke" ]; then
	until_true 20 settled 0 || true
	status_answers || broke="daqirictl status: $(tail -1 "$T/status.out")"
	snap z
	if [ "$z_in" = x ]; then
		broke="$broke${broke:+; }stats do not answer"
	else
		[ "$z_in" -eq $((z_placed + z_drops)) ] ||
			broke="$broke${broke:+; }packets_in $z_in != placed $z_placed + drops $z_drops"
		[ "$z_rx" -eq $((z_spin + z_other)) ] ||
			broke="$broke${broke:+; }rx $z_rx != streams' packets_in $z_spin + unmatched/no_stream/misrouted $z_other"
		echo "   ok  packets_in $z_in = placed $z_placed + drops $z_drops; rx $z_rx = $z_spin + $z_other"
	fi
fi
[ -z "$broke" ] || result "attack aftermath: EFFECTIVE ($broke)"

# The listing limits cannot be reached under the default caps: a daemon
# of its own, with room for 4096 subscriptions, six streams and the file
# descriptors they need. Even so the streams' held-buffer budgets bound
# this attacker to about a hundred subscriptions, which list in one
# message; replies in parts are tested by 16-connections.sh (4096).
note "restart with max_consumers 4096 for the big replies"
kill -TERM "$PID0"
until_true 10 dead "$PID0" ||
	result "attack aftermath: EFFECTIVE (daqirid did not stop within 10 s of SIGTERM)"
kill -9 "$PID0" 2>/dev/null || true
wait "$PID0" 2>/dev/null || result "attack aftermath: EFFECTIVE (daqirid exited non-zero after SIGTERM)"
sanitizer_says daemon.log
mv "$T/daemon.log" "$T/daemon-1.log"
rm -f "$T/notify" "$T/notify.log"
make_config -e 's/socket_mode: 0660/socket_mode: 0666/' \
	-e 's/max_consumers: [0-9]*/max_consumers: 4096/'
# Five more rx queues, so five more (raw) streams to subscribe to.
awk '{ print }
/^        - name: q0 / { inq = 1 }
inq && /memory_regions: \[rx_frames\]/ {
	inq = 0
	for (q = 1; q <= 5; q++)
		printf "        - name: q%d\n          id: %d\n          cpu_core: 1\n" \
		    "          batch_size: 64\n          timeout_us: 0\n" \
		    "          memory_regions: [rx_frames]\n", q, q
}' "$T/daqirid.yaml" > "$T/big.yaml"
mv "$T/big.yaml" "$T/daqirid.yaml"
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null || fail "the big-replies config is invalid"
ulimit -n 20000 2>/dev/null || true
start_daemon
PID0=$DAEMON_PID
note "big-replies: up to 4096 subscriptions to every stream (as root: no per-uid cap), then the list replies"
attacker big-replies big-replies 4096
subs=$(kv "$T/hc-big-replies.out" subs)
grep '^info ' "$T/hc-big-replies.out" | sed 's/^/   | /' || true
broke=""
for c in consumers stats streams status; do
	timeout 30 "$BUILD/daqirictl" -s "$SOCK" $c > "$T/big-$c.out" 2>&1 ||
		broke="$broke${broke:+; }daqirictl $c: $(tail -1 "$T/big-$c.out")"
done
timeout 30 "$BUILD/daqirictl" -s "$SOCK" -j consumers > "$T/big-consumers.json" 2>&1 ||
	broke="$broke${broke:+; }daqirictl -j consumers: $(tail -1 "$T/big-consumers.json")"
listed=$(jq '.consumers | length' "$T/big-consumers.json" 2>/dev/null || echo 0)
bytes=$(wc -c < "$T/big-consumers.json")
[ "${subs:-0}" -gt 0 ] && [ "$listed" -ge "${subs:-0}" ] ||
	broke="$broke${broke:+; }daqirictl -j consumers listed $listed of ${subs:-?} subscriptions"
if [ -n "$broke" ]; then
	result "attack big-replies: EFFECTIVE ($broke)"
elif [ "$bytes" -le 65536 ]; then
	result "attack big-replies: refused (the streams' budgets allow only $subs subscriptions: $bytes bytes of consumers, one message; 16-connections.sh lists 4096 in parts)"
else
	result "attack big-replies: ineffective ($subs subscriptions listed in full, $bytes bytes of consumers)"
fi
stop_attacker
no_consumers() {
	[ "$(ctl -j consumers | jq '.consumers | length')" = 0 ]
}
until_true 30 no_consumers || true

alive "$PID0" || result "attack big-replies-aftermath: EFFECTIVE (daqirid pid $PID0 died)"
kill -TERM "$PID0"
until_true 10 dead "$PID0" ||
	result "attack big-replies-aftermath: EFFECTIVE (daqirid did not stop within 10 s of SIGTERM)"
kill -9 "$PID0" 2>/dev/null || true
wait "$PID0" 2>/dev/null ||
	result "attack big-replies-aftermath: EFFECTIVE (daqirid exited non-zero after SIGTERM)"
sanitizer_says daemon.log

for a in write-tensor write-bitmap resize-ring subscribe-ranges subscribe-10000 \
    stray-fds garbage-after-hello slow-reader abandoned-subscribe bitmap-clear \
    release-flood ring-scribble hold sigstop-hold connections-70 \
    connections-1000 wakeup-stall big-replies; do
	grep -q "^attack $a: " "$RESULTS" || result "attack $a: EFFECTIVE (no verdict: the step did not run)"
done
note "every attack"
sed 's/^/   /' "$RESULTS"
n=$(grep -c ': EFFECTIVE' "$RESULTS" || true)
[ "$n" -eq 0 ] || fail "$n attacks were effective: $(grep ': EFFECTIVE' "$RESULTS" | sed 's/^attack \([^:]*\):.*/\1/' | tr '\n' ' ')"
echo "ok"
