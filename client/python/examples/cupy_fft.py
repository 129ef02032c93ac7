#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cupy_fft.py: the power spectrum of every tensor of a daqirid device stream,
# computed with CuPy on the GPU that holds it, without a copy. Each row (one
# packet's samples) is transformed, the rows' power averaged, and the peak
# bin (DC left out) printed per tensor, with tensors/s. Needs a GPU, CuPy
# and a stream whose memory region is of kind device; scripts/gpu-check.sh
# runs it. Usage: cupy_fft.py [-s SOCKET] [-n COUNT] [-t SECONDS] [-q] [STREAM]
import argparse
import math
import sys
import time

import daqiri

try:
    import cupy
except ImportError:
    sys.exit("cupy_fft.py: CuPy is not installed for this Python "
             "(it needs a CUDA GPU; e.g. pip install cupy-cuda12x)")


import_array = getattr(cupy, "from_dlpack", None) or cupy.asarray


def db(x):
    return 10 * math.log10(x + 1e-30)


def main():
    p = argparse.ArgumentParser(
        description="FFT of every device tensor of a daqirid stream with CuPy.")
    p.add_argument("-s", "--socket", help="daqirid's control socket (default: $DAQIRI_SOCKET, "
                   f"else {daqiri.DEFAULT_SOCKET})")
    p.add_argument("-n", "--count", type=int, default=0,
                   help="stop after COUNT tensors (default: 0, until Ctrl-C)")
    p.add_argument("-t", "--timeout", type=float, default=None,
                   help="fail after SECONDS without a tensor (default: wait forever)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no line per tensor, only one a second")
    p.add_argument("stream", nargs="?", default="sensor0/sensor_tensor",
                   help="IFACE/NAME (default: %(default)s)")
    a = p.parse_args()

    d = daqiri.connect(a.socket)
    sub = d.subscribe(a.stream)
    info = sub.info
    if info["mem_kind"] != "device":
        sys.exit(f"cupy_fft.py: {a.stream} has {info['mem_kind']} tensors, not device ones "
                 "(a memory region of kind: device, written by reorder_type: gpu; see "
                 "daqirid.yaml(5)); for host tensors use numpy.fft on t.numpy()")
    cupy.cuda.Device(info["device"]).use()
    rows, elems = info["shape"]
    bins = elems // 2 + 1
    # Plan the FFT and compile the kernels on zeros, so the first tensor is
    # not late.
    cupy.fft.rfft(cupy.zeros((rows, elems), cupy.float32), axis=1)
    cupy.cuda.get_current_stream().synchronize()
    print(f"cupy_fft: {a.stream}: {rows} x {elems} {info['dtype']} on GPU {info['device']}, "
          f"{bins} bins per row", flush=True)

    n = last_n = 0
    err = None
    try:
        while not a.count or n < a.count:
            t = sub.next(timeout=a.timeout)
            if t is None:
                sys.exit(f"cupy_fft.py: no tensor for {a.timeout} s (after {n})")
            with t:
                # from_dlpack hands CuPy's current stream to t.__dlpack__,
                # and that stream waits on the tensor's IPC event (no CPU
                # wait); CuPy before 10 has only asarray(), through
                # __cuda_array_interface__ (the legacy default stream waits).
                x = import_array(t).astype(cupy.float32)
                power = (cupy.abs(cupy.fft.rfft(x, axis=1)) ** 2).mean(axis=0)
                peak = int(cupy.argmax(power[1:])) + 1     # int() waits for the GPU
                peak_db, total_db = db(float(power[peak])), db(float(power.sum()))
                seq, got, want = t.seq, t.packets_received, t.packets_expected
                # Leaving `with t` releases the buffer; the GPU is done with it.
            now = time.monotonic()
            if n == 0:
                start = last_report = now
            n += 1
            if not a.quiet:
                print(f"tensor {seq}: peak bin {peak} of {bins} ({peak / elems:.4f} of the "
                      f"sample rate) {peak_db:.1f} dB, total {total_db:.1f} dB, "
                      f"{got} of {want} packets", flush=True)
            if now - last_report >= 1.0:
                print(f"cupy_fft: {n} tensors, {(n - last_n) / (now - last_report):.1f}/s",
                      flush=True)
                last_n, last_report = n, now
    except KeyboardInterrupt:
        pass
    except daqiri.Error as e:       # the daemon went away: the summary still counts
        err = e
    finally:
        sub.close()
        d.close()
    rate = f", {(n - 1) / (now - start):.1f} tensors/s" if n > 1 and now > start else ""
    print(f"cupy_fft: {n} tensors{rate}")
    if err is not None:
        sys.exit(f"cupy_fft.py: {err.strerror}")


if __name__ == "__main__":
    try:
        main()
    except daqiri.Error as e:
        sys.exit(f"cupy_fft.py: {e.strerror}")
    except KeyboardInterrupt:
        pass
