#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check passes wherever the clone lives (issue "Bring-up"): the two
# suites that failed there run again from a copy of the checkout under
# /root (mode 0700: a child dropped to uid 65534 cannot reach it) in a
# directory whose name has a space (make install's DESTDIR): the systemd
# unit test (17) and the Python policy test whose child is uid 65534.
# Under /tmp they run in every CI run already (the clone is there).
. tests/system/lib.sh

[ "$(id -u)" = 0 ] || skip "needs root to write under /root"
[ -d /root ] && [ "$(command stat -c %a /root)" = 700 ] || skip "/root is not mode 0700 here"
command -v git > /dev/null || skip "no git"
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || skip "not a git checkout"
D=$(mktemp -d /root/daqiri-clone.XXXXXX) || fail "mktemp under /root"
trap 'cleanup; rm -rf "$D"' EXIT INT TERM
W="$D/with space"
mkdir "$W"
# the tracked files and the build (mtimes kept: make finds it up to date)
git ls-files -z | tar --null -T - -cf - | tar -C "$W" -xf - || fail "copying the sources"
tar --exclude="$BUILD/asan*" --exclude="$BUILD/fuzz" --exclude="$BUILD/tsan" \
	--exclude="$BUILD/tests/system-*" -cf - "$BUILD" | tar -C "$W" -xf - || fail "copying $BUILD"
note "from $W"

note "17-systemd-unit"
(cd "$W" && timeout 280 sh tests/system/17-systemd-unit.sh) > "$T/17.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	note "17 skipped there too: $(grep '^SKIP' "$T/17.log")"
else
	[ $rc -eq 0 ] || { tail -40 "$T/17.log"; fail "17-systemd-unit failed from $W"; }
	echo "   ok  17-systemd-unit from a 0700 directory, a path with a space"
fi

note "the Python policy test (its child is uid 65534)"
if [ -d "$W/$BUILD/python" ] && /usr/bin/python3 -c 'import pytest' 2> /dev/null; then
	(cd "$W" && PYTHONPATH="$W/$BUILD/python" DAQIRI_BUILD="$BUILD" PYTHONDONTWRITEBYTECODE=1 \
		/usr/bin/python3 -m pytest -q -p no:cacheprovider \
		client/python/tests/test_policy.py::test_lossless_needs_admin) > "$T/py.log" 2>&1 ||
		{ cat "$T/py.log"; fail "test_lossless_needs_admin failed from $W"; }
	echo "   ok  $(tail -1 "$T/py.log")"
else
	note "no Python module built or no pytest: that part not run"
fi
echo "ok"
