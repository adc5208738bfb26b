-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_checker: the H2C pattern checker (H2C sink 1). Takes every beat, compares each
-- received dword with CHECK_SEED + n (n counts dwords since the last CHECK_SEED write) and
-- counts compared words (CHECK_WORDS, wrapping) and mismatches (CHECK_ERRORS, saturating).
-- Beats carry 1 dword to a full beat, contiguous from lane 0, as the H2C channel delivers them.
-- Spec: docs/dma-engine.md section 7 (test logic).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dma_checker is
  generic (
    data_w_g : positive := 256    -- datapath: 256 or 512 bits
  );
  port (
    clk      : in  std_logic;
    rst      : in  std_logic;
    seed     : in  std_logic_vector(31 downto 0);
    seed_wr  : in  std_logic;
    s_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_tvalid : in  std_logic;
    s_tready : out std_logic;
    errors   : out std_logic_vector(31 downto 0);
    words    : out std_logic_vector(31 downto 0)
  );
end entity mprace_dma_checker;

architecture rtl of mprace_dma_checker is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_checker", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  type two_process_r is record
    valid    : std_logic;
    data     : std_logic_vector(DATA_W_c-1 downto 0);
    keep     : std_logic_vector(LANES_c-1 downto 0);
    expected : unsigned(31 downto 0);
    errors   : unsigned(31 downto 0);
    words    : unsigned(31 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (valid => '0', data => (others => '0'),
    keep => (others => '0'), expected => (others => '0'), errors => (others => '0'),
    words => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;

begin

  p_comb : process(all)
    variable v     : two_process_r;
    variable n     : natural range 0 to LANES_c;
    variable bad   : natural range 0 to LANES_c;
    variable sum   : unsigned(32 downto 0);
  begin
    v := r;
    -- stage 1: take the beat
    v.valid := s_tvalid;
    v.data  := s_tdata;
    v.keep  := s_tkeep;
    -- stage 2: compare
    if r.valid = '1' then
      n := 0;
      bad := 0;
      for l in 0 to LANES_c-1 loop
        if r.keep(l) = '1' then
          n := n + 1;
          if unsigned(r.data(32*l+31 downto 32*l)) /= r.expected + l then
            bad := bad + 1;
          end if;
        end if;
      end loop;
      v.expected := r.expected + n;
      v.words    := r.words + n;
      sum := resize(r.errors, 33) + bad;
      if sum(32) = '1' then
        v.errors := (others => '1');
      else
        v.errors := sum(31 downto 0);
      end if;
    end if;
    if seed_wr = '1' then
      v.expected := unsigned(seed);
      v.errors   := (others => '0');
      v.words    := (others => '0');
      v.valid    := '0';
    end if;
    r_next <= v;
  end process;

  s_tready <= '1';
  errors   <= std_logic_vector(r.errors);
  words    <= std_logic_vector(r.words);

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.valid <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
