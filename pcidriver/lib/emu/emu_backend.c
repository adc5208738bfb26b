// SPDX-License-Identifier: LGPL-2.1-or-later
/* Placeholder until the virtual board lands ([libmprace] issue): every call fails cleanly. */
#include <errno.h>
#include "backend.h"

static int emu_open(pd_device *dev, const char *name) { return -ENODEV; }
static void emu_close(pd_device *dev) { }

const struct pd_backend_ops pd_emu_backend = {
	.name = "emu",
	.open = emu_open,
	.close = emu_close,
};
