-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_rq: the engine's request stream (mprace_dma_pkg: a PCIe TLP header in a 4-dword
-- slot, then the payload) on the block's requester request interface (m_axis_rq_*, DWORD-aligned
-- mode). Each header becomes the RQ descriptor in the same four lanes, so the payload stays where
-- it is, and its byte enables move to the sideband: at 256 bits (PG156) first/last byte enables
-- in 3:0 / 7:4 on every beat of the TLP; at 512 bits UltraScale+'s layout (PG213): the byte
-- enables of the TLPs starting in the beat in 3:0 / 11:8 and 7:4 / 15:12, is_sop with
-- is_sop0_ptr / is_sop1_ptr (lane 0, or lane 8 when it straddles), and one or two TLP ends (is_eop, with each one's last lane in
-- is_eop0_ptr / is_eop1_ptr), from the stream's side bits and keep.
-- Combinational but for one flag (inside a packet) and, at 256 bits, the byte enables of the
-- TLP in progress: it adds no clock and no bubble.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity mprace_pcie_us_rq is
  generic (
    data_w_g : positive := 256    -- 256: UltraScale / 7-series Gen3; 512: UltraScale+
  );
  port (
    clk      : in  std_logic;
    rst      : in  std_logic;
    s_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_side   : in  std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    s_tlast  : in  std_logic;
    s_tvalid : in  std_logic;
    s_tready : out std_logic;
    m_axis_rq_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    m_axis_rq_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0);
    m_axis_rq_tuser  : out std_logic_vector(rq_user_w(data_w_g)-1 downto 0);
    m_axis_rq_tlast  : out std_logic;
    m_axis_rq_tvalid : out std_logic;
    m_axis_rq_tready : in  std_logic
  );
end entity mprace_pcie_us_rq;

architecture rtl of mprace_pcie_us_rq is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_us_rq", data_w_g);

  constant LANES_c : natural := data_w_g / 32;   -- dwords per beat
  constant HALF_c  : natural := LANES_c / 2;     -- where a straddled TLP starts (512 bits)

  signal mid    : std_logic := '0';               -- inside a packet (not at its first beat)
  signal be_q   : std_logic_vector(7 downto 0) := (others => '0');   -- last & first BE held
  signal be_now : std_logic_vector(7 downto 0);
  signal hdr_lo : std_logic_vector(127 downto 0);
begin

  hdr_lo <= s_tdata(127 downto 0);
  be_now <= tlp_last_be(hdr_lo) & tlp_first_be(hdr_lo) when mid = '0' else be_q;

  p_data : process(all)
    variable d : std_logic_vector(data_w_g-1 downto 0);
  begin
    d := s_tdata;
    if mid = '0' then
      d(127 downto 0) := rq_desc(hdr_lo);
    end if;
    if LANES_c = 16 and s_side(REQ_SOP_HI_c) = '1' then
      d(32*HALF_c+127 downto 32*HALF_c) := rq_desc(s_tdata(32*HALF_c+127 downto 32*HALF_c));
    end if;
    m_axis_rq_tdata <= d;
  end process;

  g_user_us : if data_w_g /= 512 generate
    p_user : process(all)
      variable u : std_logic_vector(rq_user_w(data_w_g)-1 downto 0);
    begin
      u := (others => '0');
      u(7 downto 0) := be_now;                            -- last_be & first_be
      m_axis_rq_tuser <= u;
    end process;
  end generate;

  g_user_usp : if data_w_g = 512 generate
    p_user : process(all)
      variable u  : std_logic_vector(rq_user_w(data_w_g)-1 downto 0);
      variable n  : natural range 0 to LANES_c;
      variable hh : std_logic_vector(127 downto 0);
    begin
      u := (others => '0');
      if mid = '0' then
        u(3 downto 0)  := tlp_first_be(hdr_lo);           -- first_be of the first TLP
        u(11 downto 8) := tlp_last_be(hdr_lo);            -- last_be of the first TLP
        u(20) := '1';                                     -- is_sop(0), starting in lane 0
      end if;
      if s_side(REQ_SOP_HI_c) = '1' then
        hh := s_tdata(32*HALF_c+127 downto 32*HALF_c);
        if mid = '0' then                                 -- the second TLP starting here
          u(7 downto 4)   := tlp_first_be(hh);
          u(15 downto 12) := tlp_last_be(hh);
          u(21) := '1';                                   -- is_sop(1)
          u(25 downto 24) := "10";                        -- is_sop1_ptr: lane 8
        else                                              -- the only one
          u(3 downto 0)  := tlp_first_be(hh);
          u(11 downto 8) := tlp_last_be(hh);
          u(20) := '1';
          u(23 downto 22) := "10";                        -- is_sop0_ptr: lane 8
        end if;
      end if;
      n := 0;
      for l in 0 to LANES_c-1 loop                        -- the last lane with data
        if s_tkeep(l) = '1' then
          n := l + 1;
        end if;
      end loop;
      if s_side(REQ_EOP_MID_c) = '1' then
        u(26) := '1';                                     -- is_eop(0): the TLP before
        u(31 downto 28) := s_side(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c);
        if s_tlast = '1' and n /= 0 then
          u(27) := '1';                                   -- is_eop(1): the one that started
          u(35 downto 32) := std_logic_vector(to_unsigned(n - 1, 4));
        end if;
      elsif s_tlast = '1' and n /= 0 then
        u(26) := '1';                                     -- is_eop(0)
        u(31 downto 28) := std_logic_vector(to_unsigned(n - 1, 4));   -- its last dword
      end if;
      m_axis_rq_tuser <= u;
    end process;
  end generate;

  m_axis_rq_tkeep  <= s_tkeep;
  m_axis_rq_tlast  <= s_tlast;
  m_axis_rq_tvalid <= s_tvalid;
  s_tready         <= m_axis_rq_tready;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      if s_tvalid = '1' and m_axis_rq_tready = '1' then
        mid  <= not s_tlast;
        be_q <= be_now;
      end if;
      if rst = '1' then
        mid <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
