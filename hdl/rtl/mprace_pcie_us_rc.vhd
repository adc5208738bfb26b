-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_rc: the requester completion interface (s_axis_rc_*, 256 or 512 bits,
-- DWORD-aligned) as a stream of payload-aligned completion beats: dword k of a beat is payload
-- dword LANES*j + k of its completion (j counts the completion's beats), cpl_keep marks the
-- payload dwords (contiguous from lane 0; none for a completion without data), and the
-- completion descriptor's fields come with every beat. Consumers thus never see where the core
-- placed a completion in its beats.
--   * At 512 bits with straddle_g (the core's RC straddle option, PG213) a beat may carry two
--     completions, the second starting in lane 8; the sideband's is_sop/is_eop and their
--     pointers say where (tlast is not used then). Without straddling a completion starts in
--     lane 0 of the beat after the one with tlast.
--   * Realigning: the payload of a completion starting in lane s begins in lane s + 3 (after its
--     3-dword descriptor), so each output beat is the previous input beat's lanes s+3.. followed
--     by the current beat's lanes ..s+2 (a fixed rotation per completion).
--   * An input beat gives up to three output beats (the end of one completion may need two, a
--     short completion starting in lane 8 one more); the engine puts out one per clock and
--     holds tready low while it works through such a beat. Completions whose payload is a
--     multiple of 16 dwords (split at RCB boundaries of aligned reads) end in lane 2 or 10 and
--     never need that. Holding completions back is safe: the read engine and the fetchers never
--     have more completions in flight than the core's completion buffer holds.
-- Spec: docs/dma-engine.md section 5 (BUS_ERROR, TIMEOUT from read completions).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity mprace_pcie_us_rc is
  generic (
    data_w_g   : positive := 256;   -- 256: UltraScale / 7-series Gen3; 512: UltraScale+
    straddle_g : boolean  := false  -- 512 only: two completions per beat (the core's RC straddle)
  );
  port (
    clk : in  std_logic;
    rst : in  std_logic;
    s_axis_rc_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_rc_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_rc_tuser  : in  std_logic_vector(rc_user_w(data_w_g)-1 downto 0);
    s_axis_rc_tlast  : in  std_logic;
    s_axis_rc_tvalid : in  std_logic;
    s_axis_rc_tready : out std_logic;
    cpl        : out cpl_r;
    cpl_data   : out std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : out std_logic_vector(data_w_g/32-1 downto 0)
  );
end entity mprace_pcie_us_rc;

architecture rtl of mprace_pcie_us_rc is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_us_rc", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat
  constant HALF_c   : natural := LANES_c / 2;     -- where a straddled completion starts
  constant HDR_c    : natural := 3;               -- completion descriptor dwords
  constant USER_W_c : natural := rc_user_w(data_w_g);

  -- PG213 RC sideband at 512 bits (DWORD-aligned): is_sop(3:0), is_sop0/1_ptr (in units of 4
  -- dwords), is_eop(3:0), is_eop0/1_ptr (last lane)
  constant U_SOP_c      : natural := 64;
  constant U_SOP0_PTR_c : natural := 68;
  constant U_SOP1_PTR_c : natural := 70;
  constant U_EOP_c      : natural := 76;
  constant U_EOP0_PTR_c : natural := 80;
  constant U_EOP1_PTR_c : natural := 84;

  subtype lane_t is natural range 0 to LANES_c-1;

  type hdr_r is record
    tag    : unsigned(7 downto 0);
    err    : std_logic_vector(3 downto 0);
    done   : std_logic;
    bytes  : unsigned(12 downto 0);
    dwords : unsigned(10 downto 0);
  end record;
  constant HDR_INIT_c : hdr_r := (tag => (others => '0'), err => (others => '0'), done => '0',
    bytes => (others => '0'), dwords => (others => '0'));

  -- one output beat: payload dwords from lane 3 (hi = '0') or lane HALF+3 (hi = '1') on, of the
  -- previous input beat followed by the current one (from_prev) or of the current beat alone
  type out_r is record
    from_prev : boolean;
    hi        : std_logic;
    count     : natural range 0 to LANES_c;
    sop, eop  : std_logic;
    hdr       : hdr_r;
  end record;
  constant OUT_INIT_c : out_r := (from_prev => false, hi => '0', count => 0, sop => '0',
    eop => '0', hdr => HDR_INIT_c);
  type outs_t is array (0 to 2) of out_r;

  type two_process_r is record
    -- the input beat being worked through
    in_valid : std_logic;
    in_data  : std_logic_vector(DATA_W_c-1 downto 0);
    in_keep  : std_logic_vector(LANES_c-1 downto 0);
    in_user  : std_logic_vector(USER_W_c-1 downto 0);
    in_last  : std_logic;
    phase    : natural range 0 to 2;     -- output beats of it already put out
    -- the completion that continues into the next input beat
    in_tlp   : std_logic;
    hi       : std_logic;                -- it started in lane HALF (else 0)
    started  : std_logic;                -- its first output beat is out
    hdr      : hdr_r;
    prev     : std_logic_vector(DATA_W_c-1 downto 0);   -- the last input beat taken
    -- output
    o_valid  : std_logic;
    o_sop    : std_logic;
    o_eop    : std_logic;
    o_hdr    : hdr_r;
    o_data   : std_logic_vector(DATA_W_c-1 downto 0);
    o_keep   : std_logic_vector(LANES_c-1 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (
    in_valid => '0', in_data => (others => '0'), in_keep => (others => '0'),
    in_user => (others => '0'), in_last => '0', phase => 0, in_tlp => '0', hi => '0',
    started => '0', hdr => HDR_INIT_c, prev => (others => '0'), o_valid => '0', o_sop => '0',
    o_eop => '0', o_hdr => HDR_INIT_c, o_data => (others => '0'), o_keep => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;

  -- the completion descriptor starting in lane s
  function hdr_at(d : std_logic_vector; s : lane_t) return hdr_r is
    variable h : hdr_r;
    variable d0, d1, d2 : dword_t;
  begin
    d0 := dw(d, s);
    d1 := dw(d, s + 1);
    d2 := dw(d, s + 2);
    h.err    := d0(15 downto 12);
    h.bytes  := unsigned(d0(28 downto 16));
    h.done   := d0(30);
    h.dwords := unsigned(d1(10 downto 0));
    h.tag    := unsigned(d2(7 downto 0));
    return h;
  end function;

  -- lanes sh.. of a, then lanes 0.. of b
  function rotate(a, b : std_logic_vector; sh : lane_t) return std_logic_vector is
    variable o : std_logic_vector(DATA_W_c-1 downto 0);
  begin
    for k in 0 to LANES_c-1 loop
      if k + sh < LANES_c then
        o(32*k+31 downto 32*k) := dw(a, k + sh);
      else
        o(32*k+31 downto 32*k) := dw(b, k + sh - LANES_c);
      end if;
    end loop;
    return o;
  end function;

  -- the first payload lane of a completion starting in lane 0 (hi = '0') or lane HALF
  function shift_of(hi : std_logic) return lane_t is
  begin
    if hi = '1' then return HALF_c + HDR_c; else return HDR_c; end if;
  end function;

  -- payload dwords from lane sh to lane e of one beat (none if e < sh)
  function span(sh, e : lane_t) return natural is
  begin
    if e < sh then return 0; else return e - sh + 1; end if;
  end function;

begin

  assert not straddle_g or data_w_g = 512
    report "mprace_pcie_us_rc: RC straddling is implemented for the 512-bit interface only"
    severity failure;

  p_comb : process(all)
    variable v        : two_process_r;
    -- the beat's completions: a (the one in lane 0, continuing or new) and b (a second one
    -- starting in lane HALF after a ended)
    variable a_cont, a_new, a_end, b_new, b_end : boolean;
    variable a_hi : std_logic;
    variable a_e, b_e : lane_t;
    variable sop0, sop1, eop0, eop1 : std_logic;
    variable sop0_hi, sop1_hi : std_logic;
    variable eop0_ptr, eop1_ptr : lane_t;
    variable sh   : lane_t;
    variable outs : outs_t;
    variable n    : natural range 0 to 3;
    variable o    : out_r;
    variable take : boolean;
    variable src  : std_logic_vector(DATA_W_c-1 downto 0);
    variable u    : std_logic_vector(rc_user_w(512)-1 downto 0);   -- the 512-bit layout
    -- the descriptors a completion starting in lane 0 or lane HALF would have, and a's
    variable hdr_lo, hdr_hi, a_hdr : hdr_r;
  begin
    v := r;
    v.o_valid := '0';
    u := (others => '0');
    u(USER_W_c-1 downto 0) := r.in_user;

    ------------------------------------------------------------------ where the completions are
    a_cont := false; a_new := false; a_end := false; b_new := false; b_end := false;
    a_hi := '0'; a_e := 0; b_e := 0;
    if straddle_g then
      sop0 := u(U_SOP_c);
      sop1 := u(U_SOP_c + 1);
      eop0 := u(U_EOP_c);
      eop1 := u(U_EOP_c + 1);
      sop0_hi := u(U_SOP0_PTR_c + 1);
      sop1_hi := u(U_SOP1_PTR_c + 1);
      eop0_ptr := to_integer(unsigned(u(U_EOP0_PTR_c + 3 downto U_EOP0_PTR_c)));
      eop1_ptr := to_integer(unsigned(u(U_EOP1_PTR_c + 3 downto U_EOP1_PTR_c)));
      a_end := eop0 = '1';
      a_e := eop0_ptr;
      b_e := eop1_ptr;
      b_end := eop1 = '1';
      if r.in_tlp = '1' then
        a_cont := true;
        b_new := a_end and sop0 = '1';        -- the beat's first start is b's
      elsif sop0 = '1' then
        a_new := true;
        a_hi := sop0_hi;
        b_new := a_end and sop1 = '1' and sop0_hi = '0';
      end if;
      b_end := b_new and b_end;
    else
      a_cont := r.in_tlp = '1';
      a_new := r.in_tlp = '0';
      a_end := r.in_last = '1';
      a_e := last_lane(r.in_keep);
    end if;

    -- (two fixed positions: a run-time lane index would cost a multiplexer per position)
    hdr_lo := hdr_at(r.in_data, 0);
    hdr_hi := hdr_at(r.in_data, HALF_c);
    a_hdr := hdr_lo;
    if a_hi = '1' then
      a_hdr := hdr_hi;
    end if;

    ------------------------------------------------------------------ its output beats, in order
    outs := (others => OUT_INIT_c);
    n := 0;
    if a_cont then
      sh := shift_of(r.hi);
      outs(0) := (from_prev => true, hi => r.hi, count => LANES_c, sop => not r.started,
                  eop => '0', hdr => r.hdr);
      n := 1;
      if a_end and a_e < sh then            -- its last dwords fit into this output beat
        outs(0).count := LANES_c - sh + a_e + 1;
        outs(0).eop := '1';
      elsif a_end then                      -- one more for the rest of this input beat
        outs(1) := (from_prev => false, hi => r.hi, count => span(sh, a_e), sop => '0',
                    eop => '1', hdr => r.hdr);
        n := 2;
      end if;
    elsif a_new and a_end then
      outs(0) := (from_prev => false, hi => a_hi, count => span(shift_of(a_hi), a_e),
                  sop => '1', eop => '1', hdr => a_hdr);
      n := 1;
    end if;
    if b_end then
      outs(n) := (from_prev => false, hi => '1', count => span(HALF_c + HDR_c, b_e),
                  sop => '1', eop => '1', hdr => hdr_hi);
      n := n + 1;
    end if;

    ------------------------------------------------------------------ one output beat per clock
    take := r.in_valid = '1' and (n = 0 or r.phase = n - 1);
    if r.in_valid = '1' and n /= 0 then
      o := outs(r.phase);
      if o.from_prev then
        src := r.prev;
      else
        src := r.in_data;
      end if;
      v.o_valid := '1';
      v.o_sop   := o.sop;
      v.o_eop   := o.eop;
      v.o_hdr   := o.hdr;
      if o.hi = '1' then
        v.o_data := rotate(src, r.in_data, HALF_c + HDR_c);
      else
        v.o_data := rotate(src, r.in_data, HDR_c);
      end if;
      v.o_keep  := ones(o.count, LANES_c);
      if not take then
        v.phase := r.phase + 1;
      end if;
    end if;

    ------------------------------------------------------------------ the beat is done
    if take then
      v.phase := 0;
      v.prev  := r.in_data;
      if b_new then
        v.in_tlp  := '1';
        if b_end then
          v.in_tlp := '0';
        end if;
        v.hi      := '1';
        v.started := '0';
        v.hdr     := hdr_hi;
      elsif a_end then
        v.in_tlp := '0';
      elsif a_new then
        v.in_tlp  := '1';
        v.hi      := a_hi;
        v.started := '0';
        v.hdr     := a_hdr;
      elsif a_cont then
        v.started := '1';
      end if;
      v.in_valid := '0';
    end if;

    ------------------------------------------------------------------ the next input beat
    s_axis_rc_tready <= '0';
    if r.in_valid = '0' or take then
      s_axis_rc_tready <= '1';
      if s_axis_rc_tvalid = '1' then
        v.in_valid := '1';
        v.in_data  := s_axis_rc_tdata;
        v.in_keep  := s_axis_rc_tkeep;
        v.in_user  := s_axis_rc_tuser;
        v.in_last  := s_axis_rc_tlast;
      end if;
    end if;

    r_next <= v;
  end process;

  cpl.valid  <= r.o_valid;
  cpl.sop    <= r.o_sop;
  cpl.eop    <= r.o_eop;
  cpl.tag    <= r.o_hdr.tag;
  cpl.err    <= rc_cpl_err(r.o_hdr.err);
  cpl.done   <= r.o_hdr.done;
  cpl.bytes  <= r.o_hdr.bytes;
  cpl_data   <= r.o_data;
  cpl_keep   <= r.o_keep;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.in_valid <= '0';
        r.phase    <= 0;
        r.in_tlp   <= '0';
        r.o_valid  <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
