// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 4: interrupts (docs/dma-engine.md section 6) and the
 * libpcidriver wait API: IRQ_STATUS write-1-to-clear, IRQ_ENABLE (raising a pending source),
 * MSI vectors with 4 and with 1 granted, pd_irq_wait counting / timeouts / clear, the
 * clear-then-scan protocol, and a dropped interrupt.
 */
#include <pthread.h>

#include "test_emu_util.h"

#define C2H_DONE MP_REG_IRQ_STATUS_C2H_DONE_MASK
#define H2C_DONE MP_REG_IRQ_STATUS_H2C_DONE_MASK
#define ERR_BIT MP_REG_IRQ_STATUS_ERROR_MASK

struct rig {
	struct eb b;
	struct ering rc, rh;
	pd_kmem *km;      /* C2H writes it, H2C reads it: never both at once */
	pd_kmem *kh;      /* H2C source for the tests that run both channels at once */
};

static void rig_open(struct rig *g, const char *name)
{
	eb_open(&g->b, name);
	ering_init(&g->b, &g->rc, MP_CH_C2H, 64);
	ering_init(&g->b, &g->rh, MP_CH_H2C, 64);
	ck_assert_int_eq(pd_kmem_alloc(g->b.dev, 65536, &g->km), 0);
	ck_assert_int_eq(pd_kmem_alloc(g->b.dev, 65536, &g->kh), 0);
	set_test(&g->b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	run(&g->b, MP_CH_C2H);
	run(&g->b, MP_CH_H2C);
}

/* One descriptor, done. With CTRL.IRQ also its IRQ_STATUS bit: the engine raises it after
 * the record, so a test that looked only at the record could run ahead of the interrupt; a
 * read that shows the bit comes after the message the bit sent (if enabled). */
static void one(struct rig *g, struct ering *r, uint32_t ctrl)
{
	uint32_t n = ering_put(&g->b, r, pd_kmem_bus_addr(g->km), 256, ctrl);
	uint32_t bit = r == &g->rc ? C2H_DONE : H2C_DONE;

	ck_assert_uint_eq(wait_done(r, n, EMU_WAIT_MS), MP_DESC_RESULT_STATUS_DONE_MASK);
	if (ctrl & MP_DESC_CTRL_IRQ_MASK)
		ck_assert_uint_eq(wait_bits(&g->b, MP_REG_IRQ_STATUS, bit, EMU_WAIT_MS), bit);
}

START_TEST(test_status_w1c)
{
	struct rig g;

	rig_open(&g, "emu:link=ideal");
	one(&g, &g.rc, 0);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_STATUS), 0);   /* no CTRL.IRQ: no source */
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_uint_eq(wait_reg(&g.b, MP_REG_IRQ_STATUS, C2H_DONE, EMU_WAIT_MS), C2H_DONE);
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_uint_eq(wait_reg(&g.b, MP_REG_IRQ_STATUS, C2H_DONE | H2C_DONE, EMU_WAIT_MS),
			  C2H_DONE | H2C_DONE);
	/* disabled sources set their bit but send nothing */
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, 0), -ETIMEDOUT);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 1, 0), -ETIMEDOUT);
	/* write 1 to clear: other bits stay; writing 0 does nothing */
	wr(&g.b, MP_REG_IRQ_STATUS, 0);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_STATUS), C2H_DONE | H2C_DONE);
	wr(&g.b, MP_REG_IRQ_STATUS, H2C_DONE);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_STATUS), C2H_DONE);
	wr(&g.b, MP_REG_IRQ_STATUS, 0xffffffffu);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_STATUS), 0);
	/* IRQ_ENABLE keeps only the defined bits */
	wr(&g.b, MP_REG_IRQ_ENABLE, 0xffffffffu);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_ENABLE), C2H_DONE | H2C_DONE | ERR_BIT);
	eb_close(&g.b);
}
END_TEST

START_TEST(test_enable_raises_pending)
{
	struct rig g;

	rig_open(&g, "emu:link=ideal,msi=4");
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), -ETIMEDOUT);
	/* enabling a pending source raises it once */
	wr(&g.b, MP_REG_IRQ_ENABLE, H2C_DONE);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), 1);
	wr(&g.b, MP_REG_IRQ_ENABLE, H2C_DONE);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), -ETIMEDOUT);
	/* a bit that is still set does not raise again (no 0 -> 1 edge) */
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), -ETIMEDOUT);
	/* after w1c the next completion raises a new interrupt */
	wr(&g.b, MP_REG_IRQ_STATUS, H2C_DONE);
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), 1);
	/* disable, pending, enable again */
	wr(&g.b, MP_REG_IRQ_ENABLE, 0);
	wr(&g.b, MP_REG_IRQ_STATUS, H2C_DONE);
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), -ETIMEDOUT);
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE | H2C_DONE);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), 1);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_C2H_DONE_VECTOR, 0), -ETIMEDOUT);
	eb_close(&g.b);
}
END_TEST

START_TEST(test_vectors_4)
{
	struct rig g;
	struct pd_info info;

	rig_open(&g, "emu:link=ideal,msi=4");
	ck_assert_int_eq(pd_info(g.b.dev, &info), 0);
	ck_assert_uint_eq(info.irq_count, 4);
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE | H2C_DONE | ERR_BIT);
	/* two C2H interrupts (cleared in between) before anyone waits: counted */
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	wr(&g.b, MP_REG_IRQ_STATUS, C2H_DONE);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_C2H_DONE_VECTOR, 0), 2);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_C2H_DONE_VECTOR, 0), -ETIMEDOUT);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 0), 1);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_ERROR_VECTOR, 0), -ETIMEDOUT);
	/* an error: its own vector */
	ering_put(&g.b, &g.rc, pd_kmem_bus_addr(g.km), 0, 0);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_ERROR_VECTOR, EMU_WAIT_MS), 1);
	ck_assert(rd(&g.b, MP_REG_IRQ_STATUS) & ERR_BIT);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, MP_IRQ_C2H_DONE_VECTOR, 0), -ETIMEDOUT);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 3, 0), -ETIMEDOUT);   /* granted, unused */
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 4, 0), -EINVAL);
	eb_close(&g.b);
}
END_TEST

START_TEST(test_vectors_1)
{
	struct rig g;
	struct pd_info info;

	rig_open(&g, "emu:link=ideal,msi=1");
	ck_assert_int_eq(pd_info(g.b.dev, &info), 0);
	ck_assert_uint_eq(info.irq_count, 1);
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE | H2C_DONE | ERR_BIT);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	one(&g, &g.rh, MP_DESC_CTRL_IRQ_MASK);
	ering_put(&g.b, &g.rh, pd_kmem_bus_addr(g.km), 2, 0);   /* DESC_ALIGN */
	ck_assert_uint_eq(wait_bits(&g.b, MP_REG_IRQ_STATUS, ERR_BIT, EMU_WAIT_MS), ERR_BIT);
	ck_assert_uint_eq(wait_state(&g.b, MP_CH_H2C, MP_STATE_ERROR, EMU_WAIT_MS) & 3, MP_STATE_ERROR);
	/* all three sources on vector 0 */
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, EMU_WAIT_MS), 3);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 1, 0), -EINVAL);
	ck_assert_int_eq(pd_irq_clear(g.b.dev, 1), -EINVAL);
	eb_close(&g.b);
}
END_TEST

struct waiter {
	pd_device *dev;
	unsigned int vec;
	uint32_t timeout;
	int ret;
	uint64_t ns;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	uint64_t t0 = now_ns();

	w->ret = pd_irq_wait(w->dev, w->vec, w->timeout);
	w->ns = now_ns() - t0;
	return NULL;
}

START_TEST(test_wait_timeout_and_wakeup)
{
	struct rig g;
	struct waiter w;
	pthread_t t;
	uint64_t t0, dt;

	rig_open(&g, "emu:link=gen1x1");
	/* nothing pending: -ETIMEDOUT after the timeout, immediately with 0 */
	t0 = now_ns();
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, 0), -ETIMEDOUT);
	ck_assert_uint_lt(now_ns() - t0, 50000000u);
	t0 = now_ns();
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, 60), -ETIMEDOUT);
	dt = now_ns() - t0;
	ck_assert_msg(dt >= 59000000u, "returned after %llu ns", (unsigned long long)dt);
	/* a waiter sleeping in another thread is woken by the completion (~4.6 ms of link) */
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE);
	w = (struct waiter){ g.b.dev, MP_IRQ_C2H_DONE_VECTOR, EMU_WAIT_MS, 0, 0 };
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	sleep_us(10000);
	ering_put(&g.b, &g.rc, pd_kmem_bus_addr(g.km), 65536, MP_DESC_CTRL_IRQ_MASK);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.ret, 1);
	ck_assert_uint_eq(rec_status(&g.rc, 0), MP_DESC_RESULT_STATUS_DONE_MASK);
	/* forever, too */
	wr(&g.b, MP_REG_IRQ_STATUS, C2H_DONE);
	w = (struct waiter){ g.b.dev, MP_IRQ_C2H_DONE_VECTOR, PD_WAIT_FOREVER, 0, 0 };
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	ering_put(&g.b, &g.rc, pd_kmem_bus_addr(g.km), 4096, MP_DESC_CTRL_IRQ_MASK);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.ret, 1);
	eb_close(&g.b);
}
END_TEST

START_TEST(test_clear)
{
	struct rig g;

	rig_open(&g, "emu:link=ideal");
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_clear(g.b.dev, 0), 0);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, 0), -ETIMEDOUT);
	/* the global reset clears IRQ_STATUS and IRQ_ENABLE */
	wr(&g.b, MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(rd(&g.b, MP_REG_IRQ_ENABLE), 0);
	eb_close(&g.b);
}
END_TEST

/* dropirq=1: the second interrupt message is lost; the bit in IRQ_STATUS is still set, so
 * software that scans after a timeout finds the completion. */
START_TEST(test_dropped_interrupt)
{
	struct rig g;

	rig_open(&g, "emu:link=ideal,dropirq=1");
	wr(&g.b, MP_REG_IRQ_ENABLE, C2H_DONE);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, EMU_WAIT_MS), 1);
	wr(&g.b, MP_REG_IRQ_STATUS, C2H_DONE);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, 100), -ETIMEDOUT);
	ck_assert_uint_eq(wait_reg(&g.b, MP_REG_IRQ_STATUS, C2H_DONE, EMU_WAIT_MS), C2H_DONE);
	wr(&g.b, MP_REG_IRQ_STATUS, C2H_DONE);
	one(&g, &g.rc, MP_DESC_CTRL_IRQ_MASK);
	ck_assert_int_eq(pd_irq_wait(g.b.dev, 0, EMU_WAIT_MS), 1);
	eb_close(&g.b);
}
END_TEST

/* Section 6's protocol: wait, clear the bit, then scan the records. With every descriptor
 * raising the source, no completion may be missed and no wait may time out. */
struct stream {
	struct rig *g;
	uint32_t count;
	int timeouts;
	uint32_t seen;   /* records scanned (the producer reuses only those slots) */
	uint32_t queued; /* descriptors the producer has queued */
};

static void *produce(void *arg)
{
	struct stream *s = arg;
	uint32_t n;

	for (n = 0; n < s->count; n++) {
		while (n - __atomic_load_n(&s->seen, __ATOMIC_ACQUIRE) >= s->g->rh.size)
			sleep_us(50);
		ering_put(&s->g->b, &s->g->rh, pd_kmem_bus_addr(s->g->kh), 4096 + 4 * (n % 64),
			  MP_DESC_CTRL_IRQ_MASK);
		__atomic_store_n(&s->queued, n + 1, __ATOMIC_RELEASE);
		if (n % 7 == 0)
			sleep_us(200);
	}
	return NULL;
}

START_TEST(test_clear_then_scan)
{
	struct rig g;
	struct stream s;
	pthread_t t;
	uint32_t seen = 0, tail;
	int rc;

	rig_open(&g, "emu:link=gen2x4,msi=4");
	wr(&g.b, MP_REG_IRQ_ENABLE, H2C_DONE);
	s = (struct stream){ &g, 600, 0, 0, 0 };
	ck_assert_int_eq(pthread_create(&t, NULL, produce, &s), 0);
	while (seen < s.count) {
		rc = pd_irq_wait(g.b.dev, MP_IRQ_H2C_DONE_VECTOR, 2000);
		if (rc == -ETIMEDOUT)
			s.timeouts++;
		else
			ck_assert_int_gt(rc, 0);
		wr(&g.b, MP_REG_IRQ_STATUS, H2C_DONE);
		tail = __atomic_load_n(&s.queued, __ATOMIC_ACQUIRE);
		while (seen < tail && (rec_status(&g.rh, seen) & MP_DESC_RESULT_STATUS_DONE_MASK))
			__atomic_store_n(&s.seen, ++seen, __ATOMIC_RELEASE);
		ck_assert_int_lt(s.timeouts, 3);
	}
	pthread_join(t, NULL);
	ck_assert_int_eq(s.timeouts, 0);
	ck_assert_uint_eq(crd(&g.b, MP_CH_H2C, MP_CHREG_HEAD), s.count);
	eb_close(&g.b);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-irq");
	TCase *tc = tcase_create("emu-irq");

	tcase_add_test(tc, test_status_w1c);
	tcase_add_test(tc, test_enable_raises_pending);
	tcase_add_test(tc, test_vectors_4);
	tcase_add_test(tc, test_vectors_1);
	tcase_add_test(tc, test_wait_timeout_and_wakeup);
	tcase_add_test(tc, test_clear);
	tcase_add_test(tc, test_dropped_interrupt);
	tcase_add_test(tc, test_clear_then_scan);
	suite_add_tcase(s, tc);
	return s;
}
