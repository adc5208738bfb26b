/* Generated from spec/dma-engine.toml by spec/gen-spec.py: do not edit. */
/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MPRACE_ENGINE_SPEC_H
#define MPRACE_ENGINE_SPEC_H

#include <stdint.h>

/* Engine constants */
#define MP_ENGINE_MAGIC 0x4D505243u
#define MP_ENGINE_VERSION_MAJOR 0x1u
#define MP_ENGINE_VERSION_MINOR 0x0u
#define MP_ENGINE_BAR 0x0u
#define MP_ENGINE_BAR0_SIZE 0x1000u
#define MP_ENGINE_GRANULE 0x4u
#define MP_ENGINE_MAX_DESC_LEN 0x1000000u
#define MP_ENGINE_DESC_SIZE 0x20u
#define MP_ENGINE_RING_MIN_ENTRIES 0x2u
#define MP_ENGINE_RING_MAX_ENTRIES 0x10000u
#define MP_ENGINE_PAGE_SIZE 0x1000u
#define MP_ENGINE_PATTERN_WORD_BYTES 0x4u

/* PCI identity of our boards */
#define MP_ID_VENDOR 0x10EEu
#define MP_ID_DEVICE 0x7038u
#define MP_ID_SUBSYSTEM_VENDOR 0x10EEu
#define MP_ID_SUBSYSTEM_DEVICE 0x0007u
#define MP_ID_CLASS 0x118000u

/* Global registers: byte offsets in BAR0 */
#define MP_REG_MAGIC 0x000u /* ro: Identification: reads 0x4D505243 ("MPRC"). */
#define MP_REG_VERSION 0x004u /* ro: Specification version this engine implements. */
#define MP_REG_VERSION_MINOR_SHIFT 0u
#define MP_REG_VERSION_MINOR_MASK 0x0000FFFFu
#define MP_REG_VERSION_MAJOR_SHIFT 16u
#define MP_REG_VERSION_MAJOR_MASK 0xFFFF0000u
#define MP_REG_CAPS 0x008u /* ro: Capabilities and link settings in use. */
#define MP_REG_CAPS_DATAPATH_BYTES_SHIFT 0u
#define MP_REG_CAPS_DATAPATH_BYTES_MASK 0x000000FFu
#define MP_REG_CAPS_C2H_CHANNELS_SHIFT 8u
#define MP_REG_CAPS_C2H_CHANNELS_MASK 0x00000F00u
#define MP_REG_CAPS_H2C_CHANNELS_SHIFT 12u
#define MP_REG_CAPS_H2C_CHANNELS_MASK 0x0000F000u
#define MP_REG_CAPS_MPS_SHIFT 16u
#define MP_REG_CAPS_MPS_MASK 0x00070000u
#define MP_REG_CAPS_MRRS_SHIFT 19u
#define MP_REG_CAPS_MRRS_MASK 0x00380000u
#define MP_REG_CAPS_PATGEN_SHIFT 24u
#define MP_REG_CAPS_PATGEN_MASK 0x01000000u
#define MP_REG_CAPS_CHECKER_SHIFT 25u
#define MP_REG_CAPS_CHECKER_MASK 0x02000000u
#define MP_REG_CAPS_LOOPBACK_SHIFT 26u
#define MP_REG_CAPS_LOOPBACK_MASK 0x04000000u
#define MP_REG_CAPS_MSI_VECTORS_SHIFT 28u
#define MP_REG_CAPS_MSI_VECTORS_MASK 0xF0000000u
#define MP_REG_CLOCK_MHZ 0x00Cu /* ro: Engine clock frequency in MHz (the unit of CYCLE_LO/HI). */
#define MP_REG_CONTROL 0x010u /* rsc: Global control. */
#define MP_REG_CONTROL_RESET_SHIFT 0u
#define MP_REG_CONTROL_RESET_MASK 0x00000001u
#define MP_REG_SCRATCH 0x014u /* rw: Free for software: read back what was written (bring-up check). */
#define MP_REG_CYCLE_LO 0x018u /* ro: Free-running cycle counter, low word; reading it latches CYCLE_HI. */
#define MP_REG_CYCLE_HI 0x01Cu /* ro: Cycle counter high word, as latched by the last CYCLE_LO read. */
#define MP_REG_IRQ_STATUS 0x020u /* w1c: Pending interrupt sources; write 1 to clear a bit. */
#define MP_REG_IRQ_STATUS_C2H_DONE_SHIFT 0u
#define MP_REG_IRQ_STATUS_C2H_DONE_MASK 0x00000001u
#define MP_REG_IRQ_STATUS_H2C_DONE_SHIFT 1u
#define MP_REG_IRQ_STATUS_H2C_DONE_MASK 0x00000002u
#define MP_REG_IRQ_STATUS_ERROR_SHIFT 2u
#define MP_REG_IRQ_STATUS_ERROR_MASK 0x00000004u
#define MP_REG_IRQ_ENABLE 0x024u /* rw: Interrupt mask: a source raises an MSI only while its bit here is 1 (same layout as IRQ_STATUS). */
#define MP_REG_IRQ_ENABLE_C2H_DONE_SHIFT 0u
#define MP_REG_IRQ_ENABLE_C2H_DONE_MASK 0x00000001u
#define MP_REG_IRQ_ENABLE_H2C_DONE_SHIFT 1u
#define MP_REG_IRQ_ENABLE_H2C_DONE_MASK 0x00000002u
#define MP_REG_IRQ_ENABLE_ERROR_SHIFT 2u
#define MP_REG_IRQ_ENABLE_ERROR_MASK 0x00000004u
#define MP_REG_TEST_CONTROL 0x080u /* rw: Built-in test logic: where C2H data comes from and where H2C data goes. */
#define MP_REG_TEST_CONTROL_C2H_SOURCE_SHIFT 0u
#define MP_REG_TEST_CONTROL_C2H_SOURCE_MASK 0x00000003u
#define MP_REG_TEST_CONTROL_H2C_SINK_SHIFT 4u
#define MP_REG_TEST_CONTROL_H2C_SINK_MASK 0x00000030u
#define MP_REG_PATGEN_SEED 0x084u /* rw: Writing sets the generator's next word to this value; word n of the stream is SEED + n (mod 2^32). */
#define MP_REG_PATGEN_RATE 0x088u /* rw: Generator rate limit in MB/s (10^6 bytes/s); 0 = as fast as the link takes it. */
#define MP_REG_CHECK_SEED 0x08Cu /* rw: Writing sets the checker's expected next word and clears CHECK_ERRORS and CHECK_WORDS. */
#define MP_REG_CHECK_ERRORS 0x090u /* ro: Number of received H2C words that differed from the expected pattern (saturating). */
#define MP_REG_CHECK_WORDS 0x094u /* ro: Number of H2C words the checker has compared. */

/* Channels */
#define MP_CH_C2H 0u
#define MP_CH_C2H_BASE 0x100u
#define MP_CH_H2C 1u
#define MP_CH_H2C_BASE 0x140u
#define MP_CH_COUNT 2u
#define MP_CH_BASE(ch) (0x100u + (ch) * 0x40u)

/* Per-channel registers: byte offsets from MP_CH_BASE(ch) */
#define MP_CHREG_CONTROL 0x00u /* rsc: Channel control. RUN is a level; STOP, ABORT and RESET are self-clearing requests. */
#define MP_CHREG_CONTROL_RUN_SHIFT 0u
#define MP_CHREG_CONTROL_RUN_MASK 0x00000001u
#define MP_CHREG_CONTROL_ABORT_SHIFT 1u
#define MP_CHREG_CONTROL_ABORT_MASK 0x00000002u
#define MP_CHREG_CONTROL_RESET_SHIFT 2u
#define MP_CHREG_CONTROL_RESET_MASK 0x00000004u
#define MP_CHREG_STATUS 0x04u /* ro: Channel state. */
#define MP_CHREG_STATUS_STATE_SHIFT 0u
#define MP_CHREG_STATUS_STATE_MASK 0x00000003u
#define MP_CHREG_STATUS_BUSY_SHIFT 2u
#define MP_CHREG_STATUS_BUSY_MASK 0x00000004u
#define MP_CHREG_STATUS_ERROR_CODE_SHIFT 8u
#define MP_CHREG_STATUS_ERROR_CODE_MASK 0x0000FF00u
#define MP_CHREG_RING_BASE_LO 0x08u /* rw: Bus address of descriptor 0 of the ring, low word (must be 32-byte aligned). */
#define MP_CHREG_RING_BASE_HI 0x0Cu /* rw: Bus address of the ring, high word. */
#define MP_CHREG_RING_SIZE 0x10u /* rw: Number of descriptors in the ring: a power of two from ring_min_entries to ring_max_entries. */
#define MP_CHREG_TAIL 0x14u /* rw: Doorbell: free-running count of descriptors software has queued. Slot = TAIL mod RING_SIZE. */
#define MP_CHREG_HEAD 0x18u /* ro: Completed count: free-running count of descriptors the engine has finished (and written back). */
#define MP_CHREG_TIMEOUT_US 0x1Cu /* rw: Stall timeout in microseconds (C2H: no source data; H2C: no read completion); 0 = never. */
#define MP_CHREG_BYTES_LO 0x20u /* ro: Bytes moved since the last reset, low word (reading it latches BYTES_HI). */
#define MP_CHREG_BYTES_HI 0x24u /* ro: Bytes moved, high word, as latched by the last BYTES_LO read. */

/* Channel states (STATUS.STATE) */
#define MP_STATE_IDLE 0u
#define MP_STATE_RUNNING 1u
#define MP_STATE_ERROR 2u

/* Test logic selections (TEST_CONTROL) */
#define MP_C2H_SOURCE_USER 0u
#define MP_C2H_SOURCE_PATTERN 1u
#define MP_C2H_SOURCE_LOOPBACK 2u
#define MP_H2C_SINK_USER 0u
#define MP_H2C_SINK_CHECKER 1u
#define MP_H2C_SINK_LOOPBACK 2u

/* Descriptor: byte offsets of its 32-bit words */
#define MP_DESC_ADDR_LO 0x00u /* sw: Bus address of the data, low word (multiple of granule). */
#define MP_DESC_ADDR_HI 0x04u /* sw: Bus address of the data, high word. */
#define MP_DESC_LEN 0x08u /* sw: Length in bytes: a multiple of granule, 1 granule to max_desc_len. Bits above are reserved (0). */
#define MP_DESC_LEN_BYTES_SHIFT 0u
#define MP_DESC_LEN_BYTES_MASK 0x01FFFFFFu
#define MP_DESC_CTRL 0x0Cu /* sw: Control flags; undefined bits are reserved and must be 0. */
#define MP_DESC_CTRL_IRQ_SHIFT 0u
#define MP_DESC_CTRL_IRQ_MASK 0x00000001u
#define MP_DESC_CTRL_EOP_SHIFT 1u
#define MP_DESC_CTRL_EOP_MASK 0x00000002u
#define MP_DESC_CTRL_STOP_SHIFT 2u
#define MP_DESC_CTRL_STOP_MASK 0x00000004u
#define MP_DESC_RESULT_BYTES 0x10u /* hw: Written by the engine: bytes actually transferred (C2H: fewer than LEN when the source ended a packet). */
#define MP_DESC_RESULT_STATUS 0x14u /* hw: Written by the engine together with RESULT_BYTES (one 8-byte write, after all data). */
#define MP_DESC_RESULT_STATUS_DONE_SHIFT 0u
#define MP_DESC_RESULT_STATUS_DONE_MASK 0x00000001u
#define MP_DESC_RESULT_STATUS_ERROR_SHIFT 1u
#define MP_DESC_RESULT_STATUS_ERROR_MASK 0x00000002u
#define MP_DESC_RESULT_STATUS_EOP_SHIFT 2u
#define MP_DESC_RESULT_STATUS_EOP_MASK 0x00000004u
#define MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT 8u
#define MP_DESC_RESULT_STATUS_ERROR_CODE_MASK 0x0000FF00u
#define MP_DESC_SW_COOKIE_LO 0x18u /* none: Never read or written by the engine: software's own tag. */
#define MP_DESC_SW_COOKIE_HI 0x1Cu /* none: Software's own tag, high word. */

/* The descriptor as it lies in host memory (little-endian words). */
struct mp_hw_desc {
	uint32_t addr_lo;
	uint32_t addr_hi;
	uint32_t len;
	uint32_t ctrl;
	uint32_t result_bytes;
	uint32_t result_status;
	uint32_t sw_cookie_lo;
	uint32_t sw_cookie_hi;
};

#ifdef __cplusplus
static_assert(sizeof(struct mp_hw_desc) == MP_ENGINE_DESC_SIZE, "descriptor size");
#else
_Static_assert(sizeof(struct mp_hw_desc) == MP_ENGINE_DESC_SIZE, "descriptor size");
#endif

/* Error codes */
#define MP_ERR_NONE 0u /* no error */
#define MP_ERR_DESC_LENGTH 1u /* descriptor length is zero or larger than max_desc_len */
#define MP_ERR_DESC_ALIGN 2u /* descriptor address or length is not a multiple of the granule */
#define MP_ERR_DESC_RESERVED 3u /* a reserved bit of LEN or CTRL is set */
#define MP_ERR_RING_CONFIG 4u /* ring base not 32-byte aligned (a descriptor would cross a 4 KiB page) or RING_SIZE not a power of two in range */
#define MP_ERR_BUS_ERROR 5u /* a memory request failed: unsupported request / completer abort / poisoned completion (e.g. an IOMMU fault) */
#define MP_ERR_TIMEOUT 6u /* no progress for TIMEOUT_US (read completion timeout, or no C2H source data) */
#define MP_ERR_ABORTED 7u /* software wrote CONTROL.ABORT */

/* Interrupt sources: bit in IRQ_STATUS/IRQ_ENABLE, and MSI vector when enough are granted */
#define MP_IRQ_C2H_DONE_BIT 0u
#define MP_IRQ_C2H_DONE_VECTOR 0u
#define MP_IRQ_H2C_DONE_BIT 1u
#define MP_IRQ_H2C_DONE_VECTOR 1u
#define MP_IRQ_ERROR_BIT 2u
#define MP_IRQ_ERROR_VECTOR 2u
#define MP_IRQ_SOURCES 3u

/* Name of an error code, for messages. */
static inline const char *mp_engine_error_name(unsigned int code)
{
	switch (code) {
	case MP_ERR_NONE: return "NONE";
	case MP_ERR_DESC_LENGTH: return "DESC_LENGTH";
	case MP_ERR_DESC_ALIGN: return "DESC_ALIGN";
	case MP_ERR_DESC_RESERVED: return "DESC_RESERVED";
	case MP_ERR_RING_CONFIG: return "RING_CONFIG";
	case MP_ERR_BUS_ERROR: return "BUS_ERROR";
	case MP_ERR_TIMEOUT: return "TIMEOUT";
	case MP_ERR_ABORTED: return "ABORTED";
	default: return "UNKNOWN";
	}
}

/* Register names, for tools that access registers by name. */
struct mp_reg_name { const char *name; uint32_t offset; const char *access; };
static const struct mp_reg_name mp_reg_names[] = {
	{ "MAGIC", 0x000u, "ro" },
	{ "VERSION", 0x004u, "ro" },
	{ "CAPS", 0x008u, "ro" },
	{ "CLOCK_MHZ", 0x00Cu, "ro" },
	{ "CONTROL", 0x010u, "rsc" },
	{ "SCRATCH", 0x014u, "rw" },
	{ "CYCLE_LO", 0x018u, "ro" },
	{ "CYCLE_HI", 0x01Cu, "ro" },
	{ "IRQ_STATUS", 0x020u, "w1c" },
	{ "IRQ_ENABLE", 0x024u, "rw" },
	{ "TEST_CONTROL", 0x080u, "rw" },
	{ "PATGEN_SEED", 0x084u, "rw" },
	{ "PATGEN_RATE", 0x088u, "rw" },
	{ "CHECK_SEED", 0x08Cu, "rw" },
	{ "CHECK_ERRORS", 0x090u, "ro" },
	{ "CHECK_WORDS", 0x094u, "ro" },
	{ "C2H_CONTROL", 0x100u, "rsc" },
	{ "C2H_STATUS", 0x104u, "ro" },
	{ "C2H_RING_BASE_LO", 0x108u, "rw" },
	{ "C2H_RING_BASE_HI", 0x10Cu, "rw" },
	{ "C2H_RING_SIZE", 0x110u, "rw" },
	{ "C2H_TAIL", 0x114u, "rw" },
	{ "C2H_HEAD", 0x118u, "ro" },
	{ "C2H_TIMEOUT_US", 0x11Cu, "rw" },
	{ "C2H_BYTES_LO", 0x120u, "ro" },
	{ "C2H_BYTES_HI", 0x124u, "ro" },
	{ "H2C_CONTROL", 0x140u, "rsc" },
	{ "H2C_STATUS", 0x144u, "ro" },
	{ "H2C_RING_BASE_LO", 0x148u, "rw" },
	{ "H2C_RING_BASE_HI", 0x14Cu, "rw" },
	{ "H2C_RING_SIZE", 0x150u, "rw" },
	{ "H2C_TAIL", 0x154u, "rw" },
	{ "H2C_HEAD", 0x158u, "ro" },
	{ "H2C_TIMEOUT_US", 0x15Cu, "rw" },
	{ "H2C_BYTES_LO", 0x160u, "ro" },
	{ "H2C_BYTES_HI", 0x164u, "ro" },
};
#define MP_REG_NAME_COUNT (sizeof(mp_reg_names) / sizeof(mp_reg_names[0]))

#endif /* MPRACE_ENGINE_SPEC_H */
