-- mprace_pcie_us_rc: the requester completion interface (s_axis_rc_*, 256 or 512 bits, no
-- straddling, DWORD-aligned) as a registered stream of completion beats with the descriptor fields
-- repeated on every beat of a TLP. The engine always takes completions (tready = 1): every
-- read it issues has room reserved for its data, so nothing waits on the interface.
-- Payload dword k of a completion sits in lane k+3 of the stream (the 3-dword descriptor
-- comes first); cpl_keep marks the payload lanes of each beat.
-- Spec: docs/dma-engine.md section 5 (BUS_ERROR, TIMEOUT from read completions).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

entity mprace_pcie_us_rc is
  generic (
    data_w_g : positive := 256    -- 256: UltraScale / 7-series Gen3; 512: UltraScale+
  );
  port (
    clk : in  std_logic;
    rst : in  std_logic;
    s_axis_rc_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_rc_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_rc_tuser  : in  std_logic_vector(rc_user_w(data_w_g)-1 downto 0);
    s_axis_rc_tlast  : in  std_logic;
    s_axis_rc_tvalid : in  std_logic;
    s_axis_rc_tready : out std_logic;
    cpl_valid  : out std_logic;
    cpl_sop    : out std_logic;
    cpl_eop    : out std_logic;
    cpl_tag    : out unsigned(7 downto 0);
    cpl_err    : out std_logic_vector(3 downto 0);   -- descriptor error code, 0: normal
    cpl_done   : out std_logic;                      -- last completion of its request
    cpl_bytes  : out unsigned(12 downto 0);          -- bytes of the request still to come
    cpl_dwords : out unsigned(10 downto 0);          -- payload dwords of this completion
    cpl_data   : out std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : out std_logic_vector(data_w_g/32-1 downto 0)
  );
end entity mprace_pcie_us_rc;

architecture rtl of mprace_pcie_us_rc is

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  type two_process_r is record
    in_tlp : std_logic;
    valid  : std_logic;
    sop    : std_logic;
    eop    : std_logic;
    tag    : unsigned(7 downto 0);
    err    : std_logic_vector(3 downto 0);
    done   : std_logic;
    bytes  : unsigned(12 downto 0);
    dwords : unsigned(10 downto 0);
    data   : std_logic_vector(DATA_W_c-1 downto 0);
    keep   : std_logic_vector(LANES_c-1 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (
    in_tlp => '0', valid => '0', sop => '0', eop => '0', tag => (others => '0'),
    err => (others => '0'), done => '0', bytes => (others => '0'), dwords => (others => '0'),
    data => (others => '0'), keep => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;

begin

  p_comb : process(all)
    variable v : two_process_r;
  begin
    v := r;
    v.valid := s_axis_rc_tvalid;
    if s_axis_rc_tvalid = '1' then
      v.sop  := not r.in_tlp;
      v.eop  := s_axis_rc_tlast;
      v.data := s_axis_rc_tdata;
      v.keep := s_axis_rc_tkeep;
      if r.in_tlp = '0' then
        v.err    := s_axis_rc_tdata(15 downto 12);
        v.bytes  := unsigned(s_axis_rc_tdata(28 downto 16));
        v.done   := s_axis_rc_tdata(30);
        v.dwords := unsigned(s_axis_rc_tdata(42 downto 32));
        v.tag    := unsigned(s_axis_rc_tdata(71 downto 64));
        v.keep(2 downto 0) := "000";    -- the descriptor
      end if;
      v.in_tlp := not s_axis_rc_tlast;
    end if;
    r_next <= v;
  end process;

  s_axis_rc_tready <= '1';
  cpl_valid  <= r.valid;
  cpl_sop    <= r.sop;
  cpl_eop    <= r.eop;
  cpl_tag    <= r.tag;
  cpl_err    <= r.err;
  cpl_done   <= r.done;
  cpl_bytes  <= r.bytes;
  cpl_dwords <= r.dwords;
  cpl_data   <= r.data;
  cpl_keep   <= r.keep;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.in_tlp <= '0';
        r.valid  <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
