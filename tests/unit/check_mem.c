/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of memory regions: host and huge memfds (sizes, sharing through
 * the fd, read-only reopen, seals that refuse a consumer's writes through a
 * writable reopen), host_pinned fallback, the device-region error
 * without a GPU, and half-built/zeroed destroy.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"

static struct cfg_region
region(const char *name, enum daqiri_mem_kind kind, uint32_t n, uint64_t sz)
{
	struct cfg_region r;

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "%s", name);
	r.kind = kind;
	r.num_bufs = n;
	r.buf_size = sz;
	return r;
}

START_TEST(test_host_region)
{
	struct cfg_region r = region("rx", DAQIRI_MEM_HOST, 8, 1000);
	struct mem_region m;
	char err[MEM_ERR_MAX] = "";
	struct stat st;
	uint8_t *b;
	uint32_t i;

	ck_assert_int_eq(mem_region_create(&r, &m, err, sizeof(err)), 0);
	ck_assert_str_eq(m.name, "rx");
	ck_assert_int_eq(m.kind, DAQIRI_MEM_HOST);
	ck_assert_uint_eq(m.nbufs, 8);
	ck_assert_uint_eq(m.buf_size, 1000);
	ck_assert_uint_eq(m.size, 8192);	/* 8000 rounded to pages */
	ck_assert_ptr_nonnull(m.base);
	ck_assert_ptr_null(m.dev);
	ck_assert_int_ge(m.fd, 0);
	ck_assert(mem_host_visible(&m));
	ck_assert_int_eq(fstat(m.fd, &st), 0);
	ck_assert_int_eq(st.st_size, 8192);
	ck_assert(fcntl(m.fd, F_GETFD) & FD_CLOEXEC);
	for (i = 0; i < 8; i++)
		ck_assert_ptr_eq(mem_buf(&m, i), (uint8_t *)m.base + i * 1000);
	ck_assert_ptr_null(mem_buf(&m, 8));
	ck_assert_ptr_null(mem_dev_buf(&m, 0));
	/* zero-filled, writable to the last byte */
	b = m.base;
	for (i = 0; i < m.size; i++)
		ck_assert_uint_eq(b[i], 0);
	memset(b, 0xA5, m.size);
	mem_region_destroy(&m);
	ck_assert_ptr_null(m.base);
	ck_assert_int_eq(m.fd, -1);
	mem_region_destroy(&m);			/* twice is fine */
}
END_TEST

START_TEST(test_host_sealed)
{
	struct cfg_region r = region("rx", DAQIRI_MEM_HOST, 4, 4096);
	struct mem_region m;
	int seals;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	seals = fcntl(m.fd, F_GET_SEALS);
	ck_assert_int_ne(seals, -1);
	ck_assert(seals & F_SEAL_SHRINK);
	ck_assert(seals & F_SEAL_GROW);
	ck_assert_int_eq(ftruncate(m.fd, 4096), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(m.fd, 1 << 20), -1);
	mem_region_destroy(&m);
}
END_TEST

/* Another mapping of the fd sees the daemon's writes; since the region
 * is sealed, no new mapping can write it. */
START_TEST(test_fd_sharing)
{
	struct cfg_region r = region("share", DAQIRI_MEM_HOST, 3, 5000);
	struct mem_region m;
	uint8_t *other;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	other = mmap(NULL, m.size, PROT_READ, MAP_SHARED, m.fd, 0);
	ck_assert_ptr_ne(other, MAP_FAILED);
	memcpy(mem_buf(&m, 2), "tensor", 6);
	ck_assert_mem_eq(other + 2 * 5000, "tensor", 6);
	munmap(other, m.size);
	ck_assert_ptr_eq(mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    m.fd, 0), MAP_FAILED);
	ck_assert_int_eq(errno, EPERM);
	mem_region_destroy(&m);
}
END_TEST

/*
 * Attack 2 on every host-visible kind: a consumer reopens its read-only
 * fd O_RDWR through /proc/self/fd (which works: memfd inodes are 0777)
 * and tries each way to write: mmap(PROT_WRITE, MAP_SHARED), write(2),
 * ftruncate, mprotect of a read-only mapping, removing the seals. All
 * refused; the daemon's own mapping still writes.
 */
START_TEST(test_sealed_against_consumer_writes)
{
	static const enum daqiri_mem_kind kinds[] = {
		DAQIRI_MEM_HOST, DAQIRI_MEM_HUGE, DAQIRI_MEM_HOST_PINNED,
	};
	struct cfg_region r = region("seal", kinds[_i], 2, 8192);
	struct mem_region m;
	char path[64];
	uint8_t byte = 1, *ro;
	void *w;
	int fd, ro_fd, seals;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	seals = fcntl(m.fd, F_GET_SEALS);
	if (m.hugepages && !(seals & F_SEAL_FUTURE_WRITE)) {
		/* mem_region_create() warned; nothing more to check */
		mem_region_destroy(&m);
		return;
	}
	if (m.hugepages) {
		/* Kernels before 6.1 accept the seal on hugetlbfs without
		 * enforcing it; the daemon's start-up probe warns about that
		 * (mem_probe_seal), so the test asks the same question. */
		w = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    m.fd, 0);
		if (w != MAP_FAILED) {
			munmap(w, m.size);
			mem_region_destroy(&m);
			return;
		}
	}
	ck_assert_int_eq(seals, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", m.fd);
	ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ro_fd, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ro_fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);

	w = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_eq(w, MAP_FAILED);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(pwrite(fd, &byte, 1, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	ck_assert_int_eq(errno, EPERM);
	ro = mmap(NULL, m.size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(ro, MAP_FAILED);
	ck_assert_int_eq(mprotect(ro, m.size, PROT_READ | PROT_WRITE), -1);
	ck_assert_int_eq(errno, EACCES);
	/* a private copy-on-write mapping may be written: it is the
	 * consumer's own memory, nobody else sees it */
	w = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(w, MAP_FAILED);
	((uint8_t *)w)[0] = 0x77;
	ck_assert_uint_ne(((uint8_t *)m.base)[0], 0x77);
	munmap(w, m.size);

	((uint8_t *)m.base)[8191] = 0x42;	/* the daemon's mapping */
	ck_assert_uint_eq(ro[8191], 0x42);
	munmap(ro, m.size);
	close(fd);
	close(ro_fd);
	mem_region_destroy(&m);
}
END_TEST

/* mem_seal_readonly() on a memfd of one's own: the seals, and a mapping
 * made before them keeps writing. */
START_TEST(test_seal_readonly)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *p, *q;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(mem_seal_readonly(fd, "test memfd"), 0);
	ck_assert(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	ck_assert(fcntl(fd, F_GET_SEALS) & F_SEAL_SEAL);
	p[10] = 9;
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(q, MAP_FAILED);
	ck_assert_uint_eq(q[10], 9);
	ck_assert_ptr_eq(mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, 0),
	    MAP_FAILED);
	/* sealed already: a second call fails cleanly */
	ck_assert_int_eq(mem_seal_readonly(fd, "test memfd"), -EPERM);
	munmap(p, 4096);
	munmap(q, 4096);
	close(fd);
}
END_TEST

/* What a consumer gets: /proc/self/fd reopened O_RDONLY reads, never
 * writes. */
START_TEST(test_readonly_reopen)
{
	struct cfg_region r = region("ro", DAQIRI_MEM_HOST, 2, 4096);
	struct mem_region m;
	char path[64];
	uint8_t *ro;
	int fd;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	memcpy(m.base, "hello", 5);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", m.fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ro = mmap(NULL, m.size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(ro, MAP_FAILED);
	ck_assert_mem_eq(ro, "hello", 5);
	memcpy((uint8_t *)m.base + 4096, "later", 5);
	ck_assert_mem_eq(ro + 4096, "later", 5);
	ck_assert_ptr_eq(mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0), MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(write(fd, "x", 1), -1);
	ck_assert_int_eq(mprotect(ro, m.size, PROT_READ | PROT_WRITE), -1);
	munmap(ro, m.size);
	close(fd);
	mem_region_destroy(&m);
}
END_TEST

/* Huge pages when the machine has them, else normal pages (one warning):
 * either way a usable, shareable region. */
START_TEST(test_huge_region)
{
	struct cfg_region r = region("huge", DAQIRI_MEM_HUGE, 3, 100000);
	struct mem_region m;
	uint8_t *other;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	ck_assert_int_eq(m.kind, DAQIRI_MEM_HUGE);
	ck_assert_int_ge(m.fd, 0);
	ck_assert_uint_ge(m.size, 300000);
	if (m.hugepages)
		ck_assert_uint_eq(m.size % MEM_HUGE_PAGE_SIZE, 0);
	else
		ck_assert_uint_eq(m.size, 303104);	/* 74 pages */
	memset(m.base, 0x3C, m.size);
	other = mmap(NULL, m.size, PROT_READ, MAP_SHARED, m.fd, 0);
	ck_assert_ptr_ne(other, MAP_FAILED);
	ck_assert_uint_eq(other[m.size - 1], 0x3C);
	ck_assert_uint_eq(other[2 * 100000], 0x3C);
	munmap(other, m.size);
	mem_region_destroy(&m);
}
END_TEST

START_TEST(test_host_pinned_fallback)
{
	struct cfg_region r = region("pin", DAQIRI_MEM_HOST_PINNED, 2, 8192);
	struct mem_region m;

	ck_assert_int_eq(mem_region_create(&r, &m, NULL, 0), 0);
	ck_assert_ptr_nonnull(m.base);
	ck_assert_int_ge(m.fd, 0);
	if (!m.pinned)
		ck_assert_ptr_null(m.dev);
	memset(m.base, 1, m.size);
	mem_region_destroy(&m);
}
END_TEST

START_TEST(test_device_region)
{
	struct cfg_region r = region("gpu_out", DAQIRI_MEM_DEVICE, 4, 1 << 20);
	struct mem_region m;
	char err[MEM_ERR_MAX] = "";
	int rc;

	r.affinity = 0;
	rc = mem_region_create(&r, &m, err, sizeof(err));
#ifdef DAQIRI_HAVE_CUDA
	if (rc == 0) {
		/* a machine with a GPU: a device-only region */
		ck_assert_ptr_nonnull(m.dev);
		ck_assert_ptr_null(m.base);
		ck_assert_int_eq(m.fd, -1);
		ck_assert_ptr_null(mem_buf(&m, 0));
		ck_assert_ptr_eq(mem_dev_buf(&m, 1), (uint8_t *)m.dev +
		    (1 << 20));
		ck_assert(!mem_host_visible(&m));
		mem_region_destroy(&m);
		return;
	}
	ck_assert_int_eq(rc, -ENODEV);
	ck_assert_msg(strncmp(err, "memory region 'gpu_out': no CUDA device: ",
	    41) == 0, "error text: %s", err);
	ck_assert_uint_gt(strlen(err), 41);	/* says why */
#else
	ck_assert_int_eq(rc, -ENOTSUP);
	ck_assert_str_eq(err, "memory region 'gpu_out': kind device needs "
	    "CUDA, and this build has none");
#endif
	ck_assert_ptr_null(m.dev);
	ck_assert_ptr_null(m.base);
	ck_assert_int_eq(m.fd, -1);
	mem_region_destroy(&m);
}
END_TEST

START_TEST(test_bad_sizes)
{
	struct cfg_region r = region("empty", DAQIRI_MEM_HOST, 0, 4096);
	struct mem_region m;
	char err[MEM_ERR_MAX] = "";

	ck_assert_int_eq(mem_region_create(&r, &m, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'empty'"));
	r = region("big", DAQIRI_MEM_HOST, 0xFFFFFFFFu, UINT64_MAX / 2);
	ck_assert_int_eq(mem_region_create(&r, &m, err, sizeof(err)),
	    -EOVERFLOW);
	ck_assert_ptr_nonnull(strstr(err, "'big'"));
	mem_region_destroy(&m);
}
END_TEST

/* A zeroed struct (fd 0) and NULL are safe to destroy; stdin survives. */
START_TEST(test_destroy_zeroed)
{
	struct mem_region m;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	if (fd != 0) {
		/* make sure fd 0 is open so closing it would show */
		ck_assert_int_eq(dup2(fd, 0), 0);
	}
	memset(&m, 0, sizeof(m));
	mem_region_destroy(&m);
	mem_region_destroy(NULL);
	mem_regions_destroy(NULL, 3);
	ck_assert_int_ne(fcntl(0, F_GETFD), -1);
}
END_TEST

/* The whole-config helper creates in order and, on a failure, destroys
 * what it made and names the failing region. */
START_TEST(test_regions_create)
{
	static struct cfg c;
	struct mem_region m[3];
	char err[MEM_ERR_MAX] = "";
	int rc;

	memset(&c, 0, sizeof(c));
	c.nregions = 3;
	c.regions[0] = region("a", DAQIRI_MEM_HOST, 2, 100);
	c.regions[1] = region("b", DAQIRI_MEM_HUGE, 2, 100);
	c.regions[2] = region("c", DAQIRI_MEM_HOST, 1, 10);
	ck_assert_int_eq(mem_regions_create(&c, m, err, sizeof(err)), 0);
	ck_assert_str_eq(m[2].name, "c");
	ck_assert_uint_eq(m[2].size, 4096);
	mem_regions_destroy(m, 3);

	c.regions[1] = region("dev", DAQIRI_MEM_DEVICE, 2, 100);
	rc = mem_regions_create(&c, m, err, sizeof(err));
	if (rc == 0) {			/* a GPU is there */
		mem_regions_destroy(m, 3);
		return;
	}
	ck_assert_ptr_nonnull(strstr(err, "memory region 'dev'"));
	ck_assert_ptr_null(m[0].base);	/* undone */
	ck_assert_int_eq(m[0].fd, -1);
}
END_TEST

static Suite *
mem_suite(void)
{
	Suite *s = suite_create("mem");
	TCase *tc = tcase_create("regions");

	tcase_add_test(tc, test_host_region);
	tcase_add_test(tc, test_host_sealed);
	tcase_add_test(tc, test_fd_sharing);
	tcase_add_loop_test(tc, test_sealed_against_consumer_writes, 0, 3);
	tcase_add_test(tc, test_seal_readonly);
	tcase_add_test(tc, test_readonly_reopen);
	tcase_add_test(tc, test_huge_region);
	tcase_add_test(tc, test_host_pinned_fallback);
	tcase_add_test(tc, test_device_region);
	tcase_add_test(tc, test_bad_sizes);
	tcase_add_test(tc, test_destroy_zeroed);
	tcase_add_test(tc, test_regions_create);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(mem_suite());
	int failed;

	log_init(CFG_LOG_WARN, 0);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
