-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_irq: raises the interrupts of IRQ_STATUS through the Xilinx block's configuration
-- interrupt interface (cfg_interrupt_*). A source raises an interrupt when (IRQ_STATUS and IRQ_ENABLE) of its bit
-- goes from 0 to 1: its bit is set while enabled, or it is enabled while pending.
--   * MSI with at least 4 vectors granted: source s uses vector s (engine_spec_pkg IRQ_*_VECTOR);
--     with fewer, all sources use vector 0 and requests pending together share one message.
--   * One MSI at a time: cfg_interrupt_msi_int carries a one-clock pulse, then the block waits
--     for cfg_interrupt_msi_sent or _fail (a failed message, e.g. masked, is not retried).
--   * Legacy INTx (MSI disabled): INTA is asserted while IRQ_STATUS and IRQ_ENABLE overlap.
-- `msi_vectors` is CAPS.MSI_VECTORS: the granted count, 0 with MSI disabled, at most 8 (the
-- 4-bit field cannot hold 16 or 32; the engine never uses more than 4).
-- Spec: docs/dma-engine.md section 6 (interrupts) and the interrupt table of section 9.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;
use work.mprace_dma_pkg.all;

entity mprace_pcie_us_irq is
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    irq_status : in  std_logic_vector(2 downto 0);
    irq_enable : in  std_logic_vector(2 downto 0);
    msi_vectors : out std_logic_vector(3 downto 0);
    -- configuration interrupt controller interface of the core (function 0 only)
    cfg_interrupt_int                 : out std_logic_vector(3 downto 0);
    cfg_interrupt_pending             : out std_logic_vector(3 downto 0);
    cfg_interrupt_sent                : in  std_logic;
    cfg_interrupt_msi_enable          : in  std_logic_vector(3 downto 0);
    cfg_interrupt_msi_mmenable        : in  std_logic_vector(11 downto 0);
    cfg_interrupt_msi_int             : out std_logic_vector(31 downto 0);
    cfg_interrupt_msi_sent            : in  std_logic;
    cfg_interrupt_msi_fail            : in  std_logic
  );
end entity mprace_pcie_us_irq;

architecture rtl of mprace_pcie_us_irq is

  constant VECTOR_c : integer_vector(0 to 2) :=
    (IRQ_C2H_DONE_BIT_c => IRQ_C2H_DONE_VECTOR_c, IRQ_H2C_DONE_BIT_c => IRQ_H2C_DONE_VECTOR_c,
     IRQ_ERROR_BIT_c => IRQ_ERROR_VECTOR_c);

  type two_process_r is record
    active  : std_logic_vector(2 downto 0);   -- IRQ_STATUS and IRQ_ENABLE, last clock
    pending : std_logic_vector(2 downto 0);   -- rising edges not yet signalled
    waiting : std_logic;                      -- an MSI is on its way
    msi_int : std_logic_vector(31 downto 0);
    intx    : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (active => "000", pending => "000", waiting => '0',
                                        msi_int => (others => '0'), intx => '0');

  signal r, r_next : two_process_r := R_INIT_c;
  signal msi_on    : std_logic;
  signal per_src   : std_logic;   -- one vector per source

begin

  msi_on  <= cfg_interrupt_msi_enable(0);
  per_src <= '1' when unsigned(cfg_interrupt_msi_mmenable(2 downto 0)) >= 2 else '0';

  p_caps : process(all)
  begin
    msi_vectors <= (others => '0');
    if msi_on = '1' then
      case cfg_interrupt_msi_mmenable(2 downto 0) is
        when "000"  => msi_vectors <= x"1";
        when "001"  => msi_vectors <= x"2";
        when "010"  => msi_vectors <= x"4";
        when others => msi_vectors <= x"8";
      end case;
    end if;
  end process;

  p_comb : process(all)
    variable v   : two_process_r;
    variable act : std_logic_vector(2 downto 0);
    variable vec : natural range 0 to 31;
  begin
    v := r;
    v.msi_int := (others => '0');
    vec := 0;
    act := irq_status and irq_enable;
    v.active  := act;
    v.pending := r.pending or (act and not r.active);
    v.intx    := '0';
    if act /= "000" and msi_on = '0' then
      v.intx := '1';
    end if;

    if r.waiting = '1' then
      if cfg_interrupt_msi_sent = '1' or cfg_interrupt_msi_fail = '1' then
        v.waiting := '0';
      end if;
    elsif msi_on = '0' then
      v.pending := (others => '0');       -- INTx carries the level instead
    elsif r.pending /= "000" then
      if per_src = '1' then
        for s in 2 downto 0 loop
          if r.pending(s) = '1' then
            vec := VECTOR_c(s);
          end if;
        end loop;
        for s in 0 to 2 loop
          if VECTOR_c(s) = vec then
            v.pending(s) := '0';
          end if;
        end loop;
      else
        vec := 0;
        v.pending := act and not r.active;  -- one message for everything pending so far
      end if;
      v.msi_int(vec) := '1';
      v.waiting := '1';
    end if;
    r_next <= v;
  end process;

  cfg_interrupt_msi_int <= r.msi_int;
  cfg_interrupt_int     <= "000" & r.intx;
  cfg_interrupt_pending <= "000" & r.intx;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.pending <= "000";
        r.waiting <= '0';
        r.msi_int <= (others => '0');
        r.intx    <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
