// SPDX-License-Identifier: GPL-2.0
// Which board a tool opens. libpcidriver never falls back to a simulator; the tools do, so
// that a first run without hardware shows something, and they say so on stderr first.
#ifndef TOOLS_COMMON_DEVICE_HPP
#define TOOLS_COMMON_DEVICE_HPP

#include <string>

namespace tools {

// Registers the virtual board linked into the tools, so that "emu:" needs no plugin (also in
// static builds) and `list` shows it. The first thing main() does.
void link_virtual_board();

// The device to open for --device `asked` ("" = not given): asked, else $PCIDRIVER_DEVICE,
// else /dev/fpga0 if it exists, else the virtual board "emu:".
// With `announce`, the fall-back is said once, on stderr, as "TOOL: no /dev/fpga0 ...".
std::string pick_device(const std::string &asked, const char *tool, bool announce = true);

} // namespace tools

#endif
