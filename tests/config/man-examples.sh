#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The configurations daqirid.yaml(5) shows must stay valid: every .nf/.fi
# block of its EXAMPLES section, except shell sessions (a first line
# starting with "$"), is taken out, its roff escapes undone, and checked
# with `$DAQIRID -c FILE -n`, which must print "FILE: configuration OK"
# and exit 0. A block is a whole configuration, never a fragment. Fewer
# blocks than MIN_EXAMPLES means the extraction broke, and fails too.
# (The shipped files, etc/daqirid.yaml and etc/examples/*.yaml, are
# checked by run.sh.)
#
# Usage: DAQIRID=build/daqirid sh tests/config/man-examples.sh

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
daqirid=${DAQIRID:-$top/build/daqirid}
page=$top/daemon/daqirid.yaml.5
MIN_EXAMPLES=2
if [ ! -x "$daqirid" ]; then
	echo "man-examples: $daqirid is not built" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/daqiri-manex.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# One file per block, ex1.yaml, ex2.yaml, ...; "#line N" is where it
# starts in the page, for the failure message.
awk -v dir="$tmp" '
/^\.SH / { inex = ($0 ~ /^\.SH EXAMPLES/); next }
!inex { next }
/^\.nf/ { inb = 1; first = 1; next }
/^\.fi/ { if (out != "") close(out); inb = 0; out = ""; next }
inb && /^\./ { next }
inb {
	line = $0
	gsub(/\\-/, "-", line); gsub(/\\&/, "", line)
	gsub(/\\\(mu/, "x", line); gsub(/\\\(dq/, "\"", line)
	gsub(/\\e/, "\\", line)
	if (first) {
		first = 0
		if (line ~ /^\$/) { inb = 0; next }
		k++
		out = dir "/ex" k ".yaml"
		print "# from line " NR " of the page" > (dir "/ex" k ".where")
	}
	print line > out
}
' "$page"

pass=0
fail=0
for y in "$tmp"/ex*.yaml; do
	[ -f "$y" ] || continue
	where=$(cat "${y%.yaml}.where")
	if out=$("$daqirid" -c "$y" -n 2>&1) &&
	    [ "$out" = "$y: configuration OK" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL daqirid.yaml(5) example $where:"
		echo "$out" | sed "s|$tmp/||; s/^/    /"
		fail=$((fail + 1))
	fi
done
if [ $((pass + fail)) -lt $MIN_EXAMPLES ]; then
	echo "FAIL: $((pass + fail)) examples found in daqirid.yaml(5), want at least $MIN_EXAMPLES"
	fail=$((fail + 1))
fi
echo "man-examples: $pass passed, $fail failed"
[ $fail -eq 0 ]
