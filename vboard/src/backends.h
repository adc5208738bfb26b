/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The backends of this library, registered by register.c or handed out by the plugins. */
#ifndef VBOARD_BACKENDS_H
#define VBOARD_BACKENDS_H

#include "pcidriver/backend.h"

extern const struct pd_backend_ops emu_backend_ops;   /* "emu:", the model (emu_backend.c) */
extern const struct pd_backend_ops sim_backend_ops;   /* "sim:", the RTL (sim_backend.c) */

#endif /* VBOARD_BACKENDS_H */
