-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_ptile_tx: the engine's request stream (mprace_dma_pkg: a PCIe TLP header in a
-- 4-dword slot, then the payload) on the transmit interface of Intel's P-tile Avalon-ST hard IP
-- (Stratix 10 DX, Agilex): the header goes on the header bus of the segment where the TLP starts
-- (tx_st_hdr, dword 0 in bits 127:96), the payload from lane 0 of that segment on.
--   * Realigning: output beat j of a TLP is lanes 4.. of input beat j followed by lanes 0..3 of
--     input beat j+1, so a TLP leaves one beat after it arrives; when the payload's last dwords
--     sit in lanes 4.. of its last input beat, one more output beat follows and the input waits
--     for that clock.
--   * Every TLP starts in segment 0 (at 512 bits the second segment carries only the rest of a
--     TLP that started in the first): the core must not pack two TLPs into a beat (its
--     straddle_g off). The side bits of a second TLP in a beat are not taken.
--   * Ready latency: the IP takes a beat in clock t only if it raised tx_st_ready in clock
--     t - ready_latency_g; beats wait in a queue deep enough for the ones already decided.
--   * Memory requests get the function's requester ID (req_id) in header dword 1, and those
--     below 4 GiB the 3-dword header PCIe requires (the core writes the 4-dword form);
--     completions keep the completer and requester IDs they carry.
-- Credits (tx_cdts_limit) are not watched: the engine bounds its non-posted requests by its
-- completion budget, posted writes by nothing; see hdl/README "Attaching to an Intel board".
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_ptile_tx is
  generic (
    data_w_g        : positive := 256;   -- 256 (one segment) or 512 (two segments of 256)
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
end entity mprace_pcie_ptile_tx;

architecture rtl of mprace_pcie_ptile_tx is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_ptile_tx", data_w_g);

  constant LANES_c : natural := data_w_g / 32;
  constant SEGS_c  : natural := data_w_g / 256;
  constant HOLD_c  : natural := LANES_c - HDR_SLOT_DW_c;   -- payload lanes of a first beat

  -- an output beat: data, the header of a TLP starting in it (segment 0), sop, the number of
  -- lanes with data (0 for a TLP without payload) and eop
  constant BEAT_W_c : natural := data_w_g + 128 + 1 + 5 + 1;
  -- a beat leaves the queue only in a clock the IP will take it (ready_latency_g before), so
  -- the queue needs no room for beats in flight: four entries keep the input streaming
  constant QUEUE_LOG2_c : natural := 2;

  type two_process_r is record
    in_tlp  : std_logic;                                  -- an input TLP is in progress
    hold    : std_logic_vector(HOLD_c*32-1 downto 0);     -- lanes 4.. of the last input beat
    held    : natural range 0 to HOLD_c;                  -- payload dwords in hold
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

  function beat(data : std_logic_vector; hdr : std_logic_vector(127 downto 0); sop : std_logic;
                lanes : natural; eop : std_logic) return std_logic_vector is
  begin
    return data & hdr & sop & std_logic_vector(to_unsigned(lanes, 5)) & eop;
  end function;

  function count(keep : std_logic_vector) return natural is
  begin
    return count_ones(keep);
  end function;

begin

  p_comb : process(all)
    variable v    : two_process_r;
    variable n    : natural range 0 to LANES_c;
    variable d    : std_logic_vector(data_w_g-1 downto 0);
    variable take : natural range 0 to LANES_c;
  begin
    v := r;
    s_tready   <= '0';
    q_in_valid <= '0';
    q_in_data  <= (others => '0');
    n := count(s_tkeep);
    if q_in_ready = '1' then
      if r.flush = '1' then
        -- the TLP's last payload dwords, held from its last input beat
        d := (others => '0');
        d(HOLD_c*32-1 downto 0) := r.hold;
        q_in_valid <= '1';
        q_in_data  <= beat(d, r.hdr, r.first, r.held, '1');
        v.flush := '0';
        v.held  := 0;
      elsif s_tvalid = '1' then
        s_tready <= '1';
        if r.in_tlp = '0' then
          -- first beat: the header and up to HOLD_c payload dwords
          v.hdr    := s_tdata(127 downto 0);
          v.hold   := s_tdata(data_w_g-1 downto 128);
          v.first  := '1';
          if n > HDR_SLOT_DW_c then
            v.held := n - HDR_SLOT_DW_c;
          else
            v.held := 0;
          end if;
          if s_tlast = '1' then
            -- the whole TLP in one output beat
            d := (others => '0');
            d(HOLD_c*32-1 downto 0) := s_tdata(data_w_g-1 downto 128);
            q_in_valid <= '1';
            q_in_data  <= beat(d, s_tdata(127 downto 0), '1', v.held, '1');
            v.held := 0;
          else
            v.in_tlp := '1';
          end if;
        else
          -- a later beat: what is held and lanes 0..3 of this beat leave together
          d := s_tdata(127 downto 0) & r.hold;
          take := r.held + HDR_SLOT_DW_c;
          if n < HDR_SLOT_DW_c then
            take := r.held + n;
          end if;
          v.hold  := s_tdata(data_w_g-1 downto 128);
          v.first := '0';
          if n > HDR_SLOT_DW_c then
            v.held := n - HDR_SLOT_DW_c;
          else
            v.held := 0;
          end if;
          q_in_valid <= '1';
          if s_tlast = '1' then
            v.in_tlp := '0';
            if n > HDR_SLOT_DW_c then
              v.flush := '1';                    -- one more beat with lanes 4.. of this one
              q_in_data <= beat(d, r.hdr, r.first, take, '0');
            else
              q_in_data <= beat(d, r.hdr, r.first, take, '1');
            end if;
          else
            q_in_data <= beat(d, r.hdr, r.first, take, '0');
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
    variable lanes : natural range 0 to LANES_c;
    variable data  : std_logic_vector(data_w_g-1 downto 0);
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
        data  := q_data(BEAT_W_c-1 downto BEAT_W_c-data_w_g);
        hdr   := q_data(BEAT_W_c-data_w_g-1 downto 7);
        sop   := q_data(6);
        lanes := to_integer(unsigned(q_data(5 downto 1)));
        eop   := q_data(0);
        tx_st_data <= data;
        if hdr(28 downto 24) = "00000" then
          hdr(63 downto 48) := req_id;           -- a memory request: dword 1 bits 31:16
          if hdr(TLP_FMT_4DW_c) = '1' and hdr(95 downto 64) = x"00000000" then
            hdr(TLP_FMT_4DW_c) := '0';           -- below 4 GiB: the 3-dword form
            hdr(95 downto 64)  := hdr(127 downto 96);
            hdr(127 downto 96) := (others => '0');
          end if;
        end if;
        tx_st_hdr  <= (others => '0');
        tx_st_hdr(127 downto 0) <= hdr(31 downto 0) & hdr(63 downto 32) & hdr(95 downto 64) &
                                   hdr(127 downto 96);   -- dword 0 in bits 127:96
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
