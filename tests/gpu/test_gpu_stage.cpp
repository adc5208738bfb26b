// SPDX-License-Identifier: GPL-2.0
// The CUDA stage on a real GPU: FPGA -> host -> GPU and GPU -> host -> FPGA through
// cudaHostRegister'd user-memory DMA buffers, with the board played by the virtual board (its
// pattern generator and checker) and by the host-only memcpy transfer; data verified in GPU
// memory by a CUDA kernel (gpu_pattern.cu) and on the board by its checker. Also: conversions on
// the GPU (int16 <-> float, zero-copy and copy-then-kernel, aligned and not), the per-chunk
// hook, the CUDA Transfer in the ordinary algorithms (pinned staging buffers, with a transform),
// a register failure, errors mid-transfer, abort. Exits 77 (skip) without a GPU.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bufmgr/bufmgr.hpp"
#include "bufmgr/cuda.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "gpu_pattern.h"
#include "board_rig.hpp"
#include "gpu_test.hpp"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

static constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
static const std::size_t sizes[] = {4, 4 * KiB + 4, MiB, 64 * MiB + 12};

// Checks `bytes` of GPU memory at d against the pattern from seed, and that the word after it
// (initialised to 0xffffffff) was not touched.
static void gpu_expect_pattern(const void *d, std::size_t bytes, std::uint32_t seed, const std::string &what)
{
	unsigned long long bad = 0, first = 0;
	cuda::check(gpu_check_pattern(d, bytes, seed, &bad, &first), "gpu_check_pattern");
	report(bad == 0, what, "%llu of %zu words differ, first at word %llu", bad, bytes / 4, first);
	std::uint32_t after = 0;
	cuda::check(cudaMemcpy(&after, static_cast<const std::byte *>(d) + bytes, 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
	report(after == 0xffffffffu, what + ": nothing written past the end", "word after: 0x%08x", after);
}

// Marks GPU memory as unwritten (0xff) and waits for it: cudaMemset on device memory may return
// before it is done.
static void gpu_poison(cuda::DeviceBuffer &d)
{
	cuda::check(cudaMemset(d.data(), 0xff, d.size()), "cudaMemset");
	cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static cuda::DeviceBuffer gpu_buffer(std::size_t bytes)
{
	cuda::DeviceBuffer d(bytes + 64);
	cuda::check(cudaMemset(d.data(), 0xff, d.size()), "cudaMemset");
	cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	return d;
}

int main()
{
	const int ngpu = cuda::device_count();
	if (ngpu == 0) {
		std::printf("# no GPU (cudaGetDeviceCount failed or returned 0): skipped\n");
		return 77;
	}
	cudaDeviceProp prop{};
	cudaGetDeviceProperties(&prop, 0);
	std::printf("# GPU 0 of %d: %s\n", ngpu, prop.name);
	cuda::DeviceBuffer big = gpu_buffer(64 * MiB + 12);

	vboard_register(); // the virtual board linked in: no plugin needed
	gputest::run("FPGA (memcpy model) -> host -> GPU, pattern checked on the GPU", [&] {
		MemcpyOptions o;
		o.granule = 4;
		o.pattern_seed = 0x100;
		cuda::FpgaToGpu<MemcpyTransfer> f(MemcpyTransfer(o), 4, 256 * KiB);
		std::uint64_t pos = 0;
		for (std::size_t n : sizes) {
			gpu_poison(big);
			report(f.transfer(big.data(), n) == n, "memcpy->GPU " + std::to_string(n) + " bytes moved");
			gpu_expect_pattern(big.data(), n, 0x100 + static_cast<std::uint32_t>(pos / 4),
					   "memcpy->GPU " + std::to_string(n));
			pos += n;
		}
		report(f.board().view(0).data == f.gpu().view(0).data, "the GPU reads the board's own buffers");
		report(f.gpu().view(0).kind == MemoryKind::host, "adopted, not copied");
	});

	gputest::run("FPGA (virtual board, user memory) -> host -> GPU", [&] {
		Rig r("emu:link=gen3x8");
		cuda::FpgaToGpu<MpraceTransfer> f(r.user(), 4, MiB);
		report(f.board().view(0).kind == MemoryKind::user, "DMA buffers are user memory");
		std::uint32_t seed = 0x7000;
		for (std::size_t n : sizes) {
			r.board.setPatternSeed(seed);
			gpu_poison(big);
			report(f.transfer(big.data(), n) == n, "emu->GPU " + std::to_string(n) + " bytes moved");
			gpu_expect_pattern(big.data(), n, seed, "emu->GPU " + std::to_string(n));
			seed += 0x10000;
		}
	});

	gputest::run("GPU -> host -> FPGA (virtual board checker)", [&] {
		Rig r("emu:link=gen3x8");
		cuda::GpuToFpga<MpraceTransfer> g(r.user(), 4, MiB);
		const std::size_t n = 64 * MiB + 12;
		cuda::check(gpu_fill_pattern(big.data(), n, 0xabc0), "gpu_fill_pattern");
		r.board.resetChecker(0xabc0);
		report(g.transfer(big.data(), n) == n, "GPU->emu bytes moved");
		mprace::CheckerCounts c = r.board.checker();
		report(c.words == n / 4 && c.errors == 0, "checker: every word, no error", "words %u of %zu, errors %u",
		       c.words, n / 4, c.errors);
		// one wrong word on the GPU must show as exactly one error on the board
		const std::uint32_t wrong = 0xdeadbeef;
		cuda::check(cudaMemcpy(static_cast<std::byte *>(big.data()) + 4 * 12345, &wrong, 4, cudaMemcpyHostToDevice), "cudaMemcpy");
		cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		r.board.resetChecker(0xabc0);
		g.transfer(big.data(), 4 * MiB);
		c = r.board.checker();
		report(c.words == MiB && c.errors == 1, "a corrupted word is seen", "words %u, errors %u", c.words, c.errors);
	});

	gputest::run("GPU -> host -> sink (memcpy model), byte for byte", [&] {
		const std::size_t n = 16 * MiB + 4;
		std::vector<std::uint32_t> sink(n / 4 + 1, 0);
		MemcpyOptions o;
		o.granule = 4;
		o.sink = sink.data();
		o.sink_size = n;
		cuda::GpuToFpga<MemcpyTransfer> g(MemcpyTransfer(o), 3, 512 * KiB);
		cuda::check(gpu_fill_pattern(big.data(), n, 5), "gpu_fill_pattern");
		report(g.transfer(big.data(), n) == n, "bytes moved");
		std::size_t bad = 0;
		for (std::size_t i = 0; i < n / 4; ++i)
			bad += sink[i] != 5 + static_cast<std::uint32_t>(i);
		report(bad == 0 && sink[n / 4] == 0, "sink holds the GPU's pattern", "%zu words differ", bad);
	});

	gputest::run("CudaTransfer in DoubleBuffer/PooledBuffer: pinned staging, with a transform", [&] {
		const std::size_t words = 3 * MiB + 5;
		std::vector<std::uint32_t> host(words), back(words);
		for (std::size_t i = 0; i < words; ++i)
			host[i] = __builtin_bswap32(0x42 + static_cast<std::uint32_t>(i));
		DoubleBuffer<cuda::CudaTransfer, ByteSwap32> db(cuda::CudaTransfer(), 256 * KiB);
		db.transfer().set_target(big.data(), big.size());
		gpu_poison(big);
		db.write(host.data(), words); // swapped back in the copy loop
		gpu_expect_pattern(big.data(), words * 4, 0x42, "host -> staging -> GPU, byte-swapped");
		PooledBuffer<cuda::CudaTransfer, Identity<std::uint32_t>> pb(cuda::CudaTransfer(), 4, 128 * KiB);
		pb.transfer().set_source(big.data(), words * 4);
		report(pb.read(back.data(), words) == words, "GPU -> staging -> host: count");
		std::size_t bad = 0;
		for (std::size_t i = 0; i < words; ++i)
			bad += back[i] != 0x42 + static_cast<std::uint32_t>(i);
		report(bad == 0, "GPU -> staging -> host: data", "%zu words differ", bad);
		pb.transfer().set_source(big.data(), 8);
		auto e = thrown([&] { pb.read(back.data(), 4); });
		report(e.err == ENOSPC, "reading past the GPU region: ENOSPC", "errno %d: %s", e.err, e.what.c_str());
	});

	for (auto path : {cuda::GpuConvertPath::zero_copy, cuda::GpuConvertPath::copy_then_kernel}) {
		const std::string how = path == cuda::GpuConvertPath::zero_copy ? "zero-copy kernel" : "copy, then kernel";
		gputest::run("int16 -> float on the GPU (" + how + "), board -> GPU", [&] {
			Rig r("emu:link=gen3x8");
			cuda::CudaOptions o;
			o.conversion = gpu_int16_to_float(1.0f / 32768, path);
			cuda::FpgaToGpu<MpraceTransfer> f(r.user(), 4, MiB, o);
			cuda::DeviceBuffer floats = gpu_buffer(2 * (64 * MiB + 12) + 4);
			std::uint32_t seed = 0x1600;
			for (std::size_t n : sizes) {
				for (std::size_t at : {std::size_t{0}, std::size_t{4}}) { // aligned, and not (elementwise)
					r.board.setPatternSeed(seed);
					gpu_poison(floats);
					auto *dst = reinterpret_cast<float *>(static_cast<std::byte *>(floats.data()) + at);
					const std::string what = how + " " + std::to_string(n) + " bytes at +" + std::to_string(at);
					report(f.transfer(dst, n) == n, what + ": board bytes moved");
					unsigned long long bad = 0, first = 0;
					cuda::check(gpu_check_samples(dst, n / 2, seed, 1.0f / 32768, &bad, &first), "gpu_check_samples");
					report(bad == 0, what + ": floats", "%llu of %zu differ, first at %llu", bad, n / 2, first);
					std::uint32_t after = 0;
					cuda::check(cudaMemcpy(&after, dst + n / 2, 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
					report(after == 0xffffffffu, what + ": nothing written past the end", "0x%08x", after);
					seed += 0x10000;
				}
			}
		});

		gputest::run("float -> int16 on the GPU (" + how + "), GPU -> board checker", [&] {
			Rig r("emu:link=gen3x8");
			cuda::CudaOptions o;
			o.conversion = gpu_float_to_int16(32768.0f, path);
			cuda::GpuToFpga<MpraceTransfer> g(r.user(), 4, MiB, o);
			cuda::DeviceBuffer floats(2 * (64 * MiB + 12));
			for (std::size_t n : {std::size_t{4 * KiB + 4}, 64 * MiB + 12}) {
				cuda::check(gpu_fill_samples(static_cast<float *>(floats.data()), n / 2, 0x2700, 1.0f / 32768),
					    "gpu_fill_samples");
				r.board.resetChecker(0x2700);
				report(g.transfer(floats.data(), n) == n, how + " " + std::to_string(n) + ": bytes moved");
				mprace::CheckerCounts c = r.board.checker();
				report(c.words == n / 4 && c.errors == 0, how + " " + std::to_string(n) + ": the board's checker",
				       "words %u of %zu, errors %u", c.words, n / 4, c.errors);
			}
		});
	}

	gputest::run("on_chunk: each chunk once, in order, after it landed and before its buffer returns", [&] {
		Rig r("emu:link=gen3x8");
		const std::size_t n = 16 * MiB + 4;
		cuda::DeviceBuffer copy = gpu_buffer(n);
		std::vector<cuda::GpuChunk> seen;
		cuda::CudaOptions o;
		o.on_chunk = [&](const cuda::GpuChunk &c, cudaStream_t st) {
			seen.push_back(c);
			// stream-ordered: this copy sees the chunk's data only if it runs after the chunk landed
			const std::size_t off = static_cast<std::byte *>(c.gpu) - static_cast<std::byte *>(big.data());
			cuda::check(cudaMemcpyAsync(static_cast<std::byte *>(copy.data()) + off, c.gpu, c.gpu_bytes,
						    cudaMemcpyDeviceToDevice, st), "cudaMemcpyAsync in the hook");
		};
		cuda::FpgaToGpu<MpraceTransfer> f(r.user(), 3, MiB, o);
		r.board.setPatternSeed(0x3100);
		report(f.transfer(big.data(), n) == n, "bytes moved");
		cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		std::size_t at = 0;
		bool in_order = true;
		for (std::size_t k = 0; k < seen.size(); ++k) {
			in_order &= seen[k].sequence == k && seen[k].gpu == static_cast<std::byte *>(big.data()) + at &&
				    seen[k].gpu_bytes == seen[k].host_bytes && seen[k].buffer < 3;
			at += seen[k].gpu_bytes;
		}
		report(in_order && at == n, "chunks in order, covering the transfer", "%zu chunks, %zu bytes", seen.size(), at);
		gpu_expect_pattern(copy.data(), n, 0x3100, "the hook's copy of every chunk");
	});

	gputest::run("cudaHostRegister failure is an error, not a slow path", [&] {
		HostMemory m(4 * MiB);
		cuda::check(cudaHostRegister(m.data(), m.size(), cudaHostRegisterDefault), "cudaHostRegister (setup)");
		BufferView v[2] = {{m.data(), 2 * MiB, MemoryKind::user}, {m.data() + 2 * MiB, 2 * MiB, MemoryKind::user}};
		cuda::CudaTransfer t;
		auto e = thrown([&] { t.adopt(v, 2); });
		// CUDA reports cudaErrorHostMemoryAlreadyRegistered (EEXIST); any error will do, as
		// long as it is one and says what failed
		report(e.err > 0 && e.what.find("cudaHostRegister") != std::string::npos,
		       "already registered memory: a CudaError naming cudaHostRegister", "errno %d: %s", e.err,
		       e.what.c_str());
		std::printf("# %s\n", e.what.c_str());
		report(t.buffer_count() == 0, "nothing adopted");
		cudaHostUnregister(m.data());
	});

	gputest::run("errors mid-transfer reach the caller; the stage is reusable", [&] {
		Rig r("emu:link=gen3x8,buserr=c2h:5");
		cuda::FpgaToGpu<MpraceTransfer> f(r.user(), 4, 256 * KiB);
		auto e = thrown([&] { f.transfer(big.data(), 16 * MiB); });
		report(e.err == EIO, "board bus error: EIO", "errno %d: %s", e.err, e.what.c_str());
		r.board.setPatternSeed(0x9000);
		gpu_poison(big);
		report(f.transfer(big.data(), 16 * MiB) == 16 * MiB, "next transfer: bytes moved");
		gpu_expect_pattern(big.data(), 16 * MiB, 0x9000, "next transfer: data");

		MemcpyOptions o;
		o.granule = 4;
		o.fail_at[0] = 3;
		cuda::FpgaToGpu<MemcpyTransfer> m(MemcpyTransfer(o), 4, 256 * KiB);
		e = thrown([&] { m.transfer(big.data(), 4 * MiB); });
		report(e.err == EIO, "memcpy model fault: EIO", "errno %d: %s", e.err, e.what.c_str());
	});

	gputest::run("abort() from another thread while the board stalls", [&] {
		Rig r("emu:link=gen3x8,stall=c2h:3");
		cuda::FpgaToGpu<MpraceTransfer> f(r.user(), 4, 256 * KiB);
		std::thread t([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			f.abort();
		});
		const auto t0 = std::chrono::steady_clock::now();
		auto e = thrown([&] { f.transfer(big.data(), 16 * MiB); });
		t.join();
		const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		report(e.err == ECANCELED && dt < 10, "ECANCELED, promptly", "errno %d after %.2f s: %s", e.err, dt,
		       e.what.c_str());
		r.board.setPatternSeed(1);
		gpu_poison(big);
		report(f.transfer(big.data(), 4 * MiB) == 4 * MiB, "next transfer: bytes moved");
		gpu_expect_pattern(big.data(), 4 * MiB, 1, "next transfer: data");
	});

	return gputest::finish();
}
