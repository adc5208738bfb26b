// SPDX-License-Identifier: LGPL-2.1-or-later
/* Link-time registration of the virtual board (mprace/vboard.h). */
#include "emu.h"
#include "mprace/vboard.h"

int mp_vboard_register(void)
{
	return pd_backend_register(&emu_backend_ops);
}
