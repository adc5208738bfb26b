-- SPDX-License-Identifier: GPL-2.0
-- mprace_board_us_gen3x8: the engine attached to the UltraScale PCIe block (PG156,
-- pcie3_ultrascale) configured as hdl/README.md "Attaching to a board" says (Gen3 x8, 256-bit
-- AXI4-Stream at 250 MHz). Instantiate it in the board's top level and connect the user
-- streams; the PCIe block and the reference-clock buffer are black boxes here (the block is the
-- IP you generate: rename the component to your IP instance's name, keep the port names).
-- NOT YET TESTED ON HARDWARE: it passes GHDL's synthesis (tests/hdl/synth) with the two black
-- boxes; their port lists follow PG156 and have not been checked against a generated IP.
library ieee;
use ieee.std_logic_1164.all;

entity mprace_board_us_gen3x8 is
  port (
    -- PCIe edge connector: 100 MHz reference clock, PERST# (active low), 8 lanes
    pcie_refclk_p : in  std_logic;
    pcie_refclk_n : in  std_logic;
    pcie_perst_n  : in  std_logic;
    pci_exp_txp   : out std_logic_vector(7 downto 0);
    pci_exp_txn   : out std_logic_vector(7 downto 0);
    pci_exp_rxp   : in  std_logic_vector(7 downto 0);
    pci_exp_rxn   : in  std_logic_vector(7 downto 0);
    -- the user logic's clock domain: the block's user clock (250 MHz) and reset
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
end entity mprace_board_us_gen3x8;

architecture rtl of mprace_board_us_gen3x8 is

  -- UNISIM's reference-clock input buffer of the GTH transceivers
  component IBUFDS_GTE3 is
    port (I : in std_logic; IB : in std_logic; CEB : in std_logic; O : out std_logic;
          ODIV2 : out std_logic);
  end component;

  -- the generated PCIe block (PG156 port names; the ports the engine does not use are left
  -- to the IP's defaults)
  component pcie3_ultrascale_0 is
    port (
      pci_exp_txp, pci_exp_txn : out std_logic_vector(7 downto 0);
      pci_exp_rxp, pci_exp_rxn : in  std_logic_vector(7 downto 0);
      sys_clk, sys_clk_gt, sys_reset : in std_logic;
      user_clk, user_reset, user_lnk_up : out std_logic;
      s_axis_rq_tdata  : in  std_logic_vector(255 downto 0);
      s_axis_rq_tkeep  : in  std_logic_vector(7 downto 0);
      s_axis_rq_tuser  : in  std_logic_vector(59 downto 0);
      s_axis_rq_tlast, s_axis_rq_tvalid : in std_logic;
      s_axis_rq_tready : out std_logic_vector(3 downto 0);
      m_axis_rc_tdata  : out std_logic_vector(255 downto 0);
      m_axis_rc_tkeep  : out std_logic_vector(7 downto 0);
      m_axis_rc_tuser  : out std_logic_vector(74 downto 0);
      m_axis_rc_tlast, m_axis_rc_tvalid : out std_logic;
      m_axis_rc_tready : in  std_logic;
      m_axis_cq_tdata  : out std_logic_vector(255 downto 0);
      m_axis_cq_tkeep  : out std_logic_vector(7 downto 0);
      m_axis_cq_tuser  : out std_logic_vector(84 downto 0);
      m_axis_cq_tlast, m_axis_cq_tvalid : out std_logic;
      m_axis_cq_tready : in  std_logic;
      pcie_cq_np_req   : in  std_logic;
      s_axis_cc_tdata  : in  std_logic_vector(255 downto 0);
      s_axis_cc_tkeep  : in  std_logic_vector(7 downto 0);
      s_axis_cc_tuser  : in  std_logic_vector(32 downto 0);
      s_axis_cc_tlast, s_axis_cc_tvalid : in std_logic;
      s_axis_cc_tready : out std_logic_vector(3 downto 0);
      cfg_max_payload, cfg_max_read_req : out std_logic_vector(2 downto 0);
      cfg_rcb_status   : out std_logic_vector(3 downto 0);
      cfg_interrupt_int, cfg_interrupt_pending : in std_logic_vector(3 downto 0);
      cfg_interrupt_sent : out std_logic;
      cfg_interrupt_msi_enable : out std_logic_vector(3 downto 0);
      cfg_interrupt_msi_mmenable : out std_logic_vector(11 downto 0);
      cfg_interrupt_msi_mask_update : out std_logic;
      cfg_interrupt_msi_data : out std_logic_vector(31 downto 0);
      cfg_interrupt_msi_select : in std_logic_vector(3 downto 0);
      cfg_interrupt_msi_int : in std_logic_vector(31 downto 0);
      cfg_interrupt_msi_pending_status : in std_logic_vector(31 downto 0);
      cfg_interrupt_msi_pending_status_data_enable : in std_logic;
      cfg_interrupt_msi_pending_status_function_num : in std_logic_vector(3 downto 0);
      cfg_interrupt_msi_sent, cfg_interrupt_msi_fail : out std_logic;
      cfg_interrupt_msi_attr : in std_logic_vector(2 downto 0);
      cfg_interrupt_msi_tph_present : in std_logic;
      cfg_interrupt_msi_tph_type : in std_logic_vector(1 downto 0);
      cfg_interrupt_msi_tph_st_tag : in std_logic_vector(8 downto 0);
      cfg_interrupt_msi_function_number : in std_logic_vector(3 downto 0)
    );
  end component;

  signal sys_clk, sys_clk_gt, clk, rst : std_logic;
  signal rq_tdata, rc_tdata, cq_tdata, cc_tdata : std_logic_vector(255 downto 0);
  signal rq_tkeep, rc_tkeep, cq_tkeep, cc_tkeep : std_logic_vector(7 downto 0);
  signal rq_tuser : std_logic_vector(59 downto 0);
  signal rc_tuser : std_logic_vector(74 downto 0);
  signal cq_tuser : std_logic_vector(84 downto 0);
  signal cc_tuser : std_logic_vector(32 downto 0);
  signal rq_tlast, rq_tvalid, rc_tlast, rc_tvalid, rc_tready : std_logic;
  signal cq_tlast, cq_tvalid, cq_tready, cc_tlast, cc_tvalid, cq_np_req : std_logic;
  signal rq_tready4, cc_tready4 : std_logic_vector(3 downto 0);
  signal max_payload, max_read_req : std_logic_vector(2 downto 0);
  signal rcb_status, int_int, int_pending, msi_enable, msi_select : std_logic_vector(3 downto 0);
  signal int_sent, msi_mask_update, msi_sent, msi_fail, msi_pstat_de, msi_tph_present : std_logic;
  signal msi_mmenable : std_logic_vector(11 downto 0);
  signal msi_data, msi_int, msi_pstat : std_logic_vector(31 downto 0);
  signal msi_pstat_fn, msi_fn : std_logic_vector(3 downto 0);
  signal msi_attr : std_logic_vector(2 downto 0);
  signal msi_tph_type : std_logic_vector(1 downto 0);
  signal msi_tph_st_tag : std_logic_vector(8 downto 0);

begin

  user_clk   <= clk;
  user_reset <= rst;

  -- the GT reference clock and, divided by 2, the block's sys_clk
  u_refclk : IBUFDS_GTE3
    port map (I => pcie_refclk_p, IB => pcie_refclk_n, CEB => '0', O => sys_clk_gt,
              ODIV2 => sys_clk);

  u_pcie : pcie3_ultrascale_0
    port map (
      pci_exp_txp => pci_exp_txp, pci_exp_txn => pci_exp_txn,
      pci_exp_rxp => pci_exp_rxp, pci_exp_rxn => pci_exp_rxn,
      sys_clk => sys_clk, sys_clk_gt => sys_clk_gt, sys_reset => pcie_perst_n,
      user_clk => clk, user_reset => rst, user_lnk_up => user_lnk_up,
      s_axis_rq_tdata => rq_tdata, s_axis_rq_tkeep => rq_tkeep, s_axis_rq_tuser => rq_tuser,
      s_axis_rq_tlast => rq_tlast, s_axis_rq_tvalid => rq_tvalid, s_axis_rq_tready => rq_tready4,
      m_axis_rc_tdata => rc_tdata, m_axis_rc_tkeep => rc_tkeep, m_axis_rc_tuser => rc_tuser,
      m_axis_rc_tlast => rc_tlast, m_axis_rc_tvalid => rc_tvalid, m_axis_rc_tready => rc_tready,
      m_axis_cq_tdata => cq_tdata, m_axis_cq_tkeep => cq_tkeep, m_axis_cq_tuser => cq_tuser,
      m_axis_cq_tlast => cq_tlast, m_axis_cq_tvalid => cq_tvalid, m_axis_cq_tready => cq_tready,
      pcie_cq_np_req => cq_np_req,
      s_axis_cc_tdata => cc_tdata, s_axis_cc_tkeep => cc_tkeep, s_axis_cc_tuser => cc_tuser,
      s_axis_cc_tlast => cc_tlast, s_axis_cc_tvalid => cc_tvalid, s_axis_cc_tready => cc_tready4,
      cfg_max_payload => max_payload, cfg_max_read_req => max_read_req,
      cfg_rcb_status => rcb_status,
      cfg_interrupt_int => int_int, cfg_interrupt_pending => int_pending,
      cfg_interrupt_sent => int_sent,
      cfg_interrupt_msi_enable => msi_enable, cfg_interrupt_msi_mmenable => msi_mmenable,
      cfg_interrupt_msi_mask_update => msi_mask_update, cfg_interrupt_msi_data => msi_data,
      cfg_interrupt_msi_select => msi_select, cfg_interrupt_msi_int => msi_int,
      cfg_interrupt_msi_pending_status => msi_pstat,
      cfg_interrupt_msi_pending_status_data_enable => msi_pstat_de,
      cfg_interrupt_msi_pending_status_function_num => msi_pstat_fn,
      cfg_interrupt_msi_sent => msi_sent, cfg_interrupt_msi_fail => msi_fail,
      cfg_interrupt_msi_attr => msi_attr, cfg_interrupt_msi_tph_present => msi_tph_present,
      cfg_interrupt_msi_tph_type => msi_tph_type, cfg_interrupt_msi_tph_st_tag => msi_tph_st_tag,
      cfg_interrupt_msi_function_number => msi_fn
    );

  u_engine : entity work.mprace_dma_top
    generic map (clk_mhz_g => 250)
    port map (
      user_clk => clk, user_reset => rst,
      s_axis_cq_tdata => cq_tdata, s_axis_cq_tkeep => cq_tkeep, s_axis_cq_tuser => cq_tuser,
      s_axis_cq_tlast => cq_tlast, s_axis_cq_tvalid => cq_tvalid, s_axis_cq_tready => cq_tready,
      pcie_cq_np_req => cq_np_req,
      m_axis_cc_tdata => cc_tdata, m_axis_cc_tkeep => cc_tkeep, m_axis_cc_tuser => cc_tuser,
      m_axis_cc_tlast => cc_tlast, m_axis_cc_tvalid => cc_tvalid,
      m_axis_cc_tready => cc_tready4(0),   -- the block drives all four bits alike
      m_axis_rq_tdata => rq_tdata, m_axis_rq_tkeep => rq_tkeep, m_axis_rq_tuser => rq_tuser,
      m_axis_rq_tlast => rq_tlast, m_axis_rq_tvalid => rq_tvalid,
      m_axis_rq_tready => rq_tready4(0),
      s_axis_rc_tdata => rc_tdata, s_axis_rc_tkeep => rc_tkeep, s_axis_rc_tuser => rc_tuser,
      s_axis_rc_tlast => rc_tlast, s_axis_rc_tvalid => rc_tvalid, s_axis_rc_tready => rc_tready,
      cfg_max_payload => max_payload, cfg_max_read_req => max_read_req,
      cfg_rcb_status => rcb_status,
      cfg_interrupt_int => int_int, cfg_interrupt_pending => int_pending,
      cfg_interrupt_sent => int_sent,
      cfg_interrupt_msi_enable => msi_enable, cfg_interrupt_msi_mmenable => msi_mmenable,
      cfg_interrupt_msi_mask_update => msi_mask_update, cfg_interrupt_msi_data => msi_data,
      cfg_interrupt_msi_select => msi_select, cfg_interrupt_msi_int => msi_int,
      cfg_interrupt_msi_pending_status => msi_pstat,
      cfg_interrupt_msi_pending_status_data_enable => msi_pstat_de,
      cfg_interrupt_msi_pending_status_function_num => msi_pstat_fn,
      cfg_interrupt_msi_sent => msi_sent, cfg_interrupt_msi_fail => msi_fail,
      cfg_interrupt_msi_attr => msi_attr, cfg_interrupt_msi_tph_present => msi_tph_present,
      cfg_interrupt_msi_tph_type => msi_tph_type, cfg_interrupt_msi_tph_st_tag => msi_tph_st_tag,
      cfg_interrupt_msi_function_number => msi_fn,
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready
    );

end architecture rtl;
