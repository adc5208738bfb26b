-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_h2c: the host-to-card channel (index 1). Descriptor fetcher, read engine, H2C data
-- ring and the output side that hands the data to the H2C sink in order:
--   * the issue side gives each fetched descriptor a contiguous region of the ring and a job to
--     the read engine, running ahead of the output by up to 16 descriptors; it stops after a
--     descriptor with CTRL.STOP or an error, and when RUN is cleared;
--   * the output side streams each descriptor from its region as soon as the data is there
--     (every descriptor starts on a new beat; its last beat has tlast when CTRL.EOP is set), then
--     waits until the sink has taken the data, writes the completion record, and reports the
--     descriptor once the core has taken the record;
--   * a failed read (BUS_ERROR, TIMEOUT) ends the descriptor that owns it after the data before
--     it; ABORT and the stall timeout (TIMEOUT_US without a read completion while one is awaited)
--     end the oldest descriptor in flight at once; both write its record with the bytes handed
--     to the sink so far;
--   * RESET forgets everything in flight; a new RUN waits until the reads in flight are done.
-- Spec: docs/dma-engine.md sections 4 (channel operation) and 5 (errors, abort, recovery).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_h2c is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    ring_log2_g   : positive := 12;
    hdr_budget_g  : positive := 54;
    data_budget_g : positive := 972
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    ctrl       : in  chan_ctrl_r;
    stat       : out chan_stat_r;
    link       : in  link_cfg_r;
    us_tick    : in  std_logic;
    -- sink stream (dword lanes)
    m_tdata    : out std_logic_vector(data_w_g-1 downto 0);
    m_tkeep    : out std_logic_vector(data_w_g/32-1 downto 0);
    m_tlast    : out std_logic;
    m_tvalid   : out std_logic;
    m_tready   : in  std_logic;
    -- requests: data reads
    rd_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    rd_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    rd_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    rd_tlast   : out std_logic;
    rd_tvalid  : out std_logic;
    rd_tready  : in  std_logic;
    -- requests: completion records
    wb_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    wb_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    wb_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    wb_tlast   : out std_logic;
    wb_tvalid  : out std_logic;
    wb_tready  : in  std_logic;
    wb_sent    : in  std_logic;
    -- requests: descriptor fetches
    df_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    df_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    df_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    df_tlast   : out std_logic;
    df_tvalid  : out std_logic;
    df_tready  : in  std_logic;
    -- completions
    cpl        : in  cpl_r;
    cpl_data   : in  std_logic_vector(data_w_g-1 downto 0);
    cpl_keep   : in  std_logic_vector(data_w_g/32-1 downto 0)
  );
end entity mprace_dma_h2c;

architecture rtl of mprace_dma_h2c is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_h2c", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat
  constant BYTES_c  : natural := data_w_g / 8;

  type ostate_t is (Idle_s, Stream_s, Drain_s, Rec_s, Sent_s);

  constant Q_W_c   : natural := DESC_ENTRY_W_c + 32;     -- descriptor and ring start
  constant OUT_W_c : natural := DATA_W_c + LANES_c + 1;

  type two_process_r is record
    -- issue side
    stopping   : std_logic;
    halted     : std_logic;
    draining   : std_logic;     -- after RESET: wait for the reads in flight
    alloc      : pos_t;         -- next free ring position
    timer      : unsigned(31 downto 0);
    abort      : std_logic;     -- pulse: ABORT or the stall timeout, with abort_code
    abort_code : code_t;
    discard    : std_logic;     -- pulse: the read engine forgets everything in flight
    -- output side
    o_st       : ostate_t;
    o_abort    : std_logic;     -- abort or timeout not yet reported
    o_acode    : code_t;
    o_code     : code_t;        -- result of the descriptor being finished
    o_pos      : pos_t;         -- ring position of the next beat
    o_start    : pos_t;
    o_end      : pos_t;
    o_eop      : std_logic;
    o_bytes    : len_t;
    o_irq      : std_logic;
    o_stop     : std_logic;
    o_rec      : std_logic;     -- write a record for the descriptor being finished
    o_rec_addr : std_logic_vector(63 downto 0);
    o_pop      : std_logic;
    q_flush    : std_logic;     -- drop the descriptors behind one that failed
    -- stage 2
    s2_valid   : std_logic;
    s2_keep    : std_logic_vector(LANES_c-1 downto 0);
    s2_last    : std_logic;
    -- record request
    wb_valid   : std_logic;
    wb_hdr     : std_logic_vector(127 downto 0);
    wb_data    : std_logic_vector(63 downto 0);
    -- report
    ev_done    : std_logic;
    ev_err     : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (
    stopping => '0', halted => '0', draining => '0', alloc => (others => '0'),
    timer => (others => '0'), abort => '0', abort_code => (others => '0'), discard => '0',
    o_st => Idle_s, o_abort => '0', o_acode => (others => '0'), o_code => (others => '0'), o_pos => (others => '0'),
    o_start => (others => '0'), o_end => (others => '0'), o_eop => '0',
    o_bytes => (others => '0'), o_irq => '0', o_stop => '0', o_rec => '0',
    o_rec_addr => (others => '0'), o_pop => '0', q_flush => '0', s2_valid => '0', s2_keep => (others => '0'),
    s2_last => '0', wb_valid => '0', wb_hdr => (others => '0'), wb_data => (others => '0'),
    ev_done => '0', ev_err => '0');

  signal r, r_next     : two_process_r := R_INIT_c;

  signal take          : std_logic;
  signal fetch_en      : std_logic;
  signal desc_valid    : std_logic;
  signal desc_ready    : std_logic;
  signal desc          : desc_entry_r;
  signal fetch_busy    : std_logic;
  signal fetch_seen    : std_logic;

  signal job_valid     : std_logic;
  signal job_ready     : std_logic;
  signal discard       : std_logic;
  signal rd_ready_pos  : pos_t;
  signal rd_err_valid  : std_logic;
  signal rd_err_pos    : pos_t;
  signal rd_err_code   : code_t;
  signal rd_busy       : std_logic;
  signal rd_waiting    : std_logic;
  signal rd_seen       : std_logic;
  signal rd_idle       : std_logic;

  signal q_in_valid    : std_logic;
  signal q_in_ready    : std_logic;
  signal q_in_data     : std_logic_vector(Q_W_c-1 downto 0);
  signal q_valid       : std_logic;
  signal q_data        : std_logic_vector(Q_W_c-1 downto 0);
  signal q_flush       : std_logic;
  signal q_desc        : desc_entry_r;
  signal q_start       : pos_t;

  signal ring_wr_en    : std_logic_vector(LANES_c-1 downto 0);
  signal ring_wr_pos   : std_logic_vector(ring_log2_g-1 downto 0);
  signal ring_wr_data  : std_logic_vector(DATA_W_c-1 downto 0);
  signal ring_rd_data  : std_logic_vector(DATA_W_c-1 downto 0);

  signal o_level       : unsigned(2 downto 0);
  signal o_valid       : std_logic;
  signal o_data        : std_logic_vector(OUT_W_c-1 downto 0);
  signal o_flush       : std_logic;

  function umin(a, b : unsigned) return unsigned is
  begin
    if a < b then return a; else return b; end if;
  end function;

begin

  ------------------------------------------------------------------ issue side
  take       <= ctrl.run and not r.stopping and not r.halted and not r.draining;
  fetch_en   <= take;
  job_valid  <= desc_valid and take and q_in_ready when desc.err = code(ERR_NONE_c) else '0';
  desc_ready <= take and q_in_ready and (job_ready or (desc.err ?/= code(ERR_NONE_c)));
  q_in_valid <= desc_valid and desc_ready;
  q_in_data  <= desc_pack(desc) & std_logic_vector(r.alloc);
  -- the queue keeps the oldest descriptor in flight until the output side has finished it
  -- (with its record after an abort); only then are the ones behind it dropped
  q_flush    <= ctrl.reset or r.q_flush;
  discard    <= ctrl.reset or r.discard;

  q_desc  <= desc_unpack(q_data(Q_W_c-1 downto 32));
  q_start <= unsigned(q_data(31 downto 0));

  p_comb : process(all)
    variable v       : two_process_r;
    variable stalled : boolean;
    variable credit  : boolean;
    variable cnt     : unsigned(31 downto 0);
    variable fail    : boolean;
    variable finish  : boolean;
  begin
    v := r;
    v.abort    := '0';
    v.discard  := '0';
    v.o_pop    := '0';
    v.q_flush  := '0';
    v.s2_valid := '0';
    v.ev_done  := '0';
    v.ev_err   := '0';
    finish     := false;

    if desc_valid = '1' and desc_ready = '1' then
      if desc.err = code(ERR_NONE_c) then
        v.alloc := r.alloc + shift_right(desc.len, 2);
      else
        v.halted := '1';
      end if;
      if desc.stop = '1' then
        v.stopping := '1';
      end if;
    end if;
    if ctrl.run = '0' then
      v.stopping := '0';
    end if;
    if r.draining = '1' and rd_busy = '0' and fetch_busy = '0' then
      v.draining := '0';
    end if;

    -- stall timer: a read of this channel is awaited and nothing arrives
    stalled := rd_waiting = '1' or (fetch_busy = '1' and desc_valid = '0' and take = '1');
    if not stalled or rd_seen = '1' or fetch_seen = '1' or r.halted = '1' then
      v.timer := (others => '0');
    elsif us_tick = '1' then
      v.timer := r.timer + 1;
    end if;
    if unsigned(ctrl.timeout_us) /= 0 and r.timer > unsigned(ctrl.timeout_us) and
       r.halted = '0' then
      v.abort      := '1';
      v.discard    := '1';
      v.abort_code := code(ERR_TIMEOUT_c);
      v.halted     := '1';
      v.timer      := (others => '0');
    end if;
    if ctrl.abort = '1' and r.halted = '0' then
      v.abort      := '1';
      v.discard    := '1';
      v.abort_code := code(ERR_ABORTED_c);
      v.halted     := '1';
    end if;
    if r.abort = '1' then
      v.o_abort := '1';
      v.o_acode := r.abort_code;
    end if;

    ------------------------------------------------------------------ output side
    if r.s2_valid = '1' then
      credit := o_level < 3;
    else
      credit := o_level < 4;
    end if;
    cnt := umin(r.o_end - r.o_pos, to_unsigned(LANES_c, 32));

    case r.o_st is
      when Idle_s =>
        if q_valid = '1' and r.o_pop = '0' then
          v.o_start    := q_start;
          v.o_pos      := q_start;
          v.o_end      := q_start + shift_right(q_desc.len, 2);
          v.o_eop      := q_desc.eop;
          v.o_irq      := q_desc.irq;
          v.o_stop     := q_desc.stop;
          v.o_bytes    := (others => '0');
          v.o_rec      := q_desc.rec;
          v.o_rec_addr := std_logic_vector(unsigned(ctrl.ring_base) +
                          shift_left(resize(q_desc.slot, 64), log2ceil(DESC_SIZE_c)) +
                          DESC_RESULT_BYTES_c);
          if r.abort = '1' then
            v.o_code := r.abort_code;          -- the oldest descriptor in flight ends
            v.o_st := Rec_s;
          elsif r.o_abort = '1' then
            v.o_code := r.o_acode;
            v.o_st := Rec_s;
          elsif q_desc.err /= code(ERR_NONE_c) then
            v.o_code := q_desc.err;
            v.o_st := Rec_s;
          else
            v.o_code := code(ERR_NONE_c);
            v.o_st := Stream_s;
          end if;
        elsif r.o_abort = '1' and r.o_pop = '0' and r.abort = '0' then
          finish := true;                      -- nothing in flight: report the error alone
          v.o_code  := r.o_acode;
          v.o_rec   := '0';
          v.o_bytes := (others => '0');
          v.o_irq   := '0';
          v.o_stop  := '0';
        end if;

      when Stream_s =>
        -- the failed read starts inside the next beat: the data before it never makes a
        -- whole beat, so the error must not wait for o_pos to reach it
        fail := rd_err_valid = '1' and rd_err_pos - r.o_pos < cnt;
        if r.abort = '1' then
          v.o_code := r.abort_code;
          v.o_st := Rec_s;
        elsif fail then
          v.o_code := rd_err_code;
          v.o_st := Rec_s;
          v.halted := '1';
          v.discard := '1';                    -- forget the reads behind it
        elsif credit and rd_ready_pos - r.o_pos >= cnt then
          v.s2_valid := '1';
          v.s2_keep  := ones(to_integer(cnt), LANES_c);
          v.o_pos    := r.o_pos + cnt;
          v.o_bytes  := r.o_bytes + shift_left(resize(cnt, DESC_LEN_BYTES_WIDTH_c), 2);
          v.s2_last  := '0';
          if r.o_pos + cnt = r.o_end then
            v.s2_last := r.o_eop;
            v.o_st    := Drain_s;
          end if;
        end if;

      when Drain_s =>
        -- the sink has taken every beat of the descriptor
        if r.abort = '1' then
          v.o_code := r.abort_code;
          v.o_st := Rec_s;
        elsif r.s2_valid = '0' and o_valid = '0' then
          v.o_st := Rec_s;
        end if;

      when Rec_s =>
        if r.o_rec = '0' then
          finish := true;
        elsif r.wb_valid = '0' then
          v.wb_valid := '1';
          v.wb_hdr   := tlp_mem_req(r.o_rec_addr, to_unsigned(2, 11), true, 0);
          v.wb_data  := result_record(r.o_bytes, '0', r.o_code);
          v.o_st     := Sent_s;
        end if;

      when Sent_s =>
        if wb_sent = '1' then
          finish := true;
        end if;
    end case;

    if finish then
      v.o_st := Idle_s;
      if r.o_st /= Idle_s then
        v.o_pop := '1';
      end if;
      -- an abort that came after all data of a descriptor was out is reported after it
      if v.o_code = code(ERR_NONE_c) then
        v.ev_done := '1';
      else
        v.ev_err  := '1';
        v.o_abort := '0';
        v.halted  := '1';
        v.q_flush := '1';
      end if;
    end if;

    if r.wb_valid = '1' and wb_tready = '1' then
      v.wb_valid := '0';
    end if;

    ------------------------------------------------------------------ reset
    if ctrl.reset = '1' then
      v.stopping := '0';
      v.halted   := '0';
      v.draining := '1';
      v.alloc    := (others => '0');
      v.timer    := (others => '0');
      v.abort    := '0';
      v.discard  := '0';
      v.o_abort  := '0';
      v.o_st     := Idle_s;
      v.o_pos    := (others => '0');
      v.o_pop    := '0';
      v.s2_valid := '0';
      v.ev_done  := '0';
      v.ev_err   := '0';
    end if;

    r_next <= v;
  end process;

  i_fetch : entity work.mprace_dma_desc_fetch
    generic map (data_w_g => data_w_g, tag_g => FETCH_TAG_H2C_c)
    port map (
      clk => clk, rst => rst, ctrl => ctrl, enable => fetch_en, mrrs_dw => link.mrrs_dw,
      req_tdata => df_tdata, req_tkeep => df_tkeep, req_side => df_side, req_tlast => df_tlast,
      req_tvalid => df_tvalid, req_tready => df_tready,
      cpl => cpl, cpl_data => cpl_data, cpl_keep => cpl_keep,
      desc_valid => desc_valid, desc_ready => desc_ready, desc => desc,
      busy => fetch_busy, cpl_seen => fetch_seen);

  i_queue : entity work.mprace_fifo
    generic map (width_g => Q_W_c, depth_log2_g => 4)
    port map (
      clk => clk, rst => rst, flush => q_flush,
      in_valid => q_in_valid, in_ready => q_in_ready, in_data => q_in_data,
      out_valid => q_valid, out_ready => r.o_pop, out_data => q_data, level => open);

  i_rd : entity work.mprace_dma_rd
    generic map (data_w_g => data_w_g, ring_log2_g => ring_log2_g, hdr_budget_g => hdr_budget_g,
                 data_budget_g => data_budget_g)
    port map (
      clk => clk, rst => rst, link => link,
      job_valid => job_valid, job_ready => job_ready, job_addr => desc.addr,
      job_len => desc.len, job_pos => r.alloc, space_base => r.o_pos, discard => discard,
      req_tdata => rd_tdata, req_tkeep => rd_tkeep, req_side => rd_side, req_tlast => rd_tlast,
      req_tvalid => rd_tvalid, req_tready => rd_tready,
      cpl => cpl, cpl_data => cpl_data,
      cpl_keep => cpl_keep,
      ring_wr_en => ring_wr_en, ring_wr_pos => ring_wr_pos, ring_wr_data => ring_wr_data,
      ready_pos => rd_ready_pos, err_valid => rd_err_valid, err_pos => rd_err_pos,
      err_code => rd_err_code, busy => rd_busy, waiting => rd_waiting, cpl_seen => rd_seen,
      idle => rd_idle);

  i_ring : entity work.mprace_dword_ring
    generic map (data_w_g => data_w_g, depth_log2_g => ring_log2_g)
    port map (
      clk => clk, wr_en => ring_wr_en, wr_pos => ring_wr_pos, wr_data => ring_wr_data,
      rd_en => '1', rd_pos => std_logic_vector(r.o_pos(ring_log2_g-1 downto 0)),
      rd_data => ring_rd_data);

  -- beats already in the output queue still go to the sink after a RESET: a stream must not
  -- take back a valid beat
  o_flush <= '0';

  i_out : entity work.mprace_fifo
    generic map (width_g => OUT_W_c, depth_log2_g => 2)
    port map (
      clk => clk, rst => rst, flush => o_flush,
      in_valid => r.s2_valid, in_ready => open,
      in_data => ring_rd_data & r.s2_keep & r.s2_last,
      out_valid => o_valid, out_ready => m_tready, out_data => o_data, level => o_level);

  m_tdata  <= o_data(OUT_W_c-1 downto LANES_c+1);
  m_tkeep  <= o_data(LANES_c downto 1);
  m_tlast  <= o_data(0);
  m_tvalid <= o_valid;

  wb_tdata  <= (DATA_W_c-1 downto 192 => '0') & r.wb_data & r.wb_hdr;
  wb_tkeep  <= ones(6, LANES_c);
  wb_side  <= (others => '0');
  wb_tlast  <= '1';
  wb_tvalid <= r.wb_valid;

  stat.done     <= r.ev_done;
  stat.err      <= r.ev_err;
  stat.err_code <= r.o_code;
  stat.bytes    <= r.o_bytes;
  stat.irq      <= r.o_irq;
  stat.stop     <= r.o_stop;
  stat.busy     <= '1' when r.o_st /= Idle_s or q_valid = '1' or rd_busy = '1' or
                            fetch_busy = '1' or r.draining = '1' else '0';
  stat.idle     <= '1' when r.o_st = Idle_s and q_valid = '0' and rd_idle = '1' and
                            r.ev_done = '0' and r.ev_err = '0' else '0';

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.stopping <= '0';
        r.halted   <= '0';
        r.draining <= '0';
        r.alloc    <= (others => '0');
        r.timer    <= (others => '0');
        r.abort    <= '0';
        r.discard  <= '0';
        r.o_st     <= Idle_s;
        r.o_abort  <= '0';
        r.o_pos    <= (others => '0');
        r.o_pop    <= '0';
        r.s2_valid <= '0';
        r.wb_valid <= '0';
        r.ev_done  <= '0';
        r.ev_err   <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
