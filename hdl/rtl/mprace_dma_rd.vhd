-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_rd: the H2C read engine, keyed by tag. It splits each job (host address, length,
-- ring position) into memory read requests and writes their completions into the H2C data
-- ring, each at the place its tag remembers, so split and reordered completions need no
-- separate reordering pass. It then releases the data in request order (ready_pos).
--   * A request never exceeds MRRS and never crosses an MRRS-aligned boundary (hence no 4 KiB
--     boundary); it is issued only when a tag is free, its data fits in the ring between
--     space_base and space_base + ring size, and the completions it may cause fit in the core's
--     completion buffer: for each request the engine reserves the worst case of completions
--     split at every read completion boundary (headers) and their data credits, and returns
--     them when the request completes. This keeps the core from dropping completions whatever
--     the host does, as the PCIe blocks require of the user logic.
--   * A completion with an error (UR, CA, poisoned: BUS_ERROR; the core's completion timeout:
--     TIMEOUT) marks its request failed; when the failed request is the oldest one, err_valid
--     tells the channel at which ring position data stops.
--   * discard (abort, timeout, reset) forgets the job and all data in flight; tags in flight
--     stay busy until their completions arrive (or the core times them out), then are freed.
-- Spec: docs/dma-engine.md sections 3 (MRRS, 4 KiB), 4 (H2C step 4) and 5 (BUS_ERROR, TIMEOUT,
-- "keeps STATUS.BUSY set until outstanding read completions have arrived or timed out").
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_rd is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    ring_log2_g   : positive := 12;
    tag_first_g   : natural  := FIRST_DATA_TAG_c;
    tag_count_g   : positive := TAG_COUNT_c - FIRST_DATA_TAG_c;
    hdr_budget_g  : positive := 54;      -- completion headers the engine may have in flight
    data_budget_g : positive := 972      -- completion data credits (16 bytes + 1 per TLP)
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    link       : in  link_cfg_r;
    -- jobs
    job_valid  : in  std_logic;
    job_ready  : out std_logic;
    job_addr   : in  std_logic_vector(63 downto 0);
    job_len    : in  len_t;
    job_pos    : in  pos_t;
    space_base : in  pos_t;
    discard    : in  std_logic;
    -- read requests
    req_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    req_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    req_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    req_tlast   : out std_logic;
    req_tvalid  : out std_logic;
    req_tready  : in  std_logic;
    -- completions
    cpl        : in  cpl_r;
    cpl_data   : in  std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : in  std_logic_vector(data_w_g/32-1 downto 0);
    -- ring write port
    ring_wr_en   : out std_logic_vector(data_w_g/32-1 downto 0);
    ring_wr_pos  : out std_logic_vector(ring_log2_g-1 downto 0);
    ring_wr_data : out std_logic_vector(data_w_g-1 downto 0);
    -- results
    ready_pos  : out pos_t;          -- every position below holds its data
    err_valid  : out std_logic;      -- the request at err_pos failed
    err_pos    : out pos_t;
    err_code   : out code_t;
    busy       : out std_logic;      -- tags in flight (discarded ones included)
    waiting    : out std_logic;      -- requests in flight whose data is wanted
    cpl_seen   : out std_logic;      -- pulse: a completion beat for this engine arrived
    idle       : out std_logic       -- no job and no tag in flight
  );
end entity mprace_dma_rd;

architecture rtl of mprace_dma_rd is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_rd", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  constant TAG_W_c : natural := log2ceil(tag_count_g);
  -- the budget counters hold what is in use plus one more request's worth (p_hdr, p_data)
  constant HDR_CNT_W_c  : natural := log2ceil(hdr_budget_g + 2**7);
  constant DATA_CNT_W_c : natural := log2ceil(data_budget_g + 2**10);

  type err_arr_t  is array (0 to tag_count_g-1) of std_logic_vector(CPL_ERR_W_c-1 downto 0);

  -- what a tag remembers about its request (a small RAM, written when the tag is issued)
  type tag_entry_r is record
    pos  : pos_t;                    -- ring position of the first byte
    len  : unsigned(12 downto 0);    -- bytes
    hdr  : unsigned(6 downto 0);     -- completion headers reserved
    data : unsigned(9 downto 0);     -- completion data credits reserved
  end record;
  constant TAG_ENTRY_INIT_c : tag_entry_r := (pos => (others => '0'), len => (others => '0'),
    hdr => (others => '0'), data => (others => '0'));
  type tag_mem_t is array (0 to tag_count_g-1) of tag_entry_r;

  type two_process_r is record
    -- job being split into requests
    j_active  : std_logic;
    j_addr    : unsigned(63 downto 0);
    j_rem     : len_t;
    j_pos     : pos_t;
    -- plan of the next request
    p_ok      : std_logic;
    p_len     : unsigned(12 downto 0);     -- bytes
    p_hdr     : unsigned(6 downto 0);
    p_data    : unsigned(9 downto 0);
    -- request beat
    req_valid : std_logic;
    req_addr  : std_logic_vector(63 downto 0);
    req_dw    : unsigned(10 downto 0);
    req_tag   : natural range 0 to TAG_COUNT_c-1;
    push      : std_logic;
    push_tag  : unsigned(TAG_W_c-1 downto 0);
    -- tags
    t_busy    : std_logic_vector(0 to tag_count_g-1);
    t_done    : std_logic_vector(0 to tag_count_g-1);
    t_disc    : std_logic_vector(0 to tag_count_g-1);
    t_err     : err_arr_t;
    tw_en     : std_logic;                 -- write tw_entry to the tag table
    tw_tag    : natural range 0 to tag_count_g-1;
    tw_entry  : tag_entry_r;
    hdr_used  : unsigned(HDR_CNT_W_c-1 downto 0);
    data_used : unsigned(DATA_CNT_W_c-1 downto 0);
    -- completion in progress
    c_tag     : natural range 0 to tag_count_g-1;
    c_act     : std_logic;                 -- the completion belongs to a tag in flight
    c_wr      : std_logic;
    c_pos     : pos_t;
    -- ring write
    w_en      : std_logic_vector(LANES_c-1 downto 0);
    w_pos     : pos_t;
    w_data    : std_logic_vector(DATA_W_c-1 downto 0);
    -- in-order release
    ready_pos : pos_t;
    err_valid : std_logic;
    err_pos   : pos_t;
    err_code  : code_t;
    seen      : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (
    j_active => '0', j_addr => (others => '0'), j_rem => (others => '0'),
    j_pos => (others => '0'), p_ok => '0', p_len => (others => '0'), p_hdr => (others => '0'),
    p_data => (others => '0'), req_valid => '0', req_addr => (others => '0'),
    req_dw => (others => '0'), req_tag => 0, push => '0', push_tag => (others => '0'),
    t_busy => (others => '0'), t_done => (others => '0'), t_disc => (others => '0'),
    t_err => (others => (others => '0')), tw_en => '0', tw_tag => 0,
    tw_entry => TAG_ENTRY_INIT_c, hdr_used => (others => '0'),
    data_used => (others => '0'), c_tag => 0, c_act => '0', c_wr => '0', c_pos => (others => '0'),
    w_en => (others => '0'), w_pos => (others => '0'), w_data => (others => '0'),
    ready_pos => (others => '0'), err_valid => '0', err_pos => (others => '0'),
    err_code => (others => '0'), seen => '0');

  signal r, r_next   : two_process_r := R_INIT_c;
  signal tags        : tag_mem_t := (others => TAG_ENTRY_INIT_c);
  signal ord_valid   : std_logic;
  signal ord_ready   : std_logic;
  signal ord_data    : std_logic_vector(TAG_W_c-1 downto 0);

  function umin(a, b : unsigned) return unsigned is
  begin
    if a < b then return a; else return b; end if;
  end function;

begin

  assert hdr_budget_g >= MAX_MRRS_c / 64 + 1 and
         data_budget_g >= MAX_MRRS_c / 16 + 2 * (MAX_MRRS_c / 64 + 1)
    report "mprace_dma_rd: the completion budget cannot hold one read request of the largest MRRS"
    severity failure;

  p_comb : process(all)
    variable v       : two_process_r;
    variable mrrs    : unsigned(12 downto 0);
    variable len     : unsigned(12 downto 0);
    variable blocks  : unsigned(13 downto 0);
    variable free    : integer range -1 to tag_count_g-1;
    variable issue   : boolean;
    variable hdr_add, hdr_sub   : unsigned(HDR_CNT_W_c-1 downto 0);
    variable dat_add, dat_sub   : unsigned(DATA_CNT_W_c-1 downto 0);
    variable t       : integer range -1 to tag_count_g-1;
    variable h       : natural range 0 to tag_count_g-1;
  begin
    v := r;
    v.push := '0';
    v.seen := '0';
    v.tw_en := '0';
    v.w_en := (others => '0');
    hdr_add := (others => '0');
    hdr_sub := (others => '0');
    dat_add := (others => '0');
    dat_sub := (others => '0');

    ------------------------------------------------------------------ plan the next request
    mrrs := shift_left(resize(link.mrrs_dw, 13), 2);
    len := mrrs - (r.j_addr(12 downto 0) and (mrrs - 1));
    len := resize(umin(resize(len, DESC_LEN_BYTES_WIDTH_c), r.j_rem), 13);
    v.p_len := len;
    -- worst case: a completion for every read completion boundary the request touches
    if link.rcb128 = '1' then
      blocks := shift_right(resize(r.j_addr(6 downto 0), 14) + len + 127, 7);
    else
      blocks := shift_right(resize(r.j_addr(5 downto 0), 14) + len + 63, 6);
    end if;
    v.p_hdr  := resize(blocks, 7);
    v.p_data := resize(shift_right(resize(len, 14) + 15, 4) + shift_left(blocks, 1), 10);
    v.p_ok   := r.j_active;

    ------------------------------------------------------------------ issue
    free := -1;
    for k in tag_count_g-1 downto 0 loop
      if r.t_busy(k) = '0' then
        free := k;
      end if;
    end loop;

    if r.req_valid = '1' and req_tready = '1' then
      v.req_valid := '0';
    end if;
    issue := r.p_ok = '1' and r.j_active = '1' and (r.req_valid = '0' or req_tready = '1') and
             free >= 0 and discard = '0' and
             (r.j_pos + shift_right(r.p_len, 2)) - space_base <= 2**ring_log2_g and
             r.hdr_used + r.p_hdr <= hdr_budget_g and r.data_used + r.p_data <= data_budget_g;
    if issue then
      v.req_valid := '1';
      v.req_addr  := std_logic_vector(r.j_addr);
      v.req_dw    := resize(shift_right(r.p_len, 2), 11);
      v.req_tag   := tag_first_g + free;
      v.push      := '1';
      v.push_tag  := to_unsigned(free, TAG_W_c);
      v.t_busy(free) := '1';
      v.t_done(free) := '0';
      v.t_disc(free) := '0';
      v.t_err(free)  := (others => '0');
      v.tw_en        := '1';
      v.tw_tag       := free;
      v.tw_entry     := (pos => r.j_pos, len => r.p_len, hdr => r.p_hdr, data => r.p_data);
      hdr_add := resize(r.p_hdr, HDR_CNT_W_c);
      dat_add := resize(r.p_data, DATA_CNT_W_c);
      v.j_addr := r.j_addr + r.p_len;
      v.j_rem  := r.j_rem - r.p_len;
      v.j_pos  := r.j_pos + shift_right(r.p_len, 2);
      v.p_ok   := '0';
      if r.j_rem = r.p_len then
        v.j_active := '0';
      end if;
    end if;

    job_ready <= '0';
    if r.j_active = '0' and discard = '0' then
      job_ready  <= '1';
      if job_valid = '1' then
        v.j_active := '1';
        v.j_addr   := unsigned(job_addr);
        v.j_rem    := job_len;
        v.j_pos    := job_pos;
        v.p_ok     := '0';
      end if;
    end if;

    ------------------------------------------------------------------ completions
    t := -1;
    if cpl.tag >= tag_first_g and cpl.tag < tag_first_g + tag_count_g then
      t := to_integer(cpl.tag) - tag_first_g;
    end if;
    if cpl.valid = '1' then
      if cpl.sop = '1' then
        v.c_wr  := '0';
        v.c_act := '0';
        if t >= 0 then
          if r.t_busy(t) = '1' then
            v.c_act := '1';
            v.seen  := '1';
            v.c_tag := t;
            if cpl.err = CPL_OK_c and r.t_disc(t) = '0' then
              v.c_wr := '1';
            elsif cpl.err /= CPL_OK_c and r.t_err(t) = CPL_OK_c then
              v.t_err(t) := cpl.err;
            end if;
            -- payload dword k of this completion (lane k of its first beat) goes to
            -- position t_pos + (t_len - byte count)/4 + k
            v.c_pos := tags(t).pos + shift_right(tags(t).len - cpl.bytes, 2);
          end if;
        end if;
      else
        v.seen := r.c_act;
      end if;
      if v.c_wr = '1' then
        v.w_en   := cpl_keep;
        v.w_pos  := v.c_pos;
        v.w_data := cpl_data;
      end if;
      v.c_pos := v.c_pos + LANES_c;
      if cpl.eop = '1' and cpl.done = '1' and v.c_act = '1' then
        h := v.c_tag;
        v.t_done(h) := '1';
        hdr_sub := resize(tags(h).hdr, HDR_CNT_W_c);
        dat_sub := resize(tags(h).data, DATA_CNT_W_c);
        if r.t_disc(h) = '1' then
          v.t_busy(h) := '0';
        end if;
      end if;
      if cpl.eop = '1' then
        v.c_wr  := '0';
        v.c_act := '0';
      end if;
    end if;
    v.hdr_used  := r.hdr_used + hdr_add - hdr_sub;
    v.data_used := r.data_used + dat_add - dat_sub;

    ------------------------------------------------------------------ release in order
    ord_ready <= '0';
    h := to_integer(unsigned(ord_data));
    if ord_valid = '1' and r.t_done(h) = '1' and r.t_disc(h) = '0' and r.err_valid = '0' then
      if r.t_err(h) /= CPL_OK_c then
        v.err_valid := '1';
        v.err_pos   := tags(h).pos;
        if r.t_err(h) = CPL_TIMEOUT_c then
          v.err_code := code(ERR_TIMEOUT_c);
        else
          v.err_code := code(ERR_BUS_ERROR_c);
        end if;
      else
        ord_ready   <= '1';
        v.ready_pos := tags(h).pos + shift_right(tags(h).len, 2);
        v.t_busy(h) := '0';
      end if;
    end if;

    ------------------------------------------------------------------ discard
    if discard = '1' then
      v.j_active  := '0';
      v.p_ok      := '0';
      v.c_wr      := '0';
      v.w_en      := (others => '0');
      v.ready_pos := (others => '0');
      v.err_valid := '0';
      ord_ready   <= '0';
      for k in 0 to tag_count_g-1 loop
        if v.t_busy(k) = '1' then
          v.t_disc(k) := '1';
          if v.t_done(k) = '1' then
            v.t_busy(k) := '0';
          end if;
        end if;
      end loop;
    end if;

    r_next <= v;
  end process;

  i_order : entity work.mprace_fifo
    generic map (width_g => TAG_W_c, depth_log2_g => TAG_W_c)
    port map (
      clk => clk, rst => rst, flush => discard,
      in_valid => r.push, in_ready => open, in_data => std_logic_vector(r.push_tag),
      out_valid => ord_valid, out_ready => ord_ready, out_data => ord_data, level => open);

  req_tdata  <= (DATA_W_c-1 downto 128 => '0') &
               tlp_mem_req(r.req_addr, r.req_dw, false, r.req_tag);
  req_tkeep  <= ones(4, LANES_c);
  req_side  <= (others => '0');
  req_tlast  <= '1';
  req_tvalid <= r.req_valid;

  ring_wr_en   <= r.w_en;
  ring_wr_pos  <= std_logic_vector(r.w_pos(ring_log2_g-1 downto 0));
  ring_wr_data <= r.w_data;

  ready_pos <= r.ready_pos;
  err_valid <= r.err_valid;
  err_pos   <= r.err_pos;
  err_code  <= r.err_code;
  busy      <= '1' when r.t_busy /= (r.t_busy'range => '0') else '0';
  waiting   <= '1' when (r.t_busy and not r.t_disc and not r.t_done) /= (r.t_busy'range => '0')
               else '0';
  cpl_seen  <= r.seen;
  idle      <= '1' when r.j_active = '0' and r.req_valid = '0' and
                        r.t_busy = (r.t_busy'range => '0') else '0';

  -- the tag table: written a clock after the request is issued, long before its completions
  p_tags : process(clk)
  begin
    if rising_edge(clk) then
      if r.tw_en = '1' then
        tags(r.tw_tag) <= r.tw_entry;
      end if;
    end if;
  end process;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.j_active  <= '0';
        r.p_ok      <= '0';
        r.req_valid <= '0';
        r.push      <= '0';
        r.tw_en     <= '0';
        r.t_busy    <= (others => '0');
        r.t_done    <= (others => '0');
        r.t_disc    <= (others => '0');
        r.hdr_used  <= (others => '0');
        r.data_used <= (others => '0');
        r.c_wr      <= '0';
        r.w_en      <= (others => '0');
        r.ready_pos <= (others => '0');
        r.err_valid <= '0';
        r.seen      <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
