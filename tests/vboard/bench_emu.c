// SPDX-License-Identifier: GPL-2.0
/*
 * bench_emu: figures about the model itself (not a test; docs/virtual-board.md quotes them):
 * what the virtual board's own threads cost and deliver, below libmprace, through raw
 * descriptors. Everything the project publishes about the stack (throughput, latency, the
 * library's CPU cost per operation, the buffer managers, the GPU paths) is dmabench's.
 *
 *   bench_emu ops [DEVICE] [N]        CPU per 4 KiB C2H operation, submit + poll the record,
 *                                     one at a time and 32 per doorbell (emu:link=ideal)
 *   bench_emu rate DEVICE [MiB] [DESC] C2H and H2C throughput alone and both at once,
 *                                     against the preset's model rate
 *   bench_emu sg OPTS [MiB] [BUF_MiB] [LAYOUTS]
 *                                     user memory with each umem layout (sg=pages, random,
 *                                     merged, or those named in LAYOUTS; OPTS are further
 *                                     emu options, e.g.
 *                                     link=gen4x16): one descriptor per SG entry (as
 *                                     libmprace makes them), C2H from the pattern generator,
 *                                     H2C into the checker, alone and both at once; MB/s next
 *                                     to the model rate, and the CPU the board's threads
 *                                     used per descriptor (the process's CPU time minus
 *                                     that of the feeding threads, which sleep-poll)
 *
 * Uses the public libpcidriver C API only, like an application would. Output: CSV lines
 * after a '#' header, one per measurement.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mprace-spec/engine_spec.h"
#include "vboard/vboard.h"
#include "pcidriver/pcidriver.h"

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_emu: %s: %s\n", what, pd_strerror(rc));
	exit(1);
}

struct ring {
	struct pd_regs *r;
	unsigned int ch;
	pd_kmem *km;
	uint8_t *mem;
	uint32_t size, tail;
};

static void ring_init(pd_device *dev, struct pd_regs *r, struct ring *q, unsigned int ch,
		      uint32_t size)
{
	uint64_t bus;
	int rc = pd_kmem_alloc(dev, (size_t)size * MP_ENGINE_DESC_SIZE, &q->km);

	if (rc)
		die("kmem", rc);
	q->r = r;
	q->ch = ch;
	q->mem = pd_kmem_ptr(q->km);
	q->size = size;
	q->tail = 0;
	bus = pd_kmem_bus_addr(q->km);
	pd_reg_write32(r, MP_CH_BASE(ch) + MP_CHREG_RING_BASE_LO, (uint32_t)bus);
	pd_reg_write32(r, MP_CH_BASE(ch) + MP_CHREG_RING_BASE_HI, (uint32_t)(bus >> 32));
	pd_reg_write32(r, MP_CH_BASE(ch) + MP_CHREG_RING_SIZE, size);
	pd_reg_write32(r, MP_CH_BASE(ch) + MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

static uint32_t *slot(struct ring *q, uint32_t n)
{
	return (uint32_t *)(void *)(q->mem + (size_t)(n & (q->size - 1)) * MP_ENGINE_DESC_SIZE);
}

static void put(struct ring *q, uint64_t addr, uint32_t len)
{
	uint32_t *d = slot(q, q->tail++);

	d[MP_DESC_ADDR_LO / 4] = (uint32_t)addr;
	d[MP_DESC_ADDR_HI / 4] = (uint32_t)(addr >> 32);
	d[MP_DESC_LEN / 4] = len;
	d[MP_DESC_CTRL / 4] = 0;
	d[MP_DESC_RESULT_BYTES / 4] = 0;
	d[MP_DESC_RESULT_STATUS / 4] = 0;
}

static void doorbell(struct ring *q)
{
	pd_reg_write32(q->r, MP_CH_BASE(q->ch) + MP_CHREG_TAIL, q->tail);
}

static void poll_done(struct ring *q, uint32_t n)
{
	uint32_t *st = slot(q, n) + MP_DESC_RESULT_STATUS / 4;

	while (!(__atomic_load_n(st, __ATOMIC_ACQUIRE) & MP_DESC_RESULT_STATUS_DONE_MASK))
		__builtin_ia32_pause();
	if (__atomic_load_n(st, __ATOMIC_ACQUIRE) != MP_DESC_RESULT_STATUS_DONE_MASK) {
		fprintf(stderr, "bench_emu: descriptor %u failed: 0x%x\n", n, *st);
		exit(1);
	}
}

static void ops(const char *name, long n)
{
	pd_device *dev;
	struct pd_regs r;
	struct ring q;
	pd_kmem *buf;
	uint64_t bus, w0, c0, w, c;
	long i, j;
	int rc, batch;

	if ((rc = pd_open(name, &dev)) || (rc = pd_regs_get(dev, 0, &r)))
		die(name, rc);
	if ((rc = pd_kmem_alloc(dev, 4096, &buf)))
		die("kmem", rc);
	bus = pd_kmem_bus_addr(buf);
	pd_reg_write32(&r, MP_REG_TEST_CONTROL, MP_C2H_SOURCE_PATTERN);
	ring_init(dev, &r, &q, MP_CH_C2H, 1024);
	printf("# device,mode,ops,wall_ns_per_op,cpu_ns_per_op\n");
	for (batch = 1; batch <= 32; batch *= 32) {
		for (i = 0; i < n / 10; i++) {   /* warm up */
			put(&q, bus, 4096);
			doorbell(&q);
			poll_done(&q, q.tail - 1);
		}
		w0 = ns_of(CLOCK_MONOTONIC);
		c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
		for (i = 0; i < n; i += batch) {
			for (j = 0; j < batch; j++)
				put(&q, bus, 4096);
			doorbell(&q);
			for (j = batch; j > 0; j--)
				poll_done(&q, q.tail - (uint32_t)j);
		}
		w = ns_of(CLOCK_MONOTONIC) - w0;
		c = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
		printf("%s,%s,%ld,%.1f,%.1f\n", name, batch == 1 ? "one-at-a-time" : "32-per-doorbell",
		       n, (double)w / n, (double)c / n);
	}
	pd_close(dev);
}

struct stream {
	pd_device *dev;
	struct pd_regs *r;
	struct ring q;
	pd_kmem *buf;
	unsigned int ch;
	uint64_t total;
	uint32_t desc;
	double secs;
};

/* Keeps the ring between half and completely full of desc-sized descriptors until total
 * bytes have moved: refills (one doorbell) whenever it has drained to half. */
static void *stream_main(void *arg)
{
	struct stream *s = arg;
	uint64_t bus = pd_kmem_bus_addr(s->buf), t0, queued = 0, done = 0;
	uint32_t nbuf = (uint32_t)(pd_kmem_size(s->buf) / s->desc), base = s->q.tail, head;

	t0 = ns_of(CLOCK_MONOTONIC);
	while (done < s->total) {
		head = base + (uint32_t)(done / s->desc);
		if (queued < s->total && s->q.tail - head < s->q.size / 2) {
			while (queued < s->total && s->q.tail - head < s->q.size) {
				put(&s->q, bus + (uint64_t)(s->q.tail % nbuf) * s->desc, s->desc);
				queued += s->desc;
			}
			doorbell(&s->q);   /* only when something new was queued */
		}
		poll_done(&s->q, head);
		done += s->desc;
	}
	s->secs = (double)(ns_of(CLOCK_MONOTONIC) - t0) / 1e9;
	return NULL;
}

static void rate(const char *name, uint64_t mib, uint32_t desc)
{
	struct stream s[MP_CH_COUNT];
	pd_device *dev;
	struct pd_regs r;
	pthread_t t[MP_CH_COUNT];
	unsigned int ch, mode;
	int rc;
	static const char *const modes[] = { "C2H", "H2C", "both" };

	if ((rc = pd_open(name, &dev)) || (rc = pd_regs_get(dev, 0, &r)))
		die(name, rc);
	pd_reg_write32(&r, MP_REG_TEST_CONTROL, MP_C2H_SOURCE_PATTERN |
			   (MP_H2C_SINK_CHECKER << MP_REG_TEST_CONTROL_H2C_SINK_SHIFT));
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		memset(&s[ch], 0, sizeof(s[ch]));
		s[ch].dev = dev;
		s[ch].r = &r;
		s[ch].ch = ch;
		s[ch].total = mib << 20;
		s[ch].desc = desc;
		if ((rc = pd_kmem_alloc(dev, 64u << 20, &s[ch].buf)))
			die("kmem", rc);
		memset(pd_kmem_ptr(s[ch].buf), 0, 64u << 20);
		ring_init(dev, &r, &s[ch].q, ch, 256);
	}
	printf("# device,direction,MiB,desc_bytes,MB_per_s\n");
	for (mode = 0; mode < 3; mode++) {
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch)
				pthread_create(&t[ch], NULL, stream_main, &s[ch]);
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch) {
				pthread_join(t[ch], NULL);
				printf("%s,%s%s,%llu,%u,%.0f\n", name, modes[mode],
				       mode == 2 ? (ch ? ":H2C" : ":C2H") : "",
				       (unsigned long long)mib, desc, (double)(mib << 20) / s[ch].secs / 1e6);
			}
	}
	pd_close(dev);
}

/* ---- sg: user memory as libmprace maps it ---- */

/* The model's rate in MB/s of large aligned transfers for direction ch (the documented
 * formula: the link, or the engine's interface where that is slower; 0 = no limit), from
 * "link=genGxL" or "bw=N" in the options and the MPS in use. */
static double model_MBps(const char *opts, pd_device *dev, unsigned int ch)
{
	struct pd_regs r;
	const char *p;
	unsigned int gen, lanes;
	double lane, mps, raw, wire_ns, iface_ns;
	unsigned int beat, slot, slots;

	if (pd_regs_get(dev, 0, &r))
		return 0;
	mps = (double)(128u << ((pd_reg_read32(&r, MP_REG_CAPS) & MP_REG_CAPS_MPS_MASK) >>
				MP_REG_CAPS_MPS_SHIFT));
	if ((p = strstr(opts, "bw=")))
		return atof(p + 3);
	if ((p = strstr(opts, "link=ideal")))
		return 0;
	if (!(p = strstr(opts, "link=gen")) || sscanf(p, "link=gen%ux%u", &gen, &lanes) != 2)
		gen = 3, lanes = 8;   /* the default link */
	lane = gen == 1 ? 250e6 : gen == 2 ? 500e6 : gen == 3 ? 8e9 * 128 / 130 / 8 :
	       16e9 * 128 / 130 / 8;
	raw = lanes * lane;
	wire_ns = (mps + (ch == MP_CH_C2H ? 24 : 20)) / raw * 1e9;
	beat = raw > 8e9 ? 64 : 32;
	slot = beat == 64 ? 32 : beat;   /* the 512-bit engine straddles both ways */
	slots = (unsigned int)(((ch == MP_CH_C2H ? 16 : 12) + mps + slot - 1) / slot);
	iface_ns = slots * (double)slot / beat * 4.0;   /* 250 MHz */
	if (raw > beat * 250e6)
		iface_ns = 0;   /* gen4x16: the link alone */
	return mps / (wire_ns > iface_ns ? wire_ns : iface_ns) * 1e3;
}

struct sgstream {
	struct ring q;
	struct pd_sg_entry *desc;     /* the SG list cut at max_desc_len */
	size_t ndesc;
	uint64_t total, bytes, count; /* bytes to move; moved; descriptors completed */
	double secs, cpu;             /* wall time; this thread's CPU */
};

static bool rec_done(struct ring *q, uint32_t n)
{
	uint32_t st = __atomic_load_n(slot(q, n) + MP_DESC_RESULT_STATUS / 4, __ATOMIC_ACQUIRE);

	if (st && st != MP_DESC_RESULT_STATUS_DONE_MASK) {
		fprintf(stderr, "bench_emu: descriptor %u failed: 0x%x\n", n, st);
		exit(1);
	}
	return st != 0;
}

/* Keeps the ring at least half full, cycling through the SG list, until total bytes have
 * moved; polls the records with 20 us sleeps, so that it costs (almost) no CPU itself. */
static void *sgstream_main(void *arg)
{
	struct sgstream *s = arg;
	struct timespec nap = { 0, 20000 };
	uint64_t queued = 0, t0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
	uint32_t head = s->q.tail, lens[4096];
	size_t next = 0;

	if (s->q.size > 4096)
		abort();
	s->bytes = s->count = 0;
	while (s->bytes < s->total) {
		if (queued < s->total && s->q.tail - head <= s->q.size / 2) {
			while (queued < s->total && s->q.tail - head < s->q.size) {
				lens[s->q.tail & (s->q.size - 1)] = s->desc[next].length;
				put(&s->q, s->desc[next].bus_addr, (uint32_t)s->desc[next].length);
				queued += s->desc[next].length;
				next = (next + 1) % s->ndesc;
			}
			doorbell(&s->q);
		}
		if (!rec_done(&s->q, head)) {
			nanosleep(&nap, NULL);
			continue;
		}
		while (head != s->q.tail && rec_done(&s->q, head)) {
			s->bytes += lens[head & (s->q.size - 1)];
			s->count++;
			head++;
		}
	}
	s->secs = (double)(ns_of(CLOCK_MONOTONIC) - t0) / 1e9;
	s->cpu = (double)(ns_of(CLOCK_THREAD_CPUTIME_ID) - c0);
	return NULL;
}

static void sg_layout(const char *opts, const char *layout, uint64_t mib, uint64_t buf_mib)
{
	static const char *const dirs[] = { "C2H", "H2C", "both" };
	struct sgstream s[MP_CH_COUNT];
	struct pd_sg_entry *sg;
	pd_device *dev;
	pd_umem *um[MP_CH_COUNT];
	struct pd_regs r;
	pthread_t t[MP_CH_COUNT];
	uint8_t *buf[MP_CH_COUNT];
	uint64_t size = buf_mib << 20, c0, cpu;
	char name[256];
	unsigned int ch, mode;
	size_t n, i, k;
	uint32_t w;
	int rc;

	snprintf(name, sizeof(name), "emu:%s%ssg=%s", opts, *opts ? "," : "", layout);
	if ((rc = pd_open(name, &dev)) || (rc = pd_regs_get(dev, 0, &r)))
		die(name, rc);
	pd_reg_write32(&r, MP_REG_TEST_CONTROL, MP_C2H_SOURCE_PATTERN |
			   (MP_H2C_SINK_CHECKER << MP_REG_TEST_CONTROL_H2C_SINK_SHIFT));
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		memset(&s[ch], 0, sizeof(s[ch]));
		buf[ch] = aligned_alloc(4096, size);
		if (!buf[ch])
			die("buffer", -ENOMEM);
		for (i = 0; i < size / 4; i++) {   /* the pattern: the checker finds no errors */
			w = (uint32_t)i;
			memcpy(buf[ch] + 4 * i, &w, 4);
		}
		rc = pd_umem_map(dev, buf[ch], size, ch == MP_CH_C2H ? PD_DMA_FROM_DEVICE :
				 PD_DMA_TO_DEVICE, &um[ch]);
		if (rc)
			die("umem", rc);
		n = pd_umem_sg_count(um[ch]);
		sg = calloc(n, sizeof(*sg));
		s[ch].desc = calloc(n + size / MP_ENGINE_MAX_DESC_LEN + 1, sizeof(*sg));
		if (!sg || !s[ch].desc || pd_umem_sglist(um[ch], sg, n) != (int)n)
			die("sglist", -ENOMEM);
		for (i = 0; i < n; i++)   /* cut at max_desc_len, as libmprace does */
			for (k = 0; k < sg[i].length; k += MP_ENGINE_MAX_DESC_LEN) {
				s[ch].desc[s[ch].ndesc].bus_addr = sg[i].bus_addr + k;
				s[ch].desc[s[ch].ndesc].length = sg[i].length - k < MP_ENGINE_MAX_DESC_LEN ?
								 sg[i].length - k : MP_ENGINE_MAX_DESC_LEN;
				s[ch].ndesc++;
			}
		free(sg);
		s[ch].total = mib << 20;
		ring_init(dev, &r, &s[ch].q, ch, 4096);
	}
	for (mode = 0; mode < 3; mode++) {
		if (mode == 1)   /* the same stream of words as C2H, from the start */
			pd_reg_write32(&r, MP_REG_CHECK_SEED, 0);
		c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch)
				pthread_create(&t[ch], NULL, sgstream_main, &s[ch]);
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch)
				pthread_join(t[ch], NULL);
		cpu = ns_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
		n = 0;
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch) {
				cpu -= (uint64_t)s[ch].cpu;
				n += s[ch].count;
			}
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			if (mode == 2 || mode == ch) {
				double model = model_MBps(opts, dev, ch);

				printf("\"%s\",%s,%s%s,%.0f,%.0f,", opts, layout, dirs[mode],
				       mode == 2 ? (ch ? ":H2C" : ":C2H") : "",
				       (double)s[ch].bytes / (double)s[ch].count,
				       (double)s[ch].bytes / s[ch].secs / 1e6);
				if (model > 0)
					printf("%.0f,", model);
				else
					printf("inf,");
				printf("%.0f\n", (double)cpu / (double)n);
			}
	}
	pd_close(dev);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		free(buf[ch]);
		free(s[ch].desc);
	}
}

static void sgbench(const char *opts, uint64_t mib, uint64_t buf_mib, const char *layouts)
{
	static const char *const all[] = { "pages", "random", "merged" };
	unsigned int i;

	printf("# opts,sg,direction,avg_desc_bytes,MB_per_s,model_MB_per_s,board_cpu_ns_per_desc\n");
	for (i = 0; i < 3; i++)
		if (strstr(layouts, all[i]))
			sg_layout(opts, all[i], mib, buf_mib);
}

int main(int argc, char **argv)
{
	vboard_register(); /* the virtual board linked in: no plugin needed */
	if (argc >= 2 && !strcmp(argv[1], "ops")) {
		ops(argc > 2 ? argv[2] : "emu:link=ideal", argc > 3 ? atol(argv[3]) : 200000);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "rate")) {
		rate(argv[2], argc > 3 ? strtoull(argv[3], NULL, 0) : 1024,
		     argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 4u << 20);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "sg")) {
		sgbench(argv[2], argc > 3 ? strtoull(argv[3], NULL, 0) : 512,
			argc > 4 ? strtoull(argv[4], NULL, 0) : 64,
			argc > 5 ? argv[5] : "pages,random,merged");
		return 0;
	}
	fprintf(stderr, "usage: bench_emu ops [DEVICE] [N] | bench_emu rate DEVICE [MiB] [DESC] |\n"
		"       bench_emu sg OPTS [MiB] [BUF_MiB] [LAYOUTS]\n");
	return 2;
}

