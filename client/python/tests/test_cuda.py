# SPDX-License-Identifier: Apache-2.0
# Device tensors (a `kind: device` region written by `reorder_type: gpu`)
# with the daemon and this interpreter both on the CUDA stand-in
# (tests/standin/, scripts/cuda-standin; `make python-check` runs this
# file under it). No CuPy or torch.cuda here: what the protocols carry is
# read as a consumer library would, with ctypes. __cuda_array_interface__
# is version 3 with the device pointer libdaqiri-client reports (a device
# allocation by cudaPointerGetAttributes), C-contiguous, the typestr of
# the stream's dtype and stream 1, the legacy default stream, which was
# made to wait on the tensor's event; __dlpack__'s stream (None, 1, 2, a
# cudaStream_t) is the one made to wait, -1 none; the "dltensor" capsule's
# DLManagedTensor says kDLCUDA, the pointer, shape, dtype, no strides, and
# holds the Tensor until its deleter runs. Every element copied to the
# host after the wait is the simulator's pattern. A host tensor stays
# kDLCPU and has no __cuda_array_interface__. The stand-in runs device
# work only when something waits for it, so a missing wait reads the
# buffer unfinished, and cudaStreamQuery tells which stream got a wait.
import ctypes
import gc
import os
import sys

import numpy as np
import pytest

from dqtest import (BUILD, ELEMS, HANG_GUARD, PPB, STREAM, check_fp16_tensor,
                    pattern)

STANDIN = BUILD / "standin" / "libcudart.so.13"
if not STANDIN.exists():
    pytest.skip(f"{STANDIN} is not built (a build without nvcc): no CUDA "
                "stand-in to run device tensors on", allow_module_level=True)

import daqiri   # noqa: E402  (links libcudart.so.13: the stand-in or not)


def _cudart_paths():
    with open("/proc/self/maps") as f:
        return {ln.split()[-1] for ln in f if "libcudart" in ln}


# One libcudart per process: ctypes gets the one the module loaded, which
# must be the stand-in (LD_LIBRARY_PATH, as scripts/cuda-standin sets it).
cudart = ctypes.CDLL("libcudart.so.13")
if _cudart_paths() != {str(STANDIN.resolve())}:
    pytest.fail(f"test_cuda.py must run on the CUDA stand-in, and this "
                f"process has {sorted(_cudart_paths())}: run it as `make "
                f"python-check` does (BUILD={BUILD} scripts/cuda-standin "
                f"{sys.executable} -m pytest {__file__}, with PYTHONPATH "
                f"and DAQIRI_BUILD as for the other tests)", pytrace=False)

# The checks below tell a wait from none by the stand-in's lazy queues.
if os.environ.get("DAQIRI_STANDIN_EAGER", "0") not in ("", "0"):
    pytest.fail("test_cuda.py needs the stand-in's lazy queues: unset "
                "DAQIRI_STANDIN_EAGER", pytrace=False)

# driver_types.h
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
MEMCPY_D2H = 2                  # cudaMemcpyDeviceToHost
MEMORY_TYPE_DEVICE = 2          # cudaMemoryTypeDevice
STREAM_NON_BLOCKING = 1         # cudaStreamNonBlocking
LEGACY = 1                      # cudaStreamLegacy
PER_THREAD = 2                  # cudaStreamPerThread
# dlpack.h
KDLCPU, KDLCUDA = 1, 2
KDLINT, KDLFLOAT, KDLBFLOAT = 0, 2, 4


class PointerAttributes(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", ctypes.c_void_p),
                ("hostPointer", ctypes.c_void_p),
                ("reserved", ctypes.c_long * 8)]


_vp, _sz = ctypes.c_void_p, ctypes.c_size_t
for _name, _args in {
        "cudaPointerGetAttributes": [ctypes.POINTER(PointerAttributes), _vp],
        "cudaMemcpy": [_vp, _vp, _sz, ctypes.c_int],
        "cudaMemcpyAsync": [_vp, _vp, _sz, ctypes.c_int, _vp],
        "cudaStreamCreateWithFlags": [ctypes.POINTER(_vp), ctypes.c_uint],
        "cudaStreamDestroy": [_vp],
        "cudaStreamSynchronize": [_vp],
        "cudaStreamQuery": [_vp],
        "cudaDeviceSynchronize": [],
        "cudaGetErrorString": [ctypes.c_int]}.items():
    getattr(cudart, _name).argtypes = _args
    getattr(cudart, _name).restype = ctypes.c_int
cudart.cudaGetErrorString.restype = ctypes.c_char_p


def ck(e, what):
    assert e == CUDA_SUCCESS, \
        f"{what}: CUDA error {e} ({cudart.cudaGetErrorString(e).decode()})"


def query(stream):
    """cudaStreamQuery: on the stand-in, cudaErrorNotReady (the first time
    it is asked) when something is queued on the stream, 0 when nothing."""
    return cudart.cudaStreamQuery(stream)


def d2h(ptr, nbytes, stream=None):
    """nbytes at device pointer ptr, copied to the host: a synchronous
    cudaMemcpy (the legacy stream) or, on stream, cudaMemcpyAsync and
    cudaStreamSynchronize."""
    out = np.empty(nbytes, np.uint8)
    if stream is None:
        ck(cudart.cudaMemcpy(out.ctypes.data, ptr, nbytes, MEMCPY_D2H),
           "cudaMemcpy")
    else:
        ck(cudart.cudaMemcpyAsync(out.ctypes.data, ptr, nbytes, MEMCPY_D2H,
                                  stream), "cudaMemcpyAsync")
        ck(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
    return out


# ---- DLPack (dlpack.h, version 0.6: no versioned capsules) --------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


_capi = ctypes.pythonapi
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_GetName.argtypes = [ctypes.py_object]
_capi.PyCapsule_GetName.restype = ctypes.c_char_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_SetName.restype = ctypes.c_int
USED = ctypes.c_char_p(b"used_dltensor")    # the capsule keeps the pointer


def dl_read(cap):
    """The capsule's DLManagedTensor (still owned by the capsule)."""
    assert _capi.PyCapsule_GetName(cap) == b"dltensor"
    assert _capi.PyCapsule_IsValid(cap, b"dltensor")
    p = _capi.PyCapsule_GetPointer(cap, b"dltensor")
    assert p
    return DLManagedTensor.from_address(p), p


def dl_consume(cap):
    """Take the DLManagedTensor as a consumer does: rename the capsule
    "used_dltensor" (its destructor then leaves it alone); the caller
    calls its deleter."""
    m, p = dl_read(cap)
    assert _capi.PyCapsule_SetName(cap, USED) == 0
    return m, p


# ---- libdaqiri-client in this process, through ctypes -------------------

class CTensor(ctypes.Structure):
    """struct daqiri_tensor (client/daqiri_client.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("data", ctypes.c_void_p),
                ("device", ctypes.c_int), ("dtype", ctypes.c_int),
                ("dtype_name", ctypes.c_char_p),
                ("elem_bytes", ctypes.c_uint32), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_uint64 * 2), ("bytes", ctypes.c_uint64),
                ("slot_bytes", ctypes.c_uint64), ("seq", ctypes.c_uint64),
                ("batch_id", ctypes.c_uint64), ("flags", ctypes.c_uint32),
                ("packets_expected", ctypes.c_uint32),
                ("packets_received", ctypes.c_uint32),
                ("bitmap", ctypes.c_void_p),
                ("bitmap_bits", ctypes.c_uint32),
                ("lengths", ctypes.c_void_p),
                ("first_rx_ns", ctypes.c_uint64),
                ("last_rx_ns", ctypes.c_uint64),
                ("publish_ns", ctypes.c_uint64),
                ("buf_index", ctypes.c_uint32), ("event", ctypes.c_void_p),
                ("instance", ctypes.c_uint64)]


class CSub:
    """A second subscription to the stream, made by libdaqiri-client.so in
    this process: what the C library says the tensor's device pointer is.
    (Opening an IPC memory handle twice in one process gives the same
    address, on current drivers as on the stand-in.)"""

    def __init__(self, sock, stream=STREAM):
        lib = ctypes.CDLL(str(BUILD / "libdaqiri-client.so"))
        lib.daqiri_connect.argtypes = [ctypes.c_char_p,
                                       ctypes.POINTER(ctypes.c_void_p)]
        lib.daqiri_subscribe.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                         ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_void_p)]
        lib.daqiri_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(CTensor),
                                    ctypes.c_int]
        lib.daqiri_release.argtypes = [ctypes.c_void_p,
                                       ctypes.POINTER(CTensor)]
        lib.daqiri_unsubscribe.argtypes = [ctypes.c_void_p]
        lib.daqiri_disconnect.argtypes = [ctypes.c_void_p]
        assert _cudart_paths() == {str(STANDIN.resolve())}
        self.lib = lib
        self.d = ctypes.c_void_p()
        self.sub = ctypes.c_void_p()
        r = lib.daqiri_connect(sock.encode(), ctypes.byref(self.d))
        assert r == 0, f"daqiri_connect: {os.strerror(-r)}"
        r = lib.daqiri_subscribe(self.d, stream.encode(), None,
                                 ctypes.byref(self.sub))
        assert r == 0, f"daqiri_subscribe: {os.strerror(-r)}"

    def next(self):
        t = CTensor(size=ctypes.sizeof(CTensor))
        r = self.lib.daqiri_next(self.sub, ctypes.byref(t),
                                 int(HANG_GUARD * 1000))
        assert r == 1, f"daqiri_next: {r}"
        return t

    def release(self, t):
        assert self.lib.daqiri_release(self.sub, ctypes.byref(t)) == 0

    def close(self):
        self.lib.daqiri_unsubscribe(self.sub)
        self.lib.daqiri_disconnect(self.d)


# ---- daemons --------------------------------------------------------------

# The GPU reorder's output types: element bytes, CAI typestr, DLPack
# (code, bits), the unsigned view the pattern is compared in.
DTYPES = {
    "fp16": (2, "<f2", (KDLFLOAT, 16), np.uint16),
    "fp32": (4, "<f4", (KDLFLOAT, 32), np.uint32),
    "fp64": (8, "<f8", (KDLFLOAT, 64), np.uint64),
    "int32": (4, "<i4", (KDLINT, 32), np.uint32),
    "bf16": (2, None, (KDLBFLOAT, 16), np.uint16),
}
TENSORS_HOST = ("- name: tensors             # one finished tensor per buffer"
                "\n      kind: host")


def want_bits(out):
    """The simulator's pattern as the out dtype's bits, (PPB, ELEMS)."""
    p = pattern()
    if out == "bf16":       # small integers: exact, the high half of fp32
        return (p.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return p.astype({"fp16": np.float16, "fp32": np.float32,
                     "fp64": np.float64, "int32": np.int32}[out]).view(
                         DTYPES[out][3])


def device_daemon(make_daemon, out="fp16"):
    """The default config with the tensors region on GPU 0 and the GPU
    reorder writing it, on the stand-in."""
    es = DTYPES[out][0]
    d = make_daemon()
    d.make_config(("reorder_type: cpu", "reorder_type: gpu"),
                  (TENSORS_HOST, TENSORS_HOST.replace("kind: host",
                                                      "kind: device")),
                  ("output_type: fp16", f"output_type: {out}"),
                  ("buf_size: 4096000", f"buf_size: {PPB * ELEMS * es}"),
                  ("num_bufs: 32", "num_bufs: 8"))
    d.start()
    with open(f"/proc/{d.pid}/maps") as f:
        libs = {ln.split()[-1] for ln in f if "libcudart" in ln}
    assert libs == {str(STANDIN.resolve())}, \
        f"the daemon is not on the stand-in: {libs}"
    return d


def subscribe(daemon, conn, csub=False):
    sub = conn.subscribe(STREAM)
    c = CSub(daemon.sock) if csub else None
    daemon.wait_served()
    info = sub.info
    assert info["mem_kind"] == "device" and info["device"] == 0
    return sub, c


def next_tensor(sub):
    t = sub.next(timeout=HANG_GUARD)
    assert t is not None, f"no tensor within {HANG_GUARD:.0f} s"
    return t


def bits_of(host_bytes, out):
    return host_bytes.view(DTYPES[out][3]).reshape(PPB, ELEMS)


def check_complete(host_bytes, out, what):
    check_fp16_tensor(bits_of(host_bytes, out), np.ones(PPB, bool),
                      want_bits(out), what)


# ---- the tests ------------------------------------------------------------

@pytest.fixture(autouse=True)
def idle_streams(make_daemon):
    """Every stream idle before a test, and made idle after it (before its
    daemon goes), so that a failed test leaves nothing queued behind."""
    for s in (LEGACY, PER_THREAD):
        assert query(s) == CUDA_SUCCESS, f"stream {s} not idle"
    yield
    ck(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def test_cuda_array_interface(make_daemon):
    daemon = device_daemon(make_daemon)
    with daqiri.connect(daemon.sock) as conn:
        sub, c = subscribe(daemon, conn, csub=True)
        try:
            daemon.sim("--batches", 1)
            t, ct = next_tensor(sub), c.next()
            assert (ct.seq, ct.buf_index) == (t.seq, t.buf_index)
            assert ct.device == 0 and ct.event
            assert t.device == 0 and t.complete
            # no host view of device memory (a host read would fault)
            with pytest.raises(TypeError):
                t.numpy()
            with pytest.raises(TypeError):
                memoryview(t)
            assert query(LEGACY) == CUDA_SUCCESS, "legacy stream not idle"
            cai = t.__cuda_array_interface__
            assert set(cai) == {"version", "data", "shape", "typestr",
                                "strides", "stream"}, cai
            assert cai["version"] == 3
            ptr, ro = cai["data"]
            assert type(ptr) is int and ptr == ct.data, \
                f"data {ptr:#x}, the C library's pointer {ct.data:#x}"
            assert ro is True
            assert cai["shape"] == (PPB, ELEMS)
            assert all(type(n) is int for n in cai["shape"])
            # None: C-contiguous (the CAI's rule); a slot is elems x 2 bytes
            assert cai["strides"] is None
            assert t.nbytes == PPB * ELEMS * 2
            assert cai["typestr"] == "<f2"
            assert np.dtype(cai["typestr"]) == np.float16
            # the whole tensor lies in a device allocation
            for p in (ptr, ptr + t.nbytes - 1):
                a = PointerAttributes()
                ck(cudart.cudaPointerGetAttributes(ctypes.byref(a), p),
                   "cudaPointerGetAttributes")
                assert a.type == MEMORY_TYPE_DEVICE and a.device == 0, \
                    f"{p:#x}: memory type {a.type}, device {a.device}"
                assert a.devicePointer == p
            # stream 1: the legacy default stream, which now waits on the
            # tensor's event (the CAI v3 producer's duty): something is
            # queued on it, and a copy on it sees the finished tensor
            assert cai["stream"] == LEGACY
            assert query(LEGACY) == CUDA_ERROR_NOT_READY, \
                "no wait was queued on the legacy stream"
            check_complete(d2h(ptr, t.nbytes), "fp16",
                           "__cuda_array_interface__ after the wait")
            c.release(ct)
            t.release()
        finally:
            c.close()


@pytest.mark.parametrize("stream", [None, 1, 2, "own"])
def test_dlpack_stream_waits(make_daemon, stream):
    """__dlpack__(stream=...) makes that stream wait, no other, so work
    queued on it after the export sees the finished tensor."""
    daemon = device_daemon(make_daemon)
    own = ctypes.c_void_p()
    ck(cudart.cudaStreamCreateWithFlags(ctypes.byref(own),
                                        STREAM_NON_BLOCKING),
       "cudaStreamCreateWithFlags")
    try:
        arg = own.value if stream == "own" else stream
        target = LEGACY if stream is None else arg
        # The legacy stream waits for every blocking stream (the
        # per-thread one is), so the stand-in's cudaStreamQuery of it
        # says NotReady while they have work: not asked then.
        others = {LEGACY, PER_THREAD, own.value} - {target}
        if target == PER_THREAD:
            others.discard(LEGACY)
        with daqiri.connect(daemon.sock) as conn:
            sub, _ = subscribe(daemon, conn)
            daemon.sim("--batches", 1)
            with next_tensor(sub) as t:
                assert t.__dlpack_device__() == (KDLCUDA, 0)
                for s in {target} | others:
                    assert query(s) == CUDA_SUCCESS, f"stream {s} not idle"
                cap = t.__dlpack__() if stream is None else \
                    t.__dlpack__(stream=arg)
                m, _ = dl_read(cap)
                ptr = m.dl_tensor.data
                assert query(target) == CUDA_ERROR_NOT_READY, \
                    f"stream={stream!r}: no wait queued on stream {target}"
                for s in others:
                    assert query(s) == CUDA_SUCCESS, \
                        f"stream={stream!r}: something queued on {s}"
                check_complete(d2h(ptr, t.nbytes, target), "fp16",
                               f"__dlpack__(stream={stream!r})")
                del m, cap
    finally:
        ck(cudart.cudaStreamDestroy(own), "cudaStreamDestroy")


def test_dlpack_no_sync_and_bad_streams(make_daemon):
    """stream=-1: no wait anywhere, and (the stand-in running device work
    only when waited for) a copy then reads the buffer unfinished; the
    wait of a later __dlpack__() finishes it. 0 and below -1 are not
    streams."""
    daemon = device_daemon(make_daemon)
    with daqiri.connect(daemon.sock) as conn:
        sub, _ = subscribe(daemon, conn)
        daemon.sim("--batches", 1)
        with next_tensor(sub) as t:
            for bad in (0, -2):
                with pytest.raises(ValueError):
                    t.__dlpack__(stream=bad)
            with pytest.raises(TypeError):
                t.__dlpack__(stream="1")
            assert query(LEGACY) == CUDA_SUCCESS
            cap = t.__dlpack__(stream=-1)
            m, _ = dl_read(cap)
            ptr = m.dl_tensor.data
            assert query(LEGACY) == CUDA_SUCCESS, "stream=-1 queued a wait"
            assert query(PER_THREAD) == CUDA_SUCCESS, \
                "stream=-1 queued a wait"
            early = bits_of(d2h(ptr, t.nbytes), "fp16")
            assert not np.array_equal(early, want_bits("fp16")), \
                "the tensor was finished before anything waited for it: " \
                "the data checks of this file prove no wait"
            t.__dlpack__()
            assert query(LEGACY) == CUDA_ERROR_NOT_READY
            check_complete(d2h(ptr, t.nbytes), "fp16",
                           "__dlpack__() after stream=-1")
            del m, cap


def test_dlpack_capsule_and_lifetime(make_daemon):
    daemon = device_daemon(make_daemon)
    with daqiri.connect(daemon.sock) as conn:
        sub, c = subscribe(daemon, conn, csub=True)
        try:
            sid = sub.info["sub_id"]
            daemon.sim("--batches", 1)
            t, ct = next_tensor(sub), c.next()
            assert (ct.seq, ct.buf_index) == (t.seq, t.buf_index)
            c.release(ct)
            c.close()
            c = None
            # the legacy DLPack protocol only: dlpack.h 0.6 has no
            # DLManagedTensorVersioned, and a consumer that asks for one
            # (max_version) gets TypeError, then asks again without
            with pytest.raises(TypeError):
                t.__dlpack__(max_version=(1, 0))
            r0 = sys.getrefcount(t)
            cap = t.__dlpack__(stream=-1)
            assert type(cap).__name__ == "PyCapsule"
            m, p = dl_read(cap)
            dl = m.dl_tensor
            assert dl.data == ct.data, \
                f"data {dl.data:#x}, the C library's {ct.data:#x}"
            assert (dl.device.device_type, dl.device.device_id) == (KDLCUDA,
                                                                    0)
            assert dl.ndim == 2
            assert (dl.shape[0], dl.shape[1]) == (PPB, ELEMS)
            assert not dl.strides, "strides: NULL is compact row-major"
            assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == \
                (KDLFLOAT, 16, 1)
            assert dl.byte_offset == 0
            assert m.manager_ctx == id(t)
            # the capsule holds the Tensor; unconsumed, it lets go of it
            assert sys.getrefcount(t) == r0 + 1
            del m, dl, cap
            gc.collect()
            assert sys.getrefcount(t) == r0

            # consumed: the DLManagedTensor holds the Tensor, past the
            # capsule and past the consumer's last reference to t
            cap = t.__dlpack__(stream=-1)
            m, p = dl_consume(cap)
            del cap
            gc.collect()
            assert sys.getrefcount(t) == r0 + 1
            del t
            gc.collect()
            assert sub.held == 1, "the Tensor went with its export alive"
            daemon.wait_consumer(lambda r: r["held"] == 1, "1 held",
                                 sub_id=sid)
            deleter = m.deleter
            del m
            deleter(p)          # the consumer is done: the buffer goes back
            assert sub.held == 0
            daemon.wait_consumer(lambda r: r["held"] == 0, "none held",
                                 sub_id=sid)
        finally:
            if c is not None:
                c.close()


@pytest.mark.parametrize("out", list(DTYPES))
def test_every_element(make_daemon, out):
    """Each output type: the interfaces' dtype, and every element copied
    to the host after the wait is the pattern, missing slots the fill."""
    es, typestr, (code, bits), _ = DTYPES[out]
    daemon = device_daemon(make_daemon, out)
    want = want_bits(out)
    batches = 2
    with daqiri.connect(daemon.sock) as conn:
        sub, _ = subscribe(daemon, conn)
        assert sub.info["dtype"] == out and sub.info["elem_bytes"] == es
        res = daemon.sim("--batches", batches, "--seed", 3, "--loss", 0.02)
        seen_missing = 0
        for _ in range(batches):
            with next_tensor(sub) as t:
                what = f"{out} batch {t.batch_id}"
                assert t.dtype == out and t.nbytes == PPB * ELEMS * es
                cap = t.__dlpack__()
                m, _ = dl_read(cap)
                dt = m.dl_tensor.dtype
                assert (dt.code, dt.bits, dt.lanes) == (code, bits, 1), what
                assert query(LEGACY) == CUDA_ERROR_NOT_READY, what
                got = bits_of(d2h(m.dl_tensor.data, t.nbytes), out)
                present = t.present
                missing = res.missing.get(t.batch_id, set())
                assert set(np.flatnonzero(~present).tolist()) == missing
                seen_missing += len(missing)
                check_fp16_tensor(got, present, want, what)
                del m, dt, cap
                if typestr is None:
                    with pytest.raises(AttributeError, match="__dlpack__"):
                        t.__cuda_array_interface__
                else:
                    cai = t.__cuda_array_interface__
                    assert cai["typestr"] == typestr, what
                    assert np.dtype(typestr).itemsize == es
                    ck(cudart.cudaStreamSynchronize(LEGACY), "sync")
    assert seen_missing > 0, "the seed should drop some packets"


def test_host_tensor_stays_cpu(make_daemon):
    """On the stand-in too, a host region's tensor is kDLCPU, and has no
    __cuda_array_interface__."""
    daemon = make_daemon().start()
    with daqiri.connect(daemon.sock) as conn:
        sub = conn.subscribe(STREAM)
        daemon.wait_served()
        assert sub.info["mem_kind"] == "host"
        daemon.sim("--batches", 1)
        with next_tensor(sub) as t:
            assert t.device == -1
            assert t.__dlpack_device__() == (KDLCPU, 0)
            with pytest.raises(AttributeError):
                t.__cuda_array_interface__
            assert not hasattr(t, "__cuda_array_interface__")
            cap = t.__dlpack__()
            m, _ = dl_read(cap)
            dl = m.dl_tensor
            assert (dl.device.device_type, dl.device.device_id) == (KDLCPU, 0)
            assert dl.data == t.numpy().ctypes.data
            assert (dl.dtype.code, dl.dtype.bits) == (KDLFLOAT, 16)
            assert query(LEGACY) == CUDA_SUCCESS, "a host export used CUDA"
            check_complete(t.numpy().view(np.uint8).reshape(-1), "fp16",
                           "host tensor")
            del m, dl, cap


def test_transmitter_refuses_device_queue(make_daemon):
    """A tx queue in device memory (its channels' pools are GPU memory,
    which the socket engine stages through host memory): the Python
    Transmitter writes payloads with the CPU, so transmitter() refuses it
    by name, ENOTSUP, without touching CUDA, and the daemon's channel is
    closed again. (C senders use libdaqiri-client: 44-tx-device.sh.)"""
    import errno
    d = make_daemon()
    d.make_config(("    memory_regions:\n",
                   "    memory_regions:\n"
                   "    - name: tx_gpu\n"
                   "      kind: device\n"
                   "      affinity: 0\n"
                   "      num_bufs: 16\n"
                   "      buf_size: 2048\n"),
                  ("\n  # daqirid's own settings",
                   "\n      tx:\n"
                   "        queues:\n"
                   "        - name: tx0\n"
                   "          id: 0\n"
                   "          batch_size: 16\n"
                   "          memory_regions: [tx_gpu]\n"
                   "          destination:\n"
                   "            ipv4_dst: 127.0.0.1\n"
                   "            udp_dst: 9\n"
                   "\n  # daqirid's own settings"))
    d.start()
    with daqiri.connect(d.sock) as conn:
        with pytest.raises(daqiri.Error, match="in device memory .*Python "
                           "Transmitter sends from host memory only") as e:
            conn.transmitter("sensor0/tx0")
        assert e.value.errno == errno.ENOTSUP
        assert query(LEGACY) == CUDA_SUCCESS
    for i in d.ctl("stats")["interfaces"]:
        for q in i.get("tx", {}).get("queues", []):
            assert q["memory"] == "device"
            assert q["channels_open"] == 0 or q["submitted"] == 0
