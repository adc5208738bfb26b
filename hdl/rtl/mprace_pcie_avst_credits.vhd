-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_avst_credits: holds the engine's request stream at the start of a TLP until the
-- link partner has credit for it, as the P-tile's transmit credit interface reports it.
--   * tx_cdts_limit carries, one type per clock as tx_cdts_limit_tdm_idx names it, the credit
--     limit the partner advertised (a running count, PCIe's CREDIT_LIMIT): 0 posted headers,
--     1 non-posted headers, 2 completion headers (12 bits), 4 posted data, 5 non-posted data,
--     6 completion data (16 bits, 16 bytes per credit).
--   * This gate counts what it lets through (CREDITS_CONSUMED) and passes a beat that starts a
--     TLP (two, when the second starts in lane 8) only if every type it needs satisfies
--     (limit - (consumed + needed)) mod 2^n <= 2^(n-1) (PCIe base specification, flow control).
--     A type whose limit has read 0 since reset is infinite (advertised as 0).
--   * A TLP counts when it enters the transmit adapter, before it reaches the link: beats the
--     adapter still holds have been counted.
--   * Memory writes are posted (header + payload), memory reads non-posted (header),
--     completions (header + payload) take completion credit.
-- Data and side bits pass unchanged; only tvalid and tready are gated, and a beat once offered
-- stays offered (credit only grows while it waits).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_avst_credits is
  generic (
    data_w_g : positive := 256
  );
  port (
    clk      : in  std_logic;
    rst      : in  std_logic;
    -- the request stream (mprace_dma_pkg): headers in 4-dword slots
    s_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_side   : in  std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    s_tlast  : in  std_logic;
    s_tvalid : in  std_logic;
    s_tready : out std_logic;
    -- ... on to the transmit adapter
    m_tvalid : out std_logic;
    m_tready : in  std_logic;
    -- the IP's transmit credit limits
    tx_cdts_limit         : in std_logic_vector(15 downto 0);
    tx_cdts_limit_tdm_idx : in std_logic_vector(2 downto 0)
  );
end entity mprace_pcie_avst_credits;

architecture rtl of mprace_pcie_avst_credits is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_avst_credits", data_w_g);

  -- credit types, in the order of tx_cdts_limit_tdm_idx (0-2 headers, 4-6 data)
  constant PH_c : natural := 0;
  constant NPH_c : natural := 1;
  constant CPLH_c : natural := 2;
  constant PD_c : natural := 4;
  constant NPD_c : natural := 5;
  constant CPLD_c : natural := 6;
  type counts_t is array (0 to 7) of unsigned(15 downto 0);

  -- field widths: 12 bits for headers, 16 for data
  function field_mask(t : natural) return unsigned is
  begin
    if t < 4 then
      return x"0FFF";
    end if;
    return x"FFFF";
  end function;

  signal limit    : counts_t := (others => (others => '0'));
  signal consumed : counts_t := (others => (others => '0'));
  signal seen     : std_logic_vector(0 to 7) := (others => '0');   -- a non-zero limit came
  signal in_tlp   : std_logic := '0';      -- the next beat continues a TLP
  signal need     : counts_t;              -- what the beat offered now starts
  signal ok       : std_logic;

  -- the credits one TLP needs, from the header in its slot (dword 0 in bits 31:0)
  procedure add_need(variable n : inout counts_t; slot : std_logic_vector(127 downto 0)) is
    variable d   : unsigned(15 downto 0);
    variable h, dt : natural;
  begin
    d := (others => '0');
    if tlp_is_write(slot) then                               -- with payload
      d := resize(shift_right(tlp_dwords(slot) + 3, 2), 16);
    end if;
    if slot(28 downto 24) = "01010" then
      h := CPLH_c;
      dt := CPLD_c;
    elsif tlp_is_write(slot) then
      h := PH_c;
      dt := PD_c;
    else
      h := NPH_c;
      dt := NPD_c;
    end if;
    n(h)  := n(h) + 1;
    n(dt) := n(dt) + d;
  end procedure;

  -- lanes 8 to 11 of a 512-bit beat
  function upper_slot(d : std_logic_vector) return std_logic_vector is
    variable s : std_logic_vector(127 downto 0) := (others => '0');
  begin
    if d'length >= 384 then
      s := d(d'low+383 downto d'low+256);
    end if;
    return s;
  end function;

begin

  p_need : process(all)
    variable n : counts_t;
  begin
    n := (others => (others => '0'));
    if in_tlp = '0' then
      add_need(n, s_tdata(127 downto 0));
    end if;
    if data_w_g = 512 and s_side(REQ_SOP_HI_c) = '1' then
      add_need(n, upper_slot(s_tdata));          -- a TLP starting in lane 8
    end if;
    need <= n;
  end process;

  p_ok : process(all)
    variable k : std_logic;
    variable left : unsigned(15 downto 0);
  begin
    k := '1';
    for t in 0 to 7 loop
      left := (limit(t) - consumed(t) - need(t)) and field_mask(t);
      if seen(t) = '1' and need(t) /= 0 and left > shift_right(field_mask(t), 1) + 1 then
        k := '0';
      end if;
    end loop;
    ok <= k;
  end process;

  m_tvalid <= s_tvalid and ok;
  s_tready <= m_tready and ok;

  p_count : process(clk)
    variable t : natural range 0 to 7;
  begin
    if rising_edge(clk) then
      t := to_integer(unsigned(tx_cdts_limit_tdm_idx));
      limit(t) <= unsigned(tx_cdts_limit) and field_mask(t);
      if (unsigned(tx_cdts_limit) and field_mask(t)) /= 0 then
        seen(t) <= '1';
      end if;
      if s_tvalid = '1' and ok = '1' and m_tready = '1' then
        for k in 0 to 7 loop
          consumed(k) <= (consumed(k) + need(k)) and field_mask(k);
        end loop;
        in_tlp <= not s_tlast;
      end if;
      if rst = '1' then
        limit    <= (others => (others => '0'));
        consumed <= (others => (others => '0'));
        seen     <= (others => '0');
        in_tlp   <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
