// SPDX-License-Identifier: GPL-2.0-or-later
//
// The mprace tool's command-line arguments (Args), the buffers it holds and its session on one
// board (Session), and the helpers the commands share (cli_util.hpp).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sys/mman.h>

#include "cli.hpp"
#include "cli_util.hpp"
#include "common/device.hpp"
#include "common/units.hpp"
#include "mprace-spec/pattern.h"
#include "mprace/spec.h"

using tools::format_size;
using tools::strprintf;

namespace cli {

// ------------------------------------------------------------------------------ helpers

Args::Args(const std::string &command, const std::vector<std::string> &argv,
	   const std::vector<std::string> &valued, const std::vector<std::string> &flags)
	: command_(command)
{
	bool only_pos = false;
	for (std::size_t i = 0; i < argv.size(); ++i) {
		const std::string &a = argv[i];
		if (only_pos || a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) {
			pos_.push_back(a);
			continue;
		}
		if (a == "--") {
			only_pos = true;
			continue;
		}
		std::string name = a, value;
		bool has_value = false;
		auto eq = a.find('=');
		if (a.compare(0, 2, "--") == 0 && eq != std::string::npos) {
			name = a.substr(0, eq);
			value = a.substr(eq + 1);
			has_value = true;
		}
		if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
			if (has_value)
				fail("option " + name + " takes no value");
			opts_[name] = "1";
		} else if (std::find(valued.begin(), valued.end(), name) != valued.end()) {
			if (!has_value) {
				if (i + 1 >= argv.size())
					fail("option " + name + " needs a value");
				value = argv[++i];
			}
			opts_[name] = value;
		} else {
			fail("unknown option " + name);
		}
	}
}

std::string Args::get(const std::string &opt, const std::string &def) const
{
	auto it = opts_.find(opt);
	return it == opts_.end() ? def : it->second;
}

const std::string &Args::at(std::size_t i, const char *what) const
{
	if (i >= pos_.size())
		fail(std::string("missing ") + what);
	return pos_[i];
}

void Args::max_positionals(std::size_t n) const
{
	if (pos_.size() > n)
		fail("unexpected argument '" + pos_[n] + "'");
}

HeldBuffer::~HeldBuffer()
{
	buf.reset();
	if (anon)
		munmap(anon, size);
}

Session::~Session()
{
	held_.clear();
	engine_.reset();
	board_.reset();
}

mprace::Board &Session::board()
{
	if (!board_)
		board_ = std::make_unique<mprace::Board>(tools::pick_device(device_, "mprace"),
							 no_check_ ? mprace::Board::NoCheck : 0u);
	return *board_;
}

mprace::DMAEngine &Session::engine(bool irq)
{
	if (engine_ && engine_irq_ != irq) {
		engine_.reset(); // a different completion mode: take the engine again
	}
	if (!engine_) {
		mprace::EngineOptions o;
		o.completion = irq ? mprace::Completion::Interrupt : mprace::Completion::Polling;
		engine_ = std::make_unique<mprace::DMAEngine>(board(), o);
		engine_irq_ = irq;
	}
	return *engine_;
}

// ------------------------------------------------------------------------------ helpers

std::uint64_t num(const Args &a, const std::string &text, const char *what)
{
	try {
		return tools::parse_u64(text, what);
	} catch (const std::invalid_argument &e) {
		a.fail(e.what());
	}
}

std::uint32_t num32(const Args &a, const std::string &text, const char *what)
{
	try {
		return tools::parse_u32(text, what);
	} catch (const std::invalid_argument &e) {
		a.fail(e.what());
	}
}

std::uint64_t size_arg(const Args &a, const std::string &text)
{
	try {
		return tools::parse_size(text);
	} catch (const std::invalid_argument &e) {
		a.fail(e.what());
	}
}

Reg parse_reg(const Args &a, const std::string &text)
{
	Reg r{0, std::string(), "?"};
	std::uint32_t off;
	if (mp_reg_offset(text.c_str(), &off) == 0) {
		r.offset = off;
	} else if (!text.empty() && text[0] >= '0' && text[0] <= '9') {
		off = num32(a, text, "register offset");
		if (off % 4 || off >= MP_ENGINE_BAR0_SIZE)
			a.fail(strprintf("register offset 0x%x: must be a multiple of 4 below 0x%x", off,
					 MP_ENGINE_BAR0_SIZE));
		r.offset = off;
	} else {
		a.fail("unknown register '" + text + "' (mprace reg dump lists the names)");
	}
	if (const char *n = mp_reg_name(r.offset))
		r.name = n;
	for (const auto &e : mp_reg_names)
		if (e.offset == r.offset)
			r.access = e.access;
	return r;
}

std::string reg_label(const Reg &r)
{
	return r.name.empty() ? strprintf("0x%03x", r.offset) : strprintf("%s (0x%03x)", r.name.c_str(), r.offset);
}

void hexdump(const void *data, std::size_t len, std::uint64_t base)
{
	const auto *p = static_cast<const unsigned char *>(data);
	for (std::size_t off = 0; off < len; off += 16) {
		std::printf("%08llx:", static_cast<unsigned long long>(base + off));
		for (std::size_t i = off; i < off + 16 && i < len; i += 4) {
			std::uint32_t w = 0;
			std::memcpy(&w, p + i, std::min<std::size_t>(4, len - i));
			std::printf(" %08x", w);
		}
		std::printf("\n");
	}
}

std::vector<unsigned char> read_file(const Args &a, const std::string &path)
{
	std::vector<unsigned char> data;
	if (path == "-") {
		data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
		return data;
	}
	std::ifstream f(path, std::ios::binary);
	if (!f)
		throw Failed("cannot read " + path + ": " + std::strerror(errno));
	data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
	(void)a;
	return data;
}

std::optional<Output> open_output(const Args &a)
{
	std::optional<Output> out;
	if (a.has("-o"))
		out.emplace(a.get("-o"));
	return out;
}

Output::Output(const std::string &path) : path_(path)
{
	if (path_ == "-")
		return;
	file_.open(path_, std::ios::binary | std::ios::trunc);
	if (!file_)
		throw Failed("cannot write " + path_ + ": " + std::strerror(errno));
}

void Output::write(const void *data, std::size_t len)
{
	if (path_ == "-") {
		std::fwrite(data, 1, len, stdout);
		std::fflush(stdout);
		return;
	}
	file_.write(static_cast<const char *>(data), static_cast<std::streamsize>(len));
	file_.close();
	if (!file_)
		throw Failed("error writing " + path_);
}

std::FILE *info_stream(const Args &a) { return a.get("-o") == "-" ? stderr : stdout; }

void fill_pattern(void *buf, std::size_t bytes, std::uint32_t seed)
{
	mp_pattern_fill(buf, bytes & ~std::size_t(3), 0, seed);
}

long long check_pattern(const void *buf, std::size_t bytes, std::uint32_t seed)
{
	const std::int64_t bad = mp_pattern_find_mismatch(buf, bytes & ~std::size_t(3), 0, seed);
	return bad < 0 ? -1 : bad / 4;
}

const char *state_name(unsigned s)
{
	switch (s) {
	case MP_STATE_IDLE: return "IDLE";
	case MP_STATE_RUNNING: return "RUNNING";
	case MP_STATE_ERROR: return "ERROR";
	default: return "?";
	}
}

const char *source_name(mprace::C2HSource s)
{
	switch (s) {
	case mprace::C2HSource::User: return "user";
	case mprace::C2HSource::Pattern: return "pattern";
	case mprace::C2HSource::Loopback: return "loopback";
	}
	return "?";
}

const char *sink_name(mprace::H2CSink s)
{
	switch (s) {
	case mprace::H2CSink::User: return "user";
	case mprace::H2CSink::Checker: return "checker";
	case mprace::H2CSink::Loopback: return "loopback";
	}
	return "?";
}

mprace::C2HSource parse_source(const Args &a, const std::string &t)
{
	if (t == "user") return mprace::C2HSource::User;
	if (t == "pattern") return mprace::C2HSource::Pattern;
	if (t == "loopback") return mprace::C2HSource::Loopback;
	a.fail("--source takes user, pattern or loopback (or keep for dma read), not '" + t + "'");
}

mprace::H2CSink parse_sink(const Args &a, const std::string &t)
{
	if (t == "user") return mprace::H2CSink::User;
	if (t == "checker") return mprace::H2CSink::Checker;
	if (t == "loopback") return mprace::H2CSink::Loopback;
	a.fail("--sink takes user, checker or loopback (or keep for dma write), not '" + t + "'");
}

mprace::Channel parse_channel(const Args &a, const std::string &t)
{
	std::string l = tools::to_lower(t);
	if (l == "c2h") return mprace::Channel::C2H;
	if (l == "h2c") return mprace::Channel::H2C;
	a.fail("channel must be c2h or h2c, not '" + t + "'");
}

mprace::DMAEngine &engine_for(Session &s, const Args &a)
{
	mprace::DMAEngine &e = s.engine(a.has("--irq"));
	if (a.has("--timeout"))
		e.setWaitTimeout(std::chrono::milliseconds(num(a, a.get("--timeout"), "timeout")));
	return e;
}

mprace::DMABuffer &dma_buffer(Session &s, const Args &a, std::size_t size, pd_dma_dir dir, HeldBuffer &tmp)
{
	if (a.has("--buffer")) {
		unsigned id = num32(a, a.get("--buffer"), "buffer id");
		auto it = s.held().find(id);
		if (it == s.held().end())
			a.fail(strprintf("no buffer %u (mprace mem list shows the buffers of this invocation)", id));
		if (it->second.buf->size() < size)
			throw Failed(strprintf("buffer %u holds %s, less than %s", id, format_size(it->second.buf->size()).c_str(),
					       format_size(size).c_str()));
		return *it->second.buf;
	}
	if (a.has("--umem")) {
		std::size_t map = (size + 4095) & ~static_cast<std::size_t>(4095);
		void *p = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw Failed(std::string("mmap: ") + std::strerror(errno));
		tmp.anon = p;
		tmp.size = map;
		tmp.buf = std::make_unique<mprace::DMABuffer>(s.board(), p, size, dir);
	} else {
		tmp.buf = std::make_unique<mprace::DMABuffer>(s.board(), size);
	}
	return *tmp.buf;
}

std::string rate(std::uint64_t bytes, double s)
{
	return strprintf("%.1f us, %.1f MB/s", s * 1e6, s > 0 ? static_cast<double>(bytes) / s / 1e6 : 0.0);
}

double since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace cli
