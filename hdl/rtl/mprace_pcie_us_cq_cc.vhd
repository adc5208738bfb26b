-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_cq_cc: BAR0 programmed I/O. Turns memory requests from the core's completer
-- request interface (s_axis_cq_*) into register accesses and answers reads on the completer
-- completion interface (m_axis_cc_*). One request at a time: a read holds off CQ until its
-- completion has been taken by the core. 256-bit (PG156) or 512-bit UltraScale+ (PG213, no
-- straddling) interface: CQ's descriptor and first byte enables sit in the same place in both.
--   * memory write, 1 dword, all byte enables set: reg_wr of BAR offset addr(11:2)*4;
--     other writes are dropped (the spec allows aligned 32-bit accesses only);
--   * memory read of 1 dword: reg_rd, then a completion with the dword (lower address and
--     byte count follow the first byte enables, as PCIe requires);
--   * memory read of another length: Completer Abort; any other non-posted request:
--     Unsupported Request (the host never waits for an answer that does not come).
-- Spec: docs/dma-engine.md (preamble: "aligned 32-bit reads and writes only"; section 9).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;
use work.mprace_pcie_us_pkg.all;

entity mprace_pcie_us_cq_cc is
  generic (
    data_w_g : positive := 256    -- 256: UltraScale / 7-series Gen3; 512: UltraScale+
  );
  port (
    clk : in  std_logic;
    rst : in  std_logic;
    -- completer request (from the core)
    s_axis_cq_tdata  : in  std_logic_vector(data_w_g-1 downto 0);
    s_axis_cq_tkeep  : in  std_logic_vector(data_w_g/32-1 downto 0);
    s_axis_cq_tuser  : in  std_logic_vector(cq_user_w(data_w_g)-1 downto 0);
    s_axis_cq_tlast  : in  std_logic;
    s_axis_cq_tvalid : in  std_logic;
    s_axis_cq_tready : out std_logic;
    -- completer completion (to the core)
    m_axis_cc_tdata  : out std_logic_vector(data_w_g-1 downto 0);
    m_axis_cc_tkeep  : out std_logic_vector(data_w_g/32-1 downto 0);
    m_axis_cc_tuser  : out std_logic_vector(cc_user_w(data_w_g)-1 downto 0);
    m_axis_cc_tlast  : out std_logic;
    m_axis_cc_tvalid : out std_logic;
    m_axis_cc_tready : in  std_logic;
    -- register bus: reg_rdata is valid with reg_rvalid, at least one clock after reg_rd
    reg_wr     : out std_logic;
    reg_rd     : out std_logic;
    reg_addr   : out std_logic_vector(11 downto 0);
    reg_wdata  : out std_logic_vector(31 downto 0);
    reg_rdata  : in  std_logic_vector(31 downto 0);
    reg_rvalid : in  std_logic
  );
end entity mprace_pcie_us_cq_cc;

architecture rtl of mprace_pcie_us_cq_cc is
  constant datapath_ok_c : boolean := datapath_ok("mprace_pcie_us_cq_cc", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  type state_t is (Idle_s, Drop_s, Read_s, Cpl_s);

  type two_process_r is record
    state     : state_t;
    rd        : std_logic;
    wr        : std_logic;
    addr      : std_logic_vector(11 downto 0);
    wdata     : std_logic_vector(31 downto 0);
    -- what the completion needs from the request
    lower     : std_logic_vector(6 downto 0);
    bytes     : unsigned(12 downto 0);
    status    : std_logic_vector(2 downto 0);
    req_id    : std_logic_vector(15 downto 0);
    tag       : std_logic_vector(7 downto 0);
    tc        : std_logic_vector(2 downto 0);
    attr      : std_logic_vector(2 downto 0);
    cc_valid  : std_logic;
    cc_data   : std_logic_vector(127 downto 0);   -- 3 descriptor dwords + 1 data dword
    cc_keep   : std_logic_vector(LANES_c-1 downto 0);
  end record;
  constant R_INIT_c : two_process_r := (
    state => Idle_s, rd => '0', wr => '0', addr => (others => '0'), wdata => (others => '0'),
    lower => (others => '0'), bytes => (others => '0'), status => CPL_SC_c,
    req_id => (others => '0'), tag => (others => '0'), tc => (others => '0'),
    attr => (others => '0'), cc_valid => '0', cc_data => (others => '0'),
    cc_keep => (others => '0'));

  signal r, r_next : two_process_r := R_INIT_c;

  -- byte offset of the first enabled byte, and the byte count of a 1-dword read (PCIe 2.3.1.1)
  function first_byte(be : std_logic_vector(3 downto 0)) return unsigned is
  begin
    if be(0) = '1' or be = "0000" then return "00";
    elsif be(1) = '1' then return "01";
    elsif be(2) = '1' then return "10";
    else return "11";
    end if;
  end function;

  function byte_count(be : std_logic_vector(3 downto 0)) return unsigned is
  begin
    case be is
      when "1001" | "1011" | "1101" | "1111" => return to_unsigned(4, 13);
      when "0101" | "0111" | "1010" | "1110" => return to_unsigned(3, 13);
      when "0011" | "0110" | "1100"          => return to_unsigned(2, 13);
      when others                            => return to_unsigned(1, 13);
    end case;
  end function;

begin

  p_comb : process(all)
    variable v        : two_process_r;
    variable req      : std_logic_vector(3 downto 0);
    variable dwords   : unsigned(10 downto 0);
    variable first_be : std_logic_vector(3 downto 0);
    variable d        : std_logic_vector(127 downto 0);
  begin
    v := r;
    v.rd := '0';
    v.wr := '0';

    req      := s_axis_cq_tdata(78 downto 75);
    dwords   := unsigned(s_axis_cq_tdata(74 downto 64));
    first_be := s_axis_cq_tuser(3 downto 0);

    case r.state is
      when Idle_s =>
        if s_axis_cq_tvalid = '1' then
          -- first beat of a request: descriptor in dwords 0..3, payload from dword 4
          v.addr   := s_axis_cq_tdata(11 downto 2) & "00";
          v.wdata  := s_axis_cq_tdata(159 downto 128);
          v.req_id := s_axis_cq_tdata(95 downto 80);
          v.tag    := s_axis_cq_tdata(103 downto 96);
          v.tc     := s_axis_cq_tdata(123 downto 121);
          v.attr   := s_axis_cq_tdata(126 downto 124);
          v.lower  := s_axis_cq_tdata(6 downto 2) & std_logic_vector(first_byte(first_be));
          v.bytes  := byte_count(first_be);
          v.status := CPL_SC_c;
          if s_axis_cq_tlast = '1' then
            v.state := Idle_s;
          else
            v.state := Drop_s;      -- payload the engine does not use
          end if;
          if req = REQ_MEM_WRITE_c then
            if dwords = 1 and first_be = "1111" then
              v.wr := '1';
            end if;
          elsif req = REQ_MEM_READ_c and dwords = 1 then
            v.rd    := '1';
            v.state := Read_s;
          elsif req(3) = '0' then
            -- non-posted, and not a 1-dword memory read: a completion without data
            if req = REQ_MEM_READ_c then
              v.status := CPL_CA_c;
            else
              v.status := CPL_UR_c;
            end if;
            if s_axis_cq_tlast = '1' then
              v.state := Cpl_s;
            end if;
          end if;
        end if;

      when Drop_s =>
        -- rest of a multi-beat request (payload the engine does not use)
        if s_axis_cq_tvalid = '1' and s_axis_cq_tlast = '1' then
          if r.status /= CPL_SC_c then
            v.state := Cpl_s;      -- the error completion of a non-posted request
          else
            v.state := Idle_s;
          end if;
        end if;

      when Read_s =>
        if reg_rvalid = '1' then
          v.wdata := reg_rdata;
          v.state := Cpl_s;
        end if;

      when Cpl_s =>
        if r.cc_valid = '0' then
          d := (others => '0');
          d(6 downto 0)    := r.lower;               -- 9:8 address type: 0
          d(28 downto 16)  := std_logic_vector(r.bytes);
          d(45 downto 43)  := r.status;
          d(63 downto 48)  := r.req_id;
          d(71 downto 64)  := r.tag;                 -- completer ID from the core
          d(91 downto 89)  := r.tc;
          d(94 downto 92)  := r.attr;
          if r.status = CPL_SC_c then
            d(42 downto 32)  := "00000000001";
            d(127 downto 96) := r.wdata;
            v.cc_keep := ones(4, LANES_c);
          else
            v.cc_keep := ones(3, LANES_c);
          end if;
          v.cc_data  := d;
          v.cc_valid := '1';
        elsif m_axis_cc_tready = '1' then
          v.cc_valid := '0';
          v.state    := Idle_s;
        end if;
    end case;

    r_next <= v;
  end process;

  s_axis_cq_tready <= '1' when r.state = Idle_s or r.state = Drop_s else '0';

  m_axis_cc_tdata  <= (DATA_W_c-1 downto 128 => '0') & r.cc_data;
  m_axis_cc_tkeep  <= r.cc_keep;
  -- no discontinue, parity not checked; at 512 bits (PG213) the completion starts in lane 0
  -- (is_sop(0)) and ends in one beat (is_eop(0), its last dword in is_eop0_ptr)
  g_cc_user_us : if data_w_g /= 512 generate
    m_axis_cc_tuser <= (others => '0');
  end generate;
  g_cc_user_usp : if data_w_g = 512 generate
    p_cc_user : process(all)
      variable u : std_logic_vector(cc_user_w(data_w_g)-1 downto 0);
    begin
      u := (others => '0');
      u(0) := '1';
      u(6) := '1';
      if r.cc_keep(3) = '1' then
        u(11 downto 8) := "0011";           -- with the data dword
      else
        u(11 downto 8) := "0010";           -- descriptor only
      end if;
      m_axis_cc_tuser <= u;
    end process;
  end generate;
  m_axis_cc_tlast  <= '1';
  m_axis_cc_tvalid <= r.cc_valid;

  reg_wr    <= r.wr;
  reg_rd    <= r.rd;
  reg_addr  <= r.addr;
  reg_wdata <= r.wdata;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.state    <= Idle_s;
        r.rd       <= '0';
        r.wr       <= '0';
        r.cc_valid <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
