// SPDX-License-Identifier: GPL-2.0-or-later
//
// The DMA commands: dma read, dma write, dma loop (through the engine's loopback).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "cli.hpp"
#include "cli_util.hpp"
#include "common/units.hpp"
#include "mprace/spec.h"

using tools::format_size;
using tools::strprintf;

namespace cli {

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
	std::optional<Output> output = open_output(a); // before the board's state changes
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
	if (output)
		output->write(buf.data(), got);
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
static std::vector<unsigned char> input_data(const Args &a, const char *cmd, std::uint32_t seed,
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
	std::optional<Output> output = open_output(a);
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
	if (output)
		output->write(out.data(), got);
	if (got != size || std::memcmp(out.data(), in.data(), size) != 0)
		throw Failed("dma loop: the data came back different");
	std::fprintf(o, "verify: ok (%s came back unchanged)\n", format_size(size).c_str());
}

} // namespace cli
