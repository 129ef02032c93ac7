/* SPDX-License-Identifier: Apache-2.0 */
/*
 * h5_out (h5_out.h): a reorder stream's tensors to HDF5 with libhdf5.
 * Uncompressed tensors go in with H5Dwrite_chunk (one direct chunk write
 * each, no filter pipeline, no copy); compressed ones through H5Dwrite
 * and the shuffle + deflate filters. Descriptors are gathered in memory
 * and written at each flush. Crash safety is HDF5's SWMR mode: the file
 * is created with the latest format, SWMR writing starts before the
 * first tensor, and every H5Fflush leaves a file a reader (h5py with
 * swmr=True, or anything after h5clear -s) opens consistently.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "h5_out.h"

/* The per-tensor 1-D datasets, in the order they are written. */
enum h5_meta {
	H5_META_SEQ,
	H5_META_BATCH_ID,
	H5_META_FLAGS,
	H5_META_FIRST_RX_NS,
	H5_META_PUBLISH_NS,
	H5_META_PACKETS_RECEIVED,
	H5_META_MAX
};

static const char *const h5_meta_names[H5_META_MAX] = {
	"seq", "batch_id", "flags", "first_rx_ns", "publish_ns",
	"packets_received",
};

/* Objects of at least ALIGN_MIN bytes (tensors) start on ALIGN. */
#define H5_OUT_ALIGN_MIN		65536u
#define H5_OUT_ALIGN			4096u

/* Descriptor rows held for the next flush at most, and the presence
 * bytes they may take. */
#define H5_PENDING_PRESENT_BYTES	(16u << 20)

struct h5_out {
	hid_t file, data, present, meta[H5_META_MAX];
	hid_t dtype;			/* the stream's element type */
	hid_t bool_t;			/* enum FALSE/TRUE of int8 */
	char path[PATH_MAX];
	struct h5_out_opts o;
	uint32_t ppb;
	uint64_t elems, tensor_bytes;
	bool swmr;			/* SWMR writing started */
	uint64_t n;			/* tensors in data */
	uint64_t n_meta;		/* descriptors written */
	/* descriptors of tensors n_meta .. n-1, not yet written */
	uint32_t pend, pend_cap;
	uint64_t *pend_meta[H5_META_MAX];
	uint8_t *pend_present;
	uint64_t last_flush_ns;
	int failed;
	char err[PATH_MAX + 256];
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The errno the sec2 driver put in its message, "errno = 28", if any. */
static herr_t
find_errno(unsigned n, const H5E_error2_t *e, void *arg)
{
	const char *s = e->desc != NULL ? strstr(e->desc, "errno = ") : NULL;

	(void)n;
	if (s != NULL && *(int *)arg == 0)
		*(int *)arg = atoi(s + 8);
	return 0;
}

/* Remember a failure of `what`: the errno HDF5's stack holds, else a
 * full file system found by statvfs, else EIO. */
static int
fail(struct h5_out *h, const char *what)
{
	struct statvfs vs;
	char dir[PATH_MAX], *slash;
	int e = 0;

	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_errno, &e);
	H5Eclear2(H5E_DEFAULT);
	if (e == 0) {
		snprintf(dir, sizeof(dir), "%s", h->path);
		slash = strrchr(dir, '/');
		if (slash == NULL)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
		if (statvfs(dir, &vs) == 0 && vs.f_bavail == 0)
			e = ENOSPC;
	}
	if (e == ENOSPC || e == EDQUOT)
		snprintf(h->err, sizeof(h->err), "%s: %s: the disk is full "
		    "(%s)", h->path, what, strerror(e));
	else if (e != 0)
		snprintf(h->err, sizeof(h->err), "%s: %s: %s", h->path, what,
		    strerror(e));
	else
		snprintf(h->err, sizeof(h->err), "%s: %s failed (libhdf5 "
		    "gave no reason)", h->path, what);
	h->failed = -(e != 0 ? e : EIO);
	return h->failed;
}

/* The HDF5 type of a stream's elements. fp16 and bf16 are IEEE-style
 * 16-bit floats built from fp32's description: sign bit 15; fp16 has
 * exponent bits 10..14 (bias 15) and mantissa 0..9, bf16 exponent 7..14
 * (bias 127) and mantissa 0..6. h5py reads fp16 as numpy float16 and
 * bf16 (which numpy lacks) converted exactly to float32. */
static hid_t
elem_type(enum daqiri_dtype d)
{
	hid_t t;
	size_t epos, esize, msize, bias;

	switch (d) {
	case DAQIRI_DTYPE_INT8:		return H5Tcopy(H5T_STD_I8LE);
	case DAQIRI_DTYPE_INT16:	return H5Tcopy(H5T_STD_I16LE);
	case DAQIRI_DTYPE_INT32:	return H5Tcopy(H5T_STD_I32LE);
	case DAQIRI_DTYPE_FP32:		return H5Tcopy(H5T_IEEE_F32LE);
	case DAQIRI_DTYPE_FP64:		return H5Tcopy(H5T_IEEE_F64LE);
	case DAQIRI_DTYPE_FP16:
		epos = 10, esize = 5, msize = 10, bias = 15;
		break;
	case DAQIRI_DTYPE_BF16:
		epos = 7, esize = 8, msize = 7, bias = 127;
		break;
	default:			return H5Tcopy(H5T_STD_U8LE);
	}
	t = H5Tcopy(H5T_IEEE_F32LE);
	if (t < 0 || H5Tset_fields(t, 15, epos, esize, 0, msize) < 0 ||
	    H5Tset_precision(t, 16) < 0 || H5Tset_size(t, 2) < 0 ||
	    H5Tset_ebias(t, bias) < 0) {
		if (t >= 0)
			H5Tclose(t);
		return -1;
	}
	return t;
}

/* A chunked dataset of rank dims growing along its first. */
static hid_t
make_dataset(struct h5_out *h, const char *name, hid_t type, int rank,
	     const hsize_t *inner, hsize_t rows_per_chunk, bool deflate)
{
	hsize_t dims[3] = { 0 }, maxd[3] = { H5S_UNLIMITED }, chunk[3];
	hid_t sp, dcpl, dapl, ds = -1;
	int i;

	chunk[0] = rows_per_chunk;
	for (i = 1; i < rank; i++)
		dims[i] = maxd[i] = chunk[i] = inner[i - 1];
	sp = H5Screate_simple(rank, dims, maxd);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	dapl = H5Pcreate(H5P_DATASET_ACCESS);
	if (sp < 0 || dcpl < 0 || dapl < 0 ||
	    H5Pset_chunk(dcpl, rank, chunk) < 0 ||
	    /* nothing is written for chunks we never write */
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 ||
	    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR) < 0 ||
	    (deflate && (H5Pset_shuffle(dcpl) < 0 ||
	    H5Pset_deflate(dcpl, (unsigned)h->o.deflate) < 0)))
		goto out;
	ds = H5Dcreate2(h->file, name, type, sp, H5P_DEFAULT, dcpl, dapl);
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (dapl >= 0)
		H5Pclose(dapl);
	return ds;
}

int
h5_out_open(const char *path, const struct daqiri_stream_info *in,
	    const struct h5_out_opts *opts, struct h5_out **out, char *err,
	    size_t errlen)
{
	struct h5_out *h;
	hid_t fapl = -1;
	hsize_t inner[2];
	int8_t v;
	int i, r = -EIO;

	*out = NULL;
	/* errors are ours to report, as sentences */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	h->file = h->data = h->present = h->dtype = h->bool_t = -1;
	for (i = 0; i < H5_META_MAX; i++)
		h->meta[i] = -1;
	snprintf(h->path, sizeof(h->path), "%s", path);
	if (opts != NULL)
		h->o = *opts;
	h->ppb = in->ppb;
	h->elems = in->elems_per_slot;
	h->tensor_bytes = in->tensor_bytes;
	if (h->o.deflate > 0 && !H5Zfilter_avail(H5Z_FILTER_DEFLATE)) {
		snprintf(h->err, sizeof(h->err), "--compress: this libhdf5 has "
		    "no deflate filter");
		r = h->failed = -ENOTSUP;
		goto fail;
	}
	if (!h->o.force && access(path, F_OK) == 0) {
		snprintf(h->err, sizeof(h->err), "%s exists: add --force to "
		    "replace it", path);
		r = h->failed = -EEXIST;
		goto fail;
	}
	fapl = H5Pcreate(H5P_FILE_ACCESS);
	/* SWMR needs the latest file format */
	if (fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST,
	    H5F_LIBVER_LATEST) < 0 ||
	    /* chunks on page boundaries: whole-page writes, no partial
	     * page shared with metadata */
	    H5Pset_alignment(fapl, H5_OUT_ALIGN_MIN, H5_OUT_ALIGN) < 0) {
		r = fail(h, "file access properties");
		goto fail;
	}
	h->file = H5Fcreate(path, h->o.force ? H5F_ACC_TRUNC : H5F_ACC_EXCL,
	    H5P_DEFAULT, fapl);
	if (h->file < 0) {
		r = fail(h, "creating the file");
		goto fail;
	}
	h->dtype = elem_type((enum daqiri_dtype)in->dtype);
	h->bool_t = H5Tenum_create(H5T_NATIVE_INT8);
	v = 0;
	if (h->dtype < 0 || h->bool_t < 0 ||
	    H5Tenum_insert(h->bool_t, "FALSE", &v) < 0 ||
	    (v = 1, H5Tenum_insert(h->bool_t, "TRUE", &v) < 0)) {
		r = fail(h, "making its types");
		goto fail;
	}
	inner[0] = in->ppb;
	inner[1] = in->elems_per_slot;
	h->data = make_dataset(h, "data", h->dtype, 3, inner, 1,
	    h->o.deflate > 0);
	h->pend_cap = H5_OUT_META_CHUNK;
	if ((uint64_t)h->pend_cap * in->ppb > H5_PENDING_PRESENT_BYTES)
		h->pend_cap = H5_PENDING_PRESENT_BYTES / in->ppb > 0 ?
		    H5_PENDING_PRESENT_BYTES / in->ppb : 1;
	h->present = make_dataset(h, "present", h->bool_t, 2, inner,
	    h->pend_cap, false);
	for (i = 0; i < H5_META_MAX; i++)
		h->meta[i] = make_dataset(h, h5_meta_names[i],
		    i == H5_META_FLAGS || i == H5_META_PACKETS_RECEIVED ?
		    H5T_STD_U32LE : H5T_STD_U64LE, 1, NULL,
		    H5_OUT_META_CHUNK, false);
	if (h->data < 0 || h->present < 0) {
		r = fail(h, "creating its datasets");
		goto fail;
	}
	for (i = 0; i < H5_META_MAX; i++) {
		if (h->meta[i] < 0) {
			r = fail(h, "creating its datasets");
			goto fail;
		}
		h->pend_meta[i] = calloc(h->pend_cap, sizeof(uint64_t));
		if (h->pend_meta[i] == NULL)
			goto nomem;
	}
	h->pend_present = malloc((size_t)h->pend_cap * in->ppb);
	if (h->pend_present == NULL)
		goto nomem;
	H5Pclose(fapl);
	h->last_flush_ns = mono_ns();
	*out = h;
	return 0;
nomem:
	snprintf(h->err, sizeof(h->err), "%s: out of memory", path);
	r = h->failed = -ENOMEM;
fail:
	if (fapl >= 0)
		H5Pclose(fapl);
	snprintf(err, errlen, "%s", h->err);
	h5_out_close(h, NULL, 0);
	/* a file we created and could not set up is no recording */
	if (r != -EEXIST)
		unlink(path);
	return r;
}

static int
attr_write(struct h5_out *h, const char *name, hid_t type, const void *v)
{
	hid_t sp, a;
	herr_t e;

	if (h->failed != 0)
		return h->failed;
	if (h->swmr) {
		snprintf(h->err, sizeof(h->err), "%s: attribute %s after the "
		    "first tensor", h->path, name);
		return h->failed = -EINVAL;
	}
	sp = H5Screate(H5S_SCALAR);
	if (H5Aexists(h->file, name) > 0)
		H5Adelete(h->file, name);
	a = H5Acreate2(h->file, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
	e = a < 0 ? -1 : H5Awrite(a, type, v);
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(sp);
	return e < 0 ? fail(h, "writing an attribute") : 0;
}

int
h5_out_attr_str(struct h5_out *h, const char *name, const char *value)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	int r;

	/* variable-length UTF-8: h5py gives a str */
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	r = attr_write(h, name, t, &value);
	H5Tclose(t);
	return r;
}

int
h5_out_attr_u64(struct h5_out *h, const char *name, uint64_t value)
{
	return attr_write(h, name, H5T_NATIVE_UINT64, &value);
}

/* Rows [first, first + k) of a dataset growing along its first
 * dimension, from buf in memory type mt. */
static int
append_rows(struct h5_out *h, hid_t ds, hid_t mt, uint64_t first, hsize_t k,
	    const void *buf, int rank)
{
	hsize_t dims[3], start[3] = { first, 0, 0 }, count[3];
	hid_t fs = -1, ms = -1;
	int r = -1;

	if (H5Sget_simple_extent_dims(fs = H5Dget_space(ds), dims, NULL) < 0)
		goto out;
	H5Sclose(fs);
	fs = -1;
	dims[0] = first + k;
	memcpy(count, dims, sizeof(count));
	count[0] = k;
	if (H5Dset_extent(ds, dims) < 0 || (fs = H5Dget_space(ds)) < 0 ||
	    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count,
	    NULL) < 0 || (ms = H5Screate_simple(rank, count, NULL)) < 0 ||
	    H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, buf) < 0)
		goto out;
	r = 0;
out:
	if (fs >= 0)
		H5Sclose(fs);
	if (ms >= 0)
		H5Sclose(ms);
	return r;
}

/* The gathered descriptors into their datasets, then everything to the
 * file: a reader now sees every tensor so far. */
int
h5_out_flush(struct h5_out *h)
{
	uint32_t vals[H5_OUT_META_CHUNK];
	int i;
	uint32_t k;

	if (h->failed != 0)
		return h->failed;
	if (h->pend > 0) {
		if (append_rows(h, h->present, h->bool_t, h->n_meta, h->pend,
		    h->pend_present, 2) < 0)
			return fail(h, "writing present");
		for (i = 0; i < H5_META_MAX; i++) {
			const void *buf = h->pend_meta[i];
			hid_t mt = H5T_NATIVE_UINT64;

			if (i == H5_META_FLAGS || i == H5_META_PACKETS_RECEIVED) {
				for (k = 0; k < h->pend; k++)
					vals[k] = (uint32_t)h->pend_meta[i][k];
				buf = vals;
				mt = H5T_NATIVE_UINT32;
			}
			if (append_rows(h, h->meta[i], mt, h->n_meta, h->pend,
			    buf, 1) < 0)
				return fail(h, "writing the descriptors");
		}
		h->n_meta += h->pend;
		h->pend = 0;
	}
	if (H5Fflush(h->file, H5F_SCOPE_LOCAL) < 0)
		return fail(h, "flushing");
	h->last_flush_ns = mono_ns();
	return 0;
}

int
h5_out_write(struct h5_out *h, const struct daqiri_tensor *t,
	     const uint8_t *data)
{
	hsize_t dims[3] = { h->n + 1, h->ppb, h->elems };
	hsize_t off[3] = { h->n, 0, 0 };
	uint64_t s;
	uint8_t *pr;

	if (h->failed != 0)
		return h->failed;
	if (!h->swmr) {
		/* attributes done: from here on readers may look */
		if (H5Fstart_swmr_write(h->file) < 0)
			return fail(h, "starting SWMR writing");
		h->swmr = true;
	}
	if (H5Dset_extent(h->data, dims) < 0)
		return fail(h, "growing data");
	if (h->o.deflate == 0) {
		if (H5Dwrite_chunk(h->data, H5P_DEFAULT, 0, off,
		    (size_t)h->tensor_bytes, data) < 0)
			return fail(h, "writing data");
	} else if (append_rows(h, h->data, h->dtype, h->n, 1, data, 3) < 0) {
		return fail(h, "writing data");
	}
	h->n++;
	pr = h->pend_present + (size_t)h->pend * h->ppb;
	for (s = 0; s < h->ppb; s++)
		pr[s] = s < t->bitmap_bits &&
		    ((t->bitmap[s / 64] >> (s % 64)) & 1);
	h->pend_meta[H5_META_SEQ][h->pend] = t->seq;
	h->pend_meta[H5_META_BATCH_ID][h->pend] = t->batch_id;
	h->pend_meta[H5_META_FLAGS][h->pend] = t->flags;
	h->pend_meta[H5_META_FIRST_RX_NS][h->pend] = t->first_rx_ns;
	h->pend_meta[H5_META_PUBLISH_NS][h->pend] = t->publish_ns;
	h->pend_meta[H5_META_PACKETS_RECEIVED][h->pend] = t->packets_received;
	h->pend++;
	if (h->pend == h->pend_cap || h->o.flush_ns == 0 ||
	    mono_ns() - h->last_flush_ns >= h->o.flush_ns)
		return h5_out_flush(h);
	return 0;
}

const char *
h5_out_error(const struct h5_out *h)
{
	return h->failed != 0 ? h->err : "";
}

uint64_t
h5_out_tensors(const struct h5_out *h)
{
	return h->n;
}

uint64_t
h5_out_bytes(const struct h5_out *h)
{
	return h->n * h->tensor_bytes;
}

int
h5_out_close(struct h5_out *h, char *err, size_t errlen)
{
	int i, r;

	if (h == NULL)
		return 0;
	if (h->failed == 0 && h->file >= 0)
		h5_out_flush(h);
	for (i = 0; i < H5_META_MAX; i++) {
		if (h->meta[i] >= 0)
			H5Dclose(h->meta[i]);
		free(h->pend_meta[i]);
	}
	if (h->present >= 0)
		H5Dclose(h->present);
	if (h->data >= 0)
		H5Dclose(h->data);
	if (h->dtype >= 0)
		H5Tclose(h->dtype);
	if (h->bool_t >= 0)
		H5Tclose(h->bool_t);
	if (h->file >= 0 && H5Fclose(h->file) < 0 && h->failed == 0)
		fail(h, "closing");
	free(h->pend_present);
	r = h->failed;
	if (r < 0 && err != NULL)
		snprintf(err, errlen, "%s", h->err);
	free(h);
	return r;
}
