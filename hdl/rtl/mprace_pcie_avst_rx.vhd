-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_avst_rx: the completions on the receive interface of Intel's Avalon-ST hard IP as
-- the engine's completion stream (mprace_dma_pkg: cpl_r beside payload-aligned data, payload
-- dword LANES*j + k of a completion in lane k of its beat j), in either of the IP's forms:
--   hdr_bus_g = true : P-tile (Stratix 10 DX, Agilex). Each TLP's header is on rx_st_hdr of
--                      the segment where it starts (dword 0 in bits 127:96), its payload from
--                      lane 0 of that segment on.
--   hdr_bus_g = false: H-tile and L-tile (Stratix 10 GX/SX/MX). The header is the TLP's first
--                      3 or 4 dwords in rx_st_data, the payload right after it; rx_st_hdr,
--                      rx_st_tlp_prfx and rx_st_tlp_abort are not read.
--   * At 512 bits a TLP may start in the second segment of the beat that ends another.
--   * Ready latency: the IP may deliver beats up to ready_latency_g clocks after rx_st_ready
--     falls; they land in a queue that lowers rx_st_ready while it has less room than that.
--   * Each segment gives up to 8 payload dwords of one completion, and two of them make a
--     512-bit output beat. Both segments of a 512-bit beat are taken in one clock, unless that
--     would make two output beats (a completion ends in the first and a short one fills the
--     second), two register accesses, or follow a register read: then the second goes in the
--     next clock. With the header in the data, the payload is realigned to lane 0: 8 dwords
--     leave once 8 are there, and a completion whose last segment leaves more than 8 takes
--     one more clock.
--   * Completion status other than SC, or a poisoned completion (EP), is CPL_FAILED_c, a
--     completion without data gives one beat without payload. The IPs report completion
--     timeouts on an interface of their own, not here.
--   * Memory requests (the IPs pass only those for a BAR; the engine has BAR0 alone) become
--     register accesses: a write writes its first dword (reg_wr), a read of one dword reads it
--     (reg_rd) and names what its completion needs (rd_*); a longer read is named with
--     rd_ok = '0' for a Completer Abort. While reg_hold is high (a read waits for its data) no
--     TLP is taken. Other TLPs are skipped with a pulse on `other`.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_avst_rx is
  generic (
    data_w_g        : positive := 256;   -- 256 (one segment) or 512 (two segments of 256)
    hdr_bus_g       : boolean  := true;  -- true: P-tile (header bus); false: H-/L-tile
    ready_latency_g : positive := 27     -- the IP's rx_st_ready latency in clocks
  );
  port (
    clk : in  std_logic;
    rst : in  std_logic;
    -- the IP's receive interface (one bit per 256-bit segment)
    rx_st_data      : in  std_logic_vector(data_w_g-1 downto 0);
    rx_st_empty     : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_hdr       : in  std_logic_vector(data_w_g/2-1 downto 0);
    rx_st_tlp_prfx  : in  std_logic_vector(data_w_g/8-1 downto 0);
    rx_st_bar_range : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_tlp_abort : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_sop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_eop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_valid     : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_ready     : out std_logic;
    -- the engine's completion stream
    cpl      : out cpl_r;
    cpl_data : out std_logic_vector(data_w_g-1 downto 0);
    cpl_keep : out std_logic_vector(data_w_g/32-1 downto 0);
    -- register accesses (BAR0)
    reg_wr    : out std_logic;
    reg_rd    : out std_logic;                          -- with rd_*: a read to complete
    reg_addr  : out std_logic_vector(11 downto 0);
    reg_wdata : out std_logic_vector(31 downto 0);
    reg_hold  : in  std_logic;
    rd_ok     : out std_logic;                          -- '0': not a one-dword read
    rd_id     : out std_logic_vector(15 downto 0);      -- requester ID
    rd_tag    : out std_logic_vector(7 downto 0);
    rd_low    : out std_logic_vector(6 downto 0);       -- lower address
    -- pulse: a TLP that is neither a completion nor a memory request was skipped
    other    : out std_logic
  );
end entity mprace_pcie_avst_rx;

architecture rtl of mprace_pcie_avst_rx is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_avst_rx", data_w_g);

  constant LANES_c : natural := data_w_g / 32;
  constant SEGS_c  : natural := data_w_g / 256;
  constant SEG_W_c : natural := 256;

  -- a queued beat: data, headers, sop, eop, valid
  constant BEAT_W_c : natural := data_w_g + data_w_g/2 + 3*SEGS_c;
  constant QUEUE_LOG2_c : natural := log2ceil(ready_latency_g + 8);
  constant ROOM_c : natural := ready_latency_g + 3;   -- the latency, ready's register, margin

  type two_process_r is record
    seg     : natural range 0 to SEGS_c-1;        -- the segment of the head beat taken next
    in_tlp  : std_logic;                          -- inside a TLP
    is_cpl  : std_logic;                          -- ... which is a completion
    rem_dw  : unsigned(10 downto 0);              -- its payload dwords still to come
    hold    : std_logic_vector(SEG_W_c-1 downto 0);   -- its payload dwords not yet passed on
    held    : natural range 0 to 8;
    flush   : std_logic;                          -- hold is its last piece
    piece   : natural range 0 to SEGS_c-1;        -- its next piece's half of the output beat
    first   : std_logic;                          -- no output beat of it yet
    hdr     : cpl_r;                              -- its fields
    low     : std_logic_vector(SEG_W_c-1 downto 0);   -- 512: a piece waiting for its upper half
    low_n   : natural range 0 to 8;
    -- output
    o       : cpl_r;
    o_data  : std_logic_vector(data_w_g-1 downto 0);
    o_keep  : std_logic_vector(LANES_c-1 downto 0);
    other   : std_logic;
    reg_wr, reg_rd, rd_ok : std_logic;
    reg_addr : std_logic_vector(11 downto 0);
    reg_wdata : dword_t;
    rd_id   : std_logic_vector(15 downto 0);
    rd_tag  : std_logic_vector(7 downto 0);
  end record;
  constant CPL_NONE_c : cpl_r := (valid => '0', sop => '0', eop => '0', tag => (others => '0'),
    err => CPL_OK_c, done => '0', bytes => (others => '0'));
  constant R_INIT_c : two_process_r := (seg => 0, in_tlp => '0', is_cpl => '0',
    rem_dw => (others => '0'), hold => (others => '0'), held => 0, flush => '0', piece => 0,
    first => '0', hdr => CPL_NONE_c, low => (others => '0'), low_n => 0, o => CPL_NONE_c,
    o_data => (others => '0'), o_keep => (others => '0'), other => '0', reg_wr => '0',
    reg_rd => '0', rd_ok => '0', reg_addr => (others => '0'), reg_wdata => (others => '0'),
    rd_id => (others => '0'), rd_tag => (others => '0'));

  signal r, r_next  : two_process_r := R_INIT_c;
  signal q_in       : std_logic_vector(BEAT_W_c-1 downto 0);
  signal q_push     : std_logic;
  signal q_valid    : std_logic;
  signal q_pop      : std_logic;
  signal q_out      : std_logic_vector(BEAT_W_c-1 downto 0);
  signal q_level    : unsigned(QUEUE_LOG2_c downto 0);
  signal q_in_ready : std_logic;
  signal ready_q    : std_logic := '0';

  -- the completion fields of a header (dword 0 in bits 127:96)
  function cpl_fields(h : std_logic_vector(127 downto 0)) return cpl_r is
    variable c  : cpl_r := CPL_NONE_c;
    variable bc : unsigned(12 downto 0);
  begin
    c.tag := unsigned(h(64-32+15 downto 64-32+8));          -- dword 2 bits 15:8
    bc := '0' & unsigned(h(64+11 downto 64));               -- dword 1 bits 11:0, 0 = 4096
    if bc = 0 then
      bc := to_unsigned(4096, 13);
    end if;
    c.bytes := bc;
    if h(64+15 downto 64+13) /= "000" or h(96+14) = '1' then   -- status, EP
      c.err := CPL_FAILED_c;
    end if;
    return c;
  end function;

  -- lanes 0..held-1 of hold, then data from its lane `start` (shifts, not dynamic slices:
  -- synthesis tools take those)
  function append(hold : std_logic_vector(SEG_W_c-1 downto 0); held : natural;
                  data : std_logic_vector(SEG_W_c-1 downto 0);
                  start : natural) return std_logic_vector is
    variable o : std_logic_vector(SEG_W_c-1 downto 0);
  begin
    o := std_logic_vector(shift_left(shift_right(unsigned(data), 32*start), 32*held));
    for k in 0 to 7 loop
      if k < held then
        o(32*k+31 downto 32*k) := hold(32*k+31 downto 32*k);
      end if;
    end loop;
    return o;
  end function;

begin

  -- the queue: rx_st_ready (registered) only while it has room for what the latency may bring
  q_push <= '1' when unsigned(rx_st_valid) /= 0 else '0';
  q_in   <= rx_st_data & rx_st_hdr & rx_st_sop & rx_st_eop & rx_st_valid;

  i_queue : entity work.mprace_fifo
    generic map (width_g => BEAT_W_c, depth_log2_g => QUEUE_LOG2_c)
    port map (
      clk => clk, rst => rst, flush => '0',
      in_valid => q_push, in_ready => q_in_ready, in_data => q_in,
      out_valid => q_valid, out_ready => q_pop, out_data => q_out, level => q_level);

  p_ready : process(clk)
  begin
    if rising_edge(clk) then
      if q_level + ROOM_c <= 2**QUEUE_LOG2_c then
        ready_q <= '1';
      else
        ready_q <= '0';
      end if;
      if rst = '1' then
        ready_q <= '0';
      end if;
      assert not (rst = '0' and q_push = '1' and q_in_ready = '0')
        report "mprace_pcie_avst_rx: a beat arrived with the queue full (ready latency too low)"
        severity failure;
    end if;
  end process;
  rx_st_ready <= ready_q;

  p_comb : process(all)
    variable v       : two_process_r;
    variable snap    : two_process_r;
    variable emits   : natural range 0 to 3;     -- output beats made this clock
    variable d       : std_logic_vector(SEG_W_c-1 downto 0);
    variable h       : std_logic_vector(127 downto 0);
    variable sop, eop, valid : std_logic;
    variable start   : natural range 0 to 4;     -- the first payload lane of this segment
    variable c       : natural range 0 to 8;     -- payload dwords in this segment
    variable next_seg : boolean;         -- the head beat has another valid segment after r.seg

    -- up to 8 payload dwords of the completion, from lane 0, to the output: one output beat
    -- at 256 bits, half of one at 512 (every piece but a completion's last has 8 dwords)
    procedure pass(pd : std_logic_vector(SEG_W_c-1 downto 0); n : natural; last : boolean) is
      -- the fields of the completion an output beat belongs to
      procedure fields is
      begin
        v.o.tag   := v.hdr.tag;
        v.o.err   := v.hdr.err;
        v.o.bytes := v.hdr.bytes;
        v.o.done  := v.hdr.done;
      end procedure;
    begin
      if SEGS_c = 1 then
        fields;
        v.o.valid := '1';
        v.o.sop   := v.first;
        v.o.eop   := to_sl(last);
        v.o_data  := pd;
        v.o_keep  := ones(n, LANES_c);
        v.first   := '0';
        emits := emits + 1;
      elsif v.piece = 0 and not last then
        v.low   := pd;                     -- the lower half of an output beat: wait for the upper
        v.low_n := n;
        v.piece := 1;
      else
        fields;
        v.o.valid := '1';
        v.o.sop   := v.first;
        v.o.eop   := to_sl(last);
        if v.piece = 0 then
          v.o_data := (data_w_g-1 downto SEG_W_c => '0') & pd;
          v.o_keep := ones(n, LANES_c);
        else
          v.o_data := pd & v.low;
          v.o_keep := ones(v.low_n + n, LANES_c);
        end if;
        v.piece := 0;
        v.first := '0';
        emits := emits + 1;
      end if;
    end procedure;

    -- segment t of the head beat: a TLP's header, a register access, payload to the output
    procedure take(t : natural) is
    begin
      -- (a loop of fixed slices: GHDL's synthesis fails on a slice that moves with t)
      d := (others => '0');
      h := (others => '0');
      sop := '0';
      eop := '0';
      valid := '0';
      for k in 0 to SEGS_c-1 loop
        if k = t then
          d     := q_out(BEAT_W_c-1-(SEGS_c-1-k)*SEG_W_c downto BEAT_W_c-(SEGS_c-k)*SEG_W_c);
          h     := q_out(3*SEGS_c+128*k+127 downto 3*SEGS_c+128*k);
          sop   := q_out(2*SEGS_c+k);
          eop   := q_out(SEGS_c+k);
          valid := q_out(k);
        end if;
      end loop;
      if not hdr_bus_g then
        h := d(31 downto 0) & d(63 downto 32) & d(95 downto 64) & d(127 downto 96);
      end if;
      if valid = '1' then
        start := 0;
        if sop = '1' then
          -- a new TLP: a completion (Type 01010, with or without data) or something else
          v.in_tlp := not eop;
          v.first  := '1';
          v.piece  := 0;
          v.low_n  := 0;
          v.held   := 0;
          if not hdr_bus_g then
            start := 3;
            if h(96+TLP_FMT_4DW_c) = '1' then
              start := 4;
            end if;
          end if;
          if h(96+28 downto 96+24) = "01010" and h(96+31) = '0' and h(96+29) = '0' then
            v.is_cpl := '1';
            v.hdr    := cpl_fields(h);
            -- the request is done when this completion carries all its remaining bytes, or
            -- fails it (no data)
            v.hdr.done := '1';
            v.rem_dw   := (others => '0');
            if h(96+30) = '1' then
              v.rem_dw := '0' & unsigned(h(96+9 downto 96));
              if v.rem_dw = 0 then
                v.rem_dw := to_unsigned(1024, 11);
              end if;
              if v.hdr.bytes > shift_left(resize(v.rem_dw, 13), 2) then
                v.hdr.done := '0';
              end if;
            end if;
          else
            v.is_cpl := '0';
            if h(96+28 downto 96+24) = "00000" and h(96+31) = '0' then
              -- a memory request to BAR0: 3- or 4-dword header, one register
              if h(96+29) = '1' then
                v.reg_addr := h(11 downto 2) & "00";
              else
                v.reg_addr := h(32+11 downto 32+2) & "00";
              end if;
              v.rd_id  := h(64+31 downto 64+16);
              v.rd_tag := h(64+15 downto 64+8);
              if h(96+30) = '1' then
                v.reg_wr    := '1';
                v.reg_wdata := d(32*start+31 downto 32*start);
              else
                v.reg_rd := '1';
                v.rd_ok  := '0';
                if h(96+9 downto 96) = "0000000001" then
                  v.rd_ok := '1';
                end if;
              end if;
            else
              v.other := '1';
            end if;
          end if;
        end if;
        if v.is_cpl = '1' then
          -- this segment's payload dwords, after those held from the one before
          if v.rem_dw > 8 - start then
            c := 8 - start;
          else
            c := to_integer(v.rem_dw);
          end if;
          v.rem_dw := v.rem_dw - c;
          if hdr_bus_g then
            -- the payload starts in lane 0 and every segment but a TLP's last is full: each
            -- segment is a piece as it stands (no realigning logic)
            pass(d, c, eop = '1');
          elsif v.held + c > 8 then
            -- 8 leave, the rest waits: for the next segment, or a clock of its own at the end
            pass(append(v.hold, v.held, d, start), 8, false);
            v.hold := append(v.hold, 0, d, start + 8 - v.held);
            v.held := v.held + c - 8;
            if eop = '1' then
              v.flush := '1';
            end if;
          elsif eop = '1' or v.held + c = 8 then
            pass(append(v.hold, v.held, d, start), v.held + c, eop = '1');
            v.held := 0;
          else
            v.hold := append(v.hold, v.held, d, start);
            v.held := v.held + c;
          end if;
        end if;
        if eop = '1' then
          v.in_tlp := '0';
          v.is_cpl := '0';
        end if;
      end if;
    end procedure;
  begin
    v := r;
    v.o := CPL_NONE_c;
    v.other := '0';
    v.reg_wr := '0';
    v.reg_rd := '0';
    emits := 0;
    q_pop <= '0';
    if r.flush = '1' then
      -- the last dwords of a completion, held from its last segment
      pass(r.hold, r.held, true);
      v.flush := '0';
      v.held  := 0;
    elsif q_valid = '1' and reg_hold = '0' and r.reg_rd = '0' then
      take(r.seg);
      next_seg := false;
      for t in 0 to SEGS_c-1 loop
        if t > r.seg and q_out(t) = '1' then
          next_seg := true;
        end if;
      end loop;
      if next_seg then
        -- at 512 bits the second segment goes in the same clock unless that makes two output
        -- beats, two register accesses or two skipped TLPs, or the first segment was a
        -- register read or left a flush beat to send: then it goes in the next clock
        v.seg := 1;
        if v.flush = '0' and v.reg_rd = '0' then
          snap := v;
          take(1);
          if emits > 1 or (snap.reg_wr = '1' and (v.reg_wr = '1' or v.reg_rd = '1')) or
             (snap.other = '1' and v.other = '1') then
            v := snap;
          else
            v.seg := 0;
            q_pop <= '1';
          end if;
        end if;
      else
        v.seg := 0;
        q_pop <= '1';
      end if;
    end if;
    r_next <= v;
  end process;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r <= R_INIT_c;
      end if;
    end if;
  end process;

  cpl      <= r.o;
  cpl_data <= r.o_data;
  cpl_keep <= r.o_keep;
  other    <= r.other;
  reg_wr    <= r.reg_wr;
  reg_rd    <= r.reg_rd;
  reg_addr  <= r.reg_addr;
  reg_wdata <= r.reg_wdata;
  rd_ok     <= r.rd_ok;
  rd_id     <= r.rd_id;
  rd_tag    <= r.rd_tag;
  rd_low    <= r.reg_addr(6 downto 0);

end architecture rtl;
