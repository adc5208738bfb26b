/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers over the generated engine specification (engine_spec.h): field access, register
 * names, and the descriptor rules of docs/dma-engine.md section 3. Plain C, no state.
 */
#ifndef MPRACE_SPEC_H
#define MPRACE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "mprace-spec/engine_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "descriptors are little-endian in host memory; big-endian hosts need byte swaps here"
#endif

static inline uint32_t mp_field_get(uint32_t value, uint32_t mask, unsigned int shift)
{
	return (value & mask) >> shift;
}

static inline uint32_t mp_field_set(uint32_t value, uint32_t mask, unsigned int shift,
				    uint32_t field)
{
	return (value & ~mask) | ((field << shift) & mask);
}

/* MP_FIELD_GET(v, MP_CHREG_STATUS_STATE) reads the STATE field of a STATUS value. */
#define MP_FIELD_GET(v, f) mp_field_get((v), f##_MASK, f##_SHIFT)
#define MP_FIELD_SET(v, f, x) mp_field_set((v), f##_MASK, f##_SHIFT, (x))

/* BAR0 offset of a register by name, case-insensitive: global names ("SCRATCH") and channel
 * names prefixed with the channel ("C2H_HEAD"). Returns 0, or -ENOENT for an unknown name
 * and -EINVAL for NULL arguments. */
int mp_reg_offset(const char *name, uint32_t *offset);

/* Name of the register at a BAR0 offset, or NULL. */
const char *mp_reg_name(uint32_t offset);

/* The error code (MP_ERR_*) a conforming engine reports for this descriptor's words 0-3,
 * in the order of the spec's checks; MP_ERR_NONE when it is valid. */
unsigned int mp_desc_check(const struct mp_hw_desc *d);

/* Write words 0-3 and the cookie, and clear the completion record. Does not validate. */
void mp_desc_fill(struct mp_hw_desc *d, uint64_t bus_addr, uint32_t len, uint32_t ctrl,
		  uint64_t cookie);

/* Is this a usable ring size (a power of two in [ring_min_entries, ring_max_entries])? */
int mp_ring_size_valid(uint32_t entries);

#ifdef __cplusplus
}
#endif

#endif /* MPRACE_SPEC_H */
