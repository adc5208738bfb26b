-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_core: the MPRACE scatter-gather DMA engine without a PCIe block: the register file,
-- both channels, the request mux, the test logic and the user streams. It speaks only the
-- engine's vendor-neutral streams (mprace_dma_pkg) and plain signals; a front end per PCIe block
-- attaches it: mprace_dma_top for the Xilinx blocks.
--   registers     : reg_* (one access at a time; a read answers with reg_rvalid)
--   bus mastering : req_* out (TLP headers and payload), cpl_* in (payload-aligned completions)
--   link settings : cfg_mps / cfg_mrrs in PCIe's encoding (0: 128 bytes .. 5: 4096), cfg_rcb128
--   interrupts    : irq_status / irq_enable out for the front end's interrupt logic, msi_vectors
--                   in (CAPS.MSI_VECTORS: the count the host granted, 0 without MSI)
--   user data     : s_axis_c2h_* in, m_axis_h2c_* out, as at mprace_dma_top
-- straddle_g (512 bits only): C2H writes may start in the second segment of a beat; set it when
-- the front end takes two TLPs per beat (UltraScale+ RQ straddling, the Intel adapters). With
-- it, pack_g lets the request mux start any packet there after one that ended in the first, so
-- a read request or record takes half a beat (mprace_dma_req_mux; it costs about 3,100 LUTs on
-- the Xilinx top, 1,800 on the P-tile's).
-- Spec: docs/dma-engine.md (all sections); the register map is engine_spec_pkg.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_core is
  generic (
    data_w_g        : positive := 256;    -- datapath width: 256 or 512
    straddle_g      : boolean := false;   -- 512: C2H writes use both segments of a beat
    pack_g          : boolean := true;    -- with straddle_g: the request mux packs (above)
    clk_mhz_g       : positive := 250;    -- clk frequency (CLOCK_MHZ, TIMEOUT_US)
    c2h_ring_log2_g : positive := 12;     -- C2H data ring: 2**n dwords (loopback FIFO)
    h2c_ring_log2_g : positive := 12;     -- H2C reassembly ring: 2**n dwords
    cpl_hdr_g       : positive := 64;     -- completion headers the block buffers
    cpl_data_g      : positive := 1024    -- completion data credits of 16 bytes it buffers
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    -- register access (BAR0)
    reg_wr     : in  std_logic;
    reg_rd     : in  std_logic;
    reg_addr   : in  std_logic_vector(11 downto 0);
    reg_wdata  : in  std_logic_vector(31 downto 0);
    reg_rdata  : out std_logic_vector(31 downto 0);
    reg_rvalid : out std_logic;
    -- link settings and interrupts
    cfg_mps     : in  std_logic_vector(2 downto 0);
    cfg_mrrs    : in  std_logic_vector(2 downto 0);
    cfg_rcb128  : in  std_logic;
    msi_vectors : in  std_logic_vector(3 downto 0);
    irq_status  : out std_logic_vector(2 downto 0);
    irq_enable  : out std_logic_vector(2 downto 0);
    -- requests
    req_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    req_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0);
    req_side   : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    req_tlast  : out std_logic;
    req_tvalid : out std_logic;
    req_tready : in  std_logic;
    -- completions
    cpl        : in  cpl_r;
    cpl_data   : in  std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : in  std_logic_vector(data_w_g/32-1 downto 0);
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
end entity mprace_dma_core;

architecture rtl of mprace_dma_core is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_core", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  -- the fetchers' share of the core's completion buffer: one fetch each of up to
  -- FETCH_MAX_DESC_c descriptors (32-byte aligned, so at most one extra completion)
  constant FETCH_HDR_c  : natural := FETCH_MAX_DESC_c * DESC_SIZE_c / 64 + 1;
  constant FETCH_DATA_c : natural := FETCH_MAX_DESC_c * DESC_SIZE_c / 16 + 2 * FETCH_HDR_c;
  constant RD_HDR_c     : natural := cpl_hdr_g - 2 * FETCH_HDR_c;
  constant RD_DATA_c    : natural := cpl_data_g - 2 * FETCH_DATA_c;

  constant SRC_USER_c : std_logic_vector(1 downto 0) := "00";
  constant SRC_GEN_c  : std_logic_vector(1 downto 0) := "01";
  constant SRC_LOOP_c : std_logic_vector(1 downto 0) := "10";

  -- request mux inputs
  constant P_C2H_WR_c : natural := 0;
  constant P_H2C_RD_c : natural := 1;
  constant P_H2C_WB_c : natural := 2;
  constant P_C2H_DF_c : natural := 3;
  constant P_H2C_DF_c : natural := 4;
  constant PORTS_c    : natural := 5;

  signal chan_ctrl      : chan_ctrl_arr_t;
  signal chan_stat      : chan_stat_arr_t;
  signal link           : link_cfg_r;
  signal mps_code       : std_logic_vector(2 downto 0);
  signal mrrs_code      : std_logic_vector(2 downto 0);

  signal soft_reset     : std_logic;
  signal c2h_source     : std_logic_vector(1 downto 0);
  signal h2c_sink       : std_logic_vector(1 downto 0);
  signal c2h_src_chg    : std_logic;
  signal pg_seed        : std_logic_vector(31 downto 0);
  signal pg_seed_wr     : std_logic;
  signal pg_rate        : std_logic_vector(31 downto 0);
  signal ck_seed        : std_logic_vector(31 downto 0);
  signal ck_seed_wr     : std_logic;
  signal ck_errors      : std_logic_vector(31 downto 0);
  signal ck_words       : std_logic_vector(31 downto 0);
  signal data_flush     : std_logic;

  signal us_count       : natural range 0 to clk_mhz_g-1 := 0;
  signal us_tick        : std_logic := '0';

  -- request streams into the request mux
  signal q_tdata        : std_logic_vector(PORTS_c*DATA_W_c-1 downto 0);
  signal q_tkeep        : std_logic_vector(PORTS_c*LANES_c-1 downto 0);
  signal q_side         : std_logic_vector(PORTS_c*REQ_SIDE_W_c-1 downto 0);
  signal q_tlast        : std_logic_vector(PORTS_c-1 downto 0);
  signal q_tvalid       : std_logic_vector(PORTS_c-1 downto 0);
  signal q_tready       : std_logic_vector(PORTS_c-1 downto 0);
  signal q_sent         : std_logic_vector(PORTS_c-1 downto 0);

  -- data streams (dword lanes)
  signal c2h_tdata      : std_logic_vector(DATA_W_c-1 downto 0);
  signal c2h_tkeep      : std_logic_vector(LANES_c-1 downto 0);
  signal c2h_tlast      : std_logic;
  signal c2h_tvalid     : std_logic;
  signal c2h_tready     : std_logic;
  signal h2c_tdata      : std_logic_vector(DATA_W_c-1 downto 0);
  signal h2c_tkeep      : std_logic_vector(LANES_c-1 downto 0);
  signal h2c_tlast      : std_logic;
  signal h2c_tvalid     : std_logic;
  signal h2c_tready     : std_logic;
  signal gen_tdata      : std_logic_vector(DATA_W_c-1 downto 0);
  signal gen_tvalid     : std_logic;
  signal gen_tready     : std_logic;
  signal chk_tvalid     : std_logic;
  signal chk_tready     : std_logic;
  signal user_keep      : std_logic_vector(LANES_c-1 downto 0);

begin

  assert 2**SLOT_W_c = RING_MAX_ENTRIES_c and DESC_RESULT_STATUS_c = DESC_RESULT_BYTES_c + 4
    report "mprace_dma_core: engine_spec_pkg does not match the layout this engine implements"
    severity failure;
  assert 2**c2h_ring_log2_g >= 2 * MAX_MPS_c / 4
    report "mprace_dma_core: the C2H ring must hold two TLPs of the largest MPS (c2h_ring_log2_g >= 9)"
    severity failure;
  assert 2**h2c_ring_log2_g >= 2 * MAX_MRRS_c / 4
    report "mprace_dma_core: the H2C ring must hold two reads of the largest MRRS (h2c_ring_log2_g >= 10)"
    severity failure;
  assert RD_HDR_c >= MAX_MRRS_c / 64 + 1 and
         RD_DATA_c >= MAX_MRRS_c / 16 + 2 * (MAX_MRRS_c / 64 + 1)
    report "mprace_dma_core: cpl_hdr_g/cpl_data_g leave no room for one read of the largest MRRS"
    severity failure;

  -- link settings in use: what the block was configured with, within the engine's limits
  mps_code  <= cfg_mps when unsigned(cfg_mps) <= log2ceil(MAX_MPS_c / 128)
               else std_logic_vector(to_unsigned(log2ceil(MAX_MPS_c / 128), 3));
  mrrs_code <= cfg_mrrs when unsigned(cfg_mrrs) <= log2ceil(MAX_MRRS_c / 128)
               else std_logic_vector(to_unsigned(log2ceil(MAX_MRRS_c / 128), 3));
  link.mps_dw  <= shift_left(to_unsigned(32, 11), to_integer(unsigned(mps_code)));
  link.mrrs_dw <= shift_left(to_unsigned(32, 11), to_integer(unsigned(mrrs_code)));
  link.rcb128  <= cfg_rcb128;

  p_tick : process(clk)
  begin
    if rising_edge(clk) then
      us_tick <= '0';
      if us_count = clk_mhz_g - 1 then
        us_count <= 0;
        us_tick  <= '1';
      else
        us_count <= us_count + 1;
      end if;
    end if;
  end process;

  ------------------------------------------------------------------ registers
  i_regs : entity work.mprace_dma_regs
    generic map (data_w_g => data_w_g, clk_mhz_g => clk_mhz_g)
    port map (
      clk => clk, rst => rst,
      reg_wr => reg_wr, reg_rd => reg_rd, reg_addr => reg_addr, reg_wdata => reg_wdata,
      reg_rdata => reg_rdata, reg_rvalid => reg_rvalid,
      caps_mps => mps_code, caps_mrrs => mrrs_code, caps_msi_vectors => msi_vectors,
      chan_ctrl => chan_ctrl, chan_stat => chan_stat,
      irq_status => irq_status, irq_enable => irq_enable,
      soft_reset => soft_reset, c2h_source => c2h_source, h2c_sink => h2c_sink,
      c2h_src_chg => c2h_src_chg, patgen_seed => pg_seed, patgen_seed_wr => pg_seed_wr,
      patgen_rate => pg_rate, check_seed => ck_seed, check_seed_wr => ck_seed_wr,
      check_errors => ck_errors, check_words => ck_words);

  ------------------------------------------------------------------ channels
  -- the C2H source or the generator's seed changed: drop what the old source left in the ring
  data_flush <= c2h_src_chg or (pg_seed_wr and (c2h_source ?= SRC_GEN_c));

  i_c2h : entity work.mprace_dma_c2h
    generic map (data_w_g => data_w_g, straddle_g => straddle_g and data_w_g = 512,
                 ring_log2_g => c2h_ring_log2_g)
    port map (
      clk => clk, rst => rst, ctrl => chan_ctrl(CH_C2H_c), stat => chan_stat(CH_C2H_c),
      link => link, us_tick => us_tick, data_flush => data_flush,
      s_tdata => c2h_tdata, s_tkeep => c2h_tkeep, s_tlast => c2h_tlast,
      s_tvalid => c2h_tvalid, s_tready => c2h_tready,
      wr_tdata  => q_tdata(P_C2H_WR_c*DATA_W_c+DATA_W_c-1 downto P_C2H_WR_c*DATA_W_c),
      wr_tkeep  => q_tkeep(P_C2H_WR_c*LANES_c+LANES_c-1 downto P_C2H_WR_c*LANES_c),
      wr_side  => q_side(P_C2H_WR_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_C2H_WR_c*REQ_SIDE_W_c),
      wr_tlast  => q_tlast(P_C2H_WR_c), wr_tvalid => q_tvalid(P_C2H_WR_c),
      wr_tready => q_tready(P_C2H_WR_c), wr_sent => q_sent(P_C2H_WR_c),
      df_tdata  => q_tdata(P_C2H_DF_c*DATA_W_c+DATA_W_c-1 downto P_C2H_DF_c*DATA_W_c),
      df_tkeep  => q_tkeep(P_C2H_DF_c*LANES_c+LANES_c-1 downto P_C2H_DF_c*LANES_c),
      df_side  => q_side(P_C2H_DF_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_C2H_DF_c*REQ_SIDE_W_c),
      df_tlast  => q_tlast(P_C2H_DF_c), df_tvalid => q_tvalid(P_C2H_DF_c),
      df_tready => q_tready(P_C2H_DF_c),
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep);

  i_h2c : entity work.mprace_dma_h2c
    generic map (data_w_g => data_w_g, ring_log2_g => h2c_ring_log2_g, hdr_budget_g => RD_HDR_c,
                 data_budget_g => RD_DATA_c)
    port map (
      clk => clk, rst => rst, ctrl => chan_ctrl(CH_H2C_c), stat => chan_stat(CH_H2C_c),
      link => link, us_tick => us_tick,
      m_tdata => h2c_tdata, m_tkeep => h2c_tkeep, m_tlast => h2c_tlast,
      m_tvalid => h2c_tvalid, m_tready => h2c_tready,
      rd_tdata  => q_tdata(P_H2C_RD_c*DATA_W_c+DATA_W_c-1 downto P_H2C_RD_c*DATA_W_c),
      rd_tkeep  => q_tkeep(P_H2C_RD_c*LANES_c+LANES_c-1 downto P_H2C_RD_c*LANES_c),
      rd_side  => q_side(P_H2C_RD_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_H2C_RD_c*REQ_SIDE_W_c),
      rd_tlast  => q_tlast(P_H2C_RD_c), rd_tvalid => q_tvalid(P_H2C_RD_c),
      rd_tready => q_tready(P_H2C_RD_c),
      wb_tdata  => q_tdata(P_H2C_WB_c*DATA_W_c+DATA_W_c-1 downto P_H2C_WB_c*DATA_W_c),
      wb_tkeep  => q_tkeep(P_H2C_WB_c*LANES_c+LANES_c-1 downto P_H2C_WB_c*LANES_c),
      wb_side  => q_side(P_H2C_WB_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_H2C_WB_c*REQ_SIDE_W_c),
      wb_tlast  => q_tlast(P_H2C_WB_c), wb_tvalid => q_tvalid(P_H2C_WB_c),
      wb_tready => q_tready(P_H2C_WB_c), wb_sent => q_sent(P_H2C_WB_c),
      df_tdata  => q_tdata(P_H2C_DF_c*DATA_W_c+DATA_W_c-1 downto P_H2C_DF_c*DATA_W_c),
      df_tkeep  => q_tkeep(P_H2C_DF_c*LANES_c+LANES_c-1 downto P_H2C_DF_c*LANES_c),
      df_side  => q_side(P_H2C_DF_c*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto P_H2C_DF_c*REQ_SIDE_W_c),
      df_tlast  => q_tlast(P_H2C_DF_c), df_tvalid => q_tvalid(P_H2C_DF_c),
      df_tready => q_tready(P_H2C_DF_c),
      cpl => cpl, cpl_data => cpl_data,
      cpl_keep => cpl_keep);

  i_req : entity work.mprace_dma_req_mux
    generic map (data_w_g => data_w_g, ports_g => PORTS_c, bulk_g => P_C2H_WR_c,
                 pack_g => pack_g and straddle_g and data_w_g = 512)
    port map (
      clk => clk, rst => rst,
      s_tdata => q_tdata, s_tkeep => q_tkeep, s_side => q_side, s_tlast => q_tlast,
      s_tvalid => q_tvalid, s_tready => q_tready, s_sent => q_sent,
      m_tdata => req_tdata, m_tkeep => req_tkeep, m_side => req_side, m_tlast => req_tlast,
      m_tvalid => req_tvalid, m_tready => req_tready);

  ------------------------------------------------------------------ test logic and user streams
  i_gen : entity work.mprace_dma_patgen
    generic map (data_w_g => data_w_g, clk_mhz_g => clk_mhz_g)
    port map (
      clk => clk, rst => rst, seed => pg_seed, seed_wr => pg_seed_wr, rate => pg_rate,
      m_tdata => gen_tdata, m_tvalid => gen_tvalid, m_tready => gen_tready);

  i_chk : entity work.mprace_dma_checker
    generic map (data_w_g => data_w_g)
    port map (
      clk => clk, rst => rst, seed => ck_seed, seed_wr => ck_seed_wr,
      s_tdata => h2c_tdata, s_tkeep => h2c_tkeep, s_tvalid => chk_tvalid,
      s_tready => chk_tready, errors => ck_errors, words => ck_words);

  g_keep : for l in 0 to LANES_c-1 generate
    user_keep(l) <= s_axis_c2h_tkeep(4*l);
    m_axis_h2c_tkeep(4*l+3 downto 4*l) <= (others => h2c_tkeep(l));
  end generate;

  -- C2H source: user stream, pattern generator or loopback (which never ends a packet)
  p_src : process(all)
  begin
    c2h_tdata  <= s_axis_c2h_tdata;
    c2h_tkeep  <= user_keep;
    c2h_tlast  <= s_axis_c2h_tlast;
    c2h_tvalid <= s_axis_c2h_tvalid;
    s_axis_c2h_tready <= '0';
    gen_tready <= '0';
    if c2h_source = SRC_GEN_c then
      c2h_tdata  <= gen_tdata;
      c2h_tkeep  <= (others => '1');
      c2h_tlast  <= '0';
      c2h_tvalid <= gen_tvalid;
      gen_tready <= c2h_tready;
    elsif c2h_source = SRC_LOOP_c then
      c2h_tdata  <= h2c_tdata;
      c2h_tkeep  <= h2c_tkeep;
      c2h_tlast  <= '0';
      c2h_tvalid <= h2c_tvalid and (h2c_sink ?= SRC_LOOP_c);
    else
      s_axis_c2h_tready <= c2h_tready;
    end if;
  end process;

  -- H2C sink: user stream, checker or loopback
  p_sink : process(all)
  begin
    m_axis_h2c_tdata  <= h2c_tdata;
    m_axis_h2c_tlast  <= h2c_tlast;
    m_axis_h2c_tvalid <= '0';
    chk_tvalid <= '0';
    h2c_tready <= '0';
    if h2c_sink = SRC_GEN_c then
      chk_tvalid <= h2c_tvalid;
      h2c_tready <= chk_tready;
    elsif h2c_sink = SRC_LOOP_c then
      if c2h_source = SRC_LOOP_c then
        h2c_tready <= c2h_tready;
      end if;
    else
      m_axis_h2c_tvalid <= h2c_tvalid;
      h2c_tready <= m_axis_h2c_tready;
    end if;
  end process;

end architecture rtl;
