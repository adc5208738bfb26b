/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one table of byte counts as written by users: what pd_parse_size(), the tools'
 * tools::parse_size() and the backends' size options (emu:, sim:) must make of each. Tested
 * from C (tests/pcidriver, tests/vboard) and from C++ (tests/tools) against this same table.
 */
#ifndef MPRACE_TEST_SIZE_CASES_H
#define MPRACE_TEST_SIZE_CASES_H

#include <stdint.h>

struct size_case {
	const char *text;
	int ok;                 /* 1: accepted as `bytes`; 0: refused */
	uint64_t bytes;
};

static const struct size_case size_cases[] = {
	{ "0", 1, 0 },
	{ "4096", 1, 4096 },
	{ "0x1000", 1, 4096 },
	{ "0X10k", 1, 16384 },
	{ "4K", 1, 4096 },
	{ "4k", 1, 4096 },
	{ "4KB", 1, 4096 },
	{ "4kib", 1, 4096 },
	{ "16M", 1, 16u << 20 },
	{ "16MiB", 1, 16u << 20 },
	{ "1G", 1, 1u << 30 },
	{ "1T", 1, 1ull << 40 },
	{ "1.5M", 1, 1572864 },
	{ "0.5K", 1, 512 },
	{ "2.0", 1, 2 },
	{ "4096B", 1, 4096 },
	{ "18446744073709551615", 1, UINT64_MAX },
	{ "", 0, 0 },
	{ "K", 0, 0 },
	{ "4X", 0, 0 },
	{ "4Kx", 0, 0 },
	{ "4 K", 0, 0 },
	{ " 4K", 0, 0 },
	{ "-4K", 0, 0 },
	{ "+4K", 0, 0 },
	{ "1.3", 0, 0 },
	{ "0.3K", 0, 0 },
	{ "0x", 0, 0 },
	{ "0x1.5K", 0, 0 },
	{ "1e3", 0, 0 },
	{ ".", 0, 0 },
	{ "4KiBB", 0, 0 },
	{ "4Ki", 0, 0 },
	{ "18446744073709551616", 0, 0 },
	{ "16777216T", 0, 0 },
};

#define SIZE_CASES_COUNT (sizeof(size_cases) / sizeof(size_cases[0]))

#endif /* MPRACE_TEST_SIZE_CASES_H */
