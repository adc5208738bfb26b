-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_desc_fetch: reads a channel's descriptors from its ring in host memory, ahead of
-- the engine but never beyond TAIL, checks each one and queues it for the channel in order.
--   * Before each fetch it checks the ring configuration (RING_BASE 32-byte aligned, RING_SIZE a
--     power of two in range, TAIL - HEAD <= RING_SIZE); a bad ring queues RING_CONFIG.
--   * One read is outstanding at a time, with the channel's own tag; it covers up to
--     FETCH_MAX_DESC_c descriptors, stops at the end of the ring and at 4 KiB boundaries, never
--     exceeds MRRS, and only asks for descriptors it has room for in its queue.
--   * Completions carry whole descriptors (they are split only at RCB boundaries, multiples of
--     the 32-byte descriptor size) and the vendor adapter puts their payload in lane 0 on, so every
--     descriptor fills lanes 8m..8m+7 of a beat: at 256 bits one per beat, at 512 bits up to
--     two. Those beyond the first wait in a small queue in front of the FIFO (the FIFO takes
--     one per clock), and the next fetch waits until it is empty.
--   * Each descriptor is checked in the order of the spec: reserved bits (DESC_RESERVED), length
--     (DESC_LENGTH), alignment (DESC_ALIGN). A failed fetch (UR/CA/poisoned: BUS_ERROR, the
--     core's completion timeout: TIMEOUT) queues that error in place of the descriptors.
--   * After queueing a ring or fetch error it fetches nothing more. A descriptor that fails its
--     checks is queued with its code and fetching goes on up to TAIL (section 4 allows fetching
--     ahead; the channel stops at that entry and disables the fetcher). enable = '0' empties
--     the queue and forgets a fetch in flight (its completion is dropped); fetching restarts at
--     HEAD.
-- Spec: docs/dma-engine.md sections 2 (ring), 3 (limits), 4 (channel operation) and 5 (errors).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_desc_fetch is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    tag_g        : natural := 0;
    fifo_log2_g  : positive := 4
  );
  port (
    clk       : in  std_logic;
    rst       : in  std_logic;
    ctrl      : in  chan_ctrl_r;
    enable    : in  std_logic;
    mrrs_dw   : in  unsigned(10 downto 0);
    -- read request (one request packet)
    req_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    req_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0);
    req_side   : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    req_tlast  : out std_logic;
    req_tvalid : out std_logic;
    req_tready : in  std_logic;
    -- completions (all tags; this block takes tag_g)
    cpl        : in  cpl_r;
    cpl_data   : in  std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : in  std_logic_vector(data_w_g/32-1 downto 0);
    -- descriptor queue
    desc_valid : out std_logic;
    desc_ready : in  std_logic;
    desc       : out desc_entry_r;
    -- status
    busy       : out std_logic;   -- a fetch is outstanding
    cpl_seen   : out std_logic    -- pulse: a completion beat for this fetcher arrived
  );
end entity mprace_dma_desc_fetch;

architecture rtl of mprace_dma_desc_fetch is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_desc_fetch", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;
  constant PER_BEAT_c : natural := LANES_c / 8;          -- descriptors in one beat
  constant PEND_c     : natural := (PER_BEAT_c - 1) * FETCH_MAX_DESC_c + 1;

  constant DEPTH_c      : natural := 2**fifo_log2_g;
  constant DESC_LOG2_c  : natural := log2ceil(DESC_SIZE_c);
  constant PAGE_LOG2_c  : natural := log2ceil(PAGE_SIZE_c);
  constant CTRL_MASK_c  : dword_t := (DESC_CTRL_IRQ_LSB_c => '1', DESC_CTRL_EOP_LSB_c => '1',
                                      DESC_CTRL_STOP_LSB_c => '1', others => '0');

  type entries_t is array (natural range <>) of desc_entry_r;

  type two_process_r is record
    fptr        : unsigned(31 downto 0);   -- next descriptor to fetch
    synced      : std_logic;               -- fptr is valid (taken from HEAD)
    stopped     : std_logic;               -- an error was queued
    outstanding : std_logic;
    discard     : std_logic;               -- drop the completions of the fetch in flight
    req_valid   : std_logic;
    req_addr    : std_logic_vector(63 downto 0);
    req_dw      : unsigned(10 downto 0);
    want        : unsigned(4 downto 0);    -- descriptors still expected from the fetch
    pend        : entries_t(0 to PEND_c-1);  -- taken from completions, not yet in the FIFO
    pn          : natural range 0 to PEND_c;
    push        : std_logic;
    entry       : desc_entry_r;
    seen        : std_logic;
  end record;
  constant ENTRY_INIT_c : desc_entry_r := (addr => (others => '0'), len => (others => '0'),
    irq => '0', eop => '0', stop => '0', slot => (others => '0'), err => (others => '0'),
    rec => '0');
  type fresh_t is array (0 to PER_BEAT_c-1) of desc_entry_r;
  type cand_t is array (0 to PEND_c + PER_BEAT_c - 1) of desc_entry_r;
  constant R_INIT_c : two_process_r := (
    fptr => (others => '0'), synced => '0', stopped => '0', outstanding => '0',
    discard => '0', req_valid => '0', req_addr => (others => '0'), req_dw => (others => '0'),
    want => (others => '0'),
    pend => (others => ENTRY_INIT_c), pn => 0, push => '0',
    entry => ENTRY_INIT_c, seen => '0');

  signal r, r_next  : two_process_r := R_INIT_c;
  signal f_in_ready : std_logic;
  signal f_level    : unsigned(fifo_log2_g downto 0);
  signal f_out      : std_logic_vector(DESC_ENTRY_W_c-1 downto 0);
  signal f_flush    : std_logic;
  signal f_in       : std_logic_vector(DESC_ENTRY_W_c-1 downto 0);

  function umin(a, b : unsigned) return unsigned is
  begin
    if a < b then return a; else return b; end if;
  end function;

  -- the checks of section 4, step 3, after RING_CONFIG
  function check(d0, d1, d2, d3 : dword_t) return code_t is
    variable len : unsigned(DESC_LEN_BYTES_WIDTH_c-1 downto 0);
  begin
    len := unsigned(d2(DESC_LEN_BYTES_WIDTH_c-1 downto 0));
    if unsigned(d2(31 downto DESC_LEN_BYTES_WIDTH_c)) /= 0 or (d3 and not CTRL_MASK_c) /= x"00000000" then
      return code(ERR_DESC_RESERVED_c);
    elsif len = 0 or len > MAX_DESC_LEN_c then
      return code(ERR_DESC_LENGTH_c);
    elsif unsigned(d0(log2ceil(GRANULE_c)-1 downto 0)) /= 0 or
          len(log2ceil(GRANULE_c)-1 downto 0) /= 0 then
      return code(ERR_DESC_ALIGN_c);
    end if;
    return code(ERR_NONE_c);
  end function;

begin

  p_comb : process(all)
    variable v        : two_process_r;
    variable size     : unsigned(31 downto 0);
    variable ring_ok  : boolean;
    variable slot     : unsigned(31 downto 0);
    variable addr     : unsigned(63 downto 0);
    variable n        : unsigned(31 downto 0);
    variable room     : unsigned(31 downto 0);
    variable d0       : natural;
    variable fresh    : fresh_t;
    variable nfresh   : natural range 0 to PER_BEAT_c;
    variable cand     : cand_t;
    variable total    : natural range 0 to PEND_c + PER_BEAT_c;
    variable want     : unsigned(4 downto 0);
    variable e        : desc_entry_r;
  begin
    v := r;
    v.push := '0';
    v.seen := '0';
    size := unsigned(ctrl.ring_size);

    -------------------------------------------------------------------- request
    if r.req_valid = '1' and req_tready = '1' then
      v.req_valid := '0';
    end if;

    ring_ok := unsigned(ctrl.ring_base(DESC_LOG2_c-1 downto 0)) = 0 and
               size >= RING_MIN_ENTRIES_c and size <= RING_MAX_ENTRIES_c and
               (size and (size - 1)) = 0 and
               unsigned(ctrl.tail) - unsigned(ctrl.head) <= size;
    slot := r.fptr and (size - 1);
    addr := unsigned(ctrl.ring_base) + shift_left(resize(slot, 64), DESC_LOG2_c);
    -- room in the queue: free entries minus the pending push
    room := resize(DEPTH_c - f_level, 32);
    if r.push = '1' then
      room := room - 1;
    end if;
    n := unsigned(ctrl.tail) - r.fptr;                                   -- queued by software
    n := umin(n, size - slot);                                           -- to the ring end
    n := umin(n, to_unsigned(PAGE_SIZE_c / DESC_SIZE_c, 32) -                 -- 4 KiB page
                 shift_right(resize(addr(PAGE_LOG2_c-1 downto 0), 32), DESC_LOG2_c));
    n := umin(n, to_unsigned(FETCH_MAX_DESC_c, 32));
    n := umin(n, resize(shift_right(mrrs_dw, 3), 32));                   -- MRRS
    n := umin(n, room);

    if enable = '1' and r.synced = '1' and r.stopped = '0' and r.outstanding = '0' and
       r.pn = 0 and r.fptr /= unsigned(ctrl.tail) and room /= 0 then
      if not ring_ok then
        v.push    := '1';
        v.entry   := ENTRY_INIT_c;
        v.entry.err := code(ERR_RING_CONFIG_c);
        v.entry.rec := '0';
        v.stopped := '1';
      elsif n /= 0 then
        v.req_valid   := '1';
        v.req_addr    := std_logic_vector(addr);
        v.req_dw      := resize(shift_left(n, 3), 11);
        v.want        := resize(n, 5);
        v.outstanding := '1';
        v.discard     := '0';
      end if;
    end if;

    -------------------------------------------------------------------- completions
    nfresh := 0;
    fresh  := (others => ENTRY_INIT_c);
    want   := v.want;              -- set by a request issued now, if any
    if cpl.valid = '1' and cpl.tag = tag_g and r.outstanding = '1' then
      v.seen := '1';
      if cpl.sop = '1' and cpl.err /= CPL_OK_c then
        if r.discard = '0' and r.stopped = '0' then
          e := ENTRY_INIT_c;
          if cpl.err = CPL_TIMEOUT_c then
            e.err := code(ERR_TIMEOUT_c);
          else
            e.err := code(ERR_BUS_ERROR_c);
          end if;
          fresh(0)  := e;
          nfresh    := 1;
          v.stopped := '1';
        end if;
      elsif cpl.err = CPL_OK_c then
        for m in 0 to PER_BEAT_c-1 loop
          d0 := 8 * m;                     -- descriptor m of the beat: lanes d0 .. d0+7
          if cpl_keep(d0 + 7) = '1' and want /= 0 then
            want := want - 1;
            if r.discard = '0' and r.stopped = '0' then
              e.addr := dw(cpl_data, d0+1) & dw(cpl_data, d0);
              e.len  := unsigned(dw(cpl_data, d0+2)(DESC_LEN_BYTES_WIDTH_c-1 downto 0));
              e.irq  := dw(cpl_data, d0+3)(DESC_CTRL_IRQ_LSB_c);
              e.eop  := dw(cpl_data, d0+3)(DESC_CTRL_EOP_LSB_c);
              e.stop := dw(cpl_data, d0+3)(DESC_CTRL_STOP_LSB_c);
              e.slot := resize(v.fptr and (size - 1), SLOT_W_c);
              e.err  := check(dw(cpl_data, d0), dw(cpl_data, d0+1), dw(cpl_data, d0+2),
                              dw(cpl_data, d0+3));
              e.rec  := '1';
              v.fptr := v.fptr + 1;
              fresh(nfresh) := e;
              nfresh := nfresh + 1;
            end if;
          end if;
        end loop;
      end if;
      if cpl.eop = '1' and cpl.done = '1' then
        v.outstanding := '0';
        v.discard     := '0';
      end if;
    end if;
    v.want := want;

    -- into the FIFO in order: what waits first, then what arrived now
    cand := (others => ENTRY_INIT_c);
    for i in 0 to PEND_c-1 loop
      if i < r.pn then
        cand(i) := r.pend(i);
      end if;
    end loop;
    for i in cand'range loop
      for k in 0 to PER_BEAT_c-1 loop
        if r.pn + k = i and k < nfresh then
          cand(i) := fresh(k);
        end if;
      end loop;
    end loop;
    total := r.pn + nfresh;
    if total /= 0 then
      v.push  := '1';
      v.entry := cand(0);
      for i in 0 to PEND_c-1 loop
        v.pend(i) := cand(i + 1);
      end loop;
      v.pn := total - 1;
    end if;

    -------------------------------------------------------------------- enable / restart
    if enable = '0' then
      v.synced  := '0';
      v.stopped := '0';
      v.push    := '0';
      v.pn      := 0;
      if v.outstanding = '1' then
        v.discard := '1';
      end if;
    elsif r.synced = '0' and r.outstanding = '0' then
      v.fptr   := unsigned(ctrl.head);
      v.synced := '1';
    end if;

    r_next <= v;
  end process;

  f_flush <= not enable;
  f_in    <= desc_pack(r.entry);

  i_fifo : entity work.mprace_fifo
    generic map (width_g => DESC_ENTRY_W_c, depth_log2_g => fifo_log2_g)
    port map (
      clk => clk, rst => rst, flush => f_flush,
      in_valid => r.push, in_ready => f_in_ready, in_data => f_in,
      out_valid => desc_valid, out_ready => desc_ready, out_data => f_out,
      level => f_level);

  desc <= desc_unpack(f_out);

  req_tdata  <= (DATA_W_c-1 downto 128 => '0') &
               tlp_mem_req(r.req_addr, r.req_dw, false, tag_g);
  req_tkeep  <= ones(4, LANES_c);
  req_side  <= (others => '0');
  req_tlast  <= '1';
  req_tvalid <= r.req_valid;

  busy     <= '1' when r.outstanding = '1' or r.pn /= 0 else '0';
  cpl_seen <= r.seen;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.fptr        <= (others => '0');
        r.synced      <= '0';
        r.stopped     <= '0';
        r.outstanding <= '0';
        r.discard     <= '0';
        r.req_valid   <= '0';
        r.push        <= '0';
        r.want        <= (others => '0');
        r.pn          <= 0;
      end if;
    end if;
  end process;

end architecture rtl;
