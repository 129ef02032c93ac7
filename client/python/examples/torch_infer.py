#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# torch_infer.py: classify every tensor of a daqirid stream with a small
# PyTorch model as it arrives, and report tensors/s and the latency from the
# tensor's first packet to its result. The model is built in code from a
# fixed seed (no weights to download): a 1-D convolution over each row (one
# packet's samples), pooling and a linear layer; the tensor's class is the
# argmax of its rows' mean logits. Runs on the GPU when torch sees one, else
# on the CPU. Usage: torch_infer.py [-s SOCKET] [-n COUNT] [STREAM]
import argparse
import statistics
import sys
import time

import daqiri

try:
    import torch
except ImportError:
    sys.exit("torch_infer.py: PyTorch is not installed for this Python "
             "(Debian: apt-get install python3-torch)")

CLASSES = 4


def now_ns():
    """The clock of Tensor.first_rx_ns (CLOCK_MONOTONIC)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class RowClassifier(torch.nn.Module):
    """Conv1d + ReLU + adaptive average pooling + Linear over each row."""

    def __init__(self, elems):
        super().__init__()
        k = min(64, elems)
        self.conv = torch.nn.Conv1d(1, 8, kernel_size=k, stride=max(1, k // 4))
        self.pool = torch.nn.AdaptiveAvgPool1d(16)
        self.fc = torch.nn.Linear(8 * 16, CLASSES)

    def forward(self, x):               # x: (rows, elems) float32
        y = torch.relu(self.conv(x.unsqueeze(1)))
        return self.fc(self.pool(y).flatten(1))     # (rows, CLASSES)


def percentile(sorted_ms, q):
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


def latency_line(lat_ms):
    if not lat_ms:
        return "no tensors"
    s = sorted(lat_ms)
    return f"latency median {statistics.median(s):.2f} ms, p99 {percentile(s, 0.99):.2f} ms"


def main():
    p = argparse.ArgumentParser(description="Classify every tensor of a daqirid stream with PyTorch.")
    p.add_argument("-s", "--socket", help="daqirid's control socket (default: $DAQIRI_SOCKET, else %s)"
                   % daqiri.DEFAULT_SOCKET)
    p.add_argument("-n", "--count", type=int, default=0, help="stop after COUNT tensors (default: 0, until Ctrl-C)")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per tensor, not only every second")
    p.add_argument("stream", nargs="?", default="sensor0/sensor_tensor", help="IFACE/NAME (default: %(default)s)")
    a = p.parse_args()

    torch.manual_seed(0)
    d = daqiri.connect(a.socket)
    sub = d.subscribe(a.stream)
    info = sub.info
    if info["device"] >= 0:
        if not torch.cuda.is_available():
            sys.exit(f"torch_infer.py: {a.stream} holds GPU {info['device']} tensors, "
                     "but this PyTorch sees no GPU")
        dev = torch.device("cuda", info["device"])
    else:
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)      # the current stream is this GPU's
    model = RowClassifier(info["elems_per_slot"]).to(dev).eval()
    with torch.inference_mode():        # warm up before the first tensor counts
        model(torch.zeros(info["shape"], device=dev))
    print(f"torch_infer: {a.stream}: {info['shape'][0]} x {info['shape'][1]} {info['dtype']} "
          f"({info['mem_kind']}) on {dev}", flush=True)

    lat_ms, last_ms = [], []
    counts = [0] * CLASSES
    n = last_n = 0
    t0 = last_t = time.monotonic()
    try:
        for t in sub:
            with t, torch.inference_mode():
                # Zero copy: x shares the tensor's memory (read-only for host
                # tensors: never write through it). For a device tensor,
                # from_dlpack passes torch's current stream, which then waits
                # on the tensor's IPC event; no CPU wait.
                x = torch.from_dlpack(t)
                x = x.to(dev).float()   # same device: no copy unless the dtype differs
                cls = int(model(x).mean(0).argmax())    # .item() waits for the result
                ms = (now_ns() - t.first_rx_ns) / 1e6
                # leaving `with t` releases the buffer, now that the GPU is done with it
            n += 1
            counts[cls] += 1
            lat_ms.append(ms)
            last_ms.append(ms)
            if a.verbose:
                print(f"tensor {t.seq}: class {cls}, {t.packets_received} of {t.packets_expected}"
                      f" packets, {ms:.2f} ms after its first packet", flush=True)
            now = time.monotonic()
            if now - last_t >= 1.0:
                print(f"torch_infer: {n} tensors, {(n - last_n) / (now - last_t):.1f} tensors/s, "
                      f"{latency_line(last_ms)}, classes {counts}", flush=True)
                last_n, last_t, last_ms = n, now, []
            if a.count and n >= a.count:
                break
        else:
            print("torch_infer: daqirid ended the subscription", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        sub.close()
        d.close()
    el = time.monotonic() - t0
    print(f"torch_infer: total {n} tensors in {el:.1f} s ({n / el:.1f} tensors/s), {latency_line(lat_ms)} "
          f"(first packet to result), classes {counts}")


if __name__ == "__main__":
    try:
        main()
    except daqiri.Error as e:
        sys.exit(f"torch_infer.py: {e.strerror}")
    except KeyboardInterrupt:
        pass
