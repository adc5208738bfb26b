-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_top_ptile: the MPRACE scatter-gather DMA engine (mprace_dma_core) attached to the
-- Avalon-ST interfaces of Intel's P-tile hard IP (Stratix 10 DX, Agilex): data_w_g = 256
-- (Gen3 x8/x16, Gen4 x8) or 512 (Gen3/Gen4 x16), at 250 MHz.
--   BAR0 registers : memory requests on rx_st_* (mprace_pcie_avst_rx), their completions on tx_st_*
--   bus mastering  : requests on tx_st_* (mprace_pcie_avst_tx), completions on rx_st_*
--   interrupts     : MSI as memory writes on tx_st_* to the address and data the host set, one
--                    vector per source with 4 or more granted (as on the Xilinx top); INTA on
--                    app_int(0) while MSI is off
--   configuration  : tl_cfg_* (the IP's configuration output, one register per clock): bus and
--                    device number (the requester ID the IP does not fill in), MPS, MRRS, RCB,
--                    the MSI capability
--   user data      : s_axis_c2h_* in, m_axis_h2c_* out, as on mprace_dma_top
-- The engine and everything it shares with the H-tile/L-tile top is mprace_dma_avst; this top
-- decodes the P-tile's configuration output; the engine honours the transmit credit limits
-- (tx_cdts_limit). Not handled yet: the IP's completion timeout interface, TLPs starting in
-- the second transmit segment.
-- Spec: docs/dma-engine.md; hdl/README.md "The Intel tops".
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_top_ptile is
  generic (
    data_w_g        : positive := 256;    -- datapath and interface width: 256 or 512
    clk_mhz_g       : positive := 250;    -- user_clk frequency (CLOCK_MHZ, TIMEOUT_US)
    c2h_ring_log2_g : positive := 12;
    h2c_ring_log2_g : positive := 13;     -- 32 KiB of reads in flight (hdl/README)
    cpl_hdr_g       : positive := 512;    -- completion headers the engine lets the IP buffer
    cpl_data_g      : positive := 2816    -- data credits of 16 bytes (the IP: 1,444 x 32 B)
  );
  port (
    user_clk   : in  std_logic;           -- the IP's coreclkout_hip
    user_reset : in  std_logic;           -- the IP's reset_status
    -- receive
    rx_st_data      : in  std_logic_vector(data_w_g-1 downto 0);
    rx_st_empty     : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_hdr       : in  std_logic_vector(data_w_g/2-1 downto 0);
    rx_st_tlp_prfx  : in  std_logic_vector(data_w_g/8-1 downto 0);
    rx_st_bar_range : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_tlp_abort : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_sop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_eop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_valid     : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_ready     : out std_logic := '0';
    -- transmit
    tx_st_data      : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    tx_st_hdr       : out std_logic_vector(data_w_g/2-1 downto 0) := (others => '0');
    tx_st_tlp_prfx  : out std_logic_vector(data_w_g/8-1 downto 0) := (others => '0');
    tx_st_sop       : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_eop       : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_valid     : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_err       : out std_logic_vector(data_w_g/256-1 downto 0) := (others => '0');
    tx_st_ready     : in  std_logic;
    -- transmit credit limits, one type per clock (mprace_pcie_avst_credits)
    tx_cdts_limit         : in std_logic_vector(15 downto 0);
    tx_cdts_limit_tdm_idx : in std_logic_vector(2 downto 0);
    -- legacy interrupt (INTx) level per function: bit 0 is INTA of function 0
    app_int     : out std_logic_vector(7 downto 0) := (others => '0');
    -- configuration output
    tl_cfg_func : in  std_logic_vector(2 downto 0);
    tl_cfg_add  : in  std_logic_vector(4 downto 0);
    tl_cfg_ctl  : in  std_logic_vector(15 downto 0);
    -- user C2H stream (card to host)
    s_axis_c2h_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_c2h_tkeep  : in  std_logic_vector(data_w_g/8-1 downto 0);
    s_axis_c2h_tlast  : in  std_logic;
    s_axis_c2h_tvalid : in  std_logic;
    s_axis_c2h_tready : out std_logic := '0';
    -- user H2C stream (host to card)
    m_axis_h2c_tdata  : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    m_axis_h2c_tkeep  : out std_logic_vector(data_w_g/8-1 downto 0) := (others => '0');
    m_axis_h2c_tlast  : out std_logic := '0';
    m_axis_h2c_tvalid : out std_logic := '0';
    m_axis_h2c_tready : in  std_logic
  );
end entity mprace_dma_top_ptile;

architecture rtl of mprace_dma_top_ptile is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_top_ptile", data_w_g);

  -- configuration (function 0)
  signal cfg_mps, cfg_mrrs : std_logic_vector(2 downto 0) := (others => '0');
  signal cfg_rcb128 : std_logic := '0';
  signal bus_dev    : std_logic_vector(12 downto 0) := (others => '0');
  signal msi_addr   : std_logic_vector(63 downto 0) := (others => '0');
  signal msi_data   : std_logic_vector(15 downto 0) := (others => '0');
  signal msi_on     : std_logic := '0';
  signal msi_mme    : std_logic_vector(2 downto 0) := (others => '0');

begin

  -- the configuration output: one register per clock, its address on tl_cfg_add
  p_cfg : process(user_clk)
    variable c : std_logic_vector(15 downto 0);
  begin
    if rising_edge(user_clk) then
      c := tl_cfg_ctl;
      if tl_cfg_func = "000" then
        case to_integer(unsigned(tl_cfg_add)) is
          when 16#00# => cfg_mps <= c(2 downto 0); cfg_mrrs <= c(5 downto 3);
          when 16#01# => bus_dev <= c(7 downto 0) & c(12 downto 8);
          when 16#02# => cfg_rcb128 <= c(14);
          when 16#06# => msi_addr(15 downto 0)  <= c;
          when 16#07# => msi_addr(31 downto 16) <= c;
          when 16#08# => msi_addr(47 downto 32) <= c;
          when 16#09# => msi_addr(63 downto 48) <= c;
          when 16#0C# => msi_on <= c(0); msi_mme <= c(4 downto 2);
          when 16#0D# => msi_data <= c;
          when others => null;
        end case;
      end if;
    end if;
  end process;

  i_engine : entity work.mprace_dma_avst
    generic map (data_w_g => data_w_g, hdr_bus_g => true, msi_tlp_g => true,
                 rx_ready_latency_g => 27, clk_mhz_g => clk_mhz_g,
                 c2h_ring_log2_g => c2h_ring_log2_g, h2c_ring_log2_g => h2c_ring_log2_g,
                 cpl_hdr_g => cpl_hdr_g, cpl_data_g => cpl_data_g)
    port map (
      clk => user_clk, rst => user_reset,
      rx_st_data => rx_st_data, rx_st_empty => rx_st_empty, rx_st_hdr => rx_st_hdr,
      rx_st_tlp_prfx => rx_st_tlp_prfx, rx_st_bar_range => rx_st_bar_range,
      rx_st_tlp_abort => rx_st_tlp_abort, rx_st_sop => rx_st_sop, rx_st_eop => rx_st_eop,
      rx_st_valid => rx_st_valid, rx_st_ready => rx_st_ready,
      tx_st_data => tx_st_data, tx_st_hdr => tx_st_hdr, tx_st_tlp_prfx => tx_st_tlp_prfx,
      tx_st_sop => tx_st_sop, tx_st_eop => tx_st_eop, tx_st_valid => tx_st_valid,
      tx_st_err => tx_st_err, tx_st_ready => tx_st_ready,
      tx_cdts_limit => tx_cdts_limit, tx_cdts_limit_tdm_idx => tx_cdts_limit_tdm_idx,
      req_id => bus_dev & "000", cfg_mps => cfg_mps, cfg_mrrs => cfg_mrrs,
      cfg_rcb128 => cfg_rcb128, msi_on => msi_on, msi_mme => msi_mme, msi_addr => msi_addr,
      msi_data => msi_data, app_msi_req => open, app_msi_num => open, app_msi_ack => '0',
      intx => app_int(0),
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready);

  app_int(7 downto 1) <= (others => '0');

end architecture rtl;
