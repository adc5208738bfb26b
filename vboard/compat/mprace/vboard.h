/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deprecated: the virtual board's header is <vboard/vboard.h> and its register function
 * vboard_register() (libvboard, pkg-config vboard). This header and mp_vboard_register()
 * stay for one release.
 */
#ifndef MPRACE_VBOARD_H
#define MPRACE_VBOARD_H

#include <vboard/vboard.h>

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((deprecated("use vboard_register() from <vboard/vboard.h>")))
int mp_vboard_register(void);

#ifdef __cplusplus
}
#endif

#endif /* MPRACE_VBOARD_H */
