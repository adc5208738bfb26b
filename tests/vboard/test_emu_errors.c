// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 3: errors (docs/dma-engine.md section 5). Each bad
 * descriptor in the spec's check order, RING_CONFIG, the IOMMU (unmapped, past the end,
 * freed, wrong direction, descriptor fetch, completion write-back), ABORT and RESET recovery,
 * TIMEOUT, injected faults, and closing the device in the middle of everything.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_emu_util.h"

static const uint32_t DONE = MP_DESC_RESULT_STATUS_DONE_MASK;

static uint32_t err_rec(uint32_t code)
{
	return MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_ERROR_MASK |
	       (code << MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT);
}

static uint32_t err_status(uint32_t code)
{
	return MP_STATE_ERROR | (code << MP_CHREG_STATUS_ERROR_CODE_SHIFT);
}

/* Resets channel ch and the ring bookkeeping, then checks the reset state. */
static void chan_reset(struct eb *b, struct ering *r)
{
	cwr(b, r->ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_STATUS), MP_STATE_IDLE);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_HEAD), 0);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_TAIL), 0);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_BYTES_LO), 0);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_CONTROL), 0);
	r->tail = 0;
	memset(r->mem, 0, (size_t)r->size * MP_ENGINE_DESC_SIZE);
}

/* One descriptor with raw words; expects it to fail with `code`. */
static void expect_desc_error(struct eb *b, struct ering *r, unsigned int ch, uint64_t addr,
			      uint32_t len_word, uint32_t ctrl, uint32_t code, const char *what)
{
	uint32_t st;

	chan_reset(b, r);
	wr(b, MP_REG_IRQ_STATUS, 7);
	run(b, ch);
	ering_put_raw(r, addr, len_word, ctrl);
	ering_put_raw(r, addr, 64, 0);       /* a good one behind it: never processed */
	ering_doorbell(b, r);
	st = wait_state(b, ch, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_msg(st == err_status(code), "%s: STATUS 0x%x, want code %u", what, st, code);
	ck_assert_msg(rec_status(r, 0) == err_rec(code), "%s: record 0x%x", what, rec_status(r, 0));
	ck_assert_uint_eq(rec_bytes(r, 0), 0);
	ck_assert_uint_eq(crd(b, ch, MP_CHREG_HEAD), 0);
	ck_assert(rd(b, MP_REG_IRQ_STATUS) & MP_REG_IRQ_STATUS_ERROR_MASK);
	sleep_us(5000);
	ck_assert_uint_eq(rec_status(r, 1), 0);
	ck_assert_uint_eq(crd(b, ch, MP_CHREG_STATUS), err_status(code));
}

START_TEST(test_descriptor_errors)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t a;
	unsigned int ch;
	const uint32_t max = MP_ENGINE_MAX_DESC_LEN;

	eb_open(&b, "emu:link=ideal");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 2 * max, &km), 0);
	a = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		ering_init(&b, &r, ch, 8);
		/* one rule at a time */
		expect_desc_error(&b, &r, ch, a, 1u << 25, 0, MP_ERR_DESC_RESERVED, "LEN bit 25");
		expect_desc_error(&b, &r, ch, a, 64u | 1u << 31, 0, MP_ERR_DESC_RESERVED, "LEN bit 31");
		expect_desc_error(&b, &r, ch, a, 64, 1u << 3, MP_ERR_DESC_RESERVED, "CTRL bit 3");
		expect_desc_error(&b, &r, ch, a, 64, 1u << 31, MP_ERR_DESC_RESERVED, "CTRL bit 31");
		expect_desc_error(&b, &r, ch, a, 0, 0, MP_ERR_DESC_LENGTH, "length 0");
		expect_desc_error(&b, &r, ch, a, max + 4, 0, MP_ERR_DESC_LENGTH, "16 MiB + 4");
		expect_desc_error(&b, &r, ch, a, 0x1fffffc, 0, MP_ERR_DESC_LENGTH, "largest BYTES");
		expect_desc_error(&b, &r, ch, a + 2, 64, 0, MP_ERR_DESC_ALIGN, "address");
		expect_desc_error(&b, &r, ch, a + (1ull << 32) + 1, 64, 0, MP_ERR_DESC_ALIGN, "address");
		expect_desc_error(&b, &r, ch, a, 66, 0, MP_ERR_DESC_ALIGN, "length");
		/* the order: reserved, then length, then alignment */
		expect_desc_error(&b, &r, ch, a + 1, 1u << 25, 1u << 4, MP_ERR_DESC_RESERVED, "all");
		expect_desc_error(&b, &r, ch, a + 1, 0, 0, MP_ERR_DESC_LENGTH, "length+align");
		expect_desc_error(&b, &r, ch, a + 2, max + 2, 0, MP_ERR_DESC_LENGTH, "max+align");
		/* the checks come before any address translation: unmapped + bad length */
		expect_desc_error(&b, &r, ch, 0x10, 0, 0, MP_ERR_DESC_LENGTH, "unmapped");
		/* and recovery: RESET and the same ring works */
		chan_reset(&b, &r);
		run(&b, ch);
		ering_put(&b, &r, a, max, 0);
		ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
		ck_assert_uint_eq(rec_bytes(&r, 0), max);
		cwr(&b, ch, MP_CHREG_CONTROL, 0);
		chan_reset(&b, &r);
		pd_kmem_free(r.km);
	}
	eb_close(&b);
}
END_TEST

static void expect_ring_config(struct eb *b, unsigned int ch, uint64_t base, uint32_t size,
			       uint32_t queue, const char *what)
{
	uint32_t st;

	cwr(b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	cwr(b, ch, MP_CHREG_RING_BASE_LO, (uint32_t)base);
	cwr(b, ch, MP_CHREG_RING_BASE_HI, (uint32_t)(base >> 32));
	cwr(b, ch, MP_CHREG_RING_SIZE, size);
	run(b, ch);
	cwr(b, ch, MP_CHREG_TAIL, queue);
	st = wait_state(b, ch, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_msg(st == err_status(MP_ERR_RING_CONFIG), "%s: STATUS 0x%x", what, st);
	ck_assert_uint_eq(crd(b, ch, MP_CHREG_HEAD), 0);
}

START_TEST(test_ring_config)
{
	struct eb b;
	pd_kmem *ring, *km;
	uint8_t *mem;
	uint64_t rb, a;
	unsigned int ch;
	size_t i;

	eb_open(&b, "emu:link=ideal");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 65536 * 32, &ring), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	rb = pd_kmem_bus_addr(ring);
	a = pd_kmem_bus_addr(km);
	mem = pd_kmem_ptr(ring);
	/* every slot holds a descriptor with a bad length: RING_CONFIG must come first */
	for (i = 0; i < 65536; i++) {
		put32le(mem + 32 * i + MP_DESC_ADDR_LO, (uint32_t)a);
		put32le(mem + 32 * i + MP_DESC_ADDR_HI, (uint32_t)(a >> 32));
		put32le(mem + 32 * i + MP_DESC_LEN, 0);
	}
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		expect_ring_config(&b, ch, rb + 16, 8, 1, "base not 32-byte aligned");
		expect_ring_config(&b, ch, rb + 4, 8, 1, "base +4");
		expect_ring_config(&b, ch, rb, 3, 1, "size 3");
		expect_ring_config(&b, ch, rb, 1, 1, "size 1");
		expect_ring_config(&b, ch, rb, 0, 1, "size 0");
		expect_ring_config(&b, ch, rb, 131072, 1, "size 2^17");
		expect_ring_config(&b, ch, rb, 8, 9, "TAIL - HEAD > RING_SIZE");
		expect_ring_config(&b, ch, rb, 2, 0xffffffffu, "TAIL behind HEAD");
		/* no record was written anywhere */
		for (i = 0; i < 16; i++)
			ck_assert_uint_eq(rec_status(&(struct ering){ .mem = mem, .size = 65536 }, (uint32_t)i), 0);
		/* a bad ring is harmless while HEAD == TAIL */
		cwr(&b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
		cwr(&b, ch, MP_CHREG_RING_SIZE, 3);
		run(&b, ch);
		sleep_us(5000);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_STATUS), MP_STATE_RUNNING);
		/* the extremes are fine: 2 and 65536 entries */
		cwr(&b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
		cwr(&b, ch, MP_CHREG_RING_BASE_LO, (uint32_t)rb);
		cwr(&b, ch, MP_CHREG_RING_BASE_HI, (uint32_t)(rb >> 32));
		cwr(&b, ch, MP_CHREG_RING_SIZE, 65536);
		run(&b, ch);
		cwr(&b, ch, MP_CHREG_TAIL, 65536);   /* completely full */
		ck_assert_uint_eq(wait_state(&b, ch, MP_STATE_ERROR, EMU_WAIT_MS),
				  err_status(MP_ERR_DESC_LENGTH));
		memset(mem + MP_DESC_RESULT_BYTES, 0, 8);   /* that one wrote a record */
	}
	eb_close(&b);
}
END_TEST

/* A transfer to `addr` of `len` bytes fails with BUS_ERROR after `moved` bytes. */
static void expect_bus_error(struct eb *b, struct ering *r, uint64_t addr, uint32_t len,
			     uint32_t moved, const char *what)
{
	uint32_t st;

	chan_reset(b, r);
	run(b, r->ch);
	ering_put(b, r, addr, len, 0);
	st = wait_state(b, r->ch, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_msg(st == err_status(MP_ERR_BUS_ERROR), "%s: STATUS 0x%x", what, st);
	ck_assert_msg(rec_status(r, 0) == err_rec(MP_ERR_BUS_ERROR), "%s: record 0x%x", what,
		      rec_status(r, 0));
	ck_assert_msg(rec_bytes(r, 0) == moved, "%s: %u bytes moved, want %u", what,
		      rec_bytes(r, 0), moved);
	ck_assert_uint_eq(crd(b, r->ch, MP_CHREG_HEAD), 0);
}

START_TEST(test_iommu_unmapped_and_past_end)
{
	struct eb b;
	struct ering r;
	pd_kmem *km, *odd;
	uint8_t *buf;
	uint64_t a, o;
	unsigned int ch;

	eb_open(&b, "emu:link=ideal");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 8192, &km), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 6000, &odd), 0);
	a = pd_kmem_bus_addr(km);
	o = pd_kmem_bus_addr(odd);
	buf = pd_kmem_ptr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		ering_init(&b, &r, ch, 8);
		memset(buf, 0xee, 8192);
		wr(&b, MP_REG_PATGEN_SEED, 0);
		wr(&b, MP_REG_CHECK_SEED, 0);
		expect_bus_error(&b, &r, 0x1000, 64, 0, "a low address nobody mapped");
		expect_bus_error(&b, &r, a - 4096, 64, 0, "the guard page before a mapping");
		expect_bus_error(&b, &r, a - 4, 64, 0, "starting just before a mapping");
		expect_bus_error(&b, &r, a + 8192, 4, 0, "the first byte after a mapping");
		expect_bus_error(&b, &r, a ^ (1ull << 40), 64, 0, "a high address nobody mapped");
		/* a range running past the end: the part inside moves, then the fault */
		expect_bus_error(&b, &r, a + 4096, 8192, 4096, "past the end");
		expect_bus_error(&b, &r, o + 4, 6000, 5996, "past a size that is no page multiple");
		if (ch == MP_CH_C2H) {
			ck_assert_int_eq(pattern_mismatch(buf + 4096, 1024, 0), -1);
			ck_assert_uint_eq(buf[4095], 0xee);
		} else {
			ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), (4096 + 5996) / 4);
		}
		chan_reset(&b, &r);
		pd_kmem_free(r.km);
	}
	eb_close(&b);
}
END_TEST

/* A user buffer whose size is no multiple of 4: the engine moves whole words, so a transfer
 * running into its last partial word faults there. */
START_TEST(test_iommu_odd_umem)
{
	uint8_t *buf = aligned_alloc(4096, 8192);
	struct pd_sg_entry sg;
	struct eb b;
	struct ering r;
	pd_umem *um;

	memset(buf, 0xee, 8192);
	eb_open(&b, "emu:link=ideal,sg=merged");
	ering_init(&b, &r, MP_CH_C2H, 8);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	ck_assert_int_eq(pd_umem_map(b.dev, buf + 8, 1001, PD_DMA_FROM_DEVICE, &um), 0);
	ck_assert_int_eq(pd_umem_sglist(um, &sg, 1), 1);
	ck_assert_uint_eq(sg.length, 1001);
	expect_bus_error(&b, &r, sg.bus_addr, 1004, 1000, "into the last partial word");
	ck_assert_int_eq(pattern_mismatch(buf + 8, 250, 0), -1);
	ck_assert_uint_eq(buf[8 + 1000], 0xee);
	/* the whole words inside are fine */
	chan_reset(&b, &r);
	wr(&b, MP_REG_PATGEN_SEED, 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, sg.bus_addr, 1000, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	eb_close(&b);
	free(buf);
}
END_TEST

START_TEST(test_iommu_freed)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t a;
	unsigned int ch;

	eb_open(&b, "emu:link=ideal");
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		ering_init(&b, &r, ch, 8);
		ck_assert_int_eq(pd_kmem_alloc(b.dev, 8192, &km), 0);
		a = pd_kmem_bus_addr(km);
		ck_assert_int_eq(pd_kmem_free(km), 0);
		expect_bus_error(&b, &r, a, 4096, 0, "freed kmem");
		/* a new allocation never gets the old bus address back */
		ck_assert_int_eq(pd_kmem_alloc(b.dev, 8192, &km), 0);
		ck_assert_uint_ne(pd_kmem_bus_addr(km), a);
		expect_bus_error(&b, &r, a, 4096, 0, "stale address after a new allocation");
		pd_kmem_free(km);
		chan_reset(&b, &r);
		pd_kmem_free(r.km);
	}
	eb_close(&b);
}
END_TEST

/* A buffer unmapped while the engine is in the middle of it: the rest faults. H2C shows the
 * progress in CHECK_WORDS, so the test knows that part of it had moved. */
START_TEST(test_iommu_unmapped_in_flight)
{
	const size_t size = 8u << 20;
	uint8_t *buf = aligned_alloc(4096, size);
	struct eb b;
	struct ering r;
	struct pd_sg_entry sg;
	pd_umem *um;
	uint64_t end;
	uint32_t st;

	eb_open(&b, "emu:link=gen1x1,sg=merged");   /* 8 MiB: ~37 ms */
	ering_init(&b, &r, MP_CH_H2C, 8);
	pattern_fill(buf, size / 4, 0);
	ck_assert_int_eq(pd_umem_map(b.dev, buf, size, PD_DMA_TO_DEVICE, &um), 0);
	ck_assert_int_eq(pd_umem_sglist(um, &sg, 1), 1);
	set_test(&b, 0, MP_H2C_SINK_CHECKER);
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, sg.bus_addr, (uint32_t)size, 0);
	end = now_ns() + EMU_WAIT_MS * 1000000ull;
	while (!rd(&b, MP_REG_CHECK_WORDS) && now_ns() < end)
		sleep_us(20);
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	st = wait_state(&b, MP_CH_H2C, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(rec_status(&r, 0), err_rec(MP_ERR_BUS_ERROR));
	ck_assert_uint_gt(rec_bytes(&r, 0), 0);
	ck_assert_uint_lt(rec_bytes(&r, 0), size);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), rec_bytes(&r, 0) / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	eb_close(&b);
	free(buf);
}
END_TEST

/* C2H into user memory that is unmapped mid-transfer: nothing is written into it once
 * pd_umem_unmap has returned (as after an IOTLB flush). */
START_TEST(test_iommu_no_write_after_unmap)
{
	const size_t size = 8u << 20;
	uint8_t *buf = aligned_alloc(4096, size), *snap = malloc(size);
	struct eb b;
	struct ering r;
	struct pd_sg_entry sg;
	pd_umem *um;
	uint32_t st;

	memset(buf, 0xee, size);
	eb_open(&b, "emu:link=gen1x1,sg=merged");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_umem_map(b.dev, buf, size, PD_DMA_FROM_DEVICE, &um), 0);
	ck_assert_int_eq(pd_umem_sglist(um, &sg, 1), 1);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, sg.bus_addr, (uint32_t)size, 0);
	ck_assert(wait_busy(&b, MP_CH_C2H, EMU_WAIT_MS));
	sleep_us(5000);
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	memcpy(snap, buf, size);
	st = wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(rec_status(&r, 0), err_rec(MP_ERR_BUS_ERROR));
	ck_assert_uint_lt(rec_bytes(&r, 0), size);
	ck_assert_int_eq(pattern_mismatch(buf, rec_bytes(&r, 0) / 4, 0), -1);
	sleep_us(10000);
	ck_assert_int_eq(memcmp(snap, buf, size), 0);
	eb_close(&b);
	free(snap);
	free(buf);
}
END_TEST

START_TEST(test_iommu_direction)
{
	uint8_t *buf = aligned_alloc(4096, 16384);
	struct pd_sg_entry sg;
	struct eb b;
	struct ering rc, rh;
	pd_umem *to_dev, *from_dev, *bidi;

	eb_open(&b, "emu:link=ideal,sg=merged");
	ering_init(&b, &rc, MP_CH_C2H, 8);
	ering_init(&b, &rh, MP_CH_H2C, 8);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	memset(buf, 0, 16384);
	ck_assert_int_eq(pd_umem_map(b.dev, buf, 4096, PD_DMA_TO_DEVICE, &to_dev), 0);
	ck_assert_int_eq(pd_umem_map(b.dev, buf + 4096, 4096, PD_DMA_FROM_DEVICE, &from_dev), 0);
	ck_assert_int_eq(pd_umem_map(b.dev, buf + 8192, 8192, PD_DMA_BIDIRECTIONAL, &bidi), 0);
	/* the device may not write TO_DEVICE memory, nor read FROM_DEVICE memory */
	pd_umem_sglist(to_dev, &sg, 1);
	expect_bus_error(&b, &rc, sg.bus_addr, 4096, 0, "C2H into TO_DEVICE");
	ck_assert_uint_eq(buf[0], 0);
	pd_umem_sglist(from_dev, &sg, 1);
	expect_bus_error(&b, &rh, sg.bus_addr, 4096, 0, "H2C from FROM_DEVICE");
	/* the allowed directions work */
	chan_reset(&b, &rc);
	chan_reset(&b, &rh);
	run(&b, MP_CH_C2H);
	run(&b, MP_CH_H2C);
	ering_put(&b, &rc, sg.bus_addr, 4096, 0);
	pd_umem_sglist(to_dev, &sg, 1);
	ering_put(&b, &rh, sg.bus_addr, 4096, 0);
	ck_assert_uint_eq(wait_done(&rc, 0, EMU_WAIT_MS), DONE);
	ck_assert_uint_eq(wait_done(&rh, 0, EMU_WAIT_MS), DONE);
	pd_umem_sglist(bidi, &sg, 1);
	ering_put(&b, &rc, sg.bus_addr, 8192, 0);
	ck_assert_uint_eq(wait_done(&rc, 1, EMU_WAIT_MS), DONE);
	ering_put(&b, &rh, sg.bus_addr, 8192, 0);
	ck_assert_uint_eq(wait_done(&rh, 1, EMU_WAIT_MS), DONE);
	eb_close(&b);
	free(buf);
}
END_TEST

/* Faults on the ring itself: the fetch (no record) and the completion write-back. */
START_TEST(test_ring_faults)
{
	uint8_t *ring = aligned_alloc(4096, 4096);
	struct eb b;
	struct ering r;
	struct pd_sg_entry sg;
	pd_kmem *km;
	pd_umem *um;
	uint32_t st;

	eb_open(&b, "emu:link=ideal,sg=merged");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	/* ring base nobody mapped: BUS_ERROR at the fetch */
	ering_init(&b, &r, MP_CH_C2H, 8);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO, 0x2000);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_HI, 0);
	run(&b, MP_CH_C2H);
	cwr(&b, MP_CH_C2H, MP_CHREG_TAIL, 1);
	st = wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_BUS_ERROR));
	/* a ring larger than its memory: the slot past the end faults */
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO, (uint32_t)r.bus);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_HI, (uint32_t)(r.bus >> 32));
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_SIZE, 16);   /* 8 slots of memory */
	r.tail = 0;
	run(&b, MP_CH_C2H);
	for (int i = 0; i < 8; i++)
		ering_put_raw(&r, pd_kmem_bus_addr(km), 64, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_C2H, 8, EMU_WAIT_MS));
	cwr(&b, MP_CH_C2H, MP_CHREG_TAIL, 9);
	st = wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 8);

	/* a ring the device may read but not write: the data moves, the record faults */
	memset(ring, 0, 4096);
	ck_assert_int_eq(pd_umem_map(b.dev, ring, 4096, PD_DMA_TO_DEVICE, &um), 0);
	pd_umem_sglist(um, &sg, 1);
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO, (uint32_t)sg.bus_addr);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_HI, (uint32_t)(sg.bus_addr >> 32));
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_SIZE, 8);
	memset(pd_kmem_ptr(km), 0xee, 4096);
	put32le(ring + MP_DESC_ADDR_LO, (uint32_t)pd_kmem_bus_addr(km));
	put32le(ring + MP_DESC_ADDR_HI, (uint32_t)(pd_kmem_bus_addr(km) >> 32));
	put32le(ring + MP_DESC_LEN, 64);
	wr(&b, MP_REG_PATGEN_SEED, 0);
	run(&b, MP_CH_C2H);
	cwr(&b, MP_CH_C2H, MP_CHREG_TAIL, 1);
	st = wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 0);
	ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(km), 16, 0), -1);
	ck_assert_uint_eq(*(uint32_t *)(void *)(ring + MP_DESC_RESULT_STATUS), 0);
	eb_close(&b);
	free(ring);
}
END_TEST

START_TEST(test_abort_idle)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_H2C, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	/* nothing in flight: ERROR/ABORTED at once, IRQ_STATUS.ERROR */
	cwr(&b, MP_CH_H2C, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_STATUS), err_status(MP_ERR_ABORTED));
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), MP_REG_IRQ_STATUS_ERROR_MASK);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_STATUS), MP_STATE_IDLE);
	/* RUN is ignored in ERROR; a second ABORT keeps the state */
	run(&b, MP_CH_H2C);
	cwr(&b, MP_CH_H2C, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_STATUS), err_status(MP_ERR_ABORTED));
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	sleep_us(5000);
	ck_assert_uint_eq(rec_status(&r, 0), 0);
	/* RESET recovers; the queued descriptor is forgotten (TAIL = 0) */
	chan_reset(&b, &r);
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	/* ABORT while RUNNING without work */
	cwr(&b, MP_CH_H2C, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	ck_assert_uint_eq(wait_state(&b, MP_CH_H2C, MP_STATE_ERROR, EMU_WAIT_MS),
			  err_status(MP_ERR_ABORTED));
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_HEAD), 1);
	eb_close(&b);
}
END_TEST

START_TEST(test_abort_in_flight)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint32_t st, moved;
	uint64_t end;
	const uint32_t len = 8u << 20;   /* gen1x1: ~37 ms */

	eb_open(&b, "emu:link=gen1x1");
	ering_init(&b, &r, MP_CH_H2C, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, len, &km), 0);
	pattern_fill(pd_kmem_ptr(km), len / 4, 1);
	set_test(&b, 0, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_CHECK_SEED, 1);
	run(&b, MP_CH_H2C);
	ering_put_raw(&r, pd_kmem_bus_addr(km), len, MP_DESC_CTRL_IRQ_MASK);
	ering_put_raw(&r, pd_kmem_bus_addr(km), len, 0);
	ering_doorbell(&b, &r);
	end = now_ns() + EMU_WAIT_MS * 1000000ull;
	while (!rd(&b, MP_REG_CHECK_WORDS) && now_ns() < end)   /* data is moving */
		sleep_us(20);
	ck_assert(crd(&b, MP_CH_H2C, MP_CHREG_STATUS) & MP_CHREG_STATUS_BUSY_MASK);
	cwr(&b, MP_CH_H2C, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	st = wait_state(&b, MP_CH_H2C, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_uint_eq(st, err_status(MP_ERR_ABORTED));
	ck_assert_uint_eq(rec_status(&r, 0), err_rec(MP_ERR_ABORTED));
	moved = rec_bytes(&r, 0);
	ck_assert_uint_gt(moved, 0);
	ck_assert_uint_lt(moved, len);
	ck_assert_uint_eq(moved % 4, 0);
	/* no completions still to come: the checker saw exactly the bytes reported */
	sleep_us(10000);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), moved / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	ck_assert_uint_eq(rec_status(&r, 1), 0);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_HEAD), 0);
	/* no DONE interrupt for it, but the error source */
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), MP_REG_IRQ_STATUS_ERROR_MASK);
	/* recovery without reloading anything: the stream goes on where it stopped */
	chan_reset(&b, &r);
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, pd_kmem_bus_addr(km) + moved, 4096, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), moved / 4 + 1024);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	eb_close(&b);
}
END_TEST

START_TEST(test_abort_stalled)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;

	eb_open(&b, "emu:link=ideal");   /* no user logic: a C2H from USER never gets data */
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 4096, 0);
	ck_assert(wait_busy(&b, MP_CH_C2H, EMU_WAIT_MS));
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_STATUS),
			  MP_STATE_RUNNING | MP_CHREG_STATUS_BUSY_MASK);
	ck_assert_uint_eq(rec_status(&r, 0), 0);
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS),
			  err_status(MP_ERR_ABORTED));
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), err_rec(MP_ERR_ABORTED));
	ck_assert_uint_eq(rec_bytes(&r, 0), 0);
	eb_close(&b);
}
END_TEST

START_TEST(test_reset_in_flight)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	const uint32_t len = 8u << 20;

	eb_open(&b, "emu:link=gen1x1");
	ering_init(&b, &r, MP_CH_H2C, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, len, &km), 0);
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 4096, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	ering_put(&b, &r, pd_kmem_bus_addr(km), len, 0);
	ck_assert(wait_busy(&b, MP_CH_H2C, EMU_WAIT_MS));
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_BYTES_LO), 4096);
	cwr(&b, MP_CH_H2C, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK | MP_CHREG_CONTROL_RUN_MASK);
	/* RESET wins over RUN in the same write; the descriptor in flight is forgotten */
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_H2C, MP_CHREG_STATUS)), MP_STATE_IDLE);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_HEAD), 0);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_TAIL), 0);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_BYTES_LO), 0);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_CONTROL), 0);
	sleep_us(10000);
	ck_assert_uint_eq(rec_status(&r, 1), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), 0);
	/* re-queue from slot 0 */
	r.tail = 0;
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 8192, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	ck_assert_uint_eq(rec_bytes(&r, 0), 8192);
	eb_close(&b);
}
END_TEST

START_TEST(test_global_reset_recovers)
{
	struct eb b;
	struct ering rc, rh;
	pd_kmem *km;

	eb_open(&b, "emu:link=ideal");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	ering_init(&b, &rc, MP_CH_C2H, 8);
	ering_init(&b, &rh, MP_CH_H2C, 8);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	run(&b, MP_CH_C2H);
	run(&b, MP_CH_H2C);
	ering_put(&b, &rc, 0x10, 4, 0);
	ering_put(&b, &rh, pd_kmem_bus_addr(km), 0, 0);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS), err_status(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(wait_state(&b, MP_CH_H2C, MP_STATE_ERROR, EMU_WAIT_MS), err_status(MP_ERR_DESC_LENGTH));
	wr(&b, MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	for (unsigned int ch = 0; ch < MP_CH_COUNT; ch++) {
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_STATUS), MP_STATE_IDLE);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), 0);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_TAIL), 0);
		/* the ring configuration is kept, like a channel RESET */
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_RING_SIZE), 8);
	}
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO), (uint32_t)rc.bus);
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0);
	/* TEST_CONTROL may change in ERROR (neither RUNNING nor BUSY) */
	memset(rc.mem, 0, 8 * MP_ENGINE_DESC_SIZE);
	rc.tail = 0;
	ering_put(&b, &rc, 0x10, 4, 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	run(&b, MP_CH_C2H);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS), err_status(MP_ERR_BUS_ERROR));
	set_test(&b, MP_C2H_SOURCE_LOOPBACK, MP_H2C_SINK_USER);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), MP_C2H_SOURCE_LOOPBACK);
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	/* run again without reprogramming the ring: slot 0 again */
	memset(rc.mem, 0, 8 * MP_ENGINE_DESC_SIZE);
	rc.tail = 0;
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &rc, pd_kmem_bus_addr(km), 4096, 0);
	ck_assert_uint_eq(wait_done(&rc, 0, EMU_WAIT_MS), DONE);
	ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(km), 1024, 0), -1);
	eb_close(&b);
}
END_TEST

/* TIMEOUT_US: a stalled descriptor fails after that long without progress. */
static void expect_timeout(const char *name, unsigned int ch, uint32_t src, uint32_t sink)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t t0, dt;
	uint32_t st;

	eb_open(&b, name);
	ering_init(&b, &r, ch, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 65536, &km), 0);
	set_test(&b, src, sink);
	cwr(&b, ch, MP_CHREG_TIMEOUT_US, 20000);
	run(&b, ch);
	t0 = now_ns();
	ering_put(&b, &r, pd_kmem_bus_addr(km), 65536, 0);
	st = wait_state(&b, ch, MP_STATE_ERROR, EMU_WAIT_MS);
	dt = now_ns() - t0;
	ck_assert_msg(st == err_status(MP_ERR_TIMEOUT), "%s: STATUS 0x%x", name, st);
	ck_assert_uint_eq(rec_status(&r, 0), err_rec(MP_ERR_TIMEOUT));
	ck_assert_uint_eq(rec_bytes(&r, 0), 0);
	ck_assert_msg(dt >= 20000000u, "%s: timed out after %llu ns", name, (unsigned long long)dt);
	ck_assert(rd(&b, MP_REG_IRQ_STATUS) & MP_REG_IRQ_STATUS_ERROR_MASK);
	eb_close(&b);
}

START_TEST(test_timeouts)
{
	expect_timeout("emu:link=ideal,stall=c2h", MP_CH_C2H, MP_C2H_SOURCE_PATTERN, 0);
	expect_timeout("emu:link=gen3x8,stall=h2c", MP_CH_H2C, 0, MP_H2C_SINK_CHECKER);
	expect_timeout("emu:link=ideal", MP_CH_C2H, MP_C2H_SOURCE_USER, 0);     /* no user logic */
	expect_timeout("emu:link=ideal", MP_CH_C2H, MP_C2H_SOURCE_LOOPBACK, 0); /* H2C idle */
}
END_TEST

/* stall=c2h:N stalls only descriptor N; TIMEOUT_US = 0 waits forever (until ABORT). */
START_TEST(test_stall_once)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;

	eb_open(&b, "emu:link=ideal,stall=c2h:1");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	ck_assert(wait_busy(&b, MP_CH_C2H, EMU_WAIT_MS));
	sleep_us(30000);
	ck_assert_uint_eq(rec_status(&r, 1), 0);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_STATUS), MP_STATE_RUNNING | MP_CHREG_STATUS_BUSY_MASK);
	/* arming TIMEOUT_US now ends the stall */
	cwr(&b, MP_CH_C2H, MP_CHREG_TIMEOUT_US, 1000);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS), err_status(MP_ERR_TIMEOUT));
	chan_reset(&b, &r);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	eb_close(&b);
}
END_TEST

/* linkdown=c2h:1: descriptor 0 completes; when descriptor 1 starts the board drops off the
 * link: every register and config-space read returns all-ones, writes are lost, and neither
 * the record, nor an interrupt, nor TIMEOUT_US's record comes. */
START_TEST(test_link_down)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t cfg[8];

	eb_open(&b, "emu:link=ideal,linkdown=c2h:1");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_IRQ_ENABLE, MP_REG_IRQ_STATUS_C2H_DONE_MASK | MP_REG_IRQ_STATUS_ERROR_MASK);
	cwr(&b, MP_CH_C2H, MP_CHREG_TIMEOUT_US, 1000);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
	ck_assert_int_ge(pd_irq_wait(b.dev, 0, EMU_WAIT_MS), 1);
	ck_assert_uint_eq(rd(&b, MP_REG_MAGIC), MP_ENGINE_MAGIC);
	ering_put(&b, &r, pd_kmem_bus_addr(km) + 64, 64, MP_DESC_CTRL_IRQ_MASK);
	/* the link goes down when the descriptor starts */
	{
		uint64_t end = now_ns() + (uint64_t)EMU_WAIT_MS * 1000000u;

		while (rd(&b, MP_REG_MAGIC) != 0xffffffffu && now_ns() < end)
			sleep_us(20);
	}
	ck_assert_uint_eq(rd(&b, MP_REG_MAGIC), 0xffffffffu);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_STATUS), 0xffffffffu);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0xffffffffu);
	wr(&b, MP_REG_SCRATCH, 0x1234);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0xffffffffu);
	ck_assert_int_eq(pd_cfg_read(b.dev, 0, cfg, sizeof(cfg)), 0);
	ck_assert_uint_eq(cfg[0] & cfg[3] & cfg[7], 0xff);
	/* well past TIMEOUT_US (1 ms): no record, no interrupt */
	sleep_us(50000);
	ck_assert_uint_eq(rec_status(&r, 1), 0);
	ck_assert_int_eq(pd_irq_wait(b.dev, 0, 0), -ETIMEDOUT);
	eb_close(&b);   /* closing a dead board ends its stalled channel */
}
END_TEST

static void buserr_at(const char *name, unsigned int ch, uint32_t n_bad)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint32_t n;
	const uint32_t len = 4096 + 8;

	eb_open(&b, name);
	ering_init(&b, &r, ch, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 8 * len, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	run(&b, ch);
	for (n = 0; n <= n_bad + 1; n++)
		ering_put_raw(&r, pd_kmem_bus_addr(km) + n * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert_uint_eq(wait_state(&b, ch, MP_STATE_ERROR, EMU_WAIT_MS), err_status(MP_ERR_BUS_ERROR));
	for (n = 0; n < n_bad; n++)
		ck_assert_uint_eq(rec_status(&r, n), DONE);
	ck_assert_uint_eq(rec_status(&r, n_bad), err_rec(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(rec_bytes(&r, n_bad), len / 2);   /* the fault hits the middle */
	ck_assert_uint_eq(rec_status(&r, n_bad + 1), 0);
	ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), n_bad);
	/* once only: after RESET the same descriptors go through */
	chan_reset(&b, &r);
	run(&b, ch);
	for (n = 0; n <= n_bad + 1; n++)
		ering_put_raw(&r, pd_kmem_bus_addr(km) + n * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, ch, n_bad + 2, EMU_WAIT_MS));
	eb_close(&b);
}

START_TEST(test_buserr_injection)
{
	buserr_at("emu:link=ideal,buserr=c2h:2", MP_CH_C2H, 2);
	buserr_at("emu:link=gen2x1,buserr=h2c:0", MP_CH_H2C, 0);
}
END_TEST

/* Closing stops every thread promptly, whatever the channels are doing. */
static void close_busy(const char *name, uint32_t src, uint32_t sink)
{
	struct eb b;
	struct ering rc, rh;
	pd_kmem *kc, *kh;
	uint64_t t0;
	int i;

	eb_open(&b, name);
	ering_init(&b, &rc, MP_CH_C2H, 8);
	ering_init(&b, &rh, MP_CH_H2C, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16u << 20, &kc), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16u << 20, &kh), 0);
	set_test(&b, src, sink);
	run(&b, MP_CH_C2H);
	run(&b, MP_CH_H2C);
	for (i = 0; i < 4; i++) {
		ering_put_raw(&rc, pd_kmem_bus_addr(kc), 16u << 20, 0);
		ering_put_raw(&rh, pd_kmem_bus_addr(kh), 16u << 20, 0);
	}
	ering_doorbell(&b, &rc);
	ering_doorbell(&b, &rh);
	sleep_us(5000);
	t0 = now_ns();
	eb_close(&b);
	ck_assert_msg(now_ns() - t0 < 2000000000ull, "%s: pd_close took %llu ns", name,
		      (unsigned long long)(now_ns() - t0));
}

START_TEST(test_close_mid_transfer)
{
	close_busy("emu:link=gen1x1", MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	close_busy("emu:link=ideal", MP_C2H_SOURCE_USER, MP_H2C_SINK_USER);        /* C2H stalled */
	close_busy("emu:link=ideal,fifo=4K", MP_C2H_SOURCE_USER, MP_H2C_SINK_LOOPBACK); /* FIFO full */
	close_busy("emu:link=ideal,stall=h2c,workers=2", MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_USER);
	close_busy("emu:link=ideal,workers=2", MP_C2H_SOURCE_LOOPBACK, MP_H2C_SINK_LOOPBACK);
}
END_TEST

/* pd_dmabuf_import: the model imports only dma-bufs (ones it can map; the QEMU suite's
 * dmabuf group imports real udmabufs), and says which kind of bad fd it got. */
START_TEST(test_dmabuf_import_refused)
{
	struct eb b;
	pd_umem *um = NULL;
	int mfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC), closed = dup(mfd);

	ck_assert_int_ge(mfd, 0);
	ck_assert_int_eq(ftruncate(mfd, 65536), 0);
	close(closed);
	eb_open(&b, "emu:");
	/* a memfd could be mapped, but it is no dma-buf */
	ck_assert_int_eq(pd_dmabuf_import(b.dev, mfd, PD_DMA_BIDIRECTIONAL, &um), -EINVAL);
	ck_assert_ptr_null(um);
	ck_assert_int_eq(pd_dmabuf_import(b.dev, closed, PD_DMA_TO_DEVICE, &um), -EBADF);
	ck_assert_int_eq(pd_dmabuf_import(b.dev, -1, PD_DMA_TO_DEVICE, &um), -EBADF);
	ck_assert_int_eq(pd_dmabuf_import(b.dev, mfd, (enum pd_dma_dir)0, &um), -EINVAL);
	ck_assert_int_eq(pd_dmabuf_import(b.dev, mfd, PD_DMA_TO_DEVICE, NULL), -EINVAL);
	ck_assert_int_eq(pd_dmabuf_import(NULL, mfd, PD_DMA_TO_DEVICE, &um), -EINVAL);
	eb_close(&b);
	close(mfd);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-errors");
	TCase *tc = tcase_create("emu-errors");

	tcase_add_test(tc, test_descriptor_errors);
	tcase_add_test(tc, test_ring_config);
	tcase_add_test(tc, test_iommu_unmapped_and_past_end);
	tcase_add_test(tc, test_iommu_odd_umem);
	tcase_add_test(tc, test_iommu_freed);
	tcase_add_test(tc, test_iommu_unmapped_in_flight);
	tcase_add_test(tc, test_iommu_no_write_after_unmap);
	tcase_add_test(tc, test_iommu_direction);
	tcase_add_test(tc, test_ring_faults);
	tcase_add_test(tc, test_abort_idle);
	tcase_add_test(tc, test_abort_in_flight);
	tcase_add_test(tc, test_abort_stalled);
	tcase_add_test(tc, test_reset_in_flight);
	tcase_add_test(tc, test_global_reset_recovers);
	tcase_add_test(tc, test_timeouts);
	tcase_add_test(tc, test_stall_once);
	tcase_add_test(tc, test_buserr_injection);
	tcase_add_test(tc, test_close_mid_transfer);
	tcase_add_test(tc, test_link_down);
	tcase_add_test(tc, test_dmabuf_import_refused);
	suite_add_tcase(s, tc);
	return s;
}
