// SPDX-License-Identifier: GPL-2.0
// The engine's counter pattern (docs/dma-engine.md §7: 32-bit little-endian words seed + n) in
// GPU memory: filled and checked by CUDA kernels (gpu_pattern.cu), so the GPU tests verify the
// data where it ends up, end to end.
#ifndef TESTS_GPU_GPU_PATTERN_H
#define TESTS_GPU_GPU_PATTERN_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// Writes words seed, seed + 1, ... into bytes / 4 words at d (bytes a multiple of 4).
cudaError_t gpu_fill_pattern(void *d, std::size_t bytes, std::uint32_t seed);

// Counts the words at d that differ from the pattern; *first_bad is the index of the first
// one (UINT64_MAX if none). Synchronous.
cudaError_t gpu_check_pattern(const void *d, std::size_t bytes, std::uint32_t seed,
			      unsigned long long *bad, unsigned long long *first_bad);

#endif
