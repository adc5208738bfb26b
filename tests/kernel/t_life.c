// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest groups about ownership and lifetime: ownership, lifetime (close, kill -9, mmap
 * keeping memory alive), unpriv (setuid to a non-root user, RLIMIT_MEMLOCK), unbind (while a
 * file is open, mapped and waiting), reload and unload of the module.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdtest.h"

#define FPGA_GID	1000	/* plays the role of group "fpga" of the udev rule */
#define FPGA_UID	1000
#define OTHER_ID	1001

static int all_released(unsigned int minor)
{
	return stat_long(minor, "kmem_count") == 0 && stat_long(minor, "kmem_bytes") == 0 &&
	       stat_long(minor, "umem_count") == 0 && stat_long(minor, "umem_pinned_bytes") == 0;
}

static void diag_counts(unsigned int minor)
{
	pdt_diag("fpga%u: kmem %ld (%ld bytes), umem %ld (%ld bytes pinned)", minor,
		 stat_long(minor, "kmem_count"), stat_long(minor, "kmem_bytes"),
		 stat_long(minor, "umem_count"), stat_long(minor, "umem_pinned_bytes"));
}

static int raw_mem_id(int fd, unsigned long cmd, uint32_t id)
{
	struct pcidriver_mem_id req = { .argsz = sizeof(req), .id = id };

	return raw_ioctl(fd, cmd, &req);
}

static int raw_sync(int fd, uint32_t id, uint32_t flags)
{
	struct pcidriver_umem_sync req = { .argsz = sizeof(req), .flags = flags, .id = id };

	return raw_ioctl(fd, PCIDRIVER_UMEM_SYNC, &req);
}

static int raw_sglist(int fd, uint32_t id)
{
	struct pcidriver_sg_entry e[4];
	struct pcidriver_umem_sglist req = {
		.argsz = sizeof(req), .id = id, .count = 4, .entries = (uintptr_t)e,
	};

	return raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, &req);
}

/* mmap of kmem id through fd: 0 (and unmapped again) or -errno */
static int raw_mmap_kmem(int fd, uint32_t id, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)PCIDRIVER_MMAP_KMEM(id));

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, len);
	return 0;
}

/* ---------------------------------------------------------------- ownership */

static const char *const ownership_checks[] = {
	"ownership: another process cannot free the kmem (ENOENT)",
	"ownership: another process cannot mmap the kmem (ENOENT)",
	"ownership: another process cannot unmap the umem (ENOENT)",
	"ownership: another process cannot sync it or read its SG list (ENOENT)",
	"ownership: another open file of the same process cannot free, unmap or mmap them",
	"ownership: the owner still uses both afterwards",
	NULL,
};

static void ownership_run(void)
{
	pd_device *dev;
	pd_kmem *km;
	pd_umem *um;
	uint32_t kid, uid;
	int status, fd, a, b, c, d;
	char *buf = malloc(8192);
	pid_t pid;

	if (pd_open("/dev/fpga0", &dev) || pd_kmem_alloc(dev, 4096, &km) ||
	    pd_umem_map(dev, buf, 8192, PD_DMA_BIDIRECTIONAL, &um))
		return;
	kid = pd_kmem_id(km);
	uid = pd_umem_id(um);

	pid = fork();
	if (pid == 0) {
		fd = raw_open(0);
		a = raw_mem_id(fd, PCIDRIVER_KMEM_FREE, kid);
		CHECK(ownership_checks[0], a == -ENOENT, "%s", errname(a));
		a = raw_mmap_kmem(fd, kid, 4096);
		CHECK(ownership_checks[1], a == -ENOENT, "%s", errname(a));
		a = raw_mem_id(fd, PCIDRIVER_UMEM_UNMAP, uid);
		CHECK(ownership_checks[2], a == -ENOENT, "%s", errname(a));
		a = raw_sync(fd, uid, PCIDRIVER_SYNC_FOR_CPU);
		b = raw_sglist(fd, uid);
		CHECK(ownership_checks[3], a == -ENOENT && b == -ENOENT, "%s %s", errname(a),
		      errname(b));
		_exit(0);
	}
	waitpid(pid, &status, 0);

	fd = raw_open(0);
	a = raw_mem_id(fd, PCIDRIVER_KMEM_FREE, kid);
	b = raw_mem_id(fd, PCIDRIVER_UMEM_UNMAP, uid);
	c = raw_mmap_kmem(fd, kid, 4096);
	d = raw_sync(fd, uid, PCIDRIVER_SYNC_FOR_DEVICE);
	close(fd);
	CHECK(ownership_checks[4], a == -ENOENT && b == -ENOENT && c == -ENOENT && d == -ENOENT,
	      "%s %s %s %s", errname(a), errname(b), errname(c), errname(d));

	memset(pd_kmem_ptr(km), 0x5a, 4096);
	a = pd_umem_sync(um, PD_SYNC_FOR_CPU);
	b = pd_umem_unmap(um);
	c = pd_kmem_free(km);
	CHECK(ownership_checks[5], !a && !b && !c && all_released(0), "%s %s %s", errname(a),
	      errname(b), errname(c));
	pd_close(dev);
	free(buf);
}

const struct pdt_group grp_ownership = { "ownership", ownership_checks, ownership_run };

/* ---------------------------------------------------------------- lifetime */

static const char *const lifetime_checks[] = {
	"lifetime: an mmap keeps a freed kmem allocated until munmap",
	"lifetime: the freed kmem stays readable and writable while mapped",
	"lifetime: process exit without pd_close releases kmem and umem",
	"lifetime: kill -9 releases kmem, umem and a blocked waiter",
	"lifetime: kill -9 storm of 16 busy processes leaves nothing allocated or pinned",
	"lifetime: the module refuses to unload while a file is open",
	NULL,
};

/* A child that allocates, tells the parent, then waits for an interrupt forever. */
static void holder(int ready_fd)
{
	pd_device *dev;
	pd_kmem *km;
	pd_umem *um;
	void *buf = malloc(64 << 10);

	if (pd_open("/dev/fpga0", &dev) || pd_kmem_alloc(dev, 64 << 10, &km) ||
	    pd_umem_map(dev, buf, 64 << 10, PD_DMA_FROM_DEVICE, &um))
		_exit(1);
	memset(pd_kmem_ptr(km), 1, 64 << 10);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	pd_irq_wait(dev, 0, PD_WAIT_FOREVER);
	_exit(0);
}

/*
 * A child that keeps four handles, each with a mapped BAR, a kmem and a umem, replacing one
 * per round (alloc, map, pin, free in varying order) and touching every mapping it holds,
 * until killed. After an unbind its next touch of a revoked mapping raises SIGBUS.
 */
static void churner(const char *path, unsigned int seed)
{
	struct held {
		pd_device *dev;
		struct pd_regs regs;
		pd_kmem *km;
		pd_umem *um;
	} held[4];
	/* eight 64 KiB slots, a mapping's in slot it % 8: the four live ones never share a
	 * cache line (overlapping device-writable mappings break the DMA API's rules) */
	char *buf = malloc(8 * (64 << 10));
	unsigned int it, k, j;
	struct held *h;

	memset(held, 0, sizeof(held));
	for (it = 0;; it++) {
		struct held n = { 0 };

		seed = seed * 1103515245 + 12345;
		if (!pd_open(path, &n.dev)) {
			if (pd_regs_get(n.dev, 0, &n.regs))
				n.regs.mmio = NULL;
			if (pd_kmem_alloc(n.dev, 4096 << (seed % 4), &n.km))
				n.km = NULL;
			if (pd_umem_map(n.dev, buf + (it % 8) * (64 << 10) + seed % 4096,
					16384 + seed % 30000, PD_DMA_BIDIRECTIONAL, &n.um))
				n.um = NULL;
			/* replace a held handle (the new one is open: never hold nothing) */
			h = &held[it % 4];
			if (h->dev) {
				if (h->km && (seed & 0x10))
					pd_kmem_free(h->km);
				if (h->um && (seed & 0x20))
					pd_umem_unmap(h->um);
				pd_close(h->dev);	/* releases whatever is left */
			}
			*h = n;
		} else {
			sleep_ms(1);
		}
		for (k = 0; k < 4; k++) {
			for (j = 0; j < 16; j++) {
				if (held[k].regs.mmio &&
				    pd_reg_read32(&held[k].regs, EDU_ID) != 0x010000ed)
					_exit(4);
				if (held[k].km)
					((volatile uint8_t *)pd_kmem_ptr(held[k].km))[j * 64] = (uint8_t)j;
			}
		}
	}
}

static void lifetime_run(void)
{
	struct pcidriver_kmem_alloc ka = { .argsz = sizeof(ka), .size = 8192 };
	pid_t pids[16];
	int fd, ret, ret2, status, pipefd[2], i, ok;
	uint8_t *p;
	long c1, c2;
	char c;

	/* raw: mmap, free the ID, use, munmap */
	fd = raw_open(0);
	ret = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &ka);
	p = ret ? MAP_FAILED : mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				    (off_t)ka.mmap_offset);
	if (p != MAP_FAILED)
		memset(p, 0x77, 8192);
	ret2 = raw_mem_id(fd, PCIDRIVER_KMEM_FREE, ka.id);
	c1 = stat_long(0, "kmem_count");
	ok = p != MAP_FAILED;
	if (ok) {
		p[100] = 0x11;
		ok = p[100] == 0x11 && p[8191] == 0x77 && p[0] == 0x77;
	}
	ret = ret ? ret : raw_mem_id(fd, PCIDRIVER_KMEM_FREE, ka.id);
	if (p != MAP_FAILED)
		munmap(p, 8192);
	c2 = stat_long(0, "kmem_count");
	CHECK(lifetime_checks[0], !ret2 && ret == -ENOENT && c1 == 1 && c2 == 0,
	      "free %s, second free %s, count %ld then %ld", errname(ret2), errname(ret), c1, c2);
	CHECK(lifetime_checks[1], ok, "mapping unusable");
	close(fd);

	/* exit without pd_close */
	if (pipe(pipefd))
		return;
	pids[0] = fork();
	if (pids[0] == 0) {
		pd_device *dev;
		pd_kmem *km;
		pd_umem *um;
		void *buf = malloc(32768);

		if (pd_open("/dev/fpga0", &dev) || pd_kmem_alloc(dev, 32768, &km) ||
		    pd_umem_map(dev, buf, 32768, PD_DMA_TO_DEVICE, &um))
			_exit(1);
		_exit(stat_long(0, "kmem_count") == 1 && stat_long(0, "umem_count") == 1 ? 0 : 2);
	}
	waitpid(pids[0], &status, 0);
	CHECK(lifetime_checks[2], WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	      all_released(0), "child status %#x", status);
	if (!all_released(0))
		diag_counts(0);

	/* kill -9 while blocked in the wait ioctl */
	pids[0] = fork();
	if (pids[0] == 0)
		holder(pipefd[1]);
	ret = read(pipefd[0], &c, 1) == 1;
	ok = ret && stat_long(0, "kmem_count") == 1 && stat_long(0, "umem_count") == 1;
	sleep_ms(100);
	kill(pids[0], SIGKILL);
	waitpid(pids[0], &status, 0);
	CHECK(lifetime_checks[3], ok && WIFSIGNALED(status) && all_released(0),
	      "held %d, status %#x", ok, status);
	if (!all_released(0))
		diag_counts(0);

	/* storm */
	for (i = 0; i < 16; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			churner("/dev/fpga0", i * 7919 + 1);
	}
	for (i = 0; i < 16; i++) {
		sleep_ms(20 + (i * 37) % 60);
		kill(pids[i], SIGKILL);
	}
	ok = 1;
	for (i = 0; i < 16; i++) {
		waitpid(pids[i], &status, 0);
		ok &= WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	}
	CHECK(lifetime_checks[4], ok && all_released(0), "all killed %d", ok);
	if (!all_released(0))
		diag_counts(0);

	fd = raw_open(0);
	ret = module_unload();
	close(fd);
	CHECK(lifetime_checks[5], ret == -EWOULDBLOCK || ret == -EBUSY, "%s", errname(ret));
}

const struct pdt_group grp_lifetime = { "lifetime", lifetime_checks, lifetime_run };

/* ---------------------------------------------------------------- unpriv */

static const char *const unpriv_checks[] = {
	"unpriv: a member of the device group opens /dev/fpga0 (mode 0660)",
	"unpriv: reads config space",
	"unpriv: reads config space beyond the 64 bytes sysfs shows it (the whole 256)",
	"unpriv: a config write fails with EPERM",
	"unpriv: umem within RLIMIT_MEMLOCK (64 KiB) works",
	"unpriv: umem beyond RLIMIT_MEMLOCK fails with ENOMEM",
	"unpriv: kmem is charged to the same limit (ENOMEM beyond it)",
	"unpriv: unmap and free return the charge",
	"unpriv: BAR registers work",
	"unpriv: a user outside the group cannot open the device (EACCES)",
	NULL,
};

static void unpriv_child(void)
{
	uint8_t cfg[64], cfg_all[256], *buf = NULL;
	uint16_t cmd = 0;
	struct pd_regs regs;
	pd_device *dev;
	pd_kmem *km = NULL, *km2 = NULL;
	pd_umem *um = NULL, *um2 = NULL;
	int a, b, c;

	drop_privileges(FPGA_UID, FPGA_GID);
	if (posix_memalign((void **)&buf, 4096, 256 << 10))
		_exit(1);
	a = pd_open("/dev/fpga0", &dev);
	CHECK(unpriv_checks[0], !a && getuid() == FPGA_UID, "%s uid %d", errname(a), getuid());
	if (a)
		_exit(1);
	a = pd_cfg_read(dev, 0, cfg, sizeof(cfg));
	CHECK(unpriv_checks[1], !a && cfg[0] == 0x34 && cfg[1] == 0x12, "%s", errname(a));
	a = pd_cfg_read(dev, 0, cfg_all, sizeof(cfg_all));
	CHECK(unpriv_checks[2], !a && !memcmp(cfg_all, cfg, sizeof(cfg)) &&
	      cfg_all[0x34] >= 0x40 && cfg_all[0x34] < 0xff,
	      "%s, capability pointer %#x", errname(a), cfg_all[0x34]);
	a = pd_cfg_read(dev, 4, &cmd, 2);
	b = a ? a : pd_cfg_write(dev, 4, &cmd, 2);
	CHECK(unpriv_checks[3], b == -EPERM, "%s", errname(b));

	a = pd_umem_map(dev, buf, 32 << 10, PD_DMA_BIDIRECTIONAL, &um);
	CHECK(unpriv_checks[4], !a, "%s", errname(a));
	b = pd_umem_map(dev, buf + (64 << 10), 128 << 10, PD_DMA_TO_DEVICE, &um2);
	CHECK(unpriv_checks[5], b == -ENOMEM, "%s", errname(b));
	a = pd_kmem_alloc(dev, 48 << 10, &km);		/* 32 + 48 > 64 KiB */
	b = pd_kmem_alloc(dev, 16 << 10, &km2);		/* 32 + 16 <= 64 KiB */
	CHECK(unpriv_checks[6], a == -ENOMEM && !b, "%s %s", errname(a), errname(b));

	a = um ? pd_umem_unmap(um) : -EINVAL;
	b = km2 ? pd_kmem_free(km2) : -EINVAL;
	um = NULL;
	c = pd_umem_map(dev, buf, 60 << 10, PD_DMA_TO_DEVICE, &um);
	CHECK(unpriv_checks[7], !a && !b && !c && vm_pin_kb() == 60, "%s %s %s VmPin %ld kB",
	      errname(a), errname(b), errname(c), vm_pin_kb());
	if (um)
		pd_umem_unmap(um);

	a = pd_regs_get(dev, 0, &regs);
	CHECK(unpriv_checks[8], !a && pd_reg_read32(&regs, EDU_ID) == 0x010000ed, "%s",
	      errname(a));
	pd_close(dev);
	_exit(0);
}

static void unpriv_run(void)
{
	int status, fd;
	pid_t pid;

	/* what the udev rule does: GROUP="fpga", MODE="0660" */
	if (chown("/dev/fpga0", 0, FPGA_GID) || chmod("/dev/fpga0", 0660))
		pdt_diag("chown/chmod /dev/fpga0: %s", errname(errno));

	pid = fork();
	if (pid == 0)
		unpriv_child();
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		pdt_diag("unprivileged child: status %#x", status);

	pid = fork();
	if (pid == 0) {
		drop_privileges(OTHER_ID, OTHER_ID);
		fd = raw_open(0);
		CHECK(unpriv_checks[9], fd == -EACCES, "%s", errname(fd));
		_exit(0);
	}
	waitpid(pid, &status, 0);
}

const struct pdt_group grp_unpriv = { "unpriv", unpriv_checks, unpriv_run };

/* ---------------------------------------------------------------- unbind */

static const char *const unbind_checks[] = {
	"unbind: fpga1 unbinds while a file is open, mapped and waiting",
	"unbind: the blocked waiter returns ENODEV",
	"unbind: ioctls on the open file fail with ENODEV",
	"unbind: the mapped BAR faults (SIGBUS) instead of reaching the device",
	"unbind: the mapped kmem faults (SIGBUS)",
	"unbind: a new mmap fails with ENODEV",
	"unbind: its DMA memory was released and unpinned at unbind",
	"unbind: rebinding gives a working /dev/fpga1 while the old file is open",
	"unbind: the old files close cleanly afterwards",
	"unbind: under 8 busy processes (alloc, mmap, pin, register reads) each gets SIGBUS",
	NULL,
};

struct unbind_waiter {
	pd_device *dev;
	int result;
};

static void *unbind_wait_thread(void *arg)
{
	struct unbind_waiter *w = arg;

	w->result = pd_irq_wait(w->dev, 0, PD_WAIT_FOREVER);
	return NULL;
}

static void unbind_run(void)
{
	struct unbind_waiter w = { .result = 1 };
	struct pd_regs regs, regs2;
	struct pd_info info;
	pd_device *dev, *dev2;
	pd_kmem *km, *km2 = NULL;
	pd_umem *um;
	pthread_t thr;
	uint32_t v = 0;
	uint8_t cfg[4];
	void *buf = NULL, *p;
	int fd, ret, a, b, c, d, e, i, ok, status;
	long pin_before, pin_after;
	pid_t pids[8];

	if (posix_memalign(&buf, 4096, 16384) || pd_open("/dev/fpga1", &dev) || pd_info(dev, &info) || pd_regs_get(dev, 0, &regs) ||
	    pd_kmem_alloc(dev, 8192, &km) ||
	    pd_umem_map(dev, buf, 16384, PD_DMA_BIDIRECTIONAL, &um))
		return;
	fd = raw_open(1);
	memset(pd_kmem_ptr(km), 0x42, 8192);
	pin_before = vm_pin_kb();
	w.dev = dev;
	pthread_create(&thr, NULL, unbind_wait_thread, &w);
	sleep_ms(200);

	ret = sysfs_write("/sys/bus/pci/drivers/pcidriver/unbind", info.name);
	CHECK(unbind_checks[0], !ret && !wait_node(1, 0, 2000), "unbind %s", errname(ret));

	pthread_join(thr, NULL);
	CHECK(unbind_checks[1], w.result == -ENODEV, "%d", w.result);

	a = pd_cfg_read(dev, 0, cfg, 4);
	b = pd_kmem_alloc(dev, 4096, &km2);
	c = pd_umem_sync(um, PD_SYNC_FOR_CPU);
	d = pd_irq_wait(dev, 0, 0);
	e = raw_ioctl(fd, PCIDRIVER_GET_API_VERSION, NULL);
	CHECK(unbind_checks[2], a == -ENODEV && b == -ENODEV && c == -ENODEV && d == -ENODEV &&
	      e == -ENODEV, "%s %s %s %s %s", errname(a), errname(b), errname(c), errname(d),
	      errname(e));

	a = probe_read32((volatile uint32_t *)regs.mmio, &v);
	CHECK(unbind_checks[3], a == -1, "read %#x", v);
	a = probe_read32(pd_kmem_ptr(km), &v);
	CHECK(unbind_checks[4], a == -1, "read %#x", v);

	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)PCIDRIVER_MMAP_BAR(0));
	a = p == MAP_FAILED ? -errno : 0;
	CHECK(unbind_checks[5], a == -ENODEV, "%s", errname(a));

	pin_after = vm_pin_kb();
	CHECK(unbind_checks[6], pin_before == 8 + 16 && pin_after == 0,
	      "VmPin %ld kB before, %ld kB after", pin_before, pin_after);

	ret = sysfs_write("/sys/bus/pci/drivers_probe", info.name);
	a = wait_node(1, 1, 2000);
	b = a ? a : pd_open("/dev/fpga1", &dev2);
	if (!b) {
		c = pd_regs_get(dev2, 0, &regs2);
		v = c ? 0 : pd_reg_read32(&regs2, EDU_ID);
		pd_close(dev2);
	}
	CHECK(unbind_checks[7], !ret && !b && v == 0x010000ed, "bind %s open %s id %#x",
	      errname(ret), errname(b), v);

	close(fd);
	pd_close(dev);	/* unmaps and frees what it still tracks: all fail with ENODEV */
	CHECK(unbind_checks[8], all_released(1) && vm_pin_kb() == 0, "VmPin %ld", vm_pin_kb());
	free(buf);

	/* every busy process holds live mappings, so each must die of SIGBUS once they are revoked */
	for (i = 0; i < 8; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			churner("/dev/fpga1", i * 104729 + 3);
	}
	sleep_ms(400);
	ret = sysfs_write("/sys/bus/pci/drivers/pcidriver/unbind", info.name);
	sleep_ms(300);
	ok = !ret;
	for (i = 0, c = 0; i < 8; i++) {
		if (waitpid(pids[i], &status, WNOHANG) == 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
		}
		c += WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
	}
	ok &= c == 8;
	a = sysfs_write("/sys/bus/pci/drivers_probe", info.name);
	b = wait_node(1, 1, 2000);
	CHECK(unbind_checks[9], ok && !a && !b && all_released(1),
	      "unbind %s, %d of 8 got SIGBUS, rebind %s/%s", errname(ret), c, errname(a),
	      errname(b));
}

const struct pdt_group grp_unbind = { "unbind", unbind_checks, unbind_run };

/* ---------------------------------------------------------------- reload / unload */

static const char *const reload_checks[] = {
	"reload: rmmod with both devices bound and no file open",
	"reload: the device nodes and class devices are gone",
	"reload: insmod disable_msi=1 binds both devices again (driver_override)",
	NULL,
};

static void reload_run(void)
{
	int ret = module_unload(), a;

	CHECK(reload_checks[0], !ret, "%s", errname(ret));
	a = !wait_node(0, 0, 2000) && !wait_node(1, 0, 2000) &&
	    access("/sys/class/pcidriver", F_OK) != 0;
	CHECK(reload_checks[1], a, "still present");
	ret = module_load("dma_bits=28 disable_msi=1");
	a = !ret && !wait_node(0, 1, 3000) && !wait_node(1, 1, 3000);
	CHECK(reload_checks[2], a, "finit_module %s", errname(ret));
}

const struct pdt_group grp_reload = { "reload", reload_checks, reload_run };

static const char *const unload_checks[] = {
	"unload: rmmod with devices bound leaves no device node",
	NULL,
};

static void unload_run(void)
{
	int ret = module_unload();

	CHECK(unload_checks[0], !ret && !wait_node(0, 0, 2000) && count_devices() == 0, "%s",
	      errname(ret));
}

const struct pdt_group grp_unload = { "unload", unload_checks, unload_run };
