// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group compat32: the same ABI from a 32-bit process. The checks run in pdtest32, a
 * static i386 build of pdtest32.c with libpcidriver's front end and kernel backend; without
 * a 32-bit toolchain (gcc-multilib) it is not built and the checks are skipped.
 */
#include <stdio.h>
#include <unistd.h>

#include "pdtest.h"

const char *const compat32_checks[] = {
	"compat32: pd_open and pd_info from a 32-bit process",
	"compat32: BAR registers through the mapped BAR",
	"compat32: kmem is mapped at its 44-bit mmap offset",
	"compat32: umem SG list with 64-bit fields",
	"compat32: edu DMA umem -> device -> kmem, data compared",
	"compat32: interrupt wait",
	"compat32: raw ioctls: unknown ENOTTY, bad pointer EFAULT, version",
	NULL,
};

static void compat32_run(void)
{
	const char *const *c;

	if (access("/pdtest32", X_OK) == 0) {
		fflush(stdout);
		execl("/pdtest32", "pdtest32", (char *)NULL);
		pdt_diag("exec /pdtest32 failed");
		return;
	}
	for (c = compat32_checks; *c; c++)
		printf("ok - %s # SKIP no 32-bit build of pdtest (install gcc-multilib)\n", *c);
}

const struct pdt_group grp_compat32 = { "compat32", compat32_checks, compat32_run };
