/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The schema walk's rx.reorder_configs[] section: one reorder config's
 * keys, its method's bit fields, data_types and the keys that say how a
 * batch is finished, into struct cfg_reorder with every default filled
 * in. cfg_parse.c calls it from rx, after the queues and flows it names;
 * the checks that span sections (region, geometry) are cfg_check.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

static const struct keydef reorder_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "reorder_type", KEY_OK, NULL },
	{ "memory_region", KEY_OK, NULL },
	{ "payload_byte_offset", KEY_OK, NULL },
	{ "payload_bytes", KEY_OWN, "derived from the queue's buffers when "
	  "absent" },
	{ "flow_ids", KEY_OK, NULL },
	{ "method", KEY_OK, NULL },
	{ "data_types", KEY_OK, NULL },
	{ "window", KEY_OWN, "batches open at once" },
	{ "fill", KEY_OWN, "what missing slots hold" },
	{ "timeout_us", KEY_OWN, "the batch's deadline (the reference takes "
	  "the rx queue's timeout_us)" },
	{ "resync_after_us", KEY_OWN, "when late packets mean a sender "
	  "restarted" },
	{ "reorder_engine", KEY_OK, NULL },
	{ "cyclic_sequence", KEY_DIFFERS, "changes nothing: batch ids wrap at "
	  "the field's width and compare as serial numbers; a sequence that "
	  "restarts before its field is full is taken for late packets, then "
	  "a resync (give bit_width as the bits that cycle)" },
	{ "missing_action", KEY_DIFFERS, "drop drops every batch that ends "
	  "incomplete (deadline, pushed out by newer ones, resync, stop), not "
	  "only those whose deadline passed" },
};

static const struct keydef method_keys[] = {
	{ "seq_batch_number", KEY_OK, NULL },
	{ "seq_packets_per_batch", KEY_OK, NULL },
};

static const struct keydef sbn_keys[] = {
	{ "sequence_number", KEY_OK, NULL },
	{ "batch_number", KEY_OK, NULL },
};

static const struct keydef sppb_keys[] = {
	{ "sequence_number", KEY_OK, NULL },
	{ "packets_per_batch", KEY_OK, NULL },
};

static const struct keydef bitfield_keys[] = {
	{ "bit_offset", KEY_OK, NULL },
	{ "bit_width", KEY_OK, NULL },
};

/* input/output/input_endianness are the reference library's aliases. */
static const struct keydef dtypes_keys[] = {
	{ "input_type", KEY_OK, NULL },
	{ "output_type", KEY_OK, NULL },
	{ "endianness", KEY_OK, NULL },
	{ "input", KEY_OK, NULL },
	{ "output", KEY_OK, NULL },
	{ "input_endianness", KEY_OK, NULL },
};

/* Input and output element types the reorder stage converts. */
static const char *const input_type_names[] = {
	"int4", "int8", "int16", "int32",
};
static const enum daqiri_dtype input_types[] = {
	DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32,
};
static const char *const output_type_names[] = {
	"fp16", "bf16", "fp32", "fp64", "int32", "int8",
};
static const enum daqiri_dtype output_types[] = {
	DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32, DAQIRI_DTYPE_FP64,
	DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT8,
};

static bool
parse_bitfield(struct pctx *x, const char *key, yaml_node_t *n,
	       struct cfg_bitfield *b)
{
	struct map m;
	yaml_node_t *v;
	bool ok = true;

	if (!cfg_map_open(x, &m, n, key, key, KEYS(bitfield_keys), false))
		return false;
	ok &= require(x, &m, "bit_offset");
	ok &= require(x, &m, "bit_width");
	if ((v = mval(&m, "bit_offset")) != NULL)
		ok &= cfg_get_u32(x, "bit_offset", v, 0, CFG_BIT_OFFSET_MAX,
				  &b->bit_offset);
	if ((v = mval(&m, "bit_width")) != NULL)
		ok &= cfg_get_u32(x, "bit_width", v, 1, CFG_BIT_WIDTH_MAX,
				  &b->bit_width);
	return ok;
}

/* Sets method, the bit fields and packets_per_batch; false when they are
 * not all valid (reported). */
static bool
parse_method(struct pctx *x, yaml_node_t *n, struct cfg_reorder *r)
{
	struct map m, s;
	yaml_node_t *sbn, *sppb, *v;
	bool ok = true;
	uint64_t space;

	if (!cfg_map_open(x, &m, n, "method", "method", KEYS(method_keys),
			  false))
		return false;
	sbn = mval(&m, "seq_batch_number");
	sppb = mval(&m, "seq_packets_per_batch");
	if (sbn != NULL && sppb != NULL) {
		const yaml_node_t *k1 = mkey(&m, "seq_batch_number");
		const yaml_node_t *k2 = mkey(&m, "seq_packets_per_batch");

		err(x, k1->start_mark.index > k2->start_mark.index ? k1 : k2,
		    "method: give one of seq_batch_number and "
		    "seq_packets_per_batch, not both");
		return false;
	}
	if (sbn != NULL) {
		r->method = CFG_METHOD_SEQ_BATCH_NUMBER;
		if (!cfg_map_open(x, &s, sbn, "seq_batch_number",
				  "seq_batch_number", KEYS(sbn_keys), false))
			return false;
		ok &= require(x, &s, "sequence_number");
		ok &= require(x, &s, "batch_number");
		if ((v = mval(&s, "sequence_number")) != NULL)
			ok &= parse_bitfield(x, "sequence_number", v, &r->seq);
		if ((v = mval(&s, "batch_number")) != NULL)
			ok &= parse_bitfield(x, "batch_number", v, &r->batch);
		if (!ok)
			return false;
		if (r->batch.bit_width > r->seq.bit_width) {
			err(x, v, "batch_number: bit_width %u is wider than "
			    "the sequence_number's %u (packets_per_batch = "
			    "2^seq_bits / 2^batch_bits)", r->batch.bit_width,
			    r->seq.bit_width);
			return false;
		}
		if (r->seq.bit_width - r->batch.bit_width > DAQIRI_PPB_LOG2) {
			err(x, v, "batch_number: bit_width %u leaves 2^%u "
			    "packets per batch (sequence_number bit_width %u "
			    "- %u); a tensor holds at most 2^%u = %u packets "
			    "(DAQIRI_PPB_MAX)", r->batch.bit_width,
			    r->seq.bit_width - r->batch.bit_width,
			    r->seq.bit_width, r->batch.bit_width,
			    DAQIRI_PPB_LOG2, DAQIRI_PPB_MAX);
			return false;
		}
		r->packets_per_batch = 1u << (r->seq.bit_width -
					       r->batch.bit_width);
		return true;
	}
	if (sppb != NULL) {
		r->method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
		if (!cfg_map_open(x, &s, sppb, "seq_packets_per_batch",
				  "seq_packets_per_batch", KEYS(sppb_keys),
				  false))
			return false;
		ok &= require(x, &s, "sequence_number");
		ok &= require(x, &s, "packets_per_batch");
		if ((v = mval(&s, "sequence_number")) != NULL)
			ok &= parse_bitfield(x, "sequence_number", v, &r->seq);
		if ((v = mval(&s, "packets_per_batch")) != NULL)
			ok &= cfg_get_u32(x, "packets_per_batch", v, 1,
					  UINT32_MAX, &r->packets_per_batch);
		if (!ok)
			return false;
		/* a tensor's slots: the descriptor and the bitmap count them */
		if (r->packets_per_batch > DAQIRI_PPB_MAX) {
			err(x, v, "packets_per_batch: %u is more than a tensor "
			    "holds: at most 2^%u = %u packets (DAQIRI_PPB_MAX)",
			    r->packets_per_batch, DAQIRI_PPB_LOG2,
			    DAQIRI_PPB_MAX);
			return false;
		}
		space = 1ull << r->seq.bit_width;
		if (space % r->packets_per_batch != 0) {
			err(x, v, "packets_per_batch: %u does not divide the "
			    "2^%u sequence numbers; use a power of two up to "
			    "%llu", r->packets_per_batch, r->seq.bit_width,
			    (unsigned long long)(space < DAQIRI_PPB_MAX ?
			    space : DAQIRI_PPB_MAX));
			return false;
		}
		return true;
	}
	err(x, n, "method: needs seq_batch_number or seq_packets_per_batch");
	return false;
}

/* The value of a key or of its alias; both given is an error. */
static yaml_node_t *
alias_val(struct pctx *x, const struct map *m, const char *key,
	  const char *alias)
{
	yaml_node_t *a = mval(m, key), *b = mval(m, alias);

	if (a != NULL && b != NULL) {
		const yaml_node_t *ka = mkey(m, key), *kb = mkey(m, alias);

		err(x, ka->start_mark.index > kb->start_mark.index ? ka : kb,
		    "data_types: '%s' and '%s' are the same key; give one",
		    key, alias);
	}
	return a != NULL ? a : b;
}

static void
parse_data_types(struct pctx *x, yaml_node_t *n, struct cfg_reorder *r)
{
	struct map m;
	yaml_node_t *in, *out, *en;
	bool ok = true;
	int k;

	if (!cfg_map_open(x, &m, n, "data_types", "data_types",
			  KEYS(dtypes_keys), false))
		return;
	in = alias_val(x, &m, "input_type", "input");
	out = alias_val(x, &m, "output_type", "output");
	en = alias_val(x, &m, "endianness", "input_endianness");
	if (in == NULL) {
		err(x, n, "missing required key 'input_type' in data_types");
		ok = false;
	} else if (cfg_get_enum(x, "input_type", in, KEYS(input_type_names),
				&k)) {
		r->input_type = input_types[k];
	} else {
		ok = false;
	}
	if (out == NULL) {
		err(x, n, "missing required key 'output_type' in data_types");
		ok = false;
	} else if (cfg_get_enum(x, "output_type", out, KEYS(output_type_names),
				&k)) {
		r->output_type = output_types[k];
	} else {
		ok = false;
	}
	if (en != NULL && cfg_get_enum(x, "endianness", en,
				       KEYS(cfg_endian_names), &k))
		r->endianness = (enum cfg_endian)k;
	r->has_data_types = ok;
	if (!ok)
		r->input_type = r->output_type = DAQIRI_DTYPE_RAW;
}

static bool
dtype_is_float(enum daqiri_dtype t)
{
	return t == DAQIRI_DTYPE_FP16 || t == DAQIRI_DTYPE_BF16 ||
	    t == DAQIRI_DTYPE_FP32 || t == DAQIRI_DTYPE_FP64;
}

static void
parse_reorder_flow_ids(struct pctx *x, yaml_node_t *n,
		       struct cfg_interface *ifc, struct cfg_reorder *r,
		       int ri, bool *ok)
{
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "flow_ids", n, CFG_MAX_FLOW_IDS, &it);

	*ok = cnt > 0;
	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		uint32_t id;
		bool dup = false;

		if (e == NULL || !cfg_get_u32(x, "flow_ids", e, 0, UINT32_MAX,
					      &id)) {
			*ok = false;
			continue;
		}
		if (cfg_flow_by_id(ifc->rx.flows, ifc->rx.nflows, id) == NULL) {
			err(x, e, "flow_ids: no rx flow has id %u", id);
			*ok = false;
			continue;
		}
		for (int j = 0; j < r->nflow_ids; j++)
			if (r->flow_ids[j] == id)
				dup = true;
		if (dup) {
			err(x, e, "flow_ids: flow %u is listed twice", id);
			continue;
		}
		for (int j = 0; j < ri; j++) {
			const struct cfg_reorder *o = &ifc->rx.reorders[j];

			for (int k = 0; k < o->nflow_ids; k++) {
				if (o->flow_ids[k] == id) {
					err(x, e, "flow_ids: flow %u already "
					    "belongs to reorder config '%s' "
					    "(line %d)", id, o->name,
					    o->pos.line);
					*ok = false;
				}
			}
		}
		r->flow_ids[r->nflow_ids++] = id;
	}
}

/* resync_after_us, after timeout_us: given, it must not take a real
 * straggler (one within its batch's deadline) for a restarted sender;
 * not given, it is derived from the deadline. */
static void
parse_resync_after(struct pctx *x, const struct map *m, struct cfg_reorder *r)
{
	yaml_node_t *v = mval(m, "resync_after_us");

	if (v == NULL) {
		r->resync_after_us = r->timeout_us > UINT32_MAX /
		    CFG_RESYNC_AFTER_DEADLINES ? UINT32_MAX :
		    r->timeout_us * CFG_RESYNC_AFTER_DEADLINES;
		return;
	}
	r->resync_after_given = true;
	if (cfg_get_u32(x, "resync_after_us", v, 0, UINT32_MAX,
	    &r->resync_after_us) && r->resync_after_us != 0 &&
	    r->resync_after_us < r->timeout_us)
		err(x, v, "resync_after_us: %u is less than timeout_us %u: a "
		    "straggler within its batch's deadline would be taken for "
		    "a restarted sender (give at least %u, or 0 to resync "
		    "only by volume)", r->resync_after_us, r->timeout_us,
		    r->timeout_us);
}

/*
 * The keys the reference added with its NIC hardware reorder:
 * reorder_engine (sw, or hw: the NIC places each payload), cyclic_sequence
 * (the sender's sequence field cycles; hw needs it) and missing_action
 * (what a batch that did not complete becomes). daqiri's reorder is
 * software, and its ids always wrap at the field's width, so only
 * missing_action changes what it does (daqirid.yaml(5)).
 */
static void
parse_batch_keys(struct pctx *x, const struct map *m, struct cfg_reorder *r)
{
	static const char *const engines[] = { "sw", "hw" };
	yaml_node_t *v;
	int k;

	if ((v = mval(m, "reorder_engine")) != NULL &&
	    cfg_get_enum(x, "reorder_engine", v, KEYS(engines), &k) && k == 1)
		err(x, v, "reorder_engine: not supported by daqiri: NIC "
		    "hardware reorder (daqiri places every payload in "
		    "software, on the CPU or with its GPU kernel; use sw)");
	if ((v = mval(m, "cyclic_sequence")) != NULL)
		cfg_get_bool(x, "cyclic_sequence", v, &r->cyclic_sequence);
	if ((v = mval(m, "missing_action")) != NULL &&
	    cfg_get_enum(x, "missing_action", v, KEYS(cfg_missing_names),
	    &k)) {
		r->missing_action = (enum cfg_missing)k;
		cfg_mark(x, &r->missing_action, v);
		if (r->missing_action == CFG_MISSING_DROP &&
		    mval(m, "fill") != NULL)
			warn(x, mkey(m, "fill"), "fill: has no effect with "
			    "missing_action drop (no tensor with a missing "
			    "slot is published)");
	}
}

static void
parse_reorder(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc,
	      int ri)
{
	struct cfg_reorder *r = &ifc->rx.reorders[ri];
	struct map m;
	yaml_node_t *v;
	bool type_ok = false, method_ok = false, offset_ok = false;
	bool flows_ok = false;
	int k;

	r->region_idx = -1;
	r->window = CFG_WINDOW_DEFAULT;
	r->fill = DAQIRI_FILL_ZERO;
	r->timeout_us = CFG_REORDER_TIMEOUT_US_DEFAULT;
	r->pos = pos_of(n);
	if (!cfg_map_open(x, &m, n, "reorder_configs entry", "reorder config",
			  KEYS(reorder_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "reorder_type");
	require(x, &m, "memory_region");
	require(x, &m, "payload_byte_offset");
	require(x, &m, "flow_ids");
	require(x, &m, "method");
	if ((v = mval(&m, "name")) != NULL &&
	    cfg_get_name(x, "name", v, r->name)) {
		for (int j = 0; j < ri; j++)
			if (strcmp(ifc->rx.reorders[j].name, r->name) == 0)
				err(x, v, "name: reorder config '%s' is already "
				    "defined at line %d", r->name,
				    ifc->rx.reorders[j].pos.line);
		for (int j = 0; j < ifc->rx.nqueues; j++)
			if (strcmp(ifc->rx.queues[j].name, r->name) == 0)
				err(x, v, "name: '%s' is also an rx queue's "
				    "name (line %d); stream names "
				    "<interface>/<name> must be unique",
				    r->name, ifc->rx.queues[j].pos.line);
	}
	if ((v = mval(&m, "reorder_type")) != NULL &&
	    cfg_get_enum(x, "reorder_type", v, KEYS(cfg_reorder_type_names),
			 &k)) {
		r->type = (enum cfg_reorder_type)k;
		cfg_mark(x, &r->type, v);
		type_ok = true;
	}
	if ((v = mval(&m, "memory_region")) != NULL &&
	    cfg_get_str(x, "memory_region", v, r->region_name, CFG_NAME_MAX))
		r->region_idx = cfg_find_region(x, "memory_region", v,
						r->region_name);
	if (r->region_idx >= 0)
		cfg_check_reorder_region(x, v, r, type_ok);
	if ((v = mval(&m, "payload_byte_offset")) != NULL)
		offset_ok = cfg_get_u32(x, "payload_byte_offset", v, 0,
					CFG_FRAME_MAX - 1,
					&r->payload_byte_offset);
	if ((v = mval(&m, "flow_ids")) != NULL)
		parse_reorder_flow_ids(x, v, ifc, r, ri, &flows_ok);
	if ((v = mval(&m, "method")) != NULL)
		method_ok = parse_method(x, v, r);
	if ((v = mval(&m, "data_types")) != NULL)
		parse_data_types(x, v, r);
	if ((v = mval(&m, "window")) != NULL)
		cfg_get_u32(x, "window", v, 1, CFG_WINDOW_MAX, &r->window);
	if ((v = mval(&m, "fill")) != NULL &&
	    cfg_get_enum(x, "fill", v, KEYS(cfg_fill_names), &k)) {
		r->fill = (enum daqiri_fill)k;
		cfg_mark(x, &r->fill, v);
		if (r->fill == DAQIRI_FILL_NAN && !(r->has_data_types &&
		    dtype_is_float(r->output_type)))
			err(x, v, "fill: nan needs a floating-point "
			    "output_type (fp16, bf16, fp32 or fp64)");
	}
	if ((v = mval(&m, "timeout_us")) != NULL)
		cfg_get_u32(x, "timeout_us", v, 0, UINT32_MAX, &r->timeout_us);
	parse_resync_after(x, &m, r);
	parse_batch_keys(x, &m, r);
	if ((v = mval(&m, "payload_bytes")) != NULL &&
	    !cfg_get_u32(x, "payload_bytes", v, 1, CFG_FRAME_MAX,
			 &r->payload_bytes))
		return;
	cfg_check_reorder_geometry(x, ifc, r, &m, type_ok, method_ok,
				   offset_ok, flows_ok, v != NULL);
}

void
cfg_parse_reorders(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "reorder_configs", n, CFG_MAX_REORDERS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);

		if (e == NULL)
			continue;
		parse_reorder(x, e, ifc, ifc->rx.nreorders);
		ifc->rx.nreorders++;
	}
}
