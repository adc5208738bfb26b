-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_pkg: what the engine's entities share that is not part of the engine specification:
-- the Xilinx AXI4-Stream interfaces' sideband widths at 256 bits (PG156) and 512 bits (PG213,
-- DWORD-aligned mode), the engine's internal RQ sideband, the control bundles between the
-- register file and the channels, and small helpers.
-- The register map, descriptor layout and error codes come from engine_spec_pkg (generated from
-- spec/dma-engine.toml); this package never repeats them.
-- Spec: docs/dma-engine.md (sections 1, 4 and 5).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;

package mprace_dma_pkg is

  ---------------------------------------------------------------------------------------------
  -- Datapath: the entities take its width as the generic data_w_g, 256 bits (8 dwords per beat:
  -- 7-series Gen3 / UltraScale, PG023 / PG156, Gen3 x8) or 512 bits (16 dwords per beat:
  -- UltraScale+, PG213, Gen3 x16 / Gen4 x8), both at 250 MHz. Inside, the request streams carry
  -- the 256-bit interface's RQ sideband (RQ_USER_W_c); the adapters at the top convert.
  ---------------------------------------------------------------------------------------------
  -- sideband widths of the core's interfaces at a datapath width (PG156 at 256, PG213 at 512)
  function cq_user_w(data_w : positive) return positive;
  function cc_user_w(data_w : positive) return positive;
  function rq_user_w(data_w : positive) return positive;
  function rc_user_w(data_w : positive) return positive;
  -- cfg_max_payload: 3 bits on the Gen3 cores, 2 on UltraScale+
  function cfg_mps_w(data_w : positive) return positive;

  -- The engine's internal RQ sideband: the 256-bit interface's layout in 59:0, then what a
  -- straddled beat of the 512-bit interface needs besides (the C2H write engine packs a TLP
  -- into the upper half of the beat that ends the one before it):
  --   RQU_SOP_HI_c  the TLP starting in this beat starts in lane 8 (its byte enables in 7:0)
  --   RQU_EOP_MID_c a TLP ends in this beat before lane 8 and another continues
  --   RQU_EOP_PTR_c its last lane (4 bits)
  constant RQU_SOP_HI_c  : natural := 60;
  constant RQU_EOP_MID_c : natural := 61;
  constant RQU_EOP_PTR_c : natural := 62;
  constant RQ_USER_W_c   : natural := 66;

  -- requester request types (RQ descriptor dword 2, bits 14:11) and completion status
  constant REQ_MEM_READ_c  : std_logic_vector(3 downto 0) := "0000";
  constant REQ_MEM_WRITE_c : std_logic_vector(3 downto 0) := "0001";
  constant CPL_SC_c        : std_logic_vector(2 downto 0) := "000";
  constant CPL_UR_c        : std_logic_vector(2 downto 0) := "001";
  constant CPL_CA_c        : std_logic_vector(2 downto 0) := "100";

  -- requester completion error codes (RC descriptor dword 0, bits 15:12)
  constant RC_ERR_NONE_c      : std_logic_vector(3 downto 0) := "0000";
  constant RC_ERR_INV_TAG_c   : std_logic_vector(3 downto 0) := "0110";
  constant RC_ERR_TIMEOUT_c   : std_logic_vector(3 downto 0) := "1001";

  -- fixed tags: one outstanding descriptor fetch per channel; H2C data uses the others
  constant FETCH_TAG_C2H_c : natural := 0;
  constant FETCH_TAG_H2C_c : natural := 1;
  constant FIRST_DATA_TAG_c : natural := 2;
  constant TAG_COUNT_c     : natural := 32;   -- 5-bit tags: extended tags need not be enabled

  -- Largest payload the engine emits and largest read request it issues (bytes).
  -- 1024 is the largest MPS of the Gen3 core. Reads stop at 2048: a 4096-byte read may come
  -- back as 65 completions of 64 bytes, more than the 64 completion headers the core buffers.
  constant MAX_MPS_c  : natural := 1024;
  constant MAX_MRRS_c : natural := 2048;

  -- a descriptor fetched from the ring, or the error that stands in its place
  constant FETCH_MAX_DESC_c : natural := 8;   -- descriptors per fetch request (256 bytes)

  subtype dword_t  is std_logic_vector(31 downto 0);
  subtype code_t   is std_logic_vector(7 downto 0);
  subtype pos_t    is unsigned(31 downto 0);     -- free-running dword position in a ring
  subtype len_t    is unsigned(DESC_LEN_BYTES_WIDTH_c-1 downto 0);   -- descriptor LEN.BYTES
  constant SLOT_W_c : natural := 16;             -- ring slot; the top checks 2**16 = ring_max

  ---------------------------------------------------------------------------------------------
  -- Register file -> channel, and channel -> register file (one bundle per channel)
  ---------------------------------------------------------------------------------------------
  type chan_ctrl_r is record
    ring_base  : std_logic_vector(63 downto 0);
    ring_size  : std_logic_vector(31 downto 0);
    tail       : std_logic_vector(31 downto 0);
    head       : std_logic_vector(31 downto 0);
    timeout_us : std_logic_vector(31 downto 0);
    run        : std_logic;   -- CONTROL.RUN while STATE = RUNNING: may start descriptors
    abort      : std_logic;   -- pulse: CONTROL.ABORT written (never in STATE = ERROR)
    reset      : std_logic;   -- pulse: CONTROL.RESET of the channel or the global reset
  end record;
  constant CHAN_CTRL_INIT_c : chan_ctrl_r := (
    ring_base => (others => '0'), ring_size => (others => '0'), tail => (others => '0'),
    head => (others => '0'), timeout_us => (others => '0'), run => '0', abort => '0',
    reset => '0');

  type chan_stat_r is record
    done      : std_logic;                       -- pulse: a descriptor completed, record written
    err       : std_logic;                       -- pulse: the channel stopped with err_code
    err_code  : code_t;
    bytes     : len_t;           -- bytes moved by the descriptor (done or err)
    irq       : std_logic;                       -- with done: CTRL.IRQ of the descriptor
    stop      : std_logic;                       -- with done: CTRL.STOP of the descriptor
    busy      : std_logic;                       -- STATUS.BUSY
    idle      : std_logic;                       -- nothing in flight: RUNNING may become IDLE
  end record;
  constant CHAN_STAT_INIT_c : chan_stat_r := (
    done => '0', err => '0', err_code => (others => '0'), bytes => (others => '0'),
    irq => '0', stop => '0', busy => '0', idle => '1');

  type chan_ctrl_arr_t is array (0 to 1) of chan_ctrl_r;
  type chan_stat_arr_t is array (0 to 1) of chan_stat_r;

  -- Link settings in use (from the core's configuration status interface)
  type link_cfg_r is record
    mps_dw   : unsigned(10 downto 0);   -- max payload size in dwords (32 .. 256)
    mrrs_dw  : unsigned(10 downto 0);   -- max read request size in dwords (32 .. 1024)
    rcb128   : std_logic;               -- read completion boundary is 128 (else 64) bytes
  end record;

  ---------------------------------------------------------------------------------------------
  -- A fetched descriptor as the fetcher hands it to its channel
  ---------------------------------------------------------------------------------------------
  constant DESC_ENTRY_W_c : natural := 64 + DESC_LEN_BYTES_WIDTH_c + 3 + SLOT_W_c + 8 + 1;
  type desc_entry_r is record
    addr  : std_logic_vector(63 downto 0);
    len   : len_t;
    irq   : std_logic;
    eop   : std_logic;
    stop  : std_logic;
    slot  : unsigned(SLOT_W_c-1 downto 0);
    err   : code_t;       -- ERR_NONE_c, or the error that ends the channel at this descriptor
    rec   : std_logic;    -- with err: write the completion record of this slot
  end record;
  function desc_pack(d : desc_entry_r) return std_logic_vector;
  function desc_unpack(s : std_logic_vector(DESC_ENTRY_W_c-1 downto 0)) return desc_entry_r;

  ---------------------------------------------------------------------------------------------
  -- Helpers
  ---------------------------------------------------------------------------------------------
  -- Elaboration check of a data_w_g generic: fails with unit_name unless it is 256 or 512.
  -- Each entity calls it in its first constant, before anything is derived from the width.
  function datapath_ok(unit_name : string; data_w : positive) return boolean;
  function log2ceil(n : positive) return natural;
  function dw(b : std_logic_vector; i : natural) return dword_t;   -- dword i of a beat
  function ones(n : natural; width : natural) return std_logic_vector;   -- n low bits of width set
  function count_ones(s : std_logic_vector) return natural;
  function code(n : natural) return code_t;                        -- error code as a byte

  -- RQ descriptor (4 dwords) for a memory request, requester ID filled in by the core
  function rq_desc(addr : std_logic_vector(63 downto 0); dwords : unsigned(10 downto 0);
                   req : std_logic_vector(3 downto 0); tag : natural) return std_logic_vector;
  -- RQ sideband for a request of `dwords` full dwords
  function rq_user(dwords : unsigned(10 downto 0)) return std_logic_vector;
  -- completion record (RESULT_BYTES, RESULT_STATUS) as two dwords, RESULT_BYTES in 31:0
  function result_record(bytes : len_t; eop : std_logic; err : code_t)
    return std_logic_vector;

end package mprace_dma_pkg;

package body mprace_dma_pkg is

  function desc_pack(d : desc_entry_r) return std_logic_vector is
  begin
    return d.addr & std_logic_vector(d.len) & d.irq & d.eop & d.stop &
           std_logic_vector(d.slot) & d.err & d.rec;
  end function;

  function desc_unpack(s : std_logic_vector(DESC_ENTRY_W_c-1 downto 0)) return desc_entry_r is
    variable d : desc_entry_r;
    variable i : natural := DESC_ENTRY_W_c;
  begin
    i := i - 64;                      d.addr := s(i+63 downto i);
    i := i - DESC_LEN_BYTES_WIDTH_c;  d.len  := unsigned(s(i+DESC_LEN_BYTES_WIDTH_c-1 downto i));
    i := i - 1;                       d.irq  := s(i);
    i := i - 1;                       d.eop  := s(i);
    i := i - 1;                       d.stop := s(i);
    i := i - SLOT_W_c;                d.slot := unsigned(s(i+SLOT_W_c-1 downto i));
    i := i - 8;                       d.err  := s(i+7 downto i);
    d.rec := s(0);
    return d;
  end function;

  function cq_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 183; else return 85; end if;
  end function;

  function cc_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 81; else return 33; end if;
  end function;

  function rq_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 137; else return 60; end if;
  end function;

  function rc_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 161; else return 75; end if;
  end function;

  function cfg_mps_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 2; else return 3; end if;
  end function;

  function datapath_ok(unit_name : string; data_w : positive) return boolean is
  begin
    assert data_w = 256 or data_w = 512
      report unit_name & ": data_w_g is 256 or 512 bits, not " & integer'image(data_w)
      severity failure;
    return data_w = 256 or data_w = 512;
  end function;

  function log2ceil(n : positive) return natural is
    variable r : natural := 0;
  begin
    while 2**r < n loop
      r := r + 1;
    end loop;
    return r;
  end function;

  function dw(b : std_logic_vector; i : natural) return dword_t is
    variable t : std_logic_vector(b'length-1 downto 0) := b;
  begin
    return t(32*i+31 downto 32*i);
  end function;

  function ones(n : natural; width : natural) return std_logic_vector is
    variable r : std_logic_vector(width-1 downto 0) := (others => '0');
  begin
    for i in 0 to width-1 loop
      if i < n then
        r(i) := '1';
      end if;
    end loop;
    return r;
  end function;

  function count_ones(s : std_logic_vector) return natural is
    variable n : natural := 0;
  begin
    for i in s'range loop
      if s(i) = '1' then
        n := n + 1;
      end if;
    end loop;
    return n;
  end function;

  function code(n : natural) return code_t is
  begin
    return std_logic_vector(to_unsigned(n, 8));
  end function;

  function rq_desc(addr : std_logic_vector(63 downto 0); dwords : unsigned(10 downto 0);
                   req : std_logic_vector(3 downto 0); tag : natural) return std_logic_vector is
    variable d : std_logic_vector(127 downto 0) := (others => '0');
  begin
    d(31 downto 2)   := addr(31 downto 2);       -- 1:0 address type: untranslated
    d(63 downto 32)  := addr(63 downto 32);
    d(74 downto 64)  := std_logic_vector(dwords);
    d(78 downto 75)  := req;                     -- 79 poisoned, 95:80 requester ID: 0
    d(103 downto 96) := std_logic_vector(to_unsigned(tag, 8));
    return d;                                    -- completer ID, TC, attributes, ECRC: 0
  end function;

  function rq_user(dwords : unsigned(10 downto 0)) return std_logic_vector is
    variable u : std_logic_vector(RQ_USER_W_c-1 downto 0) := (others => '0');
  begin
    u(3 downto 0) := "1111";                     -- first_be
    if dwords > 1 then
      u(7 downto 4) := "1111";                   -- last_be (0 for one-dword requests)
    end if;
    return u;                                    -- addr_offset, discontinue, TPH, parity: 0
  end function;

  function result_record(bytes : len_t; eop : std_logic; err : code_t)
    return std_logic_vector is
    variable st : dword_t := (others => '0');
    variable by : dword_t := (others => '0');
  begin
    by(bytes'length-1 downto 0) := std_logic_vector(bytes);
    st(DESC_RESULT_STATUS_DONE_LSB_c) := '1';
    st(DESC_RESULT_STATUS_EOP_LSB_c)  := eop;
    if err /= code(ERR_NONE_c) then
      st(DESC_RESULT_STATUS_ERROR_LSB_c) := '1';
    end if;
    st(DESC_RESULT_STATUS_ERROR_CODE_LSB_c + DESC_RESULT_STATUS_ERROR_CODE_WIDTH_c - 1
       downto DESC_RESULT_STATUS_ERROR_CODE_LSB_c) := err;
    return st & by;
  end function;

end package body mprace_dma_pkg;
