-- SPDX-License-Identifier: GPL-2.0
-- wr_tb: the C2H write engine (mprace_dma_wr) with its data path as in mprace_dma_c2h: the
-- source (mprace_dma_c2h_src) filling the dword ring from an AXI4-Stream, the ring, and the
-- engine emitting memory-write TLPs; jobs and reports on flat ports, so that a cocotb test can
-- feed packets, queue descriptors and read back every TLP.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity wr_tb is
  generic (data_w_g : positive := 256; straddle_g : boolean := false;
           ring_log2_g : positive := 12);
  port (
    clk, rst     : in  std_logic;
    mps_dw       : in  std_logic_vector(10 downto 0);
    s_axis_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_tlast  : in  std_logic;
    s_axis_tvalid : in  std_logic;
    use_tlast     : in  std_logic;   -- '0': the frames' tlast is not passed (an endless stream)
    s_axis_tready : out std_logic := '0';
    job_valid    : in  std_logic;
    job_ready    : out std_logic := '0';
    job_addr     : in  std_logic_vector(63 downto 0);
    job_len      : in  std_logic_vector(DESC_LEN_BYTES_WIDTH_c-1 downto 0);
    job_ctrl     : in  std_logic_vector(2 downto 0);    -- stop, eop, irq
    job_err      : in  std_logic_vector(7 downto 0);
    job_rec      : in  std_logic;
    job_rec_addr : in  std_logic_vector(63 downto 0);
    abort        : in  std_logic;
    abort_code   : in  std_logic_vector(7 downto 0);
    rq_tdata     : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    rq_tkeep     : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    rq_tuser     : out std_logic_vector(REQ_SIDE_W_c-1 downto 0) := (others => '0');
    rq_tlast     : out std_logic := '0';
    rq_tvalid    : out std_logic := '0';
    rq_tready    : in  std_logic;
    ev_valid     : out std_logic := '0';
    ev_code      : out std_logic_vector(7 downto 0) := (others => '0');
    ev_bytes     : out std_logic_vector(DESC_LEN_BYTES_WIDTH_c-1 downto 0) := (others => '0');
    ev_irq       : out std_logic := '0';
    ev_stop      : out std_logic := '0';
    idle         : out std_logic := '0'
  );
end entity wr_tb;

architecture wrap of wr_tb is
  signal job : desc_entry_r;
  signal ring_wr_en  : std_logic_vector(data_w_g/32-1 downto 0);
  signal ring_wr_pos, ring_rd_pos : std_logic_vector(ring_log2_g-1 downto 0);
  signal ring_wr_data, ring_rd_data : std_logic_vector(data_w_g-1 downto 0);
  signal rd_pos, wr_commit, eop_pos : pos_t;
  signal eop_valid, eop_pop, cleared : std_logic;
  signal tvalid, tlast, sent : std_logic;
  signal evb : len_t;
begin
  job <= (addr => job_addr, len => unsigned(job_len), irq => job_ctrl(0), eop => job_ctrl(1),
          stop => job_ctrl(2), slot => (others => '0'), err => job_err, rec => job_rec);
  -- the request mux reports a TLP sent when the core takes its last beat
  sent <= tvalid and rq_tready and tlast;
  rq_tvalid <= tvalid;
  rq_tlast  <= tlast;

  i_src : entity work.mprace_dma_c2h_src
    generic map (data_w_g => data_w_g, ring_log2_g => ring_log2_g)
    port map (
      clk => clk, rst => rst, flush => cleared,
      s_tdata => s_axis_tdata, s_tkeep => s_axis_tkeep, s_tlast => s_axis_tlast and use_tlast,
      s_tvalid => s_axis_tvalid, s_tready => s_axis_tready,
      wr_en => ring_wr_en, wr_pos => ring_wr_pos, wr_data => ring_wr_data,
      rd_pos => rd_pos, wr_commit => wr_commit, eop_valid => eop_valid, eop_pos => eop_pos,
      eop_pop => eop_pop, progress => open);

  i_ring : entity work.mprace_dword_ring
    generic map (data_w_g => data_w_g, depth_log2_g => ring_log2_g)
    port map (
      clk => clk, wr_en => ring_wr_en, wr_pos => ring_wr_pos, wr_data => ring_wr_data,
      rd_en => '1', rd_pos => ring_rd_pos, rd_data => ring_rd_data);

  i_wr : entity work.mprace_dma_wr
    generic map (data_w_g => data_w_g, straddle_g => straddle_g, ring_log2_g => ring_log2_g)
    port map (
      clk => clk, rst => rst, mps_dw => unsigned(mps_dw),
      job_valid => job_valid, job_ready => job_ready, job => job, job_rec_addr => job_rec_addr,
      abort => abort, abort_code => abort_code, clear => '0', data_flush => '0',
      cleared => cleared,
      ring_rd_pos => ring_rd_pos, ring_rd_data => ring_rd_data,
      rd_pos => rd_pos, wr_commit => wr_commit, eop_valid => eop_valid, eop_pos => eop_pos,
      eop_pop => eop_pop,
      req_tdata => rq_tdata, req_tkeep => rq_tkeep, req_side => rq_tuser, req_tlast => tlast,
      req_tvalid => tvalid, req_tready => rq_tready, req_sent => sent,
      ev_valid => ev_valid, ev_code => ev_code, ev_bytes => evb, ev_irq => ev_irq,
      ev_stop => ev_stop, waiting => open, progress => open, idle => idle);
  ev_bytes <= std_logic_vector(evb);
end architecture wrap;
