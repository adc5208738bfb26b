-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_wr: the C2H write engine. For each descriptor (job) it moves LEN bytes from the C2H
-- data ring to host memory as memory write TLPs, then writes the completion record, and reports
-- the descriptor to the channel once the record has been taken by the core.
--   * A TLP never exceeds MPS and never crosses an MPS-aligned boundary (hence no 4 KiB
--     boundary either); it is cut at the end of a packet of the source (tlast), which also ends
--     the descriptor (RESULT_STATUS.EOP, RESULT_BYTES = bytes received).
--   * A TLP starts only when all its data is in the ring, so its beats leave back to back.
--   * The completion record (RESULT_BYTES, RESULT_STATUS) is one 8-byte write after the data,
--     on the same stream, so PCIe ordering puts it behind the data in host memory.
--   * Descriptors that fail before moving data (entry.err /= 0) become a record-only job, or a
--     plain error report when entry.rec = '0' (no valid slot, e.g. RING_CONFIG).
--   * abort (ABORTED, TIMEOUT) ends the job in flight at the next TLP boundary with a record of
--     the bytes written so far, or reports the error alone when no job is in flight; afterwards
--     the engine takes no jobs until clear.
--   * clear (channel reset, data flush) waits for the TLP in progress to leave, then forgets
--     jobs and reports, and restarts the ring read position at 0 (`cleared` tells the source).
--   * straddle_g (512 bits only): when the last beat of a TLP uses at most half the lanes and
--     the next TLP of the job is ready, that TLP starts in the upper half of the same beat (the
--     second segment: UltraScale+ RQ straddling, P-tile's two segments); the beat has no tlast
--     and its side bits say where each TLP starts and ends (REQ_* in mprace_dma_pkg). A
--     256-byte TLP then takes 4.5 beats, not 5.
-- Each TLP is its PCIe header in a 4-dword slot and its payload (the request stream of
-- mprace_dma_pkg); the vendor adapter turns it into what the block wants.
-- Pipeline: stage 1 decides a beat and addresses the ring, stage 2 assembles it with the ring
-- data into a small output queue; stage 1 only issues while the queue has room for it.
-- Spec: docs/dma-engine.md sections 2 (completion record), 3 (MPS, 4 KiB), 4 (steps 4-5, packet
-- ends) and 5 (abort, timeout, reset).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_wr is
  generic (
    data_w_g    : positive := 256;    -- datapath: 256 or 512 bits
    straddle_g  : boolean := false;   -- two TLPs per beat (512 bits only)
    ring_log2_g : positive := 12
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    mps_dw     : in  unsigned(10 downto 0);
    -- jobs: a descriptor and the address of its completion record
    job_valid  : in  std_logic;
    job_ready  : out std_logic;
    job        : in  desc_entry_r;
    job_rec_addr    : in  std_logic_vector(63 downto 0);
    abort      : in  std_logic;                 -- pulse, with abort_code
    abort_code : in  code_t;
    clear      : in  std_logic;                 -- pulse
    data_flush : in  std_logic;                 -- pulse: restart the data ring when idle
    cleared    : out std_logic;                 -- pulse: clear or data flush done
    -- data ring
    ring_rd_pos  : out std_logic_vector(ring_log2_g-1 downto 0);
    ring_rd_data : in  std_logic_vector(data_w_g-1 downto 0);
    rd_pos     : out pos_t;
    wr_commit  : in  pos_t;
    eop_valid  : in  std_logic;
    eop_pos    : in  pos_t;
    eop_pop    : out std_logic;
    -- request stream
    req_tdata   : out std_logic_vector(data_w_g-1 downto 0);
    req_tkeep   : out std_logic_vector(data_w_g/32-1 downto 0);
    req_side    : out std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    req_tlast   : out std_logic;
    req_tvalid  : out std_logic;
    req_tready  : in  std_logic;
    req_sent    : in  std_logic;                 -- a TLP of this stream was taken by the core
    -- reports, in descriptor order
    ev_valid   : out std_logic;
    ev_code    : out code_t;
    ev_bytes   : out len_t;
    ev_irq     : out std_logic;
    ev_stop    : out std_logic;
    -- status
    waiting    : out std_logic;                 -- a TLP waits for source data
    progress   : out std_logic;                 -- pulse: a TLP was issued
    idle       : out std_logic                  -- no job and no report outstanding
  );
end entity mprace_dma_wr;

architecture rtl of mprace_dma_wr is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_wr", data_w_g);

  constant DATA_W_c : natural := data_w_g;
  constant LANES_c  : natural := data_w_g / 32;   -- dwords per beat

  type state_t is (Idle_s, Hdr_s, Data_s, Rec_s);
  type kind_t is (Hdr_k, Data_k, Rec_k, Merge_k);

  constant OUT_W_c : natural := DATA_W_c + LANES_c + REQ_SIDE_W_c + 1;
  constant HDR_DATA_c : natural := LANES_c - 4;   -- data dwords in a beat with the header
  constant HALF_c     : natural := LANES_c / 2;   -- where a straddled TLP starts
  constant STRADDLE_c : boolean := straddle_g and LANES_c = 16;
  -- report queue entry: bytes, code, irq, stop, sequence number of the TLP to wait for
  constant REP_W_c : natural := DESC_LEN_BYTES_WIDTH_c + 8 + 2 + 8;

  type two_process_r is record
    st         : state_t;
    halted     : std_logic;
    abort_pend : std_logic;
    abort_code : code_t;
    clear_pend : std_logic;
    flush_pend : std_logic;
    cleared    : std_logic;
    -- job
    addr       : unsigned(63 downto 0);     -- address of the next TLP
    rem_dw     : unsigned(22 downto 0);     -- dwords of the job not yet in a TLP
    bytes      : len_t;                     -- bytes in TLPs so far
    eop        : std_logic;                 -- the job ended at a packet end
    code       : code_t;
    rec        : std_logic;
    rec_addr   : std_logic_vector(63 downto 0);
    irq        : std_logic;
    stop       : std_logic;
    -- current TLP and ring position
    t_rem      : unsigned(10 downto 0);     -- dwords of the current TLP not yet issued
    rd_pos     : pos_t;
    -- plan of the next TLP, computed one clock ahead
    plan_ok    : std_logic;
    commit     : pos_t;                     -- wr_commit seen with the packet ends of the plan
    nlen       : unsigned(10 downto 0);
    nhit       : std_logic;
    eop_pop    : std_logic;
    -- stage 2
    s2_valid   : std_logic;
    s2_kind    : kind_t;
    s2_hdr     : std_logic_vector(127 downto 0);
    s2_take    : natural range 0 to LANES_c;
    s2_user    : std_logic_vector(REQ_SIDE_W_c-1 downto 0);
    s2_last    : std_logic;
    s2_rec     : std_logic_vector(63 downto 0);
    -- reports
    issued     : unsigned(7 downto 0);      -- TLPs issued
    acked      : unsigned(7 downto 0);      -- TLPs taken by the core
    rep_push   : std_logic;
    rep        : std_logic_vector(REP_W_c-1 downto 0);
    rep_clr    : std_logic;
    ev_valid   : std_logic;
    progress   : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (
    st => Idle_s, halted => '0', abort_pend => '0', abort_code => (others => '0'),
    clear_pend => '0', flush_pend => '0', cleared => '0', addr => (others => '0'),
    rem_dw => (others => '0'), bytes => (others => '0'), eop => '0', code => (others => '0'),
    rec => '0', rec_addr => (others => '0'), irq => '0', stop => '0', t_rem => (others => '0'),
    rd_pos => (others => '0'), plan_ok => '0', commit => (others => '0'), nlen => (others => '0'), nhit => '0',
    eop_pop => '0', s2_valid => '0', s2_kind => Hdr_k, s2_hdr => (others => '0'),
    s2_take => 0, s2_user => (others => '0'), s2_last => '0', s2_rec => (others => '0'),
    issued => (others => '0'), acked => (others => '0'), rep_push => '0',
    rep => (others => '0'), rep_clr => '0', ev_valid => '0', progress => '0');

  signal r, r_next    : two_process_r := R_INIT_c;
  signal o_in_valid   : std_logic;
  signal o_in_data    : std_logic_vector(OUT_W_c-1 downto 0);
  signal o_out_data   : std_logic_vector(OUT_W_c-1 downto 0);
  signal o_level      : unsigned(2 downto 0);
  signal rep_valid    : std_logic;
  signal rep_ready    : std_logic;
  signal rep_out      : std_logic_vector(REP_W_c-1 downto 0);
  signal rep_flush    : std_logic;
  signal ev_bytes_q   : len_t := (others => '0');
  signal ev_code_q    : code_t := (others => '0');
  signal ev_irq_q     : std_logic := '0';
  signal ev_stop_q    : std_logic := '0';

  function umin(a, b : unsigned) return unsigned is
  begin
    if a < b then return a; else return b; end if;
  end function;

begin

  p_comb : process(all)
    variable v        : two_process_r;
    variable credit   : boolean;
    variable next_pos : pos_t;
    variable room     : unsigned(10 downto 0);
    variable len      : unsigned(22 downto 0);
    variable dist     : pos_t;
    variable take     : natural range 0 to LANES_c;
    variable finish   : boolean;     -- the job ends with the beat issued now
    variable ack_seq  : unsigned(7 downto 0);

    -- the planned TLP (r.nlen dwords at r.addr) starts in the beat issued now: its header,
    -- and the job advanced past it (to its end where it ends at a packet end). It writes v
    -- itself: with v as an inout parameter GHDL's synthesis copied the whole record back
    -- (700 LUTs more at 256 bits)
    procedure start_tlp is
    begin
      v.s2_hdr   := tlp_mem_req(std_logic_vector(r.addr), r.nlen, true, 0);
      v.s2_user  := (others => '0');
      v.addr     := r.addr + shift_left(resize(r.nlen, 64), 2);
      v.rem_dw   := r.rem_dw - r.nlen;
      v.bytes    := r.bytes + shift_left(resize(r.nlen, DESC_LEN_BYTES_WIDTH_c), 2);
      v.plan_ok  := '0';
      v.progress := '1';
      if r.nhit = '1' then
        v.eop_pop := '1';
        v.eop     := '1';
        v.rem_dw  := (others => '0');
      end if;
    end procedure;
  begin
    v := r;
    v.eop_pop  := '0';
    v.s2_valid := '0';
    v.rep_push := '0';
    v.ev_valid := '0';
    v.progress := '0';
    v.cleared  := '0';
    v.rep_clr  := '0';
    finish     := false;

    if abort = '1' and r.halted = '0' then
      v.abort_pend := '1';
      v.abort_code := abort_code;
    end if;
    if clear = '1' then
      v.clear_pend := '1';
    end if;
    if data_flush = '1' then
      v.flush_pend := '1';
    end if;
    if req_sent = '1' then
      v.acked := r.acked + 1;
    end if;

    -- room in the output queue for one more beat besides the one in stage 2
    if r.s2_valid = '1' then
      credit := o_level < 3;
    else
      credit := o_level < 4;
    end if;

    ------------------------------------------------------------------ plan the next TLP
    next_pos := r.rd_pos + r.t_rem;
    room := mps_dw - (r.addr(12 downto 2) and resize(mps_dw - 1, 11));
    len  := umin(r.rem_dw, resize(room, 23));
    dist := eop_pos - next_pos;
    v.nhit := '0';
    if eop_valid = '1' and dist <= len then
      len := resize(dist, 23);
      v.nhit := '1';
    end if;
    v.nlen    := resize(len, 11);
    v.plan_ok := not r.eop_pop;      -- a popped packet end leaves the queue head next clock
    -- data counted as available must not be newer than the packet ends the plan has seen:
    -- the source announces both in the same clock
    v.commit  := wr_commit;

    ------------------------------------------------------------------ stage 1
    job_ready <= '0';
    if r.clear_pend = '1' and r.st /= Data_s then
      null;                            -- a clear waits only for the TLP in progress
    else
    case r.st is
      when Idle_s =>
        if r.clear_pend = '0' and r.flush_pend = '0' and r.abort_pend = '0' and
           r.halted = '0' and job_valid = '1' then
          job_ready  <= '1';
          v.addr     := unsigned(job.addr);
          v.rem_dw   := resize(shift_right(job.len, 2), 23);
          v.bytes    := (others => '0');
          v.eop      := '0';
          v.code     := job.err;
          v.rec      := job.rec;
          v.rec_addr := job_rec_addr;
          v.irq      := job.irq;
          v.stop     := job.stop;
          v.plan_ok  := '0';
          if job.err /= code(ERR_NONE_c) then
            v.halted := '1';
            if job.rec = '1' then
              v.st := Rec_s;
            else
              finish := true;      -- report only
            end if;
          else
            v.st := Hdr_s;
          end if;
        end if;

      when Hdr_s =>
        if r.abort_pend = '1' then
          v.code := r.abort_code;
          v.abort_pend := '0';
          v.halted := '1';
          v.st := Rec_s;
        elsif r.rem_dw = 0 then
          v.st := Rec_s;           -- only after a TLP ended at a packet end exactly
        elsif r.plan_ok = '1' and credit and r.commit - next_pos >= r.nlen then
          take := to_integer(umin(r.nlen, to_unsigned(HDR_DATA_c, 11)));
          v.s2_valid := '1';
          v.s2_kind  := Hdr_k;
          v.s2_take  := take;
          v.s2_last  := '0';
          v.rd_pos   := r.rd_pos + take;
          v.t_rem    := r.nlen - take;
          start_tlp;
          if r.nlen <= HDR_DATA_c then
            v.s2_last := '1';
            v.issued  := r.issued + 1;
            if r.nhit = '1' or r.rem_dw = r.nlen then
              v.st := Rec_s;
            end if;
          else
            v.st := Data_s;
          end if;
        end if;

      when Data_s =>
        if credit then
          take := to_integer(umin(r.t_rem, to_unsigned(LANES_c, 11)));
          v.s2_valid := '1';
          v.s2_kind  := Data_k;
          v.s2_take  := take;
          v.s2_user(REQ_SOP_HI_c)  := '0';    -- no straddle
          v.s2_user(REQ_EOP_MID_c) := '0';
          v.s2_last  := '0';
          v.rd_pos   := r.rd_pos + take;
          v.t_rem    := r.t_rem - take;
          if STRADDLE_c and r.t_rem <= HALF_c and r.rem_dw /= 0 and r.plan_ok = '1' and
             r.nlen > HALF_c - 4 and r.commit - next_pos >= r.nlen and
             r.abort_pend = '0' and r.clear_pend = '0' then
            -- the next TLP starts in the upper half of this beat: its header in lanes
            -- HALF_c.. HALF_c+3, its first data dwords after it
            v.s2_kind  := Merge_k;
            start_tlp;
            v.s2_user(REQ_SOP_HI_c)  := '1';
            v.s2_user(REQ_EOP_MID_c) := '1';
            v.s2_user(REQ_EOP_PTR_c+3 downto REQ_EOP_PTR_c) :=
              std_logic_vector(resize(r.t_rem - 1, 4));
            v.rd_pos   := r.rd_pos + r.t_rem + (HALF_c - 4);
            v.t_rem    := r.nlen - (HALF_c - 4);
          elsif r.t_rem <= LANES_c then
            v.s2_last := '1';
            v.issued  := r.issued + 1;
            if r.rem_dw = 0 then
              v.st := Rec_s;
            else
              v.st := Hdr_s;
            end if;
          end if;
        end if;

      when Rec_s =>
        -- all data of the job is out: an abort now is reported after this record
        if credit then
          v.s2_valid := '1';
          v.s2_kind  := Rec_k;
          v.s2_hdr   := tlp_mem_req(r.rec_addr, to_unsigned(2, 11), true, 0);
          v.s2_user  := (others => '0');
          v.s2_take  := 0;
          v.s2_last  := '1';
          v.s2_rec   := result_record(r.bytes, r.eop, r.code);
          v.issued   := r.issued + 1;
          finish     := true;
        end if;
    end case;
    end if;

    -- an abort with no job in flight is reported on its own
    if r.st = Idle_s and r.abort_pend = '1' and r.clear_pend = '0' then
      v.abort_pend := '0';
      v.halted := '1';
      v.code   := r.abort_code;
      v.rec    := '0';
      v.bytes  := (others => '0');
      v.irq    := '0';
      v.stop   := '0';
      finish   := true;
    end if;

    if finish then
      v.rep_push := '1';
      v.rep := std_logic_vector(v.bytes) & v.code & v.irq & v.stop & std_logic_vector(v.issued);
      v.st := Idle_s;
    end if;

    ------------------------------------------------------------------ reports, in order
    -- none from a clear request until the report queue has been flushed (rep_clr): the
    -- channel's HEAD and BYTES were reset with the request, and a report popped after it
    -- would count into the new ring
    ack_seq := unsigned(rep_out(7 downto 0));
    rep_ready <= '0';
    if rep_valid = '1' and (v.acked - ack_seq) < 128 and clear = '0' and r.clear_pend = '0' and
       r.rep_clr = '0' then
      rep_ready  <= '1';
      v.ev_valid := '1';
    end if;

    ------------------------------------------------------------------ clear and flush
    if (r.clear_pend = '1' or (r.flush_pend = '1' and r.st = Idle_s)) and r.st /= Data_s then
      v.st         := Idle_s;
      v.rd_pos     := (others => '0');
      v.t_rem      := (others => '0');
      v.plan_ok    := '0';
      v.flush_pend := '0';
      v.cleared    := '1';
      if r.clear_pend = '1' then
        v.rep_clr    := '1';
        v.clear_pend := '0';
        v.abort_pend := '0';
        v.halted     := '0';
        v.rep_push   := '0';
        v.ev_valid   := '0';
        rep_ready    <= '0';
      end if;
    end if;

    r_next <= v;
  end process;

  rep_flush <= r.rep_clr;

  i_rep : entity work.mprace_fifo
    generic map (width_g => REP_W_c, depth_log2_g => 3)
    port map (
      clk => clk, rst => rst, flush => rep_flush,
      in_valid => r.rep_push, in_ready => open, in_data => r.rep,
      out_valid => rep_valid, out_ready => rep_ready, out_data => rep_out, level => open);

  ------------------------------------------------------------------ stage 2: assemble the beat
  p_beat : process(all)
    variable d    : std_logic_vector(DATA_W_c-1 downto 0);
    variable keep : std_logic_vector(LANES_c-1 downto 0);
  begin
    d := ring_rd_data;
    keep := ones(r.s2_take, LANES_c);
    case r.s2_kind is
      when Hdr_k =>
        d := ring_rd_data(DATA_W_c-129 downto 0) & r.s2_hdr;
        keep := ones(r.s2_take, LANES_c)(LANES_c-5 downto 0) & "1111";
      when Data_k =>
        null;
      when Rec_k =>
        d := (DATA_W_c-1 downto 192 => '0') & r.s2_rec & r.s2_hdr;
        keep := ones(6, LANES_c);
      when Merge_k =>
        -- lanes 0 .. take-1: the end of the TLP before; then the next TLP's header at
        -- HALF_c and its first dwords, which follow in the ring
        for l in HALF_c + 4 to LANES_c-1 loop
          for t in 1 to HALF_c loop
            if r.s2_take = t then
              d(32*l+31 downto 32*l) := dw(ring_rd_data, t + l - (HALF_c + 4));
            end if;
          end loop;
        end loop;
        d(32*HALF_c+127 downto 32*HALF_c) := r.s2_hdr;
        keep := ones(LANES_c - HALF_c, LANES_c - HALF_c) & ones(r.s2_take, HALF_c);
    end case;
    o_in_data  <= d & keep & r.s2_user & r.s2_last;
    o_in_valid <= r.s2_valid;
  end process;

  i_out : entity work.mprace_fifo
    generic map (width_g => OUT_W_c, depth_log2_g => 2)
    port map (
      clk => clk, rst => rst, flush => '0',
      in_valid => o_in_valid, in_ready => open, in_data => o_in_data,
      out_valid => req_tvalid, out_ready => req_tready, out_data => o_out_data,
      level => o_level);

  req_tdata <= o_out_data(OUT_W_c-1 downto OUT_W_c-DATA_W_c);
  req_tkeep <= o_out_data(OUT_W_c-DATA_W_c-1 downto REQ_SIDE_W_c+1);
  req_side <= o_out_data(REQ_SIDE_W_c downto 1);
  req_tlast <= o_out_data(0);

  ring_rd_pos <= std_logic_vector(r.rd_pos(ring_log2_g-1 downto 0));
  rd_pos      <= r.rd_pos;
  eop_pop     <= r.eop_pop;
  cleared     <= r.cleared;

  ev_valid <= r.ev_valid;
  ev_bytes <= ev_bytes_q;
  ev_code  <= ev_code_q;
  ev_irq   <= ev_irq_q;
  ev_stop  <= ev_stop_q;
  p_ev : process(clk)
  begin
    if rising_edge(clk) then
      if rep_ready = '1' then
        ev_bytes_q <= unsigned(rep_out(REP_W_c-1 downto REP_W_c-DESC_LEN_BYTES_WIDTH_c));
        ev_code_q  <= rep_out(17 downto 10);
        ev_irq_q   <= rep_out(9);
        ev_stop_q  <= rep_out(8);
      end if;
    end if;
  end process;

  waiting  <= '1' when r.st = Hdr_s and r.plan_ok = '1' and r.rem_dw /= 0 and
                       r.commit - (r.rd_pos + r.t_rem) < r.nlen else '0';
  progress <= r.progress;
  idle     <= '1' when r.st = Idle_s and rep_valid = '0' and r.rep_push = '0' and
                       r.ev_valid = '0' else '0';

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.st         <= Idle_s;
        r.halted     <= '0';
        r.abort_pend <= '0';
        r.clear_pend <= '0';
        r.flush_pend <= '0';
        r.cleared    <= '0';
        r.rd_pos     <= (others => '0');
        r.t_rem      <= (others => '0');
        r.plan_ok    <= '0';
        r.eop_pop    <= '0';
        r.s2_valid   <= '0';
        r.issued     <= (others => '0');
        r.acked      <= (others => '0');
        r.rep_push   <= '0';
        r.rep_clr    <= '0';
        r.ev_valid   <= '0';
        r.progress   <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
