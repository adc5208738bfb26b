// SPDX-License-Identifier: GPL-2.0
// Several GPUs at once (bufmgr/cuda_multi.hpp): the lanes, how a transfer is cut into parts,
// one board fanning out to every GPU (the runs of its stream in all GPUs cover it exactly once)
// and a board per GPU (each GPU holds its board's pattern), with the data read back from every
// GPU. On a machine with one GPU the lanes share it (two lanes on GPU 0), which exercises the
// same code. Exits 77 (skip) without a GPU.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_multi.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "gpu_pattern.h"
#include "board_rig.hpp"
#include "gpu_test.hpp"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

static constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// Lane i's part, read back from its GPU.
static std::vector<std::uint32_t> read_back(const cuda::DeviceBuffer &d, std::size_t bytes)
{
	std::vector<std::uint32_t> w(bytes / 4);
	cuda::check(cudaMemcpy(w.data(), d.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
	return w;
}

int main()
{
	const int ngpu = cuda::device_count();
	if (ngpu == 0) {
		std::printf("# no GPU (cudaGetDeviceCount failed or returned 0): skipped\n");
		return 77;
	}
	std::vector<int> gpus;
	for (int g = 0; g < std::min(ngpu, 4); ++g)
		gpus.push_back(g);
	if (gpus.size() == 1)
		gpus.push_back(0); // two lanes on the one GPU
	std::printf("# %d GPU(s); lanes on GPUs", ngpu);
	for (int g : gpus)
		std::printf(" %d", g);
	std::printf("\n");
	vboard_register();

	gputest::run("lane_part: whole granules, in order, differing by at most one", [&] {
		for (std::size_t lanes : {1u, 2u, 3u, 4u, 7u})
			for (std::size_t bytes : {std::size_t{0}, std::size_t{4}, std::size_t{12}, 9 * MiB + 12, 1000 * KiB + 4}) {
				std::size_t next = 0, lo = SIZE_MAX, hi = 0;
				bool ok = true;
				for (std::size_t i = 0; i < lanes; ++i) {
					auto p = cuda::lane_part(bytes, lanes, i, 4);
					ok = ok && p.offset == next && p.length % 4 == 0;
					next = p.offset + p.length;
					lo = std::min(lo, p.length);
					hi = std::max(hi, p.length);
				}
				report(ok && next == bytes / 4 * 4 && hi - lo <= 4,
				       "lane_part(" + std::to_string(bytes) + ", " + std::to_string(lanes) + ")",
				       "covers %zu, parts %zu..%zu", next, lo, hi);
			}
	});

	gputest::run("GpuLanes: every lane runs with its GPU current; a failing lane's error comes back", [&] {
		cuda::GpuLanes lanes(gpus);
		std::vector<int> seen(gpus.size(), -1);
		lanes.run([&](std::size_t i) { cuda::check(cudaGetDevice(&seen[i]), "cudaGetDevice"); });
		report(seen == gpus, "each lane's current GPU is its own");
		std::atomic<int> ran{0};
		auto e = thrown([&] {
			lanes.run([&](std::size_t i) {
				++ran;
				if (i == 1)
					throw Error(EIO, "lane 1 fails");
			});
		});
		report(e.err == EIO && ran == static_cast<int>(gpus.size()), "the error of lane 1, after all lanes ran",
		       "errno %d (%s), %d lanes ran", e.err, e.what.c_str(), ran.load());
		lanes.run([&](std::size_t) { ++ran; });
		report(ran == 2 * static_cast<int>(gpus.size()), "the lanes work on after an error");
		report(thrown([] { cuda::GpuLanes none(std::vector<int>{}); }).err == EINVAL, "no GPU: EINVAL");
	});

	gputest::run("one board fanning out: the GPUs' runs cover the stream exactly once", [&] {
		Rig r("emu:link=gen3x8");
		cuda::FpgaToGpus<MpraceTransfer> f(
			gpus, [&](std::size_t) { return r.user(); }, 4, 256 * KiB);
		const std::size_t bytes = 9 * MiB + 12;
		std::vector<std::unique_ptr<cuda::DeviceBuffer>> dev(gpus.size());
		f.on_lanes([&](std::size_t i) { dev[i] = std::make_unique<cuda::DeviceBuffer>(f.part(bytes, 0).length); });
		std::vector<void *> dst;
		for (auto &d : dev)
			dst.push_back(d->data());
		const std::uint32_t seed = 0x5000;
		r.board.setPatternSeed(seed);
		report(f.transfer(dst, bytes) == bytes, "bytes moved in all");
		// every GPU holds runs of the stream; together they must be words 0 .. bytes/4 - 1
		std::vector<std::pair<std::uint32_t, std::size_t>> runs; // (stream word, words)
		for (std::size_t i = 0; i < gpus.size(); ++i) {
			cuda::check(cudaSetDevice(gpus[i]), "cudaSetDevice");
			auto w = read_back(*dev[i], f.part(bytes, i).length);
			for (std::size_t k = 0; k < w.size(); ++k)
				if (k == 0 || w[k] != w[k - 1] + 1)
					runs.emplace_back(w[k] - seed, 1);
				else
					runs.back().second++;
		}
		std::sort(runs.begin(), runs.end());
		std::size_t next = 0;
		bool tiles = true;
		for (auto &[start, n] : runs) {
			tiles = tiles && start == next;
			next = start + n;
		}
		report(tiles && next == bytes / 4, "the runs tile the stream", "%zu runs, reach word %zu of %zu",
		       runs.size(), next, bytes / 4);
		report(runs.size() >= gpus.size(), "every GPU got a share", "%zu runs", runs.size());
		auto e = thrown([&] { f.transfer(std::vector<void *>(1, dst[0]), 4 * KiB); });
		report(e.err == EINVAL, "a destination per GPU or EINVAL", "errno %d: %s", e.err, e.what.c_str());
	});

	gputest::run("a board per GPU: each GPU holds its board's pattern from the start", [&] {
		std::vector<std::unique_ptr<Rig>> rigs(gpus.size());
		cuda::FpgaToGpus<MpraceTransfer> f(
			gpus,
			[&](std::size_t i) {
				rigs[i] = std::make_unique<Rig>("emu:link=gen3x8");
				rigs[i]->board.setPatternSeed(0x9000);
				return rigs[i]->user();
			},
			4, MiB);
		const std::size_t bytes = 33 * MiB + 4 * gpus.size();
		std::vector<std::unique_ptr<cuda::DeviceBuffer>> dev(gpus.size());
		f.on_lanes([&](std::size_t i) { dev[i] = std::make_unique<cuda::DeviceBuffer>(f.part(bytes, 0).length + 4); });
		std::vector<void *> dst;
		for (auto &d : dev)
			dst.push_back(d->data());
		report(f.transfer(dst, bytes) == bytes, "bytes moved in all");
		for (std::size_t i = 0; i < gpus.size(); ++i) {
			cuda::check(cudaSetDevice(gpus[i]), "cudaSetDevice");
			unsigned long long bad = 0, first = 0;
			cuda::check(gpu_check_pattern(dev[i]->data(), f.part(bytes, i).length, 0x9000, &bad, &first),
				    "gpu_check_pattern");
			report(bad == 0, "lane " + std::to_string(i) + " (GPU " + std::to_string(gpus[i]) + ")",
			       "%llu words differ, first at %llu", bad, first);
		}
	});
	return gputest::finish();
}
