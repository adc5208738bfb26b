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
--     before lane 8, the next starts in lane 8, as the side bits say). Every TLP keeps the
--     place it has on the input (lane 0 or lane 8, that is segment 0 or 1), its data closing up
--     behind its header (H-tile: a 3-dword header's unused dword; P-tile: the whole 4-dword
--     slot, onto the header bus of its segment), so the output needs no more beats than the
--     input: 4.5 beats per 256-byte write instead of 5, half a beat per read request. Output
--     beat j is made of input beats j and j+1. The interface starts a TLP in segment 1 only
--     beside an end of packet in segment 0: a TLP in lane 8 whose predecessor's last dword
--     went into the beat before moves to segment 0, and the TLPs packed behind it with it.
--   * Ready latency: the IP takes a beat in clock t only if it raised tx_st_ready in clock
--     t - ready_latency_g; beats wait in a queue deep enough for the ones already decided.
--   * Memory requests get the function's requester ID (req_id) in header dword 1, and those
--     below 4 GiB the 3-dword header PCIe requires (the core writes the 4-dword form);
--     completions keep the completer and requester IDs they carry.
-- Credits: on the P-tile mprace_pcie_avst_credits holds the stream before this adapter until
-- tx_cdts_limit allows each TLP; the H-tile's tx_*_cdts are not watched (hdl/README "Attaching
-- to an Intel board").
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

  -- an output beat: data, per segment the header of a TLP starting there (the header bus; the
  -- H-tile keeps one unused slot), and per segment valid, sop and eop
  function hdrs_width return natural is
  begin
    if hdr_bus_g then
      return 128 * SEGS_c;
    end if;
    return 128;
  end function;
  constant HDRS_W_c : natural := hdrs_width;
  constant BEAT_W_c : natural := data_w_g + HDRS_W_c + 3*SEGS_c;
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
  end record;
  constant R_INIT_c : two_process_r := (in_tlp => '0', hold => (others => '0'), held => 0,
    hdr => (others => '0'), first => '0', flush => '0');

  signal r, r_next  : two_process_r := R_INIT_c;
  signal q_in_valid : std_logic;
  signal q_in_data  : std_logic_vector(BEAT_W_c-1 downto 0);
  signal q_in_ready : std_logic;
  signal q_pop      : std_logic;
  signal q_valid    : std_logic;
  signal q_data     : std_logic_vector(BEAT_W_c-1 downto 0);
  signal rdy_hist   : std_logic_vector(ready_latency_g-1 downto 0) := (others => '0');
  signal can_send   : std_logic;

  function seg_beat(data : std_logic_vector; hdrs : std_logic_vector(HDRS_W_c-1 downto 0);
                    valid, sop, eop : std_logic_vector(SEGS_c-1 downto 0)) return std_logic_vector is
  begin
    return data & hdrs & valid & sop & eop;
  end function;

  -- a beat holding one TLP from lane 0: `lanes` lanes of data (0 for a TLP without payload on
  -- the header bus), the first of the TLP if sop, its last if eop
  function beat(data : std_logic_vector; hdr : std_logic_vector(127 downto 0); sop : std_logic;
                lanes : natural; eop : std_logic) return std_logic_vector is
    variable valid, sops, eops : std_logic_vector(SEGS_c-1 downto 0) := (others => '0');
    variable hdrs : std_logic_vector(HDRS_W_c-1 downto 0) := (others => '0');
  begin
    hdrs(127 downto 0) := hdr;
    sops(0) := sop;
    for k in 0 to SEGS_c-1 loop
      -- a segment carries data, or is the first of a TLP without payload
      if lanes > 8*k or (k = 0 and lanes = 0) then
        valid(k) := '1';
        eops(k)  := eop and to_sl(lanes <= 8*k + 8);
      end if;
    end loop;
    return seg_beat(data, hdrs, valid, sops, eops);
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

  -- 256 bits (one segment): every TLP from lane 0 of a beat
  g_from_lane0 : if SEGS_c = 1 generate
  p_comb : process(all)
    variable v       : two_process_r;
    variable n       : lanes_t;        -- dwords of the TLP in progress in this beat
    variable h       : std_logic_vector(127 downto 0);
    variable d       : std_logic_vector(data_w_g-1 downto 0);
    variable cnt     : lanes_t;
    variable room    : lanes_t;
    variable rest    : lanes_t;
    variable eop     : std_logic;
    variable only_holds : boolean;

    -- a TLP's first beat that only goes into hold, taken with its header
    procedure hold_first_beat is
    begin
      s_tready <= '1';
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
    n := count_ones(s_tkeep);

    -- a TLP's first beat: what it puts on tx_st_data, from lane 0, and its header
    h := link_header(s_tdata(127 downto 0), req_id);
    d := (others => '0');
    cnt := 0;
    if hdr_bus_g then
      d(data_w_g-129 downto 0) := s_tdata(data_w_g-1 downto 128);         -- the payload
      if n > HDR_SLOT_DW_c then
        cnt := n - HDR_SLOT_DW_c;
      end if;
    elsif h(TLP_FMT_4DW_c) = '1' then
      d := s_tdata(data_w_g-1 downto 128) & h;                             -- as it came
      cnt := n;
    else
      d(data_w_g-33 downto 0) := s_tdata(data_w_g-1 downto 128) & h(95 downto 0);
      if n > 0 then
        cnt := n - 1;                                                      -- 3-dword header
      end if;
    end if;
    -- ... which only fills hold: it may enter while the TLP before it flushes
    only_holds := s_tlast = '0' and cnt < LANES_c;

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
        s_tready <= '1';
        if r.in_tlp = '0' then
          v.hdr := h;
          if only_holds then
            hold_first_beat;
          else
            -- the whole TLP, or a 4-dword header with a full beat of data, leaves at once
            q_in_valid <= '1';
            q_in_data  <= beat(d, h, '1', cnt, s_tlast);
            v.held   := 0;
            v.first  := '0';
            v.in_tlp := not s_tlast;
          end if;
        else
          -- a later beat: what is held, then as much of this beat as fits
          room := LANES_c - r.held;
          rest := 0;
          if n > room then
            rest := n - room;
          end if;
          eop := '0';
          if s_tlast = '1' and rest = 0 then
            eop := '1';
          end if;
          q_in_valid <= '1';
          q_in_data  <= beat(append(r.hold, r.held, s_tdata), r.hdr, r.first, r.held + n - rest,
                             eop);
          v.hold  := from_lane(s_tdata, room);
          v.held  := rest;
          v.first := '0';
          if s_tlast = '1' then
            v.in_tlp := '0';
            if rest > 0 then
              v.flush := '1';                    -- one more beat with the rest of this one
            end if;
          end if;
        end if;
      end if;
    end if;
    r_next <= v;
  end process;

  p_state : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r <= R_INIT_c;
      end if;
    end if;
  end process;
  end generate;

  -- 512 bits (two segments): every TLP where it is on the input (lane 0 or 8), its data closed
  -- up behind its header (the H-tile: a 3-dword header's unused dword; the P-tile: the whole
  -- slot, which goes to the header bus). A TLP in lane 8 whose predecessor, going on from the
  -- beat before, has already ended (in the output beat before: the shift moved its last dword
  -- there) moves to lane 0, eight lanes down, and the TLPs packed behind it with it: the
  -- interface starts a TLP in segment 1 only beside an end of packet in segment 0. Output beat
  -- j is made of input beats j and j+1.
  g_in_place : if SEGS_c = 2 generate
    -- an input beat waiting for the next (the end of its last TLP may come with it)
    type in_place_r is record
      held    : std_logic;
      data    : std_logic_vector(data_w_g-1 downto 0);
      sop_hi  : std_logic;                           -- a TLP starts in lane 8
      lo_end  : natural range 0 to 15;               -- last lane of the lower TLP (sop_hi)
      tlast   : std_logic;                           -- the last TLP ends in this beat ...
      last    : natural range 0 to 15;               -- ... in this lane
      lo_new  : std_logic;                           -- the lower TLP starts in lane 0
      lo_off  : std_logic;                           -- lower TLP eight lanes down
      lo_sh   : std_logic;                           -- lower TLP with a 3-dword header
      hi_off  : std_logic;                           -- the same for the TLP in lane 8
      hi_sh   : std_logic;
      -- the TLP continuing into the next input beat
      in_tlp  : std_logic;
      off     : std_logic;
      sh      : std_logic;
    end record;
    constant P_INIT_c : in_place_r := (held => '0', data => (others => '0'), sop_hi => '0',
      lo_end => 0, tlast => '0', last => 0, lo_new => '0', lo_off => '0', lo_sh => '0',
      hi_off => '0', hi_sh => '0', in_tlp => '0', off => '0', sh => '0');
    signal p, p_next : in_place_r := P_INIT_c;

    -- dword k of v, zero outside it (unlike the package's dw: the lane loop below also forms
    -- indices it never uses, such as i - 8 for i < 8)
    function lane(v : std_logic_vector; k : integer) return std_logic_vector is
    begin
      if k >= 0 and 32*k + 31 < v'length then
        return v(v'low+32*k+31 downto v'low+32*k);
      end if;
      return x"00000000";
    end function;

    function three_dw(slot : std_logic_vector(127 downto 0); id : std_logic_vector(15 downto 0))
      return std_logic is
      variable h : std_logic_vector(127 downto 0);
    begin
      h := link_header(slot, id);
      return not h(TLP_FMT_4DW_c);
    end function;

    -- dwords a TLP's data closes up by behind its header slot: all four on the header bus,
    -- else the one a 3-dword header leaves unused (sh3)
    function shift(sh3 : std_logic) return natural is
    begin
      if hdr_bus_g then
        return HDR_SLOT_DW_c;
      end if;
      return to_integer(unsigned'('0' & sh3));
    end function;
  begin
    p_comb : process(all)
      variable v        : in_place_r;
      variable w        : std_logic_vector(2*data_w_g-1 downto 0);   -- held & next beat
      variable have_n   : boolean;      -- the next beat is there (or not needed)
      variable n_end    : integer range 0 to 63;   -- last W lane of a TLP that goes on, 63: later
      variable h_lo, h_hi : std_logic_vector(127 downto 0);
      variable lo_last, hi_last : integer range 0 to 63;   -- last W lane of each
      variable upper    : boolean;
      variable o, sh    : natural range 0 to 8;
      variable hdrs     : std_logic_vector(HDRS_W_c-1 downto 0);
      variable src, lst : integer;
      variable is_hdr   : boolean;
      variable hd       : std_logic_vector(31 downto 0);
      variable out_d    : std_logic_vector(data_w_g-1 downto 0);
      variable valid, sop, eop : std_logic_vector(1 downto 0);
      variable x_lo_end : integer;
    begin
      v := p;
      s_tready   <= '0';
      q_in_valid <= '0';
      q_in_data  <= (others => '0');

      -- where the held beat's last TLP ends, when it goes on into the next beat: that beat's
      -- lower TLP end (16 + lane), or later
      n_end := 63;
      if s_tvalid = '1' then
        if s_side(REQ_SOP_HI_c) = '1' then
          n_end := 16 + to_integer(unsigned(s_side(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c)));
        elsif s_tlast = '1' then
          n_end := 16 + last_lane(s_tkeep);
        end if;
      end if;
      have_n := p.tlast = '1' or s_tvalid = '1';
      w := s_tdata & p.data;
      if p.tlast = '1' then
        w(2*data_w_g-1 downto data_w_g) := (others => '0');
      end if;

      -- the held beat as it leaves: per lane, its TLP's dword from W, moved down by its offset
      -- (0 or 8) and header shift (0 or 1; 4 on the header bus)
      h_lo := link_header(p.data(127 downto 0), req_id);
      h_hi := link_header(p.data(383 downto 256), req_id);
      if p.sop_hi = '1' then
        lo_last := p.lo_end;
        hi_last := n_end;
        if p.tlast = '1' then
          hi_last := p.last;
        end if;
      else
        lo_last := n_end;
        if p.tlast = '1' then
          lo_last := p.last;
        end if;
        hi_last := 0;
      end if;
      out_d := (others => '0');
      valid := "00";
      sop := "00";
      eop := "00";
      for i in 0 to LANES_c-1 loop
        upper := p.sop_hi = '1' and (p.hi_off = '1' or i >= 8);
        if upper then
          o := 8 * to_integer(unsigned'('0' & p.hi_off));
          sh := shift(p.hi_sh);
          lst := hi_last;
          -- header dword i - 8 + o of the TLP that started in lane 8
          if p.hi_off = '1' then
            hd := lane(h_hi, i);
            is_hdr := i < 4 - sh;
          else
            hd := lane(h_hi, i - 8);
            is_hdr := i - 8 < 4 - sh;
          end if;
        else
          o := 8 * to_integer(unsigned'('0' & p.lo_off));
          sh := shift(p.lo_sh);
          lst := lo_last;
          hd := lane(h_lo, i);
          is_hdr := p.lo_new = '1' and i < 4 - sh;
        end if;
        src := i + o + sh;
        if is_hdr then
          out_d(32*i+31 downto 32*i) := hd;
          valid(i / 8) := '1';
        elsif src <= lst then
          case o + sh is
            when 0 => out_d(32*i+31 downto 32*i) := lane(w, i);
            when 1 => out_d(32*i+31 downto 32*i) := lane(w, i + 1);
            when 4 => out_d(32*i+31 downto 32*i) := lane(w, i + 4);
            when 8 => out_d(32*i+31 downto 32*i) := lane(w, i + 8);
            when 9 => out_d(32*i+31 downto 32*i) := lane(w, i + 9);
            when others => out_d(32*i+31 downto 32*i) := lane(w, i + 12);
          end case;
          valid(i / 8) := '1';
        end if;
        -- the TLP's last dword (for a read, the last of its header: the one a 3-dword header
        -- drops stands at lst)
        if (is_hdr or src <= lst) and src = lst then
          eop(i / 8) := '1';
        end if;
      end loop;
      sop(0) := p.lo_new or (p.sop_hi and p.hi_off);
      sop(1) := p.sop_hi and not p.hi_off;
      -- the header bus: each TLP's header beside the segment it starts in; a TLP without
      -- payload (a read request) fills its segment with the header alone
      hdrs := (others => '0');
      if hdr_bus_g then
        if p.lo_new = '1' then
          hdrs(127 downto 0) := h_lo;
          if lo_last < HDR_SLOT_DW_c then
            valid(0) := '1';
            eop(0)   := '1';
          end if;
        end if;
        if p.sop_hi = '1' then
          if p.hi_off = '1' then
            hdrs(127 downto 0) := h_hi;
          else
            hdrs(HDRS_W_c-1 downto HDRS_W_c-128) := h_hi;   -- segment 1's
          end if;
          if hi_last < 8 + HDR_SLOT_DW_c then
            valid(1 - to_integer(unsigned'('0' & p.hi_off))) := '1';
            eop(1 - to_integer(unsigned'('0' & p.hi_off)))   := '1';
          end if;
        end if;
      end if;

      if q_in_ready = '1' then
        if p.held = '1' and have_n then
          if valid /= "00" then
            q_in_valid <= '1';
            q_in_data  <= seg_beat(out_d, hdrs, valid, sop, eop);
          end if;
          v.held := '0';
        end if;
        if s_tvalid = '1' and (p.held = '0' or have_n) then
          -- the input beat is held until the next shows where its last TLP ends
          s_tready <= '1';
          v.held   := '1';
          v.data   := s_tdata;
          v.sop_hi := s_side(REQ_SOP_HI_c);
          v.lo_end := to_integer(unsigned(s_side(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c)));
          v.tlast  := s_tlast;
          v.last   := last_lane(s_tkeep);
          v.lo_new := not p.in_tlp;
          if p.in_tlp = '1' then
            v.lo_off := p.off;
            v.lo_sh  := p.sh;
          else
            v.lo_off := '0';
            v.lo_sh  := three_dw(s_tdata(127 downto 0), req_id);
          end if;
          -- the TLP in lane 8 moves down when the lower one, going on from the beat before,
          -- has nothing left for this output beat: its last lane, less its offset and shift,
          -- falls before lane 0
          x_lo_end := v.lo_end - 8 * to_integer(unsigned'('0' & v.lo_off)) - shift(v.lo_sh);
          v.hi_off := to_sl(p.in_tlp = '1' and x_lo_end < 0);
          v.hi_sh  := three_dw(s_tdata(383 downto 256), req_id);
          v.in_tlp := not s_tlast;
          if s_side(REQ_SOP_HI_c) = '1' then
            v.off := v.hi_off;
            v.sh  := v.hi_sh;
          else
            v.off := v.lo_off;
            v.sh  := v.lo_sh;
          end if;
        end if;
      end if;
      p_next <= v;
    end process;

    p_state : process(clk)
    begin
      if rising_edge(clk) then
        p <= p_next;
        if rst = '1' then
          p <= P_INIT_c;
        end if;
      end if;
    end process;
  end generate;

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
    variable hdrs : std_logic_vector(HDRS_W_c-1 downto 0);
  begin
    if rising_edge(clk) then
      rdy_hist <= rdy_hist(ready_latency_g-2 downto 0) & tx_st_ready;
      tx_st_valid <= (others => '0');
      tx_st_sop   <= (others => '0');
      tx_st_eop   <= (others => '0');
      if q_pop = '1' then
        hdrs := q_data(BEAT_W_c-data_w_g-1 downto 3*SEGS_c);
        tx_st_data  <= q_data(BEAT_W_c-1 downto BEAT_W_c-data_w_g);
        tx_st_valid <= q_data(3*SEGS_c-1 downto 2*SEGS_c);
        tx_st_sop   <= q_data(2*SEGS_c-1 downto SEGS_c);
        tx_st_eop   <= q_data(SEGS_c-1 downto 0);
        tx_st_hdr   <= (others => '0');
        if hdr_bus_g then
          for k in 0 to HDRS_W_c/128-1 loop   -- dword 0 in bits 127:96 of the segment's header
            tx_st_hdr(128*k+127 downto 128*k) <= hdrs(128*k+31 downto 128*k) &
              hdrs(128*k+63 downto 128*k+32) & hdrs(128*k+95 downto 128*k+64) &
              hdrs(128*k+127 downto 128*k+96);
          end loop;
        end if;
      end if;
      if rst = '1' then
        tx_st_valid <= (others => '0');
      end if;
    end if;
  end process;

  tx_st_tlp_prfx <= (others => '0');
  tx_st_err      <= (others => '0');

end architecture rtl;
