// SPDX-License-Identifier: GPL-2.0-or-later
//
// The commands of the mprace tool. Each prints what it did in lines a script can parse
// ("NAME (0xOFF) = 0xVALUE", "key: value") and throws UsageError for bad arguments and Failed
// when the board says no.
#include "cli.hpp"
#include "common/device.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

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

namespace {

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

// A register by name (from the spec, case-insensitive: SCRATCH, C2H_HEAD) or BAR0 offset.
struct Reg {
	std::uint32_t offset;
	std::string name; // "" when the offset has none
	const char *access;
};

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

void write_output(const std::string &path, const void *data, std::size_t len)
{
	if (path == "-") {
		std::fwrite(data, 1, len, stdout);
		std::fflush(stdout);
		return;
	}
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	if (!f)
		throw Failed("cannot write " + path + ": " + std::strerror(errno));
	f.write(static_cast<const char *>(data), static_cast<std::streamsize>(len));
	f.close();
	if (!f)
		throw Failed("error writing " + path);
}

// Progress lines go to stderr when the data itself goes to stdout.
std::FILE *info_stream(const Args &a) { return a.get("-o") == "-" ? stderr : stdout; }

// The counter pattern (mprace-spec/pattern.h) in whole words; check_pattern: the first bad word or -1.
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

// The engine, with a --timeout applied.
mprace::DMAEngine &engine_for(Session &s, const Args &a)
{
	mprace::DMAEngine &e = s.engine(a.has("--irq"));
	if (a.has("--timeout"))
		e.setWaitTimeout(std::chrono::milliseconds(num(a, a.get("--timeout"), "timeout")));
	return e;
}

// A DMA buffer for one command: a held one (--buffer ID), or a new one of kernel memory
// (default) or user memory (--umem) that lives until `tmp` goes.
mprace::DMABuffer &dma_buffer(Session &s, const Args &a, std::size_t size, pd_dma_dir dir, HeldBuffer &tmp)
{
	if (a.has("--buffer")) {
		unsigned id = static_cast<unsigned>(num(a, a.get("--buffer"), "buffer id"));
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

// ------------------------------------------------------------------------------ commands

void cmd_list(Session &s, const Args &a)
{
	a.max_positionals(0);
	(void)s;
	for (const auto &n : mprace::Board::list())
		std::printf("%s\n", n.c_str());
}

void cmd_info(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	const mprace::BoardInfo &i = b.info();
	const struct pd_info &p = i.pci;
	std::printf("device: %s\n", s.device().empty() ? "(default)" : s.device().c_str());
	std::printf("name: %s\n", i.name.c_str());
	std::printf("backend: %s\n", i.emulated() ? "emu (virtual board)" : i.simulated() ? "sim (the RTL under a simulator)" : "kernel");
	std::printf("ids: vendor 0x%04x device 0x%04x subsystem 0x%04x:0x%04x class 0x%06x revision 0x%02x\n",
		    p.vendor, p.device, p.subsystem_vendor, p.subsystem_device, p.class_code, p.revision);
	for (unsigned k = 0; k < PD_MAX_BARS; ++k) {
		const pd_bar_info &bi = p.bar[k];
		if (!(bi.flags & PD_BAR_PRESENT))
			continue;
		std::printf("bar%u: %s, %s%s%s, bus address 0x%llx%s\n", k, format_size(bi.size).c_str(),
			    bi.flags & PD_BAR_IO ? "io" : "memory", bi.flags & PD_BAR_64BIT ? " 64-bit" : " 32-bit",
			    bi.flags & PD_BAR_PREFETCH ? " prefetchable" : "",
			    static_cast<unsigned long long>(bi.bus_addr), k == MP_ENGINE_BAR ? " (engine registers)" : "");
	}
	static const char *irq_modes[] = {"none", "INTx", "MSI", "MSI-X"};
	std::printf("irq: %s, %u vector(s)\n", p.irq_mode < 4 ? irq_modes[p.irq_mode] : "?", p.irq_count);
	std::printf("dma: %u-bit addresses, max payload %u B, max read request %u B\n", p.dma_mask_bits, p.max_payload,
		    p.max_read_request);
	if (p.abi_version)
		std::printf("driver abi: %u\n", p.abi_version);
	std::printf("magic: 0x%08x (%s)\n", i.magic, i.magic == MP_ENGINE_MAGIC ? "our engine" : "NOT our engine");
	std::printf("version: %u.%u (this tool implements %u.%u)\n", i.versionMajor, i.versionMinor,
		    MP_ENGINE_VERSION_MAJOR, MP_ENGINE_VERSION_MINOR);
	std::printf("clock: %u MHz\n", i.clockMHz);
	const mprace::EngineCaps &c = i.caps;
	std::printf("caps: 0x%08x: datapath %u B, %u C2H + %u H2C channel(s), MPS %u B, MRRS %u B, %u MSI vector(s)%s%s%s\n",
		    i.capsRaw, c.datapathBytes, c.c2hChannels, c.h2cChannels, c.maxPayload, c.maxReadRequest,
		    c.msiVectors, c.patternGenerator ? ", pattern generator" : "", c.checker ? ", checker" : "",
		    c.loopback ? ", loopback" : "");
}

void cmd_reg_read(Session &s, const Args &a)
{
	if (a.pos().empty())
		a.fail("missing register (a name such as SCRATCH or an offset such as 0x14)");
	std::vector<Reg> regs;
	for (const auto &t : a.pos())
		regs.push_back(parse_reg(a, t));
	for (const auto &r : regs) {
		std::uint32_t v = s.board().getRegister(r.offset);
		if (s.quiet())
			std::printf("0x%08x\n", v);
		else
			std::printf("%s = 0x%08x\n", reg_label(r).c_str(), v);
	}
}

void cmd_reg_write(Session &s, const Args &a)
{
	a.max_positionals(2);
	Reg r = parse_reg(a, a.at(0, "register"));
	std::uint32_t v = num32(a, a.at(1, "value"), "value");
	if (!std::strcmp(r.access, "ro"))
		std::fprintf(stderr, "mprace: note: %s is read-only; the write is ignored by the engine\n",
			     reg_label(r).c_str());
	s.board().setRegister(r.offset, v);
	if (!s.quiet())
		std::printf("%s <- 0x%08x\n", reg_label(r).c_str(), v);
}

void cmd_reg_dump(Session &s, const Args &a)
{
	a.max_positionals(0);
	for (const auto &e : mp_reg_names) {
		std::uint32_t v = s.board().getRegister(e.offset);
		std::printf("0x%03x %-18s %-3s 0x%08x\n", e.offset, e.name, e.access, v);
	}
}

void cmd_bar_read(Session &s, const Args &a)
{
	a.max_positionals(3);
	unsigned bar = static_cast<unsigned>(num(a, a.at(0, "BAR number"), "BAR"));
	std::uint64_t off = num(a, a.at(1, "offset"), "offset");
	std::uint64_t len = size_arg(a, a.at(2, "length"));
	if (bar >= PD_MAX_BARS)
		a.fail(strprintf("BAR %u: there are %u", bar, PD_MAX_BARS));
	if (off % 4 || len % 4 || len == 0)
		a.fail("offset and length must be multiples of 4 (32-bit accesses), length > 0");
	std::vector<unsigned char> buf(len);
	s.board().readBar(bar, off, buf.data(), len);
	if (a.has("-o")) {
		write_output(a.get("-o"), buf.data(), len);
		if (a.get("-o") != "-" && !s.quiet())
			std::printf("bar%u: read %s at 0x%llx into %s\n", bar, format_size(len).c_str(),
				    static_cast<unsigned long long>(off), a.get("-o").c_str());
	} else {
		hexdump(buf.data(), len, off);
	}
}

void cmd_bar_write(Session &s, const Args &a)
{
	unsigned bar = static_cast<unsigned>(num(a, a.at(0, "BAR number"), "BAR"));
	std::uint64_t off = num(a, a.at(1, "offset"), "offset");
	if (bar >= PD_MAX_BARS)
		a.fail(strprintf("BAR %u: there are %u", bar, PD_MAX_BARS));
	std::vector<unsigned char> data;
	if (a.has("-i")) {
		a.max_positionals(2);
		data = read_file(a, a.get("-i"));
	} else {
		if (a.pos().size() < 3)
			a.fail("give the data: -i FILE, or 32-bit words after the offset");
		for (std::size_t k = 2; k < a.pos().size(); ++k) {
			std::uint32_t w = num32(a, a.pos()[k], "word");
			unsigned char b[4];
			std::memcpy(b, &w, 4);
			data.insert(data.end(), b, b + 4);
		}
	}
	if (off % 4 || data.size() % 4 || data.empty())
		throw Failed(strprintf("offset and data length must be multiples of 4 (data: %zu bytes)", data.size()));
	s.board().writeBar(bar, off, data.data(), data.size());
	if (!s.quiet())
		std::printf("bar%u: wrote %s at 0x%llx\n", bar, format_size(data.size()).c_str(),
			    static_cast<unsigned long long>(off));
}

void cmd_mem_alloc(Session &s, const Args &a)
{
	a.max_positionals(2);
	std::string kind = a.at(0, "kind (kmem or umem)");
	std::uint64_t size = size_arg(a, a.at(1, "size"));
	if (kind != "kmem" && kind != "umem")
		a.fail("kind must be kmem or umem");
	if (size == 0 || size % 4)
		a.fail("size must be a positive multiple of 4");
	unsigned id = s.next_id();
	HeldBuffer &slot = s.held()[id];
	try {
		if (kind == "umem") {
			slot.size = (size + 4095) & ~4095ull; // what mmap maps, and munmap unmaps
			void *p = mmap(nullptr, slot.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				throw Failed(std::string("mmap: ") + std::strerror(errno));
			slot.anon = p;
			slot.buf = std::make_unique<mprace::DMABuffer>(s.board(), p, size);
		} else {
			slot.buf = std::make_unique<mprace::DMABuffer>(s.board(), size);
			slot.size = size;
		}
	} catch (...) {
		s.held().erase(id);
		throw;
	}
	std::printf("buffer %u: %s %s, %zu segment(s), bus address 0x%llx\n", id, format_size(size).c_str(),
		    kind == "kmem" ? "kernel memory" : "user memory", slot.buf->segments().size(),
		    static_cast<unsigned long long>(slot.buf->busAddress(0)));
}

void cmd_mem_free(Session &s, const Args &a)
{
	a.max_positionals(1);
	unsigned id = static_cast<unsigned>(num(a, a.at(0, "buffer id"), "buffer id"));
	if (!s.held().erase(id))
		throw Failed(strprintf("no buffer %u", id));
	if (!s.quiet())
		std::printf("buffer %u freed\n", id);
}

// The kernel driver's counters of the device (/sys/class/pcidriver/fpgaN/, found by the PCI
// address its `device` link points to): what all processes hold through the driver.
void print_driver_counters(Session &s)
{
	const mprace::BoardInfo &i = s.board().info();
	if (i.emulated() || i.simulated())
		return;
	const std::string cls = "/sys/class/pcidriver";
	for (unsigned n = 0; n < 256; ++n) {
		std::string dir = cls + "/fpga" + std::to_string(n);
		char target[4096];
		ssize_t len = readlink((dir + "/device").c_str(), target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		std::string t(target);
		if (t.substr(t.rfind('/') + 1) != i.name)
			continue;
		std::printf("driver (%s):", dir.c_str());
		for (const char *attr : {"kmem_count", "kmem_bytes", "umem_count", "umem_pinned_bytes"}) {
			std::ifstream f(dir + "/" + attr);
			std::string v;
			if (f >> v)
				std::printf(" %s %s", attr, v.c_str());
		}
		std::printf("\n");
		return;
	}
}

void cmd_mem_list(Session &s, const Args &a)
{
	a.max_positionals(0);
	print_driver_counters(s);
	if (s.held().empty()) {
		std::printf("no buffers held by this invocation (mem alloc creates some; they live until it ends)\n");
		return;
	}
	std::printf("%-4s %-14s %12s %9s  %s\n", "id", "kind", "size", "segments", "bus addresses");
	for (const auto &kv : s.held()) {
		const mprace::DMABuffer &b = *kv.second.buf;
		std::string segs;
		std::size_t shown = 0;
		for (const auto &sg : b.segments()) {
			if (shown++ == 4) {
				segs += " ...";
				break;
			}
			segs += strprintf(" 0x%llx+%s", static_cast<unsigned long long>(sg.busAddress),
					  tools::format_size_short(sg.length).c_str());
		}
		std::printf("%-4u %-14s %12s %9zu %s\n", kv.first, mprace::to_string(b.kind()), format_size(b.size()).c_str(),
			    b.segments().size(), segs.c_str());
	}
}

void cmd_dma_read(Session &s, const Args &a)
{
	a.max_positionals(1);
	std::uint64_t size = size_arg(a, a.at(0, "size"));
	if (size == 0 || size % MP_ENGINE_GRANULE)
		a.fail("size must be a positive multiple of 4");
	std::string src = a.get("--source", "pattern");
	bool seeded = a.has("--seed") || src == "pattern";
	std::uint32_t seed = num32(a, a.get("--seed", "0"), "seed");
	if (a.has("--verify") && !seeded)
		a.fail("--verify checks the counter pattern: use --source pattern (and --seed)");
	if (a.has("--verify") && src != "pattern" && src != "keep")
		a.fail("--verify checks the pattern generator's data (--source pattern)");
	mprace::Board &b = s.board();
	mprace::DMAEngine &e = engine_for(s, a);
	if (src != "keep") {
		mprace::C2HSource want = parse_source(a, src);
		if (b.c2hSource() != want)
			b.setTestRouting(want, b.h2cSink());
	}
	if (seeded && (src == "pattern" || a.has("--seed")))
		b.setPatternSeed(seed);
	HeldBuffer tmp;
	mprace::DMABuffer &buf = dma_buffer(s, a, size, PD_DMA_FROM_DEVICE, tmp);
	auto t0 = std::chrono::steady_clock::now();
	std::uint64_t got = e.read(buf, 0, size);
	double t = since(t0);
	buf.syncForCpu();
	std::FILE *out = info_stream(a);
	if (!s.quiet())
		std::fprintf(out, "dma read: %s from %s into %s (%s)\n", format_size(got).c_str(),
			     source_name(b.c2hSource()), mprace::to_string(buf.kind()), rate(got, t).c_str());
	if (a.has("-o"))
		write_output(a.get("-o"), buf.data(), got);
	else if (!a.has("--buffer"))
		hexdump(buf.data(), got, 0);
	if (a.has("--verify")) {
		long long bad = check_pattern(buf.data(), got, seed);
		if (bad >= 0)
			throw Failed(strprintf("dma read: word %lld differs from the pattern (seed 0x%08x)", bad, seed));
		std::fprintf(out, "verify: ok (%llu words of the pattern from seed 0x%08x)\n",
			     static_cast<unsigned long long>(got / 4), seed);
	}
}

// The data `dma write` and `dma loop` send: a file (-i) or SIZE bytes of the counter pattern
// (--pattern, from seed), its length a positive multiple of 4. The pattern is only made into
// the returned vector when `fill` is set (dma write fills its DMA buffer directly).
std::vector<unsigned char> input_data(const Args &a, const char *cmd, std::uint32_t seed,
				      bool fill, std::uint64_t &size)
{
	std::vector<unsigned char> data;
	if (a.has("-i") == a.has("--pattern"))
		a.fail("give the data with -i FILE or --pattern SIZE (the counter pattern from --seed)");
	if (a.has("-i")) {
		data = read_file(a, a.get("-i"));
		size = data.size();
	} else {
		size = size_arg(a, a.get("--pattern"));
	}
	if (size == 0 || size % MP_ENGINE_GRANULE)
		throw Failed(strprintf("%s: %llu bytes: the length must be a positive multiple of 4", cmd,
				       static_cast<unsigned long long>(size)));
	if (fill && !a.has("-i")) {
		data.resize(size);
		fill_pattern(data.data(), size, seed);
	}
	return data;
}

void cmd_dma_write(Session &s, const Args &a)
{
	a.max_positionals(0);
	std::uint32_t seed = num32(a, a.get("--seed", "0"), "seed");
	std::uint64_t size;
	std::vector<unsigned char> data = input_data(a, "dma write", seed, false, size);
	std::string sink = a.get("--sink", "checker");
	mprace::Board &b = s.board();
	mprace::DMAEngine &e = engine_for(s, a);
	if (sink != "keep") {
		mprace::H2CSink want = parse_sink(a, sink);
		if (b.h2cSink() != want)
			b.setTestRouting(b.c2hSource(), want);
	}
	bool checker = b.h2cSink() == mprace::H2CSink::Checker;
	if (checker)
		b.resetChecker(seed);
	HeldBuffer tmp;
	mprace::DMABuffer &buf = dma_buffer(s, a, size, PD_DMA_TO_DEVICE, tmp);
	if (a.has("-i"))
		std::memcpy(buf.data(), data.data(), size);
	else
		fill_pattern(buf.data(), size, seed);
	buf.syncForDevice();
	auto t0 = std::chrono::steady_clock::now();
	std::uint64_t done = e.write(buf, 0, size, a.has("--eop") ? mprace::DMAEngine::EndOfPacket : 0);
	double t = since(t0);
	if (!s.quiet())
		std::printf("dma write: %s from %s to %s (%s)\n", format_size(done).c_str(), mprace::to_string(buf.kind()),
			    sink_name(b.h2cSink()), rate(done, t).c_str());
	if (checker) {
		// The checker's counters may trail the completion record by a moment.
		mprace::CheckerCounts c = b.checker();
		for (int k = 0; k < 200 && c.words < size / 4; ++k) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			c = b.checker();
		}
		std::printf("checker: %u words, %u errors (seed 0x%08x)\n", c.words, c.errors, seed);
		if (a.has("--verify") && (c.errors || c.words != size / 4))
			throw Failed("dma write: the checker found the data wrong");
	} else if (a.has("--verify")) {
		a.fail("--verify needs the checker (--sink checker)");
	}
}

void cmd_dma_loop(Session &s, const Args &a)
{
	a.max_positionals(0);
	std::uint32_t seed = num32(a, a.get("--seed", "0"), "seed");
	std::uint64_t size;
	std::vector<unsigned char> data = input_data(a, "dma loop", seed, true, size);
	mprace::Board &b = s.board();
	if (!b.info().caps.loopback)
		throw Failed("the engine has no loopback (CAPS.LOOPBACK = 0)");
	mprace::DMAEngine &e = engine_for(s, a);
	b.setTestRouting(mprace::C2HSource::Loopback, mprace::H2CSink::Loopback);
	mprace::DMABuffer out(b, size), in(b, size);
	std::memcpy(in.data(), data.data(), size);
	in.syncForDevice();
	auto t0 = std::chrono::steady_clock::now();
	mprace::Transfer rd = e.readAsync(out, 0, size);
	mprace::Transfer wr = e.writeAsync(in, 0, size);
	wr.get();
	std::uint64_t got = rd.get();
	double t = since(t0);
	out.syncForCpu();
	std::FILE *o = info_stream(a);
	if (!s.quiet())
		std::fprintf(o, "dma loop: %s out and %s back through the loopback (%s)\n", format_size(size).c_str(),
			     format_size(got).c_str(), rate(size, t).c_str());
	if (a.has("-o"))
		write_output(a.get("-o"), out.data(), got);
	if (got != size || std::memcmp(out.data(), in.data(), size) != 0)
		throw Failed("dma loop: the data came back different");
	std::fprintf(o, "verify: ok (%s came back unchanged)\n", format_size(size).c_str());
}

unsigned irq_vector(Session &s, const Args &a, const std::string &t, unsigned *bit)
{
	std::string l = tools::to_lower(t);
	int b = l == "c2h" ? int(MP_IRQ_C2H_DONE_BIT) : l == "h2c" ? int(MP_IRQ_H2C_DONE_BIT)
		: l == "error" ? int(MP_IRQ_ERROR_BIT) : -1;
	*bit = b < 0 ? ~0u : static_cast<unsigned>(b);
	if (b < 0) // a vector number
		return static_cast<unsigned>(num(a, t, "interrupt source (c2h, h2c, error or a vector number)"));
	// docs/dma-engine.md section 6: own vectors with >= 4 granted, else all on vector 0.
	return s.board().info().caps.msiVectors >= 4 ? static_cast<unsigned>(b) : 0u;
}

void cmd_irq_status(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	std::uint32_t st = b.getRegister(MP_REG_IRQ_STATUS), en = b.getRegister(MP_REG_IRQ_ENABLE);
	std::printf("IRQ_STATUS = 0x%08x, IRQ_ENABLE = 0x%08x\n", st, en);
	const char *names[] = {"c2h", "h2c", "error"};
	for (unsigned k = 0; k < MP_IRQ_SOURCES; ++k)
		std::printf("%-5s: %s, %s, vector %u\n", names[k], st & (1u << k) ? "pending" : "idle",
			    en & (1u << k) ? "enabled" : "disabled", b.info().caps.msiVectors >= 4 ? k : 0u);
}

void cmd_irq_enable(Session &s, const Args &a)
{
	a.max_positionals(1);
	std::uint32_t mask = 0;
	std::string list = a.at(0, "sources (c2h,h2c,error, all or none)");
	if (list != "none")
		for (const auto &t : tools::split(list, ',')) {
			std::string l = tools::to_lower(t);
			if (l == "c2h") mask |= 1u << MP_IRQ_C2H_DONE_BIT;
			else if (l == "h2c") mask |= 1u << MP_IRQ_H2C_DONE_BIT;
			else if (l == "error") mask |= 1u << MP_IRQ_ERROR_BIT;
			else if (l == "all") mask |= 7u;
			else a.fail("unknown interrupt source '" + t + "' (c2h, h2c, error, all, none)");
		}
	s.board().setRegister(MP_REG_IRQ_ENABLE, mask);
	if (!s.quiet())
		std::printf("IRQ_ENABLE <- 0x%08x\n", mask);
}

void cmd_irq_wait(Session &s, const Args &a)
{
	a.max_positionals(1);
	unsigned bit;
	unsigned vec = irq_vector(s, a, a.at(0, "source (c2h, h2c, error or a vector number)"), &bit);
	std::uint32_t ms = static_cast<std::uint32_t>(num(a, a.get("--timeout", "1000"), "timeout"));
	int n = s.board().device().waitIrq(vec, ms);
	if (n == 0)
		throw Failed(strprintf("irq wait: no interrupt on vector %u within %u ms", vec, ms));
	std::printf("irq: vector %u, %d event(s)\n", vec, n);
	if (bit != ~0u && a.has("--ack")) {
		s.board().setRegister(MP_REG_IRQ_STATUS, 1u << bit);
		std::printf("IRQ_STATUS <- 0x%08x (acknowledged)\n", 1u << bit);
	}
}

void cmd_engine_status(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	std::uint32_t tc = b.getRegister(MP_REG_TEST_CONTROL);
	std::printf("test: c2h source %s, h2c sink %s; IRQ_STATUS 0x%x, IRQ_ENABLE 0x%x\n",
		    source_name(static_cast<mprace::C2HSource>(MP_FIELD_GET(tc, MP_REG_TEST_CONTROL_C2H_SOURCE))),
		    sink_name(static_cast<mprace::H2CSink>(MP_FIELD_GET(tc, MP_REG_TEST_CONTROL_H2C_SINK))),
		    b.getRegister(MP_REG_IRQ_STATUS), b.getRegister(MP_REG_IRQ_ENABLE));
	for (auto ch : {mprace::Channel::C2H, mprace::Channel::H2C}) {
		std::uint32_t st = b.getChannelRegister(ch, MP_CHREG_STATUS);
		unsigned err = MP_FIELD_GET(st, MP_CHREG_STATUS_ERROR_CODE);
		std::uint32_t lo = b.getChannelRegister(ch, MP_CHREG_BYTES_LO);
		std::uint64_t bytes = (static_cast<std::uint64_t>(b.getChannelRegister(ch, MP_CHREG_BYTES_HI)) << 32) | lo;
		std::uint64_t ring = (static_cast<std::uint64_t>(b.getChannelRegister(ch, MP_CHREG_RING_BASE_HI)) << 32) |
				     b.getChannelRegister(ch, MP_CHREG_RING_BASE_LO);
		std::printf("%s: state %s%s, error %u (%s), head %u, tail %u, ring 0x%llx x %u, timeout %u us, bytes %llu\n",
			    mprace::to_string(ch), state_name(MP_FIELD_GET(st, MP_CHREG_STATUS_STATE)),
			    st & MP_CHREG_STATUS_BUSY_MASK ? " busy" : "", err, mp_engine_error_name(err),
			    b.getChannelRegister(ch, MP_CHREG_HEAD), b.getChannelRegister(ch, MP_CHREG_TAIL),
			    static_cast<unsigned long long>(ring), b.getChannelRegister(ch, MP_CHREG_RING_SIZE),
			    b.getChannelRegister(ch, MP_CHREG_TIMEOUT_US), static_cast<unsigned long long>(bytes));
	}
}

void cmd_engine_reset(Session &s, const Args &a)
{
	a.max_positionals(1);
	std::string what = a.pos().empty() ? "all" : tools::to_lower(a.pos()[0]);
	if (what == "all") {
		s.board().reset();
		if (!s.quiet())
			std::printf("engine reset (both channels, test logic, IRQ_STATUS/ENABLE, SCRATCH)\n");
		return;
	}
	mprace::Channel ch = parse_channel(a, what);
	s.board().setChannelRegister(ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	if (!s.quiet())
		std::printf("%s channel reset\n", mprace::to_string(ch));
}

void cmd_engine_abort(Session &s, const Args &a)
{
	a.max_positionals(1);
	mprace::Channel ch = parse_channel(a, a.at(0, "channel (c2h or h2c)"));
	s.board().setChannelRegister(ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	if (!s.quiet())
		std::printf("%s channel aborted (it is in ERROR with ABORTED until reset)\n", mprace::to_string(ch));
}

void cmd_test_route(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	if (a.has("--source") || a.has("--sink")) {
		mprace::C2HSource src = a.has("--source") ? parse_source(a, a.get("--source")) : b.c2hSource();
		mprace::H2CSink sink = a.has("--sink") ? parse_sink(a, a.get("--sink")) : b.h2cSink();
		b.setTestRouting(src, sink);
	}
	std::printf("c2h source: %s\nh2c sink: %s\n", source_name(b.c2hSource()), sink_name(b.h2cSink()));
}

void cmd_test_pattern(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	if (!b.info().caps.patternGenerator)
		throw Failed("the engine has no pattern generator (CAPS.PATGEN = 0)");
	if (a.has("--seed"))
		b.setPatternSeed(num32(a, a.get("--seed"), "seed"));
	if (a.has("--rate"))
		b.setPatternRate(num32(a, a.get("--rate"), "rate"));
	std::printf("PATGEN_SEED = 0x%08x\nPATGEN_RATE = %u MB/s%s\n", b.getRegister(MP_REG_PATGEN_SEED),
		    b.getRegister(MP_REG_PATGEN_RATE), b.getRegister(MP_REG_PATGEN_RATE) ? "" : " (unlimited)");
}

void cmd_test_checker(Session &s, const Args &a)
{
	a.max_positionals(0);
	mprace::Board &b = s.board();
	if (!b.info().caps.checker)
		throw Failed("the engine has no checker (CAPS.CHECKER = 0)");
	if (a.has("--reset"))
		b.resetChecker(num32(a, a.get("--reset"), "seed"));
	mprace::CheckerCounts c = b.checker();
	std::printf("CHECK_WORDS = %u\nCHECK_ERRORS = %u\n", c.words, c.errors);
}

} // namespace

void script_runner(Session &s, const Args &a); // main.cpp

const std::vector<Command> &commands()
{
	static const std::vector<Command> t = {
		{"list", "", "list the boards libpcidriver sees (kernel devices, then emu: and sim:)",
		 "Prints one device name per line, usable with --device.\n", cmd_list, {}, {}},
		{"info", "", "identify the board: PCI IDs, BARs, interrupts, engine version and capabilities",
		 "Lines are 'key: value'.\n", cmd_info, {}, {}},
		{"reg read", "REG...", "read 32-bit registers of BAR0 by name or offset",
		 "REG is a name from the engine spec (SCRATCH, C2H_HEAD, ...; case-insensitive) or a byte\n"
		 "offset (0x14). Prints 'NAME (0xOFF) = 0xVALUE' (with -q just the value).\n",
		 cmd_reg_read, {}, {}},
		{"reg write", "REG VALUE", "write a 32-bit register of BAR0",
		 "REG as for 'reg read'; VALUE decimal or 0x hex. Writes to read-only registers are\n"
		 "ignored by the engine (a note says so).\n",
		 cmd_reg_write, {}, {}},
		{"reg dump", "", "read every named register", "Columns: offset, name, access (ro/rw/rsc/w1c), value.\n",
		 cmd_reg_dump, {}, {}},
		{"bar read", "BAR OFFSET LENGTH [-o FILE]", "read a BAR range (32-bit accesses) to a file or as hex",
		 "Without -o the data is printed as 32-bit hex words; '-o -' writes raw bytes to stdout.\n"
		 "OFFSET and LENGTH are multiples of 4; LENGTH takes K/M suffixes.\n",
		 cmd_bar_read, {"-o"}, {}},
		{"bar write", "BAR OFFSET (-i FILE | WORD...)", "write a file or 32-bit words into a BAR",
		 "-i - reads standard input. The length must be a multiple of 4.\n", cmd_bar_write, {"-i"}, {}},
		{"mem alloc", "kmem|umem SIZE", "allocate a DMA buffer held until the invocation ends",
		 "kmem: driver-allocated kernel memory (one bus address); umem: anonymous memory of this\n"
		 "process pinned by the driver (scatter-gather). Prints its id for --buffer and 'mem free'.\n"
		 "Useful in one invocation with several commands (';' or 'run').\n",
		 cmd_mem_alloc, {}, {}},
		{"mem free", "ID", "free a buffer of 'mem alloc'", "", cmd_mem_free, {}, {}},
		{"mem list", "", "list the DMA buffers this invocation holds",
		 "Shows id, kind, size and bus-address segments of the buffers allocated by 'mem alloc'\n"
		 "earlier in the same invocation. Buffers of other processes are not visible through\n"
		 "libpcidriver; on the kernel backend the line 'driver (...)' gives the driver's sysfs\n"
		 "counters of the device (kmem_count, kmem_bytes, umem_count, umem_pinned_bytes) over\n"
		 "all processes.\n",
		 cmd_mem_list, {}, {}},
		{"dma read", "SIZE [-o FILE] [options]", "C2H: DMA SIZE bytes from the board into host memory",
		 "Options:\n"
		 "  -o FILE          write the data to FILE ('-' raw to stdout); default: hex on stdout\n"
		 "  --source S       pattern (default: the pattern generator, seed --seed), loopback,\n"
		 "                   user (the user logic's stream) or keep (TEST_CONTROL as it is)\n"
		 "  --seed N         the pattern generator's first word (default 0)\n"
		 "  --verify         check the data against the counter pattern; exit 1 on a mismatch\n"
		 "  --umem           user memory instead of kernel memory;  --buffer ID  a 'mem alloc' buffer\n"
		 "  --irq            complete by interrupt instead of polling\n"
		 "  --timeout MS     give up (abort) after MS milliseconds (default 10000; on sim:,\n"
		 "                   where DMA is slow, the engine waits 60 times longer)\n",
		 cmd_dma_read, {"-o", "--source", "--seed", "--buffer", "--timeout"}, {"--verify", "--umem", "--irq"}},
		{"dma write", "(-i FILE | --pattern SIZE) [options]", "H2C: DMA a file or the counter pattern to the board",
		 "Options:\n"
		 "  -i FILE          the data ('-': stdin); its length must be a multiple of 4\n"
		 "  --pattern SIZE   send SIZE bytes of the counter pattern from --seed instead\n"
		 "  --sink S         checker (default: compares with CHECK_SEED + n, reset to --seed),\n"
		 "                   loopback, user or keep\n"
		 "  --seed N         the checker's (and --pattern's) first word (default 0)\n"
		 "  --verify         exit 1 unless the checker counted every word and no error\n"
		 "  --eop            end of packet (tlast) on the last beat\n"
		 "  --umem, --buffer ID, --irq, --timeout MS   as for 'dma read'\n"
		 "Prints the checker's counts when the sink is the checker.\n",
		 cmd_dma_write, {"-i", "--pattern", "--sink", "--seed", "--buffer", "--timeout"},
		 {"--verify", "--umem", "--irq", "--eop"}},
		{"dma loop", "(-i FILE | --pattern SIZE) [-o FILE]", "H2C through the engine's loopback back by C2H, compared",
		 "Routes TEST_CONTROL to loopback both ways, writes the data and reads it back at the same\n"
		 "time, writes what came back to -o FILE, and exits 1 if it differs.\n",
		 cmd_dma_loop, {"-i", "-o", "--pattern", "--seed", "--timeout"}, {"--irq"}},
		{"irq status", "", "show IRQ_STATUS and IRQ_ENABLE per source", "", cmd_irq_status, {}, {}},
		{"irq enable", "SOURCES", "set IRQ_ENABLE: c2h,h2c,error, all or none", "", cmd_irq_enable, {}, {}},
		{"irq wait", "SOURCE [--timeout MS] [--ack]", "wait for an interrupt (c2h, h2c, error or a vector number)",
		 "Waits through the driver's interrupt wait (pd_irq_wait) for the source's vector (its own\n"
		 "with >= 4 MSI vectors, else vector 0); exit 1 after --timeout ms (default 1000).\n"
		 "--ack clears the source's IRQ_STATUS bit afterwards.\n",
		 cmd_irq_wait, {"--timeout"}, {"--ack"}},
		{"engine status", "", "channel states, errors, ring pointers, byte counters, test routing",
		 "Reads the registers only; it does not take or reset the engine.\n", cmd_engine_status, {}, {}},
		{"engine reset", "[all|c2h|h2c]", "global reset (default) or one channel's reset",
		 "all: CONTROL.RESET (both channels, test logic, IRQ_STATUS/ENABLE, SCRATCH).\n"
		 "c2h/h2c: the channel's CONTROL.RESET (clears ERROR, HEAD = TAIL = 0).\n",
		 cmd_engine_reset, {}, {}},
		{"engine abort", "c2h|h2c", "abort a channel (it enters ERROR with ABORTED)", "", cmd_engine_abort, {}, {}},
		{"test route", "[--source S] [--sink K]", "show or set TEST_CONTROL",
		 "S: user, pattern or loopback; K: user, checker or loopback. Both channels must be idle.\n",
		 cmd_test_route, {"--source", "--sink"}, {}},
		{"test pattern", "[--seed N] [--rate MBPS]", "show or set the pattern generator",
		 "--rate limits the generator to MBPS MB/s (0: unlimited).\n", cmd_test_pattern, {"--seed", "--rate"}, {}},
		{"test checker", "[--reset SEED]", "show (or reset to SEED) the checker's word and error counts", "",
		 cmd_test_checker, {"--reset"}, {}},
		{"run", "FILE|-", "run the commands of a script on one board, one per line",
		 "Each line is a command as after 'mprace' ('#' starts a comment, quotes group words).\n"
		 "The script stops at the first failing line (its number is reported). All lines act on\n"
		 "the same open board, which matters for the virtual board: it lives only as long as\n"
		 "this process.\n",
		 script_runner, {}, {}},
	};
	return t;
}

std::vector<std::string> split_words(const std::string &line)
{
	std::vector<std::string> out;
	std::string cur;
	bool in = false;
	char quote = 0;
	for (char c : line) {
		if (quote) {
			if (c == quote)
				quote = 0;
			else
				cur += c;
			continue;
		}
		if (c == '#')
			break;
		if (c == '\'' || c == '"') {
			quote = c;
			in = true;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			if (in)
				out.push_back(cur);
			cur.clear();
			in = false;
		} else {
			cur += c;
			in = true;
		}
	}
	if (in)
		out.push_back(cur);
	return out;
}

} // namespace cli
