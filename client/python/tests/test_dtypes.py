# SPDX-License-Identifier: Apache-2.0
# The other output types of the int4 conversion, each on a daemon of its
# own: numpy() has the matching NumPy dtype (fp32, fp64, int32, int8) and
# every element is the simulator's pattern, missing slots the fill (zero,
# or NaN for a float output with fill: nan); bf16, which NumPy has no
# dtype for, is a TypeError from numpy() and reads right through
# torch.from_dlpack. The DLPack device of a host tensor is (kDLCPU, 0).
import numpy as np
import pytest

import daqiri
from dqtest import ELEMS, HANG_GUARD, PPB, STREAM, pattern

NBUFS_SMALL = 8             # fp64 tensors are 16 MB each
BATCHES = 3                 # <= NBUFS_SMALL - window 4 - 1


def _daemon(make_daemon, out, elem_bytes, fill="zero"):
    d = make_daemon()
    d.make_config(("output_type: fp16", f"output_type: {out}"),
                  ("buf_size: 4096000",
                   f"buf_size: {PPB * ELEMS * elem_bytes}"),
                  ("num_bufs: 32", f"num_bufs: {NBUFS_SMALL}"),
                  ("fill: zero ", f"fill: {fill} "))
    return d.start()


def _tensors(daemon, n, *sim):
    with daqiri.connect(daemon.sock) as d:
        # all n published before we look: room for all of them (the
        # most the stream allows: nbufs - window - 1)
        sub = d.subscribe(STREAM, max_held=n)
        daemon.wait_served()
        info = sub.info
        res = daemon.sim("--batches", n, *sim)
        for _ in range(n):
            t = sub.next(timeout=HANG_GUARD)
            assert t is not None, "no tensor"
            yield info, res, t


@pytest.mark.asan
@pytest.mark.parametrize("out,dtype,fill", [
    ("fp32", np.float32, "zero"),
    ("fp32", np.float32, "nan"),
    ("fp64", np.float64, "nan"),
    ("int32", np.int32, "zero"),
    ("int8", np.int8, "zero"),
])
def test_output_types(make_daemon, out, dtype, fill):
    es = np.dtype(dtype).itemsize
    daemon = _daemon(make_daemon, out, es, fill)
    want = pattern().astype(dtype)
    seen_missing = 0
    for info, res, t in _tensors(daemon, BATCHES, "--seed", 3, "--loss", 0.01):
        with t:
            assert info["dtype"] == out and info["elem_bytes"] == es
            assert info["fill"] == fill
            assert t.dtype == out and t.nbytes == PPB * ELEMS * es
            a = t.numpy()
            assert a.dtype == dtype and a.shape == (PPB, ELEMS)
            assert not a.flags.writeable
            assert np.from_dlpack(t).ctypes.data == a.ctypes.data
            assert t.__dlpack_device__() == (1, 0)
            with pytest.raises(AttributeError):
                t.__cuda_array_interface__
            present = t.present
            missing = res.missing.get(t.batch_id, set())
            assert set(np.flatnonzero(~present).tolist()) == missing
            seen_missing += len(missing)
            assert np.array_equal(a[present], want[present]), \
                f"{out}: batch {t.batch_id}: present slots differ"
            gone = a[~present]
            if fill == "nan":
                assert np.isnan(gone).all(), "missing slots not NaN"
            else:
                assert (gone.view(np.uint8) == 0).all(), \
                    "missing slots not zero"
    assert seen_missing > 0, "the seed should drop some packets"


def test_bf16_numpy_type_error_torch_reads(make_daemon):
    torch = pytest.importorskip("torch")
    daemon = _daemon(make_daemon, "bf16", 2)
    want = torch.from_numpy(pattern().astype(np.float32)).to(torch.bfloat16)
    for info, res, t in _tensors(daemon, 2):
        with t:
            assert info["dtype"] == "bf16" and t.dtype == "bf16"
            with pytest.raises(TypeError):
                t.numpy()
            x = torch.from_dlpack(t)
            assert x.dtype == torch.bfloat16 and tuple(x.shape) == (PPB, ELEMS)
            assert t.complete
            assert torch.equal(x.view(torch.int16), want.view(torch.int16))
