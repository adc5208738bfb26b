/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pdtest: the guest side of the QEMU suite of pcidriver.ko (run-qemu-tests.sh boots it).
 *
 * Checks are grouped; every group declares the names of its checks up front, so that the host
 * knows the whole list (`pdtest --list GROUP...`) and can report a check that never ran (a
 * crash, a hang, an oops) as failed. Each group runs in its own process.
 *
 * Device logic (the edu device's registers, its DMA engine, acknowledging its interrupt) is
 * done here in user space through libpcidriver. Tests of the raw ioctl ABI (inputs the library
 * would refuse before they reach the kernel) use pcidriver_uapi.h on a plain file descriptor.
 */
#ifndef PDTEST_H
#define PDTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pcidriver/pcidriver.h"
#include "pcidriver_uapi.h"

struct pdt_group {
	const char *name;
	const char *const *checks;	/* NULL-terminated */
	void (*run)(void);
};

/* Report check `name` (it must be declared by the running group). fmt: diagnostic on failure. */
void pdt_check(const char *name, int cond, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void pdt_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(name, cond, ...) pdt_check(name, !!(cond), __VA_ARGS__)

extern const char *pdt_module_path;	/* --module: pcidriver.ko for load/reload groups */

/* ---- helpers (util.c) ---- */
uint64_t now_ms(void);
void sleep_ms(unsigned int ms);
const char *errname(int err);		/* "ENOENT" for 2 or -2 */
long sysfs_long(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int sysfs_write(const char *path, const char *value);
int read_file(const char *path, void *buf, size_t len);	/* bytes read or -errno */
long vm_pin_kb(void);			/* VmPin of this process in kB, -1 if unknown */
long stat_long(unsigned int minor, const char *attr);	/* /sys/class/pcidriver/fpgaN/attr */
int count_devices(void);		/* /dev/fpga* */
int raw_open(unsigned int minor);	/* open("/dev/fpgaN") or -errno */
int raw_ioctl(int fd, unsigned long cmd, void *arg);	/* 0/positive or -errno */
/* Reads *p; returns 0, or -1 if the access raised SIGBUS or SIGSEGV. */
int probe_read32(volatile uint32_t *p, uint32_t *val);
/* Wait for /dev/fpgaN to (dis)appear; 0 or -ETIMEDOUT. */
int wait_node(unsigned int minor, int present, unsigned int timeout_ms);
int module_load(const char *params);	/* finit_module(pdt_module_path) */
int module_unload(void);		/* delete_module("pcidriver", O_NONBLOCK) */
int bind_edu_devices(void);		/* driver_override + drivers_probe; number bound */
/* Become uid:gid with RLIMIT_MEMLOCK 64 KiB and no supplementary groups (_exit(3) on error). */
void drop_privileges(uid_t uid, gid_t gid);
/* Other devices: the PCI address of the first vendor:device (0 or -ENODEV); binding it to
 * pcidriver through driver_override (its minor, or -errno); unbinding it and clearing the
 * override (0 or -errno). */
int find_pci(unsigned int vendor, unsigned int device, char *addr, size_t len);
int bind_pci(const char *addr);
int unbind_pci(const char *addr);

/* ---- dma-buf exporters (exporters.c); each returns a dma-buf fd or -errno ---- */
int raw_import(int fd, int dmabuf_fd, uint32_t flags, uint32_t reserved);	/* 0 or -errno */
int udmabuf_new(size_t size, int *memfd);	/* over a new sealed memfd, returned in *memfd */
int udmabuf_over(int memfd, uint64_t offset, size_t size);	/* over part of a memfd */
int heap_new(size_t size, int writable);	/* the system heap; read-only file unless writable */
int vgem_new(size_t size, int writable);	/* a vgem dumb buffer, exported RDWR or read-only */
int boot_has(const char *word);			/* the kernel command line holds word */
int kernel_before(int major, int minor);	/* the running kernel is older than major.minor */

/* ---- the edu device (QEMU docs/specs/edu.rst) ---- */
#define EDU_VENDOR	0x1234
#define EDU_DEVICE	0x11e8
#define EDU_ID		0x00
#define EDU_LIVE	0x04
#define EDU_IRQ_STATUS	0x24
#define EDU_IRQ_RAISE	0x60
#define EDU_IRQ_ACK	0x64
#define EDU_DMA_SRC	0x80
#define EDU_DMA_DST	0x88
#define EDU_DMA_CNT	0x90
#define EDU_DMA_CMD	0x98
#define EDU_DMA_RUN	0x1
#define EDU_DMA_TO_RAM	0x2
#define EDU_DMA_IRQ	0x4
#define EDU_BUF		0x40000	/* the device side of its DMA engine */
#define EDU_BUF_SIZE	4096
/* QEMU 7.2's edu aborts (hw_error) on a transfer that ends exactly at the end of its buffer
 * (an off-by-one in edu_check_range), so a transfer must end below EDU_BUF + EDU_BUF_SIZE. */
#define EDU_DMA_MAX	(EDU_BUF_SIZE - 1)
#define EDU_DMA_IRQ_BIT	0x100
#define EDU_DMA_BITS	28

/*
 * One edu DMA of len bytes between bus address bus and edu's buffer at offset buf_off, waited
 * for by polling (or, with irq, only started). 0, or -ETIMEDOUT / -EINVAL.
 */
int edu_dma(const struct pd_regs *r, uint64_t bus, uint32_t buf_off, uint32_t len, int to_ram,
	    int irq);
int edu_dma_wait(const struct pd_regs *r);

/* ---- data checks (t_dma.c) ---- */
void fill(uint8_t *p, size_t len, unsigned int seed);	/* the test pattern of seed */
/* Number of bytes that differ, and the first differing index in *first. */
size_t diff(const uint8_t *a, const uint8_t *b, size_t len, size_t *first);
/* Copies size bytes from src to dst through edu, walking both SG lists by byte offset; each
 * piece fits both entries and edu's buffer. Counts the edu DMAs in *ops. 0 or -errno. */
int copy_through_edu(const struct pd_regs *regs, pd_umem *src, pd_umem *dst, size_t size,
		     int *ops);

#endif /* PDTEST_H */
