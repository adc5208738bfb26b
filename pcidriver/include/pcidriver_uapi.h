/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* Placeholder: the ioctl ABI of pcidriver.ko is being written ([pcidriver] issue). */
