// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: RLIMIT_MEMLOCK accounting of kmem and umem.
 *
 * Pinned and allocated pages belong to the open file, which can outlive the process that
 * asked for them (fork, fd passing). So the charge goes to the *user* (user_struct->locked_vm,
 * shared with io_uring, perf and BPF), which lives as long as we hold a reference, and the
 * limit is the caller's RLIMIT_MEMLOCK, as io_uring does: forked children pinning through an
 * inherited file add up against one budget instead of each starting from zero.
 * The caller's mm->pinned_vm is raised too, for visibility only (VmPin in /proc/PID/status).
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "pcidrv.h"

/* user_struct.locked_vm exists only with one of its users configured (every distribution
 * kernel has CONFIG_NET): say so rather than fail on the missing field. */
#if !(defined(CONFIG_NET) || defined(CONFIG_IO_URING) || defined(CONFIG_VFIO_PCI_ZDEV_KVM) || \
      IS_ENABLED(CONFIG_IOMMUFD) || defined(CONFIG_SECRETMEM))
#error "pcidriver charges user_struct.locked_vm: build the kernel with CONFIG_NET or CONFIG_IO_URING"
#endif

/* Refused with -ENOMEM above RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK. */
int pcidrv_acct_charge(struct pcidrv_acct *acct, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct user_struct *user = current_user();
	struct mm_struct *mm = current->mm;

	if (!mm)
		return -EFAULT;
	if (atomic_long_add_return(pages, &user->locked_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic_long_sub(pages, &user->locked_vm);
		return -ENOMEM;
	}
	acct->user = get_uid(user);
	atomic64_add(pages, &mm->pinned_vm);
	mmgrab(mm);
	acct->mm = mm;
	acct->pages = pages;
	return 0;
}

/* Returns the charge to the user and mm it was taken from, whoever calls it. */
void pcidrv_acct_uncharge(struct pcidrv_acct *acct)
{
	if (!acct->user)
		return;
	atomic_long_sub(acct->pages, &acct->user->locked_vm);
	free_uid(acct->user);
	acct->user = NULL;
	atomic64_sub(acct->pages, &acct->mm->pinned_vm);
	mmdrop(acct->mm);
	acct->mm = NULL;
}
