-- SPDX-License-Identifier: GPL-2.0
-- Generated from spec/dma-engine.toml by spec/gen-spec.py: do not edit.
-- The register map, descriptor layout and error codes of the DMA engine (docs/dma-engine.md).
library ieee;
use ieee.std_logic_1164.all;

package engine_spec_pkg is

  constant MAGIC_c            : std_logic_vector(31 downto 0) := x"4D505243";
  constant VERSION_MAJOR_c    : natural := 1;
  constant VERSION_MINOR_c    : natural := 0;
  constant BAR0_SIZE_c        : natural := 4096;
  constant GRANULE_c          : natural := 4;
  constant MAX_DESC_LEN_c     : natural := 16777216;
  constant DESC_SIZE_c        : natural := 32;
  constant RING_MIN_ENTRIES_c : natural := 2;
  constant RING_MAX_ENTRIES_c : natural := 65536;
  constant PAGE_SIZE_c        : natural := 4096;

  -- Global registers (byte offsets in BAR0)
  constant REG_MAGIC_c : natural := 16#000#;
  constant REG_VERSION_c : natural := 16#004#;
  constant VERSION_MINOR_LSB_c : natural := 0;
  constant VERSION_MINOR_WIDTH_c : natural := 16;
  constant VERSION_MAJOR_LSB_c : natural := 16;
  constant VERSION_MAJOR_WIDTH_c : natural := 16;
  constant REG_CAPS_c : natural := 16#008#;
  constant CAPS_DATAPATH_BYTES_LSB_c : natural := 0;
  constant CAPS_DATAPATH_BYTES_WIDTH_c : natural := 8;
  constant CAPS_C2H_CHANNELS_LSB_c : natural := 8;
  constant CAPS_C2H_CHANNELS_WIDTH_c : natural := 4;
  constant CAPS_H2C_CHANNELS_LSB_c : natural := 12;
  constant CAPS_H2C_CHANNELS_WIDTH_c : natural := 4;
  constant CAPS_MPS_LSB_c : natural := 16;
  constant CAPS_MPS_WIDTH_c : natural := 3;
  constant CAPS_MRRS_LSB_c : natural := 19;
  constant CAPS_MRRS_WIDTH_c : natural := 3;
  constant CAPS_PATGEN_LSB_c : natural := 24;
  constant CAPS_PATGEN_WIDTH_c : natural := 1;
  constant CAPS_CHECKER_LSB_c : natural := 25;
  constant CAPS_CHECKER_WIDTH_c : natural := 1;
  constant CAPS_LOOPBACK_LSB_c : natural := 26;
  constant CAPS_LOOPBACK_WIDTH_c : natural := 1;
  constant CAPS_MSI_VECTORS_LSB_c : natural := 28;
  constant CAPS_MSI_VECTORS_WIDTH_c : natural := 4;
  constant REG_CLOCK_MHZ_c : natural := 16#00C#;
  constant REG_CONTROL_c : natural := 16#010#;
  constant CONTROL_RESET_LSB_c : natural := 0;
  constant CONTROL_RESET_WIDTH_c : natural := 1;
  constant REG_SCRATCH_c : natural := 16#014#;
  constant REG_CYCLE_LO_c : natural := 16#018#;
  constant REG_CYCLE_HI_c : natural := 16#01C#;
  constant REG_IRQ_STATUS_c : natural := 16#020#;
  constant IRQ_STATUS_C2H_DONE_LSB_c : natural := 0;
  constant IRQ_STATUS_C2H_DONE_WIDTH_c : natural := 1;
  constant IRQ_STATUS_H2C_DONE_LSB_c : natural := 1;
  constant IRQ_STATUS_H2C_DONE_WIDTH_c : natural := 1;
  constant IRQ_STATUS_ERROR_LSB_c : natural := 2;
  constant IRQ_STATUS_ERROR_WIDTH_c : natural := 1;
  constant REG_IRQ_ENABLE_c : natural := 16#024#;
  constant IRQ_ENABLE_C2H_DONE_LSB_c : natural := 0;
  constant IRQ_ENABLE_C2H_DONE_WIDTH_c : natural := 1;
  constant IRQ_ENABLE_H2C_DONE_LSB_c : natural := 1;
  constant IRQ_ENABLE_H2C_DONE_WIDTH_c : natural := 1;
  constant IRQ_ENABLE_ERROR_LSB_c : natural := 2;
  constant IRQ_ENABLE_ERROR_WIDTH_c : natural := 1;
  constant REG_TEST_CONTROL_c : natural := 16#080#;
  constant TEST_CONTROL_C2H_SOURCE_LSB_c : natural := 0;
  constant TEST_CONTROL_C2H_SOURCE_WIDTH_c : natural := 2;
  constant TEST_CONTROL_H2C_SINK_LSB_c : natural := 4;
  constant TEST_CONTROL_H2C_SINK_WIDTH_c : natural := 2;
  constant REG_PATGEN_SEED_c : natural := 16#084#;
  constant REG_PATGEN_RATE_c : natural := 16#088#;
  constant REG_CHECK_SEED_c : natural := 16#08C#;
  constant REG_CHECK_ERRORS_c : natural := 16#090#;
  constant REG_CHECK_WORDS_c : natural := 16#094#;

  -- Channels
  constant CH_C2H_c : natural := 0;
  constant CH_C2H_BASE_c : natural := 16#100#;
  constant CH_H2C_c : natural := 1;
  constant CH_H2C_BASE_c : natural := 16#140#;

  -- Per-channel registers (byte offsets from the channel base)
  constant CHREG_CONTROL_c : natural := 16#00#;
  constant CH_CONTROL_RUN_LSB_c : natural := 0;
  constant CH_CONTROL_RUN_WIDTH_c : natural := 1;
  constant CH_CONTROL_ABORT_LSB_c : natural := 1;
  constant CH_CONTROL_ABORT_WIDTH_c : natural := 1;
  constant CH_CONTROL_RESET_LSB_c : natural := 2;
  constant CH_CONTROL_RESET_WIDTH_c : natural := 1;
  constant CHREG_STATUS_c : natural := 16#04#;
  constant CH_STATUS_STATE_LSB_c : natural := 0;
  constant CH_STATUS_STATE_WIDTH_c : natural := 2;
  constant CH_STATUS_BUSY_LSB_c : natural := 2;
  constant CH_STATUS_BUSY_WIDTH_c : natural := 1;
  constant CH_STATUS_ERROR_CODE_LSB_c : natural := 8;
  constant CH_STATUS_ERROR_CODE_WIDTH_c : natural := 8;
  constant CHREG_RING_BASE_LO_c : natural := 16#08#;
  constant CHREG_RING_BASE_HI_c : natural := 16#0C#;
  constant CHREG_RING_SIZE_c : natural := 16#10#;
  constant CHREG_TAIL_c : natural := 16#14#;
  constant CHREG_HEAD_c : natural := 16#18#;
  constant CHREG_TIMEOUT_US_c : natural := 16#1C#;
  constant CHREG_BYTES_LO_c : natural := 16#20#;
  constant CHREG_BYTES_HI_c : natural := 16#24#;

  -- Channel states
  constant STATE_IDLE_c    : natural := 0;
  constant STATE_RUNNING_c : natural := 1;
  constant STATE_ERROR_c   : natural := 2;

  -- Descriptor words (byte offsets)
  constant DESC_ADDR_LO_c : natural := 16#00#;
  constant DESC_ADDR_HI_c : natural := 16#04#;
  constant DESC_LEN_c : natural := 16#08#;
  constant DESC_LEN_BYTES_LSB_c : natural := 0;
  constant DESC_LEN_BYTES_WIDTH_c : natural := 25;
  constant DESC_CTRL_c : natural := 16#0C#;
  constant DESC_CTRL_IRQ_LSB_c : natural := 0;
  constant DESC_CTRL_IRQ_WIDTH_c : natural := 1;
  constant DESC_CTRL_EOP_LSB_c : natural := 1;
  constant DESC_CTRL_EOP_WIDTH_c : natural := 1;
  constant DESC_CTRL_STOP_LSB_c : natural := 2;
  constant DESC_CTRL_STOP_WIDTH_c : natural := 1;
  constant DESC_RESULT_BYTES_c : natural := 16#10#;
  constant DESC_RESULT_STATUS_c : natural := 16#14#;
  constant DESC_RESULT_STATUS_DONE_LSB_c : natural := 0;
  constant DESC_RESULT_STATUS_DONE_WIDTH_c : natural := 1;
  constant DESC_RESULT_STATUS_ERROR_LSB_c : natural := 1;
  constant DESC_RESULT_STATUS_ERROR_WIDTH_c : natural := 1;
  constant DESC_RESULT_STATUS_EOP_LSB_c : natural := 2;
  constant DESC_RESULT_STATUS_EOP_WIDTH_c : natural := 1;
  constant DESC_RESULT_STATUS_ERROR_CODE_LSB_c : natural := 8;
  constant DESC_RESULT_STATUS_ERROR_CODE_WIDTH_c : natural := 8;
  constant DESC_SW_COOKIE_LO_c : natural := 16#18#;
  constant DESC_SW_COOKIE_HI_c : natural := 16#1C#;

  -- Error codes
  constant ERR_NONE_c : natural := 0;
  constant ERR_DESC_LENGTH_c : natural := 1;
  constant ERR_DESC_ALIGN_c : natural := 2;
  constant ERR_DESC_RESERVED_c : natural := 3;
  constant ERR_RING_CONFIG_c : natural := 4;
  constant ERR_BUS_ERROR_c : natural := 5;
  constant ERR_TIMEOUT_c : natural := 6;
  constant ERR_ABORTED_c : natural := 7;

  -- Interrupt sources (IRQ_STATUS bit, MSI vector)
  constant IRQ_C2H_DONE_BIT_c : natural := 0;
  constant IRQ_C2H_DONE_VECTOR_c : natural := 0;
  constant IRQ_H2C_DONE_BIT_c : natural := 1;
  constant IRQ_H2C_DONE_VECTOR_c : natural := 1;
  constant IRQ_ERROR_BIT_c : natural := 2;
  constant IRQ_ERROR_VECTOR_c : natural := 2;

end package engine_spec_pkg;
