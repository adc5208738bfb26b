// SPDX-License-Identifier: LGPL-2.1-or-later
//
// fpga_to_gpu: FPGA -> host -> GPU with libbufmgr's CUDA stage.
//
// K user-memory DMA buffers are filled by the board and, registered with CUDA, read by the
// GPU's copy engine while the board fills the next one: no CPU copy, both links busy at once.
// The data (the engine's counter pattern) is copied back and checked. Built by examples/Makefile
// when nvcc is found; exits 77 without a GPU.
//
//   fpga_to_gpu [DEVICE] [MIB]
//   fpga_to_gpu emu:link=gen3x8 256
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <bufmgr/bufmgr.hpp>
#include <bufmgr/cuda.hpp>
#include <bufmgr/mprace_transfer.hpp>
#include <mprace/mprace.hpp>

int main(int argc, char **argv)
{
	const std::string device = argc > 1 ? argv[1] : "emu:link=gen3x8";
	const std::size_t bytes = (argc > 2 ? std::strtoul(argv[2], nullptr, 0) : 256) << 20;
	if (bufmgr::cuda::device_count() == 0) {
		std::printf("fpga_to_gpu: no GPU\n");
		return 77;
	}
	try {
		mprace::Board board(device);
		mprace::DMAEngine engine(board);
		board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		board.setPatternSeed(0);

		bufmgr::cuda::DeviceBuffer gpu(bytes);
		// User memory: CUDA cannot register the driver's kernel memory.
		bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer> stage(
			bufmgr::MpraceTransfer(board, engine, bufmgr::MemoryKind::user), 4, 4 << 20);
		const auto t0 = std::chrono::steady_clock::now();
		const std::size_t moved = stage.transfer(gpu.data(), bytes);
		const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

		std::vector<std::uint32_t> back(bytes / 4);
		bufmgr::cuda::check(cudaMemcpy(back.data(), gpu.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
		std::size_t bad = 0;
		for (std::size_t i = 0; i < back.size(); ++i)
			bad += back[i] != static_cast<std::uint32_t>(i);
		std::printf("%s -> GPU: %zu MiB in %.3f s (%.0f MB/s), %zu words wrong\n", board.info().name.c_str(),
			    moved >> 20, dt, moved / dt / 1e6, bad);
		return bad ? 1 : 0;
	} catch (const std::system_error &e) {
		std::fprintf(stderr, "fpga_to_gpu: %s\n", e.what());
		return 1;
	}
}
