// SPDX-License-Identifier: GPL-2.0
/* The C API of libmprace (mprace/mprace.h), from C, on the virtual board. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "mprace/mprace.h"
#include "mprace-spec/pattern.h"

static void fill(void *p, size_t len, uint32_t seed)
{
	mp_pattern_fill(p, len, 0, seed);
}

static int matches(const void *p, size_t len, uint32_t seed)
{
	return mp_pattern_find_mismatch(p, len, 0, seed) < 0;
}

/* A board on the virtual board, with its identity read. */
static mp_board *open_board(void)
{
	mp_board *b = NULL;

	ck_assert_int_eq(mp_board_open("emu:", 0, &b), 0);
	ck_assert_ptr_nonnull(b);
	return b;
}

START_TEST(test_identify)
{
	mp_board *b = open_board();
	struct mp_board_info info;

	ck_assert_int_eq(mp_board_identify(b, &info), 0);
	ck_assert_uint_eq(info.magic, MP_ENGINE_MAGIC);
	ck_assert_uint_eq(info.version_major, MP_ENGINE_VERSION_MAJOR);
	ck_assert_uint_eq(info.backend, PD_BACKEND_EMU);
	ck_assert_uint_eq(info.pattern_generator, 1);
	ck_assert_uint_eq(info.checker, 1);
	ck_assert_uint_eq(info.loopback, 1);
	ck_assert_uint_ge(info.max_payload, 128);
	ck_assert_uint_ge(info.bar_size[0], MP_ENGINE_BAR0_SIZE);
	ck_assert_ptr_nonnull(mp_board_device(b));
	ck_assert_int_eq(mp_board_close(b), 0);
	ck_assert_int_eq(mp_board_close(NULL), 0);
}
END_TEST

START_TEST(test_registers)
{
	mp_board *b = open_board();
	uint32_t v = 0;

	ck_assert_int_eq(mp_reg_write(b, MP_REG_SCRATCH, 0xc0ffee), 0);
	ck_assert_int_eq(mp_reg_read(b, MP_REG_SCRATCH, &v), 0);
	ck_assert_uint_eq(v, 0xc0ffee);
	ck_assert_int_eq(mp_reg_read(b, 3, &v), -EINVAL);
	ck_assert_int_eq(mp_reg_read(b, 0x100000, &v), -EINVAL);
	ck_assert_int_eq(mp_reg_read(b, 0, NULL), -EINVAL);
	ck_assert_int_eq(mp_bar_read(b, 0, MP_REG_MAGIC, &v, 4), 0);
	ck_assert_uint_eq(v, MP_ENGINE_MAGIC);
	ck_assert_int_eq(mp_board_reset(b), 0);
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_test_routing(b, 7, MP_H2C_SINK_CHECKER), -EINVAL);
	mp_board_close(b);
}
END_TEST

START_TEST(test_open_variants)
{
	mp_board *b = NULL;

	ck_assert_int_eq(mp_board_open("emu:nonsense=1", 0, &b), -EINVAL);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(mp_board_open_index(100000, 0, &b), -ENODEV);
	ck_assert_int_eq(mp_board_open(NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(mp_board_open(NULL, 0, &b), 0); /* $PCIDRIVER_DEVICE = emu: */
	mp_board_close(b);
}
END_TEST

START_TEST(test_errno_texts)
{
	ck_assert_str_ne(mp_strerror(-EAGAIN), "");
	ck_assert_int_eq(mp_errno_from_engine_error(MP_ERR_BUS_ERROR), EIO);
	ck_assert_int_eq(mp_errno_from_engine_error(MP_ERR_ABORTED), ECANCELED);
}
END_TEST

/* A failed open says which board and why in mp_last_error(); the texts are constants. */
START_TEST(test_open_errors)
{
	mp_board *b = NULL;

	if (access("/dev/fpga9", F_OK) != 0) {
		ck_assert_int_eq(mp_board_open("/dev/fpga9", 0, &b), -ENODEV);
		ck_assert_ptr_null(b);
		ck_assert_msg(strstr(mp_last_error(), "/dev/fpga9") &&
			      strstr(mp_last_error(), "pcidriver.ko"), "%s", mp_last_error());
		/* the errno's text appears once */
		ck_assert_ptr_nonnull(strstr(mp_last_error(), "No such device"));
		ck_assert_ptr_null(strstr(strstr(mp_last_error(), "No such device") + 1,
					  "No such device"));
	}
	ck_assert_int_eq(mp_board_open("emu:link=gen9x1", 0, &b), -EINVAL);
	ck_assert_msg(strstr(mp_last_error(), "link=gen9x1"), "%s", mp_last_error());
	ck_assert_int_eq(mp_board_open("nonsense", 0, &b), -ENODEV);
	ck_assert_msg(strstr(mp_last_error(), "nonsense"), "%s", mp_last_error());
	ck_assert_ptr_eq(mp_strerror(-99999), mp_strerror(-99998));
	ck_assert_ptr_nonnull(strstr(mp_strerror(-99999), "unknown"));
}
END_TEST

/* Misuse of the C API fails cleanly, also after the board was closed under the handles. */
START_TEST(test_misuse)
{
	mp_board *b;
	mp_buffer *kbuf, *ubuf;
	mp_engine *e;
	mp_transfer *t = NULL;
	struct mp_dma_request req;
	uint32_t words;
	void *mem = aligned_alloc(4096, 8192);
	int bad_dir = 7;

	ck_assert_ptr_nonnull(mem);
	ck_assert_int_eq(mp_board_open("emu:link=ideal", 0, &b), 0);
	ck_assert_int_eq(mp_checker_read(b, NULL, NULL), -EINVAL);
	ck_assert_int_eq(mp_checker_read(b, &words, NULL), 0);
	/* an int that is none of the enum's values (no undefined behaviour on the way) */
	ck_assert_int_eq(mp_buffer_wrap(b, mem, 8192, (enum pd_dma_dir)bad_dir, &ubuf), -EINVAL);
	ck_assert_int_eq(mp_buffer_wrap(b, mem, 8192, PD_DMA_FROM_DEVICE, &ubuf), 0);
	{
		mp_buffer *imp = (mp_buffer *)1;
		int mfd = memfd_create("plain", MFD_CLOEXEC);

		ck_assert_int_eq(mp_buffer_import_dmabuf(b, mfd, PD_DMA_TO_DEVICE, &imp), -EINVAL);
		ck_assert_ptr_null(imp);
		ck_assert_int_eq(mp_buffer_import_dmabuf(b, mfd, (enum pd_dma_dir)bad_dir, &imp),
				 -EINVAL);
		close(mfd);
		ck_assert_int_eq(mp_buffer_import_dmabuf(b, mfd, PD_DMA_TO_DEVICE, &imp), -EBADF);
		ck_assert_str_ne(mp_last_error(), "");
	}
	ck_assert_int_eq(mp_buffer_sync(ubuf, (enum pd_sync_dir)bad_dir), -EINVAL);
	ck_assert_int_eq(mp_buffer_alloc(b, 8192, &kbuf), 0);
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_engine_open(b, NULL, &e), 0);
	req.buf = kbuf;
	req.offset = 0;
	req.length = 4096;
	req.flags = 0;
	req.reserved = 1;
	ck_assert_int_eq(mp_dma_submitv(e, MP_CH_C2H, &req, 1, &t), -EINVAL);
	ck_assert_msg(strstr(mp_last_error(), "reserved"), "%s", mp_last_error());
	ck_assert_ptr_null(t);
	req.reserved = 0;
	ck_assert_int_eq(mp_dma_submitv(e, MP_CH_C2H, &req, 1, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 10000), 0);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_engine_poll(e, MP_CH_C2H), 0);
	ck_assert_int_eq(mp_buffer_sync(ubuf, PD_SYNC_FOR_CPU), 0);
	/* the board goes first: the other handles answer ENODEV */
	ck_assert_int_eq(mp_board_close(b), 0);
	ck_assert_int_eq(mp_engine_poll(e, MP_CH_C2H), -ENODEV);
	ck_assert_int_eq(mp_buffer_sync(ubuf, PD_SYNC_FOR_CPU), -ENODEV);
	ck_assert_int_eq(mp_buffer_sync(kbuf, PD_SYNC_FOR_DEVICE), -ENODEV);
	mp_engine_close(e);
	mp_buffer_free(ubuf);
	mp_buffer_free(kbuf);
	free(mem);
}
END_TEST

/* The fixture of the transfer tests: a board with its engine (polling, or interrupts for
 * loop index 1) and an 8-slot ring, a 1 MiB kmem buffer and a user buffer over 1 MiB - 8 of
 * mmap'd memory at a 8-byte offset; pattern generator -> C2H, H2C -> checker. */
struct rig {
	mp_board *b;
	mp_engine *e;
	mp_buffer *kbuf, *ubuf;
	void *mem;
};

static void rig_open(struct rig *r, int irq)
{
	struct mp_engine_options o;

	ck_assert_int_eq(mp_board_open("emu:link=ideal", 0, &r->b), 0);
	mp_engine_options_init(&o);
	o.ring_entries = 8;
	o.flags = irq ? MP_ENGINE_IRQ : 0;
	ck_assert_int_eq(mp_engine_open(r->b, &o, &r->e), 0);
	ck_assert_int_eq(mp_buffer_alloc(r->b, 1 << 20, &r->kbuf), 0);
	r->mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(r->mem, MAP_FAILED);
	ck_assert_int_eq(mp_buffer_wrap(r->b, (char *)r->mem + 8, (1 << 20) - 8, PD_DMA_BIDIRECTIONAL,
					&r->ubuf), 0);
	ck_assert_int_eq(mp_test_routing(r->b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), 0);
}

static void rig_close(struct rig *r)
{
	ck_assert_int_eq(mp_engine_close(r->e), 0);
	ck_assert_int_eq(mp_buffer_free(r->ubuf), 0);
	ck_assert_int_eq(mp_buffer_free(r->kbuf), 0);
	ck_assert_int_eq(mp_board_close(r->b), 0);
	munmap(r->mem, 1 << 20);
}

START_TEST(test_one_engine_per_board)
{
	struct rig r;
	struct mp_engine_options o;
	mp_engine *second = NULL;

	rig_open(&r, _i);
	mp_engine_options_init(&o);
	ck_assert_int_eq(mp_engine_open(r.b, &o, &second), -EBUSY);
	ck_assert_ptr_null(second);
	rig_close(&r);
}
END_TEST

START_TEST(test_buffer_kinds_and_segments)
{
	struct rig r;
	struct pd_sg_entry sg[300];
	uint64_t total = 0;
	size_t n;
	int k;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_buffer_kind(r.kbuf), MP_BUFFER_KERNEL);
	ck_assert_uint_eq(mp_buffer_segment_count(r.kbuf), 1);
	ck_assert_int_eq(mp_buffer_kind(r.ubuf), MP_BUFFER_USER);
	ck_assert_ptr_eq(mp_buffer_ptr(r.ubuf), (char *)r.mem + 8);
	ck_assert_uint_eq(mp_buffer_size(r.ubuf), (1 << 20) - 8);
	n = mp_buffer_segment_count(r.ubuf);
	ck_assert_uint_ge(n, 1);
	k = mp_buffer_segments(r.ubuf, sg, 300);
	ck_assert_int_eq(k, (int)(n < 300 ? n : 300));
	for (int i = 0; i < k; i++)
		total += sg[i].length;
	if (n <= 300)
		ck_assert_uint_eq(total, (1 << 20) - 8);
	rig_close(&r);
}
END_TEST

/* Blocking C2H against the pattern generator, H2C against the checker. */
START_TEST(test_blocking_read_write)
{
	struct rig r;
	uint32_t words, errors;
	uint64_t bytes = 0;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_patgen_seed(r.b, 1234), 0);
	ck_assert_int_eq(mp_dma_read(r.e, r.ubuf, 4, 65536, &bytes), 0);
	ck_assert_uint_eq(bytes, 65536);
	ck_assert_int_eq(mp_buffer_sync(r.ubuf, PD_SYNC_FOR_CPU), 0);
	ck_assert(matches((char *)r.mem + 12, 65536, 1234));
	fill(mp_buffer_ptr(r.kbuf), 1 << 20, 99);
	ck_assert_int_eq(mp_checker_reset(r.b, 99), 0);
	ck_assert_int_eq(mp_dma_write(r.e, r.kbuf, 0, 1 << 20, MP_DMA_EOP, NULL), 0);
	ck_assert_int_eq(mp_checker_read(r.b, &words, &errors), 0);
	ck_assert_uint_eq(words, (1 << 20) / 4);
	ck_assert_uint_eq(errors, 0);
	rig_close(&r);
}
END_TEST

/* Asynchronous, and a batch of 64 through the 8-slot ring. */
START_TEST(test_async_and_batch)
{
	struct rig r;
	mp_transfer *t, *ts[64];
	struct mp_transfer_result res;
	struct mp_dma_request reqs[64];
	size_t n;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_patgen_seed(r.b, 0), 0);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, MP_WAIT_FOREVER), 0);
	ck_assert_int_eq(mp_transfer_result(t, &res), 0);
	ck_assert_uint_eq(res.done, 1);
	ck_assert_int_eq(res.error, 0);
	ck_assert_uint_eq(res.bytes, 4096);
	ck_assert_int_eq(mp_transfer_abort(t), 1); /* already finished */
	mp_transfer_release(t);
	for (int i = 0; i < 64; i++) {
		reqs[i].buf = r.kbuf;
		reqs[i].offset = 4096 + (uint64_t)i * 4096;
		reqs[i].length = 4096;
		reqs[i].flags = 0;
		reqs[i].reserved = 0;
	}
	ck_assert_int_eq(mp_dma_submitv(r.e, MP_CH_C2H, reqs, 64, ts), 0);
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(mp_transfer_wait(ts[i], 10000), 0);
		mp_transfer_release(ts[i]);
	}
	ck_assert(matches(mp_buffer_ptr(r.kbuf), 65 * 4096, 0));
	ck_assert_int_eq(mp_engine_outstanding(r.e, MP_CH_C2H, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(mp_engine_poll(r.e, MP_CH_C2H), 0);
	/* one bad request in a batch: none is submitted */
	reqs[5].length = 0;
	ck_assert_int_eq(mp_dma_submitv(r.e, MP_CH_C2H, reqs, 64, ts), -EINVAL);
	ck_assert_int_eq(mp_engine_outstanding(r.e, MP_CH_C2H, &n), 0);
	ck_assert_uint_eq(n, 0);
	rig_close(&r);
}
END_TEST

START_TEST(test_argument_errors)
{
	struct rig r;
	mp_transfer *t;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 0, 0, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 2, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 0, 5, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 1 << 20, 4, 0, &t), -ERANGE);
	ck_assert_int_eq(mp_dma_submit(r.e, 2, r.kbuf, 0, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, NULL, 0, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_read(r.e, r.kbuf, 0, (1 << 20) + 4, NULL), -ERANGE);
	ck_assert_int_eq(mp_engine_abort(r.e, 5), -EINVAL);
	ck_assert_int_eq(mp_transfer_wait(NULL, 0), -EINVAL);
	rig_close(&r);
}
END_TEST

/* A buffer in use cannot be freed; abort it, then free it. */
START_TEST(test_busy_buffer)
{
	struct rig r;
	mp_transfer *t;
	struct mp_transfer_result res;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_test_routing(r.b, MP_C2H_SOURCE_USER, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.ubuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 10), -EAGAIN);
	ck_assert_uint_eq(mp_buffer_active(r.ubuf), 1);
	ck_assert_int_eq(mp_buffer_free(r.ubuf), -EBUSY);
	ck_assert_int_eq(mp_buffer_abort(r.ubuf), 1);
	ck_assert_int_eq(mp_transfer_wait(t, 0), -ECANCELED);
	ck_assert_int_eq(mp_transfer_result(t, &res), 0);
	ck_assert_int_eq(res.error, -ECANCELED);
	ck_assert_uint_eq(res.engine_error, MP_ERR_ABORTED);
	mp_transfer_release(t);
	rig_close(&r);
}
END_TEST

/* The blocking call's wait timeout, and an address nobody mapped. */
START_TEST(test_timeout_and_bus_error)
{
	struct rig r;
	mp_transfer *t;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_engine_set_wait_timeout(r.e, 100), 0);
	ck_assert_int_eq(mp_test_routing(r.b, MP_C2H_SOURCE_USER, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_dma_read(r.e, r.kbuf, 0, 4096, NULL), -ETIMEDOUT);
	ck_assert_int_eq(mp_dma_submit_raw(r.e, MP_CH_H2C, 0xbad000000ull, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 10000), -EIO);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_engine_abort(r.e, MP_CH_C2H), 0);
	rig_close(&r);
}
END_TEST

/* Closing the board first: its transfers end ECANCELED, the engine and buffers refuse with
 * ENODEV, and then are freed. */
START_TEST(test_board_closed_first)
{
	struct rig r;
	mp_transfer *t;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_test_routing(r.b, MP_C2H_SOURCE_USER, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_board_close(r.b), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 0), -ECANCELED);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_dma_read(r.e, r.kbuf, 0, 4096, NULL), -ENODEV);
	ck_assert_int_eq(mp_engine_abort(r.e, MP_CH_C2H), -ENODEV);
	ck_assert_int_eq(mp_buffer_free(r.kbuf), 0);
	ck_assert_int_eq(mp_buffer_free(r.ubuf), 0);
	ck_assert_int_eq(mp_engine_close(r.e), 0);
	ck_assert_int_eq(mp_engine_close(NULL), 0);
	ck_assert_int_eq(mp_buffer_free(NULL), 0);
	munmap(r.mem, 1 << 20);
}
END_TEST

static long long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000LL + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The board drops off the link: mp_transfer_wait says why in mp_last_error(), and the
 * control calls answer -ENODEV at once; mp_engine_close and mp_board_close do not wait out
 * register polls (4 s each before). */
/* A lent channel from C: descriptors written by the program, the doorbell through the mapped
 * BAR0, the engine's own submits refused meanwhile, the channel back afterwards. */
START_TEST(test_lent_channel)
{
	struct rig r;
	struct mp_lease_info info;
	struct pd_sg_entry seg;
	mp_lease *lease = NULL, *again = (mp_lease *)&r;
	mp_transfer *t = NULL;
	uint64_t bytes = 0;
	uint32_t n;
	int i;

	rig_open(&r, _i);
	ck_assert_int_eq(mp_engine_lend(NULL, MP_CH_C2H, &lease), -EINVAL);
	ck_assert_int_eq(mp_engine_lend(r.e, 7, &lease), -EINVAL);
	ck_assert_int_eq(mp_engine_lend(r.e, MP_CH_C2H, NULL), -EINVAL);
	ck_assert_int_eq(mp_lease_info(NULL, &info), -EINVAL);
	ck_assert_int_eq(mp_lease_ring_doorbell(NULL, 1), -EINVAL);
	mp_lease_give_back(NULL);
	ck_assert_int_eq(mp_engine_lend(r.e, MP_CH_C2H, &lease), 0);
	ck_assert_int_eq(mp_engine_lend(r.e, MP_CH_C2H, &again), -EBUSY);
	ck_assert_ptr_null(again);
	ck_assert_int_eq(mp_dma_submit(r.e, MP_CH_C2H, r.kbuf, 0, 4096, 0, &t), -EBUSY);
	ck_assert_int_eq(mp_engine_abort(r.e, MP_CH_C2H), -EBUSY);
	ck_assert_int_eq(mp_lease_info(lease, &info), 0);
	ck_assert_uint_eq(info.ring_entries, 8);
	ck_assert_uint_eq(info.bar0_device_memory, 0);
	ck_assert_uint_ge(info.bar0_size, MP_ENGINE_BAR0_SIZE);
	ck_assert(info.doorbell ==
		  (volatile uint32_t *)((char *)info.bar0 + MP_CH_BASE(MP_CH_C2H) + MP_CHREG_TAIL));
	ck_assert_int_eq(mp_patgen_seed(r.b, 4321), 0);
	ck_assert_int_eq(mp_buffer_segments(r.kbuf, &seg, 1), 1);
	/* 11 descriptors of 1 KiB through the 8-entry ring, in batches of 3 */
	for (n = 0; n < 11;) {
		uint32_t k, end = n + 3 < 11 ? n + 3 : 11;

		for (k = n; k < end; k++) {
			struct mp_hw_desc *d = &info.ring[k % info.ring_entries];

			d->addr_lo = (uint32_t)(seg.bus_addr + k * 1024);
			d->addr_hi = (uint32_t)((seg.bus_addr + k * 1024) >> 32);
			d->len = 1024;
			d->ctrl = 0;
			d->result_bytes = 0;
			d->result_status = 0;
			d->sw_cookie_lo = k;
			d->sw_cookie_hi = 0;
		}
		ck_assert_int_eq(mp_lease_ring_doorbell(lease, end), 0);
		for (i = 0; i < 100000; i++) {
			if (__atomic_load_n(&info.ring[(end - 1) % info.ring_entries].result_status,
					    __ATOMIC_ACQUIRE) & MP_DESC_RESULT_STATUS_DONE_MASK)
				break;
			usleep(10);
		}
		ck_assert_uint_eq(__atomic_load_n(&info.ring[(end - 1) % info.ring_entries].result_status,
						  __ATOMIC_ACQUIRE),
				  MP_DESC_RESULT_STATUS_DONE_MASK);
		n = end;
	}
	ck_assert(matches(mp_buffer_ptr(r.kbuf), 11 * 1024, 4321));
	mp_lease_give_back(lease);
	ck_assert_int_eq(mp_patgen_seed(r.b, 55), 0);
	ck_assert_int_eq(mp_dma_read(r.e, r.kbuf, 0, 4096, &bytes), 0);
	ck_assert(matches(mp_buffer_ptr(r.kbuf), 4096, 55));
	/* a lease outlives its engine: doorbells refused, giving it back harmless */
	ck_assert_int_eq(mp_engine_lend(r.e, MP_CH_H2C, &lease), 0);
	ck_assert_int_eq(mp_engine_close(r.e), 0);
	ck_assert_int_eq(mp_lease_ring_doorbell(lease, 1), -ENODEV);
	mp_lease_give_back(lease);
	ck_assert_int_eq(mp_engine_open(r.b, NULL, &r.e), 0);
	rig_close(&r);
}
END_TEST

START_TEST(test_link_down)
{
	struct mp_engine_options o;
	struct mp_board_info info;
	struct timespec t0;
	mp_transfer *t;
	mp_buffer *buf;
	mp_engine *e;
	mp_board *b;

	ck_assert_int_eq(mp_board_open("emu:link=ideal,linkdown=c2h:1", 0, &b), 0);
	mp_engine_options_init(&o);
	o.flags = _i ? MP_ENGINE_IRQ : 0;
	ck_assert_int_eq(mp_engine_open(b, &o, &e), 0);
	ck_assert_int_eq(mp_buffer_alloc(b, 1 << 16, &buf), 0);
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_dma_read(e, buf, 0, 4096, NULL), 0);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, buf, 0, 4096, 0, &t), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(mp_transfer_wait(t, 20000), -ENODEV);
	ck_assert_msg(strstr(mp_last_error(), "all-ones"), "%s", mp_last_error());
	mp_transfer_release(t);
	ck_assert_int_eq(mp_board_identify(b, &info), -ENODEV);
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), -ENODEV);
	ck_assert_int_eq(mp_board_reset(b), -ENODEV);
	ck_assert_int_eq(mp_engine_close(e), 0);
	ck_assert_int_eq(mp_engine_open(b, &o, &e), -ENODEV);
	ck_assert_int_eq(mp_buffer_free(buf), 0);
	ck_assert_int_eq(mp_board_close(b), 0);
	ck_assert_msg(ms_since(&t0) < 1000, "%lld ms", ms_since(&t0));
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("mprace_capi");
	TCase *tc = tcase_create("capi");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_identify);
	tcase_add_test(tc, test_registers);
	tcase_add_test(tc, test_open_variants);
	tcase_add_test(tc, test_errno_texts);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_misuse);
	/* 0: polling, 1: interrupts */
	tcase_add_loop_test(tc, test_one_engine_per_board, 0, 2);
	tcase_add_loop_test(tc, test_buffer_kinds_and_segments, 0, 2);
	tcase_add_loop_test(tc, test_blocking_read_write, 0, 2);
	tcase_add_loop_test(tc, test_async_and_batch, 0, 2);
	tcase_add_loop_test(tc, test_argument_errors, 0, 2);
	tcase_add_loop_test(tc, test_busy_buffer, 0, 2);
	tcase_add_loop_test(tc, test_timeout_and_bus_error, 0, 2);
	tcase_add_loop_test(tc, test_board_closed_first, 0, 2);
	tcase_add_loop_test(tc, test_link_down, 0, 2);
	tcase_add_loop_test(tc, test_lent_channel, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
