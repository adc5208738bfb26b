// SPDX-License-Identifier: LGPL-2.1-or-later
/* Placeholder until the kernel backend lands ([pcidriver] issue): every call fails cleanly. */
#include <errno.h>
#include "backend.h"

static int kernel_open(pd_device *dev, const char *name) { return -ENODEV; }
static void kernel_close(pd_device *dev) { }

const struct pd_backend_ops pd_kernel_backend = {
	.name = "kernel",
	.open = kernel_open,
	.close = kernel_close,
};
