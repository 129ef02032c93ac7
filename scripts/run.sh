#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make run: daqirid in the foreground on etc/daqirid.yaml (or $CONFIG:
# make run CONFIG=etc/examples/tx-closed-loop.yaml). As root the
# control socket is the system one; otherwise it lives in the user's
# runtime directory, so no privileges are needed.
set -eu
BUILD=${BUILD:-build}
CONFIG=${CONFIG:-etc/daqirid.yaml}
if [ "$(id -u)" -eq 0 ]; then
	sock=/run/daqiri/daqirid.sock
else
	dir=${XDG_RUNTIME_DIR:-/tmp/daqiri-$(id -u)}/daqiri
	mkdir -p "$dir"
	sock=$dir/daqirid.sock
fi
echo "daqirid: control socket $sock (DAQIRI_SOCKET=$sock daqirictl status)"
exec "$BUILD/daqirid" -c "$CONFIG" -s "$sock" -l "${LOG_LEVEL:-info}"
