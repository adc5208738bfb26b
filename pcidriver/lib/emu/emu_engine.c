// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine of the virtual board: one thread per channel walks the descriptor ring as
 * docs/dma-engine.md sections 4-7 describe, moving data through the IOMMU (emu_iommu.c), paced
 * by the link model (emu_link.c), to and from the test logic (pattern generator, checker,
 * loopback FIFO) and the user-stream model.
 *
 * Channel state machine and who changes what (all transitions under emu_chan.lock):
 *   IDLE -> RUNNING      a register write of CONTROL.RUN = 1
 *   RUNNING -> IDLE      RUN = 0 with nothing in flight (the writer), after the descriptor in
 *                        flight (the engine), or a descriptor with CTRL.STOP (the engine)
 *   * -> ERROR           a failing descriptor (the engine) or ABORT (the writer when nothing is
 *                        in flight, else the engine at its next check point)
 *   * -> IDLE            RESET (the writer when nothing is in flight, else the engine)
 * `inflight` is the engine's claim on a descriptor (BUSY). The engine sets it (or keeps it
 * from the descriptor before) and then re-reads `ctl` before each descriptor; a writer changes
 * `ctl` and then reads `inflight` (both sequentially consistent), so either the engine sees
 * the request before it starts a descriptor, or the writer sees the claim and leaves the
 * request to the engine, waiting on `ack` for ABORT and RESET so that they have taken effect
 * when the register write returns. The engine clears the claim whenever it stops: no work,
 * RUN = 0, a request, ERROR, STOP.
 *
 * Inside a descriptor the engine checks for requests between pieces (at most `chunk` bytes,
 * aligned in bus address space) and in every wait; a piece being copied finishes first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "emu.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the virtual board assumes a little-endian host (descriptors and patterns are LE)"
#endif

#define SLACK_NS 10000.0          /* a transfer may catch up this much of the engine's own lag */
#define SLEEP_MIN_NS 80000u       /* longer waits sleep; shorter ones spin */
#define SLEEP_EARLY_NS 10000u     /* wake this much before a paced deadline, spin the rest */

#define WAIT_ANY 1u               /* emu_chan.waiting: wake on doorbells, FIFO and requests */
#define WAIT_REQ 2u               /* wake on requests (ABORT, RESET, close) only */

#define CTRL_DEFINED (MP_DESC_CTRL_IRQ_MASK | MP_DESC_CTRL_EOP_MASK | MP_DESC_CTRL_STOP_MASK)

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ================================================================== copy kernels */

/* Writes n pattern words w0, w0+1, ... (little-endian) at dst (4-byte aligned). */
static void fill_words_sse2(uint8_t *dst, uint64_t n, uint32_t w0)
{
	uint64_t i = 0;
#if defined(__SSE2__)
	__m128i v = _mm_add_epi32(_mm_set1_epi32((int)w0), _mm_set_epi32(3, 2, 1, 0));
	const __m128i four = _mm_set1_epi32(4);

	for (; i + 16 <= n; i += 16) {
		__m128i v1 = _mm_add_epi32(v, four);
		__m128i v2 = _mm_add_epi32(v1, four);
		__m128i v3 = _mm_add_epi32(v2, four);

		_mm_storeu_si128((__m128i *)(void *)(dst + 4 * i), v);
		_mm_storeu_si128((__m128i *)(void *)(dst + 4 * i + 16), v1);
		_mm_storeu_si128((__m128i *)(void *)(dst + 4 * i + 32), v2);
		_mm_storeu_si128((__m128i *)(void *)(dst + 4 * i + 48), v3);
		v = _mm_add_epi32(v3, four);
	}
#endif
	for (; i < n; i++) {
		uint32_t w = w0 + (uint32_t)i;

		memcpy(dst + 4 * i, &w, 4);
	}
}

/* Compares n words at src with w0, w0+1, ...; returns the number that differ. Equal lanes
 * are summed as -1 in vector accumulators (n stays below 2^32 per call). */
static uint64_t check_words_sse2(const uint8_t *src, uint64_t n, uint32_t w0)
{
	uint64_t i = 0, bad = 0;
#if defined(__SSE2__)
	__m128i v = _mm_add_epi32(_mm_set1_epi32((int)w0), _mm_set_epi32(3, 2, 1, 0));
	const __m128i four = _mm_set1_epi32(4);
	__m128i acc = _mm_setzero_si128();
	uint32_t lane[4];
	unsigned int k;

	for (; i + 16 <= n; i += 16) {
		__m128i v1 = _mm_add_epi32(v, four), v2 = _mm_add_epi32(v1, four);
		__m128i v3 = _mm_add_epi32(v2, four);
		__m128i e0 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 4 * i)), v);
		__m128i e1 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 4 * i + 16)), v1);
		__m128i e2 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 4 * i + 32)), v2);
		__m128i e3 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 4 * i + 48)), v3);

		acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_add_epi32(e0, e1), _mm_add_epi32(e2, e3)));
		v = _mm_add_epi32(v3, four);
	}
	_mm_storeu_si128((__m128i *)(void *)lane, acc);
	bad = i;
	for (k = 0; k < 4; k++)
		bad -= (uint32_t)-lane[k];
#endif
	for (; i < n; i++) {
		uint32_t w;

		memcpy(&w, src + 4 * i, 4);
		bad += w != w0 + (uint32_t)i;
	}
	return bad;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_KERNELS 1
__attribute__((target("avx2")))
static void fill_words_avx2(uint8_t *dst, uint64_t n, uint32_t w0)
{
	uint64_t i = 0;
	__m256i v = _mm256_add_epi32(_mm256_set1_epi32((int)w0),
				     _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
	const __m256i eight = _mm256_set1_epi32(8);

	for (; i + 32 <= n; i += 32) {
		__m256i v1 = _mm256_add_epi32(v, eight);
		__m256i v2 = _mm256_add_epi32(v1, eight);
		__m256i v3 = _mm256_add_epi32(v2, eight);

		_mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i), v);
		_mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i + 32), v1);
		_mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i + 64), v2);
		_mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i + 96), v3);
		v = _mm256_add_epi32(v3, eight);
	}
	fill_words_sse2(dst + 4 * i, n - i, w0 + (uint32_t)i);
}

__attribute__((target("avx2")))
static uint64_t check_words_avx2(const uint8_t *src, uint64_t n, uint32_t w0)
{
	uint64_t i = 0, bad;
	__m256i v = _mm256_add_epi32(_mm256_set1_epi32((int)w0),
				     _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
	const __m256i eight = _mm256_set1_epi32(8);
	__m256i acc = _mm256_setzero_si256();
	uint32_t lane[8];
	unsigned int k;

	for (; i + 32 <= n; i += 32) {
		__m256i v1 = _mm256_add_epi32(v, eight), v2 = _mm256_add_epi32(v1, eight);
		__m256i v3 = _mm256_add_epi32(v2, eight);
		__m256i e0 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(src + 4 * i)), v);
		__m256i e1 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(src + 4 * i + 32)), v1);
		__m256i e2 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(src + 4 * i + 64)), v2);
		__m256i e3 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(src + 4 * i + 96)), v3);

		acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_add_epi32(e0, e1),
							     _mm256_add_epi32(e2, e3)));
		v = _mm256_add_epi32(v3, eight);
	}
	_mm256_storeu_si256((__m256i *)(void *)lane, acc);
	bad = i;
	for (k = 0; k < 8; k++)
		bad -= (uint32_t)-lane[k];
	return bad + check_words_sse2(src + 4 * i, n - i, w0 + (uint32_t)i);
}
#endif

static void fill_words(uint8_t *dst, uint64_t n, uint32_t w0)
{
#ifdef HAVE_AVX2_KERNELS
	if (__builtin_cpu_supports("avx2")) {
		fill_words_avx2(dst, n, w0);
		return;
	}
#endif
	fill_words_sse2(dst, n, w0);
}

static uint64_t check_words(const uint8_t *src, uint64_t n, uint32_t w0)
{
#ifdef HAVE_AVX2_KERNELS
	if (__builtin_cpu_supports("avx2"))
		return check_words_avx2(src, n, w0);
#endif
	return check_words_sse2(src, n, w0);
}

/* fill_words with non-temporal stores for large ranges: the data goes to memory without
 * first reading the destination lines into the cache (half the memory traffic). */
static void fill_words_nt(uint8_t *dst, uint64_t n, uint32_t w0)
{
#if defined(__SSE2__)
	uint64_t head = ((16 - ((uintptr_t)dst & 15)) & 15) / 4, i;
	__m128i v, v1, v2, v3;
	const __m128i four = _mm_set1_epi32(4);

	if (n < 64 + head) {
		fill_words(dst, n, w0);
		return;
	}
	fill_words_sse2(dst, head, w0);
	dst += 4 * head;
	w0 += (uint32_t)head;
	n -= head;
	v = _mm_add_epi32(_mm_set1_epi32((int)w0), _mm_set_epi32(3, 2, 1, 0));
	for (i = 0; i + 16 <= n; i += 16) {
		v1 = _mm_add_epi32(v, four);
		v2 = _mm_add_epi32(v1, four);
		v3 = _mm_add_epi32(v2, four);
		_mm_stream_si128((__m128i *)(void *)(dst + 4 * i), v);
		_mm_stream_si128((__m128i *)(void *)(dst + 4 * i + 16), v1);
		_mm_stream_si128((__m128i *)(void *)(dst + 4 * i + 32), v2);
		_mm_stream_si128((__m128i *)(void *)(dst + 4 * i + 48), v3);
		v = _mm_add_epi32(v3, four);
	}
	_mm_sfence();   /* weakly ordered stores: visible before the part is reported done */
	fill_words_sse2(dst + 4 * i, n - i, w0 + (uint32_t)i);
#else
	fill_words(dst, n, w0);
#endif
}

#define NT_MIN (128u << 10)   /* parts at least this large bypass the cache */

/* ================================================================== copy pool */

enum job_kind { JOB_COPY, JOB_FILL, JOB_CHECK };

struct emu_job {
	enum job_kind kind;
	uint8_t *dst;
	const uint8_t *src;
	uint64_t len;
	uint32_t w0;
	uint64_t part_len;             /* multiple of 64 */
	size_t nparts, next;           /* pool lock */
	atomic_size_t done;            /* parts finished (changed under the pool lock) */
	uint64_t mismatches;           /* pool lock */
};

static uint64_t job_part(struct emu_job *j, size_t p)
{
	uint64_t off = p * j->part_len, n = min64(j->part_len, j->len - off);

	switch (j->kind) {
	case JOB_COPY:
		memcpy(j->dst + off, j->src + off, n);
		return 0;
	case JOB_FILL:
		if (n >= NT_MIN)
			fill_words_nt(j->dst + off, n / 4, j->w0 + (uint32_t)(off / 4));
		else
			fill_words(j->dst + off, n / 4, j->w0 + (uint32_t)(off / 4));
		return 0;
	case JOB_CHECK:
		return check_words(j->src + off, n / 4, j->w0 + (uint32_t)(off / 4));
	}
	return 0;
}

#define EMU_WORKER_SPIN_NS 100000u   /* a worker spins this long for the next piece */

static struct emu_job *find_job_locked(struct emu_pool *pool)
{
	unsigned int s;

	for (s = 0; s < MP_CH_COUNT; s++)
		if (pool->slot[s] && pool->slot[s]->next < pool->slot[s]->nparts)
			return pool->slot[s];
	return NULL;
}

/* Claims the next part of j (pool lock held). */
static size_t claim_locked(struct emu_pool *pool, struct emu_job *j)
{
	size_t p = j->next++;

	if (j->next == j->nparts)
		atomic_fetch_sub(&pool->active, 1);
	return p;
}

static void *worker_main(void *arg)
{
	struct emu_pool *pool = arg;
	struct emu_job *j;
	uint64_t t0;
	uint64_t r;
	size_t p;
	unsigned int i;

	pthread_mutex_lock(&pool->lock);
	while (!pool->quit) {
		j = find_job_locked(pool);
		if (!j) {
			/* spin a while: at high rates the next piece comes within microseconds */
			pthread_mutex_unlock(&pool->lock);
			t0 = emu_now_ns();
			do {
				for (i = 0; i < 64 && !atomic_load_explicit(&pool->active,
									    memory_order_relaxed); i++)
					emu_cpu_relax();
			} while (!atomic_load_explicit(&pool->active, memory_order_relaxed) &&
				 emu_now_ns() - t0 < EMU_WORKER_SPIN_NS);
			pthread_mutex_lock(&pool->lock);
			j = find_job_locked(pool);
			if (!j && !pool->quit) {
				pool->sleepers++;
				pthread_cond_wait(&pool->work, &pool->lock);
				pool->sleepers--;
			}
			continue;
		}
		p = claim_locked(pool, j);
		pthread_mutex_unlock(&pool->lock);
		r = job_part(j, p);
		pthread_mutex_lock(&pool->lock);
		j->mismatches += r;
		if (atomic_fetch_add(&j->done, 1) + 1 == j->nparts)
			pthread_cond_broadcast(&pool->done);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Runs a job, split across the pool when it is large; the caller works on it too. */
static uint64_t pool_run(struct emu_dev *d, unsigned int slot, struct emu_job *j)
{
	struct emu_pool *pool = &d->pool;
	uint64_t parts, r, t0;
	size_t p;

	parts = pool->started ? min64(pool->started + 1u, j->len / d->split_min) : 1;
	if (parts <= 1) {
		j->part_len = j->len;
		j->nparts = 1;
		return job_part(j, 0);
	}
	j->part_len = ((j->len + parts - 1) / parts + 63) & ~(uint64_t)63;
	j->nparts = (size_t)((j->len + j->part_len - 1) / j->part_len);
	j->next = 0;
	atomic_store(&j->done, 0);
	j->mismatches = 0;
	pthread_mutex_lock(&pool->lock);
	pool->slot[slot] = j;
	atomic_fetch_add(&pool->active, 1);
	if (pool->sleepers)
		pthread_cond_broadcast(&pool->work);
	while (j->next < j->nparts) {
		p = claim_locked(pool, j);
		pthread_mutex_unlock(&pool->lock);
		r = job_part(j, p);
		pthread_mutex_lock(&pool->lock);
		j->mismatches += r;
		atomic_fetch_add(&j->done, 1);
	}
	if (atomic_load(&j->done) < j->nparts) {
		/* workers are finishing the last parts, which take as long as ours did: spin */
		pthread_mutex_unlock(&pool->lock);
		t0 = emu_now_ns();
		while (atomic_load(&j->done) < j->nparts && emu_now_ns() - t0 < EMU_WORKER_SPIN_NS)
			emu_cpu_relax();
		pthread_mutex_lock(&pool->lock);
		while (atomic_load(&j->done) < j->nparts)
			pthread_cond_wait(&pool->done, &pool->lock);
	}
	pool->slot[slot] = NULL;
	r = j->mismatches;
	pthread_mutex_unlock(&pool->lock);
	return r;
}

static void do_copy(struct emu_chan *ch, uint8_t *dst, const uint8_t *src, uint64_t n)
{
	struct emu_job j = { .kind = JOB_COPY, .dst = dst, .src = src, .len = n };

	if (n)
		pool_run(ch->dev, ch->idx, &j);
}

static void do_fill(struct emu_chan *ch, uint8_t *dst, uint64_t n, uint32_t w0)
{
	struct emu_job j = { .kind = JOB_FILL, .dst = dst, .len = n, .w0 = w0 };

	pool_run(ch->dev, ch->idx, &j);
}

static uint64_t do_check(struct emu_chan *ch, const uint8_t *src, uint64_t n, uint32_t w0)
{
	struct emu_job j = { .kind = JOB_CHECK, .src = src, .len = n, .w0 = w0 };

	return pool_run(ch->dev, ch->idx, &j);
}

/* ================================================================== test logic */

int emu_test_init(struct emu_test *t, uint64_t fifo)
{
	memset(t, 0, sizeof(*t));
	t->fifo.buf = mmap(NULL, fifo, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->fifo.buf == MAP_FAILED) {
		t->fifo.buf = NULL;
		return -ENOMEM;
	}
	t->fifo.cap = fifo;
	pthread_mutex_init(&t->lock, NULL);
	atomic_init(&t->control, 0);
	atomic_init(&t->pg_seed, 0);
	atomic_init(&t->pg_state, 0);
	atomic_init(&t->pg_rate, 0);
	atomic_init(&t->ck_seed, 0);
	atomic_init(&t->ck_words, 0);
	atomic_init(&t->ck_errors, 0);
	atomic_init(&t->fifo.wpos, 0);
	atomic_init(&t->fifo.rpos, 0);
	return 0;
}

void emu_test_destroy(struct emu_test *t)
{
	if (t->fifo.buf) {
		munmap(t->fifo.buf, t->fifo.cap);
		pthread_mutex_destroy(&t->lock);
	}
}

static uint32_t chan_state(struct emu_chan *ch)
{
	return atomic_load_explicit(&ch->status, memory_order_relaxed) & MP_CHREG_STATUS_STATE_MASK;
}

void emu_test_write(struct emu_dev *d, uint64_t off, uint32_t v)
{
	struct emu_test *t = &d->test;

	switch (off) {
	case MP_REG_TEST_CONTROL:
		/* changed only while both channels are IDLE: other writes are ignored */
		pthread_mutex_lock(&d->ch[MP_CH_C2H].lock);
		pthread_mutex_lock(&d->ch[MP_CH_H2C].lock);
		if (chan_state(&d->ch[MP_CH_C2H]) == MP_STATE_IDLE &&
		    chan_state(&d->ch[MP_CH_H2C]) == MP_STATE_IDLE &&
		    !atomic_load(&d->ch[MP_CH_C2H].inflight) && !atomic_load(&d->ch[MP_CH_H2C].inflight))
			atomic_store(&t->control, v & (MP_REG_TEST_CONTROL_C2H_SOURCE_MASK |
						       MP_REG_TEST_CONTROL_H2C_SINK_MASK));
		pthread_mutex_unlock(&d->ch[MP_CH_H2C].lock);
		pthread_mutex_unlock(&d->ch[MP_CH_C2H].lock);
		break;
	case MP_REG_PATGEN_SEED:
		pthread_mutex_lock(&t->lock);
		atomic_store(&t->pg_seed, v);
		atomic_store_explicit(&t->pg_state, (atomic_load(&t->pg_state) & ~0xffffffffull) +
				      (1ull << 32) + v, memory_order_release);
		pthread_mutex_unlock(&t->lock);
		break;
	case MP_REG_PATGEN_RATE:
		atomic_store(&t->pg_rate, v);
		break;
	case MP_REG_CHECK_SEED:
		pthread_mutex_lock(&t->lock);
		atomic_store(&t->ck_seed, v);
		t->ck_gen++;
		atomic_store(&t->ck_words, 0);
		atomic_store(&t->ck_errors, 0);
		pthread_mutex_unlock(&t->lock);
		break;
	default:
		break;
	}
}

static uint64_t fifo_avail(struct emu_fifo *f)
{
	return atomic_load(&f->wpos) - atomic_load_explicit(&f->rpos, memory_order_relaxed);
}

static uint64_t fifo_space(struct emu_fifo *f)
{
	return f->cap - (atomic_load_explicit(&f->wpos, memory_order_relaxed) - atomic_load(&f->rpos));
}

/* ================================================================== channel registers */

void emu_chan_init(struct emu_dev *d, unsigned int idx)
{
	struct emu_chan *ch = &d->ch[idx];
	pthread_condattr_t attr;

	memset(ch, 0, sizeof(*ch));
	ch->dev = d;
	ch->idx = idx;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ch->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&ch->ack, NULL);
	atomic_init(&ch->tail, 0);
	atomic_init(&ch->tail_ns, 0);
	atomic_init(&ch->ctl, 0);
	atomic_init(&ch->ring_lo, 0);
	atomic_init(&ch->ring_hi, 0);
	atomic_init(&ch->ring_size, 0);
	atomic_init(&ch->timeout_us, 0);
	atomic_init(&ch->run_ns, 0);
	atomic_init(&ch->head, 0);
	atomic_init(&ch->status, MP_STATE_IDLE);
	atomic_init(&ch->inflight, 0);
	atomic_init(&ch->waiting, 0);
	atomic_init(&ch->bytes, 0);
	atomic_init(&ch->bytes_hi, 0);
	atomic_init(&ch->gen, 0);
}

void emu_chan_destroy(struct emu_chan *ch)
{
	pthread_cond_destroy(&ch->ack);
	pthread_cond_destroy(&ch->wake);
	pthread_mutex_destroy(&ch->lock);
}

void emu_chan_wake(struct emu_chan *ch)
{
	if (atomic_load(&ch->waiting)) {
		pthread_mutex_lock(&ch->lock);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Wakes the engine thread if it waits for doorbells or FIFO data/space. */
static void kick(struct emu_chan *ch)
{
	if (atomic_load(&ch->waiting) == WAIT_ANY) {
		pthread_mutex_lock(&ch->lock);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
	}
}

/*
 * The engine thread's hold on its IOMMU reader lock. It is taken at the descriptor fetch and
 * kept through the data and the completion record, so that a descriptor that never waits
 * costs one lock round trip; it is dropped before every wait (pacing, FIFO, stall) and before
 * any channel lock is taken (no thread takes a channel lock while holding a reader lock).
 */
static void mmu_hold(struct emu_chan *ch)
{
	if (!ch->mmu_held) {
		emu_iommu_reader_lock(&ch->dev->mmu, ch->idx);
		ch->mmu_held = true;
	}
}

static void mmu_drop(struct emu_chan *ch)
{
	if (ch->mmu_held) {
		ch->mmu_held = false;
		emu_iommu_reader_unlock(&ch->dev->mmu, ch->idx);
	}
}

void emu_chan_write_tail(struct emu_chan *ch, uint32_t v)
{
	if (ch->dev->link.paced)
		atomic_store_explicit(&ch->tail_ns, emu_now_ns(), memory_order_relaxed);
	/* seq_cst: publishes the descriptors (release) and orders against `waiting` */
	atomic_store(&ch->tail, v);
	kick(ch);
}

void emu_chan_write_ring(struct emu_chan *ch, uint64_t off, uint32_t v)
{
	pthread_mutex_lock(&ch->lock);
	if (chan_state(ch) != MP_STATE_RUNNING) {   /* ignored while RUNNING */
		if (off == MP_CHREG_RING_BASE_LO)
			atomic_store(&ch->ring_lo, v);
		else if (off == MP_CHREG_RING_BASE_HI)
			atomic_store(&ch->ring_hi, v);
		else
			atomic_store(&ch->ring_size, v);
	}
	pthread_mutex_unlock(&ch->lock);
}

static void set_status_locked(struct emu_chan *ch, uint32_t state, uint32_t code)
{
	atomic_store_explicit(&ch->status, state | (code << MP_CHREG_STATUS_ERROR_CODE_SHIFT),
			      memory_order_release);
}

/* ERROR with `code`; RUN and a pending ABORT are cleared; raises IRQ_STATUS.ERROR. Nothing
 * is in flight any more (the engine calls this as the last act on a failed descriptor), so
 * BUSY is clear when a writer waiting for the abort reads STATUS. */
static void enter_error_locked(struct emu_chan *ch, uint32_t code)
{
	atomic_store(&ch->inflight, 0);
	set_status_locked(ch, MP_STATE_ERROR, code);
	atomic_fetch_and(&ch->ctl, ~(EMU_CTL_RUN | EMU_CTL_ABORT));
	emu_irq_raise(ch->dev, MP_IRQ_ERROR_BIT);
	pthread_cond_broadcast(&ch->ack);
}

/* CONTROL.RESET with nothing in flight. */
static void do_reset_locked(struct emu_chan *ch)
{
	atomic_store(&ch->head, 0);
	atomic_store(&ch->tail, 0);
	atomic_store(&ch->bytes, 0);
	atomic_fetch_add(&ch->gen, 1);
	set_status_locked(ch, MP_STATE_IDLE, 0);
	atomic_fetch_and(&ch->ctl, ~(EMU_CTL_RUN | EMU_CTL_ABORT | EMU_CTL_RESET));
	pthread_cond_broadcast(&ch->ack);
}

/* Leaves `req` to the engine thread and waits until it has been handled. */
static void wait_engine_locked(struct emu_chan *ch, uint32_t req)
{
	pthread_cond_broadcast(&ch->wake);
	ch->ack_waiters++;
	while (atomic_load(&ch->ctl) & req)
		pthread_cond_wait(&ch->ack, &ch->lock);
	ch->ack_waiters--;
}

static void chan_reset(struct emu_chan *ch)
{
	pthread_mutex_lock(&ch->lock);
	atomic_store(&ch->ctl, (atomic_load(&ch->ctl) & ~EMU_CTL_RUN) | EMU_CTL_RESET);
	if (!atomic_load(&ch->inflight))
		do_reset_locked(ch);
	else
		wait_engine_locked(ch, EMU_CTL_RESET);
	pthread_mutex_unlock(&ch->lock);
}

static void chan_abort(struct emu_chan *ch)
{
	pthread_mutex_lock(&ch->lock);
	if (chan_state(ch) != MP_STATE_ERROR) {     /* an ERROR channel keeps its code */
		atomic_fetch_or(&ch->ctl, EMU_CTL_ABORT);
		if (!atomic_load(&ch->inflight))
			enter_error_locked(ch, MP_ERR_ABORTED);
		else
			wait_engine_locked(ch, EMU_CTL_ABORT);
	}
	pthread_mutex_unlock(&ch->lock);
}

void emu_chan_write_control(struct emu_chan *ch, uint32_t v)
{
	uint32_t st;

	if (v & MP_CHREG_CONTROL_RESET_MASK) {
		chan_reset(ch);
		return;
	}
	if (v & MP_CHREG_CONTROL_ABORT_MASK) {
		chan_abort(ch);
		return;
	}
	pthread_mutex_lock(&ch->lock);
	st = chan_state(ch);
	if (v & MP_CHREG_CONTROL_RUN_MASK) {
		if (st == MP_STATE_IDLE) {
			atomic_store(&ch->run_ns, emu_now_ns());
			set_status_locked(ch, MP_STATE_RUNNING, 0);
			atomic_fetch_or(&ch->ctl, EMU_CTL_RUN);
			pthread_cond_broadcast(&ch->wake);
		} else if (st == MP_STATE_RUNNING) {
			atomic_fetch_or(&ch->ctl, EMU_CTL_RUN);   /* cancels a pending halt */
		}
		/* ERROR: ignored until RESET */
	} else {
		atomic_fetch_and(&ch->ctl, ~EMU_CTL_RUN);
		if (st == MP_STATE_RUNNING && !atomic_load(&ch->inflight))
			set_status_locked(ch, MP_STATE_IDLE, 0);
		/* else the engine goes IDLE when the descriptor in flight is done */
	}
	pthread_mutex_unlock(&ch->lock);
}

void emu_global_reset(struct emu_dev *d)
{
	struct emu_test *t = &d->test;
	unsigned int i;

	for (i = 0; i < MP_CH_COUNT; i++) {
		struct emu_chan *ch = &d->ch[i];

		chan_reset(ch);
		pthread_mutex_lock(&ch->lock);
		atomic_store(&ch->ring_lo, 0);
		atomic_store(&ch->ring_hi, 0);
		atomic_store(&ch->ring_size, 0);
		atomic_store(&ch->timeout_us, 0);
		if (i == MP_CH_C2H)   /* both channels are stopped: drop the loopback data */
			atomic_store(&t->fifo.rpos, atomic_load(&t->fifo.wpos));
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_lock(&t->lock);
	atomic_store(&t->control, 0);
	atomic_store(&t->pg_seed, 0);
	atomic_store(&t->pg_rate, 0);
	atomic_store(&t->pg_state, (atomic_load(&t->pg_state) & ~0xffffffffull) + (1ull << 32));
	t->src_gen++;
	atomic_store(&t->ck_seed, 0);
	t->ck_gen++;
	atomic_store(&t->ck_words, 0);
	atomic_store(&t->ck_errors, 0);
	pthread_mutex_unlock(&t->lock);
	emu_irq_reset(d);
	atomic_store(&d->scratch, 0);
}

/* ================================================================== engine: waiting */

static inline uint32_t pending_req(struct emu_chan *ch)
{
	return atomic_load_explicit(&ch->ctl, memory_order_relaxed) &
	       (EMU_CTL_ABORT | EMU_CTL_RESET | EMU_CTL_QUIT);
}

/* Sleeps on `wake` until the absolute CLOCK_MONOTONIC time `until` (0: no deadline). */
static void sleep_locked(struct emu_chan *ch, uint64_t until)
{
	struct timespec ts;

	if (!until) {
		pthread_cond_wait(&ch->wake, &ch->lock);
		return;
	}
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	pthread_cond_timedwait(&ch->wake, &ch->lock, &ts);
}

/* Waits until model time t (ns, CLOCK_MONOTONIC); false if a request interrupted it. */
static bool pace_until(struct emu_chan *ch, double t)
{
	uint64_t until = t > 0 ? (uint64_t)t : 0, now;

	for (;;) {
		now = emu_now_ns();
		if (now >= until)
			return true;
		if (pending_req(ch))
			return false;
		if (until - now > SLEEP_MIN_NS) {
			pthread_mutex_lock(&ch->lock);
			atomic_store(&ch->waiting, WAIT_REQ);
			if (!pending_req(ch))
				sleep_locked(ch, until - SLEEP_EARLY_NS);
			atomic_store(&ch->waiting, 0);
			pthread_mutex_unlock(&ch->lock);
		} else {
			/* one pause per clock read: a pause is ~140 cycles on recent x86 */
			emu_cpu_relax();
		}
	}
}

enum wait_for { WAIT_NEVER, WAIT_FIFO_DATA, WAIT_FIFO_SPACE };

static bool wait_ready(struct emu_chan *ch, enum wait_for what)
{
	struct emu_fifo *f = &ch->dev->test.fifo;

	switch (what) {
	case WAIT_FIFO_DATA:
		return fifo_avail(f) != 0;
	case WAIT_FIFO_SPACE:
		return fifo_space(f) != 0;
	default:
		return false;
	}
}

enum wait_result { WAIT_OK, WAIT_INTR, WAIT_TIMEOUT };

/*
 * Waits until `what` is ready, a request comes, or (with timeouts) TIMEOUT_US passed since
 * *progress (the time the descriptor last moved data; set on the first wait). TIMEOUT_US is
 * re-read on every wake-up, so a write to it re-arms the deadline.
 */
static enum wait_result wait_for(struct emu_chan *ch, enum wait_for what, bool timeouts,
				 uint64_t *progress)
{
	uint64_t now, deadline;
	uint32_t tmo;

	for (;;) {
		if (pending_req(ch))
			return WAIT_INTR;
		if (wait_ready(ch, what))
			return WAIT_OK;
		now = emu_now_ns();
		if (!*progress)
			*progress = now;
		tmo = timeouts ? atomic_load(&ch->timeout_us) : 0;
		deadline = tmo ? *progress + (uint64_t)tmo * 1000u : 0;
		if (deadline && now >= deadline)
			return WAIT_TIMEOUT;
		pthread_mutex_lock(&ch->lock);
		atomic_store(&ch->waiting, WAIT_ANY);
		if (!pending_req(ch) && !wait_ready(ch, what))
			sleep_locked(ch, deadline);
		atomic_store(&ch->waiting, 0);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Nothing to do: spin for `spin=` (a doorbell right after a completion costs no wake-up),
 * then sleep until a register write or close wakes us. */
static bool has_work(struct emu_chan *ch)
{
	uint32_t c = atomic_load(&ch->ctl);

	if (c & ~EMU_CTL_RUN)
		return true;
	if (c & EMU_CTL_RUN)
		return atomic_load(&ch->tail) != atomic_load_explicit(&ch->head, memory_order_relaxed);
	return chan_state(ch) == MP_STATE_RUNNING;
}

static void idle_wait(struct emu_chan *ch)
{
	uint64_t spin = ch->dev->cfg.spin_ns, t0;
	unsigned int i;

	if (spin) {
		t0 = emu_now_ns();
		do {
			for (i = 0; i < 64; i++) {
				if (has_work(ch))
					return;
				emu_cpu_relax();
			}
		} while (emu_now_ns() - t0 < spin);
	}
	pthread_mutex_lock(&ch->lock);
	atomic_store(&ch->waiting, WAIT_ANY);
	if (!has_work(ch))
		pthread_cond_wait(&ch->wake, &ch->lock);
	atomic_store(&ch->waiting, 0);
	pthread_mutex_unlock(&ch->lock);
}

/* ================================================================== engine: descriptors */

struct xfer {
	uint64_t addr;
	uint32_t len, ctrl;
	uint32_t done;        /* bytes moved */
	uint32_t err;         /* MP_ERR_* */
	bool eop;             /* C2H: the source ended a packet */
	bool intr;            /* a request (ABORT/RESET/close) stopped it */
	uint64_t fault_at;    /* injected bus error at this byte offset (UINT64_MAX: none) */
	bool stall;           /* injected stall */
	uint64_t progress;    /* time of the last progress (0: not taken yet) */
};

/* Writes the completion record: RESULT_BYTES and RESULT_STATUS in one 8-byte release store,
 * after all data of the descriptor. Returns false on an IOMMU fault. */
static bool write_record(struct emu_chan *ch, uint64_t slot, uint32_t bytes, uint32_t status)
{
	struct emu_iommu *mmu = &ch->dev->mmu;
	uint8_t *p;
	uint64_t n;

	mmu_hold(ch);
	n = emu_iommu_xlat(mmu, slot + MP_DESC_RESULT_BYTES, 8, EMU_ACC_WRITE, &p);
	if (n == 8) {
		/*
		 * For ThreadSanitizer only: it pairs release and acquire per address, so a reader
		 * that polls RESULT_STATUS alone with a 32-bit acquire load would not see the
		 * 64-bit store below as a release. This release store of the value software left
		 * there (0: words 4-5 are cleared before queueing) publishes the data at that
		 * address first; it changes nothing a reader can observe.
		 */
		__atomic_store_n((uint32_t *)(void *)(p + 4), 0, __ATOMIC_RELEASE);
		__atomic_store_n((uint64_t *)(void *)p, (uint64_t)bytes | (uint64_t)status << 32,
				 __ATOMIC_RELEASE);
	}
	return n == 8;
}

static uint32_t error_status(uint32_t code)
{
	return MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_ERROR_MASK |
	       (code << MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT);
}

/* The descriptor failed: record (unless its fetch failed), then ERROR. */
static void fail(struct emu_chan *ch, uint32_t code, bool record, uint64_t slot, uint32_t bytes)
{
	if (record)
		write_record(ch, slot, bytes, error_status(code));
	mmu_drop(ch);
	pthread_mutex_lock(&ch->lock);
	enter_error_locked(ch, code);
	pthread_mutex_unlock(&ch->lock);
}

/* Doorbell bookkeeping for the latency model: when did descriptor idx become available? */
static double available_ns(struct emu_chan *ch, uint32_t idx, uint64_t now)
{
	uint32_t tail = atomic_load(&ch->tail);
	uint64_t t = atomic_load_explicit(&ch->tail_ns, memory_order_relaxed), run;
	unsigned int gen = atomic_load_explicit(&ch->gen, memory_order_relaxed), last;

	if (gen != ch->seen_gen) {
		ch->seen_gen = gen;
		ch->obs_count = 0;
		ch->obs_last_tail = 0;
	}
	if (tail != ch->obs_last_tail && ch->obs_count < EMU_OBS) {
		last = (ch->obs_first + ch->obs_count++) % EMU_OBS;
		ch->obs_tail[last] = tail;
		ch->obs_ns[last] = t;
		ch->obs_last_tail = tail;
	}
	/* drop observations that do not cover idx (tail <= idx, free-running) */
	while (ch->obs_count && (int32_t)(ch->obs_tail[ch->obs_first] - idx) <= 0) {
		ch->obs_first = (ch->obs_first + 1) % EMU_OBS;
		ch->obs_count--;
	}
	t = ch->obs_count ? ch->obs_ns[ch->obs_first] : now;
	run = atomic_load_explicit(&ch->run_ns, memory_order_relaxed);
	return (double)(t > run ? t : run);
}

/* Time a piece starts (before it is copied), for pace(): 0 when nothing is paced. */
static double piece_start(struct emu_chan *ch, uint32_t rate_mbps)
{
	return ch->dev->link.paced || rate_mbps ? (double)emu_now_ns() : 0;
}

/* The piece [from, to) of x began at t0 (piece_start, before its data was copied): advances
 * the link cursor by its model time, from t0 at the earliest, and waits for the cursor.
 * The copy thus happens inside the modeled time, and idle time is never banked. False if a
 * request interrupted the wait. */
static bool pace(struct emu_chan *ch, struct xfer *x, uint32_t mps, uint64_t from, uint64_t to,
		 uint32_t rate_mbps, double t0)
{
	struct emu_dev *d = ch->dev;
	double dur;

	if (!d->link.paced && !rate_mbps)
		return true;
	if (ch->cursor_ns < t0 - SLACK_NS)
		ch->cursor_ns = t0 - SLACK_NS;     /* never bank idle time */
	dur = emu_link_cost_ns(&d->link, ch->idx, mps, x->addr, from, to);
	if (rate_mbps && (double)(to - from) * 1000.0 / rate_mbps > dur)
		dur = (double)(to - from) * 1000.0 / rate_mbps;
	ch->cursor_ns += dur;
	mmu_drop(ch);
	return pace_until(ch, ch->cursor_ns);
}

/* Bytes of the next piece: up to the next `chunk`-aligned bus address. */
static uint64_t piece_len(struct emu_dev *d, const struct xfer *x)
{
	uint64_t a = x->addr + x->done;

	return min64(x->len - x->done, d->chunk - (a & (d->chunk - 1)));
}

/* Waits out an injected stall or a source without data; sets x->err or x->intr. */
static void stall_forever(struct emu_chan *ch, struct xfer *x)
{
	mmu_drop(ch);
	switch (wait_for(ch, WAIT_NEVER, true, &x->progress)) {
	case WAIT_TIMEOUT:
		x->err = MP_ERR_TIMEOUT;
		break;
	default:
		x->intr = true;
		break;
	}
}

static void move_c2h(struct emu_chan *ch, struct xfer *x, uint32_t mps)
{
	struct emu_dev *d = ch->dev;
	struct emu_test *t = &d->test;
	struct emu_iommu *mmu = &d->mmu;
	struct emu_fifo *f = &t->fifo;
	uint32_t src = (atomic_load(&t->control) & MP_REG_TEST_CONTROL_C2H_SOURCE_MASK) >>
		       MP_REG_TEST_CONTROL_C2H_SOURCE_SHIFT;
	uint32_t rate = 0, w0 = 0;
	uint64_t want, n, r, first, pg;
	uint8_t *host;
	double t0;
	bool eop;

	if (src == MP_C2H_SOURCE_USER && d->cfg.user == EMU_USER_NONE)
		src = 3;   /* no user logic: no data */
	while (x->done < x->len) {
		if (pending_req(ch)) {
			x->intr = true;
			return;
		}
		want = piece_len(d, x);
		if (x->fault_at <= x->done) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		want = min64(want, x->fault_at - x->done);
		if (x->stall || src == 3) {
			stall_forever(ch, x);
			return;
		}
		eop = false;
		if (src == MP_C2H_SOURCE_LOOPBACK) {
			mmu_drop(ch);
			switch (wait_for(ch, WAIT_FIFO_DATA, true, &x->progress)) {
			case WAIT_OK:
				break;
			case WAIT_TIMEOUT:
				x->err = MP_ERR_TIMEOUT;
				return;
			default:
				x->intr = true;
				return;
			}
			want = min64(want, fifo_avail(f));
		} else {
			if (src == MP_C2H_SOURCE_PATTERN) {
				/* lock-free: the seed and its write count in one word */
				pg = atomic_load_explicit(&t->pg_state, memory_order_acquire);
				if ((uint32_t)(pg >> 32) != t->pg_seen_gen) {
					t->pg_seen_gen = (uint32_t)(pg >> 32);
					t->pg_pos = 0;
				}
				w0 = (uint32_t)pg + (uint32_t)t->pg_pos;
				rate = atomic_load_explicit(&t->pg_rate, memory_order_relaxed);
			} else {
				pthread_mutex_lock(&t->lock);
				if (t->user_seen_gen != t->src_gen) {
					t->user_seen_gen = t->src_gen;
					t->user_words = 0;
					t->user_pkt_off = 0;
				}
				w0 = (uint32_t)t->user_words;
				pthread_mutex_unlock(&t->lock);
			}
			if (src == MP_C2H_SOURCE_USER && d->cfg.user == EMU_USER_PACKETS)
				want = min64(want, d->cfg.user_pkt - t->user_pkt_off);
		}

		t0 = piece_start(ch, rate);
		mmu_hold(ch);
		/* the engine moves whole 32-bit words: a mapping ending inside one faults there */
		n = emu_iommu_xlat(mmu, x->addr + x->done, want, EMU_ACC_WRITE, &host) &
		    ~(uint64_t)(MP_ENGINE_GRANULE - 1);
		if (n && src == MP_C2H_SOURCE_LOOPBACK) {
			r = atomic_load_explicit(&f->rpos, memory_order_relaxed) & (f->cap - 1);
			first = min64(n, f->cap - r);
			do_copy(ch, host, f->buf + r, first);
			do_copy(ch, host + first, f->buf, n - first);
		} else if (n) {
			do_fill(ch, host, n, w0);
		}
		if (!n) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		switch (src) {
		case MP_C2H_SOURCE_LOOPBACK:
			atomic_fetch_add(&f->rpos, n);
			mmu_drop(ch);
			kick(&d->ch[MP_CH_H2C]);
			break;
		case MP_C2H_SOURCE_PATTERN:
			t->pg_pos += n / 4;
			break;
		default:
			t->user_words += n / 4;
			if (d->cfg.user == EMU_USER_PACKETS) {
				t->user_pkt_off += n;
				if (t->user_pkt_off == d->cfg.user_pkt) {
					t->user_pkt_off = 0;
					eop = true;
				}
			}
			break;
		}
		x->progress = 0;
		if (!pace(ch, x, mps, x->done, x->done + n, rate, t0)) {
			x->done += (uint32_t)n;
			x->intr = true;
			return;
		}
		x->done += (uint32_t)n;
		if (n < want) {   /* ran past the end of a mapping */
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		if (eop) {
			x->eop = true;
			return;
		}
	}
}

static void move_h2c(struct emu_chan *ch, struct xfer *x, uint32_t mps)
{
	struct emu_dev *d = ch->dev;
	struct emu_test *t = &d->test;
	struct emu_iommu *mmu = &d->mmu;
	struct emu_fifo *f = &t->fifo;
	uint32_t sink = (atomic_load(&t->control) & MP_REG_TEST_CONTROL_H2C_SINK_MASK) >>
			MP_REG_TEST_CONTROL_H2C_SINK_SHIFT;
	uint64_t want, n, w, first, bad = 0;
	uint32_t w0 = 0, gen = 0;
	uint8_t *host;
	double t0;

	while (x->done < x->len) {
		if (pending_req(ch)) {
			x->intr = true;
			return;
		}
		want = piece_len(d, x);
		if (x->fault_at <= x->done) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		want = min64(want, x->fault_at - x->done);
		if (x->stall) {   /* read completions never come */
			stall_forever(ch, x);
			return;
		}
		if (sink == MP_H2C_SINK_LOOPBACK) {
			/* a full FIFO stalls H2C: back-pressure, not a completion timeout */
			mmu_drop(ch);
			if (wait_for(ch, WAIT_FIFO_SPACE, false, &x->progress) != WAIT_OK) {
				x->intr = true;
				return;
			}
			want = min64(want, fifo_space(f));
		} else if (sink == MP_H2C_SINK_CHECKER) {
			pthread_mutex_lock(&t->lock);
			gen = t->ck_gen;
			w0 = atomic_load(&t->ck_seed) + (uint32_t)atomic_load(&t->ck_words);
			pthread_mutex_unlock(&t->lock);
		}

		t0 = piece_start(ch, 0);
		mmu_hold(ch);
		n = emu_iommu_xlat(mmu, x->addr + x->done, want, EMU_ACC_READ, &host) &
		    ~(uint64_t)(MP_ENGINE_GRANULE - 1);
		if (n && sink == MP_H2C_SINK_LOOPBACK) {
			w = atomic_load_explicit(&f->wpos, memory_order_relaxed) & (f->cap - 1);
			first = min64(n, f->cap - w);
			do_copy(ch, f->buf + w, host, first);
			do_copy(ch, f->buf, host + first, n - first);
		} else if (n && sink == MP_H2C_SINK_CHECKER) {
			bad = do_check(ch, host, n, w0);
		}
		/* user stream (no user logic) and undefined sinks take the data and drop it */
		if (!n) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		if (sink == MP_H2C_SINK_LOOPBACK) {
			atomic_fetch_add(&f->wpos, n);
			mmu_drop(ch);
			kick(&d->ch[MP_CH_C2H]);
		} else if (sink == MP_H2C_SINK_CHECKER) {
			pthread_mutex_lock(&t->lock);
			if (gen == t->ck_gen) {   /* not restarted meanwhile by CHECK_SEED */
				atomic_fetch_add(&t->ck_words, n / 4);
				atomic_fetch_add(&t->ck_errors, bad);
			}
			pthread_mutex_unlock(&t->lock);
		}
		x->progress = 0;
		if (!pace(ch, x, mps, x->done, x->done + n, 0, t0)) {
			x->done += (uint32_t)n;
			x->intr = true;
			return;
		}
		x->done += (uint32_t)n;
		if (n < want) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
	}
}

static bool fault_hits(struct emu_fault *f, bool *fired, uint64_t seq)
{
	if (f->mode == EMU_FAULT_ALWAYS)
		return true;
	if (f->mode == EMU_FAULT_ONCE && !*fired && seq == f->n) {
		*fired = true;
		return true;
	}
	return false;
}

/* Descriptor `idx` (HEAD) with `tail` queued: checks, data, completion. */
static void run_one(struct emu_chan *ch, uint32_t idx, uint32_t tail)
{
	struct emu_dev *d = ch->dev;
	struct emu_iommu *mmu = &d->mmu;
	uint64_t base = (uint64_t)atomic_load(&ch->ring_hi) << 32 | atomic_load(&ch->ring_lo);
	uint32_t size = atomic_load(&ch->ring_size), w[4], code, mps, status;
	uint64_t slot, n, seq, now;
	struct xfer x;
	uint8_t *p;
	double start;

	/* 1. ring configuration */
	if ((base & (MP_ENGINE_DESC_SIZE - 1)) || size < MP_ENGINE_RING_MIN_ENTRIES ||
	    size > MP_ENGINE_RING_MAX_ENTRIES || (size & (size - 1)) || tail - idx > size) {
		fail(ch, MP_ERR_RING_CONFIG, false, 0, 0);
		return;
	}
	/* 2. fetch: a failed fetch leaves no record */
	slot = base + (uint64_t)MP_ENGINE_DESC_SIZE * (idx & (size - 1));
	mmu_hold(ch);
	n = emu_iommu_xlat(mmu, slot, MP_ENGINE_DESC_SIZE, EMU_ACC_READ, &p);
	if (n == MP_ENGINE_DESC_SIZE)
		memcpy(w, p, sizeof(w));
	if (n != MP_ENGINE_DESC_SIZE) {
		fail(ch, MP_ERR_BUS_ERROR, false, 0, 0);
		return;
	}
	seq = ch->seq++;

	/* 3. descriptor checks, in the order of the spec */
	memset(&x, 0, sizeof(x));
	x.addr = (uint64_t)w[MP_DESC_ADDR_HI / 4] << 32 | w[MP_DESC_ADDR_LO / 4];
	x.len = w[MP_DESC_LEN / 4] & MP_DESC_LEN_BYTES_MASK;
	x.ctrl = w[MP_DESC_CTRL / 4];
	if ((w[MP_DESC_LEN / 4] & ~MP_DESC_LEN_BYTES_MASK) || (x.ctrl & ~CTRL_DEFINED))
		code = MP_ERR_DESC_RESERVED;
	else if (x.len == 0 || x.len > MP_ENGINE_MAX_DESC_LEN)
		code = MP_ERR_DESC_LENGTH;
	else if ((x.addr | x.len) & (MP_ENGINE_GRANULE - 1))
		code = MP_ERR_DESC_ALIGN;
	else
		code = MP_ERR_NONE;
	if (code) {
		fail(ch, code, true, slot, 0);
		return;
	}

	/* 4. data */
	x.fault_at = fault_hits(&d->cfg.buserr[ch->idx], &ch->buserr_fired, seq) ?
		     (x.len / 2) & ~(uint64_t)(MP_ENGINE_GRANULE - 1) : UINT64_MAX;
	x.stall = fault_hits(&d->cfg.stall[ch->idx], &ch->stall_fired, seq);
	mps = emu_mps(d);
	if (d->link.paced) {
		now = emu_now_ns();
		start = available_ns(ch, idx, now) + d->link.lat_ns;
		if (start < (double)now - SLACK_NS)
			start = (double)now - SLACK_NS;
		if (ch->cursor_ns < start)
			ch->cursor_ns = start;
	}
	if (ch->idx == MP_CH_C2H)
		move_c2h(ch, &x, mps);
	else
		move_h2c(ch, &x, mps);

	if (x.intr) {
		/* ABORT ends the descriptor with a record; RESET and close forget it */
		mmu_drop(ch);
		pthread_mutex_lock(&ch->lock);
		if ((atomic_load(&ch->ctl) & (EMU_CTL_ABORT | EMU_CTL_RESET | EMU_CTL_QUIT)) ==
		    EMU_CTL_ABORT) {
			write_record(ch, slot, x.done, error_status(MP_ERR_ABORTED));
			mmu_drop(ch);
			enter_error_locked(ch, MP_ERR_ABORTED);
		}
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	if (x.err) {
		fail(ch, x.err, true, slot, x.done);
		return;
	}

	/* 5. complete: record, HEAD and BYTES, interrupt, STOP */
	status = MP_DESC_RESULT_STATUS_DONE_MASK | (x.eop ? MP_DESC_RESULT_STATUS_EOP_MASK : 0);
	if (!write_record(ch, slot, x.done, status)) {
		fail(ch, MP_ERR_BUS_ERROR, false, 0, 0);
		return;
	}
	mmu_drop(ch);
	atomic_store_explicit(&ch->head, idx + 1, memory_order_release);
	/* only this thread changes BYTES while a descriptor is in flight: no RMW needed */
	atomic_store_explicit(&ch->bytes,
			      atomic_load_explicit(&ch->bytes, memory_order_relaxed) + x.done,
			      memory_order_release);
	if (x.ctrl & MP_DESC_CTRL_IRQ_MASK)
		emu_irq_raise(d, ch->idx == MP_CH_C2H ? MP_IRQ_C2H_DONE_BIT : MP_IRQ_H2C_DONE_BIT);
	if (x.ctrl & MP_DESC_CTRL_STOP_MASK) {
		pthread_mutex_lock(&ch->lock);
		atomic_fetch_and(&ch->ctl, ~EMU_CTL_RUN);
		if (chan_state(ch) == MP_STATE_RUNNING) {
			atomic_store(&ch->inflight, 0);   /* IDLE and not BUSY together */
			set_status_locked(ch, MP_STATE_IDLE, 0);
		}
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Requests with nothing in flight; returns true when the thread must exit. */
static bool handle_requests(struct emu_chan *ch)
{
	uint32_t c;
	bool quit = false;

	pthread_mutex_lock(&ch->lock);
	c = atomic_load(&ch->ctl);
	if (c & EMU_CTL_QUIT) {
		atomic_fetch_and(&ch->ctl, ~(EMU_CTL_ABORT | EMU_CTL_RESET));
		quit = true;
	} else if (c & EMU_CTL_RESET) {
		do_reset_locked(ch);
	} else if (c & EMU_CTL_ABORT) {
		if (chan_state(ch) != MP_STATE_ERROR)
			enter_error_locked(ch, MP_ERR_ABORTED);
		else
			atomic_fetch_and(&ch->ctl, ~EMU_CTL_ABORT);
	}
	pthread_cond_broadcast(&ch->ack);
	pthread_mutex_unlock(&ch->lock);
	return quit;
}

static void *chan_main(void *arg)
{
	struct emu_chan *ch = arg;
	uint32_t c, head, tail;

	/* paced sleeps wake within ~1 µs of their deadline instead of the default 50 µs */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (;;) {
		c = atomic_load(&ch->ctl);
		if (c & ~EMU_CTL_RUN) {
			atomic_store(&ch->inflight, 0);
			if (handle_requests(ch))
				break;
			continue;
		}
		if (!(c & EMU_CTL_RUN)) {
			atomic_store(&ch->inflight, 0);
			if (chan_state(ch) == MP_STATE_RUNNING) {
				/* halted: RUN = 0 arrived while a descriptor was in flight */
				pthread_mutex_lock(&ch->lock);
				if (!(atomic_load(&ch->ctl) & EMU_CTL_RUN) &&
				    chan_state(ch) == MP_STATE_RUNNING)
					set_status_locked(ch, MP_STATE_IDLE, 0);
				pthread_mutex_unlock(&ch->lock);
				continue;
			}
			idle_wait(ch);
			continue;
		}
		head = atomic_load_explicit(&ch->head, memory_order_relaxed);
		tail = atomic_load_explicit(&ch->tail, memory_order_acquire);
		if (head == tail) {
			atomic_store(&ch->inflight, 0);
			idle_wait(ch);
			continue;
		}
		/* claim (still claimed when descriptors follow back to back), then re-check the
		 * requests: see the protocol at the top of this file */
		if (!atomic_load_explicit(&ch->inflight, memory_order_relaxed))
			atomic_store(&ch->inflight, 1);
		if (atomic_load(&ch->ctl) != EMU_CTL_RUN)
			continue;   /* the loop clears the claim and handles it */
		head = atomic_load_explicit(&ch->head, memory_order_relaxed);
		tail = atomic_load_explicit(&ch->tail, memory_order_acquire);
		if (head != tail)
			run_one(ch, head, tail);
		mmu_drop(ch);
	}
	mmu_drop(ch);
	return NULL;
}

/* ================================================================== start/stop */

static unsigned int auto_workers(const struct emu_dev *d)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double rate = 0, r;
	unsigned int ch, per;

	if (ncpu < 1)
		ncpu = 1;
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		r = emu_link_rate(&d->link, ch, d->cfg.mps);
		if (r > rate)
			rate = r;
	}
	/* one thread copies ~5 GB/s with room to spare; ideal: a little help for big pieces */
	per = rate > 0 ? (unsigned int)(rate / 5e9) : 1;
	if (per * MP_CH_COUNT > (unsigned int)ncpu - 1)
		return (unsigned int)ncpu - 1;
	return per * MP_CH_COUNT;
}

int emu_engine_start(struct emu_dev *d)
{
	struct emu_pool *pool = &d->pool;
	unsigned int i;
	int ret;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	pool->nthreads = d->cfg.workers < 0 ? auto_workers(d) : (unsigned int)d->cfg.workers;
	pool->started = 0;
	pool->sleepers = 0;
	pool->quit = false;
	atomic_init(&pool->active, 0);
	if (pool->nthreads) {
		pool->threads = calloc(pool->nthreads, sizeof(pthread_t));
		if (!pool->threads) {
			emu_engine_stop(d);
			return -ENOMEM;
		}
	}
	for (i = 0; i < pool->nthreads; i++) {
		ret = pthread_create(&pool->threads[i], NULL, worker_main, pool);
		if (ret) {
			emu_engine_stop(d);
			return -ret;
		}
		pool->started++;
	}
	for (i = 0; i < MP_CH_COUNT; i++) {
		ret = pthread_create(&d->ch[i].thread, NULL, chan_main, &d->ch[i]);
		if (ret) {
			emu_engine_stop(d);
			return -ret;
		}
		d->ch[i].thread_started = true;
	}
	return 0;
}

void emu_engine_stop(struct emu_dev *d)
{
	struct emu_pool *pool = &d->pool;
	unsigned int i;

	for (i = 0; i < MP_CH_COUNT; i++) {
		struct emu_chan *ch = &d->ch[i];

		if (!ch->thread_started)
			continue;
		pthread_mutex_lock(&ch->lock);
		atomic_fetch_or(&ch->ctl, EMU_CTL_QUIT);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
		pthread_join(ch->thread, NULL);
		ch->thread_started = false;
	}
	pthread_mutex_lock(&pool->lock);
	pool->quit = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->started; i++)
		pthread_join(pool->threads[i], NULL);
	pool->started = 0;
	free(pool->threads);
	pool->threads = NULL;
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
}
