-- SPDX-License-Identifier: GPL-2.0
-- mprace_dword_ring: a ring of 2**depth_log2_g dwords in one dword-wide RAM bank per lane of the
-- datapath (8 at 256 bits, 16 at 512), written and read one beat per clock at any dword position. It lets both data paths work at the
-- 4-byte granule of the spec without a shifter network in front of a wide RAM:
--   write: lane l of wr_data goes to position (wr_pos + l) mod size where wr_en(l) = '1';
--   read : one clock after rd_en, lane l of rd_data is the dword at (rd_pos + l) mod size.
-- A read returns the old contents of a position written in the same clock (read-first); the
-- users only read what was written at least one clock earlier.
-- Bank b holds the positions p with p mod L = b at row p / L (L lanes), so every bank gets one
-- write and one read address per clock (L simple dual-port RAMs, block or distributed).
-- Spec: docs/dma-engine.md (section 3, granularity; section 4, data as a byte stream).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dword_ring is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    depth_log2_g : positive := 12
  );
  port (
    clk     : in  std_logic;
    wr_en   : in  std_logic_vector(data_w_g/32-1 downto 0);
    wr_pos  : in  std_logic_vector(depth_log2_g-1 downto 0);
    wr_data : in  std_logic_vector(data_w_g-1 downto 0);
    rd_en   : in  std_logic;
    rd_pos  : in  std_logic_vector(depth_log2_g-1 downto 0);
    rd_data : out std_logic_vector(data_w_g-1 downto 0) := (others => '0')
  );
end entity mprace_dword_ring;

architecture rtl of mprace_dword_ring is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dword_ring", data_w_g);

  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  constant LANE_W_c : natural := log2ceil(LANES_c);
  constant ROW_W_c  : natural := depth_log2_g - LANE_W_c;

  type bank_data_t is array (0 to LANES_c-1) of dword_t;
  signal bank_q    : bank_data_t := (others => (others => '0'));
  signal rd_rot_q  : unsigned(LANE_W_c-1 downto 0) := (others => '0');

begin

  assert depth_log2_g >= LANE_W_c + 1
    report "mprace_dword_ring: the ring must hold at least two rows of one beat"
    severity failure;

  g_bank : for b in 0 to LANES_c-1 generate
    type mem_t is array (0 to 2**ROW_W_c-1) of dword_t;
    signal mem    : mem_t := (others => (others => '0'));
    signal w_lane : unsigned(LANE_W_c-1 downto 0);
    signal w_row  : unsigned(ROW_W_c-1 downto 0);
    signal r_lane : unsigned(LANE_W_c-1 downto 0);
    signal r_row  : unsigned(ROW_W_c-1 downto 0);
  begin
    -- which input lane lands in this bank, and in which row
    w_lane <= to_unsigned(b, LANE_W_c) - unsigned(wr_pos(LANE_W_c-1 downto 0));
    w_row  <= resize(shift_right(unsigned(wr_pos) + w_lane, LANE_W_c), ROW_W_c);
    r_lane <= to_unsigned(b, LANE_W_c) - unsigned(rd_pos(LANE_W_c-1 downto 0));
    r_row  <= resize(shift_right(unsigned(rd_pos) + r_lane, LANE_W_c), ROW_W_c);

    p_ram : process(clk)
    begin
      if rising_edge(clk) then
        if wr_en(to_integer(w_lane)) = '1' then
          mem(to_integer(w_row)) <= dw(wr_data, to_integer(w_lane));
        end if;
        if rd_en = '1' then
          bank_q(b) <= mem(to_integer(r_row));
        end if;
      end if;
    end process;
  end generate;

  p_rot : process(clk)
  begin
    if rising_edge(clk) then
      if rd_en = '1' then
        rd_rot_q <= unsigned(rd_pos(LANE_W_c-1 downto 0));
      end if;
    end if;
  end process;

  -- output lane l comes from bank (rd_pos + l) mod 8
  p_out : process(all)
  begin
    for l in 0 to LANES_c-1 loop
      rd_data(32*l+31 downto 32*l) <= bank_q(to_integer(rd_rot_q + l));
    end loop;
  end process;

end architecture rtl;
