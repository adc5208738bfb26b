-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_avst: the MPRACE scatter-gather DMA engine (mprace_dma_core) on the Avalon-ST
-- streams of an Intel PCIe hard IP, the part the P-tile and H-tile/L-tile tops share; they
-- decode the IP's configuration output and name the ports as the IP does.
--   BAR0 registers : memory requests on rx_st_* (mprace_pcie_avst_rx), their completions on tx_st_*
--   bus mastering  : requests on tx_st_* (mprace_pcie_avst_tx), completions on rx_st_*
--   interrupts     : one vector per source with 4 or more granted (as on the Xilinx top);
--                    msi_tlp_g = true: as memory writes on tx_st_* to the address and data the
--                    host set (the P-tile), false: through app_msi_req/ack (H-/L-tile); with
--                    MSI off the INTA level on `intx` (the tops pass it to the IP)
--   user data      : s_axis_c2h_* in, m_axis_h2c_* out, as on mprace_dma_top
-- Requests, register completions and MSI share tx_st_* through a request mux, the engine's
-- requests served last, so an MSI leaves after the writes of the descriptor it reports.
-- At 512 bits the core packs C2H writes two to a beat (straddle_g), which the transmit adapter
-- takes apart. Not handled yet: transmit credits, the IPs' completion timeout interfaces, TLPs
-- starting in the second transmit segment. Spec: docs/dma-engine.md; hdl/README.md "The
-- Intel tops".
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_avst is
  generic (
    data_w_g           : positive := 256;   -- datapath and interface width: 256 or 512
    hdr_bus_g          : boolean  := true;  -- headers on their own bus (P-tile) or in the data
    msi_tlp_g          : boolean  := true;  -- MSI as memory writes (P-tile) or app_msi_* requests
    rx_ready_latency_g : positive := 27;    -- rx_st_ready's latency in clocks
    clk_mhz_g          : positive := 250;   -- clk frequency (CLOCK_MHZ, TIMEOUT_US)
    c2h_ring_log2_g    : positive := 12;
    h2c_ring_log2_g    : positive := 12;
    cpl_hdr_g          : positive := 512;   -- completion headers the engine lets the IP buffer
    cpl_data_g         : positive := 2048   -- completion data credits of 16 bytes
  );
  port (
    clk : in  std_logic;
    rst : in  std_logic;
    -- receive (rx_st_hdr, rx_st_tlp_prfx and rx_st_tlp_abort read only with hdr_bus_g)
    rx_st_data      : in  std_logic_vector(data_w_g-1 downto 0);
    rx_st_empty     : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_hdr       : in  std_logic_vector(data_w_g/2-1 downto 0);
    rx_st_tlp_prfx  : in  std_logic_vector(data_w_g/8-1 downto 0);
    rx_st_bar_range : in  std_logic_vector(3*data_w_g/256-1 downto 0);
    rx_st_tlp_abort : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_sop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_eop       : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_valid     : in  std_logic_vector(data_w_g/256-1 downto 0);
    rx_st_ready     : out std_logic;
    -- transmit (tx_st_hdr driven only with hdr_bus_g)
    tx_st_data      : out std_logic_vector(data_w_g-1 downto 0);
    tx_st_hdr       : out std_logic_vector(data_w_g/2-1 downto 0);
    tx_st_tlp_prfx  : out std_logic_vector(data_w_g/8-1 downto 0);
    tx_st_sop       : out std_logic_vector(data_w_g/256-1 downto 0);
    tx_st_eop       : out std_logic_vector(data_w_g/256-1 downto 0);
    tx_st_valid     : out std_logic_vector(data_w_g/256-1 downto 0);
    tx_st_err       : out std_logic_vector(data_w_g/256-1 downto 0);
    tx_st_ready     : in  std_logic;
    -- the P-tile's transmit credit limits (hdr_bus_g; mprace_pcie_avst_credits): the defaults,
    -- limits of 0, mean infinite credit
    tx_cdts_limit         : in std_logic_vector(15 downto 0) := (others => '0');
    tx_cdts_limit_tdm_idx : in std_logic_vector(2 downto 0) := (others => '0');
    -- what the top decoded from the IP's configuration output (function 0)
    req_id     : in  std_logic_vector(15 downto 0);   -- bus, device, function
    cfg_mps    : in  std_logic_vector(2 downto 0);
    cfg_mrrs   : in  std_logic_vector(2 downto 0);
    cfg_rcb128 : in  std_logic;
    msi_on     : in  std_logic;
    msi_mme    : in  std_logic_vector(2 downto 0);    -- Multiple Message Enable
    msi_addr   : in  std_logic_vector(63 downto 0);   -- msi_tlp_g only
    msi_data   : in  std_logic_vector(15 downto 0);   -- msi_tlp_g only
    -- the IP's MSI request interface (not msi_tlp_g)
    app_msi_req : out std_logic := '0';
    app_msi_num : out std_logic_vector(4 downto 0) := (others => '0');
    app_msi_ack : in  std_logic;
    -- INTA's level while MSI is off
    intx        : out std_logic;
    -- user C2H stream (card to host)
    s_axis_c2h_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_c2h_tkeep  : in  std_logic_vector(data_w_g/8-1 downto 0);
    s_axis_c2h_tlast  : in  std_logic;
    s_axis_c2h_tvalid : in  std_logic;
    s_axis_c2h_tready : out std_logic;
    -- user H2C stream (host to card)
    m_axis_h2c_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    m_axis_h2c_tkeep  : out std_logic_vector(data_w_g/8-1 downto 0);
    m_axis_h2c_tlast  : out std_logic;
    m_axis_h2c_tvalid : out std_logic;
    m_axis_h2c_tready : in  std_logic
  );
end entity mprace_dma_avst;

architecture rtl of mprace_dma_avst is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_avst", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;

  -- transmit mux inputs: the engine's requests (served last), register completions, MSI
  constant P_ENGINE_c : natural := 0;
  constant P_CPL_c    : natural := 1;
  constant P_MSI_c    : natural := 2;
  constant PORTS_c    : natural := 3;

  signal msi_vectors : std_logic_vector(3 downto 0);

  -- registers
  signal rx_reg_rd, reg_wr, reg_rd, reg_rvalid, rd_ok : std_logic;
  signal reg_addr  : std_logic_vector(11 downto 0);
  signal reg_wdata, reg_rdata : std_logic_vector(31 downto 0);
  signal rd_id     : std_logic_vector(15 downto 0);
  signal rd_tag    : std_logic_vector(7 downto 0);
  signal rd_low    : std_logic_vector(6 downto 0);
  signal irq_status, irq_enable : std_logic_vector(2 downto 0);

  -- completions to the engine
  signal cpl      : cpl_r;
  signal cpl_data : std_logic_vector(DATA_W_c-1 downto 0);
  signal cpl_keep : std_logic_vector(LANES_c-1 downto 0);

  -- transmit mux
  signal q_tdata  : std_logic_vector(PORTS_c*DATA_W_c-1 downto 0);
  signal q_tkeep  : std_logic_vector(PORTS_c*LANES_c-1 downto 0);
  signal q_side   : std_logic_vector(PORTS_c*REQ_SIDE_W_c-1 downto 0);
  signal q_tlast, q_tvalid, q_tready : std_logic_vector(PORTS_c-1 downto 0);
  signal tx_tdata : std_logic_vector(DATA_W_c-1 downto 0);
  signal tx_tkeep : std_logic_vector(LANES_c-1 downto 0);
  signal tx_side  : std_logic_vector(REQ_SIDE_W_c-1 downto 0);
  signal tx_tlast, tx_tvalid, tx_tready : std_logic;
  signal tx_gated_valid, tx_gated_ready : std_logic;   -- past the credit gate

  -- the register read being completed
  type cc_r is record
    pend  : std_logic;                          -- a read waits for its data or its completion
    valid : std_logic;                          -- its completion is offered
    ok    : std_logic;
    id    : std_logic_vector(15 downto 0);
    tag   : std_logic_vector(7 downto 0);
    low   : std_logic_vector(6 downto 0);
    data  : dword_t;
  end record;
  signal cc : cc_r := (pend => '0', valid => '0', ok => '0', id => (others => '0'),
                       tag => (others => '0'), low => (others => '0'), data => (others => '0'));

  -- MSI: the message mprace_dma_msi fired, offered until taken (the transmit mux or the IP)
  signal msi_fire  : std_logic;
  signal msi_done  : std_logic;
  signal msi_vec   : natural range 0 to 31;
  signal msi_valid : std_logic := '0';
  signal msi_vec_q : natural range 0 to 31 := 0;

  function cpl_tlp(ok : std_logic; completer, requester : std_logic_vector(15 downto 0);
                   tag : std_logic_vector(7 downto 0); low : std_logic_vector(6 downto 0);
                   data : dword_t) return std_logic_vector is
    variable t : std_logic_vector(159 downto 0) := (others => '0');
  begin
    t(28 downto 24) := "01010";                       -- completion
    if ok = '1' then
      t(30) := '1';                                   -- with data, one dword
      t(9 downto 0) := "0000000001";
      t(32+2) := '1';                                 -- byte count 4
    else
      t(32+15 downto 32+13) := "100";                 -- Completer Abort
    end if;
    t(32+31 downto 32+16) := completer;
    t(64+31 downto 64+16) := requester;
    t(64+15 downto 64+8)  := tag;
    t(64+6 downto 64)     := low;
    t(159 downto 128)     := data;                    -- the payload after the header slot
    return t;
  end function;

begin

  ------------------------------------------------------------------ receive
  i_rx : entity work.mprace_pcie_avst_rx
    generic map (data_w_g => data_w_g, hdr_bus_g => hdr_bus_g, ready_latency_g => rx_ready_latency_g)
    port map (
      clk => clk, rst => rst,
      rx_st_data => rx_st_data, rx_st_empty => rx_st_empty, rx_st_hdr => rx_st_hdr,
      rx_st_tlp_prfx => rx_st_tlp_prfx, rx_st_bar_range => rx_st_bar_range,
      rx_st_tlp_abort => rx_st_tlp_abort, rx_st_sop => rx_st_sop, rx_st_eop => rx_st_eop,
      rx_st_valid => rx_st_valid, rx_st_ready => rx_st_ready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      reg_wr => reg_wr, reg_rd => rx_reg_rd, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_hold => cc.pend, rd_ok => rd_ok, rd_id => rd_id, rd_tag => rd_tag, rd_low => rd_low,
      other => open);
  reg_rd <= rx_reg_rd and rd_ok;

  ------------------------------------------------------------------ register completions
  p_cc : process(clk)
  begin
    if rising_edge(clk) then
      if rx_reg_rd = '1' then
        cc.pend  <= '1';
        cc.ok    <= rd_ok;
        cc.id    <= rd_id;
        cc.tag   <= rd_tag;
        cc.low   <= rd_low;
        cc.data  <= (others => '0');
        cc.valid <= not rd_ok;                  -- a bad read completes at once (CA)
      end if;
      if reg_rvalid = '1' and cc.pend = '1' and cc.valid = '0' then
        cc.data  <= reg_rdata;
        cc.valid <= '1';
      end if;
      if cc.valid = '1' and q_tready(P_CPL_c) = '1' then
        cc.valid <= '0';
        cc.pend  <= '0';
      end if;
      if rst = '1' then
        cc.pend  <= '0';
        cc.valid <= '0';
      end if;
    end if;
  end process;

  q_tdata(P_CPL_c*DATA_W_c+DATA_W_c-1 downto P_CPL_c*DATA_W_c) <=
    (DATA_W_c-1 downto 160 => '0') & cpl_tlp(cc.ok, req_id, cc.id, cc.tag, cc.low, cc.data);
  q_tkeep(P_CPL_c*LANES_c+LANES_c-1 downto P_CPL_c*LANES_c) <=
    ones(5, LANES_c) when cc.ok = '1' else ones(4, LANES_c);
  q_side(P_CPL_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_CPL_c*REQ_SIDE_W_c) <= (others => '0');
  q_tlast(P_CPL_c)  <= '1';
  q_tvalid(P_CPL_c) <= cc.valid;

  ------------------------------------------------------------------ MSI
  i_msi : entity work.mprace_dma_msi
    port map (
      clk => clk, rst => rst, irq_status => irq_status, irq_enable => irq_enable,
      msi_on => msi_on, msi_mme => msi_mme, msi_vectors => msi_vectors,
      fire => msi_fire, vector => msi_vec, done => msi_done, intx => intx);
  msi_done <= msi_valid and q_tready(P_MSI_c) when msi_tlp_g else msi_valid and app_msi_ack;

  p_msi : process(clk)
  begin
    if rising_edge(clk) then
      if msi_fire = '1' then
        msi_valid <= '1';
        msi_vec_q <= msi_vec;
      elsif msi_done = '1' then
        msi_valid <= '0';
      end if;
      if rst = '1' then
        msi_valid <= '0';
      end if;
    end if;
  end process;

  p_msi_tlp : process(all)
    variable data : dword_t;
  begin
    data := x"0000" & msi_data;
    data(4 downto 0) := data(4 downto 0) or std_logic_vector(to_unsigned(msi_vec_q, 5));
    q_tdata(P_MSI_c*DATA_W_c+DATA_W_c-1 downto P_MSI_c*DATA_W_c) <=
      (DATA_W_c-1 downto 160 => '0') & data & tlp_mem_req(msi_addr, to_unsigned(1, 11), true, 0);
  end process;
  q_tkeep(P_MSI_c*LANES_c+LANES_c-1 downto P_MSI_c*LANES_c) <= ones(5, LANES_c);
  q_side(P_MSI_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_MSI_c*REQ_SIDE_W_c) <= (others => '0');
  q_tlast(P_MSI_c)  <= '1';
  q_tvalid(P_MSI_c) <= msi_valid when msi_tlp_g else '0';

  -- without msi_tlp_g the IP sends the message: app_msi_req until app_msi_ack
  g_app_msi : if not msi_tlp_g generate
    app_msi_req <= msi_valid;
    app_msi_num <= std_logic_vector(to_unsigned(msi_vec_q, 5));
  end generate;
  g_no_app_msi : if msi_tlp_g generate
    app_msi_req <= '0';
    app_msi_num <= (others => '0');
  end generate;

  ------------------------------------------------------------------ transmit
  i_mux : entity work.mprace_dma_req_mux
    generic map (data_w_g => data_w_g, ports_g => PORTS_c, bulk_g => P_ENGINE_c)
    port map (
      clk => clk, rst => rst,
      s_tdata => q_tdata, s_tkeep => q_tkeep, s_side => q_side, s_tlast => q_tlast,
      s_tvalid => q_tvalid, s_tready => q_tready, s_sent => open,
      m_tdata => tx_tdata, m_tkeep => tx_tkeep, m_side => tx_side, m_tlast => tx_tlast,
      m_tvalid => tx_tvalid, m_tready => tx_tready);

  -- the P-tile reports credit limits and leaves it to the application to honour them
  g_credits : if hdr_bus_g generate
    i_credits : entity work.mprace_pcie_avst_credits
      generic map (data_w_g => data_w_g)
      port map (
        clk => clk, rst => rst,
        s_tdata => tx_tdata, s_side => tx_side, s_tlast => tx_tlast, s_tvalid => tx_tvalid,
        s_tready => tx_tready, m_tvalid => tx_gated_valid, m_tready => tx_gated_ready,
        tx_cdts_limit => tx_cdts_limit, tx_cdts_limit_tdm_idx => tx_cdts_limit_tdm_idx);
  end generate;
  g_no_credits : if not hdr_bus_g generate
    tx_gated_valid <= tx_tvalid;
    tx_tready      <= tx_gated_ready;
  end generate;

  i_tx : entity work.mprace_pcie_avst_tx
    generic map (data_w_g => data_w_g, hdr_bus_g => hdr_bus_g)
    port map (
      clk => clk, rst => rst,
      s_tdata => tx_tdata, s_tkeep => tx_tkeep, s_side => tx_side, s_tlast => tx_tlast,
      s_tvalid => tx_gated_valid, s_tready => tx_gated_ready, req_id => req_id,
      tx_st_data => tx_st_data, tx_st_hdr => tx_st_hdr, tx_st_tlp_prfx => tx_st_tlp_prfx,
      tx_st_sop => tx_st_sop, tx_st_eop => tx_st_eop, tx_st_valid => tx_st_valid,
      tx_st_err => tx_st_err, tx_st_ready => tx_st_ready);

  ------------------------------------------------------------------ the engine
  i_core : entity work.mprace_dma_core
    generic map (data_w_g => data_w_g, straddle_g => true, clk_mhz_g => clk_mhz_g,
                 c2h_ring_log2_g => c2h_ring_log2_g, h2c_ring_log2_g => h2c_ring_log2_g,
                 cpl_hdr_g => cpl_hdr_g, cpl_data_g => cpl_data_g)
    port map (
      clk => clk, rst => rst,
      reg_wr => reg_wr, reg_rd => reg_rd, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_rdata => reg_rdata, reg_rvalid => reg_rvalid,
      cfg_mps => cfg_mps, cfg_mrrs => cfg_mrrs, cfg_rcb128 => cfg_rcb128,
      msi_vectors => msi_vectors, irq_status => irq_status, irq_enable => irq_enable,
      req_tdata => q_tdata(P_ENGINE_c*DATA_W_c+DATA_W_c-1 downto P_ENGINE_c*DATA_W_c),
      req_tkeep => q_tkeep(P_ENGINE_c*LANES_c+LANES_c-1 downto P_ENGINE_c*LANES_c),
      req_side  => q_side(P_ENGINE_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_ENGINE_c*REQ_SIDE_W_c),
      req_tlast => q_tlast(P_ENGINE_c), req_tvalid => q_tvalid(P_ENGINE_c),
      req_tready => q_tready(P_ENGINE_c),
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      s_axis_c2h_tdata => s_axis_c2h_tdata, s_axis_c2h_tkeep => s_axis_c2h_tkeep,
      s_axis_c2h_tlast => s_axis_c2h_tlast, s_axis_c2h_tvalid => s_axis_c2h_tvalid,
      s_axis_c2h_tready => s_axis_c2h_tready,
      m_axis_h2c_tdata => m_axis_h2c_tdata, m_axis_h2c_tkeep => m_axis_h2c_tkeep,
      m_axis_h2c_tlast => m_axis_h2c_tlast, m_axis_h2c_tvalid => m_axis_h2c_tvalid,
      m_axis_h2c_tready => m_axis_h2c_tready);

end architecture rtl;
