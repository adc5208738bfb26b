// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group nvme: QEMU's NVMe controller (a real, complex device nobody on the team wrote)
 * driven entirely from user space through pcidriver, as SPDK does over vfio: admin and I/O
 * queues in kmem, data in umem addressed through PRP lists, one MSI-X vector per completion
 * queue, four threads waiting on their vectors at once. What the guest wrote is checked
 * again from the host side in the disk image (run-qemu-tests.sh). NVM Express Base
 * Specification 1.4: registers 3.1, queues 4.1-4.6, Identify 5.15, Create I/O CQ/SQ 5.3/5.4,
 * Read/Write 6.9/6.15.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdtest.h"

#define NVME_VENDOR	0x1b36		/* QEMU's NVMe controller */
#define NVME_DEVICE	0x0010
#define NVME_SERIAL	"pdtest-nvme"	/* given on QEMU's command line */

#define REG_CAP		0x00
#define REG_CC		0x14
#define REG_CSTS	0x1c
#define REG_AQA		0x24
#define REG_ASQ		0x28
#define REG_ACQ		0x30
#define REG_DBS		0x1000

#define CC_EN		(1u << 0)
#define CC_IOSQES	(6u << 16)	/* 64-byte submission entries */
#define CC_IOCQES	(4u << 20)	/* 16-byte completion entries */
#define CSTS_RDY	(1u << 0)
#define CSTS_CFS	(1u << 1)

#define OP_CREATE_SQ	0x01
#define OP_CREATE_CQ	0x05
#define OP_IDENTIFY	0x06
#define OP_WRITE	0x01
#define OP_READ		0x02

#define PAGE		4096u
#define DEPTH		16u		/* entries of every queue */
#define IOQ		4u		/* I/O queue pairs = threads = vectors 1..4 */
#define BLOCK		512u		/* QEMU's default LBA format */
#define XFER_BLOCKS	32u		/* 16 KiB per command: five pages at an odd offset */
#define XFERS		4u		/* commands per thread and direction */
#define THREAD_BLOCKS	(XFER_BLOCKS * XFERS)

/* One queue pair: SQ and CQ in one kmem (SQ at 0, CQ at PAGE), its doorbells and vector. */
struct nvq {
	pd_kmem *km;
	uint8_t *sq;
	volatile uint32_t *cq;
	uint64_t sq_bus, cq_bus;
	unsigned int qid, vector, sq_tail, cq_head, phase;
	uint16_t cid;
};

struct nvme {
	pd_device *dev;
	struct pd_regs regs;
	unsigned int dstrd;		/* doorbell stride: 4 << CAP.DSTRD bytes */
	unsigned int timeout_ms;	/* CAP.TO */
	struct nvq admin, io[IOQ];
};

static const char *const nvme_checks[] = {
	"nvme: QEMU's NVMe controller binds to pcidriver with MSI-X and at least 5 vectors",
	"nvme: enabled with its admin queues in kmem; Identify returns the serial number",
	"nvme: 4 I/O queue pairs, each completion queue on its own MSI-X vector",
	"nvme: 4 threads write 64 KiB each from umem through PRP lists, each waiting on its vector",
	"nvme: 4 threads read it back into other umem buffers, byte for byte, vectors counted",
	"nvme: the controller disables and unbinds cleanly",
	NULL,
};

/* Block k of what the guest writes; run-qemu-tests.sh checks the same rule in the image. */
static void fill_block(uint8_t *p, unsigned int k)
{
	unsigned int i;

	for (i = 0; i < BLOCK; i++)
		p[i] = (uint8_t)(k * 131 + i * 7 + 0x5a);
	memcpy(p, "PDTB", 4);
	p[4] = (uint8_t)k;
	p[5] = (uint8_t)(k >> 8);
}

static uint32_t rd32(struct nvme *n, uint32_t off)
{
	return pd_reg_read32(&n->regs, off);
}

static void wr32(struct nvme *n, uint32_t off, uint32_t v)
{
	pd_reg_write32(&n->regs, off, v);
}

static void wr64(struct nvme *n, uint32_t off, uint64_t v)
{
	wr32(n, off, (uint32_t)v);
	wr32(n, off + 4, (uint32_t)(v >> 32));
}

/* A 64-bit field of a command: dwords dw, dw + 1. */
static void set64(uint32_t *cmd, unsigned int dw, uint64_t v)
{
	cmd[dw] = (uint32_t)v;
	cmd[dw + 1] = (uint32_t)(v >> 32);
}

static uint32_t doorbell(struct nvme *n, unsigned int qid, int cq)
{
	return REG_DBS + (2 * qid + cq) * (4u << n->dstrd);
}

static int queue_alloc(struct nvme *n, struct nvq *q, unsigned int qid, unsigned int vector)
{
	int ret = pd_kmem_alloc(n->dev, 2 * PAGE, &q->km);

	if (ret)
		return ret;
	q->sq = pd_kmem_ptr(q->km);
	q->cq = (volatile uint32_t *)(q->sq + PAGE);
	memset(q->sq, 0, 2 * PAGE);
	q->sq_bus = pd_kmem_bus_addr(q->km);
	q->cq_bus = q->sq_bus + PAGE;
	q->qid = qid;
	q->vector = vector;
	q->sq_tail = q->cq_head = 0;
	q->phase = 1;
	q->cid = 0;
	return 0;
}

/* Queue cmd (its CID is set here) and ring the SQ doorbell; returns the CID. */
static uint16_t submit(struct nvme *n, struct nvq *q, uint32_t cmd[16])
{
	uint16_t cid = ++q->cid;

	cmd[0] = (cmd[0] & 0xffff) | (uint32_t)cid << 16;
	memcpy(q->sq + q->sq_tail * 64, cmd, 64);
	q->sq_tail = (q->sq_tail + 1) % DEPTH;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	wr32(n, doorbell(n, q->qid, 0), q->sq_tail);
	return cid;
}

/*
 * The completion of cid: its status field (0 = success), or -ETIMEDOUT. With irq, sleeps on
 * the queue's vector between looks; else polls.
 */
static int complete(struct nvme *n, struct nvq *q, uint16_t cid, int irq)
{
	uint64_t end = now_ms() + n->timeout_ms;

	for (;;) {
		volatile uint32_t *e = q->cq + q->cq_head * 4;
		uint32_t dw3 = e[3];

		if (((dw3 >> 16) & 1) == q->phase) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			q->cq_head = (q->cq_head + 1) % DEPTH;
			if (!q->cq_head)
				q->phase ^= 1;
			wr32(n, doorbell(n, q->qid, 1), q->cq_head);
			if ((dw3 & 0xffff) != cid)
				return -EPROTO;		/* one command in flight per queue */
			return (int)(dw3 >> 17);
		}
		if (now_ms() > end)
			return -ETIMEDOUT;
		if (irq) {
			int ret = pd_irq_wait(n->dev, q->vector, 500);	/* events, or -errno */

			if (ret < 0 && ret != -ETIMEDOUT)
				return ret;
		} else {
			sleep_ms(1);
		}
	}
}

static int admin(struct nvme *n, uint32_t cmd[16])
{
	return complete(n, &n->admin, submit(n, &n->admin, cmd), 0);
}

static int enable(struct nvme *n)
{
	uint32_t cap_lo = rd32(n, REG_CAP), cap_hi = rd32(n, REG_CAP + 4);
	uint64_t end;

	n->dstrd = cap_hi & 0xf;
	n->timeout_ms = ((cap_lo >> 24) & 0xff) * 500 + 1000;
	if ((cap_lo & 0xffff) + 1 < DEPTH)
		return -EINVAL;
	wr32(n, REG_CC, 0);
	for (end = now_ms() + n->timeout_ms; rd32(n, REG_CSTS) & CSTS_RDY;)
		if (now_ms() > end)
			return -ETIMEDOUT;
	wr32(n, REG_AQA, (DEPTH - 1) << 16 | (DEPTH - 1));
	wr64(n, REG_ASQ, n->admin.sq_bus);
	wr64(n, REG_ACQ, n->admin.cq_bus);
	wr32(n, REG_CC, CC_EN | CC_IOSQES | CC_IOCQES);
	for (end = now_ms() + n->timeout_ms; !(rd32(n, REG_CSTS) & CSTS_RDY);) {
		if (rd32(n, REG_CSTS) & CSTS_CFS || now_ms() > end)
			return -EIO;
		sleep_ms(1);
	}
	return 0;
}

/* The bus address of byte off of a umem, from its SG list. */
static uint64_t bus_at(const struct pd_sg_entry *sg, size_t n, uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (off < sg[i].length)
			return sg[i].bus_addr + off;
		off -= sg[i].length;
	}
	return 0;
}

struct worker {
	struct nvme *n;
	struct nvq *q;
	pd_kmem *prp;			/* one page: the PRP list of the command in flight */
	uint8_t *buf;			/* XFER_BLOCKS * BLOCK bytes at an odd offset in a page */
	pd_umem *um;
	struct pd_sg_entry sg[16];
	size_t nsg;
	unsigned int first_block;
	int write, result;
};

/* One Read or Write of the worker's buffer at lba; PRP1 the first page, PRP2 a list. */
static int transfer(struct worker *w, uint64_t lba)
{
	uint32_t cmd[16] = { 0 };
	uint64_t *list = pd_kmem_ptr(w->prp);
	uint64_t len = XFER_BLOCKS * BLOCK, first = PAGE - ((uintptr_t)w->buf % PAGE), off;
	unsigned int k = 0;

	cmd[0] = w->write ? OP_WRITE : OP_READ;
	cmd[1] = 1;				/* namespace 1 */
	set64(cmd, 6, bus_at(w->sg, w->nsg, 0));
	for (off = first; off < len; off += PAGE)
		list[k++] = bus_at(w->sg, w->nsg, off);
	set64(cmd, 8, pd_kmem_bus_addr(w->prp));
	cmd[10] = (uint32_t)lba;
	cmd[11] = (uint32_t)(lba >> 32);
	cmd[12] = XFER_BLOCKS - 1;
	return complete(w->n, w->q, submit(w->n, w->q, cmd), 1);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned int x;

	w->result = 0;
	for (x = 0; x < XFERS && !w->result; x++) {
		unsigned int lba = w->first_block + x * XFER_BLOCKS, b;

		if (w->write) {
			for (b = 0; b < XFER_BLOCKS; b++)
				fill_block(w->buf + b * BLOCK, lba + b);
			w->result = pd_umem_sync(w->um, PD_SYNC_FOR_DEVICE);
		}
		if (!w->result)
			w->result = transfer(w, lba);
		if (!w->result && !w->write) {
			uint8_t want[BLOCK];

			w->result = pd_umem_sync(w->um, PD_SYNC_FOR_CPU);
			for (b = 0; b < XFER_BLOCKS && !w->result; b++) {
				fill_block(want, lba + b);
				if (memcmp(w->buf + b * BLOCK, want, BLOCK))
					w->result = -EBADMSG;
			}
		}
	}
	return NULL;
}

/* Runs the four workers at once in one direction; 0 or the first error, described in why. */
static int run_workers(struct worker *w, int write, char *why, size_t len)
{
	pthread_t thr[IOQ];
	unsigned int t;
	int ret = 0;

	for (t = 0; t < IOQ; t++) {
		w[t].write = write;
		memset(w[t].buf, write ? 0 : 0xee, XFER_BLOCKS * BLOCK);
		pthread_create(&thr[t], NULL, worker_run, &w[t]);
	}
	for (t = 0; t < IOQ; t++) {
		pthread_join(thr[t], NULL);
		if (!ret && w[t].result) {
			snprintf(why, len, "thread %u (%s): %s, NVMe status %#x", t,
				 write ? "write" : "read", w[t].result < 0 ? errname(w[t].result) : "",
				 w[t].result > 0 ? w[t].result : 0);
			ret = w[t].result;
		}
	}
	return ret;
}

/* The first IOQ + 1 interrupt counts of /dev/fpgaN (sysfs irq_counts). */
static void irq_counts(int minor, long counts[IOQ + 1])
{
	char path[64], buf[512];
	int len;

	snprintf(path, sizeof(path), "/sys/class/pcidriver/fpga%d/irq_counts", minor);
	len = read_file(path, buf, sizeof(buf) - 1);
	if (len <= 0)
		return;
	buf[len] = '\0';
	sscanf(buf, "%ld %ld %ld %ld %ld", &counts[0], &counts[1], &counts[2], &counts[3],
		       &counts[4]);
}

static void nvme_run(void)
{
	struct nvme n = { 0 };
	struct worker w[IOQ];
	struct pd_info info;
	char addr[256], node[32], serial[21] = "", why[128] = "setup failed";
	pd_kmem *ident = NULL;
	uint32_t cmd[16];
	long counts[IOQ + 1] = { 0 };
	unsigned int t;
	int minor, ret, a, ok;
	uint8_t *bufs;

	if (find_pci(NVME_VENDOR, NVME_DEVICE, addr, sizeof(addr))) {
		for (t = 0; nvme_checks[t]; t++)
			printf("ok - %s # SKIP no NVMe controller in this guest\n", nvme_checks[t]);
		return;
	}
	minor = bind_pci(addr);
	snprintf(node, sizeof(node), "/dev/fpga%d", minor);
	ret = minor < 0 ? minor : pd_open(node, &n.dev);
	if (!ret)
		ret = pd_info(n.dev, &info);
	CHECK(nvme_checks[0], !ret && info.irq_mode == PD_IRQ_MSIX && info.irq_count >= IOQ + 1,
	      "bind and open %s: %s, irq mode %u, %u vectors", node, errname(ret),
	      ret ? 0 : info.irq_mode, ret ? 0 : info.irq_count);
	if (ret)
		goto out_unbind;

	ret = pd_regs_get(n.dev, 0, &n.regs);
	if (!ret)
		ret = queue_alloc(&n, &n.admin, 0, 0);
	if (!ret)
		ret = enable(&n);
	if (!ret)
		ret = pd_kmem_alloc(n.dev, PAGE, &ident);
	if (!ret) {
		memset(cmd, 0, sizeof(cmd));
		cmd[0] = OP_IDENTIFY;
		set64(cmd, 6, pd_kmem_bus_addr(ident));
		cmd[10] = 1;				/* CNS 1: the controller */
		ret = admin(&n, cmd);
		memcpy(serial, (uint8_t *)pd_kmem_ptr(ident) + 4, 20);
	}
	CHECK(nvme_checks[1], !ret && !strncmp(serial, NVME_SERIAL, strlen(NVME_SERIAL)),
	      "%s, serial \"%s\"", ret > 0 ? "NVMe error" : errname(ret), serial);
	if (ret)
		goto out_close;

	for (t = 0; t < IOQ && !ret; t++) {
		ret = queue_alloc(&n, &n.io[t], t + 1, t + 1);
		if (ret)
			break;
		memset(cmd, 0, sizeof(cmd));
		cmd[0] = OP_CREATE_CQ;
		set64(cmd, 6, n.io[t].cq_bus);
		cmd[10] = (DEPTH - 1) << 16 | n.io[t].qid;
		cmd[11] = n.io[t].vector << 16 | 1u << 1 | 1u;	/* IEN, physically contiguous */
		ret = admin(&n, cmd);
		if (ret)
			break;
		memset(cmd, 0, sizeof(cmd));
		cmd[0] = OP_CREATE_SQ;
		set64(cmd, 6, n.io[t].sq_bus);
		cmd[10] = (DEPTH - 1) << 16 | n.io[t].qid;
		cmd[11] = n.io[t].qid << 16 | 1u;		/* its CQ, physically contiguous */
		ret = admin(&n, cmd);
	}
	CHECK(nvme_checks[2], !ret, "queue %u: %s (NVMe status %#x)", t + 1,
	      ret < 0 ? errname(ret) : "error", ret > 0 ? ret : 0);
	if (ret)
		goto out_disable;

	/*
	 * each thread: a umem buffer at an odd offset (PRP1 with an offset, then a list); page
	 * aligned where bounce buffers keep no page offset (swiotlb=force before 6.3, compat.h)
	 */
	bufs = aligned_alloc(PAGE, IOQ * 8 * PAGE);
	memset(w, 0, sizeof(w));
	for (t = 0; t < IOQ && !ret; t++) {
		w[t].n = &n;
		w[t].q = &n.io[t];
		w[t].buf = bufs + t * 8 * PAGE + (boot_has("force") && kernel_before(6, 3) ? 0 : 512);
		w[t].first_block = t * THREAD_BLOCKS;
		ret = pd_kmem_alloc(n.dev, PAGE, &w[t].prp);
		if (!ret)
			ret = pd_umem_map(n.dev, w[t].buf, XFER_BLOCKS * BLOCK, PD_DMA_BIDIRECTIONAL,
					  &w[t].um);
		if (!ret) {
			ret = pd_umem_sglist(w[t].um, w[t].sg, 16);
			w[t].nsg = ret > 0 ? (size_t)ret : 0;
			ret = ret > 0 ? 0 : -EINVAL;
		}
	}
	if (!ret)
		ret = run_workers(w, 1, why, sizeof(why));
	CHECK(nvme_checks[3], !ret, "%s", why);

	why[0] = '\0';
	a = ret ? ret : run_workers(w, 0, why, sizeof(why));
	irq_counts(minor, counts);
	for (t = 1, ok = !a; t <= IOQ; t++)
		ok &= counts[t] >= 1;		/* the device may merge a queue's messages */
	CHECK(nvme_checks[4], ok, "%s; vectors 1-4 counted %ld %ld %ld %ld", why, counts[1], counts[2], counts[3], counts[4]);
	free(bufs);

out_disable:
	wr32(&n, REG_CC, 0);
	for (a = 0; a < 1000 && (rd32(&n, REG_CSTS) & CSTS_RDY); a++)
		sleep_ms(2);
out_close:
	ret = rd32(&n, REG_CSTS) & CSTS_RDY ? -EBUSY : 0;
	pd_close(n.dev);
out_unbind:
	a = unbind_pci(addr);
	CHECK(nvme_checks[5], !ret && !a, "CSTS.RDY %s, unbind %s", errname(ret), errname(a));
}

const struct pdt_group grp_nvme = { "nvme", nvme_checks, nvme_run };
