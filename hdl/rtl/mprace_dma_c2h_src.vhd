-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_c2h_src: the C2H data source side. Takes the selected source stream (user,
-- pattern generator or H2C loopback) into the C2H data ring as a dense stream of dwords and
-- remembers where packets end (tlast), so that the write engine can cut a descriptor there.
-- Beats may carry 1 dword to a full beat (8 or 16), contiguous from lane 0 (s_tkeep per dword
-- lane); beats with no dword are dropped, tlast with them. A full ring or a full queue of
-- packet ends holds off the source (s_tready = '0'); that is also the loopback FIFO stalling
-- H2C.
-- wr_commit trails the writes by a clock so that the write engine never reads a position in
-- the clock it is written; it moves in the same clock as the packet end of those writes
-- appears at eop_pos, which the write engine relies on to never miss a packet end.
-- Spec: docs/dma-engine.md sections 4 ("ends early when the user stream marks the end of a
-- packet") and 7 (loopback).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_dma_c2h_src is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    ring_log2_g : positive := 12;
    eop_log2_g  : positive := 4
  );
  port (
    clk       : in  std_logic;
    rst       : in  std_logic;
    flush     : in  std_logic;
    s_tdata   : in  std_logic_vector(data_w_g-1 downto 0);
    s_tkeep   : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_tlast   : in  std_logic;
    s_tvalid  : in  std_logic;
    s_tready  : out std_logic;
    -- ring write port
    wr_en     : out std_logic_vector(data_w_g/32-1 downto 0);
    wr_pos    : out std_logic_vector(ring_log2_g-1 downto 0);
    wr_data   : out std_logic_vector(data_w_g-1 downto 0);
    -- to the write engine
    rd_pos    : in  pos_t;            -- positions below this one are free again
    wr_commit : out pos_t;            -- positions below this one hold data
    eop_valid : out std_logic;
    eop_pos   : out pos_t;            -- position after the last dword of a packet
    eop_pop   : in  std_logic;
    progress  : out std_logic         -- pulse: data arrived
  );
end entity mprace_dma_c2h_src;

architecture rtl of mprace_dma_c2h_src is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_c2h_src", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  type two_process_r is record
    wr_pos    : pos_t;
    wr_commit : pos_t;
    w_en      : std_logic_vector(LANES_c-1 downto 0);
    w_pos     : pos_t;
    w_data    : std_logic_vector(DATA_W_c-1 downto 0);
    e_push    : std_logic;
    e_pos     : pos_t;
    progress  : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (
    wr_pos => (others => '0'), wr_commit => (others => '0'), w_en => (others => '0'),
    w_pos => (others => '0'), w_data => (others => '0'), e_push => '0',
    e_pos => (others => '0'), progress => '0');

  signal r, r_next   : two_process_r := R_INIT_c;
  signal ready       : std_logic;
  signal e_in_ready  : std_logic;
  signal e_out       : std_logic_vector(31 downto 0);
  signal e_level     : unsigned(eop_log2_g downto 0);

begin

  -- room for a full beat in the ring and for a packet end (counting the one being pushed)
  ready <= '1' when (r.wr_pos + LANES_c - rd_pos) <= 2**ring_log2_g and
                    e_level + 2 <= 2**eop_log2_g and flush = '0' else '0';
  s_tready <= ready;

  p_comb : process(all)
    variable v   : two_process_r;
    variable cnt : natural range 0 to LANES_c;
  begin
    v := r;
    v.w_en     := (others => '0');
    v.e_push   := '0';
    v.progress := '0';
    v.wr_commit := r.wr_pos;
    cnt := count_ones(s_tkeep);
    if s_tvalid = '1' and ready = '1' and cnt /= 0 then
      v.w_en   := s_tkeep;
      v.w_pos  := r.wr_pos;
      v.w_data := s_tdata;
      v.wr_pos := r.wr_pos + cnt;
      v.progress := '1';
      if s_tlast = '1' then
        v.e_push := '1';
        v.e_pos  := r.wr_pos + cnt;
      end if;
    end if;
    if flush = '1' then
      v.wr_pos    := (others => '0');
      v.wr_commit := (others => '0');
      v.w_en      := (others => '0');
      v.e_push    := '0';
    end if;
    r_next <= v;
  end process;

  i_eop : entity work.mprace_fifo
    generic map (width_g => 32, depth_log2_g => eop_log2_g)
    port map (
      clk => clk, rst => rst, flush => flush,
      in_valid => r.e_push, in_ready => e_in_ready, in_data => std_logic_vector(r.e_pos),
      out_valid => eop_valid, out_ready => eop_pop, out_data => e_out, level => e_level);

  eop_pos   <= unsigned(e_out);
  wr_en     <= r.w_en;
  wr_pos    <= std_logic_vector(r.w_pos(ring_log2_g-1 downto 0));
  wr_data   <= r.w_data;
  wr_commit <= r.wr_commit;
  progress  <= r.progress;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.wr_pos    <= (others => '0');
        r.wr_commit <= (others => '0');
        r.w_en      <= (others => '0');
        r.e_push    <= '0';
        r.progress  <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
