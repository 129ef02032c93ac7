#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages daqiri builds and tests with. Idempotent: does
# nothing when everything is there. Needs root to install; otherwise prints
# the command to run and fails.
#
# --aarch64: what `make ARCH=aarch64` and its emulated tests need on an
# x86-64 machine instead: the cross compiler, qemu-user, and the
# dependencies' :arm64 -dev packages (multiarch; dpkg learns the arm64
# architecture first). DPDK is not among them: Debian's libdpdk-dev can
# be installed for one architecture only, and the native build needs it.
set -eu

PKGS="dpdk-dev libdpdk-dev libyaml-dev libsystemd-dev libcjson-dev libmicrohttpd-dev check \
libpcap-dev pkg-config make gcc clang libclang-rt-14-dev iproute2 jq procps curl \
prometheus python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib libdlpack-dev \
tshark tcpdump libhdf5-dev hdf5-tools python3-h5py libucx-dev ucx-utils libssl-dev"
what="build and test"
foreign=""
case "${1:-}" in
--aarch64)
	if [ "$(uname -m)" != x86_64 ]; then
		echo "install-deps: --aarch64 cross-builds from x86-64; on $(uname -m) build natively" >&2
		exit 1
	fi
	PKGS="gcc-aarch64-linux-gnu qemu-user libc6:arm64 libyaml-dev:arm64 libcjson-dev:arm64 \
libsystemd-dev:arm64 libmicrohttpd-dev:arm64 check:arm64 libpcap-dev:arm64"
	what="aarch64 cross-build and emulation"
	foreign=arm64
	;;
"") ;;
*)
	echo "install-deps: unknown option '$1' (none, or --aarch64)" >&2
	exit 2
	;;
esac

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "install-deps: all $what packages are installed"
	exit 0
fi

cmd="apt-get update && apt-get install -y --no-install-recommends$missing"
if [ -n "$foreign" ] && ! dpkg --print-foreign-architectures | grep -qx "$foreign"; then
	cmd="dpkg --add-architecture $foreign && $cmd"
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing" >&2
	echo "install-deps: run as root: $cmd" >&2
	exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
if [ -n "$foreign" ] && ! dpkg --print-foreign-architectures | grep -qx "$foreign"; then
	dpkg --add-architecture "$foreign"
fi
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
