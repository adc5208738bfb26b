// SPDX-License-Identifier: GPL-2.0-or-later
#include "units.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "pcidriver/pcidriver.h"

namespace tools {

std::string to_lower(std::string s)
{
	for (auto &c : s)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return s;
}

std::string strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	va_list ap2;
	va_copy(ap2, ap);
	int n = std::vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		va_end(ap2);
		return std::string();
	}
	if (static_cast<std::size_t>(n) < sizeof(small)) {
		va_end(ap2);
		return std::string(small, static_cast<std::size_t>(n));
	}
	std::string out(static_cast<std::size_t>(n) + 1, '\0');
	std::vsnprintf(&out[0], out.size(), fmt, ap2);
	va_end(ap2);
	out.resize(static_cast<std::size_t>(n));
	return out;
}

std::vector<std::string> split(const std::string &text, char sep)
{
	std::vector<std::string> out;
	std::string::size_type start = 0;
	for (;;) {
		auto pos = text.find(sep, start);
		out.push_back(text.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
		if (pos == std::string::npos)
			break;
		start = pos + 1;
	}
	return out;
}

std::uint64_t parse_u64(const std::string &text, const char *what)
{
	if (text.empty() || text[0] == '-' || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0])))
		throw std::invalid_argument(std::string("invalid ") + what + " '" + text + "'");
	errno = 0;
	char *end = nullptr;
	unsigned long long v = std::strtoull(text.c_str(), &end, 0);
	if (errno == ERANGE)
		throw std::invalid_argument(std::string(what) + " out of range: '" + text + "'");
	if (*end != '\0')
		throw std::invalid_argument(std::string("invalid ") + what + " '" + text + "'");
	return v;
}

std::uint32_t parse_u32(const std::string &text, const char *what)
{
	std::uint64_t v = parse_u64(text, what);
	if (v > 0xffffffffull)
		throw std::invalid_argument(std::string(what) + " does not fit in 32 bits: '" + text + "'");
	return static_cast<std::uint32_t>(v);
}

double parse_double(const std::string &text, const char *what)
{
	if (text.empty())
		throw std::invalid_argument(std::string("empty ") + what);
	errno = 0;
	char *end = nullptr;
	double v = std::strtod(text.c_str(), &end);
	if (errno == ERANGE || *end != '\0' || !std::isfinite(v))
		throw std::invalid_argument(std::string("invalid ") + what + " '" + text + "'");
	return v;
}

std::uint64_t parse_size(const std::string &text)
{
	// one grammar for every tool and backend: libpcidriver's (pcidriver.h)
	std::uint64_t v;
	if (text.find('\0') == std::string::npos && pd_parse_size(text.c_str(), &v) == 0)
		return v;
	throw std::invalid_argument("invalid size '" + text +
				    "': a whole number of bytes such as 4096, 0x1000, 4K, 1.5M, "
				    "16MiB or 1G");
}

static const struct {
	std::uint64_t unit;
	const char *name;
	const char *shortname;
} units[] = {
	{1ull << 40, "TiB", "T"}, {1ull << 30, "GiB", "G"}, {1ull << 20, "MiB", "M"}, {1ull << 10, "KiB", "K"},
};

std::string format_size(std::uint64_t bytes)
{
	for (const auto &u : units) {
		if (bytes >= u.unit) {
			if (bytes % u.unit == 0)
				return strprintf("%llu %s", static_cast<unsigned long long>(bytes / u.unit), u.name);
			return strprintf("%.2f %s", static_cast<double>(bytes) / static_cast<double>(u.unit), u.name);
		}
	}
	return strprintf("%llu B", static_cast<unsigned long long>(bytes));
}

std::string format_size_short(std::uint64_t bytes)
{
	for (const auto &u : units) {
		if (bytes >= u.unit && bytes % u.unit == 0)
			return strprintf("%llu%s", static_cast<unsigned long long>(bytes / u.unit), u.shortname);
	}
	return strprintf("%llu", static_cast<unsigned long long>(bytes));
}

std::vector<int> parse_cpu_list(const std::string &text)
{
	std::vector<int> cpus;
	if (text.empty())
		throw std::invalid_argument("empty CPU list");
	for (const auto &part : split(text, ',')) {
		auto dash = part.find('-');
		std::uint64_t lo, hi;
		if (dash == std::string::npos) {
			lo = hi = parse_u64(part, "CPU number");
		} else {
			lo = parse_u64(part.substr(0, dash), "CPU number");
			hi = parse_u64(part.substr(dash + 1), "CPU number");
		}
		if (lo > hi || hi > 4095)
			throw std::invalid_argument("invalid CPU range '" + part + "'");
		for (auto c = lo; c <= hi; ++c)
			cpus.push_back(static_cast<int>(c));
	}
	return cpus;
}

} // namespace tools
