-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_req_mux: merges the engine's request streams (mprace_dma_pkg: PCIe TLP headers and
-- payload, vendor-neutral) into the one stream the vendor adapter puts on the block's requester
-- interface. It grants the inputs round-robin and switches only at packet boundaries. Input
-- bulk_g (the C2H writes) is granted only when no other input offers a packet: the others are
-- one-beat read requests and records, bounded by what the engine has outstanding, and a packet
-- of bulk writes may hold two TLPs when they share a beat; so reads keep their share of the
-- link. Blocks want every TLP in consecutive beats; the mux keeps a packet together and adds no
-- gaps, so each input must deliver its packets without gaps, as all the engine's request
-- sources do. Data, keep and side bits pass unchanged, unless pack_g:
-- pack_g (512 bits, a front end that takes a TLP in either 256-bit segment of a beat, as
-- UltraScale+ RQ straddling and the Intel tiles do): where a packet ends before lane 8, the next
-- packet (of any input, in the same order as without packing) starts in lane 8 of that beat,
-- and the beats after it are formed eight lanes on (each of the upper half of one input beat
-- and the lower half of the next) until a packet ends in an upper half. The output then uses
-- every segment, as the write engine's own straddling does inside its packets: a read request
-- or a record takes half a beat instead of a whole one. Output beats carry the side bits of
-- mprace_dma_pkg for where they put the TLPs (a beat may now start two: a one-beat packet in
-- lanes 0-7 and the next in lane 8), and `last` where a TLP ends in the upper half or before
-- an empty one, so output packets need not match the input's.
-- `s_sent(p)` pulses when the last beat of a packet of input p has been taken (m_tready): the
-- engine increments HEAD only after the completion record has left in this way.
-- Spec: docs/dma-engine.md (section 2: record after the data; section 4 step 5).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dma_req_mux is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    ports_g  : positive := 5;
    bulk_g   : integer := -1;     -- the input served last (-1: none)
    pack_g   : boolean := false   -- 512 bits: packets may start in lane 8 (above)
  );
  port (
    clk            : in  std_logic;
    rst            : in  std_logic;
    s_tdata        : in  std_logic_vector(ports_g*data_w_g-1 downto 0);
    s_tkeep        : in  std_logic_vector(ports_g*data_w_g/32-1 downto 0);
    s_side         : in  std_logic_vector(ports_g*REQ_SIDE_W_c-1 downto 0);
    s_tlast        : in  std_logic_vector(ports_g-1 downto 0);
    s_tvalid       : in  std_logic_vector(ports_g-1 downto 0);
    s_tready       : out std_logic_vector(ports_g-1 downto 0);
    s_sent         : out std_logic_vector(ports_g-1 downto 0);
    m_tdata        : out std_logic_vector(data_w_g-1 downto 0);
    m_tkeep        : out std_logic_vector(data_w_g/32-1 downto 0);
    m_side         : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    m_tlast        : out std_logic;
    m_tvalid       : out std_logic;
    m_tready       : in  std_logic
  );
end entity mprace_dma_req_mux;

architecture rtl of mprace_dma_req_mux is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_req_mux", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat
  constant HALF_c   : natural := LANES_c / 2;
  constant PACK_c   : boolean := pack_g and LANES_c = 16;

  constant HAS_BULK_c : boolean := bulk_g >= 0 and bulk_g < ports_g;
  function bulk_port return natural is
  begin
    if HAS_BULK_c then
      return bulk_g;
    end if;
    return 0;
  end function;
  constant BULK_c : natural := bulk_port;
  -- a queue entry: the beat, and the inputs whose packets end in it (for s_sent)
  constant ENT_W_c : natural := DATA_W_c + LANES_c + REQ_SIDE_W_c + 1 + ports_g;

  -- half a beat (packing): its lanes, and whether a TLP starts at its lane 0 or ends in it
  type half_r is record
    data  : std_logic_vector(DATA_W_c/2-1 downto 0);
    keep  : std_logic_vector(HALF_c-1 downto 0);
    valid : std_logic;
    sop   : std_logic;
    eop   : std_logic;
    ptr   : natural range 0 to HALF_c-1;      -- the lane where it ends
    ends  : std_logic_vector(ports_g-1 downto 0);   -- packets ending in it
  end record;
  constant HALF_NONE_c : half_r := (data => (others => '0'), keep => (others => '0'),
    valid => '0', sop => '0', eop => '0', ptr => 0, ends => (others => '0'));

  type two_process_r is record
    locked : std_logic;                     -- inside a packet of port `sel`
    sel    : natural range 0 to ports_g-1;
    last   : natural range 0 to ports_g-1;  -- port granted most recently (round-robin)
    sent   : std_logic_vector(ports_g-1 downto 0);
    off    : std_logic;                     -- packing: output eight lanes on, `carry` waits
    carry  : half_r;                        -- the upper half of the input beat before
  end record;
  constant R_INIT_c : two_process_r := (locked => '0', sel => 0, last => ports_g-1,
                                        sent => (others => '0'), off => '0',
                                        carry => HALF_NONE_c);

  signal r, r_next   : two_process_r := R_INIT_c;
  signal f_in_valid  : std_logic;
  signal f_in_ready  : std_logic;
  signal f_in_data   : std_logic_vector(ENT_W_c-1 downto 0);
  signal f_out_valid : std_logic;
  signal f_out_data  : std_logic_vector(ENT_W_c-1 downto 0);
  signal grant       : natural range 0 to ports_g-1;
  signal have        : std_logic;
  signal mate        : natural range 0 to ports_g-1;   -- packing: the packet after grant's
  signal have_mate   : std_logic;

  -- the first input after `prev` (round-robin) that offers a packet, the bulk input only when
  -- no other does; ports_g: none. not_prev: not `prev` itself
  function pick(prev : natural; valid : std_logic_vector(ports_g-1 downto 0);
                not_prev : boolean) return natural is
    variable p : natural range 0 to 2*ports_g-1;
  begin
    for k in 1 to ports_g loop
      p := prev + k;                      -- (prev + k) mod ports_g without a divider
      if p >= ports_g then
        p := p - ports_g;
      end if;
      if valid(p) = '1' and not (HAS_BULK_c and p = BULK_c) and not (not_prev and p = prev) then
        return p;
      end if;
    end loop;
    if HAS_BULK_c and valid(BULK_c) = '1' and not (not_prev and BULK_c = prev) then
      return BULK_c;
    end if;
    return ports_g;
  end function;

  function onehot(k : natural) return std_logic_vector is
    variable v : std_logic_vector(ports_g-1 downto 0) := (others => '0');
  begin
    v(k) := '1';
    return v;
  end function;

  -- the two halves of input beat k; `first`: it starts a packet
  function lower(data : std_logic_vector; keep : std_logic_vector; side : std_logic_vector;
                 tlast : std_logic; first : std_logic; k : natural) return half_r is
    variable h : half_r;
  begin
    h.data  := data(DATA_W_c/2-1 downto 0);
    h.keep  := keep(HALF_c-1 downto 0);
    h.valid := keep(0);
    h.sop   := first;
    h.eop   := side(REQ_EOP_MID_c) or (tlast and not keep(HALF_c));
    if side(REQ_EOP_MID_c) = '1' then
      h.ptr := to_integer(unsigned(side(REQ_EOP_PTR_c+2 downto REQ_EOP_PTR_c)));
    else
      h.ptr := last_lane(keep(HALF_c-1 downto 0));
    end if;
    h.ends  := (others => '0');
    if tlast = '1' and keep(HALF_c) = '0' then
      h.ends := onehot(k);
    end if;
    return h;
  end function;

  function upper(data : std_logic_vector; keep : std_logic_vector; side : std_logic_vector;
                 tlast : std_logic; k : natural) return half_r is
    variable h : half_r;
  begin
    h.data  := data(DATA_W_c-1 downto DATA_W_c/2);
    h.keep  := keep(LANES_c-1 downto HALF_c);
    h.valid := keep(HALF_c);
    h.sop   := side(REQ_SOP_HI_c);
    h.eop   := tlast and keep(HALF_c);
    h.ptr   := last_lane(keep(LANES_c-1 downto HALF_c));
    h.ends  := (others => '0');
    if tlast = '1' and keep(HALF_c) = '1' then
      h.ends := onehot(k);
    end if;
    return h;
  end function;

  -- an output beat of two halves, as a queue entry: a TLP starting in the upper half follows
  -- one that ended in the lower (side bits), and `last` where the upper half ends a TLP or is
  -- empty
  function join(lo, hi : half_r) return std_logic_vector is
    variable side : std_logic_vector(REQ_SIDE_W_c-1 downto 0) := (others => '0');
    variable keep : std_logic_vector(HALF_c-1 downto 0) := (others => '0');
    variable last : std_logic;
  begin
    if hi.valid = '1' then
      keep := hi.keep;
    end if;
    if hi.valid = '1' and hi.sop = '1' then
      side(REQ_SOP_HI_c)  := '1';
      side(REQ_EOP_MID_c) := '1';
      side(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c) := std_logic_vector(to_unsigned(lo.ptr, 4));
    end if;
    last := (hi.valid and hi.eop) or (not hi.valid and lo.eop);
    return hi.data & lo.data & keep & lo.keep & side & last & (lo.ends or hi.ends);
  end function;

  -- input k's beat, whole, as a queue entry
  function beat_of(data, keep, side : std_logic_vector; tlast : std_logic;
                   sel : std_logic_vector) return std_logic_vector is
  begin
    return data & keep & side & tlast & sel;
  end function;

begin

  -- the granted input: the one in a packet, else the next after the last one granted that
  -- offers a packet
  p_grant : process(all)
    variable g : natural range 0 to ports_g;
  begin
    if r.locked = '1' then
      grant <= r.sel;
      have  <= s_tvalid(r.sel);
    else
      g := pick(r.last, s_tvalid, false);
      grant <= 0;
      have  <= '0';
      if g < ports_g then
        grant <= g;
        have  <= '1';
      end if;
    end if;
  end process;

  -- packing: the packet that would be granted after grant's, from another input
  p_mate : process(all)
    variable g : natural range 0 to ports_g;
  begin
    g := ports_g;
    if PACK_c then
      g := pick(grant, s_tvalid, true);
    end if;
    mate      <= 0;
    have_mate <= '0';
    if g < ports_g then
      mate      <= g;
      have_mate <= '1';
    end if;
  end process;

  p_comb : process(all)
    variable v      : two_process_r;
    variable d, md  : std_logic_vector(DATA_W_c-1 downto 0);
    variable kp, mk : std_logic_vector(LANES_c-1 downto 0);
    variable sd, ms : std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    variable tl, ml : std_logic;
    variable lo, hi : half_r;
    variable mlo, mhi : half_r;

    -- a beat of input k taken: the packet goes on while not tlast
    procedure take(k : natural; tlast : std_logic) is
    begin
      s_tready(k) <= '1';
      v.sel    := k;
      v.last   := k;
      v.locked := not tlast;
    end procedure;
  begin
    v := r;
    v.sent := (others => '0');
    s_tready   <= (others => '0');
    f_in_valid <= '0';

    -- the granted beat and the mate's (one slice per input and a plain select: an index into
    -- the concatenation would make a shifter of the whole input vector in synthesis)
    d := (others => '0'); kp := (others => '0'); sd := (others => '0'); tl := '0';
    md := (others => '0'); mk := (others => '0'); ms := (others => '0'); ml := '0';
    for k in 0 to ports_g-1 loop
      if grant = k then
        d  := s_tdata(k*DATA_W_c+DATA_W_c-1 downto k*DATA_W_c);
        kp := s_tkeep(k*LANES_c+LANES_c-1 downto k*LANES_c);
        sd := s_side(k*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto k*REQ_SIDE_W_c);
        tl := s_tlast(k);
      end if;
      if PACK_c and mate = k then
        md := s_tdata(k*DATA_W_c+DATA_W_c-1 downto k*DATA_W_c);
        mk := s_tkeep(k*LANES_c+LANES_c-1 downto k*LANES_c);
        ms := s_side(k*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto k*REQ_SIDE_W_c);
        ml := s_tlast(k);
      end if;
    end loop;
    f_in_data <= beat_of(d, kp, sd, tl, onehot(grant) and (ports_g-1 downto 0 => tl));

    lo  := lower(d, kp, sd, tl, not r.locked, grant);
    hi  := upper(d, kp, sd, tl, grant);
    mlo := lower(md, mk, ms, ml, '1', mate);
    mhi := upper(md, mk, ms, ml, mate);
    if f_in_ready = '1' then
      if not (PACK_c and r.off = '1') then
        if PACK_c and have = '1' and have_mate = '1' and tl = '1' and hi.valid = '0' then
          -- grant's packet ends before lane 8: the mate's starts in lane 8
          f_in_valid <= '1';
          f_in_data  <= join(lo, mlo);
          s_tready(grant) <= '1';
          take(mate, ml);
          v.off   := mhi.valid;
          v.carry := mhi;
        elsif have = '1' then
          f_in_valid <= '1';
          take(grant, tl);
        end if;
      elsif have = '1' and (r.carry.ends and lo.ends) = (ports_g-1 downto 0 => '0') then
        -- the carried upper half, then this beat's lower half (the same packet going on, or the
        -- next one starting in lane 8 after the end of the last; not a packet that ends there
        -- of the input whose packet ends in the carry: one s_sent pulse each)
        f_in_valid <= '1';
        f_in_data  <= join(r.carry, lo);
        take(grant, tl);
        v.off   := hi.valid;
        v.carry := hi;
      elsif r.locked = '0' then
        -- no packet (that may) follow the end in the carried half: it leaves alone
        f_in_valid <= '1';
        f_in_data  <= join(r.carry, HALF_NONE_c);
        v.off      := '0';
        v.carry    := HALF_NONE_c;
      end if;
    end if;

    -- report packets the core has taken
    if f_out_valid = '1' and m_tready = '1' then
      v.sent := f_out_data(ports_g-1 downto 0);
    end if;
    r_next <= v;
  end process;

  i_fifo : entity work.mprace_fifo
    generic map (width_g => ENT_W_c, depth_log2_g => 2)
    port map (
      clk => clk, rst => rst, flush => '0',
      in_valid => f_in_valid, in_ready => f_in_ready, in_data => f_in_data,
      out_valid => f_out_valid, out_ready => m_tready, out_data => f_out_data,
      level => open);

  m_tdata  <= f_out_data(ENT_W_c-1 downto ENT_W_c-DATA_W_c);
  m_tkeep  <= f_out_data(ENT_W_c-DATA_W_c-1 downto ENT_W_c-DATA_W_c-LANES_c);
  m_side   <= f_out_data(REQ_SIDE_W_c+ports_g downto ports_g+1);
  m_tlast  <= f_out_data(ports_g);
  m_tvalid <= f_out_valid;
  s_sent   <= r.sent;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.locked <= '0';
        r.last   <= ports_g-1;
        r.sent   <= (others => '0');
        r.off    <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
