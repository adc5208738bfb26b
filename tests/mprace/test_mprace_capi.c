// SPDX-License-Identifier: GPL-2.0
/* The C API of libmprace (mprace/mprace.h), from C, on the virtual board. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "mprace/mprace.h"
#include "mprace/pattern.h"

static void fill(void *p, size_t len, uint32_t seed)
{
	mp_pattern_fill(p, len, 0, seed);
}

static int matches(const void *p, size_t len, uint32_t seed)
{
	return mp_pattern_find_mismatch(p, len, 0, seed) < 0;
}

START_TEST(test_board)
{
	mp_board *b = NULL;
	struct mp_board_info info;
	uint32_t v = 0;

	ck_assert_int_eq(mp_board_open("emu:", 0, &b), 0);
	ck_assert_ptr_nonnull(b);
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
	ck_assert_int_eq(mp_board_close(b), 0);
	ck_assert_int_eq(mp_board_close(NULL), 0);

	ck_assert_int_eq(mp_board_open("emu:nonsense=1", 0, &b), -EINVAL);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(mp_board_open_index(100000, 0, &b), -ENODEV);
	ck_assert_int_eq(mp_board_open(NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(mp_board_open(NULL, 0, &b), 0); /* $PCIDRIVER_DEVICE = emu: */
	mp_board_close(b);
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

START_TEST(test_transfers)
{
	mp_board *b;
	mp_engine *e;
	mp_buffer *kbuf, *ubuf;
	mp_transfer *t, *ts[64];
	struct mp_engine_options o;
	struct mp_transfer_result res;
	struct mp_dma_request reqs[64];
	uint32_t words, errors;
	uint64_t bytes = 0;
	size_t n;
	void *mem;

	ck_assert_int_eq(mp_board_open("emu:link=ideal", 0, &b), 0);
	mp_engine_options_init(&o);
	o.ring_entries = 8;
	o.flags = _i ? MP_ENGINE_IRQ : 0;
	ck_assert_int_eq(mp_engine_open(b, &o, &e), 0);
	{
		mp_engine *second = NULL;
		ck_assert_int_eq(mp_engine_open(b, &o, &second), -EBUSY);
		ck_assert_ptr_null(second);
	}
	ck_assert_int_eq(mp_buffer_alloc(b, 1 << 20, &kbuf), 0);
	ck_assert_int_eq(mp_buffer_kind(kbuf), MP_BUFFER_KERNEL);
	ck_assert_uint_eq(mp_buffer_segment_count(kbuf), 1);
	mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
	ck_assert_int_eq(mp_buffer_wrap(b, (char *)mem + 8, (1 << 20) - 8, PD_DMA_BIDIRECTIONAL, &ubuf), 0);
	ck_assert_int_eq(mp_buffer_kind(ubuf), MP_BUFFER_USER);
	ck_assert_ptr_eq(mp_buffer_ptr(ubuf), (char *)mem + 8);
	ck_assert_uint_eq(mp_buffer_size(ubuf), (1 << 20) - 8);
	n = mp_buffer_segment_count(ubuf);
	ck_assert_uint_ge(n, 1);
	{
		struct pd_sg_entry sg[300];
		uint64_t total = 0;
		int k = mp_buffer_segments(ubuf, sg, 300);
		ck_assert_int_eq(k, (int)(n < 300 ? n : 300));
		for (int i = 0; i < k; i++)
			total += sg[i].length;
		if (n <= 300)
			ck_assert_uint_eq(total, (1 << 20) - 8);
	}

	/* blocking C2H against the pattern generator, H2C against the checker */
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_patgen_seed(b, 1234), 0);
	ck_assert_int_eq(mp_dma_read(e, ubuf, 4, 65536, &bytes), 0);
	ck_assert_uint_eq(bytes, 65536);
	ck_assert_int_eq(mp_buffer_sync(ubuf, PD_SYNC_FOR_CPU), 0);
	ck_assert(matches((char *)mem + 12, 65536, 1234));
	fill(mp_buffer_ptr(kbuf), 1 << 20, 99);
	ck_assert_int_eq(mp_checker_reset(b, 99), 0);
	ck_assert_int_eq(mp_dma_write(e, kbuf, 0, 1 << 20, MP_DMA_EOP, NULL), 0);
	ck_assert_int_eq(mp_checker_read(b, &words, &errors), 0);
	ck_assert_uint_eq(words, (1 << 20) / 4);
	ck_assert_uint_eq(errors, 0);

	/* asynchronous, and a batch of 64 through the 8-slot ring */
	ck_assert_int_eq(mp_patgen_seed(b, 0), 0);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, MP_WAIT_FOREVER), 0);
	ck_assert_int_eq(mp_transfer_result(t, &res), 0);
	ck_assert_uint_eq(res.done, 1);
	ck_assert_int_eq(res.error, 0);
	ck_assert_uint_eq(res.bytes, 4096);
	ck_assert_int_eq(mp_transfer_abort(t), 1); /* already finished */
	mp_transfer_release(t);
	for (int i = 0; i < 64; i++) {
		reqs[i].buf = kbuf;
		reqs[i].offset = 4096 + (uint64_t)i * 4096;
		reqs[i].length = 4096;
		reqs[i].flags = 0;
		reqs[i].reserved = 0;
	}
	ck_assert_int_eq(mp_dma_submitv(e, MP_CH_C2H, reqs, 64, ts), 0);
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(mp_transfer_wait(ts[i], 10000), 0);
		mp_transfer_release(ts[i]);
	}
	ck_assert(matches(mp_buffer_ptr(kbuf), 65 * 4096, 0));
	ck_assert_int_eq(mp_engine_outstanding(e, MP_CH_C2H, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(mp_engine_poll(e, MP_CH_C2H), 0);

	/* misuse */
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 0, 0, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 2, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 0, 5, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 1 << 20, 4, 0, &t), -ERANGE);
	ck_assert_int_eq(mp_dma_submit(e, 2, kbuf, 0, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, NULL, 0, 4, 0, &t), -EINVAL);
	ck_assert_int_eq(mp_dma_read(e, kbuf, 0, (1 << 20) + 4, NULL), -ERANGE);
	reqs[5].length = 0;
	ck_assert_int_eq(mp_dma_submitv(e, MP_CH_C2H, reqs, 64, ts), -EINVAL);
	ck_assert_int_eq(mp_engine_abort(e, 5), -EINVAL);
	ck_assert_int_eq(mp_transfer_wait(NULL, 0), -EINVAL);

	/* a buffer in use cannot be freed; abort, then free */
	ck_assert_int_eq(mp_engine_set_wait_timeout(e, 100), 0);
	ck_assert_int_eq(mp_test_routing(b, MP_C2H_SOURCE_USER, MP_H2C_SINK_CHECKER), 0);
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, ubuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 10), -EAGAIN);
	ck_assert_uint_eq(mp_buffer_active(ubuf), 1);
	ck_assert_int_eq(mp_buffer_free(ubuf), -EBUSY);
	ck_assert_int_eq(mp_buffer_abort(ubuf), 1);
	ck_assert_int_eq(mp_transfer_wait(t, 0), -ECANCELED);
	ck_assert_int_eq(mp_transfer_result(t, &res), 0);
	ck_assert_int_eq(res.error, -ECANCELED);
	ck_assert_uint_eq(res.engine_error, MP_ERR_ABORTED);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_buffer_free(ubuf), 0);
	munmap(mem, 1 << 20);
	/* the blocking call's wait timeout */
	ck_assert_int_eq(mp_dma_read(e, kbuf, 0, 4096, NULL), -ETIMEDOUT);
	/* an address nobody mapped */
	ck_assert_int_eq(mp_dma_submit_raw(e, MP_CH_H2C, 0xbad000000ull, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 10000), -EIO);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_engine_abort(e, MP_CH_C2H), 0);

	/* closing the board first: the engine and buffers refuse, then are freed */
	ck_assert_int_eq(mp_dma_submit(e, MP_CH_C2H, kbuf, 0, 4096, 0, &t), 0);
	ck_assert_int_eq(mp_board_close(b), 0);
	ck_assert_int_eq(mp_transfer_wait(t, 0), -ECANCELED);
	mp_transfer_release(t);
	ck_assert_int_eq(mp_dma_read(e, kbuf, 0, 4096, NULL), -ENODEV);
	ck_assert_int_eq(mp_engine_abort(e, MP_CH_C2H), -ENODEV);
	ck_assert_int_eq(mp_buffer_free(kbuf), 0);
	ck_assert_int_eq(mp_engine_close(e), 0);
	ck_assert_int_eq(mp_engine_close(NULL), 0);
	ck_assert_int_eq(mp_buffer_free(NULL), 0);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("mprace_capi");
	TCase *tc = tcase_create("capi");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_board);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_misuse);
	tcase_add_loop_test(tc, test_transfers, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
