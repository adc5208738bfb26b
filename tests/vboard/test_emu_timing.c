// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 5: the link timing model (docs/virtual-board.md). Each
 * measurement is compared with the model's value computed here from the documented formula
 * and the MPS the device reports (CAPS), in the same run:
 *   - lower bounds are tight (a transfer may never finish before the link could carry it:
 *     that catches a model that is too fast, banks idle time, or ignores MPS/latency);
 *   - upper bounds are generous (the machine is shared; they only catch a grossly slow model).
 * Every run must meet the lower bound; the upper bound is checked on the best of REPS runs, so
 * that a scheduling hiccup of the shared machine (wake-ups late by milliseconds) does not
 * fail the suite while a model that is always slow still does.
 * Also: full duplex (C2H and H2C each at the full rate), latency overlapping for queued
 * descriptors, the pattern generator's rate limit, and no busy core while waiting or idle.
 */
#include <pthread.h>

#include "test_emu_util.h"

/* Sanitizer builds copy and compare memory several times slower: only the lower bounds (and
 * the properties that do not depend on CPU speed) are checked there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The documented model: lat + (payload + TLP overhead * TLPs) / raw rate, TLPs cut at
 * MPS-aligned bus addresses; raw rate = lanes * GT/s * encoding / 8. */
static double model_ns(unsigned int gen, unsigned int lanes, unsigned int ch, uint32_t mps,
		       uint64_t addr, uint64_t len, double lat_ns)
{
	double lane = gen == 1 ? 2.5e9 * 8 / 10 / 8 : gen == 2 ? 5e9 * 8 / 10 / 8 :
		      gen == 3 ? 8e9 * 128 / 130 / 8 : 16e9 * 128 / 130 / 8;
	double ovh = ch == MP_CH_C2H ? 24 : 20;
	uint64_t tlps = (addr + len - 1) / mps - addr / mps + 1;

	return lat_ns + ((double)len + ovh * (double)tlps) / (lane * lanes) * 1e9;
}

static uint32_t mps_of(struct eb *b)
{
	return 128u << ((rd(b, MP_REG_CAPS) & MP_REG_CAPS_MPS_MASK) >> MP_REG_CAPS_MPS_SHIFT);
}

/* Polls the record of descriptor n as tightly as the shared machine allows. */
static uint64_t done_at(struct ering *r, uint32_t n)
{
	uint64_t end = now_ns() + EMU_WAIT_MS * 1000000ull;

	while (!(rec_status(r, n) & MP_DESC_RESULT_STATUS_DONE_MASK)) {
		ck_assert_msg(now_ns() < end, "descriptor %u never completed", n);
		sleep_us(10);
	}
	return now_ns();
}

struct rig {
	struct eb b;
	struct ering r[MP_CH_COUNT];
	pd_kmem *km[MP_CH_COUNT];
};

static void rig_open(struct rig *g, const char *name, size_t bytes)
{
	unsigned int ch;

	eb_open(&g->b, name);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		ering_init(&g->b, &g->r[ch], ch, 64);
		ck_assert_int_eq(pd_kmem_alloc(g->b.dev, bytes, &g->km[ch]), 0);
		memset(pd_kmem_ptr(g->km[ch]), 0, bytes);   /* no page faults while timing */
	}
	set_test(&g->b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	run(&g->b, MP_CH_C2H);
	run(&g->b, MP_CH_H2C);
}

/* One transfer of len bytes at offset off on channel ch: its duration in ns. */
static double one(struct rig *g, unsigned int ch, uint64_t off, uint32_t len)
{
	uint64_t t0 = now_ns();
	uint32_t n = ering_put(&g->b, &g->r[ch], pd_kmem_bus_addr(g->km[ch]) + off, len, 0);

	return (double)(done_at(&g->r[ch], n) - t0);
}

#define REPS 3

static void expect_lower(double got, double model, const char *what)
{
	ck_assert_msg(got >= 0.97 * model,
		      "%s: %.0f us, faster than the link can be (model %.0f us)", what, got / 1e3,
		      model / 1e3);
}

static void expect_upper(double best, double model, const char *what)
{
	if (SANITIZED)
		return;
	ck_assert_msg(best <= 1.5 * model + 3e6,
		      "%s: best of %d runs %.0f us, slower than the model (%.0f us)", what, REPS,
		      best / 1e3, model / 1e3);
}

/* REPS transfers of len bytes at off on ch: each at least the model, the best close to it. */
static void expect_about(struct rig *g, unsigned int ch, uint64_t off, uint32_t len,
			 double model, const char *what)
{
	double t, best = 1e30;
	int i;

	for (i = 0; i < REPS; i++) {
		t = one(g, ch, off, len);
		expect_lower(t, model, what);
		if (t < best)
			best = t;
	}
	expect_upper(best, model, what);
}

START_TEST(test_gen1x1_transfer)
{
	struct rig g;
	uint32_t mps;
	double m;
	unsigned int ch;

	rig_open(&g, "emu:link=gen1x1", 4u << 20);
	mps = mps_of(&g.b);
	ck_assert_uint_eq(mps, 256);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		uint64_t addr = pd_kmem_bus_addr(g.km[ch]);

		m = model_ns(1, 1, ch, mps, addr, 1u << 20, 1000);
		expect_about(&g, ch, 0, 1u << 20, m, ch ? "H2C 1 MiB" : "C2H 1 MiB");
		/* misaligned: one TLP more */
		m = model_ns(1, 1, ch, mps, addr + 4, (1u << 20) - 8, 1000);
		expect_about(&g, ch, 4, (1u << 20) - 8, m, "1 MiB at +4");
		m = model_ns(1, 1, ch, mps, addr, 4u << 20, 1000);
		expect_about(&g, ch, 0, 4u << 20, m, "4 MiB");
	}
	eb_close(&g.b);
}
END_TEST

/* MPS changes the overhead: 128-byte TLPs cost 13 % more than 1 KiB ones. A host MPS of
 * 4096 is used as 1024, the engine's limit. */
START_TEST(test_mps_matters)
{
	struct rig g;
	double m128, m1024;

	rig_open(&g, "emu:link=gen2x1,mps=128", 2u << 20);
	ck_assert_uint_eq(mps_of(&g.b), 128);
	m128 = model_ns(2, 1, MP_CH_C2H, 128, pd_kmem_bus_addr(g.km[0]), 2u << 20, 1000);
	m1024 = model_ns(2, 1, MP_CH_C2H, 1024, pd_kmem_bus_addr(g.km[0]), 2u << 20, 1000);
	ck_assert(m128 > 1.10 * m1024);
	expect_about(&g, MP_CH_C2H, 0, 2u << 20, m128, "mps=128");
	eb_close(&g.b);

	rig_open(&g, "emu:link=gen2x1,mps=4096", 2u << 20);
	ck_assert_uint_eq(mps_of(&g.b), 1024);
	expect_about(&g, MP_CH_C2H, 0, 2u << 20, m1024, "mps=4096 (used as 1024)");
	eb_close(&g.b);
}
END_TEST

/* The engine's interface bounds a preset where it is slower than the link: its descriptor
 * and payload in beats of the datapath at the engine clock, in half beats at 512 bits (writes
 * and completions straddle; docs/virtual-board.md, "Timing model"). clock=25 makes the
 * interface ten times slower than at 250 MHz, far below the link: the transfers take the
 * interface's time. */
static double interface_ns(unsigned int datapath, unsigned int ch, uint32_t mps, uint64_t len,
			   unsigned int mhz, double lat_ns)
{
	unsigned int slot = datapath == 64 ? 32 : datapath;
	unsigned int slots = ((ch == MP_CH_C2H ? 16 : 12) + mps + slot - 1) / slot;

	return lat_ns + (double)(len / mps) * slots * slot / datapath * 1e3 / mhz;
}

START_TEST(test_interface_bound)
{
	static const struct { const char *name; unsigned int datapath; } boards[] = {
		{ "emu:link=gen3x8,clock=25", 32 },
		{ "emu:link=gen3x16,clock=25", 64 },
	};
	struct rig g;
	unsigned int i, ch;
	uint32_t mps;
	double m, link;

	for (i = 0; i < sizeof(boards) / sizeof(boards[0]); i++) {
		rig_open(&g, boards[i].name, 1u << 20);
		mps = mps_of(&g.b);
		ck_assert_uint_eq((rd(&g.b, MP_REG_CAPS) & MP_REG_CAPS_DATAPATH_BYTES_MASK) >>
				  MP_REG_CAPS_DATAPATH_BYTES_SHIFT, boards[i].datapath);
		for (ch = 0; ch < MP_CH_COUNT; ch++) {
			m = interface_ns(boards[i].datapath, ch, mps, 1u << 20, 25, 1000);
			link = model_ns(3, boards[i].datapath == 64 ? 16 : 8, ch, mps,
					pd_kmem_bus_addr(g.km[ch]), 1u << 20, 1000);
			ck_assert(m > 5 * link);
			expect_about(&g, ch, 0, 1u << 20, m, boards[i].name);
		}
		eb_close(&g.b);
	}
}
END_TEST

/* At 512 bits the engine straddles completions as it does writes (hdl/README.md): a 256-byte
 * completion (12 + 256 bytes) takes 9 half beats, as a 256-byte write (16 + 256) does, so with
 * the interface far slower than the link both directions take the same time, where whole-beat
 * completions (5 beats) would make H2C take 10/9 as long. Both measured in one run, the best
 * of REPS each way. */
START_TEST(test_straddled_completions)
{
	struct rig g;
	double best[MP_CH_COUNT], t;
	unsigned int ch;
	int i;

	rig_open(&g, "emu:link=gen3x16,clock=10", 4u << 20);
	ck_assert_uint_eq(mps_of(&g.b), 256);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		best[ch] = 1e30;
		for (i = 0; i < REPS; i++) {
			t = one(&g, ch, 0, 4u << 20);
			if (t < best[ch])
				best[ch] = t;
		}
	}
	ck_assert_msg(SANITIZED || best[MP_CH_H2C] < 1.05 * best[MP_CH_C2H],
		      "4 MiB H2C %.0f us, C2H %.0f us at best: completions not in half beats",
		      best[MP_CH_H2C] / 1e3, best[MP_CH_C2H] / 1e3);
	eb_close(&g.b);
}
END_TEST

/* An idle link banks nothing: after a long pause a transfer still takes the full time. */
START_TEST(test_no_banking)
{
	struct rig g;
	uint32_t mps;
	uint64_t t0;
	double t, m;
	int i;

	rig_open(&g, "emu:link=gen1x2", 4u << 20);
	mps = mps_of(&g.b);
	m = model_ns(1, 2, MP_CH_C2H, mps, pd_kmem_bus_addr(g.km[0]), 1u << 20, 1000);
	for (i = 0; i < 3; i++) {
		sleep_us(100000);
		t = one(&g, MP_CH_C2H, 0, 1u << 20);
		expect_lower(t, m, "after 100 ms idle");
	}
	/* and several queued at once take the sum (the latency once) */
	for (i = 0; i < 4; i++)
		ering_put_raw(&g.r[0], pd_kmem_bus_addr(g.km[0]) + ((uint64_t)i << 20), 1u << 20, 0);
	t0 = now_ns();
	ering_doorbell(&g.b, &g.r[0]);
	t = (double)(done_at(&g.r[0], g.r[0].tail - 1) - t0);
	expect_lower(t, 4 * m - 3000, "4 queued");
	eb_close(&g.b);
}
END_TEST

/* Full duplex: C2H and H2C each get the whole rate. */
START_TEST(test_full_duplex)
{
	struct rig g;
	uint32_t mps;
	uint64_t t0, tc, th;
	double mc, mh, both, best = 1e30;
	int i;

	rig_open(&g, "emu:link=gen1x1", 8u << 20);
	mps = mps_of(&g.b);
	mc = model_ns(1, 1, MP_CH_C2H, mps, pd_kmem_bus_addr(g.km[0]), 8u << 20, 1000);
	mh = model_ns(1, 1, MP_CH_H2C, mps, pd_kmem_bus_addr(g.km[1]), 8u << 20, 1000);
	for (i = 0; i < REPS; i++) {
		t0 = now_ns();
		ering_put(&g.b, &g.r[MP_CH_C2H], pd_kmem_bus_addr(g.km[0]), 8u << 20, 0);
		ering_put(&g.b, &g.r[MP_CH_H2C], pd_kmem_bus_addr(g.km[1]), 8u << 20, 0);
		tc = done_at(&g.r[MP_CH_C2H], (uint32_t)i);
		th = done_at(&g.r[MP_CH_H2C], (uint32_t)i);
		expect_lower((double)(tc - t0), mc, "C2H with H2C running");
		expect_lower((double)(th - t0), mh, "H2C with C2H running");
		both = (double)((tc > th ? tc : th) - t0);
		if (both < best)
			best = both;
	}
	/* serial would take mc + mh */
	ck_assert_msg(SANITIZED || best < 0.75 * (mc + mh), "both directions took %.0f us at best: not "
		      "concurrent (each alone %.0f us)", best / 1e3, mc / 1e3);
	eb_close(&g.b);
}
END_TEST

/* Latency: one descriptor at a time pays it every time; queued descriptors overlap it. */
START_TEST(test_latency)
{
	struct rig g;
	uint64_t t0;
	double t, best = 1e30;
	int i, r;

	rig_open(&g, "emu:bw=1000,lat=500us", 65536);
	t0 = now_ns();
	for (i = 0; i < 10; i++)
		one(&g, MP_CH_C2H, 0, 64);
	t = (double)(now_ns() - t0);
	ck_assert_msg(t >= 0.97 * 10 * 500e3, "10 serial descriptors in %.0f us", t / 1e3);
	for (r = 0; r < REPS; r++) {
		for (i = 0; i < 10; i++)
			ering_put_raw(&g.r[0], pd_kmem_bus_addr(g.km[0]), 64, 0);
		t0 = now_ns();
		ering_doorbell(&g.b, &g.r[0]);
		t = (double)(done_at(&g.r[0], g.r[0].tail - 1) - t0);
		ck_assert_msg(t >= 0.97 * 500e3, "10 queued descriptors in %.0f us", t / 1e3);
		if (t < best)
			best = t;
	}
	ck_assert_msg(SANITIZED || best < 4 * 500e3, "10 queued descriptors in %.0f us at best: latency "
		      "not overlapped", best / 1e3);
	eb_close(&g.b);
}
END_TEST

/* A custom link and the pattern generator's rate limit (MB/s, on top of the link). */
START_TEST(test_custom_and_patgen_rate)
{
	struct rig g;

	rig_open(&g, "emu:bw=200,lat=0", 2u << 20);
	expect_about(&g, MP_CH_C2H, 0, 2u << 20, (2u << 20) / 200e6 * 1e9, "bw=200");
	eb_close(&g.b);

	rig_open(&g, "emu:link=ideal", 2u << 20);
	wr(&g.b, MP_REG_PATGEN_RATE, 0);
	cwr(&g.b, MP_CH_C2H, MP_CHREG_CONTROL, 0);
	cwr(&g.b, MP_CH_H2C, MP_CHREG_CONTROL, 0);
	set_test(&g.b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&g.b, MP_REG_PATGEN_RATE, 100);
	ck_assert_uint_eq(rd(&g.b, MP_REG_PATGEN_RATE), 100);
	run(&g.b, MP_CH_C2H);
	expect_about(&g, MP_CH_C2H, 0, 2u << 20, (2u << 20) / 100e6 * 1e9, "PATGEN_RATE=100");
	ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(g.km[0]), (2u << 20) / 4,
					  (REPS - 1) * (2u << 20) / 4), -1);
	eb_close(&g.b);
}
END_TEST

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Long link waits sleep, and an idle board uses no CPU. */
/* PIO through the BAR2 accessors costs what a CPU access over the link would: a read waits
 * for its completion, a write is posted. A lower bound only (the model never makes an access
 * faster); on the ideal link the accessors are plain memory. Data goes through unchanged. */
START_TEST(test_pio_cost)
{
	struct eb b;
	uint32_t out[256], in[256];
	uint64_t t0, rd_ns, wr_ns;
	unsigned int i;

	for (i = 0; i < 256; i++)
		out[i] = 0x5000u + i * 7u;
	eb_open(&b, "emu:link=gen3x8,piord=2us,piowr=500ns,mem=1M");
	t0 = now_ns();
	ck_assert_int_eq(pd_bar_write(b.dev, 2, 4096, out, sizeof(out)), 0);
	wr_ns = now_ns() - t0;
	t0 = now_ns();
	ck_assert_int_eq(pd_bar_read(b.dev, 2, 4096, in, sizeof(in)), 0);
	rd_ns = now_ns() - t0;
	ck_assert_mem_eq(in, out, sizeof(out));
	ck_assert_msg(rd_ns >= 256 * 2000ull, "256 reads took %llu ns", (unsigned long long)rd_ns);
	ck_assert_msg(wr_ns >= 256 * 500ull, "256 writes took %llu ns", (unsigned long long)wr_ns);
	eb_close(&b);

	/* ideal: no added cost, so the accessors may be plain loads and stores */
	eb_open(&b, "emu:link=ideal,mem=1M");
	{
		struct pd_regs r;

		ck_assert_int_eq(pd_regs_get(b.dev, 2, &r), 0);
		ck_assert_ptr_nonnull((const void *)r.mmio);
	}
	eb_close(&b);
}
END_TEST

START_TEST(test_no_busy_core)
{
	struct rig g;
	double c0, w0, cpu, wall;
	uint64_t end;

	rig_open(&g, "emu:link=gen1x1", 16u << 20);
	/* a 73 ms transfer: the engine sleeps between its pieces */
	c0 = cpu_ns();
	w0 = (double)now_ns();
	ering_put(&g.b, &g.r[MP_CH_C2H], pd_kmem_bus_addr(g.km[0]), 16u << 20, 0);
	end = now_ns() + EMU_WAIT_MS * 1000000ull;
	while (!(rec_status(&g.r[MP_CH_C2H], 0) & MP_DESC_RESULT_STATUS_DONE_MASK) && now_ns() < end)
		sleep_us(2000);
	cpu = cpu_ns() - c0;
	wall = (double)now_ns() - w0;
	ck_assert_msg(SANITIZED || cpu < 0.5 * wall, "%.1f ms of CPU in %.1f ms of transfer", cpu / 1e6,
		      wall / 1e6);
	/* idle, both channels RUNNING without work: nothing spins */
	sleep_us(10000);
	c0 = cpu_ns();
	sleep_us(200000);
	cpu = cpu_ns() - c0;
	ck_assert_msg(cpu < 20e6, "idle board used %.1f ms of CPU in 200 ms", cpu / 1e6);
	eb_close(&g.b);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-timing");
	TCase *tc = tcase_create("emu-timing");

	tcase_add_test(tc, test_gen1x1_transfer);
	tcase_add_test(tc, test_mps_matters);
	tcase_add_test(tc, test_interface_bound);
	tcase_add_test(tc, test_straddled_completions);
	tcase_add_test(tc, test_no_banking);
	tcase_add_test(tc, test_full_duplex);
	tcase_add_test(tc, test_latency);
	tcase_add_test(tc, test_custom_and_patgen_rate);
	tcase_add_test(tc, test_pio_cost);
	tcase_add_test(tc, test_no_busy_core);
	suite_add_tcase(s, tc);
	return s;
}
