#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Socket activation (daqirid.socket): the listening control socket comes
# from systemd through sd_listen_fds(); daqirid serves it and leaves it
# alone. systemd-socket-activate stands in for systemd.
. tests/system/lib.sh

command -v systemd-socket-activate > /dev/null ||
	{ echo "SKIP: systemd-socket-activate is not installed"; exit 77; }
make_config
bg systemd-socket-activate --seqpacket -l "$SOCK" \
	"$BUILD/daqirid" -c "$T/daqirid.yaml" -s "$T/unused.sock" -l info
i=0
while [ ! -S "$SOCK" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "socket-activate did not listen"
	sleep 0.05
done
note "first connection starts daqirid on the passed socket"
ctl -j status > "$T/status.json" || fail "no answer on the activated socket"
jq -e '.state == "running"' "$T/status.json" > /dev/null || fail "status not running"
[ ! -e "$T/unused.sock" ] || fail "daqirid made its own socket although one was passed"
ctl -j streams | jq -e '.streams | length >= 1' > /dev/null || fail "no streams"
echo "ok"
