// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The virtual board's IOMMU: the only way the engine reaches host memory.
 *
 * Every kmem/umem mapping owns a window of bus addresses (IOVAs) handed out by a bump
 * allocator that never reuses an address, so a stale bus address always faults. Windows are
 * separated by 1 to 4 unmapped guard pages, and inside a window only the bytes of the buffer
 * itself are mapped ("runs"): the rest of the first and last page, and the gaps a scattered
 * umem layout leaves between its runs, fault like any unmapped address.
 *
 * Concurrency: a "big reader" lock. Each channel thread holds its own reader mutex while it
 * looks up an address and while the data it dispatched to the copy pool is being copied;
 * map/unmap take the writer mutex, announce themselves in `writers` and then take every
 * reader mutex before they change the table. Readers never contend with each other; an engine
 * that sees `writers` lets its copies finish and drops its reader mutex, so an unmap waits at
 * most for the data in flight (the read-ahead window): once it returns, no engine thread or
 * worker touches the removed buffer any more (as after an IOTLB flush).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int vb_iommu_init(struct vb_iommu *mmu, uint64_t base, uint64_t seed)
{
	unsigned int i;

	pthread_mutex_init(&mmu->lock, NULL);
	for (i = 0; i < VB_IOMMU_READERS; i++)
		pthread_mutex_init(&mmu->reader[i].m, NULL);
	mmu->n = mmu->cap = 0;
	mmu->maps = NULL;
	mmu->gen = 0;
	atomic_init(&mmu->writers, 0);
	mmu->next = mmu->base = base;
	mmu->rng = seed ^ 0x10eeu;
	return 0;
}

void vb_iommu_destroy(struct vb_iommu *mmu)
{
	unsigned int i;

	free(mmu->maps);
	for (i = 0; i < VB_IOMMU_READERS; i++)
		pthread_mutex_destroy(&mmu->reader[i].m);
	pthread_mutex_destroy(&mmu->lock);
}

/* With mmu->lock held. The engines poll `writers` and drop their reader locks for us. */
static void lock_readers(struct vb_iommu *mmu)
{
	unsigned int i;

	atomic_fetch_add(&mmu->writers, 1);
	for (i = 0; i < VB_IOMMU_READERS; i++)
		pthread_mutex_lock(&mmu->reader[i].m);
	mmu->gen++;
}

static void unlock_readers(struct vb_iommu *mmu)
{
	unsigned int i;

	for (i = VB_IOMMU_READERS; i-- > 0;)
		pthread_mutex_unlock(&mmu->reader[i].m);
	atomic_fetch_sub(&mmu->writers, 1);
}

#define PAGE_RUN_MIN 8   /* mappings with more runs get a page index (one lookup per access) */

/* m->page_run for a mapping of many runs (relative IOVAs): O(1) translations instead of a
 * binary search over up to a million runs (one cache miss instead of twenty). */
static int index_pages(struct vb_map *m)
{
	uint64_t p, last;
	size_t i;

	m->page_run = NULL;
	if (m->nruns < PAGE_RUN_MIN || m->win_len / VB_PAGE > UINT32_MAX)
		return 0;
	m->page_run = calloc(m->win_len / VB_PAGE, sizeof(*m->page_run));
	if (!m->page_run)
		return -ENOMEM;
	for (i = 0; i < m->nruns; i++) {
		last = (m->runs[i].iova + m->runs[i].len - 1) / VB_PAGE;
		for (p = m->runs[i].iova / VB_PAGE; p <= last; p++)
			m->page_run[p] = (uint32_t)(i + 1);
	}
	return 0;
}

int vb_iommu_add(struct vb_iommu *mmu, struct vb_map *m)
{
	struct vb_map **maps;
	uint64_t start, gap;
	size_t i, cap;

	if (index_pages(m))
		return -ENOMEM;

	pthread_mutex_lock(&mmu->lock);
	/* the first mapping starts at the base itself (iova=), later ones behind a guard gap */
	gap = mmu->next == mmu->base ? 0 : VB_PAGE * (1 + splitmix64(&mmu->rng) % 4);
	start = mmu->next + gap;
	if (start < mmu->next || start + m->win_len < start || start + m->win_len > (1ull << 63)) {
		pthread_mutex_unlock(&mmu->lock);
		free(m->page_run);
		return -ENOMEM;
	}
	if (mmu->n == mmu->cap) {
		cap = mmu->cap ? 2 * mmu->cap : 16;
		maps = malloc(cap * sizeof(*maps));
		if (!maps) {
			pthread_mutex_unlock(&mmu->lock);
			free(m->page_run);
			return -ENOMEM;
		}
		if (mmu->n)
			memcpy(maps, mmu->maps, mmu->n * sizeof(*maps));
	} else {
		maps = NULL;
		cap = mmu->cap;
	}
	mmu->next = start + m->win_len;
	m->win_start = start;
	for (i = 0; i < m->nruns; i++)
		m->runs[i].iova += start;
	lock_readers(mmu);
	if (maps) {
		free(mmu->maps);
		mmu->maps = maps;
		mmu->cap = cap;
	}
	/* windows only grow upwards, so appending keeps the table sorted */
	mmu->maps[mmu->n++] = m;
	unlock_readers(mmu);
	pthread_mutex_unlock(&mmu->lock);
	return 0;
}

void vb_iommu_remove(struct vb_iommu *mmu, struct vb_map *m)
{
	size_t i;

	pthread_mutex_lock(&mmu->lock);
	lock_readers(mmu);
	for (i = 0; i < mmu->n; i++)
		if (mmu->maps[i] == m)
			break;
	if (i < mmu->n) {
		memmove(&mmu->maps[i], &mmu->maps[i + 1], (mmu->n - i - 1) * sizeof(mmu->maps[0]));
		mmu->n--;
	}
	unlock_readers(mmu);
	pthread_mutex_unlock(&mmu->lock);
	free(m->page_run);
	m->page_run = NULL;
}

void vb_iommu_reader_lock(struct vb_iommu *mmu, unsigned int reader)
{
	/* a writer at work holds mmu->lock throughout: wait for it there rather than barge in
	 * on the reader mutex it is about to take */
	if (atomic_load(&mmu->writers)) {
		pthread_mutex_lock(&mmu->lock);
		pthread_mutex_unlock(&mmu->lock);
	}
	pthread_mutex_lock(&mmu->reader[reader].m);
}

void vb_iommu_reader_unlock(struct vb_iommu *mmu, unsigned int reader)
{
	pthread_mutex_unlock(&mmu->reader[reader].m);
}

bool vb_iommu_run(struct vb_iommu *mmu, uint64_t iova, unsigned int access,
		   struct vb_xrun *out)
{
	const struct vb_map *m;
	const struct vb_run *r;
	size_t lo, hi, mid;

	/* the last window starting at or below iova */
	lo = 0;
	hi = mmu->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (mmu->maps[mid]->win_start <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	m = mmu->maps[lo - 1];
	if (iova - m->win_start >= m->win_len || (m->access & access) != access)
		return false;
	if (m->page_run) {
		lo = m->page_run[(iova - m->win_start) / VB_PAGE];
	} else {   /* the last run starting at or below iova */
		lo = 0;
		hi = m->nruns;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (m->runs[mid].iova <= iova)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (lo == 0)
		return false;
	r = &m->runs[lo - 1];
	if (iova - r->iova >= r->len)
		return false;
	out->iova = r->iova;
	out->len = r->len;
	out->host = r->host;
	out->map_len = m->win_len;
	return true;
}

uint64_t vb_iommu_xlat(struct vb_iommu *mmu, uint64_t iova, uint64_t len,
			unsigned int access, uint8_t **host)
{
	struct vb_xrun r;
	uint64_t off, avail;

	if (!vb_iommu_run(mmu, iova, access, &r))
		return 0;
	off = iova - r.iova;
	avail = r.len - off;
	*host = r.host + off;
	return avail < len ? avail : len;
}
