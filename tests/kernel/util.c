// SPDX-License-Identifier: GPL-2.0
/* pdtest helpers: time, sysfs, raw file descriptors, fault probing, module loading, edu DMA. */
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pdtest.h"

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

const char *errname(int err)
{
	static char buf[24];

	switch (err < 0 ? -err : err) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ENOTTY: return "ENOTTY";
	case ENXIO: return "ENXIO";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EPROTO: return "EPROTO";
	case ERANGE: return "ERANGE";
	}
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

long vm_pin_kb(void)
{
	char buf[4096], *p;
	int n = read_file("/proc/self/status", buf, sizeof(buf) - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "VmPin:");
	return p ? strtol(p + 6, NULL, 10) : -1;
}

int read_file(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return (int)n;
}

long sysfs_long(const char *fmt, ...)
{
	char path[256], buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 0);
}

int sysfs_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

long stat_long(unsigned int minor, const char *attr)
{
	return sysfs_long("/sys/class/pcidriver/fpga%u/%s", minor, attr);
}

int count_devices(void)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "fpga", 4))
			n++;
	closedir(d);
	return n;
}

int raw_open(unsigned int minor)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/dev/fpga%u", minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int raw_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static sigjmp_buf probe_env;

static void probe_handler(int sig)
{
	siglongjmp(probe_env, sig);
}

int probe_read32(volatile uint32_t *p, uint32_t *val)
{
	struct sigaction sa = { .sa_handler = probe_handler }, old_bus, old_segv;
	int ret = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	if (sigsetjmp(probe_env, 1) == 0)
		*val = *p;
	else
		ret = -1;
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return ret;
}

int wait_node(unsigned int minor, int present, unsigned int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;
	char path[32];

	snprintf(path, sizeof(path), "/dev/fpga%u", minor);
	do {
		if ((access(path, F_OK) == 0) == !!present)
			return 0;
		sleep_ms(10);
	} while (now_ms() < end);
	return -ETIMEDOUT;
}

int module_load(const char *params)
{
	int fd = open(pdt_module_path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

int module_unload(void)
{
	return syscall(SYS_delete_module, "pcidriver", O_NONBLOCK) ? -errno : 0;
}

int bind_edu_devices(void)
{
	char path[300];
	struct dirent *e;
	int n = 0;
	DIR *d;

	d = opendir("/sys/bus/pci/devices");
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (sysfs_long("/sys/bus/pci/devices/%s/vendor", e->d_name) != EDU_VENDOR ||
		    sysfs_long("/sys/bus/pci/devices/%s/device", e->d_name) != EDU_DEVICE)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override", e->d_name);
		if (sysfs_write(path, "pcidriver"))
			continue;
		/* EBUSY-like errors when already bound are fine; count what is bound after */
		sysfs_write("/sys/bus/pci/drivers_probe", e->d_name);
		snprintf(path, sizeof(path), "/sys/bus/pci/drivers/pcidriver/%s", e->d_name);
		if (access(path, F_OK) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int edu_dma_wait(const struct pd_regs *r)
{
	uint64_t end = now_ms() + 3000;

	while (pd_reg_read32(r, EDU_DMA_CMD) & EDU_DMA_RUN) {
		if (now_ms() > end)
			return -ETIMEDOUT;
		sleep_ms(2);
	}
	return 0;
}

int edu_dma(const struct pd_regs *r, uint64_t bus, uint32_t buf_off, uint32_t len, int to_ram,
	    int irq)
{
	/* edu checks neither: a wrong range would make QEMU log or clamp, so refuse here */
	if (!len || buf_off > EDU_DMA_MAX || len > EDU_DMA_MAX - buf_off ||
	    bus + len > (1ULL << EDU_DMA_BITS))
		return -EINVAL;
	pd_reg_write32(r, to_ram ? EDU_DMA_SRC : EDU_DMA_DST, EDU_BUF + buf_off);
	pd_reg_write32(r, to_ram ? EDU_DMA_DST : EDU_DMA_SRC, (uint32_t)bus);
	pd_reg_write32(r, EDU_DMA_CNT, len);
	pd_reg_write32(r, EDU_DMA_CMD, EDU_DMA_RUN | (to_ram ? EDU_DMA_TO_RAM : 0) |
				       (irq ? EDU_DMA_IRQ : 0));
	return irq ? 0 : edu_dma_wait(r);
}

int find_pci(unsigned int vendor, unsigned int device, char *addr, size_t len)
{
	struct dirent *e;
	DIR *d = opendir("/sys/bus/pci/devices");
	int ret = -ENODEV;

	while (d && (e = readdir(d)))
		if (sysfs_long("/sys/bus/pci/devices/%s/vendor", e->d_name) == vendor &&
		    sysfs_long("/sys/bus/pci/devices/%s/device", e->d_name) == device) {
			snprintf(addr, len, "%s", e->d_name);
			ret = 0;
			break;
		}
	if (d)
		closedir(d);
	return ret;
}

/* The N of the fpgaN class device of a bound device, or -1. */
static int bound_minor(const char *addr)
{
	char path[320];
	struct dirent *e;
	int minor = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/pcidriver", addr);
	d = opendir(path);
	while (d && (e = readdir(d)))
		if (sscanf(e->d_name, "fpga%d", &minor) == 1)
			break;
	if (d)
		closedir(d);
	return minor;
}

int bind_pci(const char *addr)
{
	char path[320];
	int minor, ret;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override", addr);
	ret = sysfs_write(path, "pcidriver");
	if (!ret)
		ret = sysfs_write("/sys/bus/pci/drivers_probe", addr);
	minor = bound_minor(addr);
	if (ret || minor < 0)
		return ret ? ret : -ENODEV;
	return wait_node(minor, 1, 2000) ? -ETIMEDOUT : minor;
}

int unbind_pci(const char *addr)
{
	char path[320];
	int a, b;

	a = sysfs_write("/sys/bus/pci/drivers/pcidriver/unbind", addr);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override", addr);
	b = sysfs_write(path, "\n");
	return a ? a : b ? b : bound_minor(addr) < 0 ? 0 : -EBUSY;
}

void drop_privileges(uid_t uid, gid_t gid)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setgid(gid) || setuid(uid))
		_exit(3);
}
