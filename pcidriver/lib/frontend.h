/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside libpcidriver (not installed): the backend registry (backend_registry.c) as the front
 * end (pcidriver.c) uses it, and the built-in kernel backend (backend_kernel.c).
 */
#ifndef PCIDRIVER_FRONTEND_H
#define PCIDRIVER_FRONTEND_H

#include <stddef.h>

#include "pcidriver/backend.h"

/* Inside the library only: not exported from libpcidriver.so. */
#pragma GCC visibility push(hidden)

extern const struct pd_backend_ops pd_kernel_backend;

/* The length of the backend prefix of "PREFIX" or "PREFIX:OPTIONS"; 0 if name has none. */
size_t pd_backend_prefix_len(const char *name);

/* The backend serving prefix[0 .. len): registered, else (shared builds) a plugin loaded now;
 * NULL with the reason in pd_open_error() when there is none. */
const struct pd_backend_ops *pd_backend_find(const char *prefix, size_t len);

/* Calls fn for each prefix available now: registered, then plugins not loaded yet. */
void pd_backend_each(void (*fn)(const char *prefix, void *arg), void *arg);

/* Empties pd_open_error()'s text for this thread (pd_backend_set_error sets it). */
void pd_clear_open_error(void);

#pragma GCC visibility pop

#endif /* PCIDRIVER_FRONTEND_H */
