-- SPDX-License-Identifier: GPL-2.0
-- mprace_board_s10_htile_gen3x8: the engine attached to Intel's Stratix 10 H-tile (or L-tile)
-- Avalon-ST hard IP for PCI Express configured as hdl/README.md "Attaching to an Intel board"
-- says (Gen3 x8, 256-bit Avalon-ST at 250 MHz). Instantiate it in the board's top level and
-- connect the user streams; the hard IP is a black box here (the IP variant you generate in
-- Platform Designer: rename the component to its name, keep the port names).
-- NOT YET TESTED ON HARDWARE: it passes GHDL's synthesis (tests/hdl/synth) with the one black
-- box; its port list follows Intel's L-/H-tile Avalon-ST user guide and cocotbext-pcie's model
-- of the IP and has not been checked against a generated IP.
library ieee;
use ieee.std_logic_1164.all;

entity mprace_board_s10_htile_gen3x8 is
  generic (
    l_tile_g : boolean := false           -- an L-tile device (its configuration output layout)
  );
  port (
    -- PCIe edge connector: 100 MHz reference clock, PERST# (active low), 8 lanes
    pcie_refclk   : in  std_logic;
    pcie_perst_n  : in  std_logic;
    pcie_tx       : out std_logic_vector(7 downto 0);
    pcie_rx       : in  std_logic_vector(7 downto 0);
    -- device configuration done, active low (from the Reset Release IP of the board's top)
    ninit_done    : in  std_logic;
    -- the user logic's clock domain: the IP's coreclkout_hip (250 MHz) and reset
    user_clk      : out std_logic;
    user_reset    : out std_logic;
    user_lnk_up   : out std_logic;
    -- user C2H stream (card to host) and H2C stream (host to card), as mprace_dma_top's
    s_axis_c2h_tdata  : in  std_logic_vector(255 downto 0);
    s_axis_c2h_tkeep  : in  std_logic_vector(31 downto 0);
    s_axis_c2h_tlast  : in  std_logic;
    s_axis_c2h_tvalid : in  std_logic;
    s_axis_c2h_tready : out std_logic;
    m_axis_h2c_tdata  : out std_logic_vector(255 downto 0);
    m_axis_h2c_tkeep  : out std_logic_vector(31 downto 0);
    m_axis_h2c_tlast  : out std_logic;
    m_axis_h2c_tvalid : out std_logic;
    m_axis_h2c_tready : in  std_logic
  );
end entity mprace_board_s10_htile_gen3x8;

architecture rtl of mprace_board_s10_htile_gen3x8 is

  -- the generated hard IP (the user guide's port names; the ports the engine does not use,
  -- among them the transmit credits, status and power management, keep the IP's defaults)
  component pcie_s10_hip_avst_0 is
    port (
      refclk, pin_perst, npor, pld_core_ready, ninit_done : in std_logic;
      coreclkout_hip, reset_status, serdes_pll_locked, pld_clk_inuse, link_up : out std_logic;
      rx_in0, rx_in1, rx_in2, rx_in3, rx_in4, rx_in5, rx_in6, rx_in7 : in std_logic;
      tx_out0, tx_out1, tx_out2, tx_out3, tx_out4, tx_out5, tx_out6, tx_out7 : out std_logic;
      rx_st_data      : out std_logic_vector(255 downto 0);
      rx_st_empty     : out std_logic_vector(2 downto 0);
      rx_st_bar_range : out std_logic_vector(2 downto 0);
      rx_st_sop, rx_st_eop, rx_st_valid : out std_logic;
      rx_st_ready     : in  std_logic;
      tx_st_data      : in  std_logic_vector(255 downto 0);
      tx_st_sop, tx_st_eop, tx_st_valid, tx_st_err : in std_logic;
      tx_st_ready     : out std_logic;
      app_msi_req     : in  std_logic;
      app_msi_ack     : out std_logic;
      app_msi_num     : in  std_logic_vector(4 downto 0);
      app_msi_tc      : in  std_logic_vector(2 downto 0);
      app_msi_func_num : in std_logic_vector(1 downto 0);
      app_int_sts     : in  std_logic_vector(3 downto 0);
      tl_cfg_func     : out std_logic_vector(1 downto 0);
      tl_cfg_add      : out std_logic_vector(4 downto 0);
      tl_cfg_ctl      : out std_logic_vector(31 downto 0)
    );
  end component;

  signal clk, rst, pll_locked : std_logic;
  signal rx_data, tx_data : std_logic_vector(255 downto 0);
  signal rx_empty, rx_bar : std_logic_vector(2 downto 0);
  signal rx_sop, rx_eop, rx_valid, rx_ready : std_logic_vector(0 downto 0);
  signal tx_sop, tx_eop, tx_valid, tx_err : std_logic_vector(0 downto 0);
  signal tx_ready, msi_req, msi_ack : std_logic;
  signal msi_num : std_logic_vector(4 downto 0);
  signal msi_tc : std_logic_vector(2 downto 0);
  signal msi_fn, cfg_func : std_logic_vector(1 downto 0);
  signal int_sts : std_logic_vector(3 downto 0);
  signal cfg_add : std_logic_vector(4 downto 0);
  signal cfg_ctl : std_logic_vector(31 downto 0);

begin

  user_clk   <= clk;
  user_reset <= rst;

  u_pcie : pcie_s10_hip_avst_0
    port map (
      refclk => pcie_refclk, pin_perst => pcie_perst_n, npor => pcie_perst_n,
      pld_core_ready => pll_locked,          -- the user guide's choice: the fabric is ready
      ninit_done => ninit_done,               -- once the transceiver PLL has locked
      coreclkout_hip => clk, reset_status => rst, serdes_pll_locked => pll_locked,
      pld_clk_inuse => open, link_up => user_lnk_up,
      rx_in0 => pcie_rx(0), rx_in1 => pcie_rx(1), rx_in2 => pcie_rx(2), rx_in3 => pcie_rx(3),
      rx_in4 => pcie_rx(4), rx_in5 => pcie_rx(5), rx_in6 => pcie_rx(6), rx_in7 => pcie_rx(7),
      tx_out0 => pcie_tx(0), tx_out1 => pcie_tx(1), tx_out2 => pcie_tx(2), tx_out3 => pcie_tx(3),
      tx_out4 => pcie_tx(4), tx_out5 => pcie_tx(5), tx_out6 => pcie_tx(6), tx_out7 => pcie_tx(7),
      rx_st_data => rx_data, rx_st_empty => rx_empty, rx_st_bar_range => rx_bar,
      rx_st_sop => rx_sop(0), rx_st_eop => rx_eop(0), rx_st_valid => rx_valid(0),
      rx_st_ready => rx_ready(0),
      tx_st_data => tx_data, tx_st_sop => tx_sop(0), tx_st_eop => tx_eop(0),
      tx_st_valid => tx_valid(0), tx_st_err => tx_err(0), tx_st_ready => tx_ready,
      app_msi_req => msi_req, app_msi_ack => msi_ack, app_msi_num => msi_num,
      app_msi_tc => msi_tc, app_msi_func_num => msi_fn, app_int_sts => int_sts,
      tl_cfg_func => cfg_func, tl_cfg_add => cfg_add, tl_cfg_ctl => cfg_ctl
    );

  u_engine : entity work.mprace_dma_top_htile
    generic map (data_w_g => 256, l_tile_g => l_tile_g, clk_mhz_g => 250)
    port map (
      user_clk => clk, user_reset => rst,
      rx_st_data => rx_data, rx_st_empty => rx_empty, rx_st_bar_range => rx_bar,
      rx_st_sop => rx_sop, rx_st_eop => rx_eop, rx_st_valid => rx_valid,
      rx_st_ready => rx_ready(0),
      tx_st_data => tx_data, tx_st_sop => tx_sop, tx_st_eop => tx_eop, tx_st_valid => tx_valid,
      tx_st_err => tx_err, tx_st_ready => tx_ready,
      app_msi_req => msi_req, app_msi_ack => msi_ack, app_msi_num => msi_num,
      app_msi_tc => msi_tc, app_msi_func_num => msi_fn, app_int_sts => int_sts,
      tl_cfg_func => cfg_func, tl_cfg_add => cfg_add, tl_cfg_ctl => cfg_ctl,
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready
    );

end architecture rtl;
