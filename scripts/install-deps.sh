#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages daqiri builds and tests with. Idempotent: does
# nothing when everything is there. Needs root to install; otherwise prints
# the command to run and fails.
set -eu

PKGS="dpdk-dev libdpdk-dev libyaml-dev libsystemd-dev libcjson-dev libmicrohttpd-dev check \
libpcap-dev pkg-config make gcc clang libclang-rt-14-dev iproute2 jq procps curl \
prometheus python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib libdlpack-dev \
tshark tcpdump"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "install-deps: all build and test packages are installed"
	exit 0
fi

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing" >&2
	echo "install-deps: run as root: apt-get update && $cmd" >&2
	exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
