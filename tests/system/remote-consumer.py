# SPDX-License-Identifier: Apache-2.0
# A remote consumer in Python (test 57): daqiri.connect(socket=URL) to a
# daqiri-relay, COUNT tensors of STREAM, every present slot checked
# against the simulator's pattern (int4 -> fp16) and every missing one
# against the zero fill, the presence bitmap against packets_received
# and the flags; the NumPy view must be the tensor's own memory (no
# copy in the module). Prints one line:
#   remote tensors=N complete=C partial=P missing=M seq_gaps=G errors=E
# and exits 0 when E is 0.
# Usage: remote-consumer.py URL STREAM COUNT [TIMEOUT_S]
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] /
                       "client" / "python" / "tests"))
import daqiri  # noqa: E402
from dqtest import ELEMS, PPB, check_fp16_tensor, pattern_fp16_bits  # noqa: E402


def main():
    url, stream, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    want = pattern_fp16_bits()
    n = complete = partial = missing = gaps = errors = 0
    last = None
    with daqiri.connect(socket=url) as d:
        sub = d.subscribe(stream)
        info = sub.info
        print(f"remote subscribed {info['name']} dtype={info['dtype']} "
              f"shape={info['shape']}", file=sys.stderr, flush=True)
        while n < count:
            t = sub.next(timeout=timeout)
            if t is None:
                print(f"no tensor within {timeout} s after {n}",
                      file=sys.stderr)
                break
            what = f"seq {t.seq} batch {t.batch_id}"
            try:
                a = t.numpy()
                assert a.shape == (PPB, ELEMS) and a.dtype == np.float16
                assert not a.flags.writeable, what
                assert np.frombuffer(memoryview(t), np.uint8).ctypes.data \
                    == a.ctypes.data, f"{what}: a copy"
                present = t.present
                assert t.packets_received == int(present.sum()), what
                assert t.complete == bool(present.all()), what
                assert bool(t.flags & daqiri.HAS_GAPS) == \
                    (not t.complete), what
                check_fp16_tensor(a.view(np.uint16), present, want, what)
            except AssertionError as e:
                errors += 1
                print(f"error: {e}", file=sys.stderr)
            if last is not None and t.seq != last + 1:
                gaps += 1
            last = t.seq
            n += 1
            if t.complete:
                complete += 1
            else:
                partial += 1
                missing += PPB - t.packets_received
            t.release()
    print(f"remote tensors={n} complete={complete} partial={partial} "
          f"missing={missing} seq_gaps={gaps} errors={errors}", flush=True)
    return 0 if errors == 0 and n == count else 1


if __name__ == "__main__":
    sys.exit(main())
