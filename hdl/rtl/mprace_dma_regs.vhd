-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_regs: the BAR0 register file and the channel state machines (IDLE, RUNNING,
-- ERROR), driven by the register bus of the front end's BAR0 adapter. It owns HEAD, TAIL, BYTES, the
-- ring configuration, IRQ_STATUS/IRQ_ENABLE and the test-logic settings; the channels report
-- completed descriptors and errors to it, and it hands them RUN, ABORT and RESET.
-- Offsets and fields come from engine_spec_pkg; unlisted offsets read 0 and ignore writes.
-- Spec: docs/dma-engine.md sections 4 (channel operation), 5 (errors, recovery), 6 (IRQ_STATUS),
-- 7 (test registers), 8 (identification) and 9 (register map).
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_dma_regs is
  generic (
    data_w_g : positive := 256;   -- datapath: 256 or 512 bits
    clk_mhz_g : positive := 250
  );
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    -- register bus
    reg_wr     : in  std_logic;
    reg_rd     : in  std_logic;
    reg_addr   : in  std_logic_vector(11 downto 0);
    reg_wdata  : in  std_logic_vector(31 downto 0);
    reg_rdata  : out std_logic_vector(31 downto 0);
    reg_rvalid : out std_logic;
    -- link settings in use and MSI vectors granted (CAPS)
    caps_mps         : in  std_logic_vector(2 downto 0);
    caps_mrrs        : in  std_logic_vector(2 downto 0);
    caps_msi_vectors : in  std_logic_vector(3 downto 0);
    -- channels
    chan_ctrl  : out chan_ctrl_arr_t;
    chan_stat  : in  chan_stat_arr_t;
    -- interrupt sources
    irq_status : out std_logic_vector(2 downto 0);
    irq_enable : out std_logic_vector(2 downto 0);
    -- test logic
    soft_reset     : out std_logic;                      -- CONTROL.RESET (pulse)
    c2h_source     : out std_logic_vector(1 downto 0);
    h2c_sink       : out std_logic_vector(1 downto 0);
    c2h_src_chg    : out std_logic;                      -- C2H source changed, or reset (pulse)
    patgen_seed    : out std_logic_vector(31 downto 0);
    patgen_seed_wr : out std_logic;                      -- pulse
    patgen_rate    : out std_logic_vector(31 downto 0);
    check_seed     : out std_logic_vector(31 downto 0);
    check_seed_wr  : out std_logic;                      -- pulse
    check_errors   : in  std_logic_vector(31 downto 0);
    check_words    : in  std_logic_vector(31 downto 0)
  );
end entity mprace_dma_regs;

architecture rtl of mprace_dma_regs is
  constant datapath_ok_c : boolean := datapath_ok("mprace_dma_regs", data_w_g);

  constant BYTES_c  : natural := data_w_g / 8;

  constant CH_WINDOW_c : natural := CH_H2C_BASE_c - CH_C2H_BASE_c;   -- bytes per channel
  constant IRQ_DONE_BIT_c : integer_vector(0 to 1) := (IRQ_C2H_DONE_BIT_c, IRQ_H2C_DONE_BIT_c);

  type state_arr_t is array (0 to 1) of natural range 0 to 2;
  type slv32_arr_t is array (0 to 1) of std_logic_vector(31 downto 0);
  type slv64_arr_t is array (0 to 1) of std_logic_vector(63 downto 0);
  type u64_arr_t   is array (0 to 1) of unsigned(63 downto 0);
  type code_arr_t  is array (0 to 1) of code_t;

  type two_process_r is record
    rd_pend    : std_logic;                    -- a read is being answered
    rd_addr    : std_logic_vector(11 downto 0);
    rdata      : std_logic_vector(31 downto 0);
    rvalid     : std_logic;
    scratch    : std_logic_vector(31 downto 0);
    cycle_hi   : std_logic_vector(31 downto 0);
    irq_status : std_logic_vector(2 downto 0);
    irq_enable : std_logic_vector(2 downto 0);
    test_ctrl  : std_logic_vector(5 downto 0);
    src_chg    : std_logic;
    pg_seed    : std_logic_vector(31 downto 0);
    pg_seed_wr : std_logic;
    pg_rate    : std_logic_vector(31 downto 0);
    ck_seed    : std_logic_vector(31 downto 0);
    ck_seed_wr : std_logic;
    soft_reset : std_logic;
    -- channels
    state      : state_arr_t;
    run        : std_logic_vector(0 to 1);
    abort      : std_logic_vector(0 to 1);
    aborting   : std_logic_vector(0 to 1);    -- ABORT written, the channel has not reported
    hold       : unsigned(12 downto 0);       -- clocks a read has waited for it
    creset     : std_logic_vector(0 to 1);
    code       : code_arr_t;
    ring_base  : slv64_arr_t;
    ring_size  : slv32_arr_t;
    tail       : slv32_arr_t;
    head       : slv32_arr_t;
    timeout    : slv32_arr_t;
    bytes      : u64_arr_t;
    bytes_hi   : slv32_arr_t;
  end record;
  constant R_INIT_c : two_process_r := (
    rd_pend => '0', rd_addr => (others => '0'), rdata => (others => '0'), rvalid => '0',
    scratch => (others => '0'),
    cycle_hi => (others => '0'), irq_status => (others => '0'),
    irq_enable => (others => '0'), test_ctrl => (others => '0'), src_chg => '0',
    pg_seed => (others => '0'), pg_seed_wr => '0', pg_rate => (others => '0'),
    ck_seed => (others => '0'), ck_seed_wr => '0', soft_reset => '0',
    state => (others => STATE_IDLE_c), run => "00", abort => "00", aborting => "00",
    hold => (others => '0'), creset => "00",
    code => (others => (others => '0')), ring_base => (others => (others => '0')),
    ring_size => (others => (others => '0')), tail => (others => (others => '0')),
    head => (others => (others => '0')), timeout => (others => (others => '0')),
    bytes => (others => (others => '0')), bytes_hi => (others => (others => '0')));

  -- A read waits at most this long for an ABORT to take effect (16 us at 250 MHz: well inside
  -- the host's completion timeout); dma-engine.md section 4.
  constant HOLD_MAX_c : natural := 4095;

  signal r, r_next : two_process_r := R_INIT_c;
  -- the free-running counter lives apart from r: it changes every clock, r rarely does
  signal cycle     : unsigned(63 downto 0) := (others => '0');

  -- a field of a register, placed at its bit position
  function field(val : std_logic_vector; lsb, width : natural) return std_logic_vector is
  begin
    return std_logic_vector(shift_left(resize(resize(unsigned(val), width), 32), lsb));
  end function;

  function state_code(s : natural) return std_logic_vector is
  begin
    return std_logic_vector(to_unsigned(s, CH_STATUS_STATE_WIDTH_c));
  end function;

begin

  p_comb : process(all)
    variable v     : two_process_r;
    variable a     : natural range 0 to 4095;
    variable ch    : integer range -1 to 1;
    variable off   : natural range 0 to 4095;
    variable rd    : std_logic_vector(31 downto 0);
    variable wbit  : std_logic_vector(31 downto 0);
    variable reset : std_logic_vector(0 to 1);
  begin
    v := r;
    v.rvalid     := '0';
    v.src_chg    := '0';
    v.pg_seed_wr := '0';
    v.ck_seed_wr := '0';
    v.soft_reset := '0';
    v.abort      := "00";
    v.creset     := "00";
    reset        := "00";

    a := to_integer(unsigned(reg_addr));
    ch := -1;
    off := 0;
    if a >= CH_C2H_BASE_c and a < CH_C2H_BASE_c + CH_WINDOW_c then
      ch := CH_C2H_c;
      off := a - CH_C2H_BASE_c;
    elsif a >= CH_H2C_BASE_c and a < CH_H2C_BASE_c + CH_WINDOW_c then
      ch := CH_H2C_c;
      off := a - CH_H2C_BASE_c;
    end if;
    wbit := reg_wdata;
    -- a read is answered a clock after reg_rd, so that it sees every effect of the writes
    -- before it (the test-logic and channel pulses are registered once); after an ABORT it
    -- waits until the channel has reported the abort (see the end of this process)
    v.rd_pend := reg_rd;
    if reg_rd = '1' then
      v.rd_addr := reg_addr;
    end if;

    ---------------------------------------------------------------------- software writes
    if reg_wr = '1' then
      if ch >= 0 then
        if off = CHREG_CONTROL_c then
          if wbit(CH_CONTROL_RESET_LSB_c) = '1' then
            reset(ch) := '1';
          else
            if r.state(ch) /= STATE_ERROR_c then
              v.run(ch) := wbit(CH_CONTROL_RUN_LSB_c);
              v.abort(ch) := wbit(CH_CONTROL_ABORT_LSB_c);
              v.aborting(ch) := r.aborting(ch) or wbit(CH_CONTROL_ABORT_LSB_c);
            end if;
          end if;
        elsif off = CHREG_RING_BASE_LO_c and r.state(ch) /= STATE_RUNNING_c then
          v.ring_base(ch)(31 downto 0) := wbit;
        elsif off = CHREG_RING_BASE_HI_c and r.state(ch) /= STATE_RUNNING_c then
          v.ring_base(ch)(63 downto 32) := wbit;
        elsif off = CHREG_RING_SIZE_c and r.state(ch) /= STATE_RUNNING_c then
          v.ring_size(ch) := wbit;
        elsif off = CHREG_TAIL_c then
          v.tail(ch) := wbit;
        elsif off = CHREG_TIMEOUT_US_c then
          v.timeout(ch) := wbit;
        end if;
      else
        case a is
          when REG_CONTROL_c =>
            if wbit(CONTROL_RESET_LSB_c) = '1' then
              v.soft_reset := '1';
              reset := "11";
            end if;
          when REG_SCRATCH_c =>
            v.scratch := wbit;
          when REG_IRQ_STATUS_c =>
            v.irq_status := r.irq_status and not wbit(2 downto 0);
          when REG_IRQ_ENABLE_c =>
            v.irq_enable := wbit(2 downto 0);
          when REG_TEST_CONTROL_c =>
            v.test_ctrl(1 downto 0) := wbit(TEST_CONTROL_C2H_SOURCE_LSB_c + 1 downto
                                            TEST_CONTROL_C2H_SOURCE_LSB_c);
            v.test_ctrl(5 downto 4) := wbit(TEST_CONTROL_H2C_SINK_LSB_c + 1 downto
                                            TEST_CONTROL_H2C_SINK_LSB_c);
            -- only a new C2H source drops what the old one left (spec section 7); a write
            -- that changes the H2C sink alone, or nothing, leaves the C2H data alone
            if v.test_ctrl(1 downto 0) /= r.test_ctrl(1 downto 0) then
              v.src_chg := '1';
            end if;
          when REG_PATGEN_SEED_c =>
            v.pg_seed := wbit;
            v.pg_seed_wr := '1';
          when REG_PATGEN_RATE_c =>
            v.pg_rate := wbit;
          when REG_CHECK_SEED_c =>
            v.ck_seed := wbit;
            v.ck_seed_wr := '1';
          when others =>
            null;
        end case;
      end if;
    end if;

    ---------------------------------------------------------------------- channel events
    -- after the writes, so that a STOP or an error clears RUN for at least one clock. In the
    -- clock after a RESET (creset) an event the channel made before it saw the reset would
    -- count into the zeroed HEAD and BYTES (or set ERROR): it belongs to the forgotten ring.
    for c in 0 to 1 loop
      if chan_stat(c).done = '1' and r.creset(c) = '0' then
        v.head(c)  := std_logic_vector(unsigned(r.head(c)) + 1);
        v.bytes(c) := v.bytes(c) + chan_stat(c).bytes;
        if chan_stat(c).irq = '1' then
          v.irq_status(IRQ_DONE_BIT_c(c)) := '1';
        end if;
        if chan_stat(c).stop = '1' then
          v.run(c) := '0';
        end if;
      end if;
      if chan_stat(c).err = '1' and r.creset(c) = '0' then
        v.aborting(c) := '0';
        v.state(c) := STATE_ERROR_c;
        v.code(c)  := chan_stat(c).err_code;
        v.run(c)   := '0';
        -- BYTES stays: it counts completed descriptors (dma-engine.md section 5)
        v.irq_status(IRQ_ERROR_BIT_c) := '1';
      end if;
      -- state machine
      if r.state(c) = STATE_IDLE_c and v.run(c) = '1' then
        v.state(c) := STATE_RUNNING_c;
      elsif r.state(c) = STATE_RUNNING_c and r.run(c) = '0' and chan_stat(c).idle = '1'
            and chan_stat(c).err = '0' then
        v.state(c) := STATE_IDLE_c;
      end if;
      if reset(c) = '1' then
        v.state(c)  := STATE_IDLE_c;
        v.run(c)    := '0';
        v.abort(c)  := '0';
        v.aborting(c) := '0';
        v.code(c)   := (others => '0');
        v.head(c)   := (others => '0');
        v.tail(c)   := (others => '0');
        v.bytes(c)  := (others => '0');
        v.creset(c) := '1';
      end if;
    end loop;

    if v.soft_reset = '1' then
      v.scratch    := (others => '0');
      v.irq_status := (others => '0');
      v.irq_enable := (others => '0');
      v.test_ctrl  := (others => '0');
      v.pg_seed    := (others => '0');
      v.pg_rate    := (others => '0');
      v.ck_seed    := (others => '0');
      v.pg_seed_wr := '1';           -- restart the generator and the checker at seed 0
      v.ck_seed_wr := '1';
      v.src_chg    := '1';
    end if;

    ---------------------------------------------------------------------- reads
    a := to_integer(unsigned(r.rd_addr));
    ch := -1;
    off := 0;
    if a >= CH_C2H_BASE_c and a < CH_C2H_BASE_c + CH_WINDOW_c then
      ch := CH_C2H_c;
      off := a - CH_C2H_BASE_c;
    elsif a >= CH_H2C_BASE_c and a < CH_H2C_BASE_c + CH_WINDOW_c then
      ch := CH_H2C_c;
      off := a - CH_H2C_BASE_c;
    end if;
    rd := (others => '0');
    if ch >= 0 then
      if off = CHREG_CONTROL_c then
        rd(CH_CONTROL_RUN_LSB_c) := r.run(ch);
      elsif off = CHREG_STATUS_c then
        rd := field(state_code(r.state(ch)), CH_STATUS_STATE_LSB_c, CH_STATUS_STATE_WIDTH_c) or
              field((0 => chan_stat(ch).busy), CH_STATUS_BUSY_LSB_c, CH_STATUS_BUSY_WIDTH_c) or
              field(r.code(ch), CH_STATUS_ERROR_CODE_LSB_c, CH_STATUS_ERROR_CODE_WIDTH_c);
      elsif off = CHREG_RING_BASE_LO_c then
        rd := r.ring_base(ch)(31 downto 0);
      elsif off = CHREG_RING_BASE_HI_c then
        rd := r.ring_base(ch)(63 downto 32);
      elsif off = CHREG_RING_SIZE_c then
        rd := r.ring_size(ch);
      elsif off = CHREG_TAIL_c then
        rd := r.tail(ch);
      elsif off = CHREG_HEAD_c then
        rd := r.head(ch);
      elsif off = CHREG_TIMEOUT_US_c then
        rd := r.timeout(ch);
      elsif off = CHREG_BYTES_LO_c then
        rd := std_logic_vector(r.bytes(ch)(31 downto 0));
        if r.rd_pend = '1' then
          v.bytes_hi(ch) := std_logic_vector(r.bytes(ch)(63 downto 32));
        end if;
      elsif off = CHREG_BYTES_HI_c then
        rd := r.bytes_hi(ch);
      end if;
    else
      case a is
        when REG_MAGIC_c =>
          rd := MAGIC_c;
        when REG_VERSION_c =>
          rd := field(std_logic_vector(to_unsigned(VERSION_MAJOR_c, VERSION_MAJOR_WIDTH_c)),
                      VERSION_MAJOR_LSB_c, VERSION_MAJOR_WIDTH_c) or
                field(std_logic_vector(to_unsigned(VERSION_MINOR_c, VERSION_MINOR_WIDTH_c)),
                      VERSION_MINOR_LSB_c, VERSION_MINOR_WIDTH_c);
        when REG_CAPS_c =>
          rd := field(std_logic_vector(to_unsigned(BYTES_c, CAPS_DATAPATH_BYTES_WIDTH_c)),
                      CAPS_DATAPATH_BYTES_LSB_c, CAPS_DATAPATH_BYTES_WIDTH_c) or
                field(std_logic_vector(to_unsigned(1, CAPS_C2H_CHANNELS_WIDTH_c)),
                      CAPS_C2H_CHANNELS_LSB_c, CAPS_C2H_CHANNELS_WIDTH_c) or
                field(std_logic_vector(to_unsigned(1, CAPS_H2C_CHANNELS_WIDTH_c)),
                      CAPS_H2C_CHANNELS_LSB_c, CAPS_H2C_CHANNELS_WIDTH_c) or
                field(caps_mps, CAPS_MPS_LSB_c, CAPS_MPS_WIDTH_c) or
                field(caps_mrrs, CAPS_MRRS_LSB_c, CAPS_MRRS_WIDTH_c) or
                field("1", CAPS_PATGEN_LSB_c, CAPS_PATGEN_WIDTH_c) or
                field("1", CAPS_CHECKER_LSB_c, CAPS_CHECKER_WIDTH_c) or
                field("1", CAPS_LOOPBACK_LSB_c, CAPS_LOOPBACK_WIDTH_c) or
                field(caps_msi_vectors, CAPS_MSI_VECTORS_LSB_c, CAPS_MSI_VECTORS_WIDTH_c);
        when REG_CLOCK_MHZ_c =>
          rd := std_logic_vector(to_unsigned(clk_mhz_g, 32));
        when REG_SCRATCH_c =>
          rd := r.scratch;
        when REG_CYCLE_LO_c =>
          rd := std_logic_vector(cycle(31 downto 0));
          if r.rd_pend = '1' then
            v.cycle_hi := std_logic_vector(cycle(63 downto 32));
          end if;
        when REG_CYCLE_HI_c =>
          rd := r.cycle_hi;
        when REG_IRQ_STATUS_c =>
          rd(2 downto 0) := r.irq_status;
        when REG_IRQ_ENABLE_c =>
          rd(2 downto 0) := r.irq_enable;
        when REG_TEST_CONTROL_c =>
          rd := field(r.test_ctrl(1 downto 0), TEST_CONTROL_C2H_SOURCE_LSB_c,
                      TEST_CONTROL_C2H_SOURCE_WIDTH_c) or
                field(r.test_ctrl(5 downto 4), TEST_CONTROL_H2C_SINK_LSB_c,
                      TEST_CONTROL_H2C_SINK_WIDTH_c);
        when REG_PATGEN_SEED_c =>
          rd := r.pg_seed;
        when REG_PATGEN_RATE_c =>
          rd := r.pg_rate;
        when REG_CHECK_SEED_c =>
          rd := r.ck_seed;
        when REG_CHECK_ERRORS_c =>
          rd := check_errors;
        when REG_CHECK_WORDS_c =>
          rd := check_words;
        when others =>
          null;
      end case;
    end if;
    if r.rd_pend = '1' and r.aborting /= "00" and r.hold < HOLD_MAX_c then
      v.rd_pend := '1';                -- the channel reports an abort in a few clocks
      v.hold    := r.hold + 1;
    elsif r.rd_pend = '1' then
      v.rdata  := rd;
      v.rvalid := '1';
      v.hold   := (others => '0');
      if r.hold = HOLD_MAX_c then
        v.aborting := "00";            -- never reported (not expected): stop waiting for it
      end if;
    end if;

    r_next <= v;
  end process;

  reg_rdata  <= r.rdata;
  reg_rvalid <= r.rvalid;

  g_ctrl : for c in 0 to 1 generate
    chan_ctrl(c).ring_base  <= r.ring_base(c);
    chan_ctrl(c).ring_size  <= r.ring_size(c);
    chan_ctrl(c).tail       <= r.tail(c);
    chan_ctrl(c).head       <= r.head(c);
    chan_ctrl(c).timeout_us <= r.timeout(c);
    chan_ctrl(c).run        <= '1' when r.run(c) = '1' and r.state(c) = STATE_RUNNING_c else '0';
    chan_ctrl(c).abort      <= r.abort(c);
    chan_ctrl(c).reset      <= r.creset(c);
  end generate;

  irq_status     <= r.irq_status;
  irq_enable     <= r.irq_enable;
  soft_reset     <= r.soft_reset;
  c2h_source     <= r.test_ctrl(1 downto 0);
  h2c_sink       <= r.test_ctrl(5 downto 4);
  c2h_src_chg    <= r.src_chg;
  patgen_seed    <= r.pg_seed;
  patgen_seed_wr <= r.pg_seed_wr;
  patgen_rate    <= r.pg_rate;
  check_seed     <= r.ck_seed;
  check_seed_wr  <= r.ck_seed_wr;

  p_cycle : process(clk)
  begin
    if rising_edge(clk) then
      cycle <= cycle + 1;
    end if;
  end process;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.rd_pend    <= '0';
        r.rvalid     <= '0';
        r.scratch    <= (others => '0');
        r.irq_status <= (others => '0');
        r.irq_enable <= (others => '0');
        r.test_ctrl  <= (others => '0');
        r.src_chg    <= '0';
        r.pg_seed    <= (others => '0');
        r.pg_seed_wr <= '1';          -- load the reset seeds into the test logic
        r.pg_rate    <= (others => '0');
        r.ck_seed    <= (others => '0');
        r.ck_seed_wr <= '1';
        r.soft_reset <= '0';
        r.state      <= (others => STATE_IDLE_c);
        r.run        <= "00";
        r.abort      <= "00";
        r.aborting   <= "00";
        r.hold       <= (others => '0');
        r.creset     <= "11";
        r.code       <= (others => (others => '0'));
        r.head       <= (others => (others => '0'));
        r.tail       <= (others => (others => '0'));
        r.bytes      <= (others => (others => '0'));
        r.ring_base  <= (others => (others => '0'));
        r.ring_size  <= (others => (others => '0'));
        r.timeout    <= (others => (others => '0'));
      end if;
    end if;
  end process;

end architecture rtl;
