// SPDX-License-Identifier: GPL-2.0
/* Prints the options table (markdown) of "emu" or "sim" from the one table the parser uses. */
#include <stdio.h>
#include <string.h>

#include "options.h"

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "emu") && strcmp(argv[1], "sim"))) {
		fprintf(stderr, "usage: %s emu|sim\n", argv[0]);
		return 2;
	}
	vb_options_markdown(strcmp(argv[1], "emu") ? VB_SIM : VB_EMU, stdout);
	return 0;
}
