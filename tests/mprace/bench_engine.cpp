// SPDX-License-Identifier: GPL-2.0
//
// bench_engine: what libmprace costs the host CPU per DMA operation, and what the virtual
// board's link presets deliver through it. Built by `make check`, never run by it: it prints
// figures (and CSV with --csv FILE); no thresholds.
//
//   bench_engine [--ops N] [--gib G] [--link PRESET]... [--csv FILE]
//
// 1. emu:link=ideal, polling, 4 KiB C2H operations from the pattern generator:
//    - "library cost": N operations submitted (singly: one doorbell each, or in batches of
//      64: one doorbell per batch), the device is then given time to finish them all, and the
//      completions are consumed. Only the submit and complete calls are timed (thread CPU
//      time), so the figure is the host CPU cost of submit + complete per operation, without
//      waiting for the model.
//    - "pipelined": the same, end to end in a loop that keeps 256 operations in flight (wall
//      time per operation: bounded by the model's own speed, which is not the library's).
//    - "blocking": submit + wait one at a time (round-trip latency through the model).
// 2. emu:link=gen3x8 (and each --link PRESET, e.g. ideal or gen2x4): C2H and H2C throughput
//    with 16 MiB transfers, 4 in flight, against the rate the preset's link model gives
//    (payload fraction of the lane rate at the MPS in use, or the engine interface's rate).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mprace/mprace.hpp"
#include "mprace/vboard.h"

using namespace mprace;

namespace {

double threadCpuNs()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double wallNs()
{
	return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

FILE *csv;

void report(const char *what, double value, const char *unit)
{
	std::printf("  %-58s %10.1f %s\n", what, value, unit);
	if (csv)
		std::fprintf(csv, "\"%s\",%.3f,%s\n", what, value, unit);
}

struct Cost {
	double submit_ns = 0, complete_ns = 0;
};

// Submits n 4 KiB C2H operations (batch 1: one submit call each), lets the model finish, then
// consumes the completions. Returns the thread CPU time of the submit and complete calls.
Cost libraryCost(DMAEngine &e, DMABuffer &buf, std::size_t n, std::size_t batch)
{
	std::vector<Transfer> ts(n);
	std::vector<Request> reqs(batch);
	const std::size_t slots = buf.size() / 4096;
	Cost c;
	double t0 = threadCpuNs();
	if (batch == 1) {
		for (std::size_t i = 0; i < n; i++)
			ts[i] = e.readAsync(buf, (i % slots) * 4096, 4096);
	} else {
		for (std::size_t i = 0; i < n; i += batch) {
			for (std::size_t k = 0; k < batch; k++)
				reqs[k] = Request{&buf, ((i + k) % slots) * 4096, 4096, 0};
			e.submit(Channel::C2H, reqs.data(), batch, &ts[i]);
		}
	}
	c.submit_ns = threadCpuNs() - t0;
	// Not timed: the model moves the data (another thread).
	while (e.status(Channel::C2H).head != static_cast<std::uint32_t>(n))
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	t0 = threadCpuNs();
	for (auto &t : ts)
		t.get();
	ts.clear(); // handles back to the pool: part of the completion cost
	c.complete_ns = threadCpuNs() - t0;
	return c;
}

void idealLink(std::size_t ops)
{
	std::printf("emu:link=ideal, polling, 4 KiB C2H operations (pattern generator)\n");
	Board b("emu:link=ideal");
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(b, 4 * 1024 * 1024);
	// Library cost: the ring holds every operation of a round, so nothing queues in software
	// and every doorbell write is exactly one per submit call. A fresh engine per round keeps
	// HEAD (read only to know when the model is done) equal to the round's count.
	const std::size_t round = 16384;
	for (std::size_t batch : {std::size_t(1), std::size_t(64)}) {
		double sub = 0, com = 0;
		std::size_t done = 0;
		for (int warm = 0; warm < 2; warm++) {
			std::size_t rounds = warm ? (ops + round - 1) / round : 1;
			for (std::size_t r = 0; r < rounds; r++) {
				EngineOptions o;
				o.ringEntries = 65536;
				DMAEngine e(b, o);
				Cost c = libraryCost(e, buf, round, batch);
				if (warm) {
					sub += c.submit_ns;
					com += c.complete_ns;
					done += round;
				}
			}
		}
		char what[96];
		std::snprintf(what, sizeof(what), "library cost, %s: submit per op",
			      batch == 1 ? "single submits" : "batches of 64");
		report(what, sub / done, "ns");
		std::snprintf(what, sizeof(what), "library cost, %s: complete per op",
			      batch == 1 ? "single submits" : "batches of 64");
		report(what, com / done, "ns");
		std::snprintf(what, sizeof(what), "library cost, %s: submit + complete per op",
			      batch == 1 ? "single submits" : "batches of 64");
		report(what, (sub + com) / done, "ns");
	}

	EngineOptions o;
	o.ringEntries = 1024;
	DMAEngine e(b, o);
	// Pipelined: 256 in flight, one submit call per operation.
	{
		const std::size_t depth = 256, n = ops;
		std::vector<Transfer> ring(depth);
		double w0 = wallNs(), c0 = threadCpuNs();
		for (std::size_t i = 0; i < n; i++) {
			Transfer &slot = ring[i % depth];
			if (slot.valid())
				slot.get();
			slot = e.readAsync(buf, (i % 1024) * 4096, 4096);
		}
		for (auto &t : ring)
			if (t.valid())
				t.get();
		report("pipelined, 256 in flight: wall time per op", (wallNs() - w0) / n, "ns");
		report("pipelined, 256 in flight: calling thread CPU per op", (threadCpuNs() - c0) / n, "ns");
	}
	// Pipelined batches: 4 batches of 64 in flight.
	{
		const std::size_t batch = 64, depth = 4, n = ops / batch;
		std::vector<std::vector<Transfer>> ring(depth);
		for (auto &r : ring)
			r.resize(batch);
		std::vector<Request> reqs(batch);
		double w0 = wallNs(), c0 = threadCpuNs();
		for (std::size_t i = 0; i < n; i++) {
			auto &slot = ring[i % depth];
			for (auto &t : slot)
				if (t.valid())
					t.get();
			for (std::size_t k = 0; k < batch; k++)
				reqs[k] = Request{&buf, ((i * batch + k) % 1024) * 4096, 4096, 0};
			e.submit(Channel::C2H, reqs.data(), batch, slot.data());
		}
		for (auto &s : ring)
			for (auto &t : s)
				if (t.valid())
					t.get();
		report("pipelined batches of 64: wall time per op", (wallNs() - w0) / (n * batch), "ns");
		report("pipelined batches of 64: calling thread CPU per op", (threadCpuNs() - c0) / (n * batch), "ns");
	}
	// Blocking round trips.
	{
		const std::size_t n = ops / 10;
		double w0 = wallNs();
		for (std::size_t i = 0; i < n; i++)
			e.read(buf, 0, 4096);
		report("blocking submit + wait (round trip) per op", (wallNs() - w0) / n, "ns");
	}
}

// Effective payload rate of a PCIe link as the virtual board models it: lane rate after line
// encoding, times lanes, times payload / (payload + per-TLP overhead) at the MPS in use, unless
// the engine's interface takes longer per TLP (docs/virtual-board.md, "Timing model").
double presetRate(unsigned int gen, unsigned int lanes, unsigned int mps, Channel ch)
{
	double lane = gen == 1 ? 2.5e9 * 8 / 10 / 8 :
		      gen == 2 ? 5e9 * 8 / 10 / 8 :
		      gen == 3 ? 8e9 * 128 / 130 / 8 :
				 16e9 * 128 / 130 / 8;
	double raw = lane * lanes;
	bool c2h = ch == Channel::C2H;
	double wire_ns = (mps + (c2h ? 24 : 20)) / raw * 1e9;
	unsigned int beat = raw > 8e9 ? 64 : 32, slot = beat == 64 ? 32 : beat;   // straddled at 512
	unsigned int slots = ((c2h ? 16 : 12) + mps + slot - 1) / slot;
	double iface_ns = slots * slot / static_cast<double>(beat) * 4.0;   // 250 MHz
	if (raw > beat * 250e6)
		iface_ns = 0;   // gen4x16: the link alone
	return mps / std::max(wire_ns, iface_ns) * 1e9;
}

// link: "gen3x8" (the preset of the issue), or another preset for context; "ideal" has no
// model rate and shows what the virtual board itself can move.
void throughput(const char *link, double gib)
{
	std::printf("emu:link=%s, 16 MiB transfers, 4 in flight\n", link);
	Board b(std::string("emu:link=") + link);
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	const unsigned int mps = b.info().caps.maxPayload;
	unsigned int gen = 0, lanes = 0;
	std::sscanf(link, "gen%ux%u", &gen, &lanes);
	DMAEngine e(b);
	const std::size_t chunk = 16u << 20;
	DMABuffer buf(b, 4 * chunk);
	const std::size_t n = static_cast<std::size_t>(gib * 1024 * 1024 * 1024 / chunk);
	for (Channel ch : {Channel::C2H, Channel::H2C}) {
		Transfer ts[4];
		double w0 = wallNs();
		for (std::size_t i = 0; i < n; i++) {
			if (ts[i % 4].valid())
				ts[i % 4].get();
			ts[i % 4] = e.submit(ch, buf, (i % 4) * chunk, chunk);
		}
		for (auto &t : ts)
			t.get();
		double s = (wallNs() - w0) / 1e9;
		double rate = n * chunk / s;
		char what[96];
		std::snprintf(what, sizeof(what), "%s %s throughput (MPS %u)", link, to_string(ch), mps);
		report(what, rate / 1e9, "GB/s");
		if (!gen)
			continue;
		double model = presetRate(gen, lanes, mps, ch);
		std::snprintf(what, sizeof(what), "%s %s preset model rate", link, to_string(ch));
		report(what, model / 1e9, "GB/s");
		std::snprintf(what, sizeof(what), "%s %s measured / model", link, to_string(ch));
		report(what, 100.0 * rate / model, "%");
	}
	// Both directions at once (one thread each).
	{
		double w0 = wallNs();
		auto run = [&](Channel ch, std::size_t base) {
			Transfer ts[2];
			for (std::size_t i = 0; i < n; i++) {
				if (ts[i % 2].valid())
					ts[i % 2].get();
				ts[i % 2] = e.submit(ch, buf, base + (i % 2) * chunk, chunk);
			}
			for (auto &t : ts)
				t.get();
		};
		std::thread c2h(run, Channel::C2H, 0), h2c(run, Channel::H2C, 2 * chunk);
		c2h.join();
		h2c.join();
		double s = (wallNs() - w0) / 1e9;
		char what[96];
		std::snprintf(what, sizeof(what), "%s C2H + H2C at once: each direction", link);
		report(what, n * chunk / s / 1e9, "GB/s");
	}
}

} // namespace

int main(int argc, char **argv)
{
	mp_vboard_register(); // the virtual board linked in: no plugin needed
	std::size_t ops = 200000;
	double gib = 2;
	std::vector<std::string> extra_links;
	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--ops") && i + 1 < argc)
			ops = std::strtoull(argv[++i], nullptr, 0);
		else if (!std::strcmp(argv[i], "--gib") && i + 1 < argc)
			gib = std::strtod(argv[++i], nullptr);
		else if (!std::strcmp(argv[i], "--link") && i + 1 < argc)
			extra_links.push_back(argv[++i]);
		else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
			csv = std::fopen(argv[++i], "w");
		else {
			std::fprintf(stderr, "usage: %s [--ops N] [--gib G] [--link PRESET]... [--csv FILE]\n", argv[0]);
			return 2;
		}
	}
	if (csv)
		std::fprintf(csv, "figure,value,unit\n");
	try {
		idealLink(ops);
		throughput("gen3x8", gib);
		for (const std::string &l : extra_links)
			throughput(l.c_str(), gib);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "bench_engine: %s\n", e.what());
		return 1;
	}
	if (csv)
		std::fclose(csv);
	return 0;
}
