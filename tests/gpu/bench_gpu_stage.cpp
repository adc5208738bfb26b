// SPDX-License-Identifier: GPL-2.0
// Figures of the CUDA stage (not a test: prints, never fails on a number).
//
// For each board model, in the same run:
//   board        the board alone: C2H into host DMA buffers, nothing else (the link's rate)
//   serial       fill one buffer, then cudaMemcpy it to the GPU, repeat (MPRACE's chunk
//                buffer; the "FI" mode of the Edinburgh thesis: the harmonic sum of both links)
//   relay        cuda::FpgaToGpu: K buffers, the board fills k+1 while the GPU copies k
//   eff          relay / board
// Board models: the virtual board (emu:link=gen3x8, pattern generator) and the host-only
// memcpy model paced at 7000 MB/s (about Gen3 x8, as in docs/results' reference measurement).
// Exits 77 without a GPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bufmgr/bufmgr.hpp"
#include "bufmgr/cuda.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "gpu_pattern.h"
#include "mprace/vboard.h"

using namespace bufmgr;
using Clock = std::chrono::steady_clock;

static constexpr std::size_t MiB = 1024 * 1024;

// MB/s of moving `total` bytes with f(bytes) calls of `chunk` bytes; best of 3 trials.
static double rate(const std::function<void(std::size_t)> &f, std::size_t chunk, std::size_t total)
{
	f(chunk); // warm-up
	double best = 0;
	for (int t = 0; t < 3; ++t) {
		const auto t0 = Clock::now();
		for (std::size_t done = 0; done < total; done += chunk)
			f(chunk);
		const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
		best = std::max(best, total / dt / 1e6);
	}
	return best;
}

template <class MakeBoard>
static void row(const char *name, MakeBoard make, std::size_t k, std::size_t buf, std::size_t xfer,
		cuda::DeviceBuffer &gpu, const std::function<std::uint32_t(decltype(make()) &)> &next_seed)
{
	const std::size_t total = 1024 * MiB;
	// board alone
	auto b = make();
	b.allocate(1, buf);
	const double board = rate([&](std::size_t n) {
		for (std::size_t d = 0; d < n; d += buf) {
			b.start(Direction::c2h, 0, buf);
			b.wait(Direction::c2h, 0);
		}
	}, xfer, total);
	// serial: fill, then copy to the GPU (pinned: the buffer is registered)
	cuda::check(cudaHostRegister(b.view(0).data, buf, cudaHostRegisterDefault), "cudaHostRegister");
	const double serial = rate([&](std::size_t n) {
		for (std::size_t d = 0; d < n; d += buf) {
			b.start(Direction::c2h, 0, buf);
			b.wait(Direction::c2h, 0);
			cuda::check(cudaMemcpy(static_cast<std::byte *>(gpu.data()) + d, b.view(0).data, buf,
					       cudaMemcpyHostToDevice), "cudaMemcpy");
		}
	}, xfer, total);
	cudaHostUnregister(b.view(0).data);
	// relay
	cuda::FpgaToGpu<decltype(make())> f(make(), k, buf);
	const double relay = rate([&](std::size_t n) { f.transfer(gpu.data(), n); }, xfer, total);
	// and the data of one more transfer, checked on the GPU
	const std::uint32_t seed = next_seed(f.board());
	f.transfer(gpu.data(), xfer);
	unsigned long long bad = 0, first = 0;
	cuda::check(gpu_check_pattern(gpu.data(), xfer, seed, &bad, &first), "gpu_check_pattern");
	std::printf("%-22s %2zu x %4zuM %6zuM | %8.0f %8.0f %8.0f | %5.1f%% %5.1f%% | %s\n", name, k, buf / MiB,
		    xfer / MiB, board, serial, relay, 100 * serial / board, 100 * relay / board,
		    bad ? "DATA WRONG" : "data ok");
}

int main(int argc, char **argv)
{
	if (cuda::device_count() == 0) {
		std::printf("# no GPU: skipped\n");
		return 77;
	}
	cudaDeviceProp prop{};
	cudaGetDeviceProperties(&prop, 0);
	const std::size_t xfer = argc > 1 ? std::strtoull(argv[1], nullptr, 0) * MiB : 256 * MiB;
	cuda::DeviceBuffer gpu(xfer);
	std::printf("# bench_gpu_stage on %s; 1 GiB streamed per figure in transfers of %zu MiB; MB/s = 10^6 B/s, best of 3\n",
		    prop.name, xfer / MiB);
	std::printf("%-22s %-9s %7s | %8s %8s %8s | %6s %6s |\n", "board", "buffers", "xfer", "board", "serial",
		    "relay", "serial", "relay");

	mp_vboard_register(); // the virtual board linked in: no plugin needed
	mprace::Board board("emu:link=gen3x8");
	mprace::DMAEngine engine(board);
	board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
	auto emu = [&] { return MpraceTransfer(board, engine, MemoryKind::user); };
	for (std::size_t buf : {MiB, 4 * MiB})
		for (std::size_t k : {2, 4})
			row("emu:link=gen3x8", emu, k, buf, xfer, gpu, [&](MpraceTransfer &) {
				board.setPatternSeed(0x5150);
				return 0x5150u;
			});

	for (std::size_t buf : {MiB, 4 * MiB}) {
		auto model = [] {
			MemcpyOptions o;
			o.granule = 4;
			o.rate_mbps = 7000;
			return MemcpyTransfer(o);
		};
		// the model's pattern continues: word n of its stream is n
		row("memcpy model 7000MB/s", model, 4, buf, xfer, gpu, [](MemcpyTransfer &t) {
			return static_cast<std::uint32_t>(t.bytes(Direction::c2h) / 4);
		});
	}
	return 0;
}
