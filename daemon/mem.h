/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory regions (DESIGN.md "Memory regions and sharing"): the buffers the
 * engines receive into and the reorder stage writes tensors to. Host kinds
 * are memfds so consumers can map them read-only; device regions are CUDA
 * allocations shared by IPC handle.
 */
#ifndef DAQIRI_MEM_H
#define DAQIRI_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Page sizes the host kinds round their mapping up to. */
#define MEM_PAGE_SIZE		4096u
#define MEM_HUGE_PAGE_SIZE	(2u << 20)
/* A GPU page as DPDK maps it for a NIC; device regions are whole ones. */
#define MEM_GPU_PAGE_SIZE	(64u << 10)
/* Longest error text mem_region_create() writes (including the NUL). */
#define MEM_ERR_MAX		256

/*
 * One memory region. Buffer i occupies [i * buf_size, (i + 1) * buf_size)
 * of the region, in both views. Fields are filled by mem_region_create()
 * and read-only afterwards.
 */
struct mem_region {
	char name[CFG_NAME_MAX];
	enum daqiri_mem_kind kind;		/* as configured */
	int affinity;			/* GPU ordinal (device, host_pinned) */
	uint32_t nbufs;
	uint64_t buf_size;		/* the stride: the config's buf_size
					 * plus the engine's headroom in front
					 * (cfg_region.headroom) */
	uint64_t size;			/* bytes allocated/mapped, >= nbufs x buf_size */
	void *base;			/* host view; NULL for device */
	void *dev;			/* device view: cudaMalloc'd memory (device),
					 * the registered mapping (host_pinned when
					 * pinned), else NULL */
	int fd;				/* memfd (O_CLOEXEC, sealed by
					 * mem_seal_readonly()); -1 for device */
	bool hugepages;			/* huge: really backed by huge pages */
	bool pinned;			/* host_pinned: cudaHostRegister'ed */
};

/*
 * Allocate the region r describes into *out:
 *  host        memfd_create + ftruncate + mmap(MAP_SHARED), then sealed
 *              by mem_seal_readonly();
 *  huge        the same with MFD_HUGETLB; when huge pages are not available
 *              one log_warnx() and normal pages (out->hugepages false);
 *  host_pinned a host region, then cudaHostRegister() when a CUDA device
 *              exists; otherwise one log_warnx() and plain host memory;
 *  device      cudaMalloc() on GPU r->affinity.
 * Returns 0, or a negative errno with a message naming the region in err
 * ("memory region 'X': kind device needs CUDA, and this build has none",
 * "memory region 'X': no CUDA device: <why>", ...). On failure *out is
 * left in a state mem_region_destroy() accepts. err may be NULL.
 */
int mem_region_create(const struct cfg_region *r, struct mem_region *out,
		      char *err, size_t errlen);

/* Unregister, unmap/free and close. NULL-safe; safe on a zeroed, half-built
 * or already destroyed region (it is reset to the destroyed state). */
void mem_region_destroy(struct mem_region *m);

/*
 * Create every region of c into out[0 .. c->nregions) (indexes as in
 * c->regions, which queues and reorder configs refer to). On failure the
 * ones already made are destroyed, err names the failing region, and the
 * negative errno is returned.
 */
int mem_regions_create(const struct cfg *c, struct mem_region *out,
		       char *err, size_t errlen);

/*
 * Seal memfd fd so that only mappings made before now can write it:
 * F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE, then F_SEAL_SEAL. A
 * consumer that reopens its read-only fd O_RDWR through /proc still gets
 * EPERM from mmap(PROT_WRITE, MAP_SHARED), write(2) and ftruncate(), and
 * EACCES from mprotect(PROT_WRITE). On a kernel without
 * F_SEAL_FUTURE_WRITE (before 5.1) one warning naming what (the first
 * caller's) and only the size seals. Returns 0 or a negative errno.
 */
int mem_seal_readonly(int fd, const char *what);

/* mem_region_destroy() on out[0 .. n). */
void mem_regions_destroy(struct mem_region *m, int n);

/* Host address of buffer i, or NULL when i is out of range or the region
 * has no host view (device). */
void *mem_buf(const struct mem_region *m, uint32_t i);

/* Device address of buffer i, or NULL when the region has no device view. */
void *mem_dev_buf(const struct mem_region *m, uint32_t i);

/* True when the host can read and write the region (host, huge,
 * host_pinned). */
bool mem_host_visible(const struct mem_region *m);

#endif
