#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# torch_infer.py: classify every tensor of a daqirid stream with a small
# PyTorch model as it arrives, and report tensors/s and the latency from the
# tensor's first packet to its result. The model is built in code from a
# fixed seed (no weights to download, and untrained: its classes show the
# path works, not a finding): a 1-D convolution over each row (one packet's
# samples), pooling and a linear layer; the tensor's class is the argmax of
# its rows' mean logits. Runs on the GPU when torch sees one, else on the CPU.
# Usage: torch_infer.py [-s SOCKET] [-n COUNT] [-v] [STREAM]
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
    """The clock of Tensor.first_rx_ns: CLOCK_MONOTONIC."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class RowClassifier(torch.nn.Module):
    """Conv1d, ReLU, adaptive average pooling and Linear over each row."""

    def __init__(self, elems):
        super().__init__()
        k = min(64, elems)
        self.conv = torch.nn.Conv1d(1, 8, kernel_size=k, stride=max(1, k // 4))
        self.pool = torch.nn.AdaptiveAvgPool1d(16)
        self.fc = torch.nn.Linear(8 * 16, CLASSES)

    def forward(self, x):               # x: (rows, elems), float32
        y = torch.relu(self.conv(x.unsqueeze(1)))
        return self.fc(self.pool(y).flatten(1))     # (rows, CLASSES)


def latency(ms):
    """Median and p99 of a list of milliseconds."""
    if not ms:
        return "-"
    s = sorted(ms)
    p99 = s[min(len(s) - 1, int(0.99 * len(s)))]
    return f"{statistics.median(s):.2f} ms median, {p99:.2f} ms p99"


def main():
    p = argparse.ArgumentParser(
        description="Classify every tensor of a daqirid stream with PyTorch.")
    p.add_argument("-s", "--socket", help="daqirid's control socket (default: $DAQIRI_SOCKET, "
                   f"else {daqiri.DEFAULT_SOCKET})")
    p.add_argument("-n", "--count", type=int, default=0,
                   help="stop after COUNT tensors (default: 0, until Ctrl-C)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="a line per tensor, not only one a second")
    p.add_argument("stream", nargs="?", default="sensor0/sensor_tensor",
                   help="IFACE/NAME (default: %(default)s)")
    a = p.parse_args()

    torch.manual_seed(0)
    d = daqiri.connect(a.socket)
    sub = d.subscribe(a.stream)
    info = sub.info
    if info["device"] >= 0:
        if not torch.cuda.is_available():
            sys.exit(f"torch_infer.py: {a.stream} holds tensors on GPU {info['device']}, "
                     "but this PyTorch sees no GPU")
        dev = torch.device("cuda", info["device"])
    else:
        dev = (torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available()
               else torch.device("cpu"))
    if dev.type == "cuda":
        torch.cuda.set_device(dev)      # torch's current stream is then this GPU's
    model = RowClassifier(info["elems_per_slot"]).to(dev).eval()
    with torch.inference_mode():        # the first call is slow: not on a real tensor
        model(torch.zeros(info["shape"], device=dev))
    print(f"torch_infer: {a.stream}: {info['shape'][0]} x {info['shape'][1]} {info['dtype']} "
          f"in {info['mem_kind']} memory, model on {dev}", flush=True)

    first_ms, last_ms, recent = [], [], []      # latencies: from first / last packet
    counts = [0] * CLASSES
    n = missed = 0
    next_seq = None
    err = None
    try:
        for t in sub:
            with t, torch.inference_mode():
                # Zero copy: x is the tensor's memory (read-only for a host
                # tensor: nothing may write through it). For a device tensor
                # from_dlpack hands torch's current stream to t.__dlpack__,
                # and that stream waits on the tensor's IPC event, without
                # a CPU wait.
                x = torch.from_dlpack(t)
                x = x.to(dev).float()   # a copy only when the dtype or device differs
                cls = int(model(x).mean(0).argmax())    # int() waits for the result
                done = now_ns()
                # Leaving `with t` releases the buffer; the GPU is done with it.
            if next_seq is not None:
                missed += t.seq - next_seq  # the daemon never waits for a slow consumer
            next_seq = t.seq + 1
            if n == 0:
                start = last_report = time.monotonic()
                last_n = 0
            n += 1
            counts[cls] += 1
            ms = (done - t.first_rx_ns) / 1e6
            first_ms.append(ms)
            recent.append(ms)
            last_ms.append((done - t.last_rx_ns) / 1e6)
            if a.verbose:
                print(f"tensor {t.seq}: class {cls}, {t.packets_received} of {t.packets_expected} "
                      f"packets, result {ms:.2f} ms after its first packet", flush=True)
            now = time.monotonic()
            if now - last_report >= 1.0:
                print(f"torch_infer: {n} tensors, {(n - last_n) / (now - last_report):.1f}/s, "
                      f"first packet to result {latency(recent)}", flush=True)
                last_n, last_report, recent = n, now, []
            if a.count and n >= a.count:
                break
        else:
            print("torch_infer: daqirid ended the subscription", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    except daqiri.Error as e:       # the daemon went away: the summary still counts
        err = e
    finally:
        sub.close()
        d.close()
    rate = f", {(n - 1) / (now - start):.1f} tensors/s" if n > 1 and now > start else ""
    print(f"torch_infer: {n} tensors{rate}, {missed} missed, classes {counts}\n"
          f"torch_infer: first packet to result {latency(first_ms)}; "
          f"last packet to result {latency(last_ms)}")
    if err is not None:
        sys.exit(f"torch_infer.py: {err.strerror}")


if __name__ == "__main__":
    try:
        main()
    except daqiri.Error as e:
        sys.exit(f"torch_infer.py: {e.strerror}")
    except KeyboardInterrupt:
        pass
