// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest groups for what an attacker or a careless user tries: memlock (pins through a file
 * inherited by forked children), stall (remove() while an ioctl waits on a userfaultfd
 * fault), reach (buffers and dma-bufs the device cannot address, bounce-pool exhaustion, kmem
 * in a memory cgroup), churn (processes filling the bounce pool with maps at random offsets,
 * killed mid-run). Expectations that depend on the boot (IOMMU, swiotlb=force, guest memory) are
 * read from /proc/cmdline and the kernel log, and stated in each check's diagnostic.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdtest.h"

#define FPGA_UID	1000	/* as in t_life.c: a member of the device's group */
#define PAGE		4096UL

static int raw_umem_map(int fd, void *addr, uint64_t size, uint32_t flags, uint32_t *id)
{
	struct pcidriver_umem_map req = {
		.argsz = sizeof(req), .flags = flags, .vaddr = (uintptr_t)addr, .size = size,
	};
	int ret = raw_ioctl(fd, PCIDRIVER_UMEM_MAP, &req);

	if (!ret && id)
		*id = req.id;
	return ret;
}

static int raw_kmem_alloc(int fd, uint64_t size)
{
	struct pcidriver_kmem_alloc req = { .argsz = sizeof(req), .size = size };

	return raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &req);
}

/* Runs fn in a child and returns its exit status as a (positive) errno, or -1 if it died. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(-fn(arg) & 0xff);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* ---------------------------------------------------------------- memlock */

static const char *const memlock_checks[] = {
	"memlock: pins by forked children through an inherited file add up against one RLIMIT_MEMLOCK (the 2nd child gets ENOMEM)",
	"memlock: kmem allocated through the inherited file is charged to the same budget",
	"memlock: closing the file returns every charge (the whole limit can be pinned again)",
	NULL,
};

struct memlock_ctx {
	int fd;
	uint8_t *buf;
};

static int child_pin_48k(void *arg)
{
	struct memlock_ctx *c = arg;
	static int round;

	/* each child pins other pages and exits without unmapping: the pins stay with the file */
	return raw_umem_map(c->fd, c->buf + (round++) * (64 << 10), 48 << 10,
			    PCIDRIVER_UMEM_TO_DEVICE, NULL);
}

static int child_kmem_16k(void *arg)
{
	return raw_kmem_alloc(((struct memlock_ctx *)arg)->fd, 16 << 10);
}

static void memlock_unpriv(void)
{
	struct memlock_ctx c;
	int a, b, k1, k2;

	drop_privileges(FPGA_UID, FPGA_UID);
	if (posix_memalign((void **)&c.buf, PAGE, 256 << 10))
		_exit(1);
	memset(c.buf, 1, 256 << 10);
	c.fd = raw_open(0);
	if (c.fd < 0) {
		pdt_diag("open /dev/fpga0 as uid %d: %s", FPGA_UID, errname(c.fd));
		_exit(1);
	}
	a = in_child(child_pin_48k, &c);
	b = in_child(child_pin_48k, &c);
	CHECK(memlock_checks[0], a == 0 && b == ENOMEM, "1st child %s, 2nd child %s (limit 64 KiB)",
	      errname(a), errname(b));
	k1 = in_child(child_kmem_16k, &c);	/* 48 + 16 <= 64 KiB */
	k2 = in_child(child_kmem_16k, &c);	/* 64 + 16 > 64 KiB */
	CHECK(memlock_checks[1], k1 == 0 && k2 == ENOMEM, "kmem %s, then %s", errname(k1),
	      errname(k2));
	close(c.fd);

	c.fd = raw_open(0);
	a = c.fd < 0 ? c.fd : raw_umem_map(c.fd, c.buf, 64 << 10, PCIDRIVER_UMEM_TO_DEVICE, NULL);
	CHECK(memlock_checks[2], !a, "%s", errname(a));
	_exit(0);
}

static void memlock_run(void)
{
	int status;
	pid_t pid;

	/* what the udev rule does: GROUP="fpga", MODE="0660" */
	if (chown("/dev/fpga0", 0, FPGA_UID) || chmod("/dev/fpga0", 0660))
		pdt_diag("chown/chmod /dev/fpga0: %s", errname(errno));
	pid = fork();
	if (pid == 0)
		memlock_unpriv();
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		pdt_diag("unprivileged child: status %#x", status);
}

const struct pdt_group grp_memlock = { "memlock", memlock_checks, memlock_run };

/* ---------------------------------------------------------------- stall */

static const char *const stall_checks[] = {
	"stall: unbind completes while UMEM_MAP's argument waits on a userfaultfd fault",
	"stall: the stalled UMEM_MAP then fails with ENODEV",
	"stall: unbind completes while UMEM_MAP pins a buffer that waits on a userfaultfd fault",
	"stall: that UMEM_MAP then fails with ENODEV (EFAULT before 6.5, whose pinning cannot wait for userfaultfd) and leaves nothing pinned",
	NULL,
};

struct stall_call {
	int fd;
	struct pcidriver_umem_map *arg;
	int result;
};

static void *stall_thread(void *p)
{
	struct stall_call *c = p;

	c->result = raw_ioctl(c->fd, PCIDRIVER_UMEM_MAP, c->arg);
	return NULL;
}

/* An anonymous page registered with a new userfaultfd (missing faults); the fd or -errno. */
static int uffd_page(void **page)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (uffd < 0)
		return -errno;
	*page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)*page;
	reg.range.len = PAGE;
	if (*page == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		close(uffd);
		return -errno;
	}
	return uffd;
}

/* A kernel before 6.5, whose pin_user_pages() fails a userfaultfd fault instead of waiting. */
static int old_gup(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major < 6 || (major == 6 && minor < 5);
}

/* Unbinds name in a child; 0 if that finished within timeout_ms, else -ETIMEDOUT. */
static int unbind_within(const char *name, unsigned int timeout_ms, pid_t *pid)
{
	uint64_t end = now_ms() + timeout_ms;
	int status;

	*pid = fork();
	if (*pid == 0)
		_exit(-sysfs_write("/sys/bus/pci/drivers/pcidriver/unbind", name) & 0xff);
	while (now_ms() < end) {
		if (waitpid(*pid, &status, WNOHANG) == *pid) {
			*pid = 0;
			return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
		}
		sleep_ms(20);
	}
	return -ETIMEDOUT;
}

/*
 * One round: UMEM_MAP on /dev/fpga1 with either its argument (arg_in_uffd) or its buffer in a
 * page whose fault nobody answers yet; unbind fpga1 meanwhile; then answer the fault.
 */
static void stall_round(const char *name, int arg_in_uffd, const char *chk_unbind,
			const char *chk_result)
{
	struct pcidriver_umem_map arg = { .argsz = sizeof(arg), .flags = PCIDRIVER_UMEM_TO_DEVICE };
	struct stall_call call = { .result = 1 };
	struct uffdio_copy copy = { 0 };
	struct pollfd pfd;
	void *page = NULL, *buf = NULL, *src = NULL;
	int uffd, ret, waited;
	pthread_t thr;
	pid_t pid;

	uffd = uffd_page(&page);
	call.fd = raw_open(1);
	if (uffd < 0 || call.fd < 0 || posix_memalign(&buf, PAGE, PAGE) ||
	    posix_memalign(&src, PAGE, PAGE)) {
		pdt_diag("setup: userfaultfd %s, open %s", errname(uffd), errname(call.fd));
		return;
	}
	memset(buf, 0x5a, PAGE);
	arg.vaddr = (uintptr_t)(arg_in_uffd ? buf : page);
	arg.size = PAGE;
	if (arg_in_uffd) {
		memcpy(src, &arg, sizeof(arg));	/* what the fault will be answered with */
		call.arg = page;
	} else {
		memset(src, 0x33, PAGE);
		call.arg = &arg;
	}
	pthread_create(&thr, NULL, stall_thread, &call);

	pfd.fd = uffd;
	pfd.events = POLLIN;
	waited = poll(&pfd, 1, 3000);
	ret = waited == 1 ? unbind_within(name, 5000, &pid) : -EAGAIN;
	CHECK(chk_unbind, !ret, "%s", waited == 1 ? errname(ret) : "UMEM_MAP never faulted");

	copy.dst = (uintptr_t)page;
	copy.src = (uintptr_t)src;
	copy.len = PAGE;
	if (ioctl(uffd, UFFDIO_COPY, &copy))
		pdt_diag("UFFDIO_COPY: %s", errname(errno));
	pthread_join(thr, NULL);
	if (ret == -ETIMEDOUT)		/* the unbind finishes once the fault is answered */
		waitpid(pid, NULL, 0);
	CHECK(chk_result, (call.result == -ENODEV || (!arg_in_uffd && old_gup() &&
	      call.result == -EFAULT)) && vm_pin_kb() == 0, "UMEM_MAP %s, VmPin %ld kB",
	      errname(call.result), vm_pin_kb());
	close(call.fd);
	close(uffd);
	munmap(page, PAGE);
	free(buf);
	free(src);

	sysfs_write("/sys/bus/pci/drivers_probe", name);
	if (wait_node(1, 1, 2000))
		pdt_diag("fpga1 did not come back after rebinding %s", name);
}

static void stall_run(void)
{
	struct pd_info info;
	pd_device *dev;

	if (pd_open("/dev/fpga1", &dev) || pd_info(dev, &info)) {
		pdt_diag("cannot open /dev/fpga1");
		return;
	}
	pd_close(dev);
	stall_round(info.name, 1, stall_checks[0], stall_checks[1]);
	stall_round(info.name, 0, stall_checks[2], stall_checks[3]);
}

const struct pdt_group grp_stall = { "stall", stall_checks, stall_run };

/* ---------------------------------------------------------------- reach */

static const char *const reach_checks[] = {
	"reach: a page above the 28-bit DMA reach: ERANGE without a reachable bounce pool, else mapped and carried by edu DMA",
	"reach: a umem larger than the swiotlb pool fails with ENOMEM under swiotlb=force (maps elsewhere)",
	"reach: kmem is charged to the caller's memory cgroup (ENOMEM above memory.max)",
	"reach: dma-bufs with pages above the 28-bit reach (udmabuf; vgem on 6.1), imported by an unprivileged user: ERANGE without a reachable bounce pool, else imported within reach",
	NULL,
};

#define EDU_REACH	(1ULL << EDU_DMA_BITS)

struct boot {
	int iommu, swiotlb;
	int pool_reach;		/* the swiotlb pool is within edu's reach: 1 yes, 0 no, -1 unknown */
};

/* A value of /proc/meminfo in kB, 0 if unknown. */
static long meminfo_kb(const char *key)
{
	char buf[4096], *p;
	int n = read_file("/proc/meminfo", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

static void read_boot(struct boot *b)
{
	static char log[1 << 20];
	char cmdline[1024] = "", *p;
	unsigned long long s, e;
	int n;

	memset(b, 0, sizeof(*b));
	b->pool_reach = -1;
	if (read_file("/proc/cmdline", cmdline, sizeof(cmdline) - 1) > 0) {
		b->iommu = strstr(cmdline, "intel_iommu=on") != NULL;
		b->swiotlb = strstr(cmdline, "swiotlb=") && strstr(cmdline, "force");
	}
	/* all RAM below the reach, or the pool's place if the kernel logged it (not always) */
	if (meminfo_kb("MemTotal:") <= (long)(EDU_REACH >> 10))
		b->pool_reach = 1;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
	if (n <= 0)
		return;
	log[n] = '\0';
	p = strstr(log, "software IO TLB: mapped [mem ");
	if (p && sscanf(p, "software IO TLB: mapped [mem %llx-%llx]", &s, &e) == 2)
		b->pool_reach = e < EDU_REACH;
}

/* The physical address of the page at va (root reads PFNs from pagemap), 0 if unknown. */
static uint64_t phys_of(int pagemap, const void *va)
{
	uint64_t ent;

	if (pread(pagemap, &ent, 8, ((uintptr_t)va / PAGE) * 8) != 8 || !(ent >> 63))
		return 0;
	return (ent & ((1ULL << 55) - 1)) * PAGE;
}

/*
 * A touched page of this process at or above EDU_REACH; NULL if none (a guest with less RAM
 * than that). Takes at most what leaves 64 MiB available, and gives back all but the 16 MiB
 * chunk that holds the page (which stays mapped until the group's process exits).
 */
static uint8_t *high_page(void)
{
	const size_t chunk = 16 << 20;
	uint8_t *chunks[64], *found = NULL;
	int pagemap, n = 0, i;
	size_t off;

	if (meminfo_kb("MemTotal:") <= (long)(EDU_REACH >> 10))
		return NULL;
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	while (!found && pagemap >= 0 && n < 64 &&
	       meminfo_kb("MemAvailable:") > (long)((64 << 10) + (chunk >> 10))) {
		uint8_t *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);

		if (p == MAP_FAILED)
			break;
		chunks[n++] = p;
		for (off = 0; off < chunk; off += PAGE)
			p[off] = 1;
		for (off = 0; off < chunk && !found; off += PAGE)
			if (phys_of(pagemap, p + off) >= EDU_REACH)
				found = p + off;
	}
	if (pagemap >= 0)
		close(pagemap);
	for (i = 0; i < n; i++)
		if (!found || found < chunks[i] || found >= chunks[i] + chunk)
			munmap(chunks[i], chunk);
	return found;
}

static void reach_high_page(const struct boot *b, pd_device *dev, const struct pd_regs *regs)
{
	int bounce_ok = b->swiotlb && b->pool_reach == 1;
	uint8_t *page = high_page();
	struct pd_sg_entry sg;
	pd_kmem *km = NULL;
	pd_umem *um = NULL;
	int ret, a = -1, i, bad = 0;

	if (!page) {
		printf("ok - %s # SKIP no page above 256 MiB in this guest\n", reach_checks[0]);
		return;
	}
	for (i = 0; i < 4000; i++)
		page[i] = (uint8_t)(i * 13 + 7);
	ret = pd_umem_map(dev, page, PAGE, PD_DMA_BIDIRECTIONAL, &um);
	if (!b->iommu && !bounce_ok && !(b->swiotlb && b->pool_reach < 0 && !ret)) {
		CHECK(reach_checks[0], ret == -ERANGE, "%s (no IOMMU, swiotlb %d, pool in reach %d)",
		      errname(ret), b->swiotlb, b->pool_reach);
		if (um)
			pd_umem_unmap(um);
		return;
	}
	/* reachable: page -> edu -> kmem, compared */
	if (!ret && pd_umem_sglist(um, &sg, 1) == 1 && !pd_kmem_alloc(dev, PAGE, &km) &&
	    !pd_umem_sync(um, PD_SYNC_FOR_DEVICE)) {
		memset(pd_kmem_ptr(km), 0, PAGE);
		a = edu_dma(regs, sg.bus_addr, 0, 4000, 0, 0);
		if (!a)
			a = edu_dma(regs, pd_kmem_bus_addr(km), 0, 4000, 1, 0);
		for (i = 0; !a && i < 4000; i++)
			bad += ((uint8_t *)pd_kmem_ptr(km))[i] != page[i];
	}
	CHECK(reach_checks[0], !ret && !a && !bad,
	      "map %s, dma %s, %d bytes differ (iommu %d, swiotlb %d, pool in reach %d)",
	      errname(ret), errname(a), bad, b->iommu, b->swiotlb, b->pool_reach);
	if (km)
		pd_kmem_free(km);
	if (um)
		pd_umem_unmap(um);
}

/* The bytes of the swiotlb pool (debugfs: slabs of 2 KiB), or the default 64 MiB. */
static size_t pool_bytes(void)
{
	long slabs;

	mkdir("/sys/kernel/debug", 0755);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	slabs = sysfs_long("/sys/kernel/debug/swiotlb/io_tlb_nslabs");
	return slabs > 0 ? (size_t)slabs * 2048 : (size_t)64 << 20;
}

static void reach_pool(const struct boot *b, pd_device *dev)
{
	const size_t size = pool_bytes() + (8 << 20);
	uint8_t *buf = NULL;
	pd_umem *um = NULL;
	int ret;

	if (posix_memalign((void **)&buf, PAGE, size)) {
		pdt_diag("no %zu MiB buffer", size >> 20);
		return;
	}
	memset(buf, 0x11, size);
	ret = pd_umem_map(dev, buf, size, PD_DMA_TO_DEVICE, &um);
	if (b->swiotlb && b->pool_reach >= 0)
		CHECK(reach_checks[1], ret == (b->pool_reach ? -ENOMEM : -ERANGE),
		      "%s (%zu MiB, pool %s reach)", errname(ret), size >> 20,
		      b->pool_reach ? "in" : "beyond");
	else if (b->swiotlb)
		CHECK(reach_checks[1], ret == -ENOMEM || ret == -ERANGE, "%s (pool place unknown)",
		      errname(ret));
	else		/* in reach below 256 MiB of RAM or behind the IOMMU; ERANGE beyond */
		CHECK(reach_checks[1], !ret || (!b->iommu && ret == -ERANGE), "%s", errname(ret));
	if (um)
		pd_umem_unmap(um);
	free(buf);
}

static int child_kmem_in_cgroup(void *arg)
{
	char pid[32];
	int fd, small, big;

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (sysfs_write("/sys/fs/cgroup/pdtest/cgroup.procs", pid))
		return -EPERM;
	fd = raw_open(0);
	if (fd < 0)
		return fd;
	small = raw_kmem_alloc(fd, 64 << 10);
	big = raw_kmem_alloc(fd, 2 << 20);
	close(fd);
	(void)arg;
	return small ? -EIO : big;	/* 0 would mean: not charged */
}

static void reach_memcg(void)
{
	int ret;

	mkdir("/sys/fs/cgroup", 0755);
	mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL);
	sysfs_write("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	mkdir("/sys/fs/cgroup/pdtest", 0755);
	ret = sysfs_write("/sys/fs/cgroup/pdtest/memory.max", "1M");
	if (ret) {
		pdt_diag("memory cgroup: %s", errname(ret));
		return;
	}
	ret = in_child(child_kmem_in_cgroup, NULL);
	CHECK(reach_checks[2], ret == ENOMEM, "2 MiB kmem in a 1 MiB group: %s", errname(ret));
	rmdir("/sys/fs/cgroup/pdtest");
}

/*
 * Up to max one-page dma-bufs whose pages lie above EDU_REACH: udmabufs over memfd pages that
 * pagemap places there (*known = 1); else three 64 MiB vgem buffers, whose pages pagemap
 * cannot show (a PFN mapping), so that only the imports tell (*known = 0), and some of which
 * must hold a page above the reach. Returns how many, or -errno.
 */
static int high_dmabufs(int *fds, int max, int *known, const char **what)
{
	const size_t size = 32 << 20;
	int mfd, pagemap, n = 0;
	uint8_t *p;
	size_t off;

	*known = !access("/dev/udmabuf", F_OK);
	*what = *known ? "udmabuf" : "vgem";
	if (meminfo_kb("MemTotal:") <= (long)(EDU_REACH >> 10))
		return 0;	/* no page above the reach in this guest */
	if (!*known) {
		/* 3 x 64 MiB: more than the guest has free below the reach */
		for (n = 0; n < 3 && n < max; n++) {
			fds[n] = vgem_new(64 << 20, 1);
			if (fds[n] < 0)
				return n ? n : fds[n];
		}
		return n;
	}
	mfd = memfd_create("pdtest-high", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, size) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (p == MAP_FAILED || pagemap < 0) {
		close(mfd);
		return -errno;
	}
	for (off = 0; off < size; off += PAGE)
		p[off] = 1;
	for (off = 0; off < size && n < max; off += PAGE)
		if (phys_of(pagemap, p + off) >= EDU_REACH) {
			fds[n] = udmabuf_over(mfd, off, PAGE);
			if (fds[n] < 0)
				break;
			n++;
		}
	close(pagemap);
	munmap(p, size);
	close(mfd);	/* each udmabuf holds its pages */
	return n;
}

/* The unprivileged importer: exit status bit 0 some import gave ERANGE, bit 1 some imported
 * within reach, bit 2 anything else (another error, a bus address beyond the reach). */
static void reach_dmabuf_child(int dev, const int *fds, int n)
{
	struct rlimit rl = { 256 << 20, 256 << 20 };	/* room for the 64 MiB vgem buffers */
	struct pcidriver_mem_id unmap = { .argsz = sizeof(unmap) };
	static struct pcidriver_sg_entry sg[256];
	int i, j, ret, status = 0;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(8);
	for (i = 0; i < n; i++) {
		struct pcidriver_dmabuf_import req = {
			.argsz = sizeof(req), .flags = PCIDRIVER_UMEM_FROM_DEVICE, .fd = fds[i],
		};
		struct pcidriver_umem_sglist l = {
			.argsz = sizeof(l), .count = 256, .entries = (uintptr_t)sg,
		};

		ret = raw_ioctl(dev, PCIDRIVER_DMABUF_IMPORT, &req);
		if (ret == -ERANGE) {
			status |= 1;
			continue;
		}
		l.id = req.id;
		do {	/* every entry within the reach */
			if (!ret)
				ret = raw_ioctl(dev, PCIDRIVER_UMEM_GET_SGLIST, &l);
			for (j = 0; !ret && j < (int)l.count; j++)
				if (sg[j].bus_addr + sg[j].length > EDU_REACH)
					ret = -EFAULT;
			l.first += l.count;
		} while (!ret && l.count && l.first < l.total);
		status |= ret ? 4 : 2;
		if (ret)
			printf("# reach: import %d: %s\n", i, errname(ret));
		unmap.id = req.id;
		raw_ioctl(dev, PCIDRIVER_UMEM_UNMAP, &unmap);
	}
	fflush(stdout);
	_exit(status);
}

static void reach_dmabuf(const struct boot *b)
{
	int fds[16], known, n, i, dev = raw_open(0), status = -1, want, ok;
	const char *what;
	pid_t pid;

	n = high_dmabufs(fds, 16, &known, &what);
	if (n <= 0 || dev < 0) {
		printf("ok - %s # SKIP no %s with a page above 256 MiB (%s)\n", reach_checks[3],
		       what, errname(n));
		if (dev >= 0)
			close(dev);
		return;
	}
	pid = fork();
	if (pid == 0)
		reach_dmabuf_child(dev, fds, n);
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		status = WEXITSTATUS(status);
	/* ERANGE where nothing in reach bounces; with the pool's place unknown, either */
	if (b->iommu || (b->swiotlb && b->pool_reach == 1))
		want = 2;
	else if (b->swiotlb && b->pool_reach < 0)
		want = -1;
	else
		want = 1;
	if (want < 0)
		ok = status >= 1 && status <= 3;
	else if (known || want == 2)
		ok = status == want;
	else		/* vgem: some of its pages may lie low and import */
		ok = status == 1 || status == 3;
	CHECK(reach_checks[3], ok, "%d %s buffers: status %d, expected %d (iommu %d, swiotlb %d, pool in reach %d)",
	      n, what, status, want, b->iommu, b->swiotlb, b->pool_reach);
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(dev);
}

static void reach_run(void)
{
	struct pd_regs regs;
	struct boot b;
	pd_device *dev;

	read_boot(&b);
	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs)) {
		pdt_diag("cannot open /dev/fpga0");
		return;
	}
	reach_high_page(&b, dev, &regs);
	reach_pool(&b, dev);
	pd_close(dev);
	reach_memcg();
	reach_dmabuf(&b);
}

const struct pdt_group grp_reach = { "reach", reach_checks, reach_run };

/* ---------------------------------------------------------------- churn */

static const char *const churn_checks[] = {
	"churn: 4 processes map random sizes (1 B - 192 KiB) at random offsets of a 2 MiB buffer for the device to read, unmapping one on ENOMEM, two of them killed (SIGKILL) and restarted: all finish",
	"churn: under swiotlb=force the bounce pool filled (ENOMEM) and maps went on after unmaps",
	"churn: afterwards no umem is left and a fresh map works",
	NULL,
};

#define CHURN_PROCS	4
#define CHURN_ITERS	600
#define CHURN_LIVE	64		/* mappings a process holds: 4 x 64 x 96 KiB > the 16 MiB pool */
#define CHURN_BUF	(2UL << 20)

/*
 * One churning process (what locked 6.1 up under swiotlb with a page-sized min_align_mask):
 * exits 0 when done without ENOMEM, 1 when done after ENOMEM, 2 on another error.
 */
static void churn_child(unsigned int seed)
{
	uint32_t ids[CHURN_LIVE] = { 0 };
	int fd = raw_open(0), i, slot, enomem = 0, ret;
	struct pcidriver_mem_id unmap = { .argsz = sizeof(unmap) };
	uint8_t *buf = aligned_alloc(PAGE, CHURN_BUF);

	if (fd < 0 || !buf)
		_exit(2);
	memset(buf, 0x3c, CHURN_BUF);
	for (i = 0; i < CHURN_ITERS; i++) {
		size_t size = 1 + rand_r(&seed) % (192 << 10);
		size_t off = rand_r(&seed) % (CHURN_BUF - size + 1);
		/* TO_DEVICE: overlapping mappings the device may write are the caller's error,
		 * which DMA-API debugging reports (docs/pcidriver.md); the slot search is the same */
		uint32_t flags = PCIDRIVER_UMEM_TO_DEVICE;

		slot = rand_r(&seed) % CHURN_LIVE;
		if (ids[slot]) {
			unmap.id = ids[slot];
			raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &unmap);
			ids[slot] = 0;
		}
		ret = raw_umem_map(fd, buf + off, size, flags, &ids[slot]);
		if (ret == -ENOMEM) {
			enomem++;
			for (slot = 0; slot < CHURN_LIVE; slot++) {
				if (!ids[slot])
					continue;
				unmap.id = ids[slot];
				raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &unmap);
				ids[slot] = 0;
				break;
			}
		} else if (ret) {
			printf("# churn: map of %zu bytes at %zu: %s\n", size, off, errname(ret));
			fflush(stdout);
			_exit(2);
		}
	}
	_exit(enomem ? 1 : 0);
}

static pid_t churn_spawn(unsigned int seed)
{
	pid_t pid = fork();

	if (pid == 0)
		churn_child(seed);
	return pid;
}

static void churn_run(void)
{
	int i, status, done = 0, failed = 0, filled = 0, ret = -1;
	pid_t pids[CHURN_PROCS];
	uint64_t t0 = now_ms();
	uint8_t *page = aligned_alloc(PAGE, PAGE);
	uint32_t id;
	int fd;

	for (i = 0; i < CHURN_PROCS; i++)
		pids[i] = churn_spawn(0x5eed + i);
	sleep_ms(300);
	for (i = 0; i < 2; i++) {		/* kill two mid-run, with mappings live */
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		pids[i] = churn_spawn(0xbeef + i);
	}
	while (done < CHURN_PROCS && now_ms() - t0 < 180000) {
		for (i = 0; i < CHURN_PROCS; i++) {
			if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			pids[i] = 0;
			done++;
			if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
				failed++;
			else
				filled += WEXITSTATUS(status);
		}
		sleep_ms(20);
	}
	for (i = 0; i < CHURN_PROCS; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	CHECK(churn_checks[0], done == CHURN_PROCS && !failed, "%d of %d finished, %d failed, %" PRIu64 " ms",
	      done, CHURN_PROCS, failed, now_ms() - t0);
	if (boot_has("force"))
		CHECK(churn_checks[1], filled > 0 && !failed, "%d processes saw ENOMEM", filled);
	else
		printf("ok - %s # SKIP not under swiotlb=force\n", churn_checks[1]);

	fd = raw_open(0);
	if (fd >= 0 && page) {
		memset(page, 1, PAGE);
		ret = raw_umem_map(fd, page, PAGE, PCIDRIVER_UMEM_TO_DEVICE, &id);
	}
	CHECK(churn_checks[2], stat_long(0, "umem_count") == (ret ? 0 : 1) && !ret,
	      "umem_count %ld, fresh map %s", stat_long(0, "umem_count"), errname(ret));
	if (fd >= 0)
		close(fd);
	free(page);
}

const struct pdt_group grp_churn = { "churn", churn_checks, churn_run };
