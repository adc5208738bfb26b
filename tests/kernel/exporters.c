// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest: dma-bufs from the exporters a guest kernel may have, for the dmabuf and reach groups.
 * udmabuf and the system DMA-BUF heap are built into Debian's 6.12 (and the debug build of
 * 6.1); vgem is a module in both, which run-qemu-tests.sh packs into /vgem where the kernel
 * has it uncompressed (Debian's 6.1). vgem's two ioctls are declared here: their layout is
 * DRM's stable uapi, and the guest needs no libdrm.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <linux/dma-heap.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "pdtest.h"

int raw_import(int fd, int dmabuf_fd, uint32_t flags, uint32_t reserved)
{
	struct pcidriver_dmabuf_import req = {
		.argsz = sizeof(req), .flags = flags, .fd = dmabuf_fd, .__reserved = reserved,
	};

	return raw_ioctl(fd, PCIDRIVER_DMABUF_IMPORT, &req);
}

int udmabuf_over(int memfd, uint64_t offset, size_t size)
{
	struct udmabuf_create c = {
		.memfd = (uint32_t)memfd, .flags = UDMABUF_FLAGS_CLOEXEC, .offset = offset, .size = size,
	};
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC), fd;

	if (dev < 0)
		return -errno;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	fd = fd < 0 ? -errno : fd;
	close(dev);
	return fd;
}

int udmabuf_new(size_t size, int *memfd)
{
	int mfd, fd;

	if (access("/dev/udmabuf", F_OK))
		return -errno;
	mfd = memfd_create("pdtest-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	if (ftruncate(mfd, (off_t)size) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		fd = -errno;
		close(mfd);
		return fd;
	}
	fd = udmabuf_over(mfd, 0, size);
	if (fd < 0)
		close(mfd);
	else
		*memfd = mfd;
	return fd;
}

int heap_new(size_t size, int writable)
{
	struct dma_heap_allocation_data a = {
		.len = size, .fd_flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC), ret;

	if (heap < 0)
		return -errno;
	ret = ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a) ? -errno : (int)a.fd;
	close(heap);
	return ret;
}

/* DRM's uapi (include/uapi/drm/drm.h, drm_mode.h): dumb buffers and PRIME export */
struct pdt_drm_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};
struct pdt_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};
#define PDT_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xB2, struct pdt_drm_create_dumb)
#define PDT_DRM_IOCTL_PRIME_HANDLE_TO_FD _IOWR('d', 0x2d, struct pdt_drm_prime_handle)

/* /dev/dri/card0 of vgem, loading it (and what it needs) from /vgem on first use; or -errno. */
static int vgem_card(void)
{
	static const char *const mods[] = { "drm", "drm_shmem_helper", "vgem" };
	static int card = -ENOENT, tried;
	char path[64];
	unsigned int i;
	int fd;

	if (tried)
		return card;
	tried = 1;
	for (i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		snprintf(path, sizeof(path), "/vgem/%s.ko", mods[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return card;	/* not packed for this kernel */
		if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST) {
			card = -errno;
			close(fd);
			return card;
		}
		close(fd);
	}
	for (i = 0; i < 100 && access("/dev/dri/card0", F_OK); i++)
		sleep_ms(10);
	card = open("/dev/dri/card0", O_RDWR | O_CLOEXEC);
	card = card < 0 ? -errno : card;
	return card;
}

int vgem_new(size_t size, int writable)
{
	struct pdt_drm_create_dumb d = { .height = size / 4096, .width = 1024, .bpp = 32 };
	struct pdt_drm_prime_handle h = { .flags = O_CLOEXEC | (writable ? O_RDWR : 0) };
	int card = vgem_card();

	if (card < 0)
		return card;
	if (ioctl(card, PDT_DRM_IOCTL_MODE_CREATE_DUMB, &d))
		return -errno;
	h.handle = d.handle;
	if (ioctl(card, PDT_DRM_IOCTL_PRIME_HANDLE_TO_FD, &h))
		return -errno;
	return h.fd;	/* the GEM handle lives as long as the card is open: one per group */
}

int boot_has(const char *word)
{
	char cmdline[1024] = "";

	if (read_file("/proc/cmdline", cmdline, sizeof(cmdline) - 1) <= 0)
		return 0;
	return strstr(cmdline, word) != NULL;
}

int kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma < major || (ma == major && mi < minor);
}
