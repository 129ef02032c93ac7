# SPDX-License-Identifier: Apache-2.0
# fork(): a connection belongs to the process that made it. In a forked
# child its objects raise daqiri.Error EBADF, a tensor already received
# stays readable, and dropping them sends nothing to the daemon: the
# parent's subscription keeps its buffers and its state, and the parent
# carries on with it.
import errno
import gc
import os

import numpy as np
import pytest

import daqiri
from dqtest import HANG_GUARD, PPB, STREAM, check_fp16_tensor, \
    pattern_fp16_bits, wait_until

CHILD_OK = 0


def _in_child(d, sub, t, a, w):
    """The child's checks; one line per failure written to w."""
    bad = []

    def expect_ebadf(what, f):
        try:
            f()
        except daqiri.Error as e:
            if e.errno != errno.EBADF:
                bad.append(f"{what}: errno {e.errno}, want EBADF")
        except BaseException as e:
            bad.append(f"{what}: raised {e!r}, want daqiri.Error EBADF")
        else:
            bad.append(f"{what}: no error in a forked child")

    expect_ebadf("status()", d.status)
    expect_ebadf("subscribe()", lambda: d.subscribe(STREAM))
    expect_ebadf("next()", lambda: sub.next(timeout=0))
    expect_ebadf("release()", t.release)
    try:
        check_fp16_tensor(a.view(np.uint16), np.ones(PPB, bool),
                          pattern_fp16_bits(), "received tensor in child")
    except AssertionError as e:
        bad.append(str(e))
    os.write(w, ("\n".join(bad) + "\n").encode())


@pytest.mark.asan
def test_forked_child_leaves_parent_subscription_alone(daemon):
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        sid = sub.info["sub_id"]
        daemon.sim("--batches", 2)
        t = sub.next(timeout=HANG_GUARD)
        assert t is not None
        a = t.numpy()
        daemon.wait_consumer(lambda c: c["delivered"] == 2, "2 delivered",
                             sub_id=sid)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                        # the child: never returns
            code = 1
            try:
                os.close(r)
                _in_child(d, sub, t, a, w)
                # dropping everything must send nothing
                del t, a, sub
                d.close()
                del d
                gc.collect()
                code = CHILD_OK
            finally:
                os._exit(code)
        os.close(w)
        with os.fdopen(r) as f:
            report = f.read()
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and \
            os.WEXITSTATUS(status) == CHILD_OK, f"child status {status}"
        assert report.strip() == "", f"in the forked child:\n{report}"
        # the parent's subscription: still listed, nothing released
        c = daemon.consumer(sid)
        assert c is not None and c["state"] == "active", \
            f"the child's exit ended the parent's subscription: {c}"
        # the parent's own release goes after anything the child could
        # have written to the same ring: once it is seen, so is that
        t.release()
        c = daemon.wait_consumer(lambda c: c["released"] >= 1,
                                 "the parent's release", sub_id=sid)
        assert c["released"] == 1 and c["state"] == "active", \
            f"the child released the parent's buffer: {c}"
        t2 = sub.next(timeout=HANG_GUARD)
        assert t2 is not None and t2.seq == 1
        t2.release()
        assert d.status()["pid"] == daemon.pid
        wait_until(lambda: daemon.consumer(sid)["released"] == 2,
                   "both released by the parent")
