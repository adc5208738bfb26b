-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_patgen: the C2H pattern generator (C2H source 1). An endless stream of 32-bit
-- little-endian words, word n after the last PATGEN_SEED write being SEED + n (mod 2**32),
-- a full beat at a time (8 or 16 words), never ending a packet. PATGEN_RATE limits it to that
-- many MB/s (10**6 bytes per second, 0: as fast as the engine takes it) with a token bucket
-- refilled every clock and capped at two beats, so that a stalled link cannot bank bandwidth
-- for a later burst.
-- Spec: docs/dma-engine.md section 7 (test logic).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dma_patgen is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    clk_mhz_g : positive := 250
  );
  port (
    clk      : in  std_logic;
    rst      : in  std_logic;
    seed     : in  std_logic_vector(31 downto 0);
    seed_wr  : in  std_logic;
    rate     : in  std_logic_vector(31 downto 0);
    m_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    m_tvalid : out std_logic;
    m_tready : in  std_logic
  );
end entity mprace_dma_patgen;

architecture rtl of mprace_dma_patgen is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_patgen", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat
  constant BYTES_c  : natural := data_w_g / 8;

  -- a token is 1/clk_mhz_g byte: `rate` tokens per clock are `rate` MB/s
  constant COST_c : natural := BYTES_c * clk_mhz_g;

  type two_process_r is record
    word   : unsigned(31 downto 0);      -- first word of the next beat
    valid  : std_logic;
    data   : std_logic_vector(DATA_W_c-1 downto 0);
    tokens : unsigned(39 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (word => (others => '0'), valid => '0',
    data => (others => '0'), tokens => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;

begin

  p_comb : process(all)
    variable v        : two_process_r;
    variable limit    : boolean;
    variable tokens   : unsigned(39 downto 0);
  begin
    v := r;
    limit := unsigned(rate) /= 0 and unsigned(rate) < COST_c;
    tokens := r.tokens + unsigned(rate);
    if tokens > 2 * COST_c then
      tokens := to_unsigned(2 * COST_c, 40);
    end if;
    if r.valid = '1' and m_tready = '1' then
      v.valid := '0';
    end if;
    if v.valid = '0' and (not limit or tokens >= COST_c) then
      for i in 0 to LANES_c-1 loop
        v.data(32*i+31 downto 32*i) := std_logic_vector(r.word + i);
      end loop;
      v.word  := r.word + LANES_c;
      v.valid := '1';
      if limit then
        tokens := tokens - COST_c;
      end if;
    end if;
    v.tokens := tokens;
    if not limit then
      v.tokens := (others => '0');
    end if;
    if seed_wr = '1' then
      v.word   := unsigned(seed);
      v.valid  := '0';
      v.tokens := (others => '0');
    end if;
    r_next <= v;
  end process;

  m_tdata  <= r.data;
  m_tvalid <= r.valid;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.valid  <= '0';
        r.tokens <= (others => '0');
      end if;
    end if;
  end process;

end architecture rtl;
