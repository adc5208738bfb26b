// SPDX-License-Identifier: GPL-2.0-or-later
//
// What the mprace tool's commands share (session.cpp): parsing their arguments (each fails
// with the command's usage), naming the engine's states and test routes, reading and writing
// data files, and the engine and DMA buffer of one command.
#ifndef TOOLS_CLI_UTIL_HPP
#define TOOLS_CLI_UTIL_HPP

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

// Numbers and sizes of an argument (tools' one grammar); UsageError naming `what`.
std::uint64_t num(const Args &a, const std::string &text, const char *what);
std::uint32_t num32(const Args &a, const std::string &text, const char *what);
std::uint64_t size_arg(const Args &a, const std::string &text);

// A register by name (from the spec, case-insensitive: SCRATCH, C2H_HEAD) or BAR0 offset.
struct Reg {
	std::uint32_t offset;
	std::string name; // "" when the offset has none
	const char *access;
};
Reg parse_reg(const Args &a, const std::string &text);
std::string reg_label(const Reg &r);   // "NAME (0xOFF)" or "0xOFF"

void hexdump(const void *data, std::size_t len, std::uint64_t base);
// A file's bytes ('-': stdin); Failed when it cannot be read.
std::vector<unsigned char> read_file(const Args &a, const std::string &path);
// Where -o sends data ('-': stdout), opened before the transfer, so that a path that cannot
// be written fails before the board moves anything (and no data is lost); Failed on an error.
class Output {
public:
	explicit Output(const std::string &path);
	void write(const void *data, std::size_t len);

private:
	std::string path_;
	std::ofstream file_;
};
// The command's -o, opened now; none without -o.
std::optional<Output> open_output(const Args &a);
// Progress lines go to stderr when the data itself goes to stdout.
std::FILE *info_stream(const Args &a);

// The counter pattern (mprace-spec/pattern.h) in whole words; check_pattern: the first bad
// word or -1.
void fill_pattern(void *buf, std::size_t bytes, std::uint32_t seed);
long long check_pattern(const void *buf, std::size_t bytes, std::uint32_t seed);

const char *state_name(unsigned s);
const char *source_name(mprace::C2HSource s);
const char *sink_name(mprace::H2CSink s);
mprace::C2HSource parse_source(const Args &a, const std::string &t);
mprace::H2CSink parse_sink(const Args &a, const std::string &t);
mprace::Channel parse_channel(const Args &a, const std::string &t);

// The engine, with a --timeout applied.
mprace::DMAEngine &engine_for(Session &s, const Args &a);
// A DMA buffer for one command: a held one (--buffer ID), or a new one of kernel memory
// (default) or user memory (--umem) that lives until `tmp` goes.
mprace::DMABuffer &dma_buffer(Session &s, const Args &a, std::size_t size, pd_dma_dir dir,
			      HeldBuffer &tmp);

std::string rate(std::uint64_t bytes, double s);   // "12.3 us, 456.7 MB/s"
double since(std::chrono::steady_clock::time_point t0);

// The handlers of the command table (commands.cpp), by group.
// cmd_board.cpp
void cmd_list(Session &s, const Args &a);   // cmd_platform.cpp
void cmd_doctor(Session &s, const Args &a);
void cmd_selftest(Session &s, const Args &a); // cmd_selftest.cpp
void cmd_info(Session &s, const Args &a);
void cmd_reg_read(Session &s, const Args &a);
void cmd_reg_write(Session &s, const Args &a);
void cmd_reg_dump(Session &s, const Args &a);
void cmd_bar_read(Session &s, const Args &a);
void cmd_bar_write(Session &s, const Args &a);
void cmd_irq_status(Session &s, const Args &a);
void cmd_irq_enable(Session &s, const Args &a);
void cmd_irq_wait(Session &s, const Args &a);
void cmd_engine_status(Session &s, const Args &a);
void cmd_engine_reset(Session &s, const Args &a);
void cmd_engine_abort(Session &s, const Args &a);
void cmd_test_route(Session &s, const Args &a);
void cmd_test_pattern(Session &s, const Args &a);
void cmd_test_checker(Session &s, const Args &a);
// cmd_mem.cpp
void cmd_mem_alloc(Session &s, const Args &a);
void cmd_mem_free(Session &s, const Args &a);
void cmd_mem_list(Session &s, const Args &a);
// cmd_dma.cpp
void cmd_dma_read(Session &s, const Args &a);
void cmd_dma_write(Session &s, const Args &a);
void cmd_dma_loop(Session &s, const Args &a);

} // namespace cli

#endif
