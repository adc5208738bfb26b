-- SPDX-License-Identifier: GPL-2.0
-- mprace_dma_msi: which MSI to send when, for any front end. A source asks for an interrupt
-- when (IRQ_STATUS and IRQ_ENABLE) of its bit goes from 0 to 1: its bit is set while enabled,
-- or it is enabled while pending.
--   * With at least 4 vectors granted (Multiple Message Enable >= 2) source s uses vector s
--     (engine_spec_pkg IRQ_*_VECTOR); with fewer, all use vector 0 and requests pending together
--     share one message.
--   * One message at a time: `fire` pulses for one clock with `vector`, then nothing more fires
--     until the front end says `done` (sent, or failed: a failed message is not retried).
--   * With MSI off nothing is remembered; `intx` is the legacy interrupt line instead: high
--     while IRQ_STATUS and IRQ_ENABLE overlap (the front end asserts INTA with it).
-- `msi_vectors` is CAPS.MSI_VECTORS: the granted count, 0 with MSI off, at most 8 (the 4-bit
-- field cannot hold 16 or 32; the engine never uses more than 4).
-- Spec: docs/dma-engine.md section 6 (interrupts) and the interrupt table of section 9.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.engine_spec_pkg.all;

entity mprace_dma_msi is
  port (
    clk         : in  std_logic;
    rst         : in  std_logic;
    irq_status  : in  std_logic_vector(2 downto 0);
    irq_enable  : in  std_logic_vector(2 downto 0);
    msi_on      : in  std_logic;                      -- MSI enabled by the host
    msi_mme     : in  std_logic_vector(2 downto 0);   -- Multiple Message Enable: log2 granted
    msi_vectors : out std_logic_vector(3 downto 0) := (others => '0');
    fire        : out std_logic := '0';               -- pulse: send the MSI of `vector`
    vector      : out natural range 0 to 31 := 0;
    done        : in  std_logic;                      -- the message fired last has gone
    intx        : out std_logic := '0'                -- INTA's level while MSI is off
  );
end entity mprace_dma_msi;

architecture rtl of mprace_dma_msi is

  constant VECTOR_c : integer_vector(0 to 2) :=
    (IRQ_C2H_DONE_BIT_c => IRQ_C2H_DONE_VECTOR_c, IRQ_H2C_DONE_BIT_c => IRQ_H2C_DONE_VECTOR_c,
     IRQ_ERROR_BIT_c => IRQ_ERROR_VECTOR_c);

  type two_process_r is record
    active  : std_logic_vector(2 downto 0);   -- IRQ_STATUS and IRQ_ENABLE, last clock
    pending : std_logic_vector(2 downto 0);   -- rising edges not yet signalled
    waiting : std_logic;                      -- a message is on its way
    fire    : std_logic;
    vector  : natural range 0 to 31;
    intx    : std_logic;
  end record;
  constant R_INIT_c : two_process_r := (active => "000", pending => "000", waiting => '0',
                                        fire => '0', vector => 0, intx => '0');

  signal r, r_next : two_process_r := R_INIT_c;
  signal per_src   : std_logic;   -- one vector per source

begin

  per_src <= '1' when unsigned(msi_mme) >= 2 else '0';

  p_caps : process(all)
  begin
    msi_vectors <= (others => '0');
    if msi_on = '1' then
      case msi_mme is
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
    v.fire := '0';
    vec := 0;
    act := irq_status and irq_enable;
    v.active  := act;
    v.pending := r.pending or (act and not r.active);
    v.intx    := '0';
    if act /= "000" and msi_on = '0' then
      v.intx := '1';
    end if;

    if r.waiting = '1' then
      if done = '1' then
        v.waiting := '0';
      end if;
    elsif msi_on = '0' then
      v.pending := (others => '0');
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
        v.pending := act and not r.active;  -- one message for everything pending so far
      end if;
      v.fire    := '1';
      v.vector  := vec;
      v.waiting := '1';
    end if;
    r_next <= v;
  end process;

  fire   <= r.fire;
  vector <= r.vector;
  intx   <= r.intx;

  p_seq : process(clk)
  begin
    if rising_edge(clk) then
      r <= r_next;
      if rst = '1' then
        r.pending <= "000";
        r.waiting <= '0';
        r.fire    <= '0';
        r.intx    <= '0';
      end if;
    end if;
  end process;

end architecture rtl;
