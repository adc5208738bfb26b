-- SPDX-License-Identifier: GPL-2.0
-- rq_mux_tb: the request path of the Xilinx top: mprace_dma_req_mux with three inputs on separate
-- ports, so that cocotbext-axi sources can drive them (the mux takes its inputs concatenated),
-- and the RQ adapter mprace_pcie_us_rq behind it; pack_g as at the mux (512 bits).
library ieee;
use ieee.std_logic_1164.all;

library work;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity rq_mux_tb is
  generic (data_w_g : positive := 256; bulk_g : integer := 0; pack_g : boolean := false);
  port (
    clk, rst : in std_logic;
    s0_axis_tdata, s1_axis_tdata, s2_axis_tdata : in  std_logic_vector(data_w_g-1 downto 0);
    s0_axis_tkeep, s1_axis_tkeep, s2_axis_tkeep : in  std_logic_vector(data_w_g/32-1 downto 0);
    s0_axis_tuser, s1_axis_tuser, s2_axis_tuser : in  std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    s0_axis_tlast, s1_axis_tlast, s2_axis_tlast : in  std_logic;
    s0_axis_tvalid, s1_axis_tvalid, s2_axis_tvalid : in  std_logic;
    s0_axis_tready, s1_axis_tready, s2_axis_tready : out std_logic := '0';
    s0_sent, s1_sent, s2_sent : out std_logic := '0';
    m_axis_rq_tdata  : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    m_axis_rq_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    m_axis_rq_tuser  : out std_logic_vector(rq_user_w(data_w_g)-1 downto 0) := (others => '0');
    m_axis_rq_tlast  : out std_logic := '0';
    m_axis_rq_tvalid : out std_logic := '0';
    m_axis_rq_tready : in  std_logic
  );
end entity rq_mux_tb;

architecture wrap of rq_mux_tb is
  signal tready, sent : std_logic_vector(2 downto 0);
  signal req_tdata : std_logic_vector(data_w_g-1 downto 0);
  signal req_tkeep : std_logic_vector(data_w_g/32-1 downto 0);
  signal req_side  : std_logic_vector(REQ_SIDE_W_c-1 downto 0);
  signal req_tlast, req_tvalid, req_tready : std_logic;
begin
  i_mux : entity work.mprace_dma_req_mux
    generic map (data_w_g => data_w_g, ports_g => 3, bulk_g => bulk_g, pack_g => pack_g)
    port map (
      clk => clk, rst => rst,
      s_tdata  => s2_axis_tdata & s1_axis_tdata & s0_axis_tdata,
      s_tkeep  => s2_axis_tkeep & s1_axis_tkeep & s0_axis_tkeep,
      s_side  => s2_axis_tuser & s1_axis_tuser & s0_axis_tuser,
      s_tlast  => s2_axis_tlast & s1_axis_tlast & s0_axis_tlast,
      s_tvalid => s2_axis_tvalid & s1_axis_tvalid & s0_axis_tvalid,
      s_tready => tready, s_sent => sent,
      m_tdata => req_tdata, m_tkeep => req_tkeep, m_side => req_side, m_tlast => req_tlast,
      m_tvalid => req_tvalid, m_tready => req_tready);

  i_rq : entity work.mprace_pcie_us_rq
    generic map (data_w_g => data_w_g)
    port map (
      clk => clk, rst => rst,
      s_tdata => req_tdata, s_tkeep => req_tkeep, s_side => req_side, s_tlast => req_tlast,
      s_tvalid => req_tvalid, s_tready => req_tready,
      m_axis_rq_tdata => m_axis_rq_tdata, m_axis_rq_tkeep => m_axis_rq_tkeep,
      m_axis_rq_tuser => m_axis_rq_tuser, m_axis_rq_tlast => m_axis_rq_tlast,
      m_axis_rq_tvalid => m_axis_rq_tvalid, m_axis_rq_tready => m_axis_rq_tready);
  s0_axis_tready <= tready(0);
  s1_axis_tready <= tready(1);
  s2_axis_tready <= tready(2);
  s0_sent <= sent(0);
  s1_sent <= sent(1);
  s2_sent <= sent(2);
end architecture wrap;
