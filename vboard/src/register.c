// SPDX-License-Identifier: LGPL-2.1-or-later
/* Link-time registration of the virtual board and the simulated RTL (vboard/vboard.h). */
#include "backends.h"
#include "vboard/vboard.h"

int vboard_register(void)
{
	int ret = pd_backend_register(&emu_backend_ops);

	return ret ? ret : pd_backend_register(&sim_backend_ops);
}

/* The name before this release, exported for one release (deprecated: compat/mprace/vboard.h). */
int mp_vboard_register(void);

int mp_vboard_register(void)
{
	return vboard_register();
}
