// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Transforms on the GPU stage: make_gpu_conversion(x) turns a Transform whose element form is
// callable on the GPU (Int16ToFloat, FloatToInt16, ByteSwap16/32/64, or a struct of your own
// with a __host__ __device__ `out_type operator()(in_type) const`) into the GpuConversion that
// CudaOptions::conversion takes (bufmgr/cuda.hpp). This header needs nvcc: it holds the kernel;
// the rest of the GPU stage is plain C++ and CUDA's runtime API.
//
//   bufmgr::cuda::CudaOptions o;
//   o.conversion = bufmgr::cuda::make_gpu_conversion(bufmgr::Int16ToFloat(1.0f / 32768));
//   bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer> f(board_side, 4, 4 << 20, o);
//   f.transfer(gpu_floats, bytes);   // bytes of int16 from the board, 2 * bytes of float on the GPU
//
// The kernel moves 16 bytes of input per thread and step where the pointers allow (vector
// loads: what a zero-copy read over the bus needs to approach the link's rate), elementwise
// otherwise.
#ifndef BUFMGR_CUDA_TRANSFORM_CUH
#define BUFMGR_CUDA_TRANSFORM_CUH

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "bufmgr/concepts.hpp"
#include "bufmgr/cuda.hpp"
#include "bufmgr/transform.hpp"

namespace bufmgr::cuda {

namespace detail {

// G elements per step, G * sizeof(In) = 16 bytes.
template <class In, std::size_t G>
struct alignas(16) InVector {
	In v[G];
};
template <class Out, std::size_t G>
struct alignas(G * sizeof(Out) >= 16 ? 16 : G * sizeof(Out)) OutVector {
	Out v[G];
};

template <class X, std::size_t G>
__global__ void convert_vectors(X x, const typename X::in_type *__restrict__ src,
				typename X::out_type *__restrict__ dst, std::size_t steps)
{
	using InV = InVector<typename X::in_type, G>;
	using OutV = OutVector<typename X::out_type, G>;
	const auto *s = reinterpret_cast<const InV *>(src);
	auto *d = reinterpret_cast<OutV *>(dst);
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < steps;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
		const InV a = s[i];
		OutV b;
#pragma unroll
		for (std::size_t k = 0; k < G; ++k)
			b.v[k] = x(a.v[k]);
		d[i] = b;
	}
}

template <class X>
__global__ void convert_elements(X x, const typename X::in_type *__restrict__ src,
				 typename X::out_type *__restrict__ dst, std::size_t n)
{
	for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
	     i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
		dst[i] = x(src[i]);
}

inline unsigned int blocks_for(std::size_t work) noexcept
{
	// enough blocks to cover the work, at most a few per SM of a large GPU (grid-stride loops)
	const std::size_t b = (work + 255) / 256;
	return static_cast<unsigned int>(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

template <class X>
cudaError_t launch_conversion(const void *transform, const void *src, void *dst, std::size_t n, cudaStream_t st)
{
	using In = typename X::in_type;
	using Out = typename X::out_type;
	const X &x = *static_cast<const X *>(transform);
	const auto *s = static_cast<const In *>(src);
	auto *d = static_cast<Out *>(dst);
	if (n == 0)
		return cudaSuccess;
	if constexpr (16 % sizeof(In) == 0) {
		constexpr std::size_t G = 16 / sizeof(In);
		constexpr std::size_t out_align = alignof(OutVector<Out, G>);
		if (reinterpret_cast<std::uintptr_t>(s) % 16 == 0 && reinterpret_cast<std::uintptr_t>(d) % out_align == 0) {
			const std::size_t steps = n / G, rest = n % G;
			if (steps)
				convert_vectors<X, G><<<blocks_for(steps), 256, 0, st>>>(x, s, d, steps);
			if (rest)
				convert_elements<X><<<1, 32, 0, st>>>(x, s + steps * G, d + steps * G, rest);
			return cudaGetLastError();
		}
	}
	convert_elements<X><<<blocks_for(n), 256, 0, st>>>(x, s, d, n);
	return cudaGetLastError();
}

} // namespace detail

// The GpuConversion of transform x for CudaOptions::conversion. X: a Transform (see
// bufmgr/concepts.hpp) in element form, trivially copyable (it is passed to the kernel by
// value), its operator() callable on the GPU.
template <class X>
GpuConversion make_gpu_conversion(const X &x, GpuConvertPath path = GpuConvertPath::zero_copy)
{
	static_assert(is_element_transform_v<X>,
		"bufmgr::cuda::make_gpu_conversion: the transform needs an element form "
		"`out_type operator()(in_type) const`, callable on the GPU (__host__ __device__)");
	static_assert(std::is_trivially_copyable_v<X>,
		"bufmgr::cuda::make_gpu_conversion: the transform is passed to a kernel by value and must be "
		"trivially copyable");
	GpuConversion c;
	c.in_size = sizeof(typename X::in_type);
	c.out_size = sizeof(typename X::out_type);
	c.path = path;
	c.launch = &detail::launch_conversion<X>;
	c.transform = std::make_shared<const X>(x);
	return c;
}

} // namespace bufmgr::cuda

#endif // BUFMGR_CUDA_TRANSFORM_CUH
