-- SPDX-License-Identifier: GPL-2.0
-- avst_rx_tb: mprace_pcie_avst_rx with its completion record on flat ports, so that a cocotb
-- test can read them.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity avst_rx_tb is
  generic (
    data_w_g        : positive := 256;
    hdr_bus_g       : boolean  := true;
    ready_latency_g : positive := 27
  );
  port (
    clk, rst        : in  std_logic;
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
    cpl_valid, cpl_sop, cpl_eop, cpl_done : out std_logic := '0';
    cpl_tag   : out std_logic_vector(7 downto 0) := (others => '0');
    cpl_err   : out std_logic_vector(CPL_ERR_W_c-1 downto 0) := (others => '0');
    cpl_bytes : out std_logic_vector(12 downto 0) := (others => '0');
    cpl_data  : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    cpl_keep  : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    reg_wr    : out std_logic := '0';
    reg_addr  : out std_logic_vector(11 downto 0) := (others => '0');
    reg_wdata : out std_logic_vector(31 downto 0) := (others => '0');
    other     : out std_logic := '0'
  );
end entity avst_rx_tb;

architecture wrap of avst_rx_tb is
  signal cpl : cpl_r;
begin
  i_rx : entity work.mprace_pcie_avst_rx
    generic map (data_w_g => data_w_g, hdr_bus_g => hdr_bus_g, ready_latency_g => ready_latency_g)
    port map (
      clk => clk, rst => rst,
      rx_st_data => rx_st_data, rx_st_empty => rx_st_empty, rx_st_hdr => rx_st_hdr,
      rx_st_tlp_prfx => rx_st_tlp_prfx, rx_st_bar_range => rx_st_bar_range,
      rx_st_tlp_abort => rx_st_tlp_abort, rx_st_sop => rx_st_sop, rx_st_eop => rx_st_eop,
      rx_st_valid => rx_st_valid, rx_st_ready => rx_st_ready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      reg_wr => reg_wr, reg_rd => open, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_hold => '0', rd_ok => open, rd_id => open, rd_tag => open, rd_low => open,
      other => other);
  cpl_valid <= cpl.valid;
  cpl_sop   <= cpl.sop;
  cpl_eop   <= cpl.eop;
  cpl_done  <= cpl.done;
  cpl_tag   <= std_logic_vector(cpl.tag);
  cpl_err   <= cpl.err;
  cpl_bytes <= std_logic_vector(cpl.bytes);
end architecture wrap;
