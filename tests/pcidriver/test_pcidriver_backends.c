// SPDX-License-Identifier: GPL-2.0
/*
 * libpcidriver's device names and backend seam (pcidriver/backend.h): the default device never
 * is a simulator, errors say what to do, pd_backend_register checks what it is given, a
 * registered backend gets exactly the calls the front end promises, plugins load by prefix.
 * Each test runs in its own process (Check's fork mode): the registry starts empty.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "size_cases.h"
#include "pcidriver/backend.h"

#define has(hay, needle) (strstr((hay), (needle)) != NULL)

/* ------------------------------------------------------------------ a backend of our own */

struct fake {
	char name[64];
	int kmem_live, umem_live;
	uint32_t next_id;
};

static int fake_opens, fake_closes;

static int fake_open(const char *name, void **dev)
{
	struct fake *f;

	if (strstr(name, "fail")) {
		pd_backend_set_error("fake: asked to fail by '%s'", name);
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->next_id = 7;
	*dev = f;
	fake_opens++;
	return 0;
}

static void fake_close(void *dev)
{
	struct fake *f = dev;

	/* the front end frees what the handle still owns before close */
	ck_assert_int_eq(f->kmem_live, 0);
	ck_assert_int_eq(f->umem_live, 0);
	free(f);
	fake_closes++;
}

static int fake_info(void *dev, struct pd_info *info)
{
	struct fake *f = dev;

	info->backend = 99;
	snprintf(info->name, sizeof(info->name), "%s", f->name);
	return 0;
}

static uint32_t fake_bar1[16] = { 0x11111111, 0x22222222 };
static int fake_bar1_maps;

/* BAR 1 is plain memory; the others cannot be mapped */
static int fake_map_bar(void *dev, unsigned int bar, unsigned int flags, void **addr, size_t *size)
{
	if (bar != 1)
		return -EOPNOTSUPP;
	*addr = fake_bar1;
	*size = sizeof(fake_bar1);
	fake_bar1_maps++;
	return 0;
}

static int fake_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	return 0;
}

static int fake_regs_get(void *dev, unsigned int bar, struct pd_regs *regs)
{
	return bar == 1 ? PD_BACKEND_REGS_MAPPED : -EOPNOTSUPP;
}

static int fake_cfg_read(void *dev, uint32_t offset, void *buf, size_t len)
{
	memset(buf, 0xab, len);
	return 0;
}

static int fake_cfg_write(void *dev, uint32_t offset, const void *buf, size_t len)
{
	return -EPERM;
}

static int fake_kmem_alloc(void *dev, struct pd_backend_kmem *km)
{
	struct fake *f = dev;

	km->ptr = calloc(1, km->size);
	if (!km->ptr)
		return -ENOMEM;
	km->id = f->next_id++;
	km->bus_addr = 0x100000000ull + ((uint64_t)km->id << 20);
	km->priv = f;
	f->kmem_live++;
	return 0;
}

static int fake_kmem_free(void *dev, struct pd_backend_kmem *km)
{
	ck_assert_ptr_eq(km->priv, dev);
	free(km->ptr);
	((struct fake *)dev)->kmem_live--;
	return 0;
}

static int fake_umem_map(void *dev, struct pd_backend_umem *um)
{
	struct fake *f = dev;

	um->sg = malloc(sizeof(*um->sg));
	if (!um->sg)
		return -ENOMEM;
	um->sg[0].bus_addr = 0x200000000ull;
	um->sg[0].length = um->size;
	um->sg_count = 1;
	um->id = f->next_id++;
	f->umem_live++;
	return 0;
}

static int fake_umem_unmap(void *dev, struct pd_backend_umem *um)
{
	((struct fake *)dev)->umem_live--;
	return 0;
}

static int fake_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	return 0;
}

static int fake_irq_wait(void *dev, unsigned int source, uint32_t timeout_ms)
{
	return source == 0 ? 3 : -EINVAL;
}

static int fake_irq_clear(void *dev, unsigned int source)
{
	return 0;
}

static const struct pd_backend_ops fake_ops = {
	.abi = PD_BACKEND_ABI,
	.size = sizeof(struct pd_backend_ops),
	.prefix = "fake",
	.open = fake_open,
	.close = fake_close,
	.info = fake_info,
	.map_bar = fake_map_bar,
	.unmap_bar = fake_unmap_bar,
	.regs_get = fake_regs_get,
	.cfg_read = fake_cfg_read,
	.cfg_write = fake_cfg_write,
	.kmem_alloc = fake_kmem_alloc,
	.kmem_free = fake_kmem_free,
	.umem_map = fake_umem_map,
	.umem_unmap = fake_umem_unmap,
	.umem_sync = fake_umem_sync,
	.irq_wait = fake_irq_wait,
	.irq_clear = fake_irq_clear,
};

/* ------------------------------------------------------------------ device names */

/* Without PCIDRIVER_DEVICE and /dev/fpga0 the default is no device, never the virtual board,
 * and the error says how to choose it. */
START_TEST(test_default_is_no_simulator)
{
	pd_device *dev = (pd_device *)1;
	const char *const names[] = { NULL, "" };
	unsigned int i;

	if (access("/dev/fpga0", F_OK) == 0)
		return;   /* a board is there: the default is that board */
	unsetenv("PCIDRIVER_DEVICE");
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(pd_open(names[i], &dev), -ENODEV);
		ck_assert_ptr_null(dev);
		ck_assert_msg(has(pd_open_error(), "PCIDRIVER_DEVICE=emu:") &&
			      has(pd_open_error(), "/dev/fpga0"), "%s", pd_open_error());
	}
	/* an empty variable counts as unset */
	setenv("PCIDRIVER_DEVICE", "", 1);
	ck_assert_int_eq(pd_open(NULL, &dev), -ENODEV);
	/* the variable chooses */
	setenv("PCIDRIVER_DEVICE", "emu:link=ideal", 1);
	ck_assert_int_eq(pd_open(NULL, &dev), 0);
	ck_assert_str_eq(pd_open_error(), "");
	pd_close(dev);
}
END_TEST

START_TEST(test_bad_names)
{
	pd_device *dev = NULL;

	ck_assert_int_eq(pd_open("nope:x=1", &dev), -ENODEV);
	ck_assert_msg(has(pd_open_error(), "no backend serves 'nope:'"), "%s", pd_open_error());
	ck_assert_int_eq(pd_open("Not a name!", &dev), -ENODEV);
	ck_assert_msg(has(pd_open_error(), "not a device name"), "%s", pd_open_error());
	ck_assert_int_eq(pd_open("fpga", &dev), -ENODEV);
	ck_assert_int_eq(pd_open("muchtoolongaprefix:", &dev), -ENODEV);
	ck_assert_int_eq(pd_open("emu:", NULL), -EINVAL);
	if (access("/dev/fpga97", F_OK) != 0) {
		ck_assert_int_eq(pd_open("/dev/fpga97", &dev), -ENODEV);
		ck_assert_msg(has(pd_open_error(), "/dev/fpga97") &&
			      has(pd_open_error(), "pcidriver.ko"), "%s", pd_open_error());
		ck_assert_int_eq(pd_open("97", &dev), -ENODEV);
		ck_assert_msg(has(pd_open_error(), "/dev/fpga97"), "%s", pd_open_error());
	}
	ck_assert_ptr_null(dev);
}
END_TEST

/* ------------------------------------------------------------------ registration */

START_TEST(test_register_checks)
{
	static struct pd_backend_ops longest;   /* registered: must outlive the registry's use */
	struct pd_backend_ops o = fake_ops;
	const char *const bad_prefixes[] = { "", "Fake", "1x", "fa-ke", "fa:ke",
					     "abcdefghijklmnop" };
	unsigned int i;

	ck_assert_int_eq(pd_backend_register(NULL), -EINVAL);
	o.abi = PD_BACKEND_ABI + 1;
	ck_assert_int_eq(pd_backend_register(&o), -EPROTO);
	o = fake_ops;
	o.prefix = NULL;
	ck_assert_int_eq(pd_backend_register(&o), -EINVAL);
	for (i = 0; i < sizeof(bad_prefixes) / sizeof(bad_prefixes[0]); i++) {
		o.prefix = bad_prefixes[i];
		ck_assert_msg(pd_backend_register(&o) == -EINVAL, "%s", bad_prefixes[i]);
	}
	o = fake_ops;
	o.umem_sync = NULL;
	ck_assert_int_eq(pd_backend_register(&o), -EINVAL);
	o = fake_ops;			/* a size that ends before the ops every backend has */
	o.size = offsetof(struct pd_backend_ops, irq_clear);
	ck_assert_int_eq(pd_backend_register(&o), -EINVAL);
	/* the longest prefix is fine */
	longest = fake_ops;
	longest.prefix = "abcdefghijklmno";
	ck_assert_int_eq(pd_backend_register(&longest), 0);
	ck_assert_int_eq(pd_backend_register(&fake_ops), 0);
	ck_assert_int_eq(pd_backend_register(&fake_ops), 0);   /* again: fine */
	o = fake_ops;                                          /* other ops, same prefix */
	ck_assert_int_eq(pd_backend_register(&o), -EEXIST);
}
END_TEST

static int must_not_be_called(void *dev, int fd, struct pd_backend_umem *um)
{
	(void)dev;
	(void)fd;
	(void)um;
	ck_abort_msg("an op beyond the backend's size was called");
	return 0;
}

/* A backend built before an optional op existed (its `size` ends before it) is read as not
 * having it, whatever lies in memory behind its ops: the struct grows without a new ABI. */
START_TEST(test_register_older_size)
{
	static struct pd_backend_ops older;
	pd_device *dev = NULL;
	pd_umem *um = NULL;

	older = fake_ops;
	older.prefix = "older";
	older.size = offsetof(struct pd_backend_ops, dmabuf_import);
	older.dmabuf_import = must_not_be_called;	/* beyond size: never read */
	ck_assert_int_eq(pd_backend_register(&older), 0);
	ck_assert_int_eq(pd_open("older:", &dev), 0);
	ck_assert_int_eq(pd_dmabuf_import(dev, 0, PD_DMA_TO_DEVICE, &um), -EOPNOTSUPP);
	pd_close(dev);
}
END_TEST

START_TEST(test_register_limit)
{
	static struct pd_backend_ops o[17];
	static char prefixes[17][8];
	unsigned int i;

	for (i = 0; i < 17; i++) {
		o[i] = fake_ops;
		snprintf(prefixes[i], sizeof(prefixes[i]), "b%u", i);
		o[i].prefix = prefixes[i];
		ck_assert_int_eq(pd_backend_register(&o[i]), i < 16 ? 0 : -ENOSPC);
	}
}
END_TEST

/* The front end's promises to a backend: the whole name, checked arguments, leftovers freed
 * before close, IDs and addresses passed through. */
START_TEST(test_registered_backend)
{
	pd_device *dev = NULL;
	pd_kmem *km;
	pd_umem *um;
	struct pd_info info;
	struct pd_sg_entry sg;
	uint8_t cfg[8], ubuf[4096];
	char names[8][64];
	size_t n, i;
	int found = 0;

	ck_assert_int_eq(pd_backend_register(&fake_ops), 0);
	ck_assert_int_eq(pd_open("fake:fail", &dev), -EINVAL);
	ck_assert_str_eq(pd_open_error(), "fake: asked to fail by 'fake:fail'");
	ck_assert_int_eq(pd_open("fake:opts=1,x=2", &dev), 0);
	ck_assert_int_eq(pd_info(dev, &info), 0);
	ck_assert_uint_eq(info.backend, 99);
	ck_assert_str_eq(info.name, "fake:opts=1,x=2");
	ck_assert_int_eq(pd_cfg_read(dev, 0, cfg, sizeof(cfg)), 0);
	ck_assert_uint_eq(cfg[7], 0xab);
	ck_assert_int_eq(pd_cfg_read(dev, 4095, cfg, 2), -EINVAL);   /* never reaches the backend */
	ck_assert_int_eq(pd_cfg_write(dev, 0, cfg, 4), -EPERM);
	ck_assert_int_eq(pd_kmem_alloc(dev, 0, &km), -EINVAL);
	ck_assert_int_eq(pd_kmem_alloc(dev, 100, &km), 0);
	ck_assert_uint_eq(pd_kmem_id(km), 7);
	ck_assert_uint_eq(pd_kmem_bus_addr(km), 0x100000000ull + (7ull << 20));
	ck_assert_uint_eq(pd_kmem_size(km), 100);
	ck_assert_int_eq(pd_umem_map(dev, ubuf, sizeof(ubuf), PD_DMA_FROM_DEVICE, &um), 0);
	ck_assert_uint_eq(pd_umem_sg_count(um), 1);
	ck_assert_int_eq(pd_umem_sglist(um, &sg, 1), 1);
	ck_assert_uint_eq(sg.bus_addr, 0x200000000ull);
	ck_assert_uint_eq(sg.length, sizeof(ubuf));
	ck_assert_int_eq(pd_irq_wait(dev, 0, 0), 3);
	{
		/* dmabuf_import is optional: without it the front end answers, the backend is
		 * never asked; a bad fd is refused before the question arises */
		pd_umem *imp = (pd_umem *)1;

		ck_assert_int_eq(pd_dmabuf_import(dev, 0, PD_DMA_TO_DEVICE, &imp), -EOPNOTSUPP);
		ck_assert_ptr_null(imp);
		ck_assert_int_eq(pd_dmabuf_import(dev, -1, PD_DMA_TO_DEVICE, &imp), -EBADF);
	}
	/* registers that are the BAR's mapping: the front end maps it once, for the handle */
	{
		struct pd_regs regs;
		void *addr;

		ck_assert_int_eq(pd_regs_get(dev, 0, &regs), -EOPNOTSUPP);
		ck_assert_int_eq(pd_regs_get(dev, 1, &regs), 0);
		ck_assert_ptr_eq((const void *)regs.mmio, fake_bar1);
		ck_assert_uint_eq(regs.size, sizeof(fake_bar1));
		ck_assert_uint_eq(pd_reg_read32(&regs, 4), 0x22222222);
		pd_reg_write32(&regs, 8, 0x33333333);
		ck_assert_uint_eq(fake_bar1[2], 0x33333333);
		ck_assert_int_eq(pd_regs_get(dev, 1, &regs), 0);
		ck_assert_int_eq(pd_map_bar(dev, 1, 0, &addr, NULL), 0);
		ck_assert_ptr_eq(addr, fake_bar1);
		ck_assert_int_eq(fake_bar1_maps, 1);
	}
	ck_assert_int_eq(pd_list(names, 8, &n), 0);
	for (i = 0; i < n && i < 8; i++)
		found |= !strcmp(names[i], "fake:");
	ck_assert(found);
	/* km and um still owned: pd_close frees them, then close (which asserts it) */
	pd_close(dev);
	ck_assert_int_eq(fake_opens, 1);
	ck_assert_int_eq(fake_closes, 1);
}
END_TEST

/* A prefix served by a registered backend is not looked up as a plugin, and without a plugin
 * directory that has emu.so there is no virtual board: the error names where it looked. */
START_TEST(test_plugin_lookup)
{
	pd_device *dev = NULL;
	char names[16][64];
	size_t n, i;
	int emu = 0;

	/* the suites run with PCIDRIVER_BACKEND_PATH at the build tree's plugins */
	ck_assert_int_eq(pd_list(names, 16, &n), 0);
	for (i = 0; i < n && i < 16; i++)
		emu += !strcmp(names[i], "emu:");
	ck_assert_int_eq(emu, 1);
	ck_assert_int_eq(pd_open("emu:link=ideal", &dev), 0);
	pd_close(dev);
}
END_TEST

START_TEST(test_plugin_missing)
{
	pd_device *dev = NULL;

	setenv("PCIDRIVER_BACKEND_PATH", "/nonexistent/a:/nonexistent/b", 1);
	ck_assert_int_eq(pd_open("emu:", &dev), -ENODEV);
	ck_assert_msg(has(pd_open_error(), "emu.so") && has(pd_open_error(), "/nonexistent/b") &&
		      has(pd_open_error(), "PCIDRIVER_BACKEND_PATH"), "%s", pd_open_error());
}
END_TEST

/* A search path too long for the library is refused by name, never cut short (a cut path
 * could name another, existing directory). */
START_TEST(test_plugin_path_too_long)
{
	char *path = malloc(8192);
	pd_device *dev = NULL;
	size_t i;

	ck_assert_ptr_nonnull(path);
	for (i = 0; i + 1 < 8192; i++)
		path[i] = i % 64 == 0 ? ':' : 'd';
	path[8191] = '\0';
	setenv("PCIDRIVER_BACKEND_PATH", path, 1);
	ck_assert_int_eq(pd_open("emu:", &dev), -ENODEV);
	ck_assert_msg(has(pd_open_error(), "PCIDRIVER_BACKEND_PATH is longer than"), "%s",
		      pd_open_error());
	free(path);
}
END_TEST

/* ------------------------------------------------------------------ sizes */

/* The one size grammar of every backend and tool (tests/common/size_cases.h; test_tools.cpp
 * checks the tools against the same table). */
START_TEST(test_parse_size)
{
	uint64_t v;
	size_t i;
	int rc;

	for (i = 0; i < SIZE_CASES_COUNT; i++) {
		v = 0xdeadbeef;
		rc = pd_parse_size(size_cases[i].text, &v);
		if (size_cases[i].ok)
			ck_assert_msg(rc == 0 && v == size_cases[i].bytes, "'%s': %d, %llu",
				      size_cases[i].text, rc, (unsigned long long)v);
		else
			ck_assert_msg(rc == -EINVAL && v == 0xdeadbeef, "'%s' accepted: %llu",
				      size_cases[i].text, (unsigned long long)v);
	}
	ck_assert_int_eq(pd_parse_size(NULL, &v), -EINVAL);
	ck_assert_int_eq(pd_parse_size("4K", NULL), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ pd_strerror */

static void *strerror_thread(void *arg)
{
	unsigned int i;

	for (i = 0; i < 100000; i++)
		if (strcmp(pd_strerror(-(int)(1 + i % 130)), pd_strerror(-(int)(1 + i % 130))))
			return (void *)1;
	return NULL;
}

START_TEST(test_strerror_constant)
{
	const char *io = pd_strerror(-EIO), *unknown = pd_strerror(-99999);
	pthread_t t[4];
	void *ret;
	unsigned int i;

	ck_assert_ptr_eq(pd_strerror(-EIO), io);   /* the same constant string, every time */
	ck_assert(has(io, "nput/output"));
	ck_assert(has(unknown, "unknown"));
	ck_assert_ptr_eq(pd_strerror(-99998), unknown);
	ck_assert(has(pd_strerror(5), "unknown"));  /* a positive value is not an errno of ours */
	ck_assert(has(pd_strerror(-ENODEV), "no such device"));
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, strerror_thread, NULL), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("pcidriver-backends");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, test_default_is_no_simulator);
	tcase_add_test(tc, test_bad_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("registry");
	tcase_add_test(tc, test_register_checks);
	tcase_add_test(tc, test_register_older_size);
	tcase_add_test(tc, test_register_limit);
	tcase_add_test(tc, test_registered_backend);
	tcase_add_test(tc, test_plugin_lookup);
	tcase_add_test(tc, test_plugin_missing);
	tcase_add_test(tc, test_plugin_path_too_long);
	tcase_add_test(tc, test_parse_size);
	suite_add_tcase(s, tc);
	tc = tcase_create("strerror");
	tcase_add_test(tc, test_strerror_constant);
	suite_add_tcase(s, tc);
	return s;
}
