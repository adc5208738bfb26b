-- SPDX-License-Identifier: GPL-2.0
-- desc_fetch_tb: mprace_dma_desc_fetch behind the requester-completion adapter
-- (mprace_pcie_us_rc), with the channel-control record and the descriptor queue on flat
-- ports, so that a cocotb test can play the host: answer the fetcher's read requests with
-- completion TLPs on the core's RC interface and take the descriptors it queues.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity desc_fetch_tb is
  generic (data_w_g : positive := 256; straddle_g : boolean := false; tag_g : natural := 3);
  port (
    clk, rst   : in  std_logic;
    ring_base  : in  std_logic_vector(63 downto 0);
    ring_size  : in  std_logic_vector(31 downto 0);
    tail       : in  std_logic_vector(31 downto 0);
    head       : in  std_logic_vector(31 downto 0);
    enable     : in  std_logic;
    mrrs_dw    : in  std_logic_vector(10 downto 0);
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
    desc_valid : out std_logic := '0';
    desc_ready : in  std_logic;
    desc_addr  : out std_logic_vector(63 downto 0) := (others => '0');
    desc_len   : out std_logic_vector(DESC_LEN_BYTES_WIDTH_c-1 downto 0) := (others => '0');
    desc_ctrl  : out std_logic_vector(2 downto 0) := (others => '0');   -- stop, eop, irq
    desc_slot  : out std_logic_vector(15 downto 0) := (others => '0');
    desc_err   : out std_logic_vector(7 downto 0) := (others => '0');
    desc_rec   : out std_logic := '0';
    busy       : out std_logic := '0'
  );
end entity desc_fetch_tb;

architecture wrap of desc_fetch_tb is
  signal ctrl : chan_ctrl_r;
  signal desc : desc_entry_r;
  signal cpl            : cpl_r;
  signal cpl_data  : std_logic_vector(data_w_g-1 downto 0);
  signal cpl_keep  : std_logic_vector(data_w_g/32-1 downto 0);
begin
  ctrl <= (ring_base => ring_base, ring_size => ring_size, tail => tail, head => head,
           timeout_us => (others => '0'), run => enable, abort => '0', reset => '0');

  i_rc : entity work.mprace_pcie_us_rc
    generic map (data_w_g => data_w_g, straddle_g => straddle_g)
    port map (
      clk => clk, rst => rst,
      s_axis_rc_tdata => s_axis_rc_tdata, s_axis_rc_tkeep => s_axis_rc_tkeep,
      s_axis_rc_tuser => s_axis_rc_tuser, s_axis_rc_tlast => s_axis_rc_tlast,
      s_axis_rc_tvalid => s_axis_rc_tvalid, s_axis_rc_tready => s_axis_rc_tready,
      cpl => cpl,
      cpl_data => cpl_data, cpl_keep => cpl_keep);

  i_fetch : entity work.mprace_dma_desc_fetch
    generic map (data_w_g => data_w_g, tag_g => tag_g)
    port map (
      clk => clk, rst => rst, ctrl => ctrl, enable => enable, mrrs_dw => unsigned(mrrs_dw),
      req_tdata => rq_tdata, req_tkeep => rq_tkeep, req_side => rq_tuser, req_tlast => rq_tlast,
      req_tvalid => rq_tvalid, req_tready => rq_tready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      desc_valid => desc_valid, desc_ready => desc_ready, desc => desc,
      busy => busy, cpl_seen => open);

  desc_addr <= desc.addr;
  desc_len  <= std_logic_vector(desc.len);
  desc_ctrl <= desc.stop & desc.eop & desc.irq;
  desc_slot <= std_logic_vector(desc.slot);
  desc_err  <= desc.err;
  desc_rec  <= desc.rec;
end architecture wrap;
