#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# GPU parts on a machine without a GPU (or a build without CUDA): a gpu
# reorder config and a device memory region each stop start-up with one
# clear line naming them; host_pinned falls back to host memory with a
# warning and runs. On a machine with a GPU the same configs start.
. tests/system/lib.sh

try_start() {	# config -> 0 started (and stopped again), 1 refused
	"$BUILD/daqirid" -c "$1" -s "$SOCK" 2> "$T/start.log" &
	pid=$!
	PIDS="$PIDS $pid"
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		if ctl status > /dev/null 2>&1; then
			kill -TERM "$pid"; wait "$pid" || true
			return 0
		fi
		i=$((i + 1)); [ $i -lt 200 ] || fail "neither started nor refused"
		sleep 0.05
	done
	wait "$pid" && fail "daqirid exited 0 without starting"
	return 1
}

make_config -e 's/kind: host$/kind: host_pinned/'
cp "$T/daqirid.yaml" "$T/pinned.yaml"
note "host_pinned regions without a GPU: a warning, and it runs"
try_start "$T/pinned.yaml" || { cat "$T/start.log"; fail "host_pinned did not start"; }
if grep -q 'without a CUDA device\|without CUDA' "$T/start.log"; then
	gpu=0
else
	gpu=1
	note "a CUDA device is present: checking that the GPU configs start"
fi

note "a gpu reorder config"
sed -e 's/reorder_type: cpu/reorder_type: gpu/' "$T/pinned.yaml" > "$T/gpu.yaml"
if try_start "$T/gpu.yaml"; then
	[ $gpu -eq 1 ] || fail "gpu reorder started without a GPU"
else
	[ $gpu -eq 0 ] || { cat "$T/start.log"; fail "gpu reorder refused with a GPU"; }
	grep -q "reorder config 'sensor0/sensor_tensor': reorder_type gpu: " "$T/start.log" ||
		{ cat "$T/start.log"; fail "the gpu reorder error does not name the config"; }
fi

note "a device memory region (GPUDirect output)"
sed -e '/name: tensors/,/buf_size/s/kind: host_pinned/kind: device/' "$T/gpu.yaml" > "$T/device.yaml"
"$BUILD/daqirid" -n -c "$T/device.yaml" > /dev/null || fail "device config invalid"
if try_start "$T/device.yaml"; then
	[ $gpu -eq 1 ] || fail "device region started without a GPU"
else
	[ $gpu -eq 0 ] || { cat "$T/start.log"; fail "device region refused with a GPU"; }
	grep -q "memory region 'tensors': " "$T/start.log" ||
		{ cat "$T/start.log"; fail "the device error does not name the region"; }
	[ "$(grep -c . "$T/start.log")" -le 3 ] || { cat "$T/start.log"; fail "more than a clear line or two"; }
fi
cat "$T/start.log"
echo "ok"
