// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace: bring-up and debugging of a board with our DMA engine, like pcitool or Xilinx's
// reg_rw / dma_to_device / dma_from_device. docs/mprace-cli.md and mprace(1) describe it.
#include "config.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <getopt.h>
#include <iostream>

#include "cli.hpp"
#include "common/device.hpp"
#include "common/units.hpp"

using namespace cli;

namespace {

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

void usage(std::FILE *f)
{
	std::fprintf(f,
"Usage: mprace [--device NAME] [-q] COMMAND [ARGS...] [ ';' COMMAND [ARGS...] ]...\n"
"       mprace COMMAND --help\n"
"Registers, BARs, DMA, interrupts and the test logic of a board with the mprace DMA engine.\n"
"\n"
"Options:\n"
"  -d, --device NAME  /dev/fpgaN, fpgaN, N, the virtual board emu:[OPTIONS] or the simulated\n"
"                     RTL sim:[OPTIONS]; default:\n"
"                     $PCIDRIVER_DEVICE, /dev/fpga0, else the virtual board\n"
"  -q, --quiet        print only values (reg read) and no confirmations\n"
"      --no-check     open a board whose BAR0 is not (yet) our engine (no MAGIC/VERSION check)\n"
"  -h, --help         this text;  -V, --version  the version\n"
"\n"
"Commands:\n");
	for (const auto &c : commands())
		std::fprintf(f, "  %-13s %-36s %s\n", c.name, c.synopsis, c.summary);
	std::fprintf(f,
"\n"
"Several commands separated by a lone ';' (quote it from the shell: \\;) or read from a\n"
"script by 'run' act on one open board. The virtual board (emu:) lives only as long as the\n"
"process that opened it, so each mprace invocation on emu: sees a fresh board.\n"
"Exit status: 0 ok, 1 the board or the data said no, 2 bad usage.\n");
}

// The command whose name matches the first one or two words of argv; `used` gets the count.
const Command *find_command(const std::vector<std::string> &argv, std::size_t *used)
{
	for (const auto &c : commands()) {
		std::vector<std::string> words = tools::split(c.name, ' ');
		if (argv.size() >= words.size() && std::equal(words.begin(), words.end(), argv.begin())) {
			*used = words.size();
			return &c;
		}
	}
	return nullptr;
}

void command_help(const Command &c, std::FILE *f)
{
	std::fprintf(f, "Usage: mprace [--device NAME] %s %s\n%s.\n", c.name, c.synopsis, c.summary);
	if (*c.help)
		std::fprintf(f, "\n%s", c.help);
}

} // namespace

namespace cli {

bool print_help(const std::string &command, std::FILE *f)
{
	if (command.empty()) {
		usage(f);
		return true;
	}
	bool any = false;
	for (const auto &c : commands())
		if (c.name == command || std::string(c.name).compare(0, command.size() + 1, command + " ") == 0) {
			if (any)
				std::fprintf(f, "\n");
			command_help(c, f);
			any = true;
		}
	return any;
}

void Session::run(const std::vector<std::string> &argv)
{
	if (argv.empty())
		throw UsageError("", "no command given");
	std::size_t used = 0;
	const Command *c = find_command(argv, &used);
	if (!c) {
		std::string first = argv[0];
		bool group = false;
		for (const auto &k : commands())
			if (std::string(k.name).compare(0, first.size() + 1, first + " ") == 0)
				group = true;
		if (group)
			throw UsageError(first, argv.size() > 1 ? "unknown command '" + first + " " + argv[1] + "'"
								: "'" + first + "' needs a subcommand");
		throw UsageError("", "unknown command '" + first + "'");
	}
	std::vector<std::string> rest(argv.begin() + static_cast<long>(used), argv.end());
	Args args(c->name, rest, c->valued, c->flags);
	c->fn(*this, args);
}

// `run FILE`: one command per line on this session; stops at the first failure.
void script_runner(Session &s, const Args &a)
{
	a.max_positionals(1);
	const std::string &path = a.at(0, "script file ('-' for standard input)");
	std::ifstream file;
	std::istream *in = &std::cin;
	if (path != "-") {
		file.open(path);
		if (!file)
			throw Failed("cannot read " + path + ": " + std::strerror(errno));
		in = &file;
	}
	std::string line;
	unsigned n = 0;
	while (std::getline(*in, line)) {
		++n;
		auto words = split_words(line);
		if (words.empty())
			continue;
		if (words[0] == "run")
			throw Failed(tools::strprintf("%s:%u: 'run' cannot be nested", path.c_str(), n));
		try {
			s.run(words);
		} catch (const UsageError &e) {
			throw UsageError(e.command(), tools::strprintf("%s:%u: %s", path.c_str(), n, e.what()));
		} catch (const std::exception &e) {
			throw Failed(tools::strprintf("%s:%u: %s", path.c_str(), n, e.what()));
		}
		std::fflush(stdout);
	}
}

} // namespace cli

int main(int argc, char **argv)
{
	tools::link_virtual_board();
	static const struct option longopts[] = {
		{"device", required_argument, nullptr, 'd'},
		{"quiet", no_argument, nullptr, 'q'},
		{"no-check", no_argument, nullptr, 'N'},
		{"help", no_argument, nullptr, 'h'},
		{"version", no_argument, nullptr, 'V'},
		{nullptr, 0, nullptr, 0},
	};
	std::string device;
	bool quiet = false, no_check = false;
	opterr = 0;
	int c;
	// '+': options stop at the command, whose own options follow it.
	while ((c = getopt_long(argc, argv, "+:d:qhV", longopts, nullptr)) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'q': quiet = true; break;
		case 'N': no_check = true; break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': std::printf("mprace (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION); return EXIT_OK;
		case ':':
			std::fprintf(stderr, "mprace: option %s needs an argument\n\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		default:
			std::fprintf(stderr, "mprace: unknown option %s\n\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	std::vector<std::vector<std::string>> cmds(1);
	for (int i = optind; i < argc; ++i) {
		if (!std::strcmp(argv[i], ";"))
			cmds.emplace_back();
		else
			cmds.back().push_back(argv[i]);
	}
	if (cmds.size() == 1 && cmds[0].empty()) {
		std::fprintf(stderr, "mprace: no command given\n\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	// `mprace help [CMD]` and `mprace CMD... --help`: help before anything touches a board.
	for (const auto &cmd : cmds) {
		if (cmd.empty()) {
			std::fprintf(stderr, "mprace: empty command between ';'\n");
			return EXIT_USAGE;
		}
		std::string name;
		bool help = cmd[0] == "help";
		for (std::size_t k = help ? 1 : 0; k < cmd.size(); ++k) {
			if (cmd[k] == "--help" || cmd[k] == "-h") {
				help = true;
				break;
			}
			if (cmd[k][0] != '-' && k < (help ? 3u : 2u))
				name += (name.empty() ? "" : " ") + cmd[k];
		}
		if (help) {
			// the longest prefix of the words that names a command or a group
			while (!name.empty() && !print_help(name, stdout)) {
				auto sp = name.rfind(' ');
				if (sp == std::string::npos) {
					std::fprintf(stderr, "mprace: unknown command '%s'\n\n", name.c_str());
					usage(stderr);
					return EXIT_USAGE;
				}
				name.resize(sp);
			}
			if (name.empty())
				usage(stdout);
			return EXIT_OK;
		}
	}

	Session session(device, no_check, quiet);
	for (const auto &cmd : cmds) {
		try {
			session.run(cmd);
		} catch (const UsageError &e) {
			std::fprintf(stderr, "mprace: %s\n\n", e.what());
			if (e.command().empty() || !print_help(e.command(), stderr))
				usage(stderr);
			return EXIT_USAGE;
		} catch (const std::exception &e) {
			std::fflush(stdout);
			std::fprintf(stderr, "mprace: %s\n", e.what());
			return EXIT_FAILED;
		}
		std::fflush(stdout);
	}
	return EXIT_OK;
}
