/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory regions: host and huge regions as sealed memfds (so a consumer can
 * be given a read-only reopen of the fd), host_pinned as a memfd registered
 * with CUDA when a GPU is there, device regions through cudaMalloc (both
 * through gpu.h). Regions are made and destroyed on the main thread and
 * only read afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpu.h"
#include "log.h"
#include "mem.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB		0x0004U
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#define MEM_MPOL_PREFERRED	1	/* <linux/mempolicy.h> */
#define MEM_MAX_NUMA_NODE	63	/* nodes one mask word covers */
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE	0x0010	/* Linux 5.1, <linux/fcntl.h> */
#endif
#define MEM_SEALS_SIZE		(F_SEAL_SHRINK | F_SEAL_GROW)

/* One warning per process for a kernel without F_SEAL_FUTURE_WRITE. */
static bool mem_warned_future_write;

static uint64_t
mem_round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

/*
 * Place the pages on NUMA node `node` (preferred, not strict: a full node
 * must not fail the daemon). Best effort; one-node machines reject nothing.
 */
static void
mem_bind_node(struct mem_region *m, int node)
{
	unsigned long mask;

	if (node < 0 || node > MEM_MAX_NUMA_NODE)
		return;
	mask = 1ul << node;
	if (syscall(SYS_mbind, m->base, (unsigned long)m->size,
	    MEM_MPOL_PREFERRED, &mask, (unsigned long)MEM_MAX_NUMA_NODE + 2,
	    0u) == -1)
		log_debug("memory region '%s': NUMA node %d: %s", m->name,
		    node, strerror(errno));
}

/*
 * Fault every page in now, so the data path never takes a first-touch
 * fault and a region that cannot be backed fails at start-up.
 */
static int
mem_populate(struct mem_region *m, uint64_t page)
{
	volatile uint8_t *p;
	uint64_t off;

	if (madvise(m->base, m->size, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* Kernels before 5.14: touch the pages (they are zero already). */
	p = m->base;
	for (off = 0; off < m->size; off += page)
		p[off] = 0;
	return 0;
}

/*
 * A kernel may take the seal and still map the file writable (hugetlbfs
 * has lagged behind shmem): try what a consumer would, once per memfd,
 * at start-up. At most a page (st_blksize: the huge page size on
 * hugetlbfs, whose files are whole huge pages).
 */
static void
mem_probe_seal(int fd, const char *what)
{
	struct stat st;
	size_t len;
	void *p;

	if (mem_warned_future_write || fstat(fd, &st) == -1 || st.st_size <= 0)
		return;
	len = st.st_size < st.st_blksize ? (size_t)st.st_size :
	    (size_t)st.st_blksize;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	munmap(p, len);
	log_warnx("%s: sealed against writes, yet this kernel still maps it "
	    "writable: a consumer can reopen its fd writable through /proc "
	    "and overwrite tensors other consumers read", what);
}

int
mem_seal_readonly(int fd, const char *what)
{
	/* Existing shared writable mappings (the daemon's) keep working;
	 * any later mmap(PROT_WRITE), mprotect to writable, write(2) or
	 * resize through any fd of this memfd fails. */
	if (fcntl(fd, F_ADD_SEALS, MEM_SEALS_SIZE | F_SEAL_FUTURE_WRITE) == -1) {
		if (errno != EINVAL)
			return -errno;
		if (!mem_warned_future_write) {
			mem_warned_future_write = true;
			log_warnx("%s: this kernel has no F_SEAL_FUTURE_WRITE "
			    "(Linux 5.1): a consumer can reopen its read-only "
			    "fds writable through /proc and overwrite tensors "
			    "other consumers read", what);
		}
		if (fcntl(fd, F_ADD_SEALS, MEM_SEALS_SIZE) == -1)
			return -errno;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) == -1)
		return -errno;
	mem_probe_seal(fd, what);
	return 0;
}

/* memfd + ftruncate + mmap + populate + seal; 0 or a negative errno
 * (nothing kept). */
static int
mem_map_memfd(struct mem_region *m, bool huge)
{
	char fdname[CFG_NAME_MAX + 16], what[CFG_NAME_MAX + 32];
	uint64_t page = huge ? MEM_HUGE_PAGE_SIZE : MEM_PAGE_SIZE;
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd, rc;
	void *p;

	if (huge)
		flags |= MFD_HUGETLB;
	snprintf(fdname, sizeof(fdname), "daqiri:%s", m->name);
	m->size = mem_round_up(m->nbufs * m->buf_size, page);
	if ((fd = memfd_create(fdname, flags)) == -1)
		return -errno;
	if (ftruncate(fd, (off_t)m->size) == -1)
		goto fail;
	p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	m->base = p;
	m->fd = fd;
	mem_bind_node(m, m->affinity);
	if ((rc = mem_populate(m, page)) < 0)
		goto unmap;
	/* Sealed only now: the daemon's mapping must exist before the
	 * write seal, which refuses every later writable mapping. */
	snprintf(what, sizeof(what), "memory region '%s'", m->name);
	if ((rc = mem_seal_readonly(fd, what)) < 0) {
		if (!huge)
			goto unmap;
		/* Some kernels refuse seals on hugetlb memfds. */
		log_warnx("memory region '%s': huge pages cannot be sealed "
		    "(%s): a consumer can reopen its fd writable and "
		    "overwrite or shrink the tensors", m->name, strerror(-rc));
	}
	return 0;
unmap:
	munmap(m->base, m->size);
	m->base = NULL;
	m->fd = -1;
	close(fd);
	return rc;
fail:
	rc = -errno;
	close(fd);
	return rc;
}

#ifdef DAQIRI_HAVE_CUDA
#define MEM_NO_DEVICE	"no CUDA device: "

/* gpu_last_error() without its "no CUDA device: " prefix. */
static const char *
mem_gpu_why(void)
{
	const char *why = gpu_last_error();

	if (strncmp(why, MEM_NO_DEVICE, strlen(MEM_NO_DEVICE)) == 0)
		why += strlen(MEM_NO_DEVICE);
	return why;
}

/* Through gpu.h, which declares the range, so the CUDA reorder backend
 * reads payloads there in place. */
static int
mem_create_device(struct mem_region *m, char *err, size_t errlen)
{
	void *p = NULL;
	int rc;

	if (!gpu_available(NULL, 0)) {
		log_seterr(err, errlen, "memory region '%s': no CUDA device: "
		    "%s", m->name, mem_gpu_why());
		return -ENODEV;
	}
	/* Whole 2 MiB pages: the driver's allocator then gives an address
	 * on a 2 MiB boundary (the API promises 256 bytes), so the region is
	 * whole 64 KiB GPU pages, which DPDK maps for a NIC (GPUDirect). */
	m->size = mem_round_up(m->nbufs * m->buf_size, MEM_HUGE_PAGE_SIZE);
	if ((rc = gpu_alloc(m->affinity, m->size, &p)) < 0) {
		log_seterr(err, errlen, "memory region '%s': %llu bytes on GPU "
		    "%d: %s", m->name, (unsigned long long)m->size, m->affinity,
		    gpu_last_error());
		m->size = 0;
		return rc;
	}
	m->dev = p;
	return 0;
}

/* Pin a host region; without a GPU, one warning and plain host memory. */
static void
mem_pin(struct mem_region *m)
{
	if (!gpu_available(NULL, 0)) {
		log_warnx("memory region '%s': host_pinned without a CUDA "
		    "device (%s): using plain host memory", m->name,
		    mem_gpu_why());
		return;
	}
	if (gpu_host_register(m->base, m->size) < 0) {
		log_warnx("memory region '%s': %s: using plain host memory",
		    m->name, gpu_last_error());
		return;
	}
	m->pinned = true;
	m->dev = m->base;	/* UVA: the device alias is the same address */
}
#else
static int
mem_create_device(struct mem_region *m, char *err, size_t errlen)
{
	log_seterr(err, errlen, "memory region '%s': kind device needs CUDA, "
	    "and this build has none", m->name);
	return -ENOTSUP;
}

static void
mem_pin(struct mem_region *m)
{
	log_warnx("memory region '%s': host_pinned in a build without CUDA: "
	    "using plain host memory", m->name);
}
#endif

int
mem_region_create(const struct cfg_region *r, struct mem_region *out,
		  char *err, size_t errlen)
{
	struct mem_region *m = out;
	int rc;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	snprintf(m->name, sizeof(m->name), "%s", r->name);
	m->kind = r->kind;
	m->affinity = r->affinity;
	m->nbufs = r->num_bufs;
	m->buf_size = r->buf_size + r->headroom;	/* the stride */
	if (m->nbufs == 0 || m->buf_size == 0) {
		log_seterr(err, errlen, "memory region '%s': num_bufs and "
		    "buf_size must be > 0", m->name);
		return -EINVAL;
	}
	if (m->buf_size > (UINT64_MAX - MEM_HUGE_PAGE_SIZE) / m->nbufs) {
		log_seterr(err, errlen, "memory region '%s': %u x %llu bytes "
		    "is too large", m->name, m->nbufs,
		    (unsigned long long)m->buf_size);
		return -EOVERFLOW;
	}

	switch (m->kind) {
	case DAQIRI_MEM_DEVICE:
		if ((rc = mem_create_device(m, err, errlen)) < 0)
			mem_region_destroy(m);
		return rc;
	case DAQIRI_MEM_HUGE:
		if ((rc = mem_map_memfd(m, true)) == 0) {
			m->hugepages = true;
			return 0;
		}
		log_warnx("memory region '%s': no huge pages (%s): using "
		    "normal pages", m->name, strerror(-rc));
		break;
	case DAQIRI_MEM_HOST:
	case DAQIRI_MEM_HOST_PINNED:
		break;
	default:
		log_seterr(err, errlen, "memory region '%s': unknown kind %d",
		    m->name, (int)m->kind);
		return -EINVAL;
	}
	if ((rc = mem_map_memfd(m, false)) < 0) {
		log_seterr(err, errlen, "memory region '%s': %llu bytes of "
		    "shared memory: %s", m->name,
		    (unsigned long long)(m->nbufs * m->buf_size),
		    strerror(-rc));
		mem_region_destroy(m);
		return rc;
	}
	if (m->kind == DAQIRI_MEM_HOST_PINNED)
		mem_pin(m);
	return 0;
}

void
mem_region_destroy(struct mem_region *m)
{
	if (m == NULL)
		return;
	if (m->pinned && m->base != NULL)
		gpu_host_unregister(m->base);
	if (m->kind == DAQIRI_MEM_DEVICE && m->dev != NULL)
		gpu_free(m->dev);
	if (m->base != NULL)
		munmap(m->base, m->size);
	/* size is set before any fd is opened, so a zeroed struct (fd 0,
	 * size 0) never closes stdin. */
	if (m->fd >= 0 && m->size != 0)
		close(m->fd);
	m->base = NULL;
	m->dev = NULL;
	m->fd = -1;
	m->size = 0;
	m->pinned = false;
	m->hugepages = false;
}

int
mem_regions_create(const struct cfg *c, struct mem_region *out, char *err,
		   size_t errlen)
{
	int i, rc;

	for (i = 0; i < c->nregions; i++) {
		if ((rc = mem_region_create(&c->regions[i], &out[i], err,
		    errlen)) < 0) {
			mem_regions_destroy(out, i);
			return rc;
		}
	}
	return 0;
}

void
mem_regions_destroy(struct mem_region *m, int n)
{
	int i;

	if (m == NULL)
		return;
	for (i = 0; i < n; i++)
		mem_region_destroy(&m[i]);
}

void *
mem_buf(const struct mem_region *m, uint32_t i)
{
	if (m == NULL || m->base == NULL || i >= m->nbufs)
		return NULL;
	return (uint8_t *)m->base + (uint64_t)i * m->buf_size;
}

void *
mem_dev_buf(const struct mem_region *m, uint32_t i)
{
	if (m == NULL || m->dev == NULL || i >= m->nbufs)
		return NULL;
	return (uint8_t *)m->dev + (uint64_t)i * m->buf_size;
}

bool
mem_host_visible(const struct mem_region *m)
{
	return m != NULL && m->base != NULL;
}
