/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The opening of every engine_dpdk*.c file: DPDK_HAVE_HEADERS when DPDK's
 * headers are there (the Makefile gives their -I to these files only;
 * the files build without them, as stubs), and then the code generation
 * DPDK's inline functions need. They use SSSE3 (rte_memcpy), which the
 * daemon's baseline x86-64 flags do not give; DPDK's own libraries are
 * built for corei7, so any machine that runs this code has it, and only
 * these files are compiled for it. Include it after the C library's
 * headers and before DPDK's; engine_dpdk_end.h closes what it opened.
 * Included once per file (no guard: the pragma is the file's).
 */
#if defined(__has_include)
#if __has_include(<rte_config.h>)
#define DPDK_HAVE_HEADERS 1
#endif
#endif

#if defined(DPDK_HAVE_HEADERS) && defined(__x86_64__) && !defined(__SSSE3__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("ssse3"))), \
			     apply_to = function)
#define DPDK_CLANG_TARGET 1
#else
#pragma GCC target("ssse3")
#endif
#endif
