// SPDX-License-Identifier: GPL-2.0
// The resident receive path (bufmgr/cuda_resident.cuh) on a real GPU with the virtual board: every
// word of every chunk checked by the resident block (in place and copied), chunks of one and of
// many descriptors, a ring much smaller than the stream (it wraps hundreds of times), stop while
// the block waits, a new receiver after a stopped one, a board error mid-stream (EIO, no hung
// GPU), then the same receiver and a new one on the same engine (the engine's recovery had
// renumbered the ring), bad arguments. Exits 77 without a GPU.
// Built by nvcc (the receiver holds a kernel).
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>

#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_resident.cuh"
#include "board_rig.hpp"
#include "chunk_check.cuh"
#include "gpu_test.hpp"
#include "mprace-spec/pattern.h"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

static constexpr std::size_t KiB = 1024;

int main()
{
	if (cuda::device_count() == 0) {
		std::printf("# no GPU (cudaGetDeviceCount failed or returned 0): skipped\n");
		return 77;
	}
	vboard_register();

	for (bool copy : {false, true}) {
		const std::string how = copy ? "copied into GPU memory" : "in place";
		gputest::run("every word of every chunk, " + how + ", chunks of 4 KiB, 64 KiB and 12 KiB + 4", [&] {
			Rig r("emu:link=gen3x8", 64);
			Counters k;
			r.board.setPatternSeed(0x4400);
			cuda::ResidentOptions o;
			o.copy = copy;
			cuda::ResidentReceiver<Check> rx(r.board, r.engine, 4, 64 * KiB, Check{0x4400, k.dev, k.dev + 1}, o);
			rx.run(1000, 4 * KiB);     // the 64-entry ring wraps many times
			rx.run(300, 64 * KiB);     // larger chunks (a descriptor per bus segment)
			rx.run(7, 12 * KiB + 4);   // not a whole page
			report(rx.consumed() == 1307 && k.chunks() == 1307, how + ": 1307 chunks consumed",
			       "consumed %llu, seen %llu", static_cast<unsigned long long>(rx.consumed()), k.chunks());
			report(k.bad() == 0, how + ": every word as the pattern says", "%llu words differ", k.bad());
		});
	}

	gputest::run("a corrupted stream is seen: the check can fail", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		r.board.setPatternSeed(0x4400);
		// the consumer expects another seed: every word must count as wrong
		cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB, Check{0x9999, k.dev, k.dev + 1});
		rx.run(3, 4 * KiB);
		report(k.bad() == 3 * 1024, "3 chunks of wrong data: 3072 words counted", "%llu", k.bad());
	});

	gputest::run("stop while the block waits; a new receiver afterwards", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		r.board.setPatternSeed(0x100);
		{
			cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB, Check{0x100, k.dev, k.dev + 1});
			rx.run(10, 4 * KiB);
			const auto t0 = std::chrono::steady_clock::now();
			rx.stop(); // nothing posted: the block is polling
			const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
			report(ms < 100, "stop() returns at once", "%.1f ms", ms);
			auto e = thrown([&] { rx.run(1, 4 * KiB); });
			report(e.err == EINVAL, "run() after stop(): EINVAL", "errno %d: %s", e.err, e.what.c_str());
		}
		// the stream went on at word 10 * 1024; a new receiver counts from 0, so reseed
		r.board.setPatternSeed(0x200);
		Counters k2;
		cuda::ResidentReceiver<Check> rx2(r.board, r.engine, 2, 4 * KiB, Check{0x200, k2.dev, k2.dev + 1});
		rx2.run(50, 4 * KiB);
		report(k2.chunks() == 50 && k2.bad() == 0, "the next receiver on the same engine: 50 chunks, data right",
		       "%llu chunks, %llu bad", k2.chunks(), k2.bad());
	});

	// The engine's recovery after the error starts its descriptor numbering again; a receiver
	// that took the cookies left in the ring as its start waited for ones that never came.
	gputest::run("a board error mid-stream: EIO, no hung GPU; the same receiver and a new one go on", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		r.board.setPatternSeed(0x700);
		{
			cuda::ResidentReceiver<Check> rx(r.board, r.engine, 4, 4 * KiB, Check{0x700, k.dev, k.dev + 1});
			rx.run(100, 4 * KiB); // 100 descriptors: the numbering is past the 64-entry ring
			// the user stream delivers nothing: the engine's stall timeout fails the descriptor
			r.board.setTestRouting(mprace::C2HSource::User, mprace::H2CSink::Checker);
			r.engine.setStallTimeout(2000);
			const auto t0 = std::chrono::steady_clock::now();
			auto e = thrown([&] { rx.run(5, 4 * KiB); });
			const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
			report(e.err == EIO && s < 5, "a failed record: EIO", "errno %d after %.2f s: %s", e.err, s,
			       e.what.c_str());
			// the same receiver goes on (the stream where the reader counts it: reseed)
			r.engine.setStallTimeout(0);
			r.board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
			r.board.setPatternSeed(0x700 + static_cast<std::uint32_t>(rx.consumed() * 1024));
			auto e2 = thrown([&] { rx.run(20, 4 * KiB); });
			report(e2.err == 0 && k.chunks() == 120 && k.bad() == 0, "the same receiver after it: 20 chunks, data right",
			       "errno %d (%s); %llu chunks, %llu bad", e2.err, e2.what.c_str(), k.chunks(), k.bad());
		} // the destructor stops the block
		r.engine.setStallTimeout(0);
		r.board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		r.board.setPatternSeed(0x900);
		Counters k2;
		const auto t0 = std::chrono::steady_clock::now();
		cuda::ResidentReceiver<Check> rx2(r.board, r.engine, 4, 4 * KiB, Check{0x900, k2.dev, k2.dev + 1});
		auto e = thrown([&] { rx2.run(30, 4 * KiB); });
		const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		report(e.err == 0 && k2.chunks() == 30 && k2.bad() == 0,
		       "then a new receiver on the same engine: 30 chunks, data right",
		       "errno %d after %.2f s (%s); %llu chunks, %llu bad", e.err, s, e.what.c_str(), k2.chunks(), k2.bad());
	});

	gputest::run("bad arguments", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		Check c{0, k.dev, k.dev + 1};
		report(thrown([&] { cuda::ResidentReceiver<Check> rx(r.board, r.engine, 0, 4 * KiB, c); }).err == EINVAL,
		       "no buffer: EINVAL");
		report(thrown([&] { cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB + 2, c); }).err == EINVAL,
		       "a buffer size not a multiple of 4: EINVAL");
		cuda::ResidentOptions o;
		o.threads = 48;
		report(thrown([&] { cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB, c, o); }).err == EINVAL,
		       "48 threads: EINVAL");
		{
			mprace::DMABuffer buf(r.board, 64 * KiB);
			r.board.setPatternRate(1); // 64 KiB takes a while
			mprace::Transfer t = r.engine.readAsync(buf, 0, 64 * KiB);
			report(thrown([&] { cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB, c); }).err == EBUSY,
			       "a C2H transfer outstanding: EBUSY");
			t.abort();
			r.board.setPatternRate(0);
		}
		cuda::ResidentReceiver<Check> rx(r.board, r.engine, 2, 4 * KiB, c);
		report(thrown([&] { rx.run(1, 8 * KiB); }).err == EINVAL, "a chunk larger than a buffer: EINVAL");
		report(thrown([&] { rx.run(1, 6); }).err == EINVAL, "a chunk not a multiple of 4: EINVAL");
	});
	return gputest::finish();
}
