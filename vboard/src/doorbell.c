// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * BAR0 as a page of memory with live doorbells (doorbell.h says what and why).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "doorbell.h"

#define DB_SPIN_NS 200000ull      /* spin this long after the last doorbell */
#define DB_NAP_NS 20000l          /* then poll this often ... */
#define DB_IDLE_NS 20000000ull    /* ... until this much silence, */
#define DB_DOZE_NS 1000000l       /* then this often */
#define DB_SMALL_HOST_CPUS 4      /* below this, a spinning thread yields (see emu.h) */

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t tail_off(unsigned int ch)
{
	return MP_CH_BASE(ch) + MP_CHREG_TAIL;
}

void vb_doorbell_init(struct vb_doorbell *db, uint32_t (*read32)(void *, uint64_t),
		      void (*write32)(void *, uint64_t, uint32_t), void *ctx)
{
	memset(db, 0, sizeof(*db));
	db->read32 = read32;
	db->write32 = write32;
	db->ctx = ctx;
	db->spin_yields = sysconf(_SC_NPROCESSORS_ONLN) < DB_SMALL_HOST_CPUS;
	pthread_mutex_init(&db->lock, NULL);
}

/* Forwards the TAIL words that a master changed; true if there was one. */
static bool forward(struct vb_doorbell *db)
{
	bool rang = false;
	unsigned int ch;
	uint32_t v;

	pthread_mutex_lock(&db->lock);
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		/* acquire: the descriptors written before the doorbell are seen by the engine,
		 * which the register write (a release in every backend) passes on */
		v = atomic_load_explicit(&db->page[tail_off(ch) / 4], memory_order_acquire);
		if (v != db->seen[ch]) {
			db->seen[ch] = v;
			db->write32(db->ctx, tail_off(ch), v);
			rang = true;
		}
	}
	pthread_mutex_unlock(&db->lock);
	return rang;
}

static void *watch(void *arg)
{
	struct vb_doorbell *db = arg;
	uint64_t last = now_ns(), quiet;
	struct timespec nap = { 0, 0 };

	while (!atomic_load_explicit(&db->stop, memory_order_relaxed)) {
		if (forward(db)) {
			last = now_ns();
			continue;
		}
		quiet = now_ns() - last;
		if (quiet < DB_SPIN_NS) {
			if (db->spin_yields)
				sched_yield();   /* on few CPUs, not hold off the engine's threads */
			else
				relax();
			continue;
		}
		nap.tv_nsec = quiet < DB_IDLE_NS ? DB_NAP_NS : DB_DOZE_NS;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int vb_doorbell_map(struct vb_doorbell *db, void **addr, size_t *size)
{
	static const uint64_t ids[] = { MP_REG_MAGIC, MP_REG_VERSION, MP_REG_CAPS,
					MP_REG_CLOCK_MHZ };
	unsigned int i;
	void *p;
	int ret;

	if (atomic_load(&db->mapped))
		goto out;
	p = mmap(NULL, MP_ENGINE_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	db->page = p;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		atomic_store_explicit(&db->page[ids[i] / 4], db->read32(db->ctx, ids[i]),
				      memory_order_relaxed);
	pthread_mutex_lock(&db->lock);
	for (i = 0; i < MP_CH_COUNT; i++) {
		db->seen[i] = db->read32(db->ctx, tail_off(i));
		atomic_store(&db->page[tail_off(i) / 4], db->seen[i]);
	}
	atomic_store(&db->mapped, true);
	pthread_mutex_unlock(&db->lock);
	atomic_store(&db->stop, false);
	ret = -pthread_create(&db->thread, NULL, watch, db);
	if (ret) {
		atomic_store(&db->mapped, false);
		munmap(p, MP_ENGINE_BAR0_SIZE);
		db->page = NULL;
		return ret;
	}
out:
	*addr = (void *)db->page;
	*size = MP_ENGINE_BAR0_SIZE;
	return 0;
}

void vb_doorbell_unmap(struct vb_doorbell *db)
{
	if (!atomic_load(&db->mapped))
		return;
	atomic_store(&db->stop, true);
	pthread_join(db->thread, NULL);
	forward(db);   /* a doorbell rung just before the unmap still counts */
	pthread_mutex_lock(&db->lock);
	atomic_store(&db->mapped, false);
	pthread_mutex_unlock(&db->lock);
	munmap((void *)db->page, MP_ENGINE_BAR0_SIZE);
	db->page = NULL;
}

/* The page follows a TAIL set by a register write, so that it is not taken for a doorbell. */
static void set_tail_locked(struct vb_doorbell *db, unsigned int ch, uint32_t v)
{
	db->seen[ch] = v;
	atomic_store_explicit(&db->page[tail_off(ch) / 4], v, memory_order_relaxed);
}

void vb_doorbell_note(struct vb_doorbell *db, uint64_t off, uint32_t v)
{
	unsigned int ch;

	if (!atomic_load_explicit(&db->mapped, memory_order_relaxed))
		return;
	off &= ~(uint64_t)3;
	pthread_mutex_lock(&db->lock);
	if (!atomic_load_explicit(&db->mapped, memory_order_relaxed))
		goto out;
	if (off == MP_REG_CONTROL && (v & MP_REG_CONTROL_RESET_MASK)) {
		for (ch = 0; ch < MP_CH_COUNT; ch++)
			set_tail_locked(db, ch, 0);
		goto out;
	}
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		if (off == tail_off(ch))
			set_tail_locked(db, ch, v);
		else if (off == MP_CH_BASE(ch) + MP_CHREG_CONTROL &&
			 (v & MP_CHREG_CONTROL_RESET_MASK))
			set_tail_locked(db, ch, 0);
	}
out:
	pthread_mutex_unlock(&db->lock);
}
