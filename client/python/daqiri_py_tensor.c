/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daqiri module's Tensor: one received tensor, its attributes, its
 * release, and its zero-copy views: the buffer protocol (memoryview,
 * numpy()), DLPack (__dlpack__ / __dlpack_device__: kDLCPU for host
 * memory, kDLCUDA for device tensors, whose consumer stream is made to
 * wait on the tensor's interprocess CUDA event) and, for device tensors,
 * __cuda_array_interface__ v3. Every view holds the Tensor; the buffer
 * goes back to the daemon at release() or with the Tensor's last
 * reference (daqiri_py.c's top comment has the whole lifetime rule).
 */
#include "daqiri_py.h"

#include <dlpack/dlpack.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define DLTENSOR_NAME	"dltensor"

static PyObject *numpy_mod;		/* imported on first use */

static PyObject *
import_numpy(void)
{
	if (numpy_mod == NULL)
		numpy_mod = PyImport_ImportModule("numpy");
	return numpy_mod;
}

/* ---- Tensor */

PyObject *
tensor_new(SubObject *s, const struct daqiri_tensor *t)
{
	TensorObject *o;

	/* Counted before the allocation, which may run a finalizer that
	 * closes the subscription: it then stays mapped for this one. */
	s->live_tensors++;
	o = PyObject_New(TensorObject, &TensorType);
	if (o == NULL) {
		/* Nobody can hold it: give it back at once. */
		conn_lock(s->conn);
		if (s->sub != NULL)
			daqiri_release(s->sub, t);
		conn_unlock(s->conn);
		s->live_tensors--;
		if (s->closing && s->live_tensors == 0)
			sub_teardown(s);
		return NULL;
	}
	Py_INCREF(s);
	o->sub = s;
	o->t = *t;
	o->released = false;
	o->shape[0] = (Py_ssize_t)t->shape[0];
	o->shape[1] = (Py_ssize_t)t->shape[1];
	o->strides[1] = t->elem_bytes;
	o->strides[0] = (Py_ssize_t)t->slot_bytes;
	s->held++;
	return (PyObject *)o;
}

/* Give the buffer back: 0, or -1 with an exception. */
static int
tensor_release_buf(TensorObject *o)
{
	SubObject *s = o->sub;
	int r;

	if (o->released) {
		raise_errno(EINVAL, "the tensor was already released");
		return -1;
	}
	o->released = true;
	s->held--;
	if (conn_foreign(s->conn))
		return 0;	/* the parent's buffer: not ours to give */
	conn_lock(s->conn);
	r = daqiri_release(s->sub, &o->t);
	conn_unlock(s->conn);
	if (r < 0) {
		raise_errno(r, "the daemon's ring refused the release");
		return -1;
	}
	return 0;
}

static void
tensor_dealloc(TensorObject *o)
{
	SubObject *s = o->sub;

	if (!o->released) {
		PyObject *et, *ev, *tb;

		PyErr_Fetch(&et, &ev, &tb);
		if (tensor_release_buf(o) < 0)
			PyErr_WriteUnraisable((PyObject *)o);
		PyErr_Restore(et, ev, tb);
	}
	s->live_tensors--;
	if (s->closing && s->live_tensors == 0)
		sub_teardown(s);
	PyObject_Free(o);
	Py_DECREF(s);
}

static int
tensor_check(TensorObject *o)
{
	if (o->released) {
		raise_errno(EINVAL, "the tensor was released");
		return -1;
	}
	return 0;
}

static PyObject *
tensor_release(TensorObject *o, PyObject *unused)
{
	if (!o->released && conn_foreign(o->sub->conn)) {
		conn_check(o->sub->conn);	/* raises */
		return NULL;
	}
	if (tensor_release_buf(o) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
tensor_enter(TensorObject *o, PyObject *unused)
{
	if (tensor_check(o) < 0)
		return NULL;
	Py_INCREF(o);
	return (PyObject *)o;
}

static PyObject *
tensor_exit(TensorObject *o, PyObject *args)
{
	if (!o->released && tensor_release_buf(o) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* The buffer-protocol format of a dtype; NULL: none. */
static const char *
dtype_format(enum daqiri_dtype t)
{
	switch (t) {
	case DAQIRI_DTYPE_RAW:		return "B";
	case DAQIRI_DTYPE_INT8:		return "b";
	case DAQIRI_DTYPE_INT16:	return "h";
	case DAQIRI_DTYPE_INT32:	return "i";
	case DAQIRI_DTYPE_FP16:		return "e";
	case DAQIRI_DTYPE_FP32:		return "f";
	case DAQIRI_DTYPE_FP64:		return "d";
	default:			return NULL;
	}
}

/* Why a tensor has no host view: 0 it has one, -1 with TypeError. */
static int
tensor_check_host_view(TensorObject *o, const char *what)
{
	if (o->t.device >= 0) {
		PyErr_Format(PyExc_TypeError, "%s: a device tensor (GPU %d) "
		    "has no host view; use torch.from_dlpack() or "
		    "cupy.from_dlpack()", what, o->t.device);
		return -1;
	}
	if (dtype_format(o->t.dtype) == NULL) {
		PyErr_Format(PyExc_TypeError, "%s: NumPy has no %s dtype; use "
		    "torch.from_dlpack() (DLPack carries it)", what,
		    o->t.dtype_name);
		return -1;
	}
	return 0;
}

static int
tensor_getbuffer(TensorObject *o, Py_buffer *v, int flags)
{
	if (tensor_check(o) < 0 || tensor_check_host_view(o, "buffer") < 0)
		return -1;
	if (flags & PyBUF_WRITABLE) {
		PyErr_SetString(PyExc_BufferError, "a daqiri tensor is read-only");
		return -1;
	}
	v->buf = (void *)o->t.data;
	v->obj = (PyObject *)o;
	Py_INCREF(o);
	v->len = (Py_ssize_t)o->t.bytes;
	v->readonly = 1;
	v->itemsize = o->t.elem_bytes;
	v->format = (flags & PyBUF_FORMAT) ? (char *)dtype_format(o->t.dtype) :
	    NULL;
	v->ndim = 2;
	v->shape = (flags & PyBUF_ND) ? o->shape : NULL;
	v->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? o->strides :
	    NULL;
	v->suboffsets = NULL;
	v->internal = NULL;
	return 0;
}

static PyBufferProcs tensor_as_buffer = {
	(getbufferproc)tensor_getbuffer, NULL
};

static PyObject *
tensor_numpy(TensorObject *o, PyObject *unused)
{
	PyObject *np, *mv, *a;

	if (tensor_check(o) < 0 || tensor_check_host_view(o, "numpy()") < 0)
		return NULL;
	if ((np = import_numpy()) == NULL)
		return NULL;
	if ((mv = PyMemoryView_FromObject((PyObject *)o)) == NULL)
		return NULL;
	a = PyObject_CallMethod(np, "asarray", "O", mv);
	Py_DECREF(mv);
	return a;
}

/* A copy of bytes bytes at p as a read-only ndarray of dtype. */
static PyObject *
small_array(const void *p, size_t bytes, const char *dtype)
{
	PyObject *np = import_numpy(), *b, *a;

	if (np == NULL)
		return NULL;
	if ((b = PyBytes_FromStringAndSize(p, (Py_ssize_t)bytes)) == NULL)
		return NULL;
	a = PyObject_CallMethod(np, "frombuffer", "Os", b, dtype);
	Py_DECREF(b);
	return a;
}

static PyObject *
tensor_get_present(TensorObject *o, void *unused)
{
	uint32_t n = o->t.bitmap_bits, i;
	uint8_t *m;
	PyObject *a;

	if (tensor_check(o) < 0)
		return NULL;
	if ((m = malloc(n > 0 ? n : 1)) == NULL)
		return PyErr_NoMemory();
	for (i = 0; i < n; i++)
		m[i] = (o->t.bitmap[i / 64] >> (i % 64)) & 1;
	a = small_array(m, n, "bool");
	free(m);
	return a;
}

static PyObject *
tensor_get_lengths(TensorObject *o, void *unused)
{
	if (tensor_check(o) < 0)
		return NULL;
	if (o->t.lengths == NULL)
		Py_RETURN_NONE;
	return small_array(o->t.lengths, (size_t)o->t.shape[0] * 4, "uint32");
}

static PyObject *
tensor_get_rx_ns(TensorObject *o, void *unused)
{
	if (tensor_check(o) < 0)
		return NULL;
	if (o->t.rx_ns == NULL)
		Py_RETURN_NONE;
	return small_array(o->t.rx_ns, (size_t)o->t.shape[0] * 8, "uint64");
}

/* ---- DLPack and the CUDA array interface */

static bool
dl_dtype(enum daqiri_dtype t, DLDataType *out)
{
	out->lanes = 1;
	switch (t) {
	case DAQIRI_DTYPE_RAW:  out->code = kDLUInt;  out->bits = 8;  break;
	case DAQIRI_DTYPE_INT8: out->code = kDLInt;   out->bits = 8;  break;
	case DAQIRI_DTYPE_INT16: out->code = kDLInt;  out->bits = 16; break;
	case DAQIRI_DTYPE_INT32: out->code = kDLInt;  out->bits = 32; break;
	case DAQIRI_DTYPE_FP16: out->code = kDLFloat; out->bits = 16; break;
	case DAQIRI_DTYPE_BF16: out->code = kDLBfloat; out->bits = 16; break;
	case DAQIRI_DTYPE_FP32: out->code = kDLFloat; out->bits = 32; break;
	case DAQIRI_DTYPE_FP64: out->code = kDLFloat; out->bits = 64; break;
	default:
		return false;
	}
	return true;
}

/* A DLManagedTensor with the room for its shape. */
struct dl_export {
	DLManagedTensor m;
	int64_t shape[2];
};

/* Called by whoever consumed the capsule, on any thread, maybe without
 * the GIL (torch frees from its own threads). */
static void
dl_deleter(DLManagedTensor *m)
{
	if (m == NULL)
		return;
	if (Py_IsInitialized()) {
		PyGILState_STATE g = PyGILState_Ensure();

		Py_XDECREF((PyObject *)m->manager_ctx);
		PyGILState_Release(g);
	}
	free(m);
}

/* A capsule nobody consumed (still named "dltensor") frees its tensor. */
static void
dl_capsule_destructor(PyObject *cap)
{
	DLManagedTensor *m;

	if (!PyCapsule_IsValid(cap, DLTENSOR_NAME))
		return;			/* consumed: renamed used_dltensor */
	m = PyCapsule_GetPointer(cap, DLTENSOR_NAME);
	if (m != NULL && m->deleter != NULL)
		m->deleter(m);
}

#ifdef DAQIRI_HAVE_CUDA
/* Make stream (the array API's integer) wait on the tensor's event on
 * the GPU, without a CPU wait. 0, or -1 with an exception. */
static int
cuda_stream_wait(TensorObject *o, PyObject *stream_obj)
{
	cudaStream_t st = cudaStreamLegacy;
	cudaError_t e = cudaSuccess;
	int prev = -1;

	if (stream_obj != Py_None) {
		long long v = PyLong_AsLongLong(stream_obj);

		if (v == -1 && PyErr_Occurred())
			return -1;
		if (v == -1)
			return 0;	/* the consumer syncs itself */
		if (v == 0 || v < -1) {
			PyErr_SetString(PyExc_ValueError, "stream: 0 and values "
			    "below -1 are not streams (None or 1: legacy "
			    "default, 2: per-thread default, -1: no sync)");
			return -1;
		}
		st = v == 1 ? cudaStreamLegacy : v == 2 ? cudaStreamPerThread :
		    (cudaStream_t)(uintptr_t)v;
	}
	if (o->t.event == NULL)
		return 0;
	Py_BEGIN_ALLOW_THREADS
	if (cudaGetDevice(&prev) != cudaSuccess)
		prev = -1;
	if ((e = cudaSetDevice(o->t.device)) == cudaSuccess)
		e = cudaStreamWaitEvent(st, (cudaEvent_t)o->t.event, 0);
	if (prev >= 0 && prev != o->t.device)
		cudaSetDevice(prev);
	Py_END_ALLOW_THREADS
	if (e != cudaSuccess) {
		char msg[256];

		snprintf(msg, sizeof(msg), "CUDA: cannot make the stream wait "
		    "on the tensor's event: %s", cudaGetErrorString(e));
		cudaGetLastError();
		raise_errno(EIO, msg);
		return -1;
	}
	return 0;
}
#else
static int
cuda_stream_wait(TensorObject *o, PyObject *stream_obj)
{
	if (o->t.device >= 0) {
		raise_errno(ENOTSUP, "this daqiri module was built without CUDA");
		return -1;
	}
	return 0;
}
#endif

static PyObject *
tensor_dlpack(TensorObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "stream", NULL };
	PyObject *stream = Py_None, *cap;
	struct dl_export *x;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:__dlpack__", kwlist,
	    &stream))
		return NULL;
	if (tensor_check(o) < 0)
		return NULL;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return PyErr_NoMemory();
	if (!dl_dtype(o->t.dtype, &x->m.dl_tensor.dtype)) {
		free(x);
		PyErr_Format(PyExc_TypeError, "DLPack has no %s dtype",
		    o->t.dtype_name);
		return NULL;
	}
	if (o->t.device >= 0 && cuda_stream_wait(o, stream) < 0) {
		free(x);
		return NULL;
	}
	x->shape[0] = (int64_t)o->t.shape[0];
	x->shape[1] = (int64_t)o->t.shape[1];
	x->m.dl_tensor.data = (void *)o->t.data;
	x->m.dl_tensor.device.device_type = o->t.device >= 0 ? kDLCUDA : kDLCPU;
	x->m.dl_tensor.device.device_id = o->t.device >= 0 ? o->t.device : 0;
	x->m.dl_tensor.ndim = 2;
	x->m.dl_tensor.shape = x->shape;
	x->m.dl_tensor.strides = NULL;		/* compact, row-major */
	x->m.dl_tensor.byte_offset = 0;
	x->m.manager_ctx = o;
	x->m.deleter = dl_deleter;
	Py_INCREF(o);
	cap = PyCapsule_New(&x->m, DLTENSOR_NAME, dl_capsule_destructor);
	if (cap == NULL) {
		Py_DECREF(o);
		free(x);
	}
	return cap;
}

static PyObject *
tensor_dlpack_device(TensorObject *o, PyObject *unused)
{
	if (o->t.device >= 0)
		return Py_BuildValue("(ii)", (int)kDLCUDA, o->t.device);
	return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

static const char *
cai_typestr(enum daqiri_dtype t)
{
	switch (t) {
	case DAQIRI_DTYPE_RAW:		return "|u1";
	case DAQIRI_DTYPE_INT8:		return "|i1";
	case DAQIRI_DTYPE_INT16:	return "<i2";
	case DAQIRI_DTYPE_INT32:	return "<i4";
	case DAQIRI_DTYPE_FP16:		return "<f2";
	case DAQIRI_DTYPE_FP32:		return "<f4";
	case DAQIRI_DTYPE_FP64:		return "<f8";
	default:			return NULL;
	}
}

static PyObject *
tensor_get_cai(TensorObject *o, void *unused)
{
	const char *ts = cai_typestr(o->t.dtype);

	if (o->t.device < 0) {
		PyErr_SetString(PyExc_AttributeError, "__cuda_array_interface__: "
		    "a host tensor (use numpy() or __dlpack__)");
		return NULL;
	}
	if (ts == NULL) {
		PyErr_Format(PyExc_AttributeError, "__cuda_array_interface__ "
		    "has no typestr for %s; use __dlpack__", o->t.dtype_name);
		return NULL;
	}
	if (tensor_check(o) < 0 || cuda_stream_wait(o, Py_None) < 0)
		return NULL;
	/* The legacy default stream now waits on the event: say so. */
	return Py_BuildValue("{s:(KK),s:s,s:(KO),s:i,s:O,s:i}",
	    "shape", (unsigned long long)o->t.shape[0],
	    (unsigned long long)o->t.shape[1],
	    "typestr", ts,
	    "data", (unsigned long long)(uintptr_t)o->t.data, Py_True,
	    "version", 3,
	    "strides", Py_None,
	    "stream", 1);
}

#define TENSOR_U64(name, field)						\
	static PyObject *						\
	tensor_get_##name(TensorObject *o, void *unused)		\
	{								\
		return PyLong_FromUnsignedLongLong(			\
		    (unsigned long long)o->t.field);			\
	}
TENSOR_U64(seq, seq)
TENSOR_U64(batch_id, batch_id)
TENSOR_U64(flags, flags)
TENSOR_U64(packets_expected, packets_expected)
TENSOR_U64(packets_received, packets_received)
TENSOR_U64(first_rx_ns, first_rx_ns)
TENSOR_U64(last_rx_ns, last_rx_ns)
TENSOR_U64(publish_ns, publish_ns)
TENSOR_U64(buf_index, buf_index)
TENSOR_U64(nbytes, bytes)
TENSOR_U64(instance, instance)

static PyObject *
tensor_get_complete(TensorObject *o, void *unused)
{
	return PyBool_FromLong(o->t.flags & DAQIRI_TENSOR_COMPLETE);
}

static PyObject *
tensor_get_released(TensorObject *o, void *unused)
{
	return PyBool_FromLong(o->released);
}

static PyObject *
tensor_get_dtype(TensorObject *o, void *unused)
{
	return PyUnicode_FromString(o->t.dtype_name);
}

static PyObject *
tensor_get_shape(TensorObject *o, void *unused)
{
	return Py_BuildValue("(KK)", (unsigned long long)o->t.shape[0],
	    (unsigned long long)o->t.shape[1]);
}

static PyObject *
tensor_get_device(TensorObject *o, void *unused)
{
	return PyLong_FromLong(o->t.device);
}

static PyObject *
tensor_repr(TensorObject *o)
{
	return PyUnicode_FromFormat("<daqiri.Tensor seq=%llu %s (%llu, %llu) "
	    "%s %u/%u packets%s>", (unsigned long long)o->t.seq,
	    o->t.dtype_name, (unsigned long long)o->t.shape[0],
	    (unsigned long long)o->t.shape[1],
	    o->t.device >= 0 ? "device" : "host", o->t.packets_received,
	    o->t.packets_expected, o->released ? " released" : "");
}

static PyMethodDef tensor_methods[] = {
	{ "numpy", (PyCFunction)tensor_numpy, METH_NOARGS,
	  "numpy() -> read-only ndarray viewing the tensor (host memory)" },
	{ "release", (PyCFunction)tensor_release, METH_NOARGS,
	  "release(): give the buffer back to the daemon now" },
	{ "__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__(stream=None) -> DLPack capsule" },
	{ "__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS,
	  "__dlpack_device__() -> (device type, ordinal)" },
	{ "__enter__", (PyCFunction)tensor_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)tensor_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

#define GET(name, doc) \
	{ #name, (getter)tensor_get_##name, NULL, doc, NULL }
static PyGetSetDef tensor_getset[] = {
	GET(seq, "stream sequence number (never wraps)"),
	GET(batch_id, "batch id from the packets"),
	GET(flags, "daqiri.COMPLETE | TIMEOUT | EVICTED | HAS_GAPS | ..."),
	GET(complete, "every slot arrived"),
	GET(packets_expected, "slots of the tensor"),
	GET(packets_received, "slots that arrived"),
	GET(first_rx_ns, "CLOCK_MONOTONIC of the first packet"),
	GET(last_rx_ns, "CLOCK_MONOTONIC of the last packet"),
	GET(publish_ns, "CLOCK_MONOTONIC when the daemon published it"),
	GET(buf_index, "the stream's buffer index"),
	GET(nbytes, "bytes of the tensor"),
	GET(instance, "the generation of the daemon that published it"),
	GET(released, "release() was called"),
	GET(dtype, "element type name (fp16, fp32, ...)"),
	GET(shape, "(slots, elements per slot)"),
	GET(device, "-1 host memory, else GPU ordinal"),
	GET(present, "bool ndarray (slots,): which slots arrived (a copy)"),
	GET(lengths, "uint32 ndarray of packet lengths (raw streams), else None"),
	GET(rx_ns, "uint64 ndarray of packet receive times, CLOCK_MONOTONIC "
	    "(raw streams), else None"),
	{ "__cuda_array_interface__", (getter)tensor_get_cai, NULL,
	  "CUDA array interface v3 (device tensors)", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};
#undef GET

PyTypeObject TensorType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "daqiri.Tensor",
	.tp_doc = "One received tensor (Subscription.next())",
	.tp_basicsize = sizeof(TensorObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)tensor_dealloc,
	.tp_repr = (reprfunc)tensor_repr,
	.tp_as_buffer = &tensor_as_buffer,
	.tp_methods = tensor_methods,
	.tp_getset = tensor_getset,
};
