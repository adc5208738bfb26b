// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host object (host.h): set-up and tear-down, the MSI event counters that pd_irq_wait
 * sleeps on, and a device access checked against the IOMMU model.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "host.h"

int vb_host_init(struct vb_host *h, const struct vb_host_config *cfg, uint32_t vectors)
{
	pthread_condattr_t attr;
	unsigned int i;
	int ret;

	if (!vectors || vectors > VB_MAX_VECTORS)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	ret = vb_iommu_init(&h->mmu, cfg->iova_base, cfg->seed);
	if (ret)
		return ret;
	pthread_mutex_init(&h->lock, NULL);
	h->next_kmem_id = h->next_umem_id = 1;
	pthread_mutex_init(&h->events.lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	for (i = 0; i < VB_MAX_VECTORS; i++)
		pthread_cond_init(&h->events.cond[i], &attr);
	pthread_condattr_destroy(&attr);
	h->events.vectors = vectors;
	return 0;
}

void vb_host_destroy(struct vb_host *h)
{
	unsigned int i;

	vb_iommu_destroy(&h->mmu);
	for (i = 0; i < VB_MAX_VECTORS; i++)
		pthread_cond_destroy(&h->events.cond[i]);
	pthread_mutex_destroy(&h->events.lock);
	pthread_mutex_destroy(&h->lock);
}

/* ------------------------------------------------------------------ interrupts */

void vb_host_msi(struct vb_host *h, unsigned int vec)
{
	struct vb_events *ev = &h->events;

	if (vec >= ev->vectors)
		return;
	pthread_mutex_lock(&ev->lock);
	if (ev->count[vec] < INT_MAX)
		ev->count[vec]++;
	pthread_cond_broadcast(&ev->cond[vec]);
	pthread_mutex_unlock(&ev->lock);
}

int vb_irq_wait(struct vb_host *h, unsigned int vec, uint32_t timeout_ms)
{
	struct vb_events *ev = &h->events;
	struct timespec ts;
	int n, rc = 0;

	if (vec >= ev->vectors)
		return -EINVAL;
	pthread_mutex_lock(&ev->lock);
	if (!ev->count[vec] && timeout_ms != 0) {
		if (timeout_ms == PD_WAIT_FOREVER) {
			while (!ev->count[vec])
				pthread_cond_wait(&ev->cond[vec], &ev->lock);
		} else {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += timeout_ms / 1000;
			ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			while (!ev->count[vec] && rc != ETIMEDOUT)
				rc = pthread_cond_timedwait(&ev->cond[vec], &ev->lock, &ts);
		}
	}
	n = (int)ev->count[vec];
	ev->count[vec] = 0;
	pthread_mutex_unlock(&ev->lock);
	return n ? n : -ETIMEDOUT;
}

int vb_irq_clear(struct vb_host *h, unsigned int vec)
{
	struct vb_events *ev = &h->events;

	if (vec >= ev->vectors)
		return -EINVAL;
	pthread_mutex_lock(&ev->lock);
	ev->count[vec] = 0;
	pthread_mutex_unlock(&ev->lock);
	return 0;
}

/* ------------------------------------------------------------------ device access */

bool vb_host_dma(struct vb_host *h, unsigned int reader, uint64_t addr, uint8_t *buf,
		 uint32_t len, unsigned int access)
{
	struct vb_iommu *mmu = &h->mmu;
	uint64_t off, n;
	uint8_t *host;
	int pass;
	bool ok = true;

	if (reader >= VB_IOMMU_READERS)
		return false;
	vb_iommu_reader_lock(mmu, reader);
	/* the first pass only checks: a TLP that faults anywhere moves no byte */
	for (pass = 0; pass < 2 && ok; pass++)
		for (off = 0; off < len && ok; off += n) {
			n = vb_iommu_xlat(mmu, addr + off, len - off, access, &host);
			if (!n)
				ok = false;
			else if (pass && access == VB_ACC_READ)
				memcpy(buf + off, host, n);
			else if (pass)
				memcpy(host, buf + off, n);
		}
	vb_iommu_reader_unlock(mmu, reader);
	return ok;
}
