/* SPDX-License-Identifier: Apache-2.0 */
/* The close of engine_dpdk_begin.h, at the end of the file's DPDK part. */
#ifdef DPDK_CLANG_TARGET
#pragma clang attribute pop
#undef DPDK_CLANG_TARGET
#endif
