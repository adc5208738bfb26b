// SPDX-License-Identifier: GPL-2.0-or-later
//
// Parsing and printing of the numbers the tools take on their command lines: sizes with binary
// suffixes, integers in decimal or hex, CPU lists. Every parser throws std::invalid_argument
// whose what() names the offending text, so a tool can print it above its usage message.
#ifndef TOOLS_COMMON_UNITS_HPP
#define TOOLS_COMMON_UNITS_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace tools {

// "4096", "0x1000", "4K", "4k", "4KiB", "4KB", "16M", "1G", "1.5M": suffixes are binary
// (K = 2^10, M = 2^20, G = 2^30, T = 2^40) whatever their spelling; the result must be a whole
// number of bytes.
std::uint64_t parse_size(const std::string &text);

// "4 KiB", "256 MiB", "1.5 MiB", "12 B": exact when the size is a multiple of the unit.
std::string format_size(std::uint64_t bytes);

// Compact form for tables and plot axes: "4K", "256M", "1G", "6000".
std::string format_size_short(std::uint64_t bytes);

// Decimal or 0x-prefixed hex, the whole text; `what` names the thing in the error message.
std::uint64_t parse_u64(const std::string &text, const char *what = "number");
std::uint32_t parse_u32(const std::string &text, const char *what = "number");
double parse_double(const std::string &text, const char *what = "number");

// "0,2-3" -> {0, 2, 3}.
std::vector<int> parse_cpu_list(const std::string &text);

// Splits on a separator, dropping nothing (",a" gives {"", "a"}).
std::vector<std::string> split(const std::string &text, char sep);

std::string to_lower(std::string s);

// printf into a std::string.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace tools

#endif
