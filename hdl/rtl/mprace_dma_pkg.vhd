-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_pkg: what the engine's entities share that is not part of the engine specification:
-- the engine's own request and completion streams (vendor-neutral: PCIe TLP headers, not any hard
-- block's format), the control bundles between the register file and the channels, and small
-- helpers. What a vendor's PCIe block wants lives in that vendor's adapters (Xilinx:
-- mprace_pcie_us_pkg and the mprace_pcie_us_* entities).
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
  -- Datapath: the entities take its width as the generic data_w_g, 256 bits (8 dwords per beat)
  -- or 512 bits (16 dwords per beat, two segments of 8).
  --
  -- Request streams (the engine's requesters -> the request mux -> the vendor adapter): packets
  -- of beats (data, keep per dword, side, last). A TLP starts in lane 0, or at 512 bits also in
  -- lane 8 (the second segment, after a TLP that ended in the first: UltraScale+ straddling and
  -- the P-tile's two segments alike). Its first four dwords are the header slot: the PCIe TLP
  -- header (dword k of the header in lane k, header bit 31 the first byte's MSB), always in the
  -- 4-dword form with the 64-bit address; the payload follows from the fifth dword. A front end
  -- that puts headers on the link turns those below 4 GiB into the 3-dword form PCIe requires
  -- there (mprace_pcie_avst_tx); one that takes the address apart (the Xilinx RQ descriptor)
  -- reads it from dwords 2-3 (one fixed place: choosing the form in the core cost 1,600 LUTs
  -- at 512 bits). A packet
  -- ends with `last`; with two segments a packet may hold several TLPs back to back, and the
  -- beats where one TLP ends before lane 8 and the next starts in lane 8 say so in `side`:
  --   REQ_SOP_HI_c  a TLP starts in lane 8 of this beat
  --   REQ_EOP_MID_c a TLP ends in this beat before lane 8 and another continues
  --   REQ_EOP_PTR_c its last lane (4 bits)
  ---------------------------------------------------------------------------------------------
  constant REQ_SOP_HI_c  : natural := 0;
  constant REQ_EOP_MID_c : natural := 1;
  constant REQ_EOP_PTR_c : natural := 2;
  constant REQ_SIDE_W_c  : natural := 6;
  constant HDR_SLOT_DW_c : natural := 4;   -- dwords before the payload of a request

  -- PCIe TLP header fields the engine writes and the adapters read (PCIe Base Specification,
  -- memory requests): Fmt/Type in dword 0 bits 31:24, Length 9:0 (0 means 1024 dwords);
  -- dword 1: requester ID 31:16, tag 15:8, last/first DW byte enables 7:4 / 3:0; then the
  -- address, 64 bits in dwords 2-3 (4-dword header) or 32 bits in dword 2 (3-dword header).
  constant TLP_FMT_4DW_c  : natural := 29;   -- Fmt bit 0: 4-dword header
  constant TLP_FMT_DATA_c : natural := 30;   -- Fmt bit 1: with data (a write)
  -- a memory request for `dwords` (1 .. 1024) whole dwords at addr, in the 4-dword form
  function tlp_mem_req(addr : std_logic_vector(63 downto 0); dwords : unsigned(10 downto 0);
                       write : boolean; tag : natural) return std_logic_vector;
  function tlp_dwords(hdr : std_logic_vector(127 downto 0)) return unsigned;   -- 11 bits
  function tlp_tag(hdr : std_logic_vector(127 downto 0)) return std_logic_vector;   -- 8 bits
  function tlp_is_write(hdr : std_logic_vector(127 downto 0)) return boolean;
  function tlp_first_be(hdr : std_logic_vector(127 downto 0)) return std_logic_vector;
  function tlp_last_be(hdr : std_logic_vector(127 downto 0)) return std_logic_vector;

  -- Completion streams (vendor adapter -> the engine's requesters): payload-aligned beats (cpl_r)
  -- with the completion's tag, whether it ends its request, and what went wrong, if anything:
  --   CPL_OK_c       data as requested
  --   CPL_FAILED_c   the request failed: UR, CA, poisoned or malformed completion, tag unknown
  --   CPL_TIMEOUT_c  the block's completion timeout expired
  constant CPL_ERR_W_c   : natural := 2;
  constant CPL_OK_c      : std_logic_vector(CPL_ERR_W_c-1 downto 0) := "00";
  constant CPL_FAILED_c  : std_logic_vector(CPL_ERR_W_c-1 downto 0) := "01";
  constant CPL_TIMEOUT_c : std_logic_vector(CPL_ERR_W_c-1 downto 0) := "10";
  -- a completion beat, but for its payload (cpl_data, and cpl_keep marking its dwords from lane 0)
  type cpl_r is record
    valid : std_logic;
    sop   : std_logic;                                  -- the completion's first beat
    eop   : std_logic;                                  -- its last beat
    tag   : unsigned(7 downto 0);
    err   : std_logic_vector(CPL_ERR_W_c-1 downto 0);
    done  : std_logic;                                  -- the last completion of its request
    bytes : unsigned(12 downto 0);                      -- bytes of the request still to come,
  end record;                                           -- this completion's included

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
  function last_lane(keep : std_logic_vector) return natural;       -- highest set bit, from 0
  function to_sl(b : boolean) return std_logic;                    -- '1' for true
  function code(n : natural) return code_t;                        -- error code as a byte

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

  function last_lane(keep : std_logic_vector) return natural is
    variable n : natural := 0;
  begin
    for k in keep'low to keep'high loop
      if keep(k) = '1' then
        n := k - keep'low;
      end if;
    end loop;
    return n;
  end function;

  function to_sl(b : boolean) return std_logic is
  begin
    if b then
      return '1';
    end if;
    return '0';
  end function;

  function code(n : natural) return code_t is
  begin
    return std_logic_vector(to_unsigned(n, 8));
  end function;



  function tlp_mem_req(addr : std_logic_vector(63 downto 0); dwords : unsigned(10 downto 0);
                       write : boolean; tag : natural) return std_logic_vector is
    variable h : std_logic_vector(127 downto 0) := (others => '0');
  begin
    -- dword 0: Fmt, Type = 0 0000 (memory), TC, attributes, TD, EP, AT: 0; Length
    if write then
      h(TLP_FMT_DATA_c) := '1';
    end if;
    h(9 downto 0) := std_logic_vector(dwords(9 downto 0));   -- 1024 wraps to 0, as PCIe says
    -- dword 1: requester ID 0 (the block fills it in), tag, byte enables of whole dwords
    h(32+15 downto 32+8) := std_logic_vector(to_unsigned(tag, 8));
    h(32+3 downto 32) := "1111";
    if dwords > 1 then
      h(32+7 downto 32+4) := "1111";             -- a one-dword request has last BE 0
    end if;
    h(TLP_FMT_4DW_c) := '1';
    h(64+31 downto 64) := addr(63 downto 32);
    h(96+31 downto 96+2) := addr(31 downto 2);
    return h;
  end function;

  function tlp_dwords(hdr : std_logic_vector(127 downto 0)) return unsigned is
    variable n : unsigned(10 downto 0);
  begin
    n := '0' & unsigned(hdr(9 downto 0));
    if n = 0 then
      n := to_unsigned(1024, 11);
    end if;
    return n;
  end function;


  function tlp_tag(hdr : std_logic_vector(127 downto 0)) return std_logic_vector is
  begin
    return hdr(32+15 downto 32+8);
  end function;

  function tlp_is_write(hdr : std_logic_vector(127 downto 0)) return boolean is
  begin
    return hdr(TLP_FMT_DATA_c) = '1';
  end function;

  function tlp_first_be(hdr : std_logic_vector(127 downto 0)) return std_logic_vector is
  begin
    return hdr(32+3 downto 32);
  end function;

  function tlp_last_be(hdr : std_logic_vector(127 downto 0)) return std_logic_vector is
  begin
    return hdr(32+7 downto 32+4);
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
