// SPDX-License-Identifier: GPL-2.0-or-later
//
// Commands about the board itself: info, registers, BARs, interrupts, the engine's
// channels and the test logic. Each prints what it did in lines a script can parse
// ("NAME (0xOFF) = 0xVALUE", "key: value") and throws UsageError for bad arguments and Failed
// when the board says no.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cli.hpp"
#include "cli_util.hpp"
#include "common/units.hpp"
#include "mprace/spec.h"

using tools::format_size;
using tools::strprintf;

namespace cli {

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
	unsigned bar = num32(a, a.at(0, "BAR number"), "BAR");
	std::uint64_t off = num(a, a.at(1, "offset"), "offset");
	std::uint64_t len = size_arg(a, a.at(2, "length"));
	if (bar >= PD_MAX_BARS)
		a.fail(strprintf("BAR %u: there are %u", bar, PD_MAX_BARS));
	if (off % 4 || len % 4 || len == 0)
		a.fail("offset and length must be multiples of 4 (32-bit accesses), length > 0");
	std::optional<Output> output = open_output(a);
	std::vector<unsigned char> buf(len);
	s.board().readBar(bar, off, buf.data(), len);
	if (output) {
		output->write(buf.data(), len);
		if (a.get("-o") != "-" && !s.quiet())
			std::printf("bar%u: read %s at 0x%llx into %s\n", bar, format_size(len).c_str(),
				    static_cast<unsigned long long>(off), a.get("-o").c_str());
	} else {
		hexdump(buf.data(), len, off);
	}
}

void cmd_bar_write(Session &s, const Args &a)
{
	unsigned bar = num32(a, a.at(0, "BAR number"), "BAR");
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

static unsigned irq_vector(Session &s, const Args &a, const std::string &t, unsigned *bit)
{
	std::string l = tools::to_lower(t);
	int b = l == "c2h" ? int(MP_IRQ_C2H_DONE_BIT) : l == "h2c" ? int(MP_IRQ_H2C_DONE_BIT)
		: l == "error" ? int(MP_IRQ_ERROR_BIT) : -1;
	*bit = b < 0 ? ~0u : static_cast<unsigned>(b);
	if (b < 0) { // a vector number
		std::uint64_t v = num(a, t, "interrupt source (c2h, h2c, error or a vector number)");
		unsigned n = s.board().info().pci.irq_count;
		if (v >= n)
			a.fail(n ? strprintf("vector %llu: the board has %u (0 to %u)", static_cast<unsigned long long>(v),
					     n, n - 1)
				 : std::string("the board has no interrupt vectors"));
		return static_cast<unsigned>(v);
	}
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
	std::uint32_t ms = num32(a, a.get("--timeout", "1000"), "timeout");
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

} // namespace cli
