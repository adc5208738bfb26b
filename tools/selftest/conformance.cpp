// SPDX-License-Identifier: GPL-2.0
// The engine conformance suite: what docs/dma-engine.md promises, checked through libmprace's
// public API only, against whatever board is open — the virtual board (`emu:...`), the RTL
// under a simulator (`sim:`), a board behind pcidriver.ko (/dev/fpga0) or any other backend —
// so that every implementation of the engine answers to the same program. `mprace selftest`
// runs it (tools/cli/cmd_selftest.cpp); conformance.hpp says how.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "selftest/conformance.hpp"
#include "mprace/mprace.hpp"
#include "mprace-spec/pattern.h"

using namespace mprace;
using Clock = std::chrono::steady_clock;

namespace {

std::string hex(std::uint64_t v)
{
	char b[32];
	std::snprintf(b, sizeof b, "0x%" PRIx64, v);
	return b;
}

// First byte where a and b differ, or -1.
long long first_difference(const void *a, const void *b, std::size_t n)
{
	const auto *x = static_cast<const unsigned char *>(a), *y = static_cast<const unsigned char *>(b);
	for (std::size_t k = 0; k < n; ++k)
		if (x[k] != y[k])
			return static_cast<long long>(k);
	return -1;
}

struct Run {
	const selftest::Options &o;
	bool quick, slow;
	std::mt19937 rng;
	std::chrono::seconds wait_limit{10};
	selftest::Outcome outcome;

	void line(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
	{
		for (std::FILE *f : o.out) {
			va_list ap;
			va_start(ap, fmt);
			std::vfprintf(f, fmt, ap);
			va_end(ap);
			std::fflush(f);
		}
	}

	void report(bool ok, const std::string &what, const std::string &why = std::string())
	{
		int n = ++outcome.checks;
		line("%s %d - %s\n", ok ? "ok" : "not ok", n, what.c_str());
		if (!ok) {
			++outcome.failures;
			if (!why.empty())
				line("#   %s\n", why.c_str());
		}
	}

	void skip(const std::string &what)
	{
		++outcome.skipped;
		line("ok %d - # SKIP %s\n", ++outcome.checks, what.c_str());
	}

	// Runs one group; an exception fails it with its message and the run goes on.
	void group(const std::string &name, const std::function<void()> &f)
	{
		line("# %s\n", name.c_str());
		try {
			f();
		} catch (const std::exception &e) {
			report(false, name + ": no exception", e.what());
		}
	}

	// Waits until t has finished (at most wait_limit, then aborts it) and returns its result.
	TransferResult finish(Transfer &t)
	{
		const auto t0 = Clock::now();
		while (!t.done() && Clock::now() - t0 < wait_limit)
			std::this_thread::sleep_for(std::chrono::microseconds(50));
		const TransferResult res = t.result();
		if (!res.done)
			t.abort(); // the next checks start from an idle channel
		return res;
	}

	// the longest transfer worth making on this board
	std::uint32_t cap(std::uint32_t max) const { return slow ? std::min<std::uint32_t>(max, 64u << 10) : max; }

	std::uint32_t pick(std::uint32_t lo, std::uint32_t hi) { return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng); }
	// A length of 4 bytes to max, multiples of 4, spread over the orders of magnitude.
	std::uint32_t length(std::uint32_t max)
	{
		const unsigned bits = pick(2, 31 - static_cast<unsigned>(__builtin_clz(max)));
		return std::max<std::uint32_t>(4, pick(1, (1u << bits) / 4) * 4) & ~3u;
	}
};

void identity(Run &r, Board &b)
{
	const BoardInfo &i = b.info();
	r.report(i.magic == MP_ENGINE_MAGIC, "ID reads the engine's magic", "read " + hex(i.magic));
	r.report(i.versionMajor == MP_ENGINE_VERSION_MAJOR, "major version " + std::to_string(MP_ENGINE_VERSION_MAJOR),
	       "read " + std::to_string(i.versionMajor));
	r.report(i.caps.c2hChannels == 1 && i.caps.h2cChannels == 1, "CAPS: one channel per direction");
	r.report(i.caps.datapathBytes == 32 || i.caps.datapathBytes == 64, "CAPS: a 256- or 512-bit datapath",
	       std::to_string(i.caps.datapathBytes) + " bytes");
	r.report(i.caps.patternGenerator && i.caps.checker && i.caps.loopback, "CAPS: the test logic is there");
	r.report(i.clockMHz > 0, "CLOCK_MHZ is set", std::to_string(i.clockMHz));
	const std::uint64_t c0 = b.cycles();
	std::this_thread::sleep_for(std::chrono::milliseconds(2));
	r.report(b.cycles() > c0, "CYCLE counts");
	// SCRATCH keeps what is written, every bit
	for (std::uint32_t v : {0u, 0xffffffffu, 0xa5a55a5au, static_cast<std::uint32_t>(r.rng())}) {
		b.setRegister(MP_REG_SCRATCH, v);
		const std::uint32_t got = b.getRegister(MP_REG_SCRATCH);
		r.report(got == v, "SCRATCH holds " + hex(v), "read " + hex(got));
	}
}

// C2H from the pattern generator: random lengths at random aligned offsets, byte for byte.
void pattern(Run &r, Board &b, DMAEngine &e, DMABuffer &buf, const char *kind)
{
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	b.setPatternRate(0);
	std::vector<unsigned char> want;
	const int n = r.quick ? 8 : 24;
	for (int k = 0; k < n; ++k) {
		const std::uint32_t len = r.length(r.cap(static_cast<std::uint32_t>(buf.size() / 2)));
		const std::uint64_t off = r.pick(0, static_cast<std::uint32_t>((buf.size() - len) / 4)) * 4ull;
		const std::uint32_t seed = static_cast<std::uint32_t>(r.rng());
		std::memset(static_cast<char *>(buf.data()) + off, 0, len);
		buf.syncForDevice();
		b.setPatternSeed(seed);
		const std::uint64_t got = e.read(buf, off, len);
		buf.syncForCpu();
		want.resize(len);
		mp_pattern_fill(want.data(), len, 0, seed);
		const long long bad = first_difference(static_cast<char *>(buf.data()) + off, want.data(), len);
		r.report(got == len && bad < 0,
		       std::string(kind) + " C2H pattern " + std::to_string(len) + " B at +" + std::to_string(off),
		       "moved " + std::to_string(got) + ", first wrong byte " + std::to_string(bad));
	}
}

// H2C into the checker: every word counted, a corrupted one seen once.
void checker(Run &r, Board &b, DMAEngine &e, DMABuffer &buf, const char *kind)
{
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	for (int k = 0; k < (r.quick ? 4 : 12); ++k) {
		const std::uint32_t len = r.length(r.cap(static_cast<std::uint32_t>(buf.size())));
		const std::uint32_t seed = static_cast<std::uint32_t>(r.rng());
		mp_pattern_fill(buf.data(), len, 0, seed);
		const bool corrupt = k % 2 == 1 && len >= 8;
		const std::uint32_t at = corrupt ? r.pick(0, len / 4 - 1) : 0;
		if (corrupt)
			static_cast<std::uint32_t *>(buf.data())[at] ^= 0x00010000u;
		buf.syncForDevice();
		b.resetChecker(seed);
		e.write(buf, 0, len);
		CheckerCounts c{};
		const auto t0 = Clock::now();
		do // the counters may trail the completion record by a moment
			c = b.checker();
		while (c.words != len / 4 && Clock::now() - t0 < std::chrono::milliseconds(r.slow ? 5000 : 200));
		r.report(c.words == len / 4 && c.errors == (corrupt ? 1u : 0u),
		       std::string(kind) + " H2C checker " + std::to_string(len) + " B" + (corrupt ? ", one word corrupted" : ""),
		       "words " + std::to_string(c.words) + ", errors " + std::to_string(c.errors));
	}
}

// Both channels at once through the loopback: a seeded list of H2C pieces out of one user
// buffer (page-crossing, odd offsets), read back by a differently cut list of C2H pieces, more
// descriptors than the ring holds.
void loopback(Run &r, Board &b, Completion completion)
{
	EngineOptions o;
	o.ringEntries = 16;
	o.waitTimeout = r.wait_limit;
	o.completion = completion;
	DMAEngine e(b, o);
	b.setTestRouting(C2HSource::Loopback, H2CSink::Loopback);
	const std::size_t total = r.slow ? (64u << 10) : r.quick ? (256u << 10) : (2u << 20);
	std::vector<std::uint32_t> src_mem(total / 4 + 1024), dst_mem(total / 4 + 1024);
	// user memory at an offset that is not page aligned
	auto *src = reinterpret_cast<unsigned char *>(src_mem.data()) + 4 * r.pick(1, 1000);
	auto *dst = reinterpret_cast<unsigned char *>(dst_mem.data()) + 4 * r.pick(1, 1000);
	for (std::size_t k = 0; k < total; ++k)
		src[k] = static_cast<unsigned char>(r.rng());
	DMABuffer in(b, src, total, PD_DMA_TO_DEVICE), out(b, dst, total, PD_DMA_FROM_DEVICE);
	auto cut = [&](std::vector<Request> &reqs, DMABuffer &buf) {
		for (std::uint64_t at = 0; at < total;) {
			std::uint64_t len = std::min<std::uint64_t>(r.length(r.slow ? 8u << 10 : 64u << 10), total - at);
			reqs.push_back(Request{&buf, at, len, 0});
			at += len;
		}
	};
	std::vector<Request> w, rd;
	cut(w, in);
	cut(rd, out);
	in.syncForDevice();
	std::vector<Transfer> wt(w.size()), rt(rd.size());
	e.submit(Channel::C2H, rd.data(), rd.size(), rt.data());
	e.submit(Channel::H2C, w.data(), w.size(), wt.data());
	std::uint64_t moved = 0;
	for (auto &t : wt)
		t.get();
	for (auto &t : rt)
		moved += t.get();
	out.syncForCpu();
	const long long bad = first_difference(dst, src, total);
	r.report(moved == total && bad < 0,
	       std::string("loopback, ") + (completion == Completion::Polling ? "polling" : "interrupts") + ": " +
		       std::to_string(w.size()) + " H2C and " + std::to_string(rd.size()) + " C2H descriptors, ring of 16",
	       "moved " + std::to_string(moved) + " of " + std::to_string(total) + ", first wrong byte " + std::to_string(bad));
}

// Every descriptor error code, each followed by a clean transfer on the same channel.
void bad_descriptors(Run &r, Board &b, DMAEngine &e, DMABuffer &buf)
{
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	const std::uint64_t good = buf.busAddress(0);
	struct Case {
		const char *what;
		std::uint64_t addr;
		std::uint32_t len, ctrl;
		unsigned int code;
	} cases[] = {
		{"length 0", good, 0, 0, MP_ERR_DESC_LENGTH},
		{"length above the maximum", good, MP_ENGINE_MAX_DESC_LEN + 4, 0, MP_ERR_DESC_LENGTH},
		{"address not a multiple of 4", good + 2, 64, 0, MP_ERR_DESC_ALIGN},
		{"length not a multiple of 4", good, 66, 0, MP_ERR_DESC_ALIGN},
		{"a reserved CTRL bit", good, 64, 1u << 7, MP_ERR_DESC_RESERVED},
		{"a reserved LEN bit", good, 64 | (1u << 30), 0, MP_ERR_DESC_RESERVED},
		{"a bus address never mapped", 0x1000, 4096, 0, MP_ERR_BUS_ERROR},
	};
	for (Channel ch : {Channel::C2H, Channel::H2C}) {
		const char *name = ch == Channel::C2H ? "C2H" : "H2C";
		for (const Case &c : cases) {
			Transfer t = e.submitRaw(ch, c.addr, c.len, c.ctrl);
			const TransferResult res = r.finish(t);
			// C2H data writes are posted: hardware cannot see one its host blocked, so the
			// spec allows either outcome there (docs/dma-engine.md, BUS_ERROR)
			const bool posted = ch == Channel::C2H && c.code == MP_ERR_BUS_ERROR;
			r.report(res.done && (res.engineError == c.code || (posted && res.engineError == MP_ERR_NONE)),
			       std::string(name) + " " + c.what + ": " + mp_engine_error_name(c.code) +
				       (posted ? " (or none: a blocked posted write is invisible to the device)" : ""),
			       std::string("done ") + (res.done ? "yes" : "no") + ", engine error " + mp_engine_error_name(res.engineError));
			// and the channel works again
			const std::uint32_t seed = static_cast<std::uint32_t>(r.rng());
			if (ch == Channel::C2H) {
				b.setPatternSeed(seed);
				e.read(buf, 0, 4096);
				buf.syncForCpu();
				std::vector<unsigned char> want(4096);
				mp_pattern_fill(want.data(), want.size(), 0, seed);
				r.report(first_difference(buf.data(), want.data(), 4096) < 0, std::string(name) + " clean transfer after it");
			} else {
				mp_pattern_fill(buf.data(), 4096, 0, seed);
				buf.syncForDevice();
				b.resetChecker(seed);
				e.write(buf, 0, 4096);
				const auto t0 = Clock::now();
				CheckerCounts k{};
				do
					k = b.checker();
				while (k.words != 1024 && Clock::now() - t0 < std::chrono::milliseconds(r.slow ? 5000 : 200));
				r.report(k.words == 1024 && k.errors == 0, std::string(name) + " clean transfer after it");
			}
		}
	}
}

// Abort in the middle of a slow transfer (the pattern generator paced at 10 MB/s), then a
// clean one; and the stall timeout when the source has no data.
void abort_and_timeout(Run &r, Board &b, DMAEngine &e, DMABuffer &buf)
{
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	b.setPatternRate(10);
	Transfer t = e.readAsync(buf, 0, 1u << 20);
	std::this_thread::sleep_for(std::chrono::milliseconds(r.slow ? 2000 : 20));
	const bool aborted = t.abort();
	const TransferResult res = r.finish(t);
	r.report(aborted && res.done && res.error == ECANCELED, "abort mid-transfer: ECANCELED",
	       "error " + std::to_string(res.error) + ", engine " + mp_engine_error_name(res.engineError));
	b.setPatternRate(0);
	const std::uint32_t seed = static_cast<std::uint32_t>(r.rng());
	b.setPatternSeed(seed);
	const std::uint32_t clean = r.slow ? 4096 : 65536;
	const std::uint64_t got = e.read(buf, 0, clean);
	buf.syncForCpu();
	std::vector<unsigned char> want(clean);
	mp_pattern_fill(want.data(), want.size(), 0, seed);
	r.report(got == clean && first_difference(buf.data(), want.data(), clean) < 0, "a clean transfer after the abort");

	// The user stream of a board without user logic (or whose logic sends nothing) never
	// delivers: with TIMEOUT_US the engine gives up with TIMEOUT.
	b.setTestRouting(C2HSource::User, H2CSink::Checker);
	e.setStallTimeout(r.slow ? 20 : 2000);
	Transfer s = e.readAsync(buf, 0, 4096);
	const TransferResult sr = r.finish(s);
	e.setStallTimeout(0);
	if (sr.done && sr.engineError == MP_ERR_NONE)
		r.skip("stall timeout: the user stream delivered data");
	else
		r.report(sr.done && sr.engineError == MP_ERR_TIMEOUT && sr.error == ETIMEDOUT,
		       "no source data for TIMEOUT_US: TIMEOUT", std::string("engine ") + mp_engine_error_name(sr.engineError));
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
}

// A lent channel (DMAEngine::lend): descriptors written into the ring by the program itself
// and doorbells written into BAR0 as mapped (on the virtual board and sim: the doorbell page of
// docs/dma-engine.md) — what a GPU kernel does in a GPU-initiated transfer. Batches of 1 to 3
// descriptors wrap an 8-entry ring; then the lease goes back and the engine works as before.
void lent_channel(Run &r, Board &b)
{
	EngineOptions o;
	o.waitTimeout = r.wait_limit;
	o.ringEntries = 8;
	DMAEngine e(b, o);
	DMABuffer kmem(b, 256u << 10);
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	b.setPatternRate(0);
	const std::uint32_t seed = static_cast<std::uint32_t>(r.rng());
	const int total = r.quick || r.slow ? 12 : 40;
	const std::uint32_t len = r.slow ? 1024 : 4096;
	std::memset(kmem.data(), 0, kmem.size());
	kmem.syncForDevice();
	{
		ChannelLease lease = e.lend(Channel::C2H);
		DMADescriptorList &ring = lease.ring();
		// after lend(): its channel RESET drops what the generator had sent ahead
		b.setPatternSeed(seed);
		r.report(ring.size() == 8 && lease.bar0Size() >= MP_ENGINE_BAR0_SIZE,
			 "lend: the ring and BAR0 (" + std::to_string(lease.bar0Size()) + " bytes) mapped");
		try {
			e.readAsync(kmem, 0, 4096);
			r.report(false, "submit on a lent channel: EBUSY", "it was accepted");
		} catch (const Error &err) {
			r.report(err.code().value() == EBUSY, "submit on a lent channel: EBUSY", err.what());
		}
		try {
			e.lend(Channel::C2H);
			r.report(false, "lend twice: EBUSY", "it was lent twice");
		} catch (const Error &err) {
			r.report(err.code().value() == EBUSY, "lend twice: EBUSY", err.what());
		}
		std::uint32_t n = 0;
		bool ok = true;
		std::string why;
		while (ok && static_cast<int>(n) < total) {
			const std::uint32_t batch = std::min<std::uint32_t>(r.pick(1, 3), total - n);
			for (std::uint32_t k = 0; k < batch; ++k)
				ring.at(n + k).set(kmem.busAddress(0) + (n + k) * static_cast<std::uint64_t>(len),
						   len, 0, n + k);
			n += batch;
			lease.ringDoorbell(n);
			const auto t0 = Clock::now();
			while (!ring.at(n - 1).record().done() && Clock::now() - t0 < r.wait_limit)
				std::this_thread::sleep_for(std::chrono::microseconds(20));
			for (std::uint32_t k = n - batch; ok && k < n; ++k) {
				const DMADescriptor::Record rec = ring.at(k).record();
				if (!rec.done() || rec.failed() || rec.bytes != len) {
					ok = false;
					why = "descriptor " + std::to_string(k) + ": done " +
					      std::to_string(rec.done()) + ", error " +
					      mp_engine_error_name(rec.errorCode()) + ", " +
					      std::to_string(rec.bytes) + " bytes";
				}
			}
		}
		r.report(ok, std::to_string(total) + " descriptors of " + std::to_string(len) +
				     " B queued by the program, doorbells through the mapped BAR0", why);
		kmem.syncForCpu();
		std::vector<unsigned char> want(static_cast<std::size_t>(total) * len);
		mp_pattern_fill(want.data(), want.size(), 0, seed);
		const long long bad = first_difference(kmem.data(), want.data(), want.size());
		r.report(bad < 0, "their data is the pattern, byte for byte",
			 "first wrong byte " + std::to_string(bad));
		// the other channel is the engine's as before
		mp_pattern_fill(static_cast<char *>(kmem.data()) + (128u << 10), 4096, 0, seed);
		kmem.syncForDevice();
		b.resetChecker(seed);
		e.write(kmem, 128u << 10, 4096);
		CheckerCounts c{};
		const auto t0 = Clock::now();
		do
			c = b.checker();
		while (c.words != 1024 && Clock::now() - t0 < std::chrono::milliseconds(r.slow ? 5000 : 200));
		r.report(c.words == 1024 && c.errors == 0, "H2C works while C2H is lent");
	}
	// given back (the lease's destructor): the engine's own transfers work again
	const std::uint32_t seed2 = static_cast<std::uint32_t>(r.rng());
	b.setPatternSeed(seed2);
	const std::uint64_t got = e.read(kmem, 0, 4096);
	kmem.syncForCpu();
	std::vector<unsigned char> want(4096);
	mp_pattern_fill(want.data(), want.size(), 0, seed2);
	r.report(got == 4096 && first_difference(kmem.data(), want.data(), 4096) < 0,
		 "given back: the engine's transfers work again");
}

} // namespace

namespace selftest {

Outcome run(mprace::Board &b, const Options &opt)
{
	Run r{opt, opt.quick, opt.slow, std::mt19937(opt.seed), std::chrono::seconds(opt.slow ? 600 : 10), {}};

	r.group("identity", [&] { identity(r, b); });
	r.group("engine and buffers", [&] {
		EngineOptions o;
		o.waitTimeout = r.wait_limit;
		DMAEngine e(b, o);
		DMABuffer kmem(b, 4u << 20);
		std::vector<std::uint32_t> mem((4u << 20) / 4 + 1024);
		DMABuffer umem(b, mem.data() + r.pick(0, 1023), 4u << 20);
		r.group("pattern generator (kernel memory)", [&] { pattern(r, b, e, kmem, "kmem"); });
		r.group("pattern generator (user memory, scatter-gather)", [&] { pattern(r, b, e, umem, "umem"); });
		r.group("checker (kernel memory)", [&] { checker(r, b, e, kmem, "kmem"); });
		r.group("checker (user memory)", [&] { checker(r, b, e, umem, "umem"); });
		r.group("bad descriptors", [&] { bad_descriptors(r, b, e, kmem); });
		r.group("abort and timeout", [&] { abort_and_timeout(r, b, e, kmem); });
	});
	r.group("a lent channel: descriptors and doorbells from outside the library",
		[&] { lent_channel(r, b); });
	r.group("loopback, both channels at once (polling)", [&] { loopback(r, b, Completion::Polling); });
	r.group("loopback, both channels at once (interrupts)", [&] { loopback(r, b, Completion::Interrupt); });
	return r.outcome;
}

} // namespace selftest
