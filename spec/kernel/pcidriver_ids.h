/* Generated from spec/dma-engine.toml by spec/gen-spec.py: do not edit. */
/* SPDX-License-Identifier: GPL-2.0 */
/* The boards pcidriver.ko binds by itself (others: driver_override or new_id). */
PCIDRV_BOARD_ID(0x10ee, 0x7038, 0x10ee, 0x0007)
