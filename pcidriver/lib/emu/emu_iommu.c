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
 * looks up an address and touches the host memory behind it; map/unmap take the writer mutex
 * and then every reader mutex before they change the table. Readers never contend with each
 * other, and an unmap waits at most for one piece of data being copied: once it returns, no
 * engine thread touches the removed buffer any more (as after an IOTLB flush).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int emu_iommu_init(struct emu_iommu *mmu, uint64_t base, uint64_t seed)
{
	unsigned int i;

	pthread_mutex_init(&mmu->lock, NULL);
	for (i = 0; i < EMU_READERS; i++)
		pthread_mutex_init(&mmu->reader[i].m, NULL);
	mmu->n = mmu->cap = 0;
	mmu->maps = NULL;
	mmu->next = mmu->base = base;
	mmu->rng = seed ^ 0x10eeu;
	return 0;
}

void emu_iommu_destroy(struct emu_iommu *mmu)
{
	unsigned int i;

	free(mmu->maps);
	for (i = 0; i < EMU_READERS; i++)
		pthread_mutex_destroy(&mmu->reader[i].m);
	pthread_mutex_destroy(&mmu->lock);
}

static void lock_readers(struct emu_iommu *mmu)
{
	unsigned int i;

	for (i = 0; i < EMU_READERS; i++)
		pthread_mutex_lock(&mmu->reader[i].m);
}

static void unlock_readers(struct emu_iommu *mmu)
{
	unsigned int i;

	for (i = EMU_READERS; i-- > 0;)
		pthread_mutex_unlock(&mmu->reader[i].m);
}

int emu_iommu_add(struct emu_iommu *mmu, struct emu_map *m)
{
	struct emu_map **maps;
	uint64_t start, gap;
	size_t i, cap;

	pthread_mutex_lock(&mmu->lock);
	/* the first mapping starts at the base itself (iova=), later ones behind a guard gap */
	gap = mmu->next == mmu->base ? 0 : EMU_PAGE * (1 + splitmix64(&mmu->rng) % 4);
	start = mmu->next + gap;
	if (start < mmu->next || start + m->win_len < start || start + m->win_len > (1ull << 63)) {
		pthread_mutex_unlock(&mmu->lock);
		return -ENOMEM;
	}
	if (mmu->n == mmu->cap) {
		cap = mmu->cap ? 2 * mmu->cap : 16;
		maps = malloc(cap * sizeof(*maps));
		if (!maps) {
			pthread_mutex_unlock(&mmu->lock);
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

void emu_iommu_remove(struct emu_iommu *mmu, struct emu_map *m)
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
}

void emu_iommu_reader_lock(struct emu_iommu *mmu, unsigned int reader)
{
	pthread_mutex_lock(&mmu->reader[reader].m);
}

void emu_iommu_reader_unlock(struct emu_iommu *mmu, unsigned int reader)
{
	pthread_mutex_unlock(&mmu->reader[reader].m);
}

uint64_t emu_iommu_xlat(struct emu_iommu *mmu, uint64_t iova, uint64_t len,
			unsigned int access, uint8_t **host)
{
	const struct emu_map *m;
	const struct emu_run *r;
	size_t lo, hi, mid;
	uint64_t off, avail;

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
		return 0;
	m = mmu->maps[lo - 1];
	if (iova - m->win_start >= m->win_len || (m->access & access) != access)
		return 0;
	/* the last run starting at or below iova */
	lo = 0;
	hi = m->nruns;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->runs[mid].iova <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	r = &m->runs[lo - 1];
	off = iova - r->iova;
	if (off >= r->len)
		return 0;
	avail = r->len - off;
	*host = r->host + off;
	return avail < len ? avail : len;
}
