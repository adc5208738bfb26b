// SPDX-License-Identifier: GPL-2.0
// The consumer the resident and GPU-initiated tests hand every chunk to: it counts the words
// that differ from the pattern (the board's seed, the chunk's place in the stream) and the
// chunks seen, into two counters in mapped host memory. Built by nvcc.
#ifndef TESTS_GPU_CHUNK_CHECK_CUH
#define TESTS_GPU_CHUNK_CHECK_CUH

#include <cuda_runtime.h>

#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_resident.cuh"
#include "mprace-spec/pattern.h"

struct Check {
	std::uint32_t seed;
	unsigned long long *bad;
	unsigned long long *chunks;
	__device__ void operator()(const bufmgr::cuda::ResidentChunk &c) const
	{
		const unsigned int *w = static_cast<const unsigned int *>(c.gpu ? c.gpu : c.host);
		unsigned long long n = 0;
		for (std::size_t i = threadIdx.x; i < c.bytes / 4; i += blockDim.x)
			n += (c.gpu ? w[i] : bufmgr::cuda::load_landed(w + i)) !=
			     mp_pattern_word(seed, c.stream_offset / 4 + i);
		if (n)
			atomicAdd(bad, n);
		if (threadIdx.x == 0)
			atomicAdd(chunks, 1ull);
	}
};

// The two counters, and a Check that counts into them.
struct Counters {
	unsigned long long *host = nullptr, *dev = nullptr;
	Counters()
	{
		bufmgr::cuda::check(cudaHostAlloc(reinterpret_cast<void **>(&host), 2 * sizeof(*host), cudaHostAllocMapped),
				    "cudaHostAlloc");
		host[0] = host[1] = 0;
		bufmgr::cuda::check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev), host, 0),
				    "cudaHostGetDevicePointer");
	}
	~Counters() { cudaFreeHost(host); }
	Counters(const Counters &) = delete;
	Counters &operator=(const Counters &) = delete;
	unsigned long long bad() const { return reinterpret_cast<volatile unsigned long long *>(host)[0]; }
	unsigned long long chunks() const { return reinterpret_cast<volatile unsigned long long *>(host)[1]; }
	Check check(std::uint32_t seed) const { return Check{seed, dev, dev + 1}; }
};

#endif
