-- SPDX-License-Identifier: GPL-2.0
-- mprace_fifo: small synchronous first-word-fall-through FIFO with valid/ready handshakes on
-- both sides (distributed RAM). Used for the engine's staging queues: descriptor entries,
-- packet-end positions, issue order of read tags and the output beats of the data paths.
-- `level` counts the stored entries; `flush` empties the FIFO in one clock.
-- Spec: docs/dma-engine.md (section 4, "It may fetch descriptors ahead ... in order").
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

entity mprace_fifo is
  generic (
    width_g      : positive := 8;
    depth_log2_g : positive := 2
  );
  port (
    clk       : in  std_logic;
    rst       : in  std_logic;
    flush     : in  std_logic;
    in_valid  : in  std_logic;
    in_ready  : out std_logic;
    in_data   : in  std_logic_vector(width_g-1 downto 0);
    out_valid : out std_logic;
    out_ready : in  std_logic;
    out_data  : out std_logic_vector(width_g-1 downto 0);
    level     : out unsigned(depth_log2_g downto 0)
  );
end entity mprace_fifo;

architecture rtl of mprace_fifo is

  constant DEPTH_c : positive := 2**depth_log2_g;

  type two_process_r is record
    wr_ptr : unsigned(depth_log2_g downto 0);
    rd_ptr : unsigned(depth_log2_g downto 0);
  end record;
  constant R_INIT_c : two_process_r := (wr_ptr => (others => '0'), rd_ptr => (others => '0'));

  type mem_t is array (0 to DEPTH_c-1) of std_logic_vector(width_g-1 downto 0);
  signal mem : mem_t := (others => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;
  signal push      : std_logic;
  signal full      : std_logic;
  signal empty     : std_logic;

begin

  full  <= '1' when (r.wr_ptr - r.rd_ptr) = DEPTH_c else '0';
  empty <= '1' when r.wr_ptr = r.rd_ptr else '0';
  push  <= in_valid and not full;

  in_ready  <= not full;
  out_valid <= not empty;
  out_data  <= mem(to_integer(r.rd_ptr(depth_log2_g-1 downto 0)));
  level     <= r.wr_ptr - r.rd_ptr;

  p_comb : process(all)
    variable v : two_process_r;
  begin
    v := r;
    if push = '1' then
      v.wr_ptr := r.wr_ptr + 1;
    end if;
    if out_ready = '1' and empty = '0' then
      v.rd_ptr := r.rd_ptr + 1;
    end if;
    if flush = '1' then
      v.rd_ptr := v.wr_ptr;
    end if;
    r_next <= v;
  end process;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if push = '1' then
        mem(to_integer(r.wr_ptr(depth_log2_g-1 downto 0))) <= in_data;
      end if;
      if rst = '1' then
        r <= R_INIT_c;
      end if;
    end if;
  end process;

end architecture rtl;
