// SPDX-License-Identifier: GPL-2.0
/* pdtest groups: load (module and binding), info, bar, config. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdtest.h"

/* ---------------------------------------------------------------- load */

static const char *const load_checks[] = {
	"load: insmod pcidriver.ko dma_bits=28",
	"load: both edu devices bind through driver_override",
	"load: /dev/fpga0 and /dev/fpga1 appear",
	"load: sysfs statistics start at zero",
	NULL,
};

static void load_run(void)
{
	int ret = module_load("dma_bits=28"), n;

	CHECK(load_checks[0], ret == 0, "finit_module: %s", errname(ret));
	n = bind_edu_devices();
	CHECK(load_checks[1], n == 2, "%d devices bound", n);
	CHECK(load_checks[2], !wait_node(0, 1, 2000) && !wait_node(1, 1, 2000),
	      "device nodes missing");
	CHECK(load_checks[3],
	      stat_long(0, "kmem_count") == 0 && stat_long(0, "umem_count") == 0 &&
	      stat_long(0, "kmem_bytes") == 0 && stat_long(0, "umem_pinned_bytes") == 0 &&
	      stat_long(1, "kmem_count") == 0, "kmem_count %ld", stat_long(0, "kmem_count"));
}

const struct pdt_group grp_load = { "load", load_checks, load_run };

/* ---------------------------------------------------------------- info */

static const char *const info_checks[] = {
	"info: pd_open(/dev/fpga0)",
	"info: IDs, class and revision equal sysfs",
	"info: BAR0 is the 1 MiB memory BAR sysfs shows, other BARs absent",
	"info: MSI with one vector",
	"info: DMA mask is 28 bits (module parameter), as sysfs says",
	"info: ABI version",
	"info: name is the PCI address",
	NULL,
};

static void info_run(void)
{
	struct pd_info info;
	char path[128], res[512];
	unsigned long long start = 0, end = 0;
	pd_device *dev;
	int ret, i, others = 0;

	ret = pd_open("/dev/fpga0", &dev);
	CHECK(info_checks[0], ret == 0, "pd_open: %s", errname(ret));
	if (ret)
		return;
	ret = pd_info(dev, &info);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", info.name);
	CHECK(info_checks[1],
	      !ret && info.vendor == sysfs_long("%s/vendor", path) &&
	      info.device == sysfs_long("%s/device", path) &&
	      info.subsystem_vendor == sysfs_long("%s/subsystem_vendor", path) &&
	      info.subsystem_device == sysfs_long("%s/subsystem_device", path) &&
	      info.class_code == sysfs_long("%s/class", path) &&
	      info.revision == sysfs_long("%s/revision", path) && info.vendor == EDU_VENDOR &&
	      info.backend == PD_BACKEND_KERNEL,
	      "ret %s, %04x:%04x sub %04x:%04x class %06x rev %02x", errname(ret), info.vendor,
	      info.device, info.subsystem_vendor, info.subsystem_device, info.class_code,
	      info.revision);

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", info.name);
	ret = read_file(path, res, sizeof(res) - 1);
	if (ret > 0) {
		res[ret] = '\0';
		sscanf(res, "%llx %llx", &start, &end);
	}
	for (i = 1; i < PD_MAX_BARS; i++)
		others |= info.bar[i].flags & PD_BAR_PRESENT;
	CHECK(info_checks[2],
	      info.bar[0].size == 1 << 20 && (info.bar[0].flags & PD_BAR_PRESENT) &&
	      !(info.bar[0].flags & PD_BAR_IO) && info.bar[0].bus_addr == start &&
	      end - start + 1 == info.bar[0].size && !others,
	      "bar0 %#" PRIx64 "+%#" PRIx64 " flags %#x, sysfs %#llx-%#llx", info.bar[0].bus_addr,
	      info.bar[0].size, info.bar[0].flags, start, end);
	CHECK(info_checks[3], info.irq_mode == PD_IRQ_MSI && info.irq_count == 1,
	      "mode %u count %u", info.irq_mode, info.irq_count);
	CHECK(info_checks[4],
	      info.dma_mask_bits == EDU_DMA_BITS && stat_long(0, "dma_mask_bits") == EDU_DMA_BITS,
	      "%u bits", info.dma_mask_bits);
	CHECK(info_checks[5], info.abi_version == PCIDRIVER_API_VERSION, "%u", info.abi_version);
	CHECK(info_checks[6], !strncmp(info.name, "0000:", 5) && strlen(info.name) == 12,
	      "\"%s\"", info.name);
	pd_close(dev);
}

const struct pdt_group grp_info = { "info", info_checks, info_run };

/* ---------------------------------------------------------------- bar */

static const char *const bar_checks[] = {
	"bar: identification register reads 0x010000ed (pd_regs accessor)",
	"bar: liveness register inverts what is written (mmap'd BAR)",
	"bar: pd_bar_read/pd_bar_write copies",
	"bar: another open file maps the same registers",
	"bar: write-combining map of a non-prefetchable BAR fails with EINVAL",
	NULL,
};

static void bar_run(void)
{
	static const uint32_t values[] = { 0, 0xffffffff, 0x12345678, 0xa5a55a5a };
	struct pd_regs regs;
	pd_device *dev, *dev2;
	volatile uint32_t *bar;
	uint32_t v = 0, buf[2] = { 0xdeadbeef, 0 };
	size_t size = 0;
	void *p = NULL, *wc = NULL;
	int ret, ok = 1;
	unsigned int i;

	if (pd_open("/dev/fpga0", &dev))
		return;
	ret = pd_regs_get(dev, 0, &regs);
	v = ret ? 0 : pd_reg_read32(&regs, EDU_ID);
	CHECK(bar_checks[0], !ret && regs.mmio && v == 0x010000ed, "ret %s id %#x",
	      errname(ret), v);

	ret = pd_map_bar(dev, 0, 0, &p, &size);
	bar = p;
	for (i = 0; !ret && i < sizeof(values) / sizeof(values[0]); i++) {
		bar[EDU_LIVE / 4] = values[i];
		if (bar[EDU_LIVE / 4] != ~values[i])
			ok = 0;
	}
	CHECK(bar_checks[1], !ret && ok && size == 1 << 20, "ret %s size %zu", errname(ret),
	      size);

	ret = pd_bar_write(dev, 0, EDU_LIVE, buf, 4);
	if (!ret)
		ret = pd_bar_read(dev, 0, EDU_ID, buf, 8);
	CHECK(bar_checks[2], !ret && buf[0] == 0x010000ed && buf[1] == ~0xdeadbeefu,
	      "ret %s %#x %#x", errname(ret), buf[0], buf[1]);

	ret = pd_open("/dev/fpga0", &dev2);
	if (!ret) {
		ret = pd_regs_get(dev2, 0, &regs);
		if (!ret) {
			pd_reg_write32(&regs, EDU_LIVE, 0x0f0f0f0f);
			v = bar[EDU_LIVE / 4];
		}
	}
	CHECK(bar_checks[3], !ret && v == 0xf0f0f0f0, "ret %s v %#x", errname(ret), v);

	pd_close(dev2);
	/* a fresh handle: the library keeps one mapping per BAR and handle */
	ret = pd_open("/dev/fpga0", &dev2);
	if (!ret)
		ret = pd_map_bar(dev2, 0, PD_MAP_WC, &wc, &size);
	CHECK(bar_checks[4], ret == -EINVAL, "%s", errname(ret));
	pd_close(dev2);
	pd_close(dev);
}

const struct pdt_group grp_bar = { "bar", bar_checks, bar_run };

/* ---------------------------------------------------------------- config */

static const char *const config_checks[] = {
	"config: 256 bytes equal the sysfs config file",
	"config: reads at odd offsets and lengths",
	"config: reading past the 256-byte config space fails with EINVAL",
	"config: root writes config space (interrupt line) and reads it back",
	NULL,
};

static void config_run(void)
{
	uint8_t cfg[256], sys[256], b = 0, old = 0, odd[3] = { 0 };
	struct pd_info info;
	char path[128];
	pd_device *dev;
	int ret, n;

	if (pd_open("/dev/fpga0", &dev) || pd_info(dev, &info))
		return;
	ret = pd_cfg_read(dev, 0, cfg, sizeof(cfg));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", info.name);
	n = read_file(path, sys, sizeof(sys));
	CHECK(config_checks[0], !ret && n == 256 && !memcmp(cfg, sys, 256),
	      "ret %s, sysfs %d bytes", errname(ret), n);

	ret = pd_cfg_read(dev, 1, odd, 3);
	CHECK(config_checks[1], !ret && !memcmp(odd, cfg + 1, 3), "ret %s", errname(ret));

	ret = pd_cfg_read(dev, 254, odd, 3);
	n = pd_cfg_read(dev, 256, odd, 1);
	CHECK(config_checks[2], ret == -EINVAL && n == -EINVAL, "%s %s", errname(ret),
	      errname(n));

	ret = pd_cfg_read(dev, 0x3c, &old, 1);
	b = old ^ 0x5a;
	if (!ret)
		ret = pd_cfg_write(dev, 0x3c, &b, 1);
	b = 0;
	if (!ret)
		ret = pd_cfg_read(dev, 0x3c, &b, 1);
	CHECK(config_checks[3], !ret && b == (old ^ 0x5a), "ret %s, %#x", errname(ret), b);
	pd_cfg_write(dev, 0x3c, &old, 1);
	pd_close(dev);
}

const struct pdt_group grp_config = { "config", config_checks, config_run };
