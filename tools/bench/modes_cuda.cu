// SPDX-License-Identifier: GPL-2.0-or-later
//
// The GPU modes (built with nvcc when configure finds CUDA; static cudart):
//   hg, gh       cudaMemcpy between pinned host memory and the GPU: the host link's limit
//   fi-serial    DMA board -> user memory, then cudaMemcpy to the GPU: the naive serial path
//   gi-serial    cudaMemcpy GPU -> user memory, then DMA to the board
//   fi, gi       the pipelined indirect path through libbufmgr's CUDA stage; with ":i16f" it
//                converts on the GPU: int16 from the board to float (fi), float to int16 (gi)
//   fr, gr       the direct path: GPU memory exported as a dma-buf, imported by the board,
//                the engine moving data peer to peer (bufmgr::cuda::GpuDirect); unavailable
//                (exit 3, with the reason) where the GPU cannot export or the board cannot import
// Data checks run on the GPU (a kernel compares the counter pattern in device memory).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include <cuda_runtime.h>

#include "../common/units.hpp"
#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_direct.hpp"
#include "bufmgr/cuda_multi.hpp"
#include "bufmgr/cuda_initiated.cuh"
#include "bufmgr/cuda_resident.cuh"
#include "bufmgr/cuda_transform.cuh"
#include "bufmgr/mprace_transfer.hpp"
#include "modes_impl.hpp"
#include "mprace/mprace.hpp"

using tools::format_size;
using tools::strprintf;

namespace dmabench {

namespace {

void cuda_check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Whether a GPU is there, asked once; Unavailable with the runtime's reason otherwise.
void require_gpu()
{
	static std::string why = bufmgr::cuda::unavailable_reason();
	if (!why.empty())
		throw Unavailable(why);
}

__global__ void fill_kernel(std::uint32_t *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		p[i] = mp_pattern_word(seed, i);
}

__global__ void check_kernel(const std::uint32_t *p, std::size_t n, std::uint32_t seed,
			     unsigned long long *bad, unsigned long long *first)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		if (p[i] != mp_pattern_word(seed, i)) {
			atomicAdd(bad, 1ull);
			atomicMin(first, static_cast<unsigned long long>(i));
		}
}

// Where the counter pattern breaks: word i starts a run unless it is word i-1 plus one. Stores
// up to cap run starts (index and word) and counts them all.
__global__ void runs_kernel(const std::uint32_t *p, std::size_t n, unsigned long long *count,
			    unsigned long long *index, std::uint32_t *word, unsigned long long cap)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		if (i == 0 || p[i] != p[i - 1] + 1u) {
			unsigned long long k = atomicAdd(count, 1ull);
			if (k < cap) {
				index[k] = i;
				word[k] = p[i];
			}
		}
}

// The ":i16f" data: the board's pattern read as int16 samples, converted as the modes convert
// them (bufmgr::Int16ToFloat(1 / 32768); FloatToInt16(32768) turns these back exactly).
__device__ float pattern_sample(std::uint32_t seed, std::size_t k)
{
	const std::uint32_t w = mp_pattern_word(seed, k / 2);
	const auto v = static_cast<std::int16_t>(k % 2 ? w >> 16 : w & 0xffff);
	return bufmgr::Int16ToFloat(1.0f / 32768)(v);
}

__global__ void fill_samples_kernel(float *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		p[i] = pattern_sample(seed, i);
}

__global__ void check_samples_kernel(const float *p, std::size_t n, std::uint32_t seed,
				     unsigned long long *bad, unsigned long long *first)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		if (__float_as_uint(p[i]) != __float_as_uint(pattern_sample(seed, i))) {
			atomicAdd(bad, 1ull);
			atomicMin(first, static_cast<unsigned long long>(i));
		}
}

class DeviceMem {
public:
	DeviceMem() = default;
	explicit DeviceMem(std::size_t size) { cuda_check(cudaMalloc(&p_, size), "cudaMalloc"); }
	DeviceMem(DeviceMem &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
	DeviceMem &operator=(DeviceMem &&o) noexcept { std::swap(p_, o.p_); return *this; }
	~DeviceMem() { if (p_) cudaFree(p_); }
	void *get() const { return p_; }

private:
	void *p_ = nullptr;
};

// The pattern of `bytes` board bytes in GPU memory: as words, or (samples) as the floats the
// ":i16f" modes make of it.
void gpu_fill(void *dev, std::uint64_t bytes, std::uint32_t seed, bool samples = false)
{
	if (samples)
		fill_samples_kernel<<<256, 256>>>(static_cast<float *>(dev), bytes / 2, seed);
	else
		fill_kernel<<<256, 256>>>(static_cast<std::uint32_t *>(dev), bytes / 4, seed);
	cuda_check(cudaDeviceSynchronize(), "fill kernel");
}

// Counts words (samples: floats) in GPU memory that differ from the pattern of `bytes` board
// bytes; *why describes the first.
bool gpu_check(const void *dev, std::uint64_t bytes, std::uint32_t seed, std::string *why, bool samples = false)
{
	DeviceMem counters(2 * sizeof(unsigned long long));
	unsigned long long init[2] = {0, ~0ull};
	cuda_check(cudaMemcpy(counters.get(), init, sizeof(init), cudaMemcpyHostToDevice), "cudaMemcpy");
	auto *c = static_cast<unsigned long long *>(counters.get());
	const std::uint64_t n = samples ? bytes / 2 : bytes / 4;
	if (samples)
		check_samples_kernel<<<256, 256>>>(static_cast<const float *>(dev), n, seed, c, c + 1);
	else
		check_kernel<<<256, 256>>>(static_cast<const std::uint32_t *>(dev), n, seed, c, c + 1);
	cuda_check(cudaDeviceSynchronize(), "check kernel");
	unsigned long long res[2];
	cuda_check(cudaMemcpy(res, c, sizeof(res), cudaMemcpyDeviceToHost), "cudaMemcpy");
	if (res[0] == 0)
		return true;
	*why = strprintf("%llu of %llu %s in GPU memory differ from the pattern, the first at %llu", res[0],
			 static_cast<unsigned long long>(n), samples ? "samples" : "words", res[1]);
	return false;
}

std::uint32_t next_seed()
{
	static std::uint32_t s = 0x6bu << 24;
	return s += 0x10001u;
}

// ------------------------------------------------------------------- hg, gh: cudaMemcpy

class CopyMode : public Mode {
public:
	explicit CopyMode(bool to_gpu) : to_gpu_(to_gpu) {}
	~CopyMode() override { teardown(); }
	std::string name() const override { return to_gpu_ ? "hg" : "gh"; }
	std::string direction() const override { return to_gpu_ ? "h2g" : "g2h"; }
	std::string description() const override
	{
		return to_gpu_ ? "cudaMemcpy pinned host -> GPU" : "cudaMemcpy GPU -> pinned host";
	}
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		cuda_check(cudaMallocHost(&host_, max_bytes), "cudaMallocHost");
		dev_ = DeviceMem(max_bytes);
	}
	void transfer(std::uint64_t bytes) override
	{
		if (to_gpu_)
			cuda_check(cudaMemcpy(dev_.get(), host_, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
		else
			cuda_check(cudaMemcpy(host_, dev_.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
	}
	std::uint64_t granule() const override { return 4; }
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		std::uint32_t seed = next_seed();
		if (to_gpu_) {
			fill_pattern(host_, bytes, seed);
			cuda_check(cudaMemset(dev_.get(), 0, bytes), "cudaMemset");
			transfer(bytes);
			return gpu_check(dev_.get(), bytes, seed, why);
		}
		gpu_fill(dev_.get(), bytes, seed);
		std::memset(host_, 0, bytes);
		transfer(bytes);
		std::int64_t bad = check_pattern(host_, bytes, seed);
		if (bad < 0)
			return true;
		*why = strprintf("host word %lld differs from the pattern", static_cast<long long>(bad));
		return false;
	}
	void teardown() override
	{
		dev_ = DeviceMem();
		if (host_)
			cudaFreeHost(host_);
		host_ = nullptr;
	}

private:
	bool to_gpu_;
	void *host_ = nullptr;
	DeviceMem dev_;
};

// The board with its pattern generator feeding C2H at full speed and its checker on H2C: what
// the modes that carry the board's pattern to and from GPUs start from.
mprace::Board &pattern_board(Env &env)
{
	env.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	mprace::Board &b = env.board();
	b.setPatternRate(0);
	return b;
}

// -------------------------------------------------- fi-serial, gi-serial: DMA then copy

// User memory (anonymous, pinned by the driver for the board and registered with CUDA for the
// copy engine); kernel memory cannot be registered with CUDA on real hardware.
class HostDmaBuffer {
public:
	HostDmaBuffer() = default;
	HostDmaBuffer(mprace::Board &board, std::size_t size, pd_dma_dir dir) : size_(size)
	{
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw std::system_error(errno, std::generic_category(), "mmap");
		p_ = p;
		buf_ = std::make_unique<mprace::DMABuffer>(board, p_, size, dir);
		cudaError_t e = cudaHostRegister(p_, size, cudaHostRegisterDefault);
		if (e != cudaSuccess)
			throw std::runtime_error(std::string("cudaHostRegister of the DMA buffer: ") + cudaGetErrorString(e));
		registered_ = true;
	}
	HostDmaBuffer(HostDmaBuffer &&) = delete;
	~HostDmaBuffer()
	{
		if (registered_)
			cudaHostUnregister(p_);
		buf_.reset();
		if (p_)
			munmap(p_, size_);
	}
	mprace::DMABuffer &dma() { return *buf_; }
	void *data() const { return p_; }

private:
	void *p_ = nullptr;
	std::size_t size_ = 0;
	std::unique_ptr<mprace::DMABuffer> buf_;
	bool registered_ = false;
};

// The modes that move data between the board and the GPU (fi*, gi*): the board's pattern
// generator feeds the GPU, the GPU's data goes to the board's checker, so both directions
// verify without a host-side reference copy.
class BoardGpuMode : public Mode {
public:
	BoardGpuMode(bool to_gpu, Env &env, bool samples = false) : to_gpu_(to_gpu), samples_(samples), env_(env) {}
	std::string direction() const override { return to_gpu_ ? "c2g" : "g2c"; }
	std::string auto_reference() const override { return to_gpu_ ? "min(c2h-umem;hg)" : "min(h2c-umem;gh)"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		mprace::Board &b = env_.board();
		std::uint32_t seed = next_seed();
		const std::uint64_t gpu_bytes = samples_ ? 2 * bytes : bytes;
		if (to_gpu_) {
			cuda_check(cudaMemset(dev_.get(), 0, gpu_bytes), "cudaMemset");
			b.setPatternSeed(seed);
			transfer(bytes);
			return gpu_check(dev_.get(), bytes, seed, why, samples_);
		}
		gpu_fill(dev_.get(), bytes, seed, samples_);
		b.resetChecker(seed);
		transfer(bytes);
		return checker_ok(env_, bytes, why);
	}

protected:
	bool to_gpu_;
	bool samples_; // ":i16f": int16 on the board, float on the GPU
	Env &env_;
	DeviceMem dev_;
};

class SerialMode : public BoardGpuMode {
public:
	SerialMode(bool to_gpu, Env &env) : BoardGpuMode(to_gpu, env) {}
	~SerialMode() override { teardown(); }
	std::string name() const override { return to_gpu_ ? "fi-serial" : "gi-serial"; }
	std::string description() const override
	{
		return to_gpu_ ? "DMA board -> user memory, then cudaMemcpy -> GPU (serial)"
			       : "cudaMemcpy GPU -> user memory, then DMA -> board (serial)";
	}
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		engine_ = &env_.engine();
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
		host_ = std::make_unique<HostDmaBuffer>(env_.board(), max_bytes,
							to_gpu_ ? PD_DMA_FROM_DEVICE : PD_DMA_TO_DEVICE);
		dev_ = DeviceMem(max_bytes);
	}
	void transfer(std::uint64_t bytes) override
	{
		if (to_gpu_) {
			engine_->read(host_->dma(), 0, bytes);
			host_->dma().syncForCpu();
			cuda_check(cudaMemcpy(dev_.get(), host_->data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
		} else {
			cuda_check(cudaMemcpy(host_->data(), dev_.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
			host_->dma().syncForDevice();
			engine_->write(host_->dma(), 0, bytes);
		}
	}
	void teardown() override
	{
		dev_ = DeviceMem();
		host_.reset();
	}

private:
	mprace::DMAEngine *engine_ = nullptr;
	std::unique_ptr<HostDmaBuffer> host_;
};

// ------------------------------------------- fi, gi: the pipelined CUDA stage of libbufmgr

// K user-memory DMA buffers, registered with CUDA: the board fills buffer k+1 while the GPU's
// copy engine pulls buffer k (bufmgr::cuda::FpgaToGpu, a Relay), and the mirror image for gi.
// K = 2 is double buffering (fi-db<S>), K = N a pool (fi-pb<S>x<N>).
class PipeMode : public BoardGpuMode {
public:
	PipeMode(const ModeSpec &s, Env &env) : BoardGpuMode(s.gpu == "fi", env, s.samples), s_(s)
	{
		if (!s.algo) { // plain fi / gi
			count_ = kDefaultCount;
			size_ = kDefaultSize;
		} else {
			count_ = s.buf_count;
			size_ = s.buf_size;
		}
		if (size_ % MP_ENGINE_GRANULE)
			throw BadMode("mode " + s.canonical + ": the DMA buffer size must be a multiple of 4");
	}
	~PipeMode() override { teardown(); }
	std::string name() const override { return s_.canonical; }
	std::string description() const override
	{
		std::string d = strprintf("%s pipelined through bufmgr's CUDA stage: %u user-memory DMA buffers of %s "
					  "registered with CUDA (%s)",
					  to_gpu_ ? "board -> host -> GPU" : "GPU -> host -> board", count_,
					  format_size(size_).c_str(), count_ == 2 ? "double buffering" : "a pool");
		if (samples_)
			d += strprintf(", %s on the GPU (%s)", to_gpu_ ? "int16 -> float" : "float -> int16",
				       env_.gpu_convert_kernel() ? "copy, then a kernel" : "one zero-copy kernel");
		return d;
	}
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		mprace::Board &b = pattern_board(env_);
		mprace::DMAEngine &e = env_.engine();
		bufmgr::MpraceTransfer board_side(b, e, bufmgr::MemoryKind::user);
		bufmgr::cuda::CudaOptions o;
		const auto path = env_.gpu_convert_kernel() ? bufmgr::cuda::GpuConvertPath::copy_then_kernel
							    : bufmgr::cuda::GpuConvertPath::zero_copy;
		if (samples_ && to_gpu_)
			o.conversion = bufmgr::cuda::make_gpu_conversion(bufmgr::Int16ToFloat(1.0f / 32768), path);
		else if (samples_)
			o.conversion = bufmgr::cuda::make_gpu_conversion(bufmgr::FloatToInt16(32768.0f), path);
		if (to_gpu_)
			f2g_ = std::make_unique<bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer>>(std::move(board_side), count_, size_, o);
		else
			g2f_ = std::make_unique<bufmgr::cuda::GpuToFpga<bufmgr::MpraceTransfer>>(std::move(board_side), count_, size_, o);
		dev_ = DeviceMem(samples_ ? 2 * max_bytes : max_bytes);
	}
	void transfer(std::uint64_t bytes) override
	{
		std::size_t got = to_gpu_ ? f2g_->transfer(dev_.get(), bytes) : g2f_->transfer(dev_.get(), bytes);
		if (got != bytes)
			throw std::runtime_error(strprintf("%s: moved %zu of %llu bytes", s_.canonical.c_str(), got,
							   static_cast<unsigned long long>(bytes)));
	}
	void teardown() override
	{
		f2g_.reset();
		g2f_.reset();
		dev_ = DeviceMem();
	}

	static constexpr unsigned kDefaultCount = 4;
	static constexpr std::size_t kDefaultSize = 4u << 20;

private:
	ModeSpec s_;
	unsigned count_ = 0;
	std::size_t size_ = 0;
	std::unique_ptr<bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer>> f2g_;
	std::unique_ptr<bufmgr::cuda::GpuToFpga<bufmgr::MpraceTransfer>> g2f_;
};

// ------------------------------------------- several GPUs at once (--gpus): hg, fi

// The GPUs of --gpus, each checked against what the runtime sees; Unavailable otherwise.
std::vector<int> gpus_for(const Env &env)
{
	require_gpu();
	int count = bufmgr::cuda::device_count();
	std::vector<int> gpus = env.gpus();
	for (int g : gpus)
		if (g >= count)
			throw Unavailable(strprintf("--gpus names GPU %d, and this machine has %d", g, count));
	return gpus;
}

// False with the first non-empty message of per-GPU checks in *why; true if all are empty.
bool first_failure(const std::vector<std::string> &bad, std::string *why)
{
	for (const auto &b : bad)
		if (!b.empty()) {
			*why = b;
			return false;
		}
	return true;
}

// hg over several GPUs: each lane copies its part from its own pinned host buffer (allocated by
// the lane, near its GPU) into its GPU's memory, all lanes at once.
class MultiCopyMode : public Mode {
public:
	explicit MultiCopyMode(Env &env) : env_(env) {}
	~MultiCopyMode() override { teardown(); }
	std::string name() const override { return "hg"; }
	std::string direction() const override { return "h2g"; }
	std::string description() const override
	{
		return strprintf("cudaMemcpy pinned host -> %zu GPUs at once (one part each)", env_.gpus().size());
	}
	void setup(std::uint64_t max_bytes) override
	{
		lanes_ = std::make_unique<bufmgr::cuda::GpuLanes>(gpus_for(env_));
		host_.assign(lanes_->size(), nullptr);
		dev_.resize(lanes_->size());
		const std::size_t most = std::max<std::size_t>(part(max_bytes, 0).length, 4);
		lanes_->run([&](std::size_t i) {
			cuda_check(cudaMallocHost(&host_[i], most), "cudaMallocHost");
			dev_[i] = DeviceMem(most);
		});
	}
	void transfer(std::uint64_t bytes) override
	{
		lanes_->run([&](std::size_t i) {
			cuda_check(cudaMemcpy(dev_[i].get(), host_[i], part(bytes, i).length, cudaMemcpyHostToDevice),
				   "cudaMemcpy");
		});
	}
	std::uint64_t granule() const override { return 4; }
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		const std::uint32_t seed = next_seed();
		std::vector<std::string> bad(lanes_->size());
		lanes_->run([&](std::size_t i) {
			auto p = part(bytes, i);
			fill_pattern(host_[i], p.length, seed + static_cast<std::uint32_t>(p.offset / 4));
			cuda_check(cudaMemset(dev_[i].get(), 0, p.length), "cudaMemset");
		});
		transfer(bytes);
		lanes_->run([&](std::size_t i) {
			auto p = part(bytes, i);
			std::string w;
			if (!gpu_check(dev_[i].get(), p.length, seed + static_cast<std::uint32_t>(p.offset / 4), &w))
				bad[i] = strprintf("GPU %d: %s", lanes_->device(i), w.c_str());
		});
		return first_failure(bad, why);
	}
	void teardown() override
	{
		if (lanes_)
			lanes_->run([&](std::size_t i) {
				dev_[i] = DeviceMem();
				if (host_[i])
					cudaFreeHost(host_[i]);
				host_[i] = nullptr;
			});
		lanes_.reset();
	}

private:
	bufmgr::cuda::LanePart part(std::uint64_t bytes, std::size_t lane) const
	{
		return bufmgr::cuda::lane_part(bytes, lanes_->size(), lane, 4);
	}

	Env &env_;
	std::unique_ptr<bufmgr::cuda::GpuLanes> lanes_;
	std::vector<void *> host_;
	std::vector<DeviceMem> dev_;
};

// fi (fi-db<S>, fi-pb<S>x<N>) over several GPUs: bufmgr::cuda::FpgaToGpus, each lane with its
// own pipeline (its DMA buffers registered with its GPU) for its part of every transfer. One
// board fans out to all lanes (their reads interleave on its C2H channel), or with
// --board-per-gpu each lane has a board of its own.
class MultiPipeMode : public Mode {
public:
	MultiPipeMode(const ModeSpec &s, Env &env, unsigned count, std::size_t size)
		: s_(s), env_(env), count_(count), size_(size) {}
	~MultiPipeMode() override { teardown(); }
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return "c2g"; }
	std::string auto_reference() const override { return "hg"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	std::string description() const override
	{
		return strprintf("board -> host -> %zu GPUs at once, %s; per GPU %u user-memory DMA buffers of %s "
				 "through bufmgr's CUDA stage",
				 env_.gpus().size(),
				 env_.board_per_gpu() ? "each GPU fed by a board of its own" : "one board fanning out",
				 count_, format_size(size_).c_str());
	}
	void setup(std::uint64_t max_bytes) override
	{
		const std::vector<int> gpus = gpus_for(env_);
		pattern_board(env_);
		boards_.clear();
		boards_.resize(gpus.size());
		// made on each lane's thread: a board of its own starts its threads near its GPU
		auto board_side = [this](std::size_t i) {
			mprace::Board *b = &env_.board();
			mprace::DMAEngine *e = &env_.engine();
			if (env_.board_per_gpu() && i > 0) {
				boards_[i] = env_.open_another_board();
				b = boards_[i].first.get();
				e = boards_[i].second.get();
				b->setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
				b->setPatternRate(0);
			}
			return bufmgr::MpraceTransfer(*b, *e, bufmgr::MemoryKind::user);
		};
		pipes_ = std::make_unique<Pipes>(gpus, board_side, count_, size_);
		dev_.resize(gpus.size());
		const std::size_t most = std::max<std::size_t>(pipes_->part(max_bytes, 0).length, 4);
		pipes_->on_lanes([&](std::size_t i) { dev_[i] = DeviceMem(most); });
	}
	void transfer(std::uint64_t bytes) override
	{
		std::vector<void *> dst(dev_.size());
		for (std::size_t i = 0; i < dev_.size(); ++i)
			dst[i] = dev_[i].get();
		std::size_t got = pipes_->transfer(dst, bytes);
		if (got != bytes)
			throw std::runtime_error(strprintf("%s: the GPUs got %zu of %llu bytes", s_.canonical.c_str(), got,
							   static_cast<unsigned long long>(bytes)));
	}
	bool can_verify() const override { return true; }
	// Every board's pattern generator starts at the same seed. With a board per GPU, each GPU
	// holds that pattern from its start. With one board the lanes' reads interleave, so each
	// GPU holds runs of the stream: every run must be contiguous pattern, and all runs of all
	// GPUs together must cover the stream's first `bytes` exactly once (nothing lost, nothing
	// twice).
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		const std::uint32_t seed = next_seed();
		for (auto &b : boards_)
			if (b.first)
				b.first->setPatternSeed(seed);
		env_.board().setPatternSeed(seed);
		pipes_->on_lanes([&](std::size_t i) {
			const std::size_t len = pipes_->part(bytes, i).length;
			cuda_check(cudaMemset(dev_[i].get(), 0xff, len ? len : 4), "cudaMemset");
		});
		transfer(bytes);
		std::vector<std::string> bad(dev_.size());
		std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> runs(dev_.size());
		pipes_->on_lanes([&](std::size_t i) {
			const std::size_t len = pipes_->part(bytes, i).length;
			std::string w;
			bool ok = env_.board_per_gpu() ? gpu_check(dev_[i].get(), len, seed, &w)
						       : stream_runs(dev_[i].get(), len, seed, &runs[i], &w);
			if (!ok)
				bad[i] = strprintf("GPU %d: %s", pipes_->device(i), w.c_str());
		});
		return first_failure(bad, why) && (env_.board_per_gpu() || tiles_stream(runs, bytes / 4, why));
	}
	void teardown() override
	{
		if (pipes_)
			pipes_->on_lanes([&](std::size_t i) { dev_[i] = DeviceMem(); });
		pipes_.reset(); // the pipelines before the boards they read
		dev_.clear();
		boards_.clear();
	}

private:
	using Pipes = bufmgr::cuda::FpgaToGpus<bufmgr::MpraceTransfer>;

	// The runs of contiguous pattern in `bytes` of GPU memory as (stream word, words); false
	// with *why if there are more than a check can hold.
	static bool stream_runs(const void *dev, std::uint64_t bytes, std::uint32_t seed,
				std::vector<std::pair<std::uint64_t, std::uint64_t>> *out, std::string *why)
	{
		constexpr unsigned long long cap = 1u << 16;
		const std::uint64_t n = bytes / 4;
		if (n == 0)
			return true;
		DeviceMem count(sizeof(unsigned long long)), index(cap * sizeof(unsigned long long)),
			word(cap * sizeof(std::uint32_t));
		cuda_check(cudaMemset(count.get(), 0, sizeof(unsigned long long)), "cudaMemset");
		runs_kernel<<<256, 256>>>(static_cast<const std::uint32_t *>(dev), n,
					  static_cast<unsigned long long *>(count.get()),
					  static_cast<unsigned long long *>(index.get()),
					  static_cast<std::uint32_t *>(word.get()), cap);
		cuda_check(cudaDeviceSynchronize(), "runs kernel");
		unsigned long long k = 0;
		cuda_check(cudaMemcpy(&k, count.get(), sizeof(k), cudaMemcpyDeviceToHost), "cudaMemcpy");
		if (k > cap) {
			*why = strprintf("%llu breaks in the pattern (more than %llu: not runs of the stream)", k, cap);
			return false;
		}
		std::vector<unsigned long long> idx(k);
		std::vector<std::uint32_t> w(k);
		cuda_check(cudaMemcpy(idx.data(), index.get(), k * sizeof(idx[0]), cudaMemcpyDeviceToHost), "cudaMemcpy");
		cuda_check(cudaMemcpy(w.data(), word.get(), k * sizeof(w[0]), cudaMemcpyDeviceToHost), "cudaMemcpy");
		std::vector<std::pair<unsigned long long, std::uint32_t>> starts(k);
		for (std::size_t j = 0; j < k; ++j)
			starts[j] = {idx[j], w[j]};
		std::sort(starts.begin(), starts.end());
		for (std::size_t j = 0; j < k; ++j) {
			const std::uint64_t end = j + 1 < k ? starts[j + 1].first : n;
			out->emplace_back(static_cast<std::uint32_t>(starts[j].second - seed), end - starts[j].first);
		}
		return true;
	}
	// Whether the runs of all GPUs cover words 0 .. total-1 of the stream exactly once.
	static bool tiles_stream(std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> &runs,
				 std::uint64_t total, std::string *why)
	{
		std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
		for (auto &r : runs)
			all.insert(all.end(), r.begin(), r.end());
		std::sort(all.begin(), all.end());
		std::uint64_t next = 0;
		for (auto &[start, len] : all) {
			if (start != next) {
				*why = start > next ? strprintf("stream words %llu..%llu reached no GPU",
								static_cast<unsigned long long>(next),
								static_cast<unsigned long long>(start - 1))
						    : strprintf("stream word %llu reached a GPU twice",
								static_cast<unsigned long long>(start));
				return false;
			}
			next = start + len;
		}
		if (next != total) {
			*why = strprintf("the GPUs hold %llu words of the stream, not %llu",
					 static_cast<unsigned long long>(next), static_cast<unsigned long long>(total));
			return false;
		}
		return true;
	}

	ModeSpec s_;
	Env &env_;
	unsigned count_;
	std::size_t size_;
	// --board-per-gpu: lanes 1..n-1's boards (lane 0 reads env_'s)
	std::vector<std::pair<std::unique_ptr<mprace::Board>, std::unique_ptr<mprace::DMAEngine>>> boards_;
	std::unique_ptr<Pipes> pipes_;
	std::vector<DeviceMem> dev_;
};

// ----------------------------------- ri, lat-ri: the resident receive path; lat-fi for reference

// A counter in mapped host memory that a GPU kernel adds to (PatternConsumer's wrong words).
class MappedCount {
public:
	MappedCount()
	{
		void *p = nullptr;
		cuda_check(cudaHostAlloc(&p, sizeof(unsigned long long), cudaHostAllocMapped), "cudaHostAlloc");
		host_ = static_cast<volatile unsigned long long *>(p);
		*host_ = 0;
		cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev_), p, 0), "cudaHostGetDevicePointer");
	}
	~MappedCount() { cudaFreeHost(const_cast<unsigned long long *>(host_)); }
	MappedCount(const MappedCount &) = delete;
	MappedCount &operator=(const MappedCount &) = delete;
	unsigned long long value() const { return *host_; }
	unsigned long long *dev() const { return dev_; }
	// verify(): one more chunk through `run`, then whether the kernel counted no wrong word
	template <class Run>
	bool check_one(Run run, const char *who, std::string *why) const
	{
		const unsigned long long before = value();
		run();
		if (value() == 0)
			return true;
		*why = strprintf("%llu words differ from the pattern (counted by %s; %llu in this chunk)", value(), who,
				 value() - before);
		return false;
	}

private:
	volatile unsigned long long *host_ = nullptr;
	unsigned long long *dev_ = nullptr;
};

// What ri's resident block does with each chunk: every word against the pattern (the board's seed,
// the chunk's place in the stream), read in place over the bus or from the block's copy in GPU
// memory; mismatches are counted into host memory.
struct PatternConsumer {
	std::uint32_t seed;
	unsigned long long *errors; // device pointer of a mapped host counter

	__device__ void operator()(const bufmgr::cuda::ResidentChunk &c) const
	{
		const std::uint64_t first = c.stream_offset / 4;
		unsigned long long bad = 0;
		const std::size_t quads = c.bytes / 16;
		const uint4 *v = static_cast<const uint4 *>(c.gpu ? c.gpu : c.host);
		const std::size_t step = blockDim.x;
		std::size_t i = threadIdx.x;
		if (c.gpu) {
			for (; i < quads; i += step)
				bad += bad_words(v[i], first + 4 * i);
		} else { // over the bus: 4 loads in flight per thread
			for (; i + 3 * step < quads; i += 4 * step) {
				const uint4 a = bufmgr::cuda::load_landed(v + i), b = bufmgr::cuda::load_landed(v + i + step),
					    e = bufmgr::cuda::load_landed(v + i + 2 * step),
					    f = bufmgr::cuda::load_landed(v + i + 3 * step);
				bad += bad_words(a, first + 4 * i) + bad_words(b, first + 4 * (i + step)) +
				       bad_words(e, first + 4 * (i + 2 * step)) + bad_words(f, first + 4 * (i + 3 * step));
			}
			for (; i < quads; i += step)
				bad += bad_words(bufmgr::cuda::load_landed(v + i), first + 4 * i);
		}
		const unsigned int *w = static_cast<const unsigned int *>(c.gpu ? c.gpu : c.host);
		for (std::size_t i = quads * 4 + threadIdx.x; i < c.bytes / 4; i += blockDim.x)
			bad += bufmgr::cuda::load_landed(w + i) != mp_pattern_word(seed, first + i);
		if (bad)
			atomicAdd(errors, bad);
	}
	__device__ unsigned int bad_words(uint4 x, std::uint64_t n) const
	{
		return (x.x != mp_pattern_word(seed, n)) + (x.y != mp_pattern_word(seed, n + 1)) +
		       (x.z != mp_pattern_word(seed, n + 2)) + (x.w != mp_pattern_word(seed, n + 3));
	}
};

class ResidentMode : public Mode {
public:
	ResidentMode(const ModeSpec &s, Env &env)
		: s_(s), env_(env), copy_(s.gpu.find("copy") != std::string::npos) {}
	~ResidentMode() override { teardown(); }
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return "c2g"; }
	std::string description() const override
	{
		return strprintf("board -> host -> a resident GPU block polling the completion records, each chunk's "
				 "pattern checked %s%s",
				 copy_ ? "after the block copied it into GPU memory" : "in place over the bus",
				 s_.latency ? "; one chunk at a time, submit -> the block's done seen by the host"
					    : strprintf("; %u buffers in flight", kBuffers).c_str());
	}
	std::string auto_reference() const override { return s_.latency ? "lat-fi" : "c2h-umem"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	bool can_verify() const override { return true; }
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		mprace::Board &b = pattern_board(env_);
		mprace::DMAEngine &e = env_.engine();
		seed_ = next_seed();
		errors_ = std::make_unique<MappedCount>();
		bufmgr::cuda::ResidentOptions o;
		o.copy = copy_;
		rx_ = std::make_unique<bufmgr::cuda::ResidentReceiver<PatternConsumer>>(
			b, e, s_.latency ? 1 : kBuffers, std::max<std::uint64_t>(max_bytes, 4), PatternConsumer{seed_, errors_->dev()},
			o);
		// one stream for the mode's life: chunk k holds its next bytes (seeded after the receiver
		// reset the channel: the RTL drops what its generator had taken ahead)
		b.setPatternSeed(seed_);
	}
	void transfer(std::uint64_t bytes) override
	{
		const double t0 = env_.now_s();
		rx_->run(1, bytes);
		if (s_.latency)
			latency_us_.push_back((env_.now_s() - t0) * 1e6);
	}
	void run(std::uint64_t bytes, std::uint64_t n) override
	{
		if (s_.latency)
			Mode::run(bytes, n);
		else
			rx_->run(n, bytes);
	}
	std::vector<double> take_latencies() override { return std::exchange(latency_us_, {}); }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		// the block checks every chunk; a verified size is one more chunk with the count read
		return errors_->check_one([&] { transfer(bytes); }, "the resident block", why);
	}
	void teardown() override
	{
		rx_.reset(); // stops the block
		errors_.reset();
	}

	static constexpr unsigned kBuffers = 8;

private:
	ModeSpec s_;
	Env &env_;
	bool copy_;
	std::uint32_t seed_ = 0;
	std::unique_ptr<MappedCount> errors_;
	std::unique_ptr<bufmgr::cuda::ResidentReceiver<PatternConsumer>> rx_;
	std::vector<double> latency_us_;
};

// ig, lat-ig: GPU-initiated transfers (bufmgr/cuda_initiated.cuh). A kernel writes the descriptors,
// rings the doorbell through BAR0 mapped into the GPU, waits for the records and checks each chunk
// (PatternConsumer); the host only launches it and sleeps. lat-ig: one chunk at a time, each
// chunk's round trip on the GPU's clock (descriptors written -> chunk checked).
class InitiatedMode : public Mode {
public:
	InitiatedMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	~InitiatedMode() override { teardown(); }
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return "c2g"; }
	std::string description() const override
	{
		return s_.latency ? "GPU-initiated: a kernel writes the descriptor, rings the doorbell, waits for the record "
				    "and checks the chunk, one at a time; round trip on the GPU's clock"
				  : strprintf("GPU-initiated: a kernel queues %u chunks at a time on the board itself and checks "
					      "each in place over the bus (%u block%s); the host only launches it",
					      kBuffers, s_.blocks, s_.blocks > 1 ? "s at once" : "");
	}
	std::string auto_reference() const override { return s_.latency ? "lat-fi" : "c2h-umem"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	bool can_verify() const override { return true; }
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		mprace::Board &b = pattern_board(env_);
		mprace::DMAEngine &e = env_.engine();
		seed_ = next_seed();
		errors_ = std::make_unique<MappedCount>();
		bufmgr::cuda::InitiatedOptions o;
		o.depth = s_.latency ? 1 : kBuffers;
		o.blocks = s_.blocks;
		try {
			rd_ = std::make_unique<bufmgr::cuda::InitiatedReader<PatternConsumer>>(
				b, e, s_.latency ? 1 : kBuffers, std::max<std::uint64_t>(max_bytes, 4), PatternConsumer{seed_, errors_->dev()}, o);
		} catch (const pcidriver::Error &err) {
			if (err.code().value() == EOPNOTSUPP || err.code().value() == ENODEV)
				throw Unavailable(std::string("BAR0 cannot be mapped for the GPU: ") + err.what());
			throw;
		}
		b.setPatternSeed(seed_); // after the lend's channel reset, as for ri
	}
	void transfer(std::uint64_t bytes) override { run(bytes, 1); }
	void run(std::uint64_t bytes, std::uint64_t n) override
	{
		rd_->run(n, bytes, s_.latency ? &lat_ns_ : nullptr);
		if (s_.latency)
			for (std::uint64_t i = 0; i < n; ++i)
				latency_us_.push_back(lat_ns_[i] / 1e3);
	}
	std::vector<double> take_latencies() override { return std::exchange(latency_us_, {}); }
	std::string latency_clock() const override { return "gpu"; } // %globaltimer
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		return errors_->check_one([&] { run(bytes, 1); }, "the kernel", why);
	}
	void teardown() override
	{
		rd_.reset(); // gives the C2H channel back to the engine
		errors_.reset();
	}

	static constexpr unsigned kBuffers = 8;

private:
	ModeSpec s_;
	Env &env_;
	std::uint32_t seed_ = 0;
	std::unique_ptr<MappedCount> errors_;
	std::unique_ptr<bufmgr::cuda::InitiatedReader<PatternConsumer>> rd_;
	std::vector<std::uint64_t> lat_ns_;
	std::vector<double> latency_us_;
};

// ri, ri-copy, ig, ig-b<N> over several GPUs (--gpus with --board-per-gpu): every GPU read by its
// own board through its own resident block or GPU-initiated kernel, all at once; lane i (a
// thread near GPU i, bufmgr::cuda::GpuLanes) builds and drives GPU i's reader. A transfer of
// `bytes` is cut into one part per GPU (lane_part); each reader moves its part as its chunk.
// One board cannot fan out to several of these readers: each is its C2H channel's only user.
class MultiReaderMode : public Mode {
public:
	MultiReaderMode(const ModeSpec &s, Env &env) : s_(s), env_(env), initiated_(s.gpu == "ig") {}
	~MultiReaderMode() override { teardown(); }
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return "c2g"; }
	std::string auto_reference() const override { return "c2h-umem"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	bool can_verify() const override { return true; }
	std::string description() const override
	{
		return strprintf("board -> host -> %zu GPUs at once, each fed by a board of its own and read by %s; "
				 "every chunk's pattern checked on its GPU",
				 env_.gpus().size(),
				 initiated_ ? strprintf("a GPU-initiated kernel (%u block%s)", s_.blocks,
							s_.blocks > 1 ? "s" : "").c_str()
					    : s_.gpu == "ri-copy" ? "a resident block that copies each chunk into GPU memory"
								  : "a resident block in place over the bus");
	}
	void setup(std::uint64_t max_bytes) override
	{
		const std::vector<int> gpus = gpus_for(env_);
		pattern_board(env_);
		lanes_ = std::make_unique<bufmgr::cuda::GpuLanes>(gpus);
		lane_.clear();
		lane_.resize(gpus.size());
		seed_ = next_seed();
		const std::size_t most = std::max<std::size_t>(part(max_bytes, 0), 4);
		lanes_->run([&](std::size_t i) {
			Lane &l = lane_[i];
			mprace::Board *b = &env_.board();
			mprace::DMAEngine *e = &env_.engine();
			if (i > 0) { // made on the lane's thread: the board's threads start near its GPU
				l.board = env_.open_another_board();
				b = l.board.first.get();
				e = l.board.second.get();
				b->setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
				b->setPatternRate(0);
			}
			l.errors = std::make_unique<MappedCount>();
			const PatternConsumer check{seed_, l.errors->dev()};
			if (initiated_) {
				bufmgr::cuda::InitiatedOptions o;
				o.depth = kBuffers;
				o.blocks = s_.blocks;
				l.initiated = std::make_unique<bufmgr::cuda::InitiatedReader<PatternConsumer>>(*b, *e, kBuffers,
													      most, check, o);
			} else {
				bufmgr::cuda::ResidentOptions o;
				o.copy = s_.gpu == "ri-copy";
				l.resident = std::make_unique<bufmgr::cuda::ResidentReceiver<PatternConsumer>>(*b, *e, kBuffers,
													      most, check, o);
			}
			b->setPatternSeed(seed_); // after the reader reset the channel, as for ri and ig
		});
	}
	void transfer(std::uint64_t bytes) override { run(bytes, 1); }
	void run(std::uint64_t bytes, std::uint64_t n) override
	{
		lanes_->run([&](std::size_t i) {
			const std::size_t len = part(bytes, i);
			if (len == 0)
				return;
			if (lane_[i].initiated)
				lane_[i].initiated->run(n, len);
			else
				lane_[i].resident->run(n, len);
		});
	}
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		std::vector<std::string> bad(lane_.size());
		lanes_->run([&](std::size_t i) {
			const std::size_t len = part(bytes, i);
			if (len == 0)
				return;
			Lane &l = lane_[i];
			std::string w;
			const bool ok = l.errors->check_one(
				[&] { l.initiated ? l.initiated->run(1, len) : l.resident->run(1, len); },
				initiated_ ? "the kernel" : "the resident block", &w);
			if (!ok)
				bad[i] = strprintf("GPU %d: %s", lanes_->device(i), w.c_str());
		});
		return first_failure(bad, why);
	}
	void teardown() override
	{
		if (lanes_)
			lanes_->run([&](std::size_t i) { Lane gone = std::move(lane_[i]); }); // on the GPU's thread
		lane_.clear();
		lanes_.reset();
	}

	static constexpr unsigned kBuffers = 8;

private:
	// Members go in reverse order: the reader before the counter it writes and the board it reads.
	struct Lane {
		std::pair<std::unique_ptr<mprace::Board>, std::unique_ptr<mprace::DMAEngine>> board; // lanes > 0
		std::unique_ptr<MappedCount> errors;
		std::unique_ptr<bufmgr::cuda::ResidentReceiver<PatternConsumer>> resident;
		std::unique_ptr<bufmgr::cuda::InitiatedReader<PatternConsumer>> initiated;
	};
	std::size_t part(std::uint64_t bytes, std::size_t i) const
	{
		return bufmgr::cuda::lane_part(bytes, lane_.size(), i, MP_ENGINE_GRANULE).length;
	}

	ModeSpec s_;
	Env &env_;
	bool initiated_;
	std::uint32_t seed_ = 0;
	std::unique_ptr<bufmgr::cuda::GpuLanes> lanes_;
	std::vector<Lane> lane_;
};

// lat-fi: the copy-engine path one chunk at a time (bufmgr::cuda::FpgaToGpu, one chunk of
// `bytes` per transfer), each chunk's round trip: what lat-ri is measured against.
class CopyEngineLatencyMode : public BoardGpuMode {
public:
	explicit CopyEngineLatencyMode(Env &env) : BoardGpuMode(true, env) {}
	~CopyEngineLatencyMode() override { teardown(); }
	std::string name() const override { return "lat-fi"; }
	std::string description() const override
	{
		return "board -> host -> GPU through bufmgr's CUDA stage (the copy engine), one chunk at a time, "
		       "submit -> the chunk in GPU memory";
	}
	std::string auto_reference() const override { return ""; }
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		mprace::Board &b = pattern_board(env_);
		f2g_ = std::make_unique<bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer>>(
			bufmgr::MpraceTransfer(b, env_.engine(), bufmgr::MemoryKind::user), 2,
			std::max<std::uint64_t>(max_bytes, 4));
		dev_ = DeviceMem(std::max<std::uint64_t>(max_bytes, 4));
	}
	void transfer(std::uint64_t bytes) override
	{
		const double t0 = env_.now_s();
		if (f2g_->transfer(dev_.get(), bytes) != bytes)
			throw std::runtime_error("lat-fi: a short transfer");
		latency_us_.push_back((env_.now_s() - t0) * 1e6);
	}
	std::vector<double> take_latencies() override { return std::exchange(latency_us_, {}); }
	void teardown() override
	{
		f2g_.reset();
		dev_ = DeviceMem();
	}

private:
	std::unique_ptr<bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer>> f2g_;
	std::vector<double> latency_us_;
};

// ------------------------------------------------ fr, gr: board <-> GPU memory directly

class DirectMode : public BoardGpuMode {
public:
	DirectMode(bool to_gpu, Env &env) : BoardGpuMode(to_gpu, env) {}
	~DirectMode() override { teardown(); }
	std::string name() const override { return to_gpu_ ? "fr" : "gr"; }
	std::string description() const override
	{
		return to_gpu_ ? "board -> GPU memory directly (dma-buf of GPU memory imported by the board)"
			       : "GPU memory -> board directly (dma-buf of GPU memory imported by the board)";
	}
	void setup(std::uint64_t max_bytes) override
	{
		require_gpu();
		if (!bufmgr::cuda::dmabuf_export_supported())
			throw Unavailable("this GPU or its driver does not export memory as dma-bufs "
					  "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0); use fi/gi");
		pattern_board(env_);
		// whole 2 MiB pages: what cuMemGetHandleForAddressRange needs, and cudaMalloc gives
		const std::uint64_t size = (max_bytes + (2u << 20) - 1) & ~std::uint64_t((2u << 20) - 1);
		dev_ = DeviceMem(size);
		direct_ = std::make_unique<bufmgr::cuda::GpuDirect>(
			env_.board(), env_.engine(),
			to_gpu_ ? bufmgr::cuda::GpuDirect::Direction::to_gpu
				: bufmgr::cuda::GpuDirect::Direction::from_gpu);
		try {
			direct_->prepare(dev_.get(), size);
		} catch (const bufmgr::Error &e) {
			if (e.code().value() == EOPNOTSUPP)
				throw Unavailable(e.what());
			throw;
		}
	}
	void transfer(std::uint64_t bytes) override { direct_->transfer(dev_.get(), bytes); }
	void teardown() override
	{
		direct_.reset();
		dev_ = DeviceMem();
	}

private:
	std::unique_ptr<bufmgr::cuda::GpuDirect> direct_;
};

} // namespace

std::unique_ptr<Mode> make_gpu_mode(const ModeSpec &s, Env &env)
{
	if (env.gpus().size() > 1 || env.board_per_gpu()) {
		if (env.board_per_gpu() && env.gpus().size() < 2)
			throw Unavailable("--board-per-gpu needs --gpus with at least two GPUs");
		if (s.gpu == "hg" && !env.board_per_gpu())
			return std::make_unique<MultiCopyMode>(env);
		if ((s.gpu == "ri" || s.gpu == "ri-copy" || s.gpu == "ig") && !s.latency) {
			if (!env.board_per_gpu())
				throw Unavailable("mode " + s.canonical + " over several GPUs needs --board-per-gpu: a " +
						  (s.gpu == "ig" ? "GPU-initiated kernel" : "resident block") +
						  " is its board's C2H channel's only user, so one board cannot feed several");
			return std::make_unique<MultiReaderMode>(s, env);
		}
		if (s.gpu == "fi" && !s.samples) {
			if (!s.algo)
				return std::make_unique<MultiPipeMode>(s, env, PipeMode::kDefaultCount, PipeMode::kDefaultSize);
			if (s.buf_size % MP_ENGINE_GRANULE)
				throw BadMode("mode " + s.canonical + ": the DMA buffer size must be a multiple of 4");
			return std::make_unique<MultiPipeMode>(s, env, s.buf_count, s.buf_size);
		}
		throw Unavailable("mode " + s.canonical + " runs on one GPU; with --gpus of several only hg, "
				  "fi (fi-db<S>, fi-pb<S>x<N>) and, with --board-per-gpu, ri, ri-copy, ig and ig-b<N> "
				  "spread over them" +
				  std::string(s.gpu == "hg" ? " (hg with --board-per-gpu: no board to give it)" : ""));
	}
	if (env.gpus().size() == 1)
		cuda_check(cudaSetDevice(gpus_for(env)[0]), "cudaSetDevice"); // the one GPU of --gpus
	if (s.gpu == "hg" || s.gpu == "gh")
		return std::make_unique<CopyMode>(s.gpu == "hg");
	if (s.gpu == "fi-serial" || s.gpu == "gi-serial")
		return std::make_unique<SerialMode>(s.gpu == "fi-serial", env);
	if (s.gpu == "fr" || s.gpu == "gr")
		return std::make_unique<DirectMode>(s.gpu == "fr", env);
	if (s.gpu == "lat-fi")
		return std::make_unique<CopyEngineLatencyMode>(env);
	if (s.gpu.find("ri") != std::string::npos)
		return std::make_unique<ResidentMode>(s, env);
	if (s.gpu == "ig" || s.gpu == "lat-ig")
		return std::make_unique<InitiatedMode>(s, env);
	return std::make_unique<PipeMode>(s, env);
}

} // namespace dmabench
