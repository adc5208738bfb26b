// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group dmabuf: PCIDRIVER_DMABUF_IMPORT of memory other drivers export. udmabuf
 * (memfd-backed) and the system DMA-BUF heap exist in Linux 6.12 as Debian builds it, not in
 * 6.1: there the checks that need one report SKIP with the reason, and the ones on bad fds run.
 * Data moves through edu's DMA engine per SG entry and is compared byte for byte through the
 * memfd or the dma-buf's own mmap; under swiotlb=force that needs the import's syncs.
 * Attachments are counted in debugfs (dma_buf/bufinfo lists the attached devices by name).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mprace/mprace.h"
#include "mprace-spec/pattern.h"
#include "vboard/vboard.h"
#include "pdtest.h"

#define PAGE		4096UL
#define SRC_SIZE	(5 * PAGE)
#define DST_SIZE	(6 * PAGE)
#define FPGA_UID	1000	/* as in t_life.c: a member of the device's group */

static const char *const dmabuf_checks[] = {
	"dmabuf: importing a file that is no dma-buf (a memfd) fails with EINVAL",
	"dmabuf: importing a closed fd fails with EBADF; no direction, unknown flags, a reserved field or a short argsz with EINVAL",
	"dmabuf: import a 5-page udmabuf (memfd-backed) for the device to read and a 6-page one for it to write",
	"dmabuf: their SG lists cover exactly the dma-bufs, within max segment size and DMA mask",
	"dmabuf: sysfs counts the imports; debugfs shows the device attached",
	"dmabuf: edu DMA per SG entry, udmabuf -> device -> udmabuf, byte for byte through the memfds",
	"dmabuf: the destination's page beyond the copy is untouched",
	"dmabuf: system heap buffer: edu DMA into it, byte for byte through the dma-buf's mmap",
	"dmabuf: another open file cannot unmap an import (ENOENT); a second unmap fails with ENOENT",
	"dmabuf: unmapping the imports returns the sysfs counts to zero and detaches the device",
	"dmabuf: kill -9 of a process with live imports detaches them all",
	"dmabuf: an unprivileged import beyond RLIMIT_MEMLOCK fails with ENOMEM, one within it works",
	"dmabuf: unbinding the device detaches a live import; its calls then fail with ENODEV",
	"dmabuf: the virtual board imports udmabufs: its C2H pattern lands in the memfd byte for byte, H2C from one passes its checker",
	"dmabuf: a dma-buf whose file is read-only (system heap; vgem exported without DRM_RDWR) fails with EACCES for the device to write or both, and imports for it to read; the same on the virtual board",
	"dmabuf: a system-heap buffer of 1 MiB pages fails with E2BIG under swiotlb=force (longer than a bounce buffer), and imports elsewhere",
	NULL,
};

/* Attachments of the device named `name` over every dma-buf (debugfs), -1 if unknown. */
static int attachments_of(const char *name)
{
	char line[256];
	int n = 0;
	FILE *f;

	mkdir("/sys/kernel/debug", 0755);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);	/* EBUSY when mounted */
	f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		n += line[0] == '\t' && !strcmp(line + 1, name);
	}
	fclose(f);
	return n;
}

static int sg_covers(pd_umem *um, size_t size)
{
	struct pd_sg_entry sg[64];
	uint64_t total = 0;
	int n = pd_umem_sglist(um, sg, 64), i;

	if (n <= 0 || (size_t)n != pd_umem_sg_count(um) || pd_umem_size(um) != size ||
	    pd_umem_ptr(um))
		return 0;
	for (i = 0; i < n; i++) {
		if (!sg[i].length || sg[i].length > 65536 ||
		    sg[i].bus_addr + sg[i].length > (1ULL << EDU_DMA_BITS))
			return 0;
		total += sg[i].length;
	}
	return total == size;
}

#define FIRST_WITHOUT_UDMABUF 14	/* the checks from here need no udmabuf */

static void skip_from(int first, const char *why)
{
	int i;

	for (i = first; i < FIRST_WITHOUT_UDMABUF; i++)
		printf("ok - %s # SKIP %s\n", dmabuf_checks[i], why);
}

/* A child that imports dma-buf fd on /dev/fpga0, says so on `ready` and waits to be killed. */
static pid_t importing_child(int fd, int ready)
{
	pid_t pid = fork();
	pd_device *dev;
	pd_umem *um;

	if (pid)
		return pid;
	if (pd_open("/dev/fpga0", &dev) || pd_dmabuf_import(dev, fd, PD_DMA_FROM_DEVICE, &um) ||
	    pd_dmabuf_import(dev, fd, PD_DMA_TO_DEVICE, &um))
		_exit(1);
	if (write(ready, "x", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

/* The unprivileged part: 0 when the big import fails with ENOMEM and the small one works. */
static int memlock_child(int big, int small)
{
	pid_t pid = fork();
	pd_device *dev;
	pd_umem *um;
	int status, a, b;

	if (pid == 0) {
		drop_privileges(FPGA_UID, FPGA_UID);
		if (pd_open("/dev/fpga0", &dev))
			_exit(4);
		a = pd_dmabuf_import(dev, big, PD_DMA_FROM_DEVICE, &um);
		b = pd_dmabuf_import(dev, small, PD_DMA_FROM_DEVICE, &um);
		if (a != -ENOMEM)
			printf("# memlock: the big import gave %s\n", errname(a));
		if (b)
			printf("# memlock: the small import gave %s\n", errname(b));
		fflush(stdout);
		_exit(a == -ENOMEM && !b ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The virtual board reaches a dma-buf through this process's mapping of it: a C2H of its
 * pattern generator into udmabuf c2h_fd must appear in the memfd c2h_mfd; the pattern written
 * into memfd h2c_mfd must pass its checker on the way back. 0, or what failed in *why.
 */
static int emu_round_trip(int c2h_fd, int c2h_mfd, int h2c_fd, int h2c_mfd, size_t size,
			  const char **why)
{
	const uint32_t seed = 0x5eed;
	mp_buffer *c2h = NULL, *h2c = NULL;
	mp_engine *eng = NULL;
	mp_board *board = NULL;
	uint32_t words = 0, errors = 0;
	uint8_t *p = MAP_FAILED, *q = MAP_FAILED;
	int ret;

	*why = "open emu:";
	ret = vboard_register();
	if (!ret)
		ret = mp_board_open("emu:", 0, &board);
	if (!ret) {
		*why = "import";
		ret = mp_buffer_import_dmabuf(board, c2h_fd, PD_DMA_FROM_DEVICE, &c2h);
	}
	if (!ret)
		ret = mp_buffer_import_dmabuf(board, h2c_fd, PD_DMA_TO_DEVICE, &h2c);
	if (!ret && (mp_buffer_kind(c2h) != MP_BUFFER_IMPORTED || mp_buffer_ptr(c2h) ||
		     mp_buffer_size(c2h) != size)) {
		*why = "kind, pointer or size of the import";
		ret = -EINVAL;
	}
	if (!ret) {
		*why = "engine";
		ret = mp_engine_open(board, NULL, &eng);
	}
	if (!ret)
		ret = mp_test_routing(board, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	if (!ret)
		ret = mp_patgen_seed(board, seed);
	if (!ret)
		ret = mp_checker_reset(board, seed);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, c2h_mfd, 0);
	q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h2c_mfd, 0);
	if (!ret && (p == MAP_FAILED || q == MAP_FAILED))
		ret = -errno;
	if (!ret) {
		memset(p, 0, size);
		mp_pattern_fill(q, size, 0, seed);
		*why = "C2H";
		ret = mp_dma_read(eng, c2h, 0, size, NULL);
	}
	if (!ret && mp_pattern_find_mismatch(p, size, 0, seed) >= 0) {
		*why = "C2H data in the memfd";
		ret = -EIO;
	}
	if (!ret) {
		*why = "H2C";
		ret = mp_dma_write(eng, h2c, 0, size, MP_DMA_EOP, NULL);
	}
	if (!ret)
		ret = mp_checker_read(board, &words, &errors);
	if (!ret && (words != size / 4 || errors)) {
		*why = "checker";
		ret = -EIO;
	}
	if (p != MAP_FAILED)
		munmap(p, size);
	if (q != MAP_FAILED)
		munmap(q, size);
	mp_engine_close(eng);
	mp_buffer_free(c2h);
	mp_buffer_free(h2c);
	mp_board_close(board);
	return ret;
}

/* A read-only dma-buf: the system heap's, else vgem's (Debian's 6.1 has no heap); or -errno. */
static int readonly_dmabuf(size_t size, const char **what)
{
	int fd = heap_new(size, 0);

	*what = "system heap";
	if (fd == -ENOENT) {
		*what = "vgem";
		fd = vgem_new(size, 0);
	}
	return fd;
}

static void dmabuf_readonly(int fd)
{
	const uint32_t to = PCIDRIVER_UMEM_TO_DEVICE, from = PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidriver_mem_id unmap = { .argsz = sizeof(unmap) };
	const char *what;
	int ro = readonly_dmabuf(4 * PAGE, &what), a, b, c, d = -1, e = -1;

	if (ro < 0) {
		printf("ok - %s # SKIP no exporter (%s: %s)\n", dmabuf_checks[14], what, errname(ro));
		return;
	}
	a = raw_import(fd, ro, from, 0);
	b = raw_import(fd, ro, from | to, 0);
	{
		struct pcidriver_dmabuf_import req = { .argsz = sizeof(req), .flags = to, .fd = ro };

		c = raw_ioctl(fd, PCIDRIVER_DMABUF_IMPORT, &req);
		unmap.id = req.id;
		if (!c)
			raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &unmap);
	}
	{	/* the virtual board keeps the same rule */
		pd_device *emu = NULL;
		pd_umem *um = NULL;

		if (!vboard_register() && !pd_open("emu:", &emu)) {
			d = pd_dmabuf_import(emu, ro, PD_DMA_FROM_DEVICE, &um);
			e = pd_dmabuf_import(emu, ro, PD_DMA_TO_DEVICE, &um);
			pd_close(emu);
		}
	}
	CHECK(dmabuf_checks[14], a == -EACCES && b == -EACCES && !c && d == -EACCES && !e,
	      "%s: FROM_DEVICE %s, both %s, TO_DEVICE %s; emu: FROM_DEVICE %s, TO_DEVICE %s",
	      what, errname(a), errname(b), errname(c), errname(d), errname(e));
	close(ro);
}

static void dmabuf_huge_pages(int fd)
{
	struct pcidriver_mem_id unmap = { .argsz = sizeof(unmap) };
	struct pcidriver_dmabuf_import req = { .argsz = sizeof(req) };
	int heap = heap_new(1 << 20, 1), ret, bounce = boot_has("force");

	if (heap < 0) {
		printf("ok - %s # SKIP no system DMA-BUF heap (%s)\n", dmabuf_checks[15],
		       errname(heap));
		return;
	}
	/* Mapped, the heap's 1 MiB segments exceed the device's 64 KiB max segment size, which
	 * DMA-API debugging reports (the exporter's doing, not the importer's) */
	mkdir("/sys/kernel/debug", 0755);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);	/* EBUSY when mounted */
	if (!bounce && !access("/sys/kernel/debug/dma-api", F_OK)) {
		printf("ok - %s # SKIP DMA-API debugging would report the exporter's segments\n",
		       dmabuf_checks[15]);
		close(heap);
		return;
	}
	req.flags = PCIDRIVER_UMEM_TO_DEVICE;
	req.fd = heap;
	ret = raw_ioctl(fd, PCIDRIVER_DMABUF_IMPORT, &req);
	if (!ret) {
		unmap.id = req.id;
		raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &unmap);
	}
	CHECK(dmabuf_checks[15], bounce ? ret == -E2BIG : !ret, "%s (swiotlb=force: %d)",
	      errname(ret), bounce);
	close(heap);
}

static void dmabuf_run(void)
{
	int fd = -1, fd2 = -1, plain = -1, mfd = -1, src_fd = -1, dst_mfd = -1, dst_fd = -1, heap_fd = -1;
	int big_fd = -1, big_mfd = -1, pipefd[2], ret, a, b, c, ops = 0, status;
	uint8_t *src = MAP_FAILED, *dst = MAP_FAILED, *heap = MAP_FAILED, *expect = NULL;
	pd_umem *us = NULL, *ud = NULL, *uh = NULL, *u1 = NULL;
	struct pd_info info, info1;
	struct pd_regs regs;
	pd_device *dev = NULL, *dev1 = NULL;
	size_t first = 0, nd, i, nguard = 0;
	struct dma_buf_sync sync;
	char ch;
	pid_t pid;

	fd = raw_open(0);
	plain = memfd_create("pdtest-plain", MFD_CLOEXEC);
	if (fd < 0 || plain < 0 || ftruncate(plain, PAGE))
		return;
	ret = raw_import(fd, plain, PCIDRIVER_UMEM_TO_DEVICE, 0);
	CHECK(dmabuf_checks[0], ret == -EINVAL, "%s", errname(ret));

	fd2 = dup(plain);
	close(fd2);
	a = raw_import(fd, fd2, PCIDRIVER_UMEM_TO_DEVICE, 0);
	b = raw_import(fd, plain, 0, 0);
	c = raw_import(fd, plain, PCIDRIVER_UMEM_TO_DEVICE | 0x4, 0);
	ret = raw_import(fd, plain, PCIDRIVER_UMEM_FROM_DEVICE, 1);
	{
		struct pcidriver_dmabuf_import req = {
			.argsz = offsetof(struct pcidriver_dmabuf_import, sg_count),
			.flags = PCIDRIVER_UMEM_TO_DEVICE, .fd = plain,
		};

		fd2 = raw_ioctl(fd, PCIDRIVER_DMABUF_IMPORT, &req);
	}
	CHECK(dmabuf_checks[1], a == -EBADF && b == -EINVAL && c == -EINVAL && ret == -EINVAL &&
	      fd2 == -EINVAL, "closed %s, no direction %s, unknown flag %s, reserved %s, argsz %s",
	      errname(a), errname(b), errname(c), errname(ret), errname(fd2));
	fd2 = -1;

	src_fd = udmabuf_new(SRC_SIZE, &mfd);
	if (src_fd == -ENOENT) {
		skip_from(2, "no /dev/udmabuf in this kernel (CONFIG_UDMABUF)");
		goto out;
	}
	dst_fd = udmabuf_new(DST_SIZE, &dst_mfd);
	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs) || pd_info(dev, &info))
		goto out;
	src = mmap(NULL, SRC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	dst = dst_fd < 0 ? MAP_FAILED :
	      mmap(NULL, DST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, dst_mfd, 0);
	expect = malloc(SRC_SIZE);
	if (src == MAP_FAILED || dst == MAP_FAILED || !expect)
		goto out;
	/* before the import: what the CPU writes into a buffer the device is to write may be
	 * lost once it is mapped (a bounce buffer holds the contents of mapping time) */
	memset(dst, 0xee, DST_SIZE);
	a = src_fd < 0 ? src_fd : pd_dmabuf_import(dev, src_fd, PD_DMA_TO_DEVICE, &us);
	b = dst_fd < 0 ? dst_fd : pd_dmabuf_import(dev, dst_fd, PD_DMA_FROM_DEVICE, &ud);
	CHECK(dmabuf_checks[2], !a && !b && pd_umem_id(us) && pd_umem_id(ud) != pd_umem_id(us),
	      "source %s, destination %s", errname(a), errname(b));
	if (a || b)
		goto out;
	CHECK(dmabuf_checks[3], sg_covers(us, SRC_SIZE) && sg_covers(ud, DST_SIZE),
	      "%zu and %zu entries, sizes %zu and %zu", pd_umem_sg_count(us),
	      pd_umem_sg_count(ud), pd_umem_size(us), pd_umem_size(ud));
	a = attachments_of(info.name);
	CHECK(dmabuf_checks[4], stat_long(0, "dmabuf_count") == 2 &&
	      stat_long(0, "dmabuf_bytes") == (long)(SRC_SIZE + DST_SIZE) &&
	      stat_long(0, "umem_count") == 0 && a == 2,
	      "count %ld bytes %ld umem %ld, %d attachments of %s", stat_long(0, "dmabuf_count"),
	      stat_long(0, "dmabuf_bytes"), stat_long(0, "umem_count"), a, info.name);

	/* written after the import: only the sync makes it visible through bounce buffers */
	fill(src, SRC_SIZE, 11);
	memcpy(expect, src, SRC_SIZE);
	ret = pd_umem_sync(us, PD_SYNC_FOR_DEVICE);
	if (!ret)
		ret = copy_through_edu(&regs, us, ud, SRC_SIZE, &ops);
	if (!ret)
		ret = pd_umem_sync(ud, PD_SYNC_FOR_CPU);
	nd = diff(expect, dst, SRC_SIZE, &first);
	CHECK(dmabuf_checks[5], !ret && !nd, "ret %s after %d DMAs, %zu bytes differ from %zu",
	      errname(ret), ops, nd, first);
	for (i = SRC_SIZE; i < DST_SIZE; i++)
		nguard += dst[i] != 0xee;
	CHECK(dmabuf_checks[6], !nguard, "%zu bytes beyond the copy changed", nguard);

	heap_fd = heap_new(16 * PAGE, 1);
	if (heap_fd < 0) {
		printf("ok - %s # SKIP no system DMA-BUF heap (%s)\n", dmabuf_checks[7],
		       errname(heap_fd));
	} else {
		heap = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, heap_fd, 0);
		ret = heap == MAP_FAILED ? -errno : 0;
		if (!ret) {
			memset(heap, 0x5a, 16 * PAGE);
			ret = pd_dmabuf_import(dev, heap_fd, PD_DMA_BIDIRECTIONAL, &uh);
		}
		if (!ret)
			ret = pd_umem_sync(uh, PD_SYNC_FOR_DEVICE);
		if (!ret)
			ret = copy_through_edu(&regs, us, uh, SRC_SIZE, &ops);
		if (!ret)
			ret = pd_umem_sync(uh, PD_SYNC_FOR_CPU);
		sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ;
		if (!ret && ioctl(heap_fd, DMA_BUF_IOCTL_SYNC, &sync))
			ret = -errno;
		nd = ret ? 0 : diff(expect, heap, SRC_SIZE, &first);
		for (i = SRC_SIZE, nguard = 0; !ret && i < 16 * PAGE; i++)
			nguard += heap[i] != 0x5a;
		sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
		ioctl(heap_fd, DMA_BUF_IOCTL_SYNC, &sync);
		CHECK(dmabuf_checks[7], !ret && !nd && !nguard && sg_covers(uh, 16 * PAGE),
		      "ret %s, %zu bytes differ from %zu, %zu beyond changed", errname(ret), nd,
		      first, nguard);
	}

	fd2 = raw_open(0);
	{
		struct pcidriver_mem_id req = { .argsz = sizeof(req), .id = pd_umem_id(us) };

		a = raw_ioctl(fd2, PCIDRIVER_UMEM_UNMAP, &req);
		b = pd_umem_sync(us, PD_SYNC_FOR_CPU);	/* still ours */
		c = raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &req);	/* nor another file of ours */
		ret = pd_umem_unmap(us);
		us = NULL;
		a = a == -ENOENT && !b && c == -ENOENT && !ret ? 0 : -1;
		b = raw_ioctl(fd, PCIDRIVER_UMEM_UNMAP, &req);
		req.id = pd_umem_id(ud);
		c = raw_ioctl(fd2, PCIDRIVER_UMEM_UNMAP, &req);
		CHECK(dmabuf_checks[8], !a && b == -ENOENT && c == -ENOENT,
		      "foreign unmap/own unmap %d, unmap again %s, foreign %s", a, errname(b),
		      errname(c));
	}
	a = pd_umem_unmap(ud);
	ud = NULL;
	b = uh ? pd_umem_unmap(uh) : 0;
	uh = NULL;
	c = attachments_of(info.name);
	CHECK(dmabuf_checks[9], !a && !b && stat_long(0, "dmabuf_count") == 0 &&
	      stat_long(0, "dmabuf_bytes") == 0 && c == 0,
	      "unmap %s/%s, count %ld, %d attachments left", errname(a), errname(b),
	      stat_long(0, "dmabuf_count"), c);

	/* kill -9 */
	ret = -1;
	if (!pipe(pipefd)) {
		pid = importing_child(dst_fd, pipefd[1]);
		a = read(pipefd[0], &ch, 1) == 1 ? 0 : -1;
		b = stat_long(0, "dmabuf_count");
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		c = attachments_of(info.name);
		CHECK(dmabuf_checks[10], !a && b == 2 && stat_long(0, "dmabuf_count") == 0 &&
		      c == 0, "child %s, %d imports while alive, %ld and %d attachments after",
		      a ? "failed" : "imported", b, stat_long(0, "dmabuf_count"), c);
		close(pipefd[0]);
		close(pipefd[1]);
	}

	/* RLIMIT_MEMLOCK 64 KiB: 1 MiB is over it, 5 pages within (the udev rule's group) */
	if (chown("/dev/fpga0", 0, FPGA_UID) || chmod("/dev/fpga0", 0660))
		pdt_diag("chown/chmod /dev/fpga0: %s", errname(errno));
	big_fd = udmabuf_new(256 * PAGE, &big_mfd);
	ret = big_fd < 0 ? big_fd : memlock_child(big_fd, src_fd);
	CHECK(dmabuf_checks[11], !ret && stat_long(0, "dmabuf_count") == 0,
	      "child %d, count %ld", ret, stat_long(0, "dmabuf_count"));

	/* removal: fpga1 is unbound with an import live, then bound again */
	if (pd_open("/dev/fpga1", &dev1) || pd_info(dev1, &info1))
		goto out;
	a = pd_dmabuf_import(dev1, dst_fd, PD_DMA_BIDIRECTIONAL, &u1);
	b = attachments_of(info1.name);
	ret = sysfs_write("/sys/bus/pci/drivers/pcidriver/unbind", info1.name);
	if (!ret)
		ret = wait_node(1, 0, 2000);
	c = attachments_of(info1.name);
	status = u1 ? pd_umem_sync(u1, PD_SYNC_FOR_CPU) : 0;
	CHECK(dmabuf_checks[12], !a && b == 1 && !ret && c == 0 && status == -ENODEV,
	      "import %s, %d attachments, unbind %s, %d attachments after, sync %s",
	      errname(a), b, errname(ret), c, errname(status));
	pd_close(dev1);	/* releases the handle; the kernel side is gone already */
	dev1 = NULL;
	if (sysfs_write("/sys/bus/pci/drivers_probe", info1.name) || wait_node(1, 1, 2000))
		pdt_diag("dmabuf: fpga1 did not come back");

	{
		const char *why = "";

		ret = emu_round_trip(src_fd, mfd, dst_fd, dst_mfd, SRC_SIZE, &why);
		CHECK(dmabuf_checks[13], !ret, "%s: %s", why, errname(ret));
	}
out:
	/* these two need no udmabuf: they run wherever an exporter exists */
	dmabuf_readonly(fd);
	dmabuf_huge_pages(fd);
	if (dev1)
		pd_close(dev1);
	if (dev)
		pd_close(dev);	/* unmaps what is left */
	if (src != MAP_FAILED)
		munmap(src, SRC_SIZE);
	if (dst != MAP_FAILED)
		munmap(dst, DST_SIZE);
	if (heap != MAP_FAILED)
		munmap(heap, 16 * PAGE);
	free(expect);
	for (i = 0; i < 10; i++) {
		int *fds[] = { &fd, &fd2, &plain, &mfd, &src_fd, &dst_mfd, &dst_fd, &heap_fd, &big_fd,
			       &big_mfd };

		if (*fds[i] >= 0)
			close(*fds[i]);
	}
}

const struct pdt_group grp_dmabuf = { "dmabuf", dmabuf_checks, dmabuf_run };
