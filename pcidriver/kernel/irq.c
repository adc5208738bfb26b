// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: interrupts. One source per vector (MSI-X, else MSI, else INTx), each with an
 * event counter and a wait queue. The handler only counts and wakes; acknowledging the device
 * is user space's job. INTx is shared and level triggered, so its handler masks it in the PCI
 * command register (as uio_pci_generic does) and the next wait or clear unmasks it.
 */
#include <linux/interrupt.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pcidrv.h"

static void pcidrv_irq_event(struct pcidrv_irq *src)
{
	atomic64_inc(&src->count);
	wake_up_interruptible_all(&src->wq);
}

static irqreturn_t pcidrv_msi_handler(int irq, void *data)
{
	pcidrv_irq_event(data);
	return IRQ_HANDLED;
}

static irqreturn_t pcidrv_intx_handler(int irq, void *data)
{
	struct pcidrv_irq *src = data;
	struct pcidrv_dev *pd = src->pd;
	irqreturn_t ret = IRQ_NONE;

	spin_lock(&pd->intx_lock);
	if (pci_check_and_mask_intx(pd->pdev)) {
		pd->intx_masked = true;
		ret = IRQ_HANDLED;
	}
	spin_unlock(&pd->intx_lock);
	if (ret == IRQ_HANDLED)
		pcidrv_irq_event(src);
	return ret;
}

/*
 * Unmask INTx if the handler masked it. If the device still asserts it (not acknowledged yet),
 * it stays masked and counts as a new event, as vfio-pci does. Called when a file says it has
 * handled what it was told: IRQ_CLEAR, or IRQ_WAIT with no unreported event (so that an
 * interrupt that fired just before the wait is reported once, not twice).
 */
static void pcidrv_intx_unmask(struct pcidrv_dev *pd)
{
	unsigned long flags;
	bool pending = false;

	if (pd->irq_mode != PCIDRIVER_IRQ_INTX)
		return;
	spin_lock_irqsave(&pd->intx_lock, flags);
	if (pd->intx_masked) {
		if (pci_check_and_unmask_intx(pd->pdev))
			pd->intx_masked = false;
		else
			pending = true;
	}
	spin_unlock_irqrestore(&pd->intx_lock, flags);
	if (pending)
		pcidrv_irq_event(&pd->irqs[0]);
}

int pcidrv_irq_setup(struct pcidrv_dev *pd, bool allow_msi)
{
	struct pci_dev *pdev = pd->pdev;
	irq_handler_t handler = pcidrv_msi_handler;
	unsigned long irqflags = 0;
	unsigned int i;
	int nvec = 0, ret;

	if (allow_msi)
		nvec = pci_alloc_irq_vectors(pdev, 1, PCIDRIVER_MAX_IRQS,
					     PCI_IRQ_MSIX | PCI_IRQ_MSI);
	if (nvec > 0) {
		pd->irq_mode = pdev->msix_enabled ? PCIDRIVER_IRQ_MSIX : PCIDRIVER_IRQ_MSI;
	} else if (pdev->irq && pci_intx_mask_supported(pdev)) {
		nvec = 1;
		pd->irq_mode = PCIDRIVER_IRQ_INTX;
		handler = pcidrv_intx_handler;
		irqflags = IRQF_SHARED;
	} else {
		dev_info(&pdev->dev, "no usable interrupt (no MSI, no maskable INTx)\n");
		pd->irq_mode = PCIDRIVER_IRQ_NONE;
		return 0;
	}

	pd->irqs = kcalloc(nvec, sizeof(*pd->irqs), GFP_KERNEL);
	if (!pd->irqs) {
		ret = -ENOMEM;
		goto err_free_vectors;
	}
	pd->nr_irqs = nvec;
	for (i = 0; i < pd->nr_irqs; i++) {
		struct pcidrv_irq *src = &pd->irqs[i];
		int irq = pd->irq_mode == PCIDRIVER_IRQ_INTX ? pdev->irq : pci_irq_vector(pdev, i);

		src->pd = pd;
		src->index = i;
		init_waitqueue_head(&src->wq);
		snprintf(src->name, sizeof(src->name), "%s[%s]:%u", PCIDRV_NAME, pci_name(pdev), i);
		if (irq < 0) {
			ret = irq;
			goto err_free_irqs;
		}
		ret = request_irq(irq, handler, irqflags, src->name, src);
		if (ret)
			goto err_free_irqs;
		src->irq = irq;
	}

	if (pd->irq_mode == PCIDRIVER_IRQ_INTX) {
		/* a previous binding may have left it masked */
		pd->intx_masked = true;
		pcidrv_intx_unmask(pd);
	}
	return 0;

err_free_irqs:
	while (i--)
		free_irq(pd->irqs[i].irq, &pd->irqs[i]);
	kfree(pd->irqs);
	pd->irqs = NULL;
	pd->nr_irqs = 0;
err_free_vectors:
	if (pd->irq_mode != PCIDRIVER_IRQ_INTX)
		pci_free_irq_vectors(pdev);
	pd->irq_mode = PCIDRIVER_IRQ_NONE;
	return ret;
}

/*
 * Free the vectors. pd->irqs stays allocated until the last put of the device: files may
 * still sleep on its wait queues (they return -ENODEV when woken). INTx is left masked if the
 * handler masked it, so that a still-asserted line cannot scream without a handler.
 */
void pcidrv_irq_teardown(struct pcidrv_dev *pd)
{
	unsigned int i;

	if (pd->irq_mode == PCIDRIVER_IRQ_NONE)
		return;
	for (i = 0; i < pd->nr_irqs; i++)
		free_irq(pd->irqs[i].irq, &pd->irqs[i]);
	if (pd->irq_mode != PCIDRIVER_IRQ_INTX)
		pci_free_irq_vectors(pd->pdev);
}

/* remove(): wake every waiter so that it sees the device dead. */
void pcidrv_irq_wake_all(struct pcidrv_dev *pd)
{
	unsigned int i;

	for (i = 0; i < pd->nr_irqs; i++)
		wake_up_interruptible_all(&pd->irqs[i].wq);
}

/* Consume the events of src this file has not seen; 0 if there are none. */
static u64 pcidrv_irq_consume(struct pcidrv_file *f, unsigned int source)
{
	atomic64_t *seen = &f->irq_seen[source];
	s64 now = atomic64_read(&f->pd->irqs[source].count);
	s64 old = atomic64_read(seen);

	while (now != old) {
		s64 prev = atomic64_cmpxchg(seen, old, now);

		if (prev == old)
			return now - old;
		old = prev;	/* another thread of this file consumed some */
	}
	return 0;
}

static bool pcidrv_irq_ready(struct pcidrv_file *f, unsigned int source)
{
	return atomic64_read(&f->pd->irqs[source].count) != atomic64_read(&f->irq_seen[source]) ||
	       READ_ONCE(f->pd->dead);
}

/*
 * Enters the SRCU read side only to check the device and unmask INTx, as it sleeps; while
 * sleeping it relies on the file's reference to pd,
 * which keeps pd->irqs alive, and on remove() waking it.
 */
int pcidrv_ioctl_irq_wait(struct pcidrv_file *f, struct pcidriver_irq_wait __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_irq_wait, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_irq_wait req;
	struct pcidrv_irq *src;
	long timeout;
	u64 n;
	int idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	if (req.source >= pd->nr_irqs) {
		pcidrv_leave(pd, idx);
		return -EINVAL;
	}
	if (atomic64_read(&pd->irqs[req.source].count) == atomic64_read(&f->irq_seen[req.source]))
		pcidrv_intx_unmask(pd);
	pcidrv_leave(pd, idx);

	src = &pd->irqs[req.source];
	timeout = req.timeout_ms == PCIDRIVER_WAIT_FOREVER ? MAX_SCHEDULE_TIMEOUT :
		  (long)msecs_to_jiffies(req.timeout_ms);
	for (;;) {
		if (READ_ONCE(pd->dead))
			return -ENODEV;
		n = pcidrv_irq_consume(f, req.source);
		if (n)
			break;
		if (!timeout)
			return -ETIMEDOUT;
		timeout = wait_event_interruptible_timeout(src->wq,
							   pcidrv_irq_ready(f, req.source),
							   timeout);
		if (timeout < 0)
			return -EINTR;	/* never restarted: the timeout would start over */
	}

	req.count = min_t(u64, n, U32_MAX);
	return copy_to_user(arg, &req, minsz) ? -EFAULT : 0;
}

int pcidrv_ioctl_irq_clear(struct pcidrv_file *f, struct pcidriver_irq_clear __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_irq_clear, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_irq_clear req;
	int idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;
	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	if (req.source >= pd->nr_irqs) {
		pcidrv_leave(pd, idx);
		return -EINVAL;
	}
	atomic64_set(&f->irq_seen[req.source], atomic64_read(&pd->irqs[req.source].count));
	pcidrv_intx_unmask(pd);
	pcidrv_leave(pd, idx);
	return 0;
}
