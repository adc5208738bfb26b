-- SPDX-License-Identifier: GPL-2.0
-- mprace_board_ptile_gen4x16: the 512-bit engine attached to Intel's P-tile Avalon-ST hard IP
-- for PCI Express (Stratix 10 DX, Agilex 7 F-/I-series with a P-tile) configured as
-- hdl/README.md "Attaching to an Intel board" says (x16 at Gen4 or Gen3, 512-bit Avalon-ST,
-- coreclkout_hip at clk_mhz_g). Instantiate it in the board's top level and connect the user
-- streams; the hard IP is a black box here (the IP variant you generate in Platform Designer:
-- rename the component to its name, keep the port names).
-- NOT YET TESTED ON HARDWARE: it passes GHDL's synthesis (tests/hdl/synth) with the one black
-- box; its port list follows Intel's P-tile Avalon-ST user guide and cocotbext-pcie's model of
-- the IP and has not been checked against a generated IP.
library ieee;
use ieee.std_logic_1164.all;

entity mprace_board_ptile_gen4x16 is
  generic (
    clk_mhz_g : positive := 250           -- coreclkout_hip as set in the IP
  );
  port (
    -- PCIe edge connector: two 100 MHz reference clocks (the P-tile takes both), PERST#
    -- (active low), 16 lanes
    pcie_refclk0  : in  std_logic;
    pcie_refclk1  : in  std_logic;
    pcie_perst_n  : in  std_logic;
    pcie_tx_p     : out std_logic_vector(15 downto 0);
    pcie_tx_n     : out std_logic_vector(15 downto 0);
    pcie_rx_p     : in  std_logic_vector(15 downto 0);
    pcie_rx_n     : in  std_logic_vector(15 downto 0);
    -- device configuration done, active low (from the Reset Release IP of the board's top)
    ninit_done    : in  std_logic;
    -- the user logic's clock domain: the IP's coreclkout_hip and reset (active high here)
    user_clk      : out std_logic;
    user_reset    : out std_logic;
    user_lnk_up   : out std_logic;
    -- user C2H stream (card to host) and H2C stream (host to card), as mprace_dma_top's
    s_axis_c2h_tdata  : in  std_logic_vector(511 downto 0);
    s_axis_c2h_tkeep  : in  std_logic_vector(63 downto 0);
    s_axis_c2h_tlast  : in  std_logic;
    s_axis_c2h_tvalid : in  std_logic;
    s_axis_c2h_tready : out std_logic;
    m_axis_h2c_tdata  : out std_logic_vector(511 downto 0);
    m_axis_h2c_tkeep  : out std_logic_vector(63 downto 0);
    m_axis_h2c_tlast  : out std_logic;
    m_axis_h2c_tvalid : out std_logic;
    m_axis_h2c_tready : in  std_logic
  );
end entity mprace_board_ptile_gen4x16;

architecture rtl of mprace_board_ptile_gen4x16 is

  -- the generated hard IP, port 0 (the user guide's port names; the ports the engine does not
  -- use, among them the transmit credit limits, the completion timeout interface, status and
  -- power management, keep the IP's defaults)
  component pcie_ptile_avst_0 is
    port (
      refclk0, refclk1, pin_perst_n, ninit_done : in std_logic;
      coreclkout_hip : out std_logic;
      p0_reset_status_n, p0_link_up_o : out std_logic;
      rx_p_in0, rx_p_in1, rx_p_in2, rx_p_in3, rx_p_in4, rx_p_in5, rx_p_in6, rx_p_in7,
      rx_p_in8, rx_p_in9, rx_p_in10, rx_p_in11, rx_p_in12, rx_p_in13, rx_p_in14, rx_p_in15,
      rx_n_in0, rx_n_in1, rx_n_in2, rx_n_in3, rx_n_in4, rx_n_in5, rx_n_in6, rx_n_in7,
      rx_n_in8, rx_n_in9, rx_n_in10, rx_n_in11, rx_n_in12, rx_n_in13, rx_n_in14, rx_n_in15
        : in std_logic;
      tx_p_out0, tx_p_out1, tx_p_out2, tx_p_out3, tx_p_out4, tx_p_out5, tx_p_out6, tx_p_out7,
      tx_p_out8, tx_p_out9, tx_p_out10, tx_p_out11, tx_p_out12, tx_p_out13, tx_p_out14,
      tx_p_out15, tx_n_out0, tx_n_out1, tx_n_out2, tx_n_out3, tx_n_out4, tx_n_out5, tx_n_out6,
      tx_n_out7, tx_n_out8, tx_n_out9, tx_n_out10, tx_n_out11, tx_n_out12, tx_n_out13,
      tx_n_out14, tx_n_out15 : out std_logic;
      p0_rx_st_data_o      : out std_logic_vector(511 downto 0);
      p0_rx_st_empty_o     : out std_logic_vector(5 downto 0);
      p0_rx_st_hdr_o       : out std_logic_vector(255 downto 0);
      p0_rx_st_tlp_prfx_o  : out std_logic_vector(63 downto 0);
      p0_rx_st_bar_range_o : out std_logic_vector(5 downto 0);
      p0_rx_st_tlp_abort_o : out std_logic_vector(1 downto 0);
      p0_rx_st_sop_o, p0_rx_st_eop_o, p0_rx_st_valid_o : out std_logic_vector(1 downto 0);
      p0_rx_st_ready_i     : in  std_logic;
      p0_tx_st_data_i      : in  std_logic_vector(511 downto 0);
      p0_tx_st_hdr_i       : in  std_logic_vector(255 downto 0);
      p0_tx_st_tlp_prfx_i  : in  std_logic_vector(63 downto 0);
      p0_tx_st_sop_i, p0_tx_st_eop_i, p0_tx_st_valid_i, p0_tx_st_err_i
        : in  std_logic_vector(1 downto 0);
      p0_tx_st_ready_o     : out std_logic;
      p0_tx_cdts_limit_o         : out std_logic_vector(15 downto 0);
      p0_tx_cdts_limit_tdm_idx_o : out std_logic_vector(2 downto 0);
      p0_app_int_i         : in  std_logic_vector(7 downto 0);
      p0_tl_cfg_func_o     : out std_logic_vector(2 downto 0);
      p0_tl_cfg_add_o      : out std_logic_vector(4 downto 0);
      p0_tl_cfg_ctl_o      : out std_logic_vector(15 downto 0)
    );
  end component;

  signal clk, rst, rst_n : std_logic;
  signal rx_data, tx_data : std_logic_vector(511 downto 0);
  signal rx_hdr, tx_hdr : std_logic_vector(255 downto 0);
  signal rx_prfx, tx_prfx : std_logic_vector(63 downto 0);
  signal rx_empty, rx_bar : std_logic_vector(5 downto 0);
  signal rx_abort, rx_sop, rx_eop, rx_valid : std_logic_vector(1 downto 0);
  signal tx_sop, tx_eop, tx_valid, tx_err : std_logic_vector(1 downto 0);
  signal rx_ready, tx_ready : std_logic;
  signal tx_cdts_limit : std_logic_vector(15 downto 0);
  signal tx_cdts_tdm_idx : std_logic_vector(2 downto 0);
  signal cfg_func : std_logic_vector(2 downto 0);
  signal cfg_add : std_logic_vector(4 downto 0);
  signal cfg_ctl : std_logic_vector(15 downto 0);
  signal app_int : std_logic_vector(7 downto 0);

begin

  user_clk   <= clk;
  rst        <= not rst_n;                  -- the IP's reset status is active low
  user_reset <= rst;

  u_pcie : pcie_ptile_avst_0
    port map (
      refclk0 => pcie_refclk0, refclk1 => pcie_refclk1, pin_perst_n => pcie_perst_n,
      ninit_done => ninit_done, coreclkout_hip => clk,
      p0_reset_status_n => rst_n, p0_link_up_o => user_lnk_up,
      rx_p_in0 => pcie_rx_p(0), rx_p_in1 => pcie_rx_p(1), rx_p_in2 => pcie_rx_p(2),
      rx_p_in3 => pcie_rx_p(3), rx_p_in4 => pcie_rx_p(4), rx_p_in5 => pcie_rx_p(5),
      rx_p_in6 => pcie_rx_p(6), rx_p_in7 => pcie_rx_p(7), rx_p_in8 => pcie_rx_p(8),
      rx_p_in9 => pcie_rx_p(9), rx_p_in10 => pcie_rx_p(10), rx_p_in11 => pcie_rx_p(11),
      rx_p_in12 => pcie_rx_p(12), rx_p_in13 => pcie_rx_p(13), rx_p_in14 => pcie_rx_p(14),
      rx_p_in15 => pcie_rx_p(15),
      rx_n_in0 => pcie_rx_n(0), rx_n_in1 => pcie_rx_n(1), rx_n_in2 => pcie_rx_n(2),
      rx_n_in3 => pcie_rx_n(3), rx_n_in4 => pcie_rx_n(4), rx_n_in5 => pcie_rx_n(5),
      rx_n_in6 => pcie_rx_n(6), rx_n_in7 => pcie_rx_n(7), rx_n_in8 => pcie_rx_n(8),
      rx_n_in9 => pcie_rx_n(9), rx_n_in10 => pcie_rx_n(10), rx_n_in11 => pcie_rx_n(11),
      rx_n_in12 => pcie_rx_n(12), rx_n_in13 => pcie_rx_n(13), rx_n_in14 => pcie_rx_n(14),
      rx_n_in15 => pcie_rx_n(15),
      tx_p_out0 => pcie_tx_p(0), tx_p_out1 => pcie_tx_p(1), tx_p_out2 => pcie_tx_p(2),
      tx_p_out3 => pcie_tx_p(3), tx_p_out4 => pcie_tx_p(4), tx_p_out5 => pcie_tx_p(5),
      tx_p_out6 => pcie_tx_p(6), tx_p_out7 => pcie_tx_p(7), tx_p_out8 => pcie_tx_p(8),
      tx_p_out9 => pcie_tx_p(9), tx_p_out10 => pcie_tx_p(10), tx_p_out11 => pcie_tx_p(11),
      tx_p_out12 => pcie_tx_p(12), tx_p_out13 => pcie_tx_p(13), tx_p_out14 => pcie_tx_p(14),
      tx_p_out15 => pcie_tx_p(15),
      tx_n_out0 => pcie_tx_n(0), tx_n_out1 => pcie_tx_n(1), tx_n_out2 => pcie_tx_n(2),
      tx_n_out3 => pcie_tx_n(3), tx_n_out4 => pcie_tx_n(4), tx_n_out5 => pcie_tx_n(5),
      tx_n_out6 => pcie_tx_n(6), tx_n_out7 => pcie_tx_n(7), tx_n_out8 => pcie_tx_n(8),
      tx_n_out9 => pcie_tx_n(9), tx_n_out10 => pcie_tx_n(10), tx_n_out11 => pcie_tx_n(11),
      tx_n_out12 => pcie_tx_n(12), tx_n_out13 => pcie_tx_n(13), tx_n_out14 => pcie_tx_n(14),
      tx_n_out15 => pcie_tx_n(15),
      p0_rx_st_data_o => rx_data, p0_rx_st_empty_o => rx_empty, p0_rx_st_hdr_o => rx_hdr,
      p0_rx_st_tlp_prfx_o => rx_prfx, p0_rx_st_bar_range_o => rx_bar,
      p0_rx_st_tlp_abort_o => rx_abort, p0_rx_st_sop_o => rx_sop, p0_rx_st_eop_o => rx_eop,
      p0_rx_st_valid_o => rx_valid, p0_rx_st_ready_i => rx_ready,
      p0_tx_st_data_i => tx_data, p0_tx_st_hdr_i => tx_hdr, p0_tx_st_tlp_prfx_i => tx_prfx,
      p0_tx_st_sop_i => tx_sop, p0_tx_st_eop_i => tx_eop, p0_tx_st_valid_i => tx_valid,
      p0_tx_st_err_i => tx_err, p0_tx_st_ready_o => tx_ready, p0_app_int_i => app_int,
      p0_tx_cdts_limit_o => tx_cdts_limit, p0_tx_cdts_limit_tdm_idx_o => tx_cdts_tdm_idx,
      p0_tl_cfg_func_o => cfg_func, p0_tl_cfg_add_o => cfg_add, p0_tl_cfg_ctl_o => cfg_ctl
    );

  u_engine : entity work.mprace_dma_top_ptile
    generic map (data_w_g => 512, clk_mhz_g => clk_mhz_g)
    port map (
      user_clk => clk, user_reset => rst,
      rx_st_data => rx_data, rx_st_empty => rx_empty, rx_st_hdr => rx_hdr,
      rx_st_tlp_prfx => rx_prfx, rx_st_bar_range => rx_bar, rx_st_tlp_abort => rx_abort,
      rx_st_sop => rx_sop, rx_st_eop => rx_eop, rx_st_valid => rx_valid,
      rx_st_ready => rx_ready,
      tx_st_data => tx_data, tx_st_hdr => tx_hdr, tx_st_tlp_prfx => tx_prfx,
      tx_st_sop => tx_sop, tx_st_eop => tx_eop, tx_st_valid => tx_valid, tx_st_err => tx_err,
      tx_st_ready => tx_ready, app_int => app_int,
      tx_cdts_limit => tx_cdts_limit, tx_cdts_limit_tdm_idx => tx_cdts_tdm_idx,
      tl_cfg_func => cfg_func, tl_cfg_add => cfg_add, tl_cfg_ctl => cfg_ctl,
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready
    );

end architecture rtl;
