// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The copy pool of the virtual board: the kernels that move data (pattern fill, checker
 * compare, memcpy; AVX2 where the CPU has it, non-temporal stores for data that should not
 * stay in the cache) and the worker threads that run them for the engine threads.
 *
 * Each channel has a queue of segments (struct emu_queue): its engine thread writes a slot,
 * pushes it and publishes what it pushed (`pub`, release); workers claim runs of consecutive
 * segments with a compare-and-swap on `claim` (up to CLAIM_BYTES or CLAIM_SEGS at a time, so
 * that 4 KiB pieces do not cost one claim each), run them and count down their group's
 * `pending` (struct emu_done, release). The engine learns that a group (a window entry) is
 * complete by reading `pending` with acquire, so the data is visible to it before it writes
 * the completion record with release. An engine that waits for a group claims unclaimed
 * segments of its own queue itself (with workers=0 it moves all data that way).
 *
 * No busy core while idle: a worker without work spins WORKER_SPIN_NS (counted in `idle`),
 * then sleeps on `work`. A publish wakes sleepers in parallel, as many as the new segments
 * make claims (runs of CLAIM_BYTES / CLAIM_SEGS) beyond what idle workers take at once, and
 * none for a backlog below WAKE_BACKLOG segments: a lone segment is moved by the engine
 * itself, which would otherwise only wait for the link model (so on a link the engine keeps up
 * with alone, the workers go to sleep). Waking them one after the other instead (each woken
 * worker waking the next) left most of them asleep for a large piece on many cores: a chain of
 * wake-up latencies is longer than the piece. `waking` counts the signals not yet taken up
 * (never more than the workers they woke: each return from cond_wait takes one), so that
 * workers on their way are not signalled twice. An engine waiting for segments that workers
 * have claimed spins a while, then sleeps on `done`. Both use the usual pattern: the sleeper
 * announces itself (sleepers, done_waiters) and re-checks under the pool lock; the other side
 * changes the state and then reads the announcement (all sequentially consistent). Progress
 * never depends on a worker: the engine that owns a segment claims it itself when it waits for
 * it. It claims later segments (of pieces it does not wait for yet) only while no worker is
 * idle or on its way: its own time is better spent dispatching and completing.
 *
 * Host memory safety: workers take no IOMMU lock. The engine that dispatched a segment holds
 * its IOMMU reader lock until the segment has finished (emu_engine.c), so an unmap waits for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "emu.h"
#include "mprace-spec/pattern.h"

#define WORKER_SPIN_NS 100000u   /* an idle worker spins this long for the next segment */
#define WAIT_SPIN_NS 100000u     /* an engine spins this long for claimed segments */
#define CLAIM_BYTES (64u << 10)  /* a worker claims consecutive segments up to this much */
#define CLAIM_SEGS 16u
#define WAKE_BACKLOG 2u          /* sleeping workers are woken for this many unclaimed segments */

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
		uint32_t w = mp_pattern_word(w0, i);

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
		bad += w != mp_pattern_word(w0, i);
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
	fill_words_sse2(dst + 4 * i, n - i, mp_pattern_word(w0, i));
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
	return bad + check_words_sse2(src + 4 * i, n - i, mp_pattern_word(w0, i));
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

/* fill_words with non-temporal stores: the data goes to memory without first reading the
 * destination lines into the cache (half the memory traffic into DRAM). The partial lines at
 * both ends use ordinary stores. The caller fences (store_fence) before it reports the data
 * finished: the weakly ordered stores must be visible by then. One fence per 64 KiB or so,
 * not per 4 KiB page: waiting for the stores to drain after each small piece costs more than
 * the cache bypass gains. */
static void fill_words_nt_sse2(uint8_t *dst, uint64_t n, uint32_t w0)
{
#if defined(__SSE2__)
	uint64_t head = ((64 - ((uintptr_t)dst & 63)) & 63) / 4, i;
	__m128i v, v1, v2, v3;
	const __m128i four = _mm_set1_epi32(4);

	if (n < 64 + head) {
		fill_words(dst, n, w0);
		return;
	}
	fill_words(dst, head, w0);
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
	fill_words(dst + 4 * i, n - i, mp_pattern_word(w0, i));
#else
	fill_words(dst, n, w0);
#endif
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2")))
static void fill_words_nt_avx2(uint8_t *dst, uint64_t n, uint32_t w0)
{
	uint64_t head = ((64 - ((uintptr_t)dst & 63)) & 63) / 4, i;
	__m256i v, v1;
	const __m256i eight = _mm256_set1_epi32(8);

	if (n < 64 + head) {
		fill_words_avx2(dst, n, w0);
		return;
	}
	fill_words_avx2(dst, head, w0);
	dst += 4 * head;
	w0 += (uint32_t)head;
	n -= head;
	v = _mm256_add_epi32(_mm256_set1_epi32((int)w0), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
	for (i = 0; i + 16 <= n; i += 16) {   /* one cache line per iteration */
		v1 = _mm256_add_epi32(v, eight);
		_mm256_stream_si256((__m256i *)(void *)(dst + 4 * i), v);
		_mm256_stream_si256((__m256i *)(void *)(dst + 4 * i + 32), v1);
		v = _mm256_add_epi32(v1, eight);
	}
	fill_words_avx2(dst + 4 * i, n - i, mp_pattern_word(w0, i));
}
#endif

static void fill_words_nt(uint8_t *dst, uint64_t n, uint32_t w0)
{
#ifdef HAVE_AVX2_KERNELS
	if (__builtin_cpu_supports("avx2")) {
		fill_words_nt_avx2(dst, n, w0);
		return;
	}
#endif
	fill_words_nt_sse2(dst, n, w0);
}

static void store_fence(void)
{
#if defined(__SSE2__)
	_mm_sfence();
#endif
}

/* One segment, without the fence after non-temporal stores. */
static uint64_t seg_run(unsigned int kind, uint8_t *dst, const uint8_t *src, uint64_t len,
			uint32_t w0)
{
	switch (kind) {
	case EMU_SEG_FILL:
		fill_words(dst, len / 4, w0);
		return 0;
	case EMU_SEG_FILL_NT:
		fill_words_nt(dst, len / 4, w0);
		return 0;
	case EMU_SEG_CHECK:
		return check_words(src, len / 4, w0);
	case EMU_SEG_COPY:
		memcpy(dst, src, len);
		return 0;
	}
	return 0;
}

uint64_t emu_seg_run(unsigned int kind, uint8_t *dst, const uint8_t *src, uint64_t len,
		     uint32_t w0)
{
	uint64_t bad = seg_run(kind, dst, src, len, w0);

	if (kind == EMU_SEG_FILL_NT)
		store_fence();
	return bad;
}

/* ================================================================== queues */

struct emu_seg *emu_pool_slot(struct emu_dev *d, unsigned int ch)
{
	struct emu_queue *q = &d->pool.q[ch];

	return &q->seg[q->pushed & (EMU_QSEGS - 1)];
}

void emu_pool_push(struct emu_dev *d, unsigned int ch)
{
	d->pool.q[ch].pushed++;
}

unsigned int emu_pool_room(struct emu_dev *d, unsigned int ch)
{
	struct emu_queue *q = &d->pool.q[ch];

	return EMU_QSEGS - (unsigned int)(q->pushed - q->free);
}

/* Segments published and not claimed yet, in both queues. */
static uint64_t backlog(struct emu_pool *pool)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < MP_CH_COUNT; i++)
		n += atomic_load(&pool->q[i].pub) - atomic_load(&pool->q[i].claim);
	return n;
}

static bool work_available(struct emu_pool *pool)
{
	return backlog(pool) != 0;
}

/* Claims that segments from .. to - 1 of q make (runs as claim() takes them). */
static unsigned int claims(struct emu_queue *q, uint64_t from, uint64_t to)
{
	unsigned int n = 0, segs = 0;
	uint64_t bytes = 0;

	for (; from < to; from++) {
		if (!segs)
			n++;
		bytes += atomic_load_explicit(&q->seg[from & (EMU_QSEGS - 1)].len,
					      memory_order_relaxed);
		if (++segs == CLAIM_SEGS || bytes >= CLAIM_BYTES) {
			segs = 0;
			bytes = 0;
		}
	}
	return n;
}

/* Wakes up to n sleeping workers at once (pool lock held). */
static void wake_locked(struct emu_pool *pool, unsigned int n)
{
	unsigned int s = atomic_load(&pool->sleepers), w = atomic_load(&pool->waking);

	if (s <= w)
		return;
	if (n >= s - w) {
		n = s - w;
		pthread_cond_broadcast(&pool->work);
	} else {
		for (unsigned int i = 0; i < n; i++)
			pthread_cond_signal(&pool->work);
	}
	atomic_store(&pool->waking, w + n);
}

void emu_pool_publish(struct emu_dev *d, unsigned int ch)
{
	struct emu_pool *pool = &d->pool;
	struct emu_queue *q = &pool->q[ch];
	uint64_t from = atomic_load_explicit(&q->pub, memory_order_relaxed);
	unsigned int n, idle;

	if (from == q->pushed)
		return;
	atomic_store(&q->pub, q->pushed);   /* seq_cst: release, and ordered before `sleepers` */
	/* a single segment the engine moves itself while it waits for the link anyway: wake
	 * workers only for a backlog, as many as it makes claims beyond the idle ones */
	if (atomic_load(&pool->sleepers) <= atomic_load(&pool->waking) ||
	    backlog(pool) < WAKE_BACKLOG)
		return;
	n = claims(q, from, q->pushed);
	idle = atomic_load(&pool->idle);
	if (n <= idle)
		return;
	pthread_mutex_lock(&pool->lock);
	wake_locked(pool, n - idle);
	pthread_mutex_unlock(&pool->lock);
}

/* Claims up to max_segs consecutive segments of q below `end` (fewer once they reach
 * max_bytes); returns how many, the first in *first. Only the lengths are read before the
 * claim (atomics: the slot may be rewritten meanwhile if our view of `claim` is stale, in
 * which case the CAS fails); the rest of a slot belongs to whoever claimed it. */
static unsigned int claim(struct emu_queue *q, uint64_t *first, uint64_t end,
			  uint64_t max_bytes, unsigned int max_segs)
{
	uint64_t c = atomic_load_explicit(&q->claim, memory_order_relaxed), p, bytes;
	unsigned int n;

	for (;;) {
		p = atomic_load_explicit(&q->pub, memory_order_acquire);
		if (p - c > EMU_QSEGS) {   /* stale */
			c = atomic_load_explicit(&q->claim, memory_order_relaxed);
			continue;
		}
		if (p > end)
			p = end;
		if (c >= p)
			return 0;
		n = 0;
		bytes = 0;
		do {
			bytes += atomic_load_explicit(&q->seg[(c + n) & (EMU_QSEGS - 1)].len,
						      memory_order_relaxed);
			n++;
		} while (c + n < p && n < max_segs && bytes < max_bytes);
		if (atomic_compare_exchange_weak_explicit(&q->claim, &c, c + n,
							  memory_order_acquire,
							  memory_order_relaxed)) {
			*first = c;
			return n;
		}
	}
}

/* Runs the claimed segments first .. first + n - 1 of q: their data, one store fence for the
 * non-temporal ones, then their groups' counts (after which slots and groups may be reused). */
static void run_claimed(struct emu_pool *pool, struct emu_queue *q, uint64_t first,
			unsigned int n)
{
	struct emu_done *done[CLAIM_SEGS];
	struct emu_seg *s;
	bool nt = false;
	unsigned int i;
	uint64_t bad;

	for (i = 0; i < n; i++) {
		s = &q->seg[(first + i) & (EMU_QSEGS - 1)];
		done[i] = s->done;
		nt |= s->kind == EMU_SEG_FILL_NT;
		bad = seg_run(s->kind, s->dst, s->src,
			      atomic_load_explicit(&s->len, memory_order_relaxed), s->w0);
		if (bad)
			atomic_fetch_add_explicit(&done[i]->bad, bad, memory_order_relaxed);
	}
	if (nt)
		store_fence();
	for (i = 0; i < n; i++)
		/* seq_cst: release of the data, and ordered before reading `done_waiters` */
		if (atomic_fetch_sub(&done[i]->pending, 1) == 1 &&
		    atomic_load(&pool->done_waiters)) {
			pthread_mutex_lock(&pool->lock);
			pthread_cond_broadcast(&pool->done);
			pthread_mutex_unlock(&pool->lock);
		}
}

bool emu_pool_help(struct emu_dev *d, unsigned int ch, uint64_t own)
{
	struct emu_pool *pool = &d->pool;
	struct emu_queue *q = &pool->q[ch];
	uint64_t first, end = own;
	unsigned int n;

	/* later segments only while no worker is free to take them (or about to be) */
	if (!atomic_load_explicit(&pool->idle, memory_order_relaxed) &&
	    !atomic_load_explicit(&pool->waking, memory_order_relaxed))
		end = UINT64_MAX;
	n = claim(q, &first, end, CLAIM_BYTES, CLAIM_SEGS);
	if (!n)
		return false;
	run_claimed(pool, q, first, n);
	return true;
}

void emu_pool_wait(struct emu_dev *d, unsigned int ch, struct emu_done *done, uint64_t own)
{
	struct emu_pool *pool = &d->pool;
	uint64_t t0 = 0;
	unsigned int i;

	while (atomic_load_explicit(&done->pending, memory_order_acquire)) {
		if (emu_pool_help(d, ch, own))
			continue;
		/* the rest is being copied by workers: it takes about as long as our part did */
		if (!t0) {
			t0 = emu_now_ns();
		} else if (emu_now_ns() - t0 > WAIT_SPIN_NS) {
			pthread_mutex_lock(&pool->lock);
			atomic_fetch_add(&pool->done_waiters, 1);
			while (atomic_load(&done->pending))
				pthread_cond_wait(&pool->done, &pool->lock);
			atomic_fetch_sub(&pool->done_waiters, 1);
			pthread_mutex_unlock(&pool->lock);
			break;
		}
		for (i = 0; i < 16 && atomic_load_explicit(&done->pending, memory_order_relaxed); i++)
			emu_cpu_relax();
	}
}

/* ================================================================== workers */

static void *worker_main(void *arg)
{
	struct emu_pool *pool = arg;
	unsigned int ch = 0, k, n, i;
	uint64_t first, t0;
	struct emu_queue *q;
	bool found;

	while (!atomic_load_explicit(&pool->quit, memory_order_relaxed)) {
		/* both channels' queues, alternating, so that neither starves the other */
		n = 0;
		for (k = 0; k < MP_CH_COUNT && !n; k++) {
			q = &pool->q[(ch + k) % MP_CH_COUNT];
			n = claim(q, &first, UINT64_MAX, CLAIM_BYTES, CLAIM_SEGS);
		}
		if (n) {
			ch = (ch + k) % MP_CH_COUNT;
			run_claimed(pool, q, first, n);
			continue;
		}
		/* spin a while, idle: at high rates the next segment comes within microseconds */
		atomic_fetch_add(&pool->idle, 1);
		t0 = emu_now_ns();
		do {
			for (i = 0; i < 64 && !work_available(pool); i++)
				emu_cpu_relax();
			found = work_available(pool);
		} while (!found && emu_now_ns() - t0 < WORKER_SPIN_NS &&
			 !atomic_load_explicit(&pool->quit, memory_order_relaxed));
		atomic_fetch_sub(&pool->idle, 1);
		if (found)
			continue;
		pthread_mutex_lock(&pool->lock);
		atomic_fetch_add(&pool->sleepers, 1);
		while (!work_available(pool) && !atomic_load(&pool->quit)) {
			pthread_cond_wait(&pool->work, &pool->lock);
			/* one signal taken up (or a spurious wake-up: `waking` may only be low) */
			if (atomic_load(&pool->waking))
				atomic_fetch_sub(&pool->waking, 1);
		}
		atomic_fetch_sub(&pool->sleepers, 1);
		pthread_mutex_unlock(&pool->lock);
	}
	return NULL;
}

int emu_pool_start(struct emu_dev *d)
{
	struct emu_pool *pool = &d->pool;
	unsigned int i;
	int ret;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	for (i = 0; i < MP_CH_COUNT; i++) {
		atomic_init(&pool->q[i].pub, 0);
		atomic_init(&pool->q[i].claim, 0);
		pool->q[i].pushed = pool->q[i].free = 0;
	}
	atomic_init(&pool->sleepers, 0);
	atomic_init(&pool->waking, 0);
	atomic_init(&pool->idle, 0);
	atomic_init(&pool->done_waiters, 0);
	atomic_init(&pool->quit, false);
	pool->started = 0;
	pool->threads = NULL;
	pool->inited = true;
	if (pool->nthreads) {
		pool->threads = calloc(pool->nthreads, sizeof(pthread_t));
		if (!pool->threads)
			return -ENOMEM;
	}
	for (i = 0; i < pool->nthreads; i++) {
		ret = pthread_create(&pool->threads[i], NULL, worker_main, pool);
		if (ret)
			return -ret;
		pool->started++;
		pthread_setname_np(pool->threads[i], "emu-copy");
	}
	return 0;
}

void emu_pool_stop(struct emu_dev *d)
{
	struct emu_pool *pool = &d->pool;
	unsigned int i;

	if (!pool->inited)
		return;
	pthread_mutex_lock(&pool->lock);
	atomic_store(&pool->quit, true);
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
	pool->inited = false;
}
