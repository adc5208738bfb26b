// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "mprace/spec.h"

int mp_reg_offset(const char *name, uint32_t *offset)
{
	size_t i;

	if (!name || !offset)
		return -EINVAL;
	for (i = 0; i < MP_REG_NAME_COUNT; i++) {
		if (strcasecmp(name, mp_reg_names[i].name) == 0) {
			*offset = mp_reg_names[i].offset;
			return 0;
		}
	}
	return -ENOENT;
}

const char *mp_reg_name(uint32_t offset)
{
	size_t i;

	for (i = 0; i < MP_REG_NAME_COUNT; i++)
		if (mp_reg_names[i].offset == offset)
			return mp_reg_names[i].name;
	return NULL;
}

#define MP_DESC_CTRL_DEFINED \
	(MP_DESC_CTRL_IRQ_MASK | MP_DESC_CTRL_EOP_MASK | MP_DESC_CTRL_STOP_MASK)

unsigned int mp_desc_check(const struct mp_hw_desc *d)
{
	uint32_t len = MP_FIELD_GET(d->len, MP_DESC_LEN_BYTES);

	if ((d->len & ~MP_DESC_LEN_BYTES_MASK) || (d->ctrl & ~MP_DESC_CTRL_DEFINED))
		return MP_ERR_DESC_RESERVED;
	if (len == 0 || len > MP_ENGINE_MAX_DESC_LEN)
		return MP_ERR_DESC_LENGTH;
	if ((d->addr_lo | len) & (MP_ENGINE_GRANULE - 1))
		return MP_ERR_DESC_ALIGN;
	return MP_ERR_NONE;
}

void mp_desc_fill(struct mp_hw_desc *d, uint64_t bus_addr, uint32_t len, uint32_t ctrl,
		  uint64_t cookie)
{
	d->addr_lo = (uint32_t)bus_addr;
	d->addr_hi = (uint32_t)(bus_addr >> 32);
	d->len = len;
	d->ctrl = ctrl;
	d->result_bytes = 0;
	d->result_status = 0;
	d->sw_cookie_lo = (uint32_t)cookie;
	d->sw_cookie_hi = (uint32_t)(cookie >> 32);
}

int mp_ring_size_valid(uint32_t entries)
{
	return entries >= MP_ENGINE_RING_MIN_ENTRIES && entries <= MP_ENGINE_RING_MAX_ENTRIES &&
	       (entries & (entries - 1)) == 0;
}
