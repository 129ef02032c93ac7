# SPDX-License-Identifier: Apache-2.0
# The Python consumer of tests/system/32-restart.sh: subscribes with
# reconnect (the default), checks every element of every tensor against
# the simulator's pattern (int4 -> fp16, no loss), holds the first tensor
# of each daemon instance across the next restart and checks it again
# then, and prints one summary line when the subscription ends or on
# SIGTERM. Usage: restart-consumer.py SOCKET STREAM
import signal
import sys

import numpy as np

import daqiri

sock, stream = sys.argv[1], sys.argv[2]
stop = False


def on_term(sig, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
s = np.arange(128, dtype=np.int64)[:, None]
e = np.arange(16000, dtype=np.int64)[None, :]
want = ((((3 * s + e) % 15) - 7).astype(np.float16)).view(np.uint16)

n = restarts = errors = rechecked = 0
held = held_copy = None
end = "stopped"
with daqiri.connect(sock) as d:
    sub = d.subscribe(stream)
    print("subscribed", flush=True)
    while not stop:
        try:
            t = sub.next(timeout=0.1)
        except daqiri.Error as x:
            end = f"error errno={x.errno} {x.strerror}"
            break
        if t is None:
            continue
        n += 1
        bits = t.numpy().view(np.uint16)
        if not t.complete or not np.array_equal(bits, want):
            errors += 1
        if t.flags & daqiri.RESTART:
            restarts += 1
            print(f"restart instance={t.instance:016x} seq={t.seq}",
                  flush=True)
            if held is not None:
                rechecked += 1
                if not np.array_equal(held.numpy().view(np.uint16),
                                      held_copy):
                    errors += 1
                held.release()
                held = None
        if held is None:
            held, held_copy = t, bits.copy()
        else:
            t.release()
        print(f"tensor seq={t.seq} instance={t.instance:016x}", flush=True)
print(f"py tensors={n} restarts={restarts} errors={errors} "
      f"rechecked={rechecked} end={end}", flush=True)
