/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The virtual board ("emu:") and the simulated RTL ("sim:", docs/cosim.md) linked into the
 * application (libvboard, pkg-config vboard).
 *
 * Shared builds need none of this: libpcidriver loads either as a plugin the first time a
 * device name starting with "emu" or "sim" is opened. Link this library and call
 * vboard_register() where that is not possible or not wanted: static builds (they load
 * no plugins), programs that must not depend on an installed plugin, tests of the model.
 */
#ifndef VBOARD_VBOARD_H
#define VBOARD_VBOARD_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Registers the virtual board as the backend of "emu" and "emu:OPTIONS", and the simulated
 * RTL as that of "sim" and "sim:OPTIONS", in this process (pd_backend_register). Returns 0,
 * also when they are registered already; -EEXIST when another backend serves either prefix. Thread-safe; call it before the first pd_open of "emu:".
 */
int vboard_register(void);

#ifdef __cplusplus
}
#endif

#endif /* VBOARD_VBOARD_H */
