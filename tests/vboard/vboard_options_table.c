// SPDX-License-Identifier: GPL-2.0
/* Prints the virtual board's options table (markdown) from the table its parser uses. */
#include <stdio.h>

#include "emu.h"

int main(void)
{
	emu_options_markdown(stdout);
	return 0;
}
