// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace-recv --gpu (recv_gpu.hpp): chunks into GPU memory by bufmgr::net::ReceiverToGpu, and
// the board's counter pattern checked there, byte for byte at the chunk's stream offset, by a
// kernel queued after the copy. The result goes into pinned host memory, one entry per GPU
// buffer, and is read once the chunk's work has completed.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "bufmgr/net_cuda.hpp"
#include "mprace-spec/pattern.h"
#include "recv_gpu.hpp"

namespace {

struct Result {
	unsigned long long mismatches;
	unsigned long long first_bad;
};

// Bytes of a chunk at stream offset `pos` that differ from the pattern.
__global__ void check_chunk(const unsigned char *d, std::size_t n, std::uint64_t pos, std::uint32_t seed, Result *r)
{
	unsigned long long bad = 0, first = ~0ull;
	for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
		if (d[i] != mp_pattern_byte(seed, pos + i)) {
			++bad;
			first = first < i ? first : i;
		}
	if (bad) {
		atomicAdd(&r->mismatches, bad);
		atomicMin(&r->first_bad, first);
	}
}

class CudaStage final : public recvgpu::Stage {
public:
	CudaStage(bufmgr::net::Receiver &rx, int device, std::size_t depth, bool check, std::uint32_t seed,
		  std::function<void(const recvgpu::Done &)> done)
		: done_(std::move(done))
	{
		bufmgr::net::ReceiverToGpuOptions o;
		o.device = device;
		o.depth = depth;
		if (check) {
			o.on_chunk = [this, depth, seed](const bufmgr::net::GpuNetChunk &c, cudaStream_t st) {
				Result *r = results_ + c.sequence % depth; // at most depth chunks in flight, in order
				*r = Result{0, ~0ull};
				Result *dr = nullptr;
				bufmgr::cuda::check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dr), r, 0),
						    "cudaHostGetDevicePointer");
				check_chunk<<<256, 256, 0, st>>>(static_cast<const unsigned char *>(c.gpu), c.bytes,
								 c.header.offset, seed, dr);
				bufmgr::cuda::check(cudaGetLastError(), "the check kernel");
			};
		}
		o.on_done = [this, depth, check](const bufmgr::net::GpuNetChunk &c) {
			recvgpu::Done d;
			d.header = c.header;
			d.bytes = c.bytes;
			d.connection = c.connection;
			if (check) {
				const Result &r = results_[c.sequence % depth];
				d.mismatches = r.mismatches;
				d.first_bad = r.mismatches ? static_cast<std::int64_t>(r.first_bad) : -1;
			}
			done_(d);
		};
		// The stage checks the options and the GPU; the results are allocated on that GPU after it
		// (no chunk is queued before the first pump()).
		stage_ = std::make_unique<bufmgr::net::ReceiverToGpu>(rx, std::move(o));
		if (check) {
			bufmgr::cuda::check(cudaSetDevice(device), "cudaSetDevice");
			bufmgr::cuda::check(cudaHostAlloc(reinterpret_cast<void **>(&results_), depth * sizeof(Result),
							  cudaHostAllocMapped),
					    "cudaHostAlloc of the check's results");
		}
		cudaDeviceProp p{};
		if (cudaGetDeviceProperties(&p, device) == cudaSuccess)
			name_ = p.name;
	}
	~CudaStage() override
	{
		stage_.reset();
		if (results_)
			cudaFreeHost(results_);
	}
	bool pump(std::chrono::milliseconds timeout) override { return stage_->pump(timeout).has_value(); }
	void flush() override { stage_->flush(); }
	std::size_t in_flight() const override { return stage_->in_flight(); }
	std::string describe() const override
	{
		return "GPU " + std::to_string(stage_->device()) + (name_.empty() ? "" : " (" + name_ + ")");
	}

private:
	std::function<void(const recvgpu::Done &)> done_;
	Result *results_ = nullptr;
	std::unique_ptr<bufmgr::net::ReceiverToGpu> stage_;
	std::string name_;
};

} // namespace

std::unique_ptr<recvgpu::Stage> recvgpu::make(bufmgr::net::Receiver &rx, int device, std::size_t depth, bool check,
					      std::uint32_t seed, std::function<void(const Done &)> done)
{
	return std::make_unique<CudaStage>(rx, device, depth, check, seed, std::move(done));
}
