-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_req_mux: merges the engine's request streams (mprace_dma_pkg: PCIe TLP headers and
-- payload, vendor-neutral) into the one stream the vendor adapter puts on the block's requester
-- interface. It grants the inputs round-robin and switches only at packet boundaries. Input
-- bulk_g (the C2H writes) is granted only when no other input offers a packet: the others are
-- one-beat read requests and records, bounded by what the engine has outstanding, and a packet
-- of bulk writes may hold two TLPs when they share a beat; so reads keep their share of the
-- link. Blocks want every TLP in consecutive beats; the mux keeps a packet together and adds no
-- gaps, so each input must deliver its packets without gaps, as all the engine's request
-- sources do. Data, keep and side bits pass unchanged.
-- `s_sent(p)` pulses when the last beat of a packet of input p has been taken (m_tready): the
-- engine increments HEAD only after the completion record has left in this way.
-- Spec: docs/dma-engine.md (section 2: record after the data; section 4 step 5).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dma_req_mux is
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
    s_side         : in  std_logic_vector(ports_g*REQ_SIDE_W_c-1 downto 0);
    s_tlast        : in  std_logic_vector(ports_g-1 downto 0);
    s_tvalid       : in  std_logic_vector(ports_g-1 downto 0);
    s_tready       : out std_logic_vector(ports_g-1 downto 0);
    s_sent         : out std_logic_vector(ports_g-1 downto 0);
    m_tdata        : out std_logic_vector(data_w_g-1 downto 0);
    m_tkeep        : out std_logic_vector(data_w_g/32-1 downto 0);
    m_side         : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    m_tlast        : out std_logic;
    m_tvalid       : out std_logic;
    m_tready       : in  std_logic
  );
end entity mprace_dma_req_mux;

architecture rtl of mprace_dma_req_mux is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_req_mux", data_w_g);

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
  constant ENT_W_c : natural := DATA_W_c + LANES_c + REQ_SIDE_W_c + 1 + SEL_W_c;

  type two_process_r is record
    locked : std_logic;                     -- inside a packet of port `sel`
    sel    : natural range 0 to ports_g-1;
    last   : natural range 0 to ports_g-1;  -- port granted most recently (round-robin)
    sent   : std_logic_vector(ports_g-1 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (locked => '0', sel => 0, last => ports_g-1,
                                        sent => (others => '0'));

  signal r, r_next   : two_process_r := R_INIT_c;
  signal f_in_valid  : std_logic;
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
    if f_out_valid = '1' and m_tready = '1' and f_out_data(SEL_W_c) = '1' then
      v.sent(to_integer(unsigned(f_out_data(SEL_W_c-1 downto 0)))) := '1';
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
             s_side(k*REQ_SIDE_W_c+REQ_SIDE_W_c-1 downto k*REQ_SIDE_W_c) &
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
      out_valid => f_out_valid, out_ready => m_tready, out_data => f_out_data,
      level => open);

  m_tdata  <= f_out_data(ENT_W_c-1 downto ENT_W_c-DATA_W_c);
  m_tkeep  <= f_out_data(ENT_W_c-DATA_W_c-1 downto ENT_W_c-DATA_W_c-LANES_c);
  m_side  <= f_out_data(REQ_SIDE_W_c+SEL_W_c downto SEL_W_c+1);
  m_tlast  <= f_out_data(SEL_W_c);
  m_tvalid <= f_out_valid;
  s_sent           <= r.sent;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.locked <= '0';
        r.last   <= ports_g-1;
        r.sent   <= (others => '0');
      end if;
    end if;
  end process;

end architecture rtl;
