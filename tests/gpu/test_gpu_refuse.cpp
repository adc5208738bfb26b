// SPDX-License-Identifier: GPL-2.0
// The CUDA stage refuses kernel-memory DMA buffers with a clear error, on every backend (here
// the virtual board), before any CUDA call: so this test needs no GPU and runs everywhere the
// GPU tests are built. Real hardware demands it: pcidriver kernel memory is a dma_mmap_coherent
// mapping that cudaHostRegister cannot pin.
#include <cerrno>
#include <cstring>

#include "bufmgr/bufmgr.hpp"
#include "bufmgr/cuda.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "gpu_test.hpp"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

static bool names_the_problem(const std::string &what)
{
	return what.find("kernel memory") != std::string::npos &&
	       what.find("MemoryKind::user") != std::string::npos;
}

int main()
{
	gputest::run("CudaTransfer::adopt refuses kernel memory", [] {
		HostMemory m(1 << 16);
		BufferView v[2] = {{m.data(), 1 << 15, MemoryKind::user}, {m.data() + (1 << 15), 1 << 15, MemoryKind::kernel}};
		cuda::CudaTransfer t;
		auto e = thrown([&] { t.adopt(v, 2); });
		report(e.err == EINVAL, "EINVAL", "errno %d: %s", e.err, e.what.c_str());
		report(names_the_problem(e.what), "the message names the problem and the fix", "%s", e.what.c_str());
		report(t.buffer_count() == 0, "nothing adopted");
	});

	vboard_register(); // the virtual board linked in: no plugin needed
	gputest::run("FpgaToGpu refuses a board transfer with kernel memory (virtual board)", [] {
		mprace::Board board("emu:link=ideal");
		mprace::DMAEngine engine(board);
		auto e = thrown([&] {
			cuda::FpgaToGpu<MpraceTransfer> f(MpraceTransfer(board, engine, MemoryKind::kernel), 4, 1 << 20);
		});
		report(e.err == EINVAL && names_the_problem(e.what), "EINVAL naming the problem",
		       "errno %d: %s", e.err, e.what.c_str());
		e = thrown([&] {
			cuda::GpuToFpga<MpraceTransfer> g(MpraceTransfer(board, engine), 4, 1 << 20); // kernel by default
		});
		report(e.err == EINVAL && names_the_problem(e.what), "GpuToFpga too", "errno %d: %s", e.err,
		       e.what.c_str());
	});

	gputest::run("Relay<MpraceTransfer(kernel), CudaTransfer> refuses at adopt()", [] {
		mprace::Board board("emu:link=ideal");
		mprace::DMAEngine engine(board);
		auto e = thrown([&] {
			Relay<MpraceTransfer, cuda::CudaTransfer> r(MpraceTransfer(board, engine, MemoryKind::kernel),
								  cuda::CudaTransfer(), 2, 1 << 16);
		});
		report(e.err == EINVAL && names_the_problem(e.what), "EINVAL naming the problem",
		       "errno %d: %s", e.err, e.what.c_str());
	});
	gputest::run("an incomplete GpuConversion is refused before any CUDA call", [] {
		cuda::CudaOptions o;
		o.conversion.launch = [](const void *, const void *, void *, std::size_t, cudaStream_t) {
			return cudaSuccess;
		};
		o.conversion.in_size = 2; // out_size and the transform missing
		auto e = thrown([&] { cuda::CudaTransfer t(o); });
		report(e.err == EINVAL && e.what.find("make_gpu_conversion") != std::string::npos,
		       "EINVAL naming make_gpu_conversion", "errno %d: %s", e.err, e.what.c_str());
	});
	return gputest::finish();
}
