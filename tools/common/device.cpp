// SPDX-License-Identifier: GPL-2.0
#include "common/device.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "vboard/vboard.h"

namespace tools {

void link_virtual_board()
{
	vboard_register(); // fails only when another backend serves "emu": that one is used
}

std::string pick_device(const std::string &asked, const char *tool, bool announce)
{
	static bool announced = false;

	if (!asked.empty())
		return asked;
	if (const char *env = std::getenv("PCIDRIVER_DEVICE"))
		if (*env)
			return env;
	if (access("/dev/fpga0", F_OK) == 0)
		return "/dev/fpga0";
	if (announce && !announced) {
		announced = true;
		std::fprintf(stderr, "%s: no /dev/fpga0, using the virtual board (emu:); choose a "
				     "device with --device or PCIDRIVER_DEVICE\n", tool);
	}
	return "emu:";
}

} // namespace tools
