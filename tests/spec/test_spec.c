// SPDX-License-Identifier: GPL-2.0
/* The spec helpers (mprace/spec.h) and the generated engine_spec.h they stand on. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "check_main.h"
#include "mprace/spec.h"
#include "mprace-spec/pattern.h"

START_TEST(test_descriptor_layout)
{
	/* The descriptor is 8 little-endian words; the struct must match the offsets. */
	ck_assert_uint_eq(sizeof(struct mp_hw_desc), MP_ENGINE_DESC_SIZE);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, addr_lo), MP_DESC_ADDR_LO);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, addr_hi), MP_DESC_ADDR_HI);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, len), MP_DESC_LEN);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, ctrl), MP_DESC_CTRL);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, result_bytes), MP_DESC_RESULT_BYTES);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, result_status), MP_DESC_RESULT_STATUS);
	ck_assert_uint_eq(offsetof(struct mp_hw_desc, sw_cookie_lo), MP_DESC_SW_COOKIE_LO);
	/* the completion record is one naturally aligned 8-byte write */
	ck_assert_uint_eq(MP_DESC_RESULT_BYTES % 8, 0);
	ck_assert_uint_eq(MP_DESC_RESULT_STATUS, MP_DESC_RESULT_BYTES + 4);
	/* a page holds a whole number of descriptors, so none straddles a page */
	ck_assert_uint_eq(MP_ENGINE_PAGE_SIZE % MP_ENGINE_DESC_SIZE, 0);
}
END_TEST

START_TEST(test_desc_fill_bytes)
{
	struct mp_hw_desc d;
	const unsigned char want[32] = {
		0x0c, 0x00, 0xef, 0xbe, 0x34, 0x12, 0x00, 0x00,  /* addr 0x1234beef000c */
		0x00, 0x10, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,  /* len 4096, IRQ|STOP */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* completion record cleared */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  /* cookie */
	};

	memset(&d, 0xa5, sizeof(d));
	mp_desc_fill(&d, 0x1234beef000cull, 4096, MP_DESC_CTRL_IRQ_MASK | MP_DESC_CTRL_STOP_MASK,
		     0x1122334455667788ull);
	ck_assert_mem_eq(&d, want, sizeof(want));
}
END_TEST

static unsigned int check_desc(uint64_t addr, uint32_t len, uint32_t ctrl)
{
	struct mp_hw_desc d;

	mp_desc_fill(&d, addr, len, ctrl, 0);
	return mp_desc_check(&d);
}

START_TEST(test_desc_rules)
{
	const uint32_t max = MP_ENGINE_MAX_DESC_LEN;

	ck_assert_uint_eq(check_desc(0x1000, 4, 0), MP_ERR_NONE);
	ck_assert_uint_eq(check_desc(0xfffffffc, max, 7), MP_ERR_NONE); /* crosses 4 GiB: fine */
	ck_assert_uint_eq(check_desc(0x1004, 4092, 0), MP_ERR_NONE);    /* odd aligned offset */
	ck_assert_uint_eq(check_desc(0x1000, 0, 0), MP_ERR_DESC_LENGTH);
	ck_assert_uint_eq(check_desc(0x1000, max + 4, 0), MP_ERR_DESC_LENGTH);
	ck_assert_uint_eq(check_desc(0x1002, 4, 0), MP_ERR_DESC_ALIGN);
	ck_assert_uint_eq(check_desc(0x1000, 6, 0), MP_ERR_DESC_ALIGN);
	ck_assert_uint_eq(check_desc(0x1000, 4, 1u << 3), MP_ERR_DESC_RESERVED);
	ck_assert_uint_eq(check_desc(0x1000, 1u << 25, 0), MP_ERR_DESC_RESERVED);
	/* order of checks: reserved before length before alignment */
	ck_assert_uint_eq(check_desc(0x1002, 0, 1u << 31), MP_ERR_DESC_RESERVED);
	ck_assert_uint_eq(check_desc(0x1002, 0, 0), MP_ERR_DESC_LENGTH);
}
END_TEST

START_TEST(test_register_names)
{
	uint32_t off = 0xdead;
	size_t i, j;

	ck_assert_int_eq(mp_reg_offset("SCRATCH", &off), 0);
	ck_assert_uint_eq(off, MP_REG_SCRATCH);
	ck_assert_int_eq(mp_reg_offset("h2c_tail", &off), 0);
	ck_assert_uint_eq(off, MP_CH_BASE(MP_CH_H2C) + MP_CHREG_TAIL);
	ck_assert_int_eq(mp_reg_offset("NOPE", &off), -ENOENT);
	ck_assert_int_eq(mp_reg_offset(NULL, &off), -EINVAL);
	ck_assert_str_eq(mp_reg_name(MP_CH_BASE(MP_CH_C2H) + MP_CHREG_HEAD), "C2H_HEAD");
	ck_assert_ptr_null(mp_reg_name(0x7fc));
	/* names and offsets unique, offsets aligned and inside BAR0 */
	for (i = 0; i < MP_REG_NAME_COUNT; i++) {
		ck_assert_uint_eq(mp_reg_names[i].offset % 4, 0);
		ck_assert_uint_lt(mp_reg_names[i].offset, MP_ENGINE_BAR0_SIZE);
		for (j = i + 1; j < MP_REG_NAME_COUNT; j++) {
			ck_assert_uint_ne(mp_reg_names[i].offset, mp_reg_names[j].offset);
			ck_assert_str_ne(mp_reg_names[i].name, mp_reg_names[j].name);
		}
	}
}
END_TEST

START_TEST(test_fields)
{
	uint32_t status = 0;

	status = MP_FIELD_SET(status, MP_CHREG_STATUS_STATE, MP_STATE_ERROR);
	status = MP_FIELD_SET(status, MP_CHREG_STATUS_ERROR_CODE, MP_ERR_TIMEOUT);
	ck_assert_uint_eq(status, 0x0602);
	ck_assert_uint_eq(MP_FIELD_GET(status, MP_CHREG_STATUS_STATE), MP_STATE_ERROR);
	ck_assert_uint_eq(MP_FIELD_GET(status, MP_CHREG_STATUS_ERROR_CODE), MP_ERR_TIMEOUT);
	ck_assert_uint_eq(MP_FIELD_GET(0xffffffffu, MP_DESC_LEN_BYTES), (1u << 25) - 1);
	/* every mask is the shifted field: no gaps, no overlap in the CAPS register */
	ck_assert_uint_eq(MP_REG_CAPS_DATAPATH_BYTES_MASK & MP_REG_CAPS_C2H_CHANNELS_MASK, 0);
	ck_assert_uint_eq(MP_REG_CAPS_MPS_MASK >> MP_REG_CAPS_MPS_SHIFT, 7);
}
END_TEST

START_TEST(test_ring_sizes_and_names)
{
	ck_assert(mp_ring_size_valid(2));
	ck_assert(mp_ring_size_valid(65536));
	ck_assert(!mp_ring_size_valid(1));
	ck_assert(!mp_ring_size_valid(0));
	ck_assert(!mp_ring_size_valid(96));
	ck_assert(!mp_ring_size_valid(131072));
	ck_assert_str_eq(mp_engine_error_name(MP_ERR_BUS_ERROR), "BUS_ERROR");
	ck_assert_str_eq(mp_engine_error_name(200), "UNKNOWN");
	ck_assert_uint_eq(MP_CH_BASE(MP_CH_H2C), MP_CH_H2C_BASE);
}
END_TEST

/* The pattern's byte stream by its definition (word n = seed + n, little-endian), one byte at a
 * time: what the whole-block paths of pattern.h must agree with. */
static uint8_t reference_byte(uint32_t seed, uint64_t b)
{
	uint32_t w = seed + (uint32_t)(b / 4);

	return (uint8_t)(w >> (8 * (b % 4)));
}

#define PATTERN_MAX 3000

START_TEST(test_pattern_fill)
{
	/* lengths around a block (256 bytes) and several; offsets of every alignment, one past
	 * 4 GiB words (the word counter wraps), a seed that wraps within the buffer */
	static const size_t lens[] = { 0, 1, 3, 4, 5, 255, 256, 257, 511, 512, 515, 1027, PATTERN_MAX };
	static const uint64_t poss[] = { 0, 1, 2, 3, 4, 6, 255, 4097, (1ull << 34) - 9 };
	static uint8_t buf[PATTERN_MAX + 16];
	const uint32_t seed = 0xfffffff0u;
	size_t i, l, p;

	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (p = 0; p < sizeof(poss) / sizeof(poss[0]); p++) {
			memset(buf, 0xa5, sizeof(buf));
			mp_pattern_fill(buf + 8, lens[l], poss[p], seed);
			for (i = 0; i < 8; i++) /* nothing before or after the range */
				ck_assert_uint_eq(buf[i], 0xa5);
			for (i = 8 + lens[l]; i < sizeof(buf); i++)
				ck_assert_uint_eq(buf[i], 0xa5);
			for (i = 0; i < lens[l]; i++)
				ck_assert_msg(buf[8 + i] == reference_byte(seed, poss[p] + i),
					      "length %zu at %llu: byte %zu is 0x%02x, want 0x%02x", lens[l],
					      (unsigned long long)poss[p], i, buf[8 + i],
					      reference_byte(seed, poss[p] + i));
		}
}
END_TEST

START_TEST(test_pattern_mismatches)
{
	/* every byte of a 3000-byte range (several blocks and a tail) wrong in turn, at offsets of
	 * every alignment: the checker names that byte, the counter counts it once */
	static const uint64_t poss[] = { 0, 1, 2, 3, 1026 };
	static uint8_t buf[PATTERN_MAX];
	const uint32_t seed = 0x12345678u;
	size_t b, p;

	for (p = 0; p < sizeof(poss) / sizeof(poss[0]); p++) {
		const uint64_t pos = poss[p];

		mp_pattern_fill(buf, sizeof(buf), pos, seed);
		ck_assert_int_eq(mp_pattern_find_mismatch(buf, sizeof(buf), pos, seed), -1);
		ck_assert_uint_eq(mp_pattern_count_mismatches(buf, sizeof(buf), pos, seed), 0);
		for (b = 0; reference_byte(seed, pos + b) == reference_byte(seed + 1, pos + b); b++)
			;
		ck_assert_int_eq(mp_pattern_find_mismatch(buf, sizeof(buf), pos, seed + 1), (int64_t)b);
		for (b = 0; b < sizeof(buf); b++) {
			buf[b] ^= 0x80;
			ck_assert_msg(mp_pattern_find_mismatch(buf, sizeof(buf), pos, seed) == (int64_t)b,
				      "at %llu, byte %zu wrong: found %lld", (unsigned long long)pos, b,
				      (long long)mp_pattern_find_mismatch(buf, sizeof(buf), pos, seed));
			ck_assert_uint_eq(mp_pattern_count_mismatches(buf, sizeof(buf), pos, seed), 1);
			if (b + 700 < sizeof(buf)) { /* a second one further on: the first is named */
				buf[b + 700] ^= 0x01;
				ck_assert_int_eq(mp_pattern_find_mismatch(buf, sizeof(buf), pos, seed),
						 (int64_t)b);
				ck_assert_uint_eq(mp_pattern_count_mismatches(buf, sizeof(buf), pos, seed),
						  2);
				buf[b + 700] ^= 0x01;
			}
			buf[b] ^= 0x80;
		}
		/* a whole block wrong counts every byte that differs */
		memset(buf + 300, 0, 512);
		{
			size_t want = 0, i;

			for (i = 300; i < 812; i++)
				want += reference_byte(seed, pos + i) != 0;
			ck_assert_uint_eq(mp_pattern_count_mismatches(buf, sizeof(buf), pos, seed), want);
		}
	}
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("spec");
	TCase *tc = tcase_create("spec");

	tcase_add_test(tc, test_descriptor_layout);
	tcase_add_test(tc, test_desc_fill_bytes);
	tcase_add_test(tc, test_desc_rules);
	tcase_add_test(tc, test_register_names);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_ring_sizes_and_names);
	tcase_add_test(tc, test_pattern_fill);
	tcase_add_test(tc, test_pattern_mismatches);
	suite_add_tcase(s, tc);
	return s;
}
