/* SPDX-License-Identifier: Apache-2.0 */
/*
 * h5_out: write the tensors of a reorder stream to one HDF5 file, one
 * chunk per tensor, beside them which slots arrived and each tensor's
 * descriptor. The file is written in HDF5's SWMR mode, flushed after
 * every tensor (or every flush interval), so a writer killed at any
 * instant leaves a file that reads up to the last flushed tensor.
 * Used by daqiri-record; single-threaded; prints nothing.
 *
 * The file (see daqiri-record(1) "HDF5 FILE"):
 *   /data          (n, ppb, elems) in the stream's dtype, chunk (1, ppb, elems)
 *   /present       (n, ppb) enum {FALSE, TRUE} of int8: numpy bool in h5py
 *   /seq /batch_id /flags /first_rx_ns /publish_ns /packets_received  (n,)
 *   attributes of / : the stream's geometry and origin (h5_out_attr_*).
 * n, the number of tensors, is the shortest of these datasets' lengths:
 * after a crash the last tensor's descriptor may lag its data.
 */
#ifndef DAQIRI_H5_OUT_H
#define DAQIRI_H5_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daqiri_client.h"

/* Descriptor rows per chunk of the 1-D datasets (and of present). */
#define H5_OUT_META_CHUNK	256u
/* --compress: deflate levels accepted. */
#define H5_OUT_DEFLATE_MAX	9

struct h5_out;

struct h5_out_opts {
	bool force;		/* replace an existing file; else -EEXIST */
	int deflate;		/* 0 = none (direct chunk writes); 1..9 =
				 * shuffle + deflate at that level */
	/* Flush (make readable after a crash) after every tensor when 0,
	 * else when this long passed since the last flush. */
	uint64_t flush_ns;
};

/*
 * Create path for tensors of the stream in (a reorder stream: dtype
 * raw bytes are stored as uint8). Attributes are added with
 * h5_out_attr_*() until the first h5_out_write(), which starts SWMR
 * writing (no attribute can be added after). Returns 0 with *out, or a
 * negative errno (-EEXIST without force, -ENOTSUP no deflate in this
 * libhdf5, -EIO); err (errlen) says why, naming the file.
 */
int h5_out_open(const char *path, const struct daqiri_stream_info *in,
		const struct h5_out_opts *opts, struct h5_out **out,
		char *err, size_t errlen);

/* A scalar attribute of the root group: text / unsigned 64-bit. 0 or a
 * negative errno (h5_out_error()). */
int h5_out_attr_str(struct h5_out *h, const char *name, const char *value);
int h5_out_attr_u64(struct h5_out *h, const char *name, uint64_t value);

/*
 * Append one tensor: data (t->bytes host bytes: tool_host_view()) as a
 * new chunk, its presence bits and its descriptor. Flushes when the
 * flush interval says so. 0, or a negative errno (-ENOSPC: the disk is
 * full) with h5_out_error(); after a failure nothing more is written.
 */
int h5_out_write(struct h5_out *h, const struct daqiri_tensor *t,
		 const uint8_t *data);

/* Make everything written so far durable for readers now. */
int h5_out_flush(struct h5_out *h);

/* The sentence for the last failure ("" if none). */
const char *h5_out_error(const struct h5_out *h);

/* Tensors and bytes (of data, as written) so far. */
uint64_t h5_out_tensors(const struct h5_out *h);
uint64_t h5_out_bytes(const struct h5_out *h);

/* Flush, close and free. NULL-safe. 0, or a negative errno with the
 * sentence in err (when not NULL). */
int h5_out_close(struct h5_out *h, char *err, size_t errlen);

#endif
