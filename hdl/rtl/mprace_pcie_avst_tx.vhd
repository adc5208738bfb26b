-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_avst_tx: the engine's request stream (mprace_dma_pkg: a PCIe TLP header in a
-- 4-dword slot, then the payload) on the transmit interface of Intel's Avalon-ST hard IP, in
-- either of its two forms:
--   hdr_bus_g = true : P-tile (Stratix 10 DX, Agilex). The header goes on the header bus of the
--                      segment where the TLP starts (tx_st_hdr, dword 0 in bits 127:96), the
--                      payload from lane 0 of that segment on.
--   hdr_bus_g = false: H-tile and L-tile (Stratix 10 GX/SX/MX). The header is the TLP's first
--                      3 or 4 dwords in tx_st_data (dword 0 in lane 0), the payload right after
--                      it; tx_st_hdr is not driven.
--   * Realigning: the dwords a TLP does not send from its slot (all four on the header bus, the
--     unused fourth of a 3-dword header in the data) close up, so output beat j is what is held
--     of input beat j followed by the first lanes of input beat j+1. A 4-dword header in the
--     data stream goes through as it came; otherwise a TLP leaves one beat after it arrives,
--     and when its last input beat leaves dwords over, one more output beat follows (in that
--     clock the next TLP's first beat may enter, as it sends nothing yet).
--   * At 512 bits the input may pack two TLPs into a beat (the core's straddle_g: one ends
--     before lane 8, the next starts in lane 8, as the side bits say): the second goes in the
--     same clock when it only fills hold and the first leaves nothing over, else in the next
--     clock. On the output every TLP starts in segment 0.
--   * Ready latency: the IP takes a beat in clock t only if it raised tx_st_ready in clock
--     t - ready_latency_g; beats wait in a queue deep enough for the ones already decided.
--   * Memory requests get the function's requester ID (req_id) in header dword 1, and those
--     below 4 GiB the 3-dword header PCIe requires (the core writes the 4-dword form);
--     completions keep the completer and requester IDs they carry.
-- Credits (tx_cdts_limit, tx_*_cdts) are not watched: the engine bounds its non-posted requests
-- by its completion budget, posted writes by nothing; see hdl/README "Attaching to an Intel board".
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_avst_tx is
  generic (
    data_w_g        : positive := 256;   -- 256 (one segment) or 512 (two segments of 256)
    hdr_bus_g       : boolean  := true;  -- true: P-tile (header bus); false: H-/L-tile
    ready_latency_g : positive := 3      -- the IP's tx_st_ready latency in clocks
  );
  port (
    clk      : in  std_logic;
    rst      : in  std_logic;
    -- the engine's request stream
    s_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_side   : in  std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    s_tlast  : in  std_logic;
    s_tvalid : in  std_logic;
    s_tready : out std_logic;
    -- the function's requester ID (bus, device, function): the IP does not fill it in
    req_id   : in  std_logic_vector(15 downto 0);
    -- the IP's transmit interface (one bit per 256-bit segment)
    tx_st_data     : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    tx_st_hdr      : out std_logic_vector(data_w_g/2-1 downto 0) := (others => '0');
    tx_st_tlp_prfx : out std_logic_vector(data_w_g/8-1 downto 0);
    tx_st_sop      : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_eop      : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_valid    : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_err      : out std_logic_vector(data_w_g/256-1 downto 0);
    tx_st_ready    : in  std_logic
  );
end entity mprace_pcie_avst_tx;

architecture rtl of mprace_pcie_avst_tx is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_avst_tx", data_w_g);

  constant LANES_c : natural := data_w_g / 32;
  constant SEGS_c  : natural := data_w_g / 256;
  subtype lanes_t is natural range 0 to LANES_c;

  -- an output beat: data, the header of a TLP starting in it (segment 0), sop, the number of
  -- lanes with data (0 for a TLP without payload on the header bus) and eop
  constant BEAT_W_c : natural := data_w_g + 128 + 1 + 5 + 1;
  -- a beat leaves the queue only in a clock the IP will take it (ready_latency_g before), so
  -- the queue needs no room for beats in flight: four entries keep the input streaming
  constant QUEUE_LOG2_c : natural := 2;

  type two_process_r is record
    in_tlp  : std_logic;                                  -- an input TLP is in progress
    hold    : std_logic_vector(data_w_g-1 downto 0);      -- dwords waiting for the next beat
    held    : lanes_t;                                    -- ... how many, from lane 0
    hdr     : std_logic_vector(127 downto 0);             -- header of the TLP in progress
    first   : std_logic;                                  -- its next output beat is its first
    flush   : std_logic;                                  -- hold is the TLP's last output beat
    upper   : std_logic;                                  -- only the input beat's second
                                                          -- segment is left (a TLP starts there)
  end record;
  constant R_INIT_c : two_process_r := (in_tlp => '0', hold => (others => '0'), held => 0,
    hdr => (others => '0'), first => '0', flush => '0', upper => '0');

  signal r, r_next  : two_process_r := R_INIT_c;
  signal q_in_valid : std_logic;
  signal q_in_data  : std_logic_vector(BEAT_W_c-1 downto 0);
  signal q_in_ready : std_logic;
  signal q_pop      : std_logic;
  signal q_valid    : std_logic;
  signal q_data     : std_logic_vector(BEAT_W_c-1 downto 0);
  signal rdy_hist   : std_logic_vector(ready_latency_g-1 downto 0) := (others => '0');
  signal can_send   : std_logic;

  function beat(data : std_logic_vector; hdr : std_logic_vector(127 downto 0); sop : std_logic;
                lanes : natural; eop : std_logic) return std_logic_vector is
  begin
    return data & hdr & sop & std_logic_vector(to_unsigned(lanes, 5)) & eop;
  end function;

  -- the header as the link carries it (dword k in bits 32k+31:32k): memory requests get the
  -- requester ID, and the 3-dword form below 4 GiB
  function link_header(slot : std_logic_vector(127 downto 0);
                       id : std_logic_vector(15 downto 0)) return std_logic_vector is
    variable h : std_logic_vector(127 downto 0) := slot;
  begin
    if h(28 downto 24) = "00000" then
      h(63 downto 48) := id;
      if h(TLP_FMT_4DW_c) = '1' and h(95 downto 64) = x"00000000" then
        h(TLP_FMT_4DW_c) := '0';
        h(95 downto 64)  := h(127 downto 96);
        h(127 downto 96) := (others => '0');
      end if;
    end if;
    return h;
  end function;

  -- lanes 0..held-1 of hold, then data from its lane 0 (shifts, not dynamic slices:
  -- synthesis tools take those)
  function append(hold : std_logic_vector; held : lanes_t;
                  data : std_logic_vector) return std_logic_vector is
    variable o : std_logic_vector(data_w_g-1 downto 0);
  begin
    o := std_logic_vector(shift_left(unsigned(data), 32*held));
    for k in 0 to LANES_c-1 loop
      if k < held then
        o(32*k+31 downto 32*k) := hold(32*k+31 downto 32*k);
      end if;
    end loop;
    return o;
  end function;

  -- data from lane `by` on, moved to lane 0
  function from_lane(data : std_logic_vector; by : lanes_t) return std_logic_vector is
  begin
    return std_logic_vector(shift_right(unsigned(data), 32*by));
  end function;

begin

  p_comb : process(all)
    variable v       : two_process_r;
    variable in_data : std_logic_vector(data_w_g-1 downto 0);   -- the input as this clock sees it
    variable in_keep : std_logic_vector(LANES_c-1 downto 0);
    variable sop_hi  : boolean;        -- a TLP ends before lane 8 and the next starts in lane 8
    variable n       : lanes_t;        -- dwords of the TLP in progress in in_data
    variable fb_data : std_logic_vector(data_w_g-1 downto 0);   -- a TLP's first beat
    variable fb_n    : lanes_t;
    variable fb_ends : boolean;        -- ... which holds all of that TLP
    variable h       : std_logic_vector(127 downto 0);
    variable d       : std_logic_vector(data_w_g-1 downto 0);
    variable cnt     : lanes_t;
    variable room    : lanes_t;
    variable rest    : lanes_t;
    variable eop     : std_logic;
    variable only_holds : boolean;

    -- a TLP's first beat that only fills hold: taken, with its header
    procedure hold_first_beat is
    begin
      s_tready <= '1';
      v.upper  := '0';
      v.hdr    := h;
      v.hold   := d;
      v.held   := cnt;
      v.first  := '1';
      v.in_tlp := '1';
    end procedure;
  begin
    v := r;
    s_tready   <= '0';
    q_in_valid <= '0';
    q_in_data  <= (others => '0');

    -- the input beat, or its second segment once the first has been taken (r.upper)
    in_data := s_tdata;
    in_keep := s_tkeep;
    sop_hi  := LANES_c = 16 and s_side(REQ_SOP_HI_c) = '1';
    if r.upper = '1' then
      in_data := std_logic_vector(shift_right(unsigned(s_tdata), data_w_g/2));
      in_keep := std_logic_vector(shift_right(unsigned(s_tkeep), LANES_c/2));
      sop_hi  := false;
    end if;
    n := count_ones(in_keep);
    if sop_hi then
      n := to_integer(unsigned(s_side(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c))) + 1;
    end if;

    -- the first beat of a TLP: of this view, or, where the TLP in progress ends before lane 8,
    -- of the one starting in lane 8
    fb_data := in_data;
    fb_n    := n;
    fb_ends := s_tlast = '1' or sop_hi;
    if r.in_tlp = '1' and sop_hi then
      fb_data := std_logic_vector(shift_right(unsigned(s_tdata), data_w_g/2));
      fb_n    := count_ones(s_tkeep(LANES_c-1 downto LANES_c/2));
      fb_ends := s_tlast = '1';
    end if;
    -- what it puts on tx_st_data, from lane 0, and its header
    h := link_header(fb_data(127 downto 0), req_id);
    d := (others => '0');
    cnt := 0;
    if hdr_bus_g then
      d(data_w_g-129 downto 0) := fb_data(data_w_g-1 downto 128);         -- the payload
      if fb_n > HDR_SLOT_DW_c then
        cnt := fb_n - HDR_SLOT_DW_c;
      end if;
    elsif h(TLP_FMT_4DW_c) = '1' then
      d := fb_data(data_w_g-1 downto 128) & h;                             -- as it came
      cnt := fb_n;
    else
      d(data_w_g-33 downto 0) := fb_data(data_w_g-1 downto 128) & h(95 downto 0);
      if fb_n > 0 then
        cnt := fb_n - 1;                                                   -- 3-dword header
      end if;
    end if;
    -- ... which only fills hold: it may enter while the TLP before it flushes
    only_holds := not fb_ends and cnt < LANES_c;

    if q_in_ready = '1' then
      if r.flush = '1' then
        -- the TLP's last dwords, held from its last input beat
        q_in_valid <= '1';
        q_in_data  <= beat(r.hold, r.hdr, r.first, r.held, '1');
        v.flush := '0';
        v.held  := 0;
        v.first := '0';
        if s_tvalid = '1' and only_holds then
          hold_first_beat;
        end if;
      elsif s_tvalid = '1' then
        if r.in_tlp = '0' then
          v.hdr := h;
          if only_holds then
            hold_first_beat;
          else
            -- the whole TLP, or a 4-dword header with a full beat of data, leaves at once;
            -- a TLP starting in lane 8 after it waits for the next clock
            q_in_valid <= '1';
            q_in_data  <= beat(d, h, '1', cnt, to_sl(fb_ends));
            v.held   := 0;
            v.first  := '0';
            v.in_tlp := to_sl(not fb_ends);
            if sop_hi then
              v.upper := '1';
            else
              s_tready <= '1';
              v.upper  := '0';
            end if;
          end if;
        else
          -- a later beat: what is held, then as much of this beat as fits
          room := LANES_c - r.held;
          rest := 0;
          if n > room then
            rest := n - room;
          end if;
          eop := '0';
          if (s_tlast = '1' or sop_hi) and rest = 0 then
            eop := '1';
          end if;
          q_in_valid <= '1';
          q_in_data  <= beat(append(r.hold, r.held, in_data), r.hdr, r.first, r.held + n - rest,
                             eop);
          v.hold  := from_lane(in_data, room);
          v.held  := rest;
          v.first := '0';
          if s_tlast = '1' or sop_hi then
            v.in_tlp := '0';
            if rest > 0 then
              v.flush := '1';                    -- one more beat with the rest of this one
            end if;
          end if;
          if sop_hi and rest = 0 and only_holds then
            -- the next TLP starts in lane 8 and only fills hold: it goes in this clock
            hold_first_beat;
          elsif sop_hi then
            v.upper := '1';                      -- it goes in the next clock
          else
            s_tready <= '1';
            v.upper  := '0';
          end if;
        end if;
      end if;
    end if;
    r_next <= v;
  end process;

  i_queue : entity work.mprace_fifo
    generic map (width_g => BEAT_W_c, depth_log2_g => QUEUE_LOG2_c)
    port map (
      clk => clk, rst => rst, flush => '0',
      in_valid => q_in_valid, in_ready => q_in_ready, in_data => q_in_data,
      out_valid => q_valid, out_ready => q_pop, out_data => q_data, level => open);

  -- a beat may be driven in the clock after the one whose edge sees tx_st_ready from
  -- ready_latency_g - 1 clocks before: rdy_hist(ready_latency_g-2) is that sample
  g_rl1 : if ready_latency_g = 1 generate
    can_send <= tx_st_ready;
  end generate;
  g_rln : if ready_latency_g > 1 generate
    can_send <= rdy_hist(ready_latency_g-2);
  end generate;
  q_pop <= can_send and q_valid;

  p_out : process(clk)
    variable lanes : natural range 0 to 31;
    variable hdr   : std_logic_vector(127 downto 0);
    variable sop, eop : std_logic;
  begin
    if rising_edge(clk) then
      r <= r_next;
      rdy_hist <= rdy_hist(ready_latency_g-2 downto 0) & tx_st_ready;
      tx_st_valid <= (others => '0');
      tx_st_sop   <= (others => '0');
      tx_st_eop   <= (others => '0');
      if q_pop = '1' then
        hdr   := q_data(BEAT_W_c-data_w_g-1 downto 7);
        sop   := q_data(6);
        lanes := to_integer(unsigned(q_data(5 downto 1)));
        eop   := q_data(0);
        tx_st_data <= q_data(BEAT_W_c-1 downto BEAT_W_c-data_w_g);
        tx_st_hdr <= (others => '0');
        if hdr_bus_g then
          tx_st_hdr(127 downto 0) <= hdr(31 downto 0) & hdr(63 downto 32) & hdr(95 downto 64) &
                                     hdr(127 downto 96);   -- dword 0 in bits 127:96
        end if;
        tx_st_sop(0) <= sop;
        for s in 0 to SEGS_c-1 loop
          -- a segment carries data, or is the first of a TLP without payload
          if lanes > 8*s or (s = 0 and lanes = 0) then
            tx_st_valid(s) <= '1';
            if eop = '1' and (lanes <= 8*s + 8) then
              tx_st_eop(s) <= '1';
            end if;
          end if;
        end loop;
      end if;
      if rst = '1' then
        r <= R_INIT_c;
        tx_st_valid <= (others => '0');
      end if;
    end if;
  end process;

  tx_st_tlp_prfx <= (others => '0');
  tx_st_err      <= (others => '0');

end architecture rtl;
