#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes a small platform as Linux shows it in sysfs and procfs, for `mprace doctor` under
MPRACE_SYSROOT (tests/tools/tools-bringup.sh): a root port 0000:00:01.0 with a board
0000:01:00.0 below it, optionally an NVIDIA GPU 0000:01:00.1 beside it, NUMA nodes, an IOMMU.

    fake-sysfs.py DIR key=value...

Keys (defaults in DEFAULTS): board_cap / board_link / port_cap ("8.0x8": GT/s and lanes),
mps / mrrs (in effect, bytes), mps_cap (what every device supports), numa (the board's node),
iommu (the group's type, or "none"), thp, gpu (0/1), gpu_driver (open, proprietary, none),
module (the loaded pcidriver's release; "" = not loaded), board_driver ("" = none).
"""
import os
import struct
import sys

DEFAULTS = dict(board_cap="8.0x8", board_link="8.0x8", port_cap="8.0x16", mps="256", mrrs="512",
                mps_cap="256", numa="0", iommu="DMA-FQ", thp="always [madvise] never", gpu="0",
                gpu_driver="open", module="", board_driver="pcidriver")


def config_space(mps_cap, mps, mrrs, acs_redirect=False):
    """4 KiB of config space: a PCI Express capability at 0x40, ACS at 0x100."""
    c = bytearray(4096)
    struct.pack_into("<H", c, 0x06, 0x10)           # Status: capability list
    c[0x34] = 0x40
    c[0x40], c[0x41] = 0x10, 0x00                    # PCI Express, last capability
    enc = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
    struct.pack_into("<I", c, 0x44, enc[mps_cap])   # Device Capabilities: MPS supported
    struct.pack_into("<H", c, 0x48, (enc[mps] << 5) | (enc[mrrs] << 12))
    struct.pack_into("<I", c, 0x100, 0x000d | (1 << 16))  # ACS, version 1, last
    struct.pack_into("<H", c, 0x104, 0x1f)
    struct.pack_into("<H", c, 0x106, 0x04 if acs_redirect else 0)
    return bytes(c)


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


def link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def function(root, rel, bdf, ids, cls, cap, cur, cfg, numa, group, driver):
    d = os.path.join(root, "sys/devices/pci0000:00", rel)
    vendor, device = ids
    write(f"{d}/vendor", f"0x{vendor:04x}\n")
    write(f"{d}/device", f"0x{device:04x}\n")
    write(f"{d}/class", f"0x{cls:06x}\n")
    for name, (gts, width) in (("max", cap), ("current", cur)):
        write(f"{d}/{name}_link_speed", f"{gts} GT/s PCIe\n")
        write(f"{d}/{name}_link_width", f"{width}\n")
    write(f"{d}/numa_node", f"{numa}\n")
    write(f"{d}/config", cfg, "wb")
    depth = rel.count("/") + 3  # up to sys/
    up = "../" * depth
    if group is not None:
        link(f"{d}/iommu_group", f"{up}kernel/iommu_groups/{group}")
    if driver:
        link(f"{d}/driver", f"{up}bus/pci/drivers/{driver}")
    link(os.path.join(root, "sys/bus/pci/devices", bdf), f"../../../devices/pci0000:00/{rel}")


def speed(text):
    gts, width = text.split("x")
    return gts, int(width)


def main():
    root = sys.argv[1]
    o = dict(DEFAULTS)
    for kv in sys.argv[2:]:
        k, v = kv.split("=", 1)
        if k not in o:
            sys.exit(f"fake-sysfs.py: unknown key {k}")
        o[k] = v
    mps_cap, mps, mrrs = int(o["mps_cap"]), int(o["mps"]), int(o["mrrs"])
    group = None if o["iommu"] == "none" else 7
    port_link = speed(o["board_link"])
    function(root, "0000:00:01.0", "0000:00:01.0", (0x8086, 0x1901), 0x060400, speed(o["port_cap"]),
             port_link, config_space(mps_cap, mps, 128), o["numa"], group, "pcieport")
    function(root, "0000:00:01.0/0000:01:00.0", "0000:01:00.0", (0x10EE, 0x7038), 0x058000,
             speed(o["board_cap"]), port_link, config_space(mps_cap, mps, mrrs), o["numa"], group, o["board_driver"])
    if o["gpu"] == "1":
        function(root, "0000:00:01.0/0000:01:00.1", "0000:01:00.1", (0x10DE, 0x2330), 0x030200,
                 speed("16.0x16"), port_link, config_space(mps_cap, mps, mrrs), o["numa"], group, "nvidia")
        if o["gpu_driver"] == "open":
            write(f"{root}/proc/driver/nvidia/version",
                  "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05\n")
        elif o["gpu_driver"] == "proprietary":
            write(f"{root}/proc/driver/nvidia/version",
                  "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05\n")
    if group is not None:
        write(f"{root}/sys/kernel/iommu_groups/{group}/type", o["iommu"] + "\n")
        os.makedirs(f"{root}/sys/class/iommu/dmar0", exist_ok=True)
    # two nodes; CPUs of node 1 that no test machine lets this process use
    write(f"{root}/sys/devices/system/node/online", "0-1\n")
    write(f"{root}/sys/devices/system/node/node0/cpulist", "0-4063\n")
    write(f"{root}/sys/devices/system/node/node1/cpulist", "4064-4095\n")
    write(f"{root}/sys/kernel/mm/transparent_hugepage/enabled", o["thp"] + "\n")
    write(f"{root}/proc/meminfo", "MemTotal:  263000000 kB\nHugePages_Total:       0\n")
    write(f"{root}/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n")
    os.makedirs(f"{root}/sys/module", exist_ok=True)
    if o["module"]:
        write(f"{root}/sys/module/pcidriver/version", o["module"] + "\n")


if __name__ == "__main__":
    main()
