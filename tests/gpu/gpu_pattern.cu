// SPDX-License-Identifier: GPL-2.0
// CUDA kernels that fill and check the counter pattern in GPU memory (see gpu_pattern.h).
#include <cstdint>

#include "bufmgr/cuda_transform.cuh"
#include "gpu_pattern.h"
#include "mprace-spec/pattern.h"

namespace {

__global__ void fill_kernel(std::uint32_t *d, std::size_t nwords, std::uint32_t seed)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < nwords;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		d[i] = mp_pattern_word(seed, i);
}

__global__ void check_kernel(const std::uint32_t *d, std::size_t nwords, std::uint32_t seed,
			     unsigned long long *bad, unsigned long long *first)
{
	unsigned long long mine = 0;
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < nwords;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		if (d[i] != mp_pattern_word(seed, i)) {
			++mine;
			atomicMin(first, static_cast<unsigned long long>(i));
		}
	if (mine)
		atomicAdd(bad, mine);
}

__device__ float sample(std::uint32_t seed, std::size_t k, float scale)
{
	const std::uint32_t w = mp_pattern_word(seed, k / 2);
	return bufmgr::Int16ToFloat(scale)(static_cast<std::int16_t>(k % 2 ? w >> 16 : w & 0xffff));
}

__global__ void fill_samples_kernel(float *d, std::size_t n, std::uint32_t seed, float scale)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		d[i] = sample(seed, i, scale);
}

__global__ void check_samples_kernel(const float *d, std::size_t n, std::uint32_t seed, float scale,
				     unsigned long long *bad, unsigned long long *first)
{
	unsigned long long mine = 0;
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		if (__float_as_uint(d[i]) != __float_as_uint(sample(seed, i, scale))) {
			++mine;
			atomicMin(first, static_cast<unsigned long long>(i));
		}
	if (mine)
		atomicAdd(bad, mine);
}

unsigned int blocks_for(std::size_t nwords)
{
	const std::size_t b = (nwords + 255) / 256;
	return static_cast<unsigned int>(b < 4096 ? (b ? b : 1) : 4096);
}

} // namespace

__global__ void busy_kernel(unsigned long long ns)
{
	unsigned long long start;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	for (;;) {
		unsigned long long now;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
		if (now - start >= ns)
			break;
		__nanosleep(1000);
	}
}

cudaError_t gpu_busy(cudaStream_t stream, unsigned long long ns)
{
	busy_kernel<<<1, 1, 0, stream>>>(ns);
	return cudaGetLastError();
}

cudaError_t gpu_fill_pattern(void *d, std::size_t bytes, std::uint32_t seed)
{
	const std::size_t n = bytes / 4;
	fill_kernel<<<blocks_for(n), 256>>>(static_cast<std::uint32_t *>(d), n, seed);
	cudaError_t e = cudaGetLastError();
	return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

namespace {

// Runs launch(bad, first) (a check kernel counting into two device counters) and returns the
// counters: the mismatches and the first one's index.
template <class Launch>
cudaError_t count_mismatches(Launch launch, unsigned long long *bad, unsigned long long *first_bad)
{
	unsigned long long *counters = nullptr;
	cudaError_t e = cudaMalloc(&counters, 2 * sizeof(unsigned long long));
	if (e != cudaSuccess)
		return e;
	const unsigned long long init[2] = {0, ~0ull};
	e = cudaMemcpy(counters, init, sizeof(init), cudaMemcpyHostToDevice);
	if (e == cudaSuccess) {
		launch(counters, counters + 1);
		e = cudaGetLastError();
	}
	unsigned long long out[2] = {0, ~0ull};
	if (e == cudaSuccess)
		e = cudaMemcpy(out, counters, sizeof(out), cudaMemcpyDeviceToHost);
	cudaFree(counters);
	*bad = out[0];
	*first_bad = out[1];
	return e;
}

} // namespace

cudaError_t gpu_check_pattern(const void *d, std::size_t bytes, std::uint32_t seed,
			      unsigned long long *bad, unsigned long long *first_bad)
{
	const std::size_t n = bytes / 4;
	return count_mismatches([&](unsigned long long *b, unsigned long long *f) {
		check_kernel<<<blocks_for(n), 256>>>(static_cast<const std::uint32_t *>(d), n, seed, b, f);
	}, bad, first_bad);
}

cudaError_t gpu_fill_samples(float *d, std::size_t n, std::uint32_t seed, float scale)
{
	fill_samples_kernel<<<blocks_for(n), 256>>>(d, n, seed, scale);
	cudaError_t e = cudaGetLastError();
	return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

cudaError_t gpu_check_samples(const float *d, std::size_t n, std::uint32_t seed, float scale,
			      unsigned long long *bad, unsigned long long *first_bad)
{
	return count_mismatches([&](unsigned long long *b, unsigned long long *f) {
		check_samples_kernel<<<blocks_for(n), 256>>>(d, n, seed, scale, b, f);
	}, bad, first_bad);
}

bufmgr::cuda::GpuConversion gpu_int16_to_float(float scale, bufmgr::cuda::GpuConvertPath path)
{
	return bufmgr::cuda::make_gpu_conversion(bufmgr::Int16ToFloat(scale), path);
}

bufmgr::cuda::GpuConversion gpu_float_to_int16(float scale, bufmgr::cuda::GpuConvertPath path)
{
	return bufmgr::cuda::make_gpu_conversion(bufmgr::FloatToInt16(scale), path);
}
