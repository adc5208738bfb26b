// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest groups: irq (MSI) and intx (after reloading the module with disable_msi=1).
 * The test acknowledges edu's interrupt itself (register 0x64): the driver never does.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdtest.h"

struct waiter {
	pd_device *dev;
	uint32_t timeout_ms;
	int result;
	uint64_t elapsed_ms;
	volatile int done;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;
	uint64_t t0 = now_ms();

	w->result = pd_irq_wait(w->dev, 0, w->timeout_ms);
	w->elapsed_ms = now_ms() - t0;
	w->done = 1;
	return NULL;
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

/* ---------------------------------------------------------------- irq */

static const char *const irq_checks[] = {
	"irq: the raise-interrupt register wakes a thread blocked in pd_irq_wait",
	"irq: DMA-done interrupt (0x100 in edu's status register)",
	"irq: timeout of 300 ms returns ETIMEDOUT after about 300 ms",
	"irq: timeout 0 polls: ETIMEDOUT without an event, the count with one",
	"irq: a signal interrupts a wait with EINTR",
	"irq: three raises before a wait count as three events",
	"irq: two open files each see every event",
	"irq: clear forgets events not waited for",
	"irq: sysfs irq_counts counts them",
	"irq: a source out of range fails with EINVAL",
	NULL,
};

static void irq_run(void)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };	/* no SA_RESTART */
	struct waiter w = { 0 };
	struct pd_regs regs;
	pd_device *dev, *dev2;
	pd_kmem *km = NULL;
	pthread_t thr;
	long before, after;
	uint64_t t0, el;
	uint32_t st;
	int r, r2, i;

	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs) ||
	    pd_kmem_alloc(dev, 4096, &km))
		return;
	before = sysfs_long("/sys/class/pcidriver/fpga0/irq_counts");

	w.dev = dev;
	w.timeout_ms = 5000;
	pthread_create(&thr, NULL, waiter_thread, &w);
	sleep_ms(300);
	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	pthread_join(thr, NULL);
	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	CHECK(irq_checks[0], w.result == 1 && w.elapsed_ms >= 200 && w.elapsed_ms < 4000,
	      "result %d after %llu ms", w.result, (unsigned long long)w.elapsed_ms);

	r = edu_dma(&regs, pd_kmem_bus_addr(km), 0, 64, 0, 1);
	r2 = r ? r : pd_irq_wait(dev, 0, 3000);
	st = pd_reg_read32(&regs, EDU_IRQ_STATUS);
	pd_reg_write32(&regs, EDU_IRQ_ACK, st);
	CHECK(irq_checks[1], r2 == 1 && (st & EDU_DMA_IRQ_BIT), "wait %s status %#x",
	      r2 < 0 ? errname(r2) : "n", st);

	t0 = now_ms();
	r = pd_irq_wait(dev, 0, 300);
	el = now_ms() - t0;
	CHECK(irq_checks[2], r == -ETIMEDOUT && el >= 290 && el < 2000, "%s after %llu ms",
	      errname(r), (unsigned long long)el);

	r = pd_irq_wait(dev, 0, 0);
	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	sleep_ms(50);
	r2 = pd_irq_wait(dev, 0, 0);
	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	CHECK(irq_checks[3], r == -ETIMEDOUT && r2 == 1, "%d then %d", r, r2);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	memset(&w, 0, sizeof(w));
	w.dev = dev;
	w.timeout_ms = PD_WAIT_FOREVER;
	pthread_create(&thr, NULL, waiter_thread, &w);
	/* a signal that lands before the thread sleeps is lost: repeat until it returns */
	for (i = 0; i < 50 && !w.done; i++) {
		sleep_ms(100);
		pthread_kill(thr, SIGUSR1);
	}
	if (!w.done) {	/* do not leave it blocked forever */
		pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
		pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	}
	pthread_join(thr, NULL);
	CHECK(irq_checks[4], w.result == -EINTR, "%d", w.result);

	for (i = 0; i < 3; i++) {
		pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
		sleep_ms(20);
		pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	}
	sleep_ms(50);
	r = pd_irq_wait(dev, 0, 1000);
	CHECK(irq_checks[5], r == 3, "%d", r);

	r = pd_open("/dev/fpga0", &dev2);
	if (!r) {
		pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
		r = pd_irq_wait(dev, 0, 2000);
		r2 = pd_irq_wait(dev2, 0, 2000);
		pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
		pd_close(dev2);
	}
	CHECK(irq_checks[6], r == 1 && r2 == 1, "%d and %d", r, r2);

	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	sleep_ms(50);
	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	r2 = pd_irq_clear(dev, 0);
	r = pd_irq_wait(dev, 0, 100);
	CHECK(irq_checks[7], !r2 && r == -ETIMEDOUT, "clear %d, wait %d", r2, r);

	after = sysfs_long("/sys/class/pcidriver/fpga0/irq_counts");
	CHECK(irq_checks[8], before >= 0 && after - before == 8, "%ld -> %ld", before, after);

	r = pd_irq_wait(dev, 1, 0);
	r2 = pd_irq_clear(dev, 7);
	CHECK(irq_checks[9], r == -EINVAL && r2 == -EINVAL, "%s %s", errname(r), errname(r2));
	pd_close(dev);
}

const struct pdt_group grp_irq = { "irq", irq_checks, irq_run };

/* ---------------------------------------------------------------- intx */

static const char *const intx_checks[] = {
	"intx: devices bound with disable_msi=1 use INTx (info, sysfs)",
	"intx: the raise register wakes a waiter; the driver masked INTx",
	"intx: acknowledging and waiting again unmasks INTx",
	"intx: an unacknowledged interrupt is reported again at the next wait",
	"intx: DMA-done interrupt",
	NULL,
};

static int intx_masked(pd_device *dev)
{
	uint16_t cmd = 0;

	if (pd_cfg_read(dev, 4, &cmd, 2))
		return -1;
	return !!(cmd & (1 << 10));	/* PCI_COMMAND_INTX_DISABLE */
}

static void intx_run(void)
{
	struct waiter w = { 0 };
	struct pd_regs regs;
	struct pd_info info;
	char mode[16] = "";
	pd_kmem *km = NULL;
	pd_device *dev;
	pthread_t thr;
	int r, r2, m1, m2, n;
	uint32_t st;

	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs) || pd_info(dev, &info) ||
	    pd_kmem_alloc(dev, 4096, &km))
		return;
	n = read_file("/sys/class/pcidriver/fpga0/irq_mode", mode, sizeof(mode) - 1);
	CHECK(intx_checks[0], info.irq_mode == PD_IRQ_INTX && info.irq_count == 1 && n == 5 &&
	      !strncmp(mode, "intx", 4), "mode %u, sysfs \"%s\"", info.irq_mode, mode);

	w.dev = dev;
	w.timeout_ms = 5000;
	pthread_create(&thr, NULL, waiter_thread, &w);
	sleep_ms(200);
	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	pthread_join(thr, NULL);
	m1 = intx_masked(dev);
	CHECK(intx_checks[1], w.result == 1 && m1 == 1, "wait %d masked %d", w.result, m1);

	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	r = pd_irq_wait(dev, 0, 100);
	m2 = intx_masked(dev);
	CHECK(intx_checks[2], r == -ETIMEDOUT && m2 == 0, "wait %d masked %d", r, m2);

	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	r = pd_irq_wait(dev, 0, 2000);
	r2 = pd_irq_wait(dev, 0, 0);		/* not acknowledged: still asserted */
	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	m1 = pd_irq_wait(dev, 0, 0);
	m2 = intx_masked(dev);
	CHECK(intx_checks[3], r == 1 && r2 == 1 && m1 == -ETIMEDOUT && m2 == 0,
	      "%d %d %d masked %d", r, r2, m1, m2);

	r = edu_dma(&regs, pd_kmem_bus_addr(km), 0, 64, 0, 1);
	r2 = r ? r : pd_irq_wait(dev, 0, 3000);
	st = pd_reg_read32(&regs, EDU_IRQ_STATUS);
	pd_reg_write32(&regs, EDU_IRQ_ACK, st);
	pd_irq_wait(dev, 0, 0);			/* unmask */
	CHECK(intx_checks[4], r2 == 1 && (st & EDU_DMA_IRQ_BIT), "%d status %#x", r2, st);
	pd_close(dev);
}

const struct pdt_group grp_intx = { "intx", intx_checks, intx_run };
