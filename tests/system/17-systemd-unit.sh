#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The installed unit under a real systemd: `make install` into a staging
# tree, systemd booted as PID 1 of fresh PID, mount, network, UTS and IPC
# namespaces that see the staging tree over /usr and /etc, then
# `systemctl start daqirid`: it must reach READY as user daqiri with only
# its three capabilities, root and members of daqiri get in, others are
# refused at connect, only daqiri-admin adds flows, systemctl reload
# applies a good file and fails on a broken one (the daemon runs on), the
# watchdog restarts a stopped daemon, systemctl stop is orderly,
# daqirid.socket activates it, a reconnecting consumer rides out
# `systemctl restart` through it, daqiri-relay.service runs as its own
# user without capabilities and serves a remote consumer of no group,
# DPDK runs in the sandbox, and poweroff
# leaves nothing running. Nothing of the real
# machine's /etc, /usr, /var or /tmp is written.
. tests/system/lib.sh

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to boot systemd in namespaces"; exit 77; }
SYSTEMD=/lib/systemd/systemd
[ -x "$SYSTEMD" ] || { echo "SKIP: $SYSTEMD is not installed"; exit 77; }
for c in unshare nsenter setpriv systemctl; do
	command -v $c > /dev/null || { echo "SKIP: $c is not installed"; exit 77; }
done
unshare --pid --fork --mount --net --uts --ipc true 2> /dev/null ||
	{ echo "SKIP: unshare of PID/mount/net namespaces refused here"; exit 77; }
grep -qw overlay /proc/filesystems ||
	modprobe overlay 2> /dev/null ||
	{ echo "SKIP: no overlayfs to lay the install over /usr and /etc"; exit 77; }

# Under the build tree, not /tmp: the namespace gets a fresh /tmp.
# (-o all below: install what this build tree has, never rebuild it with
# other flags, e.g. an ASan tree.)
mkdir -p "$BUILD/tests"
S=$(cd "$BUILD/tests" && mktemp -d "$PWD/systemd-unit.XXXXXX")
SD=""		# systemd, as this namespace numbers it
NS_PIDS=""	# every process in its namespaces, as numbered here

# Ends the namespace's PID 1, which ends everything in it; the mounts
# existed only in its mount namespace.
sd_cleanup() {
	if [ -n "$SD" ] && kill -0 "$SD" 2> /dev/null; then
		kill -9 "$SD" 2> /dev/null || true
		i=0
		while kill -0 "$SD" 2> /dev/null && [ $i -lt 100 ]; do
			i=$((i + 1)); sleep 0.05
		done
	fi
	cleanup
	cgroups_clean
	rm -rf "$S"
}

# The cgroup tree is not namespaced here: systemd makes its slices and
# scopes in the machine's hierarchy and leaves them when it ends. Remove
# the ones this run made (not there before it), once they are empty.
cgroups_list() {
	find /sys/fs/cgroup -mindepth 2 -type d 2> /dev/null | sort
}
cgroups_clean() {
	[ -f "$S/cgroups.before" ] || return 0
	cgroups_list | comm -13 "$S/cgroups.before" - | sort -r |
		while read -r d; do rmdir "$d" 2> /dev/null || true; done
}
trap sd_cleanup EXIT INT TERM

ns() {
	timeout 30 nsenter -t "$SD" -p -m -n "$@"
}

# in_ns_pids: every pid here whose PID namespace is the test's.
in_ns_pids() {
	want=$(readlink "/proc/$SD/ns/pid")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/pid" 2> /dev/null)" = "$want" ] && echo "${p#/proc/}"
	done
	true
}

grep -q '^daqiri:' /etc/passwd &&
	{ echo "SKIP: user daqiri exists on this machine; cannot tell the test's from it"; exit 77; }

note "make install into a staging tree"
STAGE=$S/stage
make --no-print-directory -s -o all install BUILD="$BUILD" DESTDIR="$STAGE" PREFIX=/usr \
	SYSCONFDIR=/etc SYSTEMDUNITDIR=/usr/lib/systemd/system \
	SYSUSERSDIR=/usr/lib/sysusers.d TMPFILESDIR=/usr/lib/tmpfiles.d \
	> "$S/install.log" 2>&1 || { cat "$S/install.log"; fail "make install failed"; }
for f in usr/sbin/daqirid usr/bin/daqirictl usr/lib/systemd/system/daqirid.service \
	usr/lib/sysusers.d/daqiri.conf usr/lib/tmpfiles.d/daqiri.conf \
	usr/share/daqiri/grafana/daqiri.json; do
	[ -e "$STAGE/$f" ] || fail "make install did not install /$f"
done

# The installed unit's config path, with our port and an admin group.
make_config -e 's/admin_group: ""/admin_group: daqiri-admin/' -e 's/log_level: warn/log_level: info/'
cp "$T/daqirid.yaml" "$STAGE/etc/daqiri/daqirid.yaml"

# Boot only what the test needs: a target of its own, and units that
# would act on the shared machine (clock, sysctls, devices, swap,
# partitions, services installed here) masked.
U=$STAGE/etc/systemd/system
mkdir -p "$U"
cat > "$U/daqiri-test.target" << 'EOF'
[Unit]
Description=daqiri system test
Requires=basic.target
After=basic.target
EOF
for u in systemd-timesyncd.service systemd-sysctl.service systemd-binfmt.service \
	proc-sys-fs-binfmt_misc.automount systemd-modules-load.service \
	systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service \
	kmod-static-nodes.service systemd-repart.service systemd-firstboot.service \
	systemd-pstore.service systemd-random-seed.service systemd-fsck-root.service \
	systemd-remount-fs.service systemd-hwdb-update.service swap.target \
	timers.target getty.target postgresql.service e2scrub_reap.service \
	systemd-networkd.service networking.service remote-fs.target; do
	ln -sf /dev/null "$U/$u"
done

cat > "$S/boot.sh" << EOF
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 tmpfs "$S/rw"
mkdir -p "$S/rw/etc" "$S/rw/etc.work" "$S/rw/var" "$S/rw/var.work"
mount -t overlay overlay -o "lowerdir=$STAGE/usr:/usr" /usr
mount -t overlay overlay -o "lowerdir=$STAGE/etc:/etc,upperdir=$S/rw/etc,workdir=$S/rw/etc.work" /etc
mount -t overlay overlay -o "lowerdir=/var,upperdir=$S/rw/var,workdir=$S/rw/var.work" /var
# Without these three, systemd-tmpfiles empties the machine's real /tmp.
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount --bind /sys /sys && mount -o remount,bind,ro /sys
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
export container=daqiri-test
exec $SYSTEMD --system --unit=daqiri-test.target
EOF
mkdir -p "$S/rw"

note "boot systemd in its own namespaces"
cgroups_list > "$S/cgroups.before"
bg unshare --pid --fork --mount --mount-proc --net --uts --ipc sh "$S/boot.sh" \
	> "$S/boot.log" 2>&1
UNSHARE=$LAST_PID
i=0
while :; do
	SD=$(awk '{ print $1 }' "/proc/$UNSHARE/task/$UNSHARE/children" 2> /dev/null)
	[ -n "$SD" ] && [ "$(cat "/proc/$SD/comm" 2> /dev/null)" = systemd ] && break
	kill -0 "$UNSHARE" 2> /dev/null || { cat "$S/boot.log"; fail "the namespace boot script exited"; }
	i=$((i + 1)); [ $i -lt 200 ] || { cat "$S/boot.log"; fail "systemd did not start within 10 s"; }
	sleep 0.05
done
# systemctl needs systemd's private socket first.
i=0
until nsenter -t "$SD" -m test -S /run/systemd/private 2> /dev/null; do
	kill -0 "$SD" 2> /dev/null || { cat "$S/boot.log"; fail "systemd exited during boot"; }
	i=$((i + 1)); [ $i -lt 400 ] || { cat "$S/boot.log"; fail "systemd made no control socket within 20 s"; }
	sleep 0.05
done
state=$(timeout 60 nsenter -t "$SD" -p -m systemctl is-system-running --wait 2>&1) || true
case $state in
running|degraded) echo "   ok  systemd is up ($state)";;
*)	ns systemctl --failed --no-pager || true
	fail "systemd did not finish booting: '$state'";;
esac
grep -q '^daqiri:' /etc/passwd && fail "the namespace wrote the real /etc/passwd"

note "what a package's postinst does: sysusers, tmpfiles, daemon-reload"
ns systemd-sysusers daqiri.conf || fail "systemd-sysusers failed"
ns systemd-tmpfiles --create daqiri.conf || fail "systemd-tmpfiles failed"
ns systemctl daemon-reload || fail "daemon-reload failed"
DUID=$(ns id -u daqiri) || fail "sysusers made no user daqiri"
DGID=$(ns getent group daqiri | cut -d: -f3)
AGID=$(ns getent group daqiri-admin | cut -d: -f3)
{ [ -n "$DGID" ] && [ -n "$AGID" ]; } || fail "sysusers made no groups daqiri, daqiri-admin"
[ "$DUID" != 0 ] || fail "user daqiri is root"
grep -q '^daqiri:' /etc/passwd && fail "sysusers wrote the real /etc/passwd"

note "systemd-analyze verify: the installed units, as this systemd reads them"
ns systemd-analyze verify daqirid.service daqirid.socket > "$S/verify.out" 2>&1 ||
	fail "systemd-analyze verify failed: $(cat "$S/verify.out")"
[ ! -s "$S/verify.out" ] || fail "systemd-analyze verify: $(cat "$S/verify.out")"
echo "   ok  no complaints"

note "systemctl start daqirid"
ns systemctl start daqirid.service || {
	ns journalctl -u daqirid --no-pager | tail -30
	fail "systemctl start daqirid failed"
}
expect_eq "daqirid ActiveState" "$(ns systemctl show -P ActiveState daqirid.service)" active
MAIN=$(ns systemctl show -P MainPID daqirid.service)
[ "$MAIN" -gt 0 ] || fail "daqirid has no main pid"
ns cat "/proc/$MAIN/status" > "$S/status" || fail "no /proc/$MAIN/status"
expect_eq "daqirid Uid (real, effective, saved, fs)" \
	"$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$S/status")" "$DUID $DUID $DUID $DUID"
expect_eq "daqirid Gid" "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "$S/status")" \
	"$DGID $DGID $DGID $DGID"
# CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_IPC_LOCK 14, and nothing else.
expect_eq "daqirid CapEff" "$(awk '/^CapEff:/ { print $2 }' "$S/status")" 0000000000007000
expect_eq "daqirid CapBnd" "$(awk '/^CapBnd:/ { print $2 }' "$S/status")" 0000000000007000
expect_eq "daqirid NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$S/status")" 1
# The capabilities work, not just sit there: the socket engine's 64 MiB
# receive buffer is above net.core.rmem_max and needs SO_RCVBUFFORCE.
ns journalctl -u daqirid.service --no-pager -o cat > "$S/journal" 2>&1 || true
# an empty or unreadable journal would make the check below pass
grep -q 'running:' "$S/journal" || fail "the journal lacks daqirid's start-up line: $(tail -3 "$S/journal")"
[ "$(cat /proc/sys/net/core/rmem_max)" -lt 67108864 ] ||
	note "rmem_max is 64 MiB or more here: SO_RCVBUFFORCE is not exercised"
if grep -q 'socket receive buffer is' "$S/journal"; then
	fail "SO_RCVBUFFORCE had no effect: $(grep 'socket receive buffer is' "$S/journal")"
fi
echo "   ok  no receive buffer warning (rmem_max $(cat /proc/sys/net/core/rmem_max))"
# GPUs, /dev/vfio, /dev/infiniband: the sandbox must not close devices
# (PrivateDevices= or any DeviceAllow= would).
expect_eq "device policy" "$(ns systemctl show -P DevicePolicy daqirid.service)" auto
expect_eq "DeviceAllow (empty: every device)" \
	"$(ns systemctl show -P DeviceAllow daqirid.service)" ""
SOCKP=/run/daqiri/daqirid.sock
expect_eq "control socket mode, owner, group" \
	"$(ns stat -c '%a %U %G' "$SOCKP")" "660 daqiri daqiri"

note "root asks for status"
ns daqirictl -s "$SOCKP" -j status > "$S/st.json" || fail "daqirictl status as root failed"
jq -e '.state == "running"' "$S/st.json" > /dev/null || fail "status is not running: $(cat "$S/st.json")"
echo "   ok  root: status answers"

note "nobody outside group daqiri is refused at connect"
if ns setpriv --reuid=65534 --regid=65534 --clear-groups \
	daqirictl -s "$SOCKP" status > "$S/nobody.out" 2>&1; then
	fail "uid 65534 without group daqiri got in: $(cat "$S/nobody.out")"
fi
grep -qi 'permission denied' "$S/nobody.out" ||
	fail "uid 65534 refused, but not for permissions: $(cat "$S/nobody.out")"
echo "   ok  refused: $(head -1 "$S/nobody.out")"

note "a member of daqiri subscribes and receives tensors"
ns setpriv --reuid=65534 --regid=65534 --groups="$DGID" \
	daqiri-consume -s "$SOCKP" --count 2 --timeout 20 --verify --quiet \
	sensor0/sensor_tensor > "$S/consume.out" 2>&1 &
CONSUME=$!
PIDS="$PIDS $CONSUME"
# The subscription first, then packets: a tensor published before it is
# not this consumer's.
i=0
until ns daqirictl -s "$SOCKP" -j consumers | jq -e '.consumers | length >= 1' > /dev/null 2>&1; do
	kill -0 "$CONSUME" 2> /dev/null || fail "the member's consumer exited: $(cat "$S/consume.out")"
	i=$((i + 1)); [ $i -lt 200 ] || fail "the member's subscription did not appear"
	sleep 0.05
done
# without -c, the simulator reads the file the daemon reads (the
# README's command after an operator edited it), and says so
ns daqiri-sim --batches 4 --rate 20kpps > "$S/sim.out" 2> "$S/sim.err" ||
	fail "daqiri-sim in the namespace failed: $(cat "$S/sim.out" "$S/sim.err")"
grep -q '^daqiri-sim: config /etc/daqiri/daqirid.yaml (no -c: the one daqirid reads without -c)$' \
	"$S/sim.err" || fail "daqiri-sim did not name the daemon's config: $(cat "$S/sim.err")"
wait_gone "$CONSUME" 30
[ "$GONE_RC" = 0 ] || fail "the member's consumer failed ($GONE_RC): $(cat "$S/consume.out")"
grep -q 'errors 0,' "$S/consume.out" || fail "consumer summary: $(cat "$S/consume.out")"
echo "   ok  member of daqiri: $(tail -1 "$S/consume.out")"

if [ -x "$STAGE/usr/bin/daqiri-relay" ]; then
	note "daqiri-relay.service: as user daqiri-relay, sandboxed; a remote consumer of no group through it"
	ns systemctl start daqiri-relay.service || {
		ns journalctl -u daqiri-relay --no-pager | tail -20
		fail "systemctl start daqiri-relay failed"
	}
	RMAIN=$(ns systemctl show -P MainPID daqiri-relay.service)
	[ "$RMAIN" -gt 0 ] || fail "daqiri-relay has no main pid"
	ns cat "/proc/$RMAIN/status" > "$S/rstatus" || fail "no /proc/$RMAIN/status"
	RUID=$(ns id -u daqiri-relay) || fail "sysusers made no user daqiri-relay"
	expect_eq "relay Uid (real, effective, saved, fs)" \
		"$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$S/rstatus")" "$RUID $RUID $RUID $RUID"
	expect_eq "relay CapEff" "$(awk '/^CapEff:/ { print $2 }' "$S/rstatus")" 0000000000000000
	expect_eq "relay NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$S/rstatus")" 1
	i=0
	until ns journalctl -u daqiri-relay --no-pager 2> /dev/null | grep -q 'listening on'; do
		i=$((i + 1)); [ $i -lt 400 ] || fail "the relay did not listen: $(ns journalctl -u daqiri-relay --no-pager | tail -5)"
		sleep 0.05
	done
	ns setpriv --reuid=65534 --regid=65534 --clear-groups env UCX_TLS=tcp \
		daqiri-consume -s ucx://127.0.0.1 --count 2 --timeout 30 --verify --quiet \
		sensor0/sensor_tensor > "$S/remote.out" 2>&1 &
	RC=$!
	PIDS="$PIDS $RC"
	i=0
	until ns daqirictl -s "$SOCKP" -j consumers | jq -e '.consumers | length >= 1' > /dev/null 2>&1; do
		kill -0 "$RC" 2> /dev/null || fail "the remote consumer exited: $(cat "$S/remote.out")"
		i=$((i + 1)); [ $i -lt 400 ] || fail "the relay's subscription did not appear"
		sleep 0.05
	done
	ns daqiri-sim --batches 4 --rate 20kpps --quiet > "$S/sim.out" 2>&1 ||
		fail "daqiri-sim failed: $(cat "$S/sim.out")"
	wait_gone "$RC" 40
	[ "$GONE_RC" = 0 ] || fail "the remote consumer failed ($GONE_RC): $(cat "$S/remote.out")"
	grep -q 'errors 0,' "$S/remote.out" || fail "remote consumer summary: $(cat "$S/remote.out")"
	echo "   ok  remote consumer through the unit: $(tail -1 "$S/remote.out")"
	ns systemctl stop daqiri-relay.service || fail "systemctl stop daqiri-relay failed"
	expect_eq "relay Result" "$(ns systemctl show -P Result daqiri-relay.service)" success
else
	echo "   --  no daqiri-relay installed (HAVE_UCX=0): its unit not started"
fi

note "flow add: refused to a member of daqiri, done for daqiri-admin"
if ns setpriv --reuid=65534 --regid=65534 --groups="$DGID" \
	daqirictl -s "$SOCKP" flow add sensor0 9 0 udp_dst=9999 > "$S/flow.out" 2>&1; then
	fail "a plain member of daqiri added a flow"
fi
grep -q "needs root or a member of group 'daqiri-admin' (daemon.admin_group)" "$S/flow.out" ||
	fail "flow add refused, but not naming who may: $(cat "$S/flow.out")"
echo "   ok  refused: $(head -1 "$S/flow.out")"
ns setpriv --reuid=65534 --regid=65534 --groups="$DGID,$AGID" \
	daqirictl -s "$SOCKP" flow add sensor0 9 0 udp_dst=9999 > "$S/flow.out" 2>&1 ||
	fail "a member of daqiri-admin could not add a flow: $(cat "$S/flow.out")"
ns daqirictl -s "$SOCKP" -j flow list | jq -e '[.. | objects | select(.id? == 9)] | length >= 1' \
	> /dev/null || fail "flow 9 not listed after add"
echo "   ok  daqiri-admin: flow add"

note "systemctl reload: a good file is applied, a broken one refused"
ns daqirictl -s "$SOCKP" config > "$S/config.before" || fail "daqirictl config failed"
grep -q 'timeout_us: 100000$' "$S/config.before" || fail "no reorder timeout_us in: $(cat "$S/config.before")"
ns cp /etc/daqiri/daqirid.yaml /etc/daqiri/daqirid.yaml.good || fail "cannot keep the config"
ns sed -i 's/timeout_us: 100000 /timeout_us: 50000 /' /etc/daqiri/daqirid.yaml ||
	fail "cannot edit the config"
ns systemctl reload daqirid.service || {
	ns journalctl -u daqirid --no-pager | tail -20
	fail "systemctl reload with a good file failed"
}
ns daqirictl -s "$SOCKP" config > "$S/config.after" || fail "daqirictl config failed"
grep -q 'timeout_us: 50000$' "$S/config.after" || fail "the reload did not apply: $(cat "$S/config.after")"
ns journalctl -u daqirid.service --no-pager -o cat > "$S/journal" 2>&1 || true
grep -q 'reload of /etc/daqiri/daqirid.yaml: 1 change applied' "$S/journal" ||
	fail "the journal lacks the applied reload: $(tail -5 "$S/journal")"
expect_eq "ActiveState after reload" "$(ns systemctl show -P ActiveState daqirid.service)" active
expect_eq "MainPID after reload" "$(ns systemctl show -P MainPID daqirid.service)" "$MAIN"
echo "   ok  good file applied"
ns sh -c 'printf "daqiri: [\n" > /etc/daqiri/daqirid.yaml' || fail "cannot break the config"
if ns systemctl reload daqirid.service 2> "$S/reload.err"; then
	fail "systemctl reload with a broken file succeeded"
fi
expect_eq "ActiveState after a refused reload" "$(ns systemctl show -P ActiveState daqirid.service)" active
expect_eq "MainPID after a refused reload" "$(ns systemctl show -P MainPID daqirid.service)" "$MAIN"
ns daqirictl -s "$SOCKP" config > "$S/config.refused" || fail "daqirictl config failed"
cmp -s "$S/config.after" "$S/config.refused" || fail "a refused reload changed the running config"
ns journalctl -u daqirid.service --no-pager -o cat > "$S/journal" 2>&1 || true
grep -q 'reload of /etc/daqiri/daqirid.yaml refused: the configuration has 1 error' "$S/journal" ||
	fail "the journal lacks the refusal: $(tail -5 "$S/journal")"
grep -q '/etc/daqiri/daqirid.yaml:[0-9]*:[0-9]*: error: YAML syntax error' "$S/journal" ||
	fail "the journal lacks the diagnostic: $(tail -5 "$S/journal")"
ns mv /etc/daqiri/daqirid.yaml.good /etc/daqiri/daqirid.yaml || fail "cannot restore the config"
echo "   ok  broken file refused; systemctl reload failed; still running the old one"

note "watchdog: a stopped daqirid is killed and restarted (WatchdogSec=10s)"
OLD=$MAIN
ns kill -STOP "$OLD" || fail "cannot stop daqirid"
i=0
while :; do
	MAIN=$(ns systemctl show -P MainPID daqirid.service)
	st=$(ns systemctl show -P ActiveState daqirid.service)
	[ "$MAIN" -gt 0 ] && [ "$MAIN" != "$OLD" ] && [ "$st" = active ] && break
	i=$((i + 1)); [ $i -lt 300 ] || fail "no restart within 30 s of SIGSTOP (state $st)"
	sleep 0.1
done
ns journalctl -u daqirid.service --no-pager > "$S/journal" 2>&1 || true
grep -q 'Watchdog timeout' "$S/journal" || fail "restarted, but not by the watchdog"
ns daqirictl -s "$SOCKP" status > /dev/null || fail "no status after the restart"
echo "   ok  watchdog restarted it: pid $OLD -> $MAIN"

note "systemctl stop is orderly: STOPPING=1, the socket removed, exit 0"
# systemd logs each notification it gets only at debug level
ns systemd-analyze log-level debug || fail "cannot raise systemd's log level"
ns systemctl stop daqirid.service || fail "systemctl stop daqirid failed"
ns systemd-analyze log-level info || true
expect_eq "ActiveState after stop" "$(ns systemctl show -P ActiveState daqirid.service)" inactive
expect_eq "Result" "$(ns systemctl show -P Result daqirid.service)" success
expect_eq "ExecMainStatus" "$(ns systemctl show -P ExecMainStatus daqirid.service)" 0
ns test -e "$SOCKP" && fail "the daemon's own socket $SOCKP is still there after stop"
ns journalctl -u daqirid.service --no-pager -o cat > "$S/journal" 2>&1 || true
grep -q 'Terminated: stopping' "$S/journal" || fail "no orderly stop in the journal: $(tail -5 "$S/journal")"
grep -q 'notification message from PID [0-9]* (STOPPING=1' "$S/journal" ||
	fail "systemd got no STOPPING=1: $(grep -i notification "$S/journal" | tail -3)"
echo "   ok  stopped in order"

note "socket activation: daqirid.socket owns the socket, daqirid starts on connect"
ns systemctl start daqirid.socket || fail "systemctl start daqirid.socket failed"
expect_eq "activation socket mode, owner, group" \
	"$(ns stat -c '%a %U %G' "$SOCKP")" "660 daqiri daqiri"
ns daqirictl -s "$SOCKP" -j status > "$S/st.json" || fail "status through daqirid.socket failed"
jq -e '.state == "running"' "$S/st.json" > /dev/null || fail "status is not running: $(cat "$S/st.json")"
MAIN=$(ns systemctl show -P MainPID daqirid.service)
[ "$MAIN" -gt 0 ] || fail "the connection did not start daqirid"
expect_eq "activated daqirid Uid" "$(ns awk '/^Uid:/ { print $2 }' "/proc/$MAIN/status")" "$DUID"
ns journalctl -u daqirid.service --no-pager -o cat > "$S/journal" 2>&1 || true
grep -q 'control socket passed by systemd' "$S/journal" ||
	fail "daqirid did not take the socket systemd passed"
# The runtime directory outlives the service: the listening socket is in it.
ns systemctl stop daqirid.service || fail "systemctl stop daqirid failed"
ns test -S "$SOCKP" || fail "stopping daqirid.service removed $SOCKP from daqirid.socket"
ns daqirictl -s "$SOCKP" status > /dev/null || fail "no second activation after a stop"
echo "   ok  activated twice, as daqiri, on the passed socket"

note "systemctl restart under a reconnecting consumer: it waits in daqirid.socket's backlog"
ns setpriv --reuid=65534 --regid=65534 --groups="$DGID" \
	daqiri-consume -s "$SOCKP" --reconnect --verify --quiet --count 8 --timeout 30 \
	sensor0/sensor_tensor > "$S/restart.out" 2>&1 &
RCONS=$!
PIDS="$PIDS $RCONS"
# served: one subscription that the receive thread has taken up
served() {
	i=0
	until ns daqirictl -s "$SOCKP" -j consumers 2> /dev/null |
	    jq -e '.consumers | length == 1 and all(.state == "active")' > /dev/null 2>&1; do
		kill -0 "$RCONS" 2> /dev/null || fail "the reconnecting consumer exited: $(cat "$S/restart.out")"
		i=$((i + 1)); [ $i -lt 400 ] || fail "the reconnecting consumer's subscription did not appear"
		sleep 0.05
	done
}
served
ns daqiri-sim -c /etc/daqiri/daqirid.yaml --batches 4 --rate 20kpps --quiet > "$S/sim.out" 2>&1 ||
	fail "daqiri-sim failed: $(cat "$S/sim.out")"
i=0
until ns daqirictl -s "$SOCKP" -j consumers | jq -e '.consumers[0].delivered == 4' > /dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 400 ] || fail "the reconnecting consumer did not get 4 tensors"
	sleep 0.05
done
OLD=$(ns systemctl show -P MainPID daqirid.service)
ns systemctl restart daqirid.service || fail "systemctl restart daqirid failed"
NEW=$(ns systemctl show -P MainPID daqirid.service)
[ "$NEW" -gt 0 ] && [ "$NEW" != "$OLD" ] || fail "systemctl restart left MainPID $OLD -> $NEW"
served
ns daqiri-sim -c /etc/daqiri/daqirid.yaml --batches 4 --rate 20kpps --quiet > "$S/sim.out" 2>&1 ||
	fail "daqiri-sim failed: $(cat "$S/sim.out")"
wait_gone "$RCONS" 30
[ "$GONE_RC" = 0 ] || fail "the reconnecting consumer failed ($GONE_RC): $(cat "$S/restart.out")"
sum=$(grep ': tensors ' "$S/restart.out" | tail -1)
expect_eq "tensors across systemctl restart" "$(echo "$sum" | sed -n 's/.*tensors \([0-9]*\),.*/\1/p')" 8
expect_eq "restarts seen" "$(echo "$sum" | sed -n 's/.*restarts \([0-9]*\).*/\1/p')" 1
expect_eq "verification errors" "$(echo "$sum" | sed -n 's/.*errors \([0-9]*\).*/\1/p')" 0

note "DPDK in the sandbox: etc/examples/pcap-replay.yaml as the unit's config"
# EAL as daqiri, with three capabilities, no_new_privs, the system call
# filter and the address families of the unit: --no-huge on a virtual
# device runs IOVA-as-VA and needs no CAP_SYS_ADMIN.
ns systemctl stop daqirid.socket daqirid.service || fail "cannot stop the units"
"$BUILD/tests/mkpcap" -o "$S/clean.pcap" --batches 8 --seed 1 --quiet > "$S/mkpcap.out" ||
	fail "mkpcap failed"
frames=$(sed -n 's/^mkpcap .*\bframes=\([0-9]*\).*/\1/p' "$S/mkpcap.out")
[ -n "$frames" ] || fail "no frame count from mkpcap: $(cat "$S/mkpcap.out")"
# Through stdin, not a path: the namespace has a /tmp of its own, which
# hides this build tree where the clone lives under /tmp.
# shellcheck disable=SC2016 # expanded by the namespace's sh
ns sh -c 'mkdir -p /var/lib/daqiri && cat > /var/lib/daqiri/capture.pcap &&
    chmod 0644 /var/lib/daqiri/capture.pcap' < "$S/clean.pcap" ||
	fail "cannot place the capture"
# A deadline of 1 s, not 10 ms, as in 10-dpdk-pcap.sh: a loaded machine
# must not time a batch out while its frames still wait in the capture.
sed -e 's|timeout_us: 10000$|timeout_us: 1000000|' etc/examples/pcap-replay.yaml > "$S/pcap.yaml"
"$BUILD/daqirid" -n -c "$S/pcap.yaml" > /dev/null || fail "pcap config invalid"
ns sh -c 'cat > /etc/daqiri/daqirid.yaml' < "$S/pcap.yaml" ||
	fail "cannot install the pcap config"
ns systemctl start daqirid.service || {
	ns journalctl -u daqirid --no-pager | tail -30
	fail "daqirid with DPDK did not start under the unit"
}
RSOCK=/run/daqiri/replay.sock
expect_eq "engine" "$(ns daqirictl -s "$RSOCK" -j status | jq -r .engine)" dpdk
i=0
until [ "$(ns daqirictl -s "$RSOCK" -j stats | jq -r '.interfaces[0].rx_packets')" = "$frames" ]; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "rx_packets did not reach the $frames frames of the capture"
	sleep 0.1
done
MAIN=$(ns systemctl show -P MainPID daqirid.service)
expect_eq "DPDK daqirid Uid" "$(ns awk '/^Uid:/ { print $2 }' "/proc/$MAIN/status")" "$DUID"
echo "   ok  $frames frames through net_pcap as daqiri"

note "systemctl poweroff ends everything"
NS_PIDS=$(in_ns_pids)
echo "   processes in the namespace: $(echo "$NS_PIDS" | wc -w)"
# Its reply may be cut short by the shutdown itself; what counts is that
# everything exits.
ns systemctl poweroff --no-block || true
wait_gone "$UNSHARE" 30
for p in $SD $NS_PIDS; do
	if kill -0 "$p" 2> /dev/null; then
		fail "pid $p ($(cat "/proc/$p/comm" 2> /dev/null)) outlived poweroff"
	fi
done
SD=""
grep -q '^daqiri:' /etc/passwd && fail "the real /etc/passwd has a user daqiri after the test"
cgroups_clean
left=$(cgroups_list | comm -13 "$S/cgroups.before" -)
[ -z "$left" ] || fail "cgroups left behind: $left"
echo "ok"
