// SPDX-License-Identifier: GPL-2.0
// GPU-initiated transfers (bufmgr/cuda_initiated.cuh) on a real GPU with the virtual board: a
// kernel writes the descriptors, rings the doorbell through BAR0 mapped into the GPU (the doorbell
// page), waits for the records and checks every word; chunks of one and of many descriptors
// wrapping a small ring, one and four chunks queued, one block and three consuming at once; a
// corrupted stream counted; a board error mid-stream (EIO, then the stream goes on); a stalled
// board stopped by the host (ETIMEDOUT, no hung GPU, the reader works again); the engine's own C2H
// refused while lent and back afterwards; a board per GPU, all read at once; bad arguments; and
// where a 4 KiB round trip's time goes (printed). Exits 77 without a GPU. Built by nvcc (the
// reader holds a kernel).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_initiated.cuh"
#include "board_rig.hpp"
#include "chunk_check.cuh"
#include "gpu_test.hpp"
#include "mprace-spec/pattern.h"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

static constexpr std::size_t KiB = 1024;

__device__ inline unsigned long long gpu_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// Check's words, and two GPU-clock stamps per chunk into mapped host memory: when the block
// entered the consumer and when all of it had read the chunk (uint4 loads, one wave for 16 KiB).
struct Stamped {
	std::uint32_t seed;
	unsigned long long *bad, *enter, *read;
	__device__ void operator()(const cuda::ResidentChunk &c) const
	{
		if (threadIdx.x == 0)
			enter[c.sequence] = gpu_ns();
		const uint4 *v = static_cast<const uint4 *>(c.host);
		const std::uint64_t first = c.stream_offset / 4;
		unsigned long long n = 0;
		for (std::size_t i = threadIdx.x; i < c.bytes / 16; i += blockDim.x) {
			const uint4 x = cuda::load_landed(v + i);
			n += (x.x != mp_pattern_word(seed, first + 4 * i)) + (x.y != mp_pattern_word(seed, first + 4 * i + 1)) +
			     (x.z != mp_pattern_word(seed, first + 4 * i + 2)) + (x.w != mp_pattern_word(seed, first + 4 * i + 3));
		}
		__syncthreads();
		if (threadIdx.x == 0)
			read[c.sequence] = gpu_ns();
		if (n)
			atomicAdd(bad, n);
	}
};

static double percentile(std::vector<double> v, double p)
{
	std::sort(v.begin(), v.end());
	return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

int main()
{
	if (cuda::device_count() == 0) {
		std::printf("# no GPU (cudaGetDeviceCount failed or returned 0): skipped\n");
		return 77;
	}
	vboard_register();

	struct Setting {
		unsigned int depth, blocks;
	};
	for (Setting set : {Setting{1, 1}, Setting{4, 1}, Setting{4, 3}}) {
		const std::string how = "depth " + std::to_string(set.depth) + ", " + std::to_string(set.blocks) + " block(s)";
		gputest::run("every word of every chunk, " + how + ", chunks of 4 KiB, 64 KiB and 12 KiB + 4", [&] {
			Rig r("emu:link=gen3x8", 64);
			Counters k;
			r.board.setPatternSeed(0x5500);
			cuda::InitiatedOptions o;
			o.depth = set.depth;
			o.blocks = set.blocks;
			cuda::InitiatedReader<Check> rd(r.board, r.engine, 4, 64 * KiB, k.check(0x5500), o);
			std::vector<std::uint64_t> lat;
			rd.run(1000, 4 * KiB, &lat); // the 64-entry ring wraps many times
			std::vector<std::uint64_t> sorted(lat);
			std::sort(sorted.begin(), sorted.end());
			std::printf("# %s, 4 KiB: GPU round trip p50 %.2f us, p99 %.2f us\n", how.c_str(),
				    sorted[sorted.size() / 2] / 1e3, sorted[sorted.size() * 99 / 100] / 1e3);
			report(lat.size() == 1000 && sorted.front() > 0, how + ": a latency per chunk",
			       "%zu, smallest %llu ns", lat.size(), static_cast<unsigned long long>(sorted.front()));
			rd.run(150, 64 * KiB);   // a descriptor per bus segment: many per chunk
			rd.run(7, 12 * KiB + 4); // not a whole page
			report(rd.chunks() == 1157 && k.chunks() == 1157, how + ": 1157 chunks consumed",
			       "reader %llu, seen %llu", static_cast<unsigned long long>(rd.chunks()), k.chunks());
			report(k.bad() == 0, how + ": every word as the pattern says", "%llu words differ", k.bad());
		});
	}

	gputest::run("a corrupted stream is seen: the check can fail", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		r.board.setPatternSeed(0x5500);
		cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, k.check(0x9999));
		rd.run(3, 4 * KiB);
		report(k.bad() == 3 * 1024, "3 chunks of wrong data: 3072 words counted", "%llu", k.bad());
	});

	gputest::run("a board error mid-stream, 2 blocks: EIO, then the stream goes on", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		r.board.setPatternSeed(0x700);
		cuda::InitiatedOptions o;
		o.blocks = 2;
		cuda::InitiatedReader<Check> rd(r.board, r.engine, 4, 4 * KiB, k.check(0x700), o);
		rd.run(20, 4 * KiB);
		// the user stream delivers nothing: the engine's stall timeout fails the descriptor
		r.board.setTestRouting(mprace::C2HSource::User, mprace::H2CSink::Checker);
		r.engine.setStallTimeout(2000);
		auto e = thrown([&] { rd.run(5, 4 * KiB); });
		report(e.err == EIO && e.what.find("TIMEOUT") != std::string::npos, "a failed record: EIO naming TIMEOUT",
		       "errno %d: %s", e.err, e.what.c_str());
		r.engine.setStallTimeout(0);
		r.board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		// the stream goes on where the reader counts it
		r.board.setPatternSeed(0x700 + static_cast<std::uint32_t>(rd.chunks() * 1024));
		rd.run(30, 4 * KiB);
		report(k.chunks() == 50 && k.bad() == 0, "50 chunks after it, data right", "%llu chunks, %llu bad",
		       k.chunks(), k.bad());
	});

	gputest::run("a stalled board stopped by the host: ETIMEDOUT, no hung GPU, the reader works again", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		cuda::InitiatedOptions o;
		o.patience = std::chrono::milliseconds(300);
		o.blocks = 2;
		cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, k.check(0x800), o);
		r.board.setTestRouting(mprace::C2HSource::User, mprace::H2CSink::Checker); // no stall timeout
		const auto t0 = std::chrono::steady_clock::now();
		auto e = thrown([&] { rd.run(4, 4 * KiB); });
		const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		report(e.err == ETIMEDOUT && s < 5, "no chunk for 300 ms: ETIMEDOUT, the kernel stopped",
		       "errno %d after %.2f s: %s", e.err, s, e.what.c_str());
		r.board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		r.board.setPatternSeed(0x800 + static_cast<std::uint32_t>(rd.chunks() * 1024));
		rd.run(10, 4 * KiB);
		report(k.chunks() == 10 && k.bad() == 0, "then 10 chunks, data right", "%llu chunks, %llu bad", k.chunks(),
		       k.bad());
	});

	// Where a small chunk's round trip goes: from the doorbell to the block entering the consumer
	// (the doorbell's way to the board, the board, the record's discovery) and the read itself.
	gputest::run("where a 4 KiB round trip goes, and every word right", [&] {
		Rig r("emu:link=gen3x8,nt=0", 1024);
		constexpr std::size_t n = 5000;
		unsigned long long *h = nullptr, *d = nullptr;
		cuda::check(cudaHostAlloc(reinterpret_cast<void **>(&h), (2 * n + 1) * sizeof(*h), cudaHostAllocMapped),
			    "cudaHostAlloc");
		std::fill(h, h + 2 * n + 1, 0ull);
		cuda::check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&d), h, 0), "cudaHostGetDevicePointer");
		r.board.setPatternSeed(0x3300);
		cuda::InitiatedOptions o;
		o.depth = 1;
		{
			cuda::InitiatedReader<Stamped> rd(r.board, r.engine, 1, 16 * KiB, Stamped{0x3300, d + 2 * n, d, d + n}, o);
			std::vector<std::uint64_t> lat;
			rd.run(n, 4 * KiB, &lat);
			std::vector<double> before, reading;
			bool ordered = true;
			for (std::size_t i = 0; i < n; ++i) {
				ordered = ordered && h[i] != 0 && h[n + i] >= h[i] && lat[i] >= h[n + i] - h[i];
				const double c = static_cast<double>(h[n + i] - h[i]);
				before.push_back((static_cast<double>(lat[i]) - c) / 1e3);
				reading.push_back(c / 1e3);
			}
			std::printf("# 4 KiB, one at a time: doorbell -> consumer entered p50 %.2f us, the read p50 %.2f us "
				    "(p99 %.2f / %.2f us)\n",
				    percentile(before, 0.5), percentile(reading, 0.5), percentile(before, 0.99),
				    percentile(reading, 0.99));
			report(ordered, "every chunk stamped, consumer inside its round trip");
			report(h[2 * n] == 0, "every word as the pattern says", "%llu words differ", h[2 * n]);
		}
		cudaFreeHost(h);
	});

	gputest::run("the engine's own C2H: EBUSY while lent, back afterwards", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		mprace::DMABuffer buf(r.board, 64 * KiB);
		{
			cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, k.check(0));
			report(thrown([&] { r.engine.read(buf, 0, 4096); }).err == EBUSY, "a read while lent: EBUSY");
			report(thrown([&] { cuda::InitiatedReader<Check> two(r.board, r.engine, 2, 4 * KiB, k.check(0)); }).err ==
				       EBUSY,
			       "a second reader: EBUSY");
		}
		r.board.setPatternSeed(0x42);
		report(r.engine.read(buf, 0, 4096) == 4096 && mp_pattern_find_mismatch(buf.data(), 4096, 0, 0x42) < 0,
		       "after the reader: the engine reads again");
	});

	// Several GPUs: a board per GPU, each read by a kernel on its own GPU at the same time, every
	// word checked there (two readers on one GPU where there is only one).
	gputest::run("a board per GPU, all at once", [&] {
		const int ngpu = cuda::device_count();
		const int lanes = std::max(ngpu, 2);
		std::vector<std::unique_ptr<Rig>> rigs;
		std::vector<std::unique_ptr<Counters>> counts;
		std::vector<std::unique_ptr<cuda::InitiatedReader<Check>>> readers;
		for (int i = 0; i < lanes; ++i) {
			cuda::check(cudaSetDevice(i % ngpu), "cudaSetDevice");
			rigs.push_back(std::make_unique<Rig>("emu:link=gen3x8", 64));
			counts.push_back(std::make_unique<Counters>());
			rigs.back()->board.setPatternSeed(0x9000 + i);
			cuda::InitiatedOptions o;
			o.device = i % ngpu;
			readers.push_back(std::make_unique<cuda::InitiatedReader<Check>>(
				rigs.back()->board, rigs.back()->engine, 4, 64 * KiB, counts.back()->check(0x9000 + i), o));
		}
		std::vector<std::thread> threads;
		std::vector<std::string> errors(lanes);
		for (int i = 0; i < lanes; ++i)
			threads.emplace_back([&, i] {
				try {
					readers[i]->run(400, 16 * KiB);
				} catch (const std::exception &e) {
					errors[i] = e.what();
				}
			});
		for (auto &t : threads)
			t.join();
		for (int i = 0; i < lanes; ++i)
			report(errors[i].empty() && counts[i]->chunks() == 400 && counts[i]->bad() == 0,
			       "GPU " + std::to_string(i % ngpu) + ", board " + std::to_string(i) + ": 400 chunks, every word right",
			       "%s; %llu chunks, %llu bad", errors[i].c_str(), counts[i]->chunks(), counts[i]->bad());
	});

	gputest::run("bad arguments", [&] {
		Rig r("emu:link=gen3x8", 64);
		Counters k;
		const Check c = k.check(0);
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 0, 4 * KiB, c); }).err == EINVAL,
		       "no buffer: EINVAL");
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB + 2, c); }).err == EINVAL,
		       "a buffer size not a multiple of 4: EINVAL");
		cuda::InitiatedOptions o;
		o.depth = 3;
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, c, o); }).err == EINVAL,
		       "depth 3 with 2 buffers: EINVAL");
		o = cuda::InitiatedOptions();
		o.blocks = 0;
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, c, o); }).err == EINVAL,
		       "no block: EINVAL");
		o.blocks = 65;
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, c, o); }).err == EINVAL,
		       "65 blocks: EINVAL");
		o = cuda::InitiatedOptions();
		o.threads = 48;
		report(thrown([&] { cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, c, o); }).err == EINVAL,
		       "48 threads: EINVAL");
		cuda::InitiatedReader<Check> rd(r.board, r.engine, 2, 4 * KiB, c);
		report(thrown([&] { rd.run(1, 8 * KiB); }).err == EINVAL, "a chunk larger than a buffer: EINVAL");
		report(thrown([&] { rd.run(1, 6); }).err == EINVAL, "a chunk not a multiple of 4: EINVAL");
	});
	return gputest::finish();
}
