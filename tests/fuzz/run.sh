#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Run libFuzzer targets for $FUZZ_SECONDS seconds each (default 60) on a
# seed corpus copied into a temporary directory: fuzz_config is seeded with
# the golden configs and the shipped ones, fuzz_proto with
# tests/fuzz/corpus_proto/, fuzz_client with tests/fuzz/corpus_client/
# and fuzz_relay with tests/fuzz/corpus_relay/ when they exist, fuzz_cfgdiff with pairs of those configs; tests/fuzz/<target>.dict is
# used when present. Any crash, leak or timeout fails the run; its input is
# kept as $BUILD/fuzz/<target>-<kind>-... for a look. The generated corpus
# is thrown away.
#
# Usage: FUZZ_SECONDS=60 sh tests/fuzz/run.sh build/fuzz/fuzz_config ...

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
build=${BUILD:-build}
case $build in
/*) ;;
*) build=$top/$build ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/daqiri-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ $# -eq 0 ]; then
	echo "usage: $0 TARGET..." >&2
	exit 2
fi

rc=0
for target in "$@"; do
	name=$(basename "$target")
	corpus=$tmp/$name.corpus
	arts=$tmp/$name.artifacts
	mkdir -p "$corpus" "$arts"
	case $name in
	fuzz_config)
		for f in "$top"/tests/config/*.yaml "$top"/etc/*.yaml \
		    "$top"/etc/examples/*.yaml; do
			[ -f "$f" ] && cp "$f" "$corpus/"
		done
		;;
	fuzz_proto)
		if [ -d "$top/tests/fuzz/corpus_proto" ]; then
			cp "$top"/tests/fuzz/corpus_proto/* "$corpus/" 2>/dev/null
		fi
		;;
	fuzz_cfgdiff)
		# pairs: each golden config against itself (a mutation of one
		# side is then a small change, often a live one), against the
		# default one and against its successor in the list
		prev=$top/etc/daqirid.yaml
		k=0
		for f in "$top"/tests/config/*.yaml "$top"/etc/examples/*.yaml; do
			[ -f "$f" ] || continue
			k=$((k + 1))
			{ cat "$top/etc/daqirid.yaml"; printf '\n%%%%\n'; cat "$f"; } \
			    > "$corpus/d$k"
			{ cat "$prev"; printf '\n%%%%\n'; cat "$f"; } > "$corpus/p$k"
			{ cat "$f"; printf '\n%%%%\n'; cat "$f"; } > "$corpus/s$k"
			prev=$f
		done
		# and the default config against itself with each of the
		# live keys changed (reload's own cases)
		k=0
		for e in 's/flow_isolation: false/flow_isolation: true/' \
		    's/dynamic_flow_capacity: 8/dynamic_flow_capacity: 9/' \
		    's/window: 4 /window: 6 /' 's/fill: zero /fill: keep /' \
		    's/timeout_us: 100000 /timeout_us: 200000 /' \
		    's/log_level: warn /log_level: info /' \
		    's/stats_interval_ms: 1000/stats_interval_ms: 500/'; do
			k=$((k + 1))
			{ cat "$top/etc/daqirid.yaml"; printf '\n%%%%\n'
			  sed "$e" "$top/etc/daqirid.yaml"; } > "$corpus/l$k"
		done
		;;
	fuzz_client)
		if [ -d "$top/tests/fuzz/corpus_client" ]; then
			cp "$top"/tests/fuzz/corpus_client/* "$corpus/" 2>/dev/null
		fi
		;;
	fuzz_relay)
		if [ -d "$top/tests/fuzz/corpus_relay" ]; then
			cp "$top"/tests/fuzz/corpus_relay/* "$corpus/" 2>/dev/null
		fi
		;;
	esac
	dict=
	if [ -f "$top/tests/fuzz/$name.dict" ]; then
		dict=-dict=$top/tests/fuzz/$name.dict
	fi
	echo "== $name: ${seconds}s, $(ls "$corpus" | wc -l) seeds"
	"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	    -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$arts/" \
	    ${dict:+"$dict"} "$corpus" >"$tmp/$name.log" 2>&1
	st=$?
	grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE' \
	    "$tmp/$name.log"
	if [ $st -ne 0 ] || [ -n "$(ls "$arts")" ]; then
		echo "FAIL $name (exit $st)"
		tail -n 40 "$tmp/$name.log"
		mkdir -p "$build/fuzz"
		for a in "$arts"/*; do
			[ -f "$a" ] && cp "$a" "$build/fuzz/$name-$(basename "$a")" &&
			    echo "  input kept: $build/fuzz/$name-$(basename "$a")"
		done
		rc=1
	else
		echo "ok $name"
	fi
done
exit $rc
