-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_c2h: the card-to-host channel (index 0). Descriptor fetcher, C2H data ring with its
-- source stage, write engine, and the channel sequencing between them and the register file:
--   * while RUNNING it passes fetched descriptors to the write engine in order; it stops taking
--     them after one with CTRL.STOP or an error, and when RUN is cleared (the descriptor in
--     flight finishes, fetched ones are dropped and fetched again from HEAD on the next RUN);
--   * ABORT and the stall timeout (TIMEOUT_US of no source data, or of no answer to a
--     descriptor fetch) end the channel through the write engine, which writes the record;
--   * RESET forgets everything, including the data already taken from the source.
-- Spec: docs/dma-engine.md sections 4 (channel operation) and 5 (errors, abort, recovery).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_c2h is
  generic (
    data_w_g    : positive := 256;    -- datapath: 256 or 512 bits
    straddle_g  : boolean := false;   -- TLPs may straddle beats of the request stream (512)
    ring_log2_g : positive := 12
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    ctrl       : in  chan_ctrl_r;
    stat       : out chan_stat_r;
    link       : in  link_cfg_r;
    us_tick    : in  std_logic;                  -- one pulse per microsecond
    data_flush : in  std_logic;                  -- pulse: the source changed, drop its data
    -- source stream (dword lanes)
    s_tdata    : in  std_logic_vector(data_w_g-1 downto 0);
    s_tkeep    : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_tlast    : in  std_logic;
    s_tvalid   : in  std_logic;
    s_tready   : out std_logic;
    -- requests: data and records
    wr_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    wr_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    wr_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    wr_tlast   : out std_logic;
    wr_tvalid  : out std_logic;
    wr_tready  : in  std_logic;
    wr_sent    : in  std_logic;
    -- requests: descriptor fetches
    df_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    df_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    df_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    df_tlast   : out std_logic;
    df_tvalid  : out std_logic;
    df_tready  : in  std_logic;
    -- completions
    cpl        : in  cpl_r;
    cpl_data   : in  std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : in  std_logic_vector(data_w_g/32-1 downto 0)
  );
end entity mprace_dma_c2h;

architecture rtl of mprace_dma_c2h is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_c2h", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat
  constant BYTES_c  : natural := data_w_g / 8;

  type two_process_r is record
    stopping   : std_logic;     -- took a STOP descriptor: take no more until RUN is cleared
    halted     : std_logic;     -- error or abort: take nothing until RESET
    resetting  : std_logic;     -- RESET waits for the TLP in progress
    timer      : unsigned(31 downto 0);
    abort      : std_logic;
    abort_code : code_t;
    flushing   : std_logic;     -- a data flush waits for the write engine to drop the ring
  end record;
  constant R_INIT_c : two_process_r := (stopping => '0', halted => '0', resetting => '0',
    timer => (others => '0'), abort => '0', abort_code => (others => '0'), flushing => '0');

  signal r, r_next     : two_process_r := R_INIT_c;

  signal fetch_en      : std_logic;
  signal desc_valid    : std_logic;
  signal desc_ready    : std_logic;
  signal desc          : desc_entry_r;
  signal fetch_busy    : std_logic;
  signal fetch_seen    : std_logic;

  signal job_valid     : std_logic;
  signal job_ready     : std_logic;
  signal job_rec_addr       : std_logic_vector(63 downto 0);
  signal take          : std_logic;

  signal ring_wr_en    : std_logic_vector(LANES_c-1 downto 0);
  signal ring_wr_pos   : std_logic_vector(ring_log2_g-1 downto 0);
  signal ring_wr_data  : std_logic_vector(DATA_W_c-1 downto 0);
  signal ring_rd_pos   : std_logic_vector(ring_log2_g-1 downto 0);
  signal ring_rd_data  : std_logic_vector(DATA_W_c-1 downto 0);

  signal rd_pos        : pos_t;
  signal wr_commit     : pos_t;
  signal eop_valid     : std_logic;
  signal eop_pos       : pos_t;
  signal eop_pop       : std_logic;
  signal src_progress  : std_logic;
  signal cleared       : std_logic;
  signal src_hold      : std_logic;
  signal src_tvalid    : std_logic;
  signal src_tready    : std_logic;

  signal ev_valid      : std_logic;
  signal ev_code       : code_t;
  signal ev_bytes      : len_t;
  signal ev_irq        : std_logic;
  signal ev_stop       : std_logic;
  signal wr_waiting    : std_logic;
  signal wr_progress   : std_logic;
  signal wr_idle       : std_logic;

begin

  -- take descriptors only while running normally
  take       <= ctrl.run and not r.stopping and not r.halted and not r.resetting;
  fetch_en   <= take;
  job_valid  <= desc_valid and take;
  desc_ready <= job_ready and take;
  job_rec_addr    <= std_logic_vector(unsigned(ctrl.ring_base) +
                                shift_left(resize(desc.slot, 64), log2ceil(DESC_SIZE_c)) +
                                DESC_RESULT_BYTES_c);

  -- The source changed, or RESET: hold it back from when the write engine can drop the old
  -- data until it has, so that nothing offered after the change is dropped with it. While a
  -- descriptor is in progress the drop waits for its end, which needs source data: no hold.
  src_hold   <= data_flush or ctrl.reset or r.resetting or (r.flushing and wr_idle);
  src_tvalid <= s_tvalid and not src_hold;
  s_tready   <= src_tready and not src_hold;

  p_comb : process(all)
    variable v       : two_process_r;
    variable stalled : boolean;
  begin
    v := r;
    v.abort := '0';
    if data_flush = '1' then
      v.flushing := '1';
    elsif cleared = '1' then
      v.flushing := '0';
    end if;

    if desc_valid = '1' and desc_ready = '1' then
      if desc.stop = '1' then
        v.stopping := '1';
      end if;
      if desc.err /= code(ERR_NONE_c) then
        v.halted := '1';
      end if;
    end if;
    if ctrl.run = '0' then
      v.stopping := '0';
    end if;

    -- stall timer: waiting for source data, or for the answer to a descriptor fetch
    stalled := wr_waiting = '1' or
               (wr_idle = '1' and fetch_busy = '1' and desc_valid = '0' and take = '1');
    if not stalled or src_progress = '1' or wr_progress = '1' or fetch_seen = '1' or
       r.halted = '1' then
      v.timer := (others => '0');
    elsif us_tick = '1' then
      v.timer := r.timer + 1;
    end if;
    if unsigned(ctrl.timeout_us) /= 0 and r.timer > unsigned(ctrl.timeout_us) and
       r.halted = '0' then
      v.abort      := '1';
      v.abort_code := code(ERR_TIMEOUT_c);
      v.halted     := '1';
      v.timer      := (others => '0');
    end if;
    if ctrl.abort = '1' and r.halted = '0' then
      v.abort      := '1';
      v.abort_code := code(ERR_ABORTED_c);
      v.halted     := '1';
    end if;

    if ctrl.reset = '1' then
      v.resetting := '1';
      v.abort     := '0';
    end if;
    if cleared = '1' and r.resetting = '1' then
      v.resetting := '0';
      v.halted    := '0';
      v.stopping  := '0';
      v.timer     := (others => '0');
    end if;
    r_next <= v;
  end process;

  i_fetch : entity work.mprace_dma_desc_fetch
    generic map (data_w_g => data_w_g, tag_g => FETCH_TAG_C2H_c)
    port map (
      clk => clk, rst => rst, ctrl => ctrl, enable => fetch_en, mrrs_dw => link.mrrs_dw,
      req_tdata => df_tdata, req_tkeep => df_tkeep, req_side => df_side, req_tlast => df_tlast,
      req_tvalid => df_tvalid, req_tready => df_tready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      desc_valid => desc_valid, desc_ready => desc_ready, desc => desc,
      busy => fetch_busy, cpl_seen => fetch_seen);

  i_src : entity work.mprace_dma_c2h_src
    generic map (data_w_g => data_w_g, ring_log2_g => ring_log2_g)
    port map (
      clk => clk, rst => rst, flush => cleared,
      s_tdata => s_tdata, s_tkeep => s_tkeep, s_tlast => s_tlast, s_tvalid => src_tvalid,
      s_tready => src_tready,
      wr_en => ring_wr_en, wr_pos => ring_wr_pos, wr_data => ring_wr_data,
      rd_pos => rd_pos, wr_commit => wr_commit, eop_valid => eop_valid, eop_pos => eop_pos,
      eop_pop => eop_pop, progress => src_progress);

  i_ring : entity work.mprace_dword_ring
    generic map (data_w_g => data_w_g, depth_log2_g => ring_log2_g)
    port map (
      clk => clk, wr_en => ring_wr_en, wr_pos => ring_wr_pos, wr_data => ring_wr_data,
      rd_en => '1', rd_pos => ring_rd_pos, rd_data => ring_rd_data);

  i_wr : entity work.mprace_dma_wr
    generic map (data_w_g => data_w_g, straddle_g => straddle_g, ring_log2_g => ring_log2_g)
    port map (
      clk => clk, rst => rst, mps_dw => link.mps_dw,
      job_valid => job_valid, job_ready => job_ready, job => desc, job_rec_addr => job_rec_addr,
      abort => r.abort, abort_code => r.abort_code, clear => ctrl.reset,
      data_flush => data_flush, cleared => cleared,
      ring_rd_pos => ring_rd_pos, ring_rd_data => ring_rd_data,
      rd_pos => rd_pos, wr_commit => wr_commit, eop_valid => eop_valid, eop_pos => eop_pos,
      eop_pop => eop_pop,
      req_tdata => wr_tdata, req_tkeep => wr_tkeep, req_side => wr_side, req_tlast => wr_tlast,
      req_tvalid => wr_tvalid, req_tready => wr_tready, req_sent => wr_sent,
      ev_valid => ev_valid, ev_code => ev_code, ev_bytes => ev_bytes, ev_irq => ev_irq,
      ev_stop => ev_stop, waiting => wr_waiting, progress => wr_progress, idle => wr_idle);

  stat.done     <= ev_valid when ev_code = code(ERR_NONE_c) else '0';
  stat.err      <= ev_valid when ev_code /= code(ERR_NONE_c) else '0';
  stat.err_code <= ev_code;
  stat.bytes    <= ev_bytes;
  stat.irq      <= ev_irq;
  stat.stop     <= ev_stop;
  stat.busy     <= not wr_idle or fetch_busy or r.resetting;
  stat.idle     <= wr_idle and not r.resetting;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.stopping  <= '0';
        r.halted    <= '0';
        r.resetting <= '0';
        r.timer     <= (others => '0');
        r.abort     <= '0';
        r.flushing  <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
