-- SPDX-License-Identifier: GPL-2.0
-- mprace_pcie_us_pkg: what the Xilinx adapters know about the UltraScale / 7-series Gen3
-- (PG156, 256 bits) and UltraScale+ (PG213, 512 bits, DWORD-aligned mode) PCIe blocks:
-- the AXI4-Stream sideband widths, the RQ/CQ/RC descriptor encodings and the translation
-- between them and the engine's vendor-neutral streams (mprace_dma_pkg). Only the
-- mprace_pcie_us_* entities, the Xilinx top and its board wrappers use it.
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

library work;
use work.mprace_dma_pkg.all;

package mprace_pcie_us_pkg is

  -- sideband widths of the block's interfaces at a datapath width (PG156 at 256, PG213 at 512)
  function cq_user_w(data_w : positive) return positive;
  function cc_user_w(data_w : positive) return positive;
  function rq_user_w(data_w : positive) return positive;
  function rc_user_w(data_w : positive) return positive;
  -- cfg_max_payload: 3 bits on the Gen3 cores, 2 on UltraScale+
  function cfg_mps_w(data_w : positive) return positive;

  -- request types (RQ and CQ descriptor dword 2, bits 14:11) and completion status (CC)
  constant REQ_MEM_READ_c  : std_logic_vector(3 downto 0) := "0000";
  constant REQ_MEM_WRITE_c : std_logic_vector(3 downto 0) := "0001";
  constant CPL_SC_c        : std_logic_vector(2 downto 0) := "000";
  constant CPL_UR_c        : std_logic_vector(2 downto 0) := "001";
  constant CPL_CA_c        : std_logic_vector(2 downto 0) := "100";

  -- requester completion error codes (RC descriptor dword 0, bits 15:12)
  constant RC_ERR_NONE_c    : std_logic_vector(3 downto 0) := "0000";
  constant RC_ERR_TIMEOUT_c : std_logic_vector(3 downto 0) := "1001";

  -- the RQ descriptor (4 dwords) of a request whose TLP header is hdr (the core's 4-dword form):
  -- address type untranslated, requester ID filled in by the block, TC, attributes, ECRC 0
  function rq_desc(hdr : std_logic_vector(127 downto 0)) return std_logic_vector;
  -- the engine's completion error (CPL_*_c) of an RC descriptor's error code
  function rc_cpl_err(code : std_logic_vector(3 downto 0)) return std_logic_vector;

end package mprace_pcie_us_pkg;

package body mprace_pcie_us_pkg is

  function cq_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 183; else return 85; end if;
  end function;

  function cc_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 81; else return 33; end if;
  end function;

  function rq_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 137; else return 60; end if;
  end function;

  function rc_user_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 161; else return 75; end if;
  end function;

  function cfg_mps_w(data_w : positive) return positive is
  begin
    if data_w = 512 then return 2; else return 3; end if;
  end function;

  function rq_desc(hdr : std_logic_vector(127 downto 0)) return std_logic_vector is
    variable d : std_logic_vector(127 downto 0) := (others => '0');
    variable a : std_logic_vector(63 downto 0);
  begin
    a := hdr(64+31 downto 64) & hdr(96+31 downto 96);
    d(31 downto 2)   := a(31 downto 2);          -- 1:0 address type: untranslated
    d(63 downto 32)  := a(63 downto 32);
    d(74 downto 64)  := std_logic_vector(tlp_dwords(hdr));
    if tlp_is_write(hdr) then
      d(78 downto 75) := REQ_MEM_WRITE_c;
    else
      d(78 downto 75) := REQ_MEM_READ_c;
    end if;
    d(103 downto 96) := tlp_tag(hdr);            -- 79 poisoned, 95:80 requester ID: 0
    return d;
  end function;

  function rc_cpl_err(code : std_logic_vector(3 downto 0)) return std_logic_vector is
  begin
    if code = RC_ERR_NONE_c then
      return CPL_OK_c;
    elsif code = RC_ERR_TIMEOUT_c then
      return CPL_TIMEOUT_c;
    end if;
    return CPL_FAILED_c;
  end function;

end package body mprace_pcie_us_pkg;
