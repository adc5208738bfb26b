-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_top: the MPRACE scatter-gather DMA engine (mprace_dma_core) attached to the
-- AXI4-Stream interfaces of the Xilinx PCIe blocks (DWORD-aligned, client tags, 250 MHz) by the
-- Xilinx adapters: data_w_g = 256 for the 7-series Gen3 / UltraScale block (PG023 / PG156, Gen3
-- x8), 512 for the UltraScale+ block (PG213, Gen3 x16 / Gen4 x8). The width sets the ports'
-- widths, the sideband layouts (tuser widths from mprace_pcie_us_pkg) and CAPS.DATAPATH_BYTES; at 512 bits RQ and RC straddle (two
-- TLPs per beat, rq_straddle_g / rc_straddle_g), at 256 nothing does. All ports are flat
-- std_logic(_vector)s; the core's interfaces keep Xilinx's names.
--   BAR0 registers  : s_axis_cq_* / m_axis_cc_*         (mprace_pcie_us_cq_cc, mprace_dma_regs)
--   bus mastering   : m_axis_rq_* / s_axis_rc_*         (fetchers, write and read engines)
--   interrupts      : cfg_interrupt_* (MSI, INTx)       (mprace_pcie_us_irq)
--   user data       : s_axis_c2h_* in, m_axis_h2c_* out; tkeep is per byte but the engine moves
--                     whole dwords: set the four bits of a dword together, contiguous from
--                     byte 0; only the last beat of a packet (tlast) needs to be partial.
--                     Each H2C descriptor starts on a new beat; tlast ends those with CTRL.EOP.
-- Test logic (pattern generator, checker, loopback) sits between the channels and the user
-- streams, selected by TEST_CONTROL.
-- Spec: docs/dma-engine.md (all sections); the register map is engine_spec_pkg.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity mprace_dma_top is
  generic (
    data_w_g        : positive := 256;    -- datapath and interface width: 256 or 512
    rq_straddle_g   : boolean := true;    -- 512: C2H writes straddle RQ beats (the core's
                                          -- RQ straddle option must be on); ignored at 256
    rq_pack_g       : boolean := true;    -- 512 with rq_straddle_g: read requests and records
                                          -- share beats with writes (core pack_g)
    rc_straddle_g   : boolean := true;    -- 512: takes two completions per RC beat (the core's
                                          -- RC straddle option, 2 TLPs); ignored at 256
    clk_mhz_g       : positive := 250;    -- user_clk frequency (CLOCK_MHZ, TIMEOUT_US)
    c2h_ring_log2_g : positive := 12;     -- C2H data ring: 2**n dwords (loopback FIFO)
    h2c_ring_log2_g : positive := 12;     -- H2C reassembly ring: 2**n dwords
    cpl_hdr_g       : positive := 64;     -- completion headers the core buffers (PG156: 64)
    cpl_data_g      : positive := 1024    -- completion data credits of 16 bytes it buffers
  );
  port (
    user_clk   : in  std_logic;
    user_reset : in  std_logic;
    -- completer request
    s_axis_cq_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_cq_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_cq_tuser  : in  std_logic_vector(cq_user_w(data_w_g)-1 downto 0);
    s_axis_cq_tlast  : in  std_logic;
    s_axis_cq_tvalid : in  std_logic;
    s_axis_cq_tready : out std_logic := '0';
    pcie_cq_np_req   : out std_logic := '0';
    -- completer completion
    m_axis_cc_tdata  : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    m_axis_cc_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    m_axis_cc_tuser  : out std_logic_vector(cc_user_w(data_w_g)-1 downto 0) := (others => '0');
    m_axis_cc_tlast  : out std_logic := '0';
    m_axis_cc_tvalid : out std_logic := '0';
    m_axis_cc_tready : in  std_logic;
    -- requester request
    m_axis_rq_tdata  : out std_logic_vector(data_w_g-1 downto 0) := (others => '0');
    m_axis_rq_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0) := (others => '0');
    m_axis_rq_tuser  : out std_logic_vector(rq_user_w(data_w_g)-1 downto 0) := (others => '0');
    m_axis_rq_tlast  : out std_logic := '0';
    m_axis_rq_tvalid : out std_logic := '0';
    m_axis_rq_tready : in  std_logic;
    -- requester completion
    s_axis_rc_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_rc_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_rc_tuser  : in  std_logic_vector(rc_user_w(data_w_g)-1 downto 0);
    s_axis_rc_tlast  : in  std_logic;
    s_axis_rc_tvalid : in  std_logic;
    s_axis_rc_tready : out std_logic := '0';
    -- configuration status
    cfg_max_payload  : in  std_logic_vector(cfg_mps_w(data_w_g)-1 downto 0);
    cfg_max_read_req : in  std_logic_vector(2 downto 0);
    cfg_rcb_status   : in  std_logic_vector(3 downto 0);
    -- configuration interrupt controller
    cfg_interrupt_int                             : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_pending                         : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_sent                            : in  std_logic;
    cfg_interrupt_msi_enable                      : in  std_logic_vector(3 downto 0);
    cfg_interrupt_msi_mmenable                    : in  std_logic_vector(11 downto 0);
    cfg_interrupt_msi_mask_update                 : in  std_logic;
    cfg_interrupt_msi_data                        : in  std_logic_vector(31 downto 0);
    cfg_interrupt_msi_select                      : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_msi_int                         : out std_logic_vector(31 downto 0) := (others => '0');
    cfg_interrupt_msi_pending_status              : out std_logic_vector(31 downto 0) := (others => '0');
    cfg_interrupt_msi_pending_status_data_enable  : out std_logic := '0';
    cfg_interrupt_msi_pending_status_function_num : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_msi_sent                        : in  std_logic;
    cfg_interrupt_msi_fail                        : in  std_logic;
    cfg_interrupt_msi_attr                        : out std_logic_vector(2 downto 0) := (others => '0');
    cfg_interrupt_msi_tph_present                 : out std_logic := '0';
    cfg_interrupt_msi_tph_type                    : out std_logic_vector(1 downto 0) := (others => '0');
    cfg_interrupt_msi_tph_st_tag                  : out std_logic_vector(8 downto 0) := (others => '0');
    cfg_interrupt_msi_function_number             : out std_logic_vector(3 downto 0) := (others => '0');
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
end entity mprace_dma_top;

architecture rtl of mprace_dma_top is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_top", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  signal rst            : std_logic;

  signal reg_wr, reg_rd, reg_rvalid : std_logic;
  signal reg_addr       : std_logic_vector(11 downto 0);
  signal reg_wdata      : std_logic_vector(31 downto 0);
  signal reg_rdata      : std_logic_vector(31 downto 0);

  signal cfg_mps        : std_logic_vector(2 downto 0);
  signal msi_vectors    : std_logic_vector(3 downto 0);
  signal irq_status     : std_logic_vector(2 downto 0);
  signal irq_enable     : std_logic_vector(2 downto 0);

  -- completions from the RC adapter, requests to the RQ adapter
  signal cpl            : cpl_r;
  signal cpl_data       : std_logic_vector(DATA_W_c-1 downto 0);
  signal cpl_keep       : std_logic_vector(LANES_c-1 downto 0);
  signal req_tdata      : std_logic_vector(DATA_W_c-1 downto 0);
  signal req_tkeep      : std_logic_vector(LANES_c-1 downto 0);
  signal req_side       : std_logic_vector(REQ_SIDE_W_c-1 downto 0);
  signal req_tlast, req_tvalid, req_tready : std_logic;

begin

  rst <= user_reset;
  cfg_mps <= std_logic_vector(resize(unsigned(cfg_max_payload), 3));

  ------------------------------------------------------------------ BAR0
  i_cq_cc : entity work.mprace_pcie_us_cq_cc
    generic map (data_w_g => data_w_g)
    port map (
      clk => user_clk, rst => rst,
      s_axis_cq_tdata => s_axis_cq_tdata, s_axis_cq_tkeep => s_axis_cq_tkeep,
      s_axis_cq_tuser => s_axis_cq_tuser, s_axis_cq_tlast => s_axis_cq_tlast,
      s_axis_cq_tvalid => s_axis_cq_tvalid, s_axis_cq_tready => s_axis_cq_tready,
      m_axis_cc_tdata => m_axis_cc_tdata, m_axis_cc_tkeep => m_axis_cc_tkeep,
      m_axis_cc_tuser => m_axis_cc_tuser, m_axis_cc_tlast => m_axis_cc_tlast,
      m_axis_cc_tvalid => m_axis_cc_tvalid, m_axis_cc_tready => m_axis_cc_tready,
      reg_wr => reg_wr, reg_rd => reg_rd, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_rdata => reg_rdata, reg_rvalid => reg_rvalid);
  pcie_cq_np_req <= '1';

  i_irq : entity work.mprace_pcie_us_irq
    port map (
      clk => user_clk, rst => rst, irq_status => irq_status, irq_enable => irq_enable,
      msi_vectors => msi_vectors,
      cfg_interrupt_int => cfg_interrupt_int, cfg_interrupt_pending => cfg_interrupt_pending,
      cfg_interrupt_sent => cfg_interrupt_sent,
      cfg_interrupt_msi_enable => cfg_interrupt_msi_enable,
      cfg_interrupt_msi_mmenable => cfg_interrupt_msi_mmenable,
      cfg_interrupt_msi_int => cfg_interrupt_msi_int,
      cfg_interrupt_msi_sent => cfg_interrupt_msi_sent,
      cfg_interrupt_msi_fail => cfg_interrupt_msi_fail);

  cfg_interrupt_msi_select                      <= (others => '0');
  cfg_interrupt_msi_pending_status              <= (others => '0');
  cfg_interrupt_msi_pending_status_data_enable  <= '0';
  cfg_interrupt_msi_pending_status_function_num <= (others => '0');
  cfg_interrupt_msi_attr                        <= (others => '0');
  cfg_interrupt_msi_tph_present                 <= '0';
  cfg_interrupt_msi_tph_type                    <= (others => '0');
  cfg_interrupt_msi_tph_st_tag                  <= (others => '0');
  cfg_interrupt_msi_function_number             <= (others => '0');

  ------------------------------------------------------------------ bus mastering
  i_rc : entity work.mprace_pcie_us_rc
    generic map (data_w_g => data_w_g, straddle_g => rc_straddle_g and data_w_g = 512)
    port map (
      clk => user_clk, rst => rst,
      s_axis_rc_tdata => s_axis_rc_tdata, s_axis_rc_tkeep => s_axis_rc_tkeep,
      s_axis_rc_tuser => s_axis_rc_tuser, s_axis_rc_tlast => s_axis_rc_tlast,
      s_axis_rc_tvalid => s_axis_rc_tvalid, s_axis_rc_tready => s_axis_rc_tready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep);

  i_rq : entity work.mprace_pcie_us_rq
    generic map (data_w_g => data_w_g)
    port map (
      clk => user_clk, rst => rst,
      s_tdata => req_tdata, s_tkeep => req_tkeep, s_side => req_side, s_tlast => req_tlast,
      s_tvalid => req_tvalid, s_tready => req_tready,
      m_axis_rq_tdata => m_axis_rq_tdata, m_axis_rq_tkeep => m_axis_rq_tkeep,
      m_axis_rq_tuser => m_axis_rq_tuser, m_axis_rq_tlast => m_axis_rq_tlast,
      m_axis_rq_tvalid => m_axis_rq_tvalid, m_axis_rq_tready => m_axis_rq_tready);

  ------------------------------------------------------------------ the engine
  i_core : entity work.mprace_dma_core
    generic map (data_w_g => data_w_g, straddle_g => rq_straddle_g and data_w_g = 512,
                 pack_g => rq_pack_g, clk_mhz_g => clk_mhz_g, c2h_ring_log2_g => c2h_ring_log2_g,
                 h2c_ring_log2_g => h2c_ring_log2_g, cpl_hdr_g => cpl_hdr_g,
                 cpl_data_g => cpl_data_g)
    port map (
      clk => user_clk, rst => rst,
      reg_wr => reg_wr, reg_rd => reg_rd, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_rdata => reg_rdata, reg_rvalid => reg_rvalid,
      cfg_mps => cfg_mps, cfg_mrrs => cfg_max_read_req, cfg_rcb128 => cfg_rcb_status(0),
      msi_vectors => msi_vectors, irq_status => irq_status, irq_enable => irq_enable,
      req_tdata => req_tdata, req_tkeep => req_tkeep, req_side => req_side,
      req_tlast => req_tlast, req_tvalid => req_tvalid, req_tready => req_tready,
      cpl => cpl, cpl_data => cpl_data,
      cpl_keep => cpl_keep,
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready);

end architecture rtl;
