#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The layout rules a newcomer relies on, checked so they stay true:
#  - proto/ includes nothing from client/ or daemon/;
#  - every daemon/*.c and *.cu file is named in the map at the top of
#    daemon/daemon.c, and every proto/, client/ and client/python/ C
#    source in the README's "Layout" section;
#  - no source file is over 1500 lines unless its top comment says why
#    (a line containing "over 1500 lines");
#  - every source file (C, CUDA, Python) starts with its SPDX line and a
#    top comment.
# Run from the repository root (make check does).

fail=0
bad() {
	echo "layout: $*" >&2
	fail=1
}

# proto/ stands alone: a quoted include must name a file in proto/.
for f in proto/*.c proto/*.h; do
	sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
	while read -r inc; do
		case "$inc" in
		*/*) echo "$f includes \"$inc\", outside proto/" ;;
		*) [ -f "proto/$inc" ] ||
		    echo "$f includes \"$inc\", not in proto/" ;;
		esac
	done
done > layout.$$.out
if [ -s layout.$$.out ]; then
	while read -r l; do bad "$l"; done < layout.$$.out
fi
rm -f layout.$$.out

# The daemon map names every file of daemon/.
map=$(sed -n '1,/^ \*\//p' daemon/daemon.c)
for f in daemon/*.c daemon/*.cu; do
	b=$(basename "$f")
	printf '%s\n' "$map" | grep -q "^ \*   $b " ||
	    bad "$b is not in the map at the top of daemon/daemon.c"
done

# The README's Layout section names every proto/ and client/ source.
layout=$(sed -n '/^## Layout$/,/^## /p' README.md)
for f in proto/*.c proto/*.h client/*.c client/*.h; do
	b=$(basename "$f")
	case "$b" in
	*_internal.h) continue ;;	# private, named by the files using it
	esac
	printf '%s\n' "$layout" | grep -q "\`$b\`" ||
	    bad "$b is not named in README.md's Layout section"
done
for f in client/python/*.c; do
	printf '%s\n' "$layout" | grep -q "\`${f#client/}\`" ||
	    bad "${f#client/} is not named in README.md's Layout section"
done

# Size and top comment of every source file.
for f in daemon/*.c daemon/*.cu daemon/*.h proto/*.c proto/*.h \
    client/*.c client/*.h client/python/*.c client/python/*.h scripts/*.c \
    tests/standin/*.c tests/standin/*.h; do
	n=$(wc -l < "$f")
	if [ "$n" -gt 1500 ] &&
	    ! sed -n '1,/\*\//p' "$f" | grep -q 'over 1500 lines'; then
		bad "$f has $n lines and its top comment gives no reason"
	fi
	head -n 1 "$f" | grep -q 'SPDX-License-Identifier' ||
	    bad "$f does not start with its SPDX line"
	sed -n 2p "$f" | grep -q '^/\*' ||
	    bad "$f has no top comment after its SPDX line"
done

# Python sources: the SPDX line first (after a #! line), then a comment
# or a docstring saying what the file is for.
for f in $(find client/python -name '*.py' | sort); do
	first=1
	head -n 1 "$f" | grep -q '^#!' && first=2
	sed -n "${first}p" "$f" | grep -q 'SPDX-License-Identifier' ||
	    bad "$f does not start with its SPDX line"
	sed -n "$((first + 1))p" "$f" | grep -q '^\(#\|"""\)' ||
	    bad "$f has no top comment after its SPDX line"
done

if [ "$fail" -eq 0 ]; then
	echo "layout: ok"
fi
exit "$fail"
