-- SPDX-License-Identifier: GPL-2.0
-- rd_tb: the H2C read engine (mprace_dma_rd) behind the requester-completion adapter
-- (mprace_pcie_us_rc), with the link settings on flat ports and the ring write port exposed, so
-- that a cocotb test can play the host (answering read requests with split, reordered or failed
-- completions) and the H2C channel (consuming the ring behind ready_pos).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity rd_tb is
  generic (data_w_g : positive := 256; straddle_g : boolean := false;
           ring_log2_g : positive := 12;
           hdr_budget_g : positive := 54; data_budget_g : positive := 972);
  port (
    clk, rst   : in  std_logic;
    mps_dw     : in  std_logic_vector(10 downto 0);
    mrrs_dw    : in  std_logic_vector(10 downto 0);
    rcb128     : in  std_logic;
    job_valid  : in  std_logic;
    job_ready  : out std_logic := '0';
    job_addr   : in  std_logic_vector(63 downto 0);
    job_len    : in  std_logic_vector(DESC_LEN_BYTES_WIDTH_c-1 downto 0);
    job_pos    : in  std_logic_vector(31 downto 0);
    space_base : in  std_logic_vector(31 downto 0);
    discard    : in  std_logic;
    rq_tdata   : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    rq_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    rq_tuser   : out std_logic_vector(REQ_SIDE_W_c-1 downto 0) := (others => '0');
    rq_tlast   : out std_logic := '0';
    rq_tvalid  : out std_logic := '0';
    rq_tready  : in  std_logic;
    s_axis_rc_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_rc_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_rc_tuser  : in  std_logic_vector(rc_user_w(data_w_g)-1 downto 0);
    s_axis_rc_tlast  : in  std_logic;
    s_axis_rc_tvalid : in  std_logic;
    s_axis_rc_tready : out std_logic := '0';
    ring_wr_en   : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    ring_wr_pos  : out std_logic_vector(ring_log2_g-1 downto 0) := (others => '0');
    ring_wr_data : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    ready_pos  : out std_logic_vector(31 downto 0) := (others => '0');
    err_valid  : out std_logic := '0';
    err_pos    : out std_logic_vector(31 downto 0) := (others => '0');
    err_code   : out std_logic_vector(7 downto 0) := (others => '0');
    busy       : out std_logic := '0';
    idle       : out std_logic := '0'
  );
end entity rd_tb;

architecture wrap of rd_tb is
  signal link : link_cfg_r;
  signal cpl            : cpl_r;
  signal cpl_data  : std_logic_vector(data_w_g-1 downto 0);
  signal cpl_keep  : std_logic_vector(data_w_g/32-1 downto 0);
  signal rp, ep    : pos_t;
begin
  link <= (mps_dw => unsigned(mps_dw), mrrs_dw => unsigned(mrrs_dw), rcb128 => rcb128);

  i_rc : entity work.mprace_pcie_us_rc
    generic map (data_w_g => data_w_g, straddle_g => straddle_g)
    port map (
      clk => clk, rst => rst,
      s_axis_rc_tdata => s_axis_rc_tdata, s_axis_rc_tkeep => s_axis_rc_tkeep,
      s_axis_rc_tuser => s_axis_rc_tuser, s_axis_rc_tlast => s_axis_rc_tlast,
      s_axis_rc_tvalid => s_axis_rc_tvalid, s_axis_rc_tready => s_axis_rc_tready,
      cpl => cpl,
      cpl_data => cpl_data, cpl_keep => cpl_keep);

  i_rd : entity work.mprace_dma_rd
    generic map (data_w_g => data_w_g, ring_log2_g => ring_log2_g,
                 hdr_budget_g => hdr_budget_g, data_budget_g => data_budget_g)
    port map (
      clk => clk, rst => rst, link => link,
      job_valid => job_valid, job_ready => job_ready, job_addr => job_addr,
      job_len => unsigned(job_len), job_pos => unsigned(job_pos),
      space_base => unsigned(space_base), discard => discard,
      req_tdata => rq_tdata, req_tkeep => rq_tkeep, req_side => rq_tuser, req_tlast => rq_tlast,
      req_tvalid => rq_tvalid, req_tready => rq_tready,
      cpl => cpl, cpl_data => cpl_data,
      cpl_keep => cpl_keep,
      ring_wr_en => ring_wr_en, ring_wr_pos => ring_wr_pos, ring_wr_data => ring_wr_data,
      ready_pos => rp, err_valid => err_valid, err_pos => ep, err_code => err_code,
      busy => busy, waiting => open, cpl_seen => open, idle => idle);
  ready_pos <= std_logic_vector(rp);
  err_pos   <= std_logic_vector(ep);
end architecture wrap;
