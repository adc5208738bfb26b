// SPDX-License-Identifier: GPL-2.0
// The engine's counter pattern (docs/dma-engine.md §7: 32-bit little-endian words seed + n) in
// GPU memory: filled and checked by CUDA kernels (gpu_pattern.cu), so the GPU tests verify the
// data where it ends up, end to end; and the GPU stage's conversions, which need nvcc.
#ifndef TESTS_GPU_GPU_PATTERN_H
#define TESTS_GPU_GPU_PATTERN_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "bufmgr/cuda.hpp"

// Writes words seed, seed + 1, ... into bytes / 4 words at d (bytes a multiple of 4).
cudaError_t gpu_fill_pattern(void *d, std::size_t bytes, std::uint32_t seed);

// Counts the words at d that differ from the pattern; *first_bad is the index of the first
// one (UINT64_MAX if none). Synchronous.
cudaError_t gpu_check_pattern(const void *d, std::size_t bytes, std::uint32_t seed,
			      unsigned long long *bad, unsigned long long *first_bad);

// The pattern read as int16 samples (sample k is the low (k even) or high half of word k / 2),
// as floats times scale, as bufmgr::Int16ToFloat(scale) makes them: fill n of them at d, or
// count those at d that differ (bit for bit; first_bad as above).
cudaError_t gpu_fill_samples(float *d, std::size_t n, std::uint32_t seed, float scale);
cudaError_t gpu_check_samples(const float *d, std::size_t n, std::uint32_t seed, float scale,
			      unsigned long long *bad, unsigned long long *first_bad);

// Queues a kernel on `stream` that keeps the GPU busy for about `ns` nanoseconds: a slow
// consumer.
cudaError_t gpu_busy(cudaStream_t stream, unsigned long long ns);

// The GPU stage's conversions (bufmgr/cuda_transform.cuh needs nvcc: made here).
bufmgr::cuda::GpuConversion gpu_int16_to_float(float scale, bufmgr::cuda::GpuConvertPath path);
bufmgr::cuda::GpuConversion gpu_float_to_int16(float scale, bufmgr::cuda::GpuConvertPath path);

#endif
