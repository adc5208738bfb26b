-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_irq: raises the interrupts of IRQ_STATUS through the Xilinx block's
-- configuration interrupt interface (cfg_interrupt_*).
--   * MSI: which message when is mprace_dma_msi's; a message is a one-clock pulse on
--     cfg_interrupt_msi_int, done when the block answers cfg_interrupt_msi_sent or _fail (a
--     failed message, e.g. masked, is not retried).
--   * Legacy INTx (MSI disabled): INTA is asserted while IRQ_STATUS and IRQ_ENABLE overlap.
-- Spec: docs/dma-engine.md section 6 (interrupts) and the interrupt table of section 9.
library ieee;
use ieee.std_logic_1164.all;

entity mprace_pcie_us_irq is
  port (
    clk        : in  std_logic;
    rst        : in  std_logic;
    irq_status : in  std_logic_vector(2 downto 0);
    irq_enable : in  std_logic_vector(2 downto 0);
    msi_vectors : out std_logic_vector(3 downto 0) := (others => '0');
    -- configuration interrupt controller interface of the core (function 0 only)
    cfg_interrupt_int                 : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_pending             : out std_logic_vector(3 downto 0) := (others => '0');
    cfg_interrupt_sent                : in  std_logic;
    cfg_interrupt_msi_enable          : in  std_logic_vector(3 downto 0);
    cfg_interrupt_msi_mmenable        : in  std_logic_vector(11 downto 0);
    cfg_interrupt_msi_int             : out std_logic_vector(31 downto 0) := (others => '0');
    cfg_interrupt_msi_sent            : in  std_logic;
    cfg_interrupt_msi_fail            : in  std_logic
  );
end entity mprace_pcie_us_irq;

architecture rtl of mprace_pcie_us_irq is
  signal fire   : std_logic;
  signal vector : natural range 0 to 31;
  signal done   : std_logic;
  signal intx   : std_logic;
begin

  done <= cfg_interrupt_msi_sent or cfg_interrupt_msi_fail;

  i_msi : entity work.mprace_dma_msi
    port map (
      clk => clk, rst => rst, irq_status => irq_status, irq_enable => irq_enable,
      msi_on => cfg_interrupt_msi_enable(0), msi_mme => cfg_interrupt_msi_mmenable(2 downto 0),
      msi_vectors => msi_vectors, fire => fire, vector => vector, done => done, intx => intx);

  p_msi_int : process(all)
  begin
    cfg_interrupt_msi_int <= (others => '0');
    cfg_interrupt_msi_int(vector) <= fire;
  end process;

  cfg_interrupt_int     <= "000" & intx;
  cfg_interrupt_pending <= "000" & intx;

end architecture rtl;
