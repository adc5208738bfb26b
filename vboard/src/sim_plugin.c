// SPDX-License-Identifier: LGPL-2.1-or-later
/* The entry libpcidriver's plugin loader looks up in sim.so (pcidriver/backend.h). */
#include "backends.h"

const struct pd_backend_ops *pd_backend_plugin(void);

const struct pd_backend_ops *pd_backend_plugin(void)
{
	return &sim_backend_ops;
}
