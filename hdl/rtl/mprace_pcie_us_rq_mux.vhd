-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_rq_mux: merges the engine's request streams onto the core's requester request
-- interface (m_axis_rq_*). Inputs are complete RQ packets (descriptor + payload, DWORD-aligned
-- mode); the mux grants them round-robin and switches only at packet boundaries. Input
-- bulk_g (the C2H writes) is granted only when no other input offers a packet: the others are
-- one-beat read requests and records, bounded by what the engine has outstanding, and a packet
-- of bulk writes may hold two TLPs when they straddle; so reads keep their share of RQ. The core wants
-- every TLP in consecutive beats (tvalid high from first to last beat); the mux keeps a packet
-- together and adds no gaps, so each input must deliver its packets without gaps, as all the
-- engine's request sources do.
-- `s_sent(p)` pulses when the last beat of a packet of input p has been taken by the core: the
-- engine increments HEAD only after the completion record has left in this way.
-- The inputs carry the engine's sideband (mprace_dma_pkg: the 256-bit interface's layout, first/
-- last byte enables in 7:0, and the straddle fields); the output at 256 bits is its low 60 bits,
-- at 512 bits UltraScale+'s layout (PG213): first/last byte enables of the TLP starting in the
-- beat in 3:0 and 11:8, is_sop(0) with is_sop0_ptr (lane 0, or lane 8 when it straddles), and
-- one or two TLP ends (is_eop, with each one's last lane in is_eop0_ptr / is_eop1_ptr). A beat
-- in which one TLP ends and the next starts belongs to one input's packet, so the mux still
-- switches inputs at tlast only.
-- Spec: docs/dma-engine.md (section 2: record after the data; section 4 step 5).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_us_rq_mux is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    ports_g  : positive := 5;
    bulk_g   : integer := -1      -- the input served last (-1: none)
  );
  port (
    clk            : in  std_logic;
    rst            : in  std_logic;
    s_tdata        : in  std_logic_vector(ports_g*data_w_g-1 downto 0);
    s_tkeep        : in  std_logic_vector(ports_g*data_w_g/32-1 downto 0);
    s_tuser        : in  std_logic_vector(ports_g*RQ_USER_W_c-1 downto 0);
    s_tlast        : in  std_logic_vector(ports_g-1 downto 0);
    s_tvalid       : in  std_logic_vector(ports_g-1 downto 0);
    s_tready       : out std_logic_vector(ports_g-1 downto 0);
    s_sent         : out std_logic_vector(ports_g-1 downto 0);
    m_axis_rq_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    m_axis_rq_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0);
    m_axis_rq_tuser  : out std_logic_vector(rq_user_w(data_w_g)-1 downto 0);
    m_axis_rq_tlast  : out std_logic;
    m_axis_rq_tvalid : out std_logic;
    m_axis_rq_tready : in  std_logic
  );
end entity mprace_pcie_us_rq_mux;

architecture rtl of mprace_pcie_us_rq_mux is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_us_rq_mux", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  constant SEL_W_c : natural := log2ceil(ports_g + 1);
  constant HAS_BULK_c : boolean := bulk_g >= 0 and bulk_g < ports_g;
  function bulk_port return natural is
  begin
    if HAS_BULK_c then
      return bulk_g;
    end if;
    return 0;
  end function;
  constant BULK_c : natural := bulk_port;
  constant ENT_W_c : natural := DATA_W_c + LANES_c + RQ_USER_W_c + 1 + SEL_W_c;

  type two_process_r is record
    locked : std_logic;                     -- inside a packet of port `sel`
    sel    : natural range 0 to ports_g-1;
    last   : natural range 0 to ports_g-1;  -- port granted most recently (round-robin)
    sent   : std_logic_vector(ports_g-1 downto 0);
    o_mid  : std_logic;                     -- the output is inside a packet (not at its start)
  end record;
  constant R_INIT_c : two_process_r := (locked => '0', sel => 0, last => ports_g-1,
                                        sent => (others => '0'), o_mid => '0');

  signal r, r_next   : two_process_r := R_INIT_c;
  signal f_in_valid  : std_logic;
  signal o_user      : std_logic_vector(RQ_USER_W_c-1 downto 0);
  signal o_keep      : std_logic_vector(LANES_c-1 downto 0);
  signal f_in_ready  : std_logic;
  signal f_in_data   : std_logic_vector(ENT_W_c-1 downto 0);
  signal f_out_valid : std_logic;
  signal f_out_data  : std_logic_vector(ENT_W_c-1 downto 0);
  signal grant       : natural range 0 to ports_g-1;
  signal have        : std_logic;

begin

  -- pick the next port after the last one granted that has a beat to offer
  p_grant : process(all)
    variable g : natural range 0 to ports_g-1;
    variable h : std_logic;
    variable p : natural range 0 to 2*ports_g-1;
  begin
    g := r.sel;
    h := '0';
    if r.locked = '1' then
      h := s_tvalid(r.sel);
    else
      for k in 1 to ports_g loop
        -- (last + k) mod ports_g without a divider
        p := r.last + k;
        if p >= ports_g then
          p := p - ports_g;
        end if;
        if h = '0' and s_tvalid(p) = '1' and not (HAS_BULK_c and p = BULK_c) then
          g := p;
          h := '1';
        end if;
      end loop;
      if h = '0' and HAS_BULK_c and s_tvalid(BULK_c) = '1' then
        g := BULK_c;
        h := '1';
      end if;
    end if;
    grant <= g;
    have  <= h;
  end process;

  p_comb : process(all)
    variable v : two_process_r;
  begin
    v := r;
    v.sent := (others => '0');
    if have = '1' and f_in_ready = '1' then
      v.sel  := grant;
      v.last := grant;
      v.locked := not s_tlast(grant);
    end if;
    -- report packets the core has taken
    if f_out_valid = '1' and m_axis_rq_tready = '1' and f_out_data(SEL_W_c) = '1' then
      v.sent(to_integer(unsigned(f_out_data(SEL_W_c-1 downto 0)))) := '1';
    end if;
    if f_out_valid = '1' and m_axis_rq_tready = '1' then
      v.o_mid := not f_out_data(SEL_W_c);
    end if;
    r_next <= v;
  end process;

  p_ready : process(all)
  begin
    s_tready <= (others => '0');
    s_tready(grant) <= have and f_in_ready;
  end process;

  f_in_valid <= have;

  -- one slice per input and a plain select (an index into the concatenation would make a
  -- shifter of the whole input vector in synthesis)
  p_data : process(all)
    variable d : std_logic_vector(ENT_W_c-1 downto 0);
  begin
    d := (others => '0');
    for k in 0 to ports_g-1 loop
      if grant = k then
        d := s_tdata(k*DATA_W_c+DATA_W_c-1 downto k*DATA_W_c) &
             s_tkeep(k*LANES_c+LANES_c-1 downto k*LANES_c) &
             s_tuser(k*RQ_USER_W_c+RQ_USER_W_c-1 downto k*RQ_USER_W_c) &
             s_tlast(k) & std_logic_vector(to_unsigned(k, SEL_W_c));
      end if;
    end loop;
    f_in_data <= d;
  end process;

  i_fifo : entity work.mprace_fifo
    generic map (width_g => ENT_W_c, depth_log2_g => 2)
    port map (
      clk => clk, rst => rst, flush => '0',
      in_valid => f_in_valid, in_ready => f_in_ready, in_data => f_in_data,
      out_valid => f_out_valid, out_ready => m_axis_rq_tready, out_data => f_out_data,
      level => open);

  m_axis_rq_tdata  <= f_out_data(ENT_W_c-1 downto ENT_W_c-DATA_W_c);
  m_axis_rq_tkeep  <= f_out_data(ENT_W_c-DATA_W_c-1 downto ENT_W_c-DATA_W_c-LANES_c);
  o_user <= f_out_data(RQ_USER_W_c+SEL_W_c downto SEL_W_c+1);
  o_keep <= f_out_data(ENT_W_c-DATA_W_c-1 downto ENT_W_c-DATA_W_c-LANES_c);

  g_user_us : if data_w_g /= 512 generate
    m_axis_rq_tuser <= o_user(59 downto 0);
  end generate;

  g_user_usp : if data_w_g = 512 generate
    p_user : process(all)
      variable u : std_logic_vector(rq_user_w(data_w_g)-1 downto 0);
      variable n : natural range 0 to LANES_c;
    begin
      u := (others => '0');
      if r.o_mid = '0' then
        u(3 downto 0)  := o_user(3 downto 0);             -- first_be of the first TLP
        u(11 downto 8) := o_user(7 downto 4);             -- last_be of the first TLP
        u(20) := '1';                                     -- is_sop(0), starting in lane 0
      end if;
      if o_user(RQU_SOP_HI_c) = '1' then
        u(3 downto 0)  := o_user(3 downto 0);
        u(11 downto 8) := o_user(7 downto 4);
        u(20) := '1';
        u(23 downto 22) := "10";                          -- is_sop0_ptr: lane 8
      end if;
      n := 0;
      for l in 0 to LANES_c-1 loop                        -- the last lane with data
        if o_keep(l) = '1' then
          n := l + 1;
        end if;
      end loop;
      if o_user(RQU_EOP_MID_c) = '1' then
        u(26) := '1';                                     -- is_eop(0): the TLP before
        u(31 downto 28) := o_user(RQU_EOP_PTR_c+3 downto RQU_EOP_PTR_c);
        if f_out_data(SEL_W_c) = '1' and n /= 0 then
          u(27) := '1';                                   -- is_eop(1): the one that started
          u(35 downto 32) := std_logic_vector(to_unsigned(n - 1, 4));
        end if;
      elsif f_out_data(SEL_W_c) = '1' and n /= 0 then
        u(26) := '1';                                     -- is_eop(0)
        u(31 downto 28) := std_logic_vector(to_unsigned(n - 1, 4));   -- its last dword
      end if;
      m_axis_rq_tuser <= u;
    end process;
  end generate;
  m_axis_rq_tlast  <= f_out_data(SEL_W_c);
  m_axis_rq_tvalid <= f_out_valid;
  s_sent           <= r.sent;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.locked <= '0';
        r.last   <= ports_g-1;
        r.sent   <= (others => '0');
        r.o_mid  <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
