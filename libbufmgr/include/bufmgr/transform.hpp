// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Transform policies: the copy loop between a DMA buffer and the user's buffer, with the data
// conversion merged into it (see the Transform concept in bufmgr/concepts.hpp).
//
//   Identity<T>          plain copy (memcpy)
//   ByteSwap<T>          reverse the bytes of each 16-, 32- or 64-bit word (ByteSwap16/32/64)
//   Int16ToFloat         signed 16-bit samples to float, times a scale
//   FloatToInt16         float to signed 16-bit, times a scale, rounded to nearest, saturated
//   make_transform<In, Out>(f)   any callable Out(In) (a lambda, a function object)
//
// All of them are stateless, so a buffer manager may split one copy over its copy threads
// (bufmgr/copy_workers.hpp). What a transform of your own may assume, and how one that keeps
// state (a running checksum) says so: the Transform concept in bufmgr/concepts.hpp.
//
// A transform maps source to destination of the copy: used for a read (board -> user) the DMA
// buffer holds in_type; used for a write (user -> board) the board receives out_type.
#ifndef BUFMGR_TRANSFORM_HPP
#define BUFMGR_TRANSFORM_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#endif
#include <utility>
#include <vector>

#include "bufmgr/concepts.hpp"
#include "bufmgr/copy_workers.hpp"

// The element forms of the shipped transforms are callable on the GPU too, where nvcc compiles
// them (the GPU stage's conversions, bufmgr/cuda_transform.cuh).
#if defined(__CUDACC__)
#define BUFMGR_HOST_DEVICE __host__ __device__
#else
#define BUFMGR_HOST_DEVICE
#endif

namespace bufmgr {

namespace detail {

// A copy whose destination goes straight to memory (non-temporal stores, x86-64): for reads
// into a destination larger than the caches, where ordinary stores first read every line they
// write (and evict what the caller still uses). Elsewhere memcpy.
inline void copy_streaming(void *dst, const void *src, std::size_t bytes) noexcept
{
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
	auto *d = static_cast<unsigned char *>(dst);
	const auto *s = static_cast<const unsigned char *>(src);
	const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16);
	std::memcpy(d, s, head);
	d += head;
	s += head;
	bytes -= head;
	for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
		const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
		const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
		const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
		const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
		_mm_stream_si128(reinterpret_cast<__m128i *>(d), a);
		_mm_stream_si128(reinterpret_cast<__m128i *>(d + 16), b);
		_mm_stream_si128(reinterpret_cast<__m128i *>(d + 32), c);
		_mm_stream_si128(reinterpret_cast<__m128i *>(d + 48), e);
	}
	_mm_sfence();   // the streamed lines are visible before whatever follows
	std::memcpy(d, s, bytes);
#else
	std::memcpy(dst, src, bytes);
#endif
}

} // namespace detail

template <class T = std::byte>
struct Identity {
	static_assert(std::is_trivially_copyable_v<T>, "bufmgr::Identity<T>: T must be trivially copyable");
	using in_type = T;
	using out_type = T;
	void operator()(const T *src, T *dst, std::size_t n) const noexcept
	{
		if (n)
			std::memcpy(dst, src, n * sizeof(T));
	}
	// The same with non-temporal stores (detail::copy_streaming): the buffer managers use it
	// for reads larger than streaming_min_bytes.
	void streaming(const T *src, T *dst, std::size_t n) const noexcept
	{
		if (n)
			detail::copy_streaming(dst, src, n * sizeof(T));
	}
};

// Reads of at least this many bytes through an Identity transform stream their copy into the
// user's buffer (Identity::streaming): a destination that large leaves the caches anyway.
inline constexpr std::size_t streaming_min_bytes = 8u << 20;

template <class T>
struct ByteSwap {
	static_assert(std::is_integral_v<T> && (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8),
		      "bufmgr::ByteSwap<T>: T must be a 16-, 32- or 64-bit integer type (ByteSwap16/32/64)");
	using in_type = T;
	using out_type = T;
	BUFMGR_HOST_DEVICE T operator()(T v) const noexcept
	{
		using U = std::make_unsigned_t<T>;
		U u = static_cast<U>(v);
#if defined(__CUDA_ARCH__)
		if constexpr (sizeof(T) == 2)
			u = static_cast<U>((u >> 8) | (u << 8));
		else if constexpr (sizeof(T) == 4)
			u = __byte_perm(u, 0, 0x0123);
		else
			u = (static_cast<U>(__byte_perm(static_cast<std::uint32_t>(u), 0, 0x0123)) << 32) |
			    __byte_perm(static_cast<std::uint32_t>(u >> 32), 0, 0x0123);
#else
		if constexpr (sizeof(T) == 2)
			u = __builtin_bswap16(u);
		else if constexpr (sizeof(T) == 4)
			u = __builtin_bswap32(u);
		else
			u = __builtin_bswap64(u);
#endif
		return static_cast<T>(u);
	}
};
using ByteSwap16 = ByteSwap<std::uint16_t>;
using ByteSwap32 = ByteSwap<std::uint32_t>;
using ByteSwap64 = ByteSwap<std::uint64_t>;

struct Int16ToFloat {
	using in_type = std::int16_t;
	using out_type = float;
	float scale = 1.0f;
	constexpr Int16ToFloat() noexcept = default;
	BUFMGR_HOST_DEVICE constexpr explicit Int16ToFloat(float s) noexcept : scale(s) {}
	BUFMGR_HOST_DEVICE float operator()(std::int16_t v) const noexcept { return static_cast<float>(v) * scale; }
};

struct FloatToInt16 {
	using in_type = float;
	using out_type = std::int16_t;
	float scale = 1.0f;
	constexpr FloatToInt16() noexcept = default;
	BUFMGR_HOST_DEVICE constexpr explicit FloatToInt16(float s) noexcept : scale(s) {}
	// Rounded to nearest (ties to even), saturated to [-32768, 32767]; NaN gives 0.
	// Branch-free, so that the copy loop vectorises (GCC does not if-convert float comparisons
	// while floating-point exceptions may trap, its default): NaN and the saturation are
	// handled on the bits of |y| as integers, whose order is that of the magnitudes. Adding and
	// subtracting 1.5 * 2^23 then rounds |y| <= 32768 to the nearest integer, ties to even (in
	// the default rounding mode; -ffast-math would fold it away, so that build calls nearbyint).
	BUFMGR_HOST_DEVICE std::int16_t operator()(float v) const noexcept
	{
		const float y = v * scale;
#if defined(__CUDA_ARCH__)
		std::uint32_t bits = __float_as_uint(y);
#else
		std::uint32_t bits;
		std::memcpy(&bits, &y, sizeof bits);
#endif
		std::uint32_t mag = bits & 0x7fffffffu;
		mag = mag > 0x7f800000u ? 0u : mag;                // NaN: 0
		mag = mag > 0x47000000u ? 0x47000000u : mag;       // |y| > 32768: 32768
		bits = (bits & 0x80000000u) | mag;
#if defined(__CUDA_ARCH__)
		const float z = __uint_as_float(bits);
#else
		float z;
		std::memcpy(&z, &bits, sizeof z);
#endif
#if defined(__FAST_MATH__) || defined(__CUDA_ARCH__) && defined(__USE_FAST_MATH__)
		std::int32_t i = static_cast<std::int32_t>(std::nearbyint(z));
#else
		constexpr float round_bias = 12582912.0f;
		std::int32_t i = static_cast<std::int32_t>((z + round_bias) - round_bias);
#endif
		return static_cast<std::int16_t>(i > 32767 ? 32767 : i); // [-32768, 32768] -> int16
	}
};

// Any callable Out(In) as a Transform (element form).
template <class In, class Out, class F>
class FunctionTransform {
public:
	using in_type = In;
	using out_type = Out;
	explicit FunctionTransform(F f) : f_(std::move(f)) {}
	Out operator()(const In &v) const { return static_cast<Out>(f_(v)); }

private:
	F f_;
};

template <class In, class Out, class F>
FunctionTransform<In, Out, std::decay_t<F>> make_transform(F &&f)
{
	return FunctionTransform<In, Out, std::decay_t<F>>(std::forward<F>(f));
}

namespace detail {

// The copy loop: n elements from src to dst through the transform (block form if it has one).
// A reducing transform gets a fresh partial here and folds it in at once (one slice); it must
// then be passed as a modifiable lvalue.
template <class XRef, class X = std::decay_t<XRef>>
inline void apply_transform(XRef &&x, const typename X::in_type *src, typename X::out_type *dst,
			    std::size_t n)
{
	if constexpr (is_reducing_transform_v<X>) {
		typename X::partial_type partial{};
		std::as_const(x)(src, dst, n, partial);
		x.combine(std::as_const(partial));
	} else if constexpr (is_block_transform_v<X>) {
		x(src, dst, n);
	} else {
		const typename X::in_type *__restrict s = src;
		typename X::out_type *__restrict d = dst;
		for (std::size_t k = 0; k < n; ++k)
			d[k] = x(s[k]);
	}
}

} // namespace detail

// Slices shorter than this are not worth a thread's wake-up (about 10 us of copying).
inline constexpr std::size_t min_copy_slice_bytes = 64 << 10;

// The buffer managers' copy, for use outside them too: n elements from src to dst through
// transform x, cut into slices on the threads of `workers` (nullptr or one thread: the calling
// thread alone). Slices start at multiples of 64 elements, so no two threads write one cache
// line. A reducing transform gets one partial per slice, folded in slice order once all
// succeeded. Owner thread of `workers`; src and dst do not overlap. Throws what x throws.
template <class X>
void transform_copy(CopyWorkers *workers, X &x, const typename X::in_type *src,
		    typename X::out_type *dst, std::size_t n)
{
	constexpr std::size_t elem = std::max(sizeof(typename X::in_type), sizeof(typename X::out_type));
	constexpr std::size_t min_slice = min_copy_slice_bytes / elem;
	if (!workers || !is_splittable_v<X> || workers->threads() == 1 || n < 2 * min_slice) {
		detail::apply_transform(x, src, dst, n);
		return;
	}
	if constexpr (is_reducing_transform_v<X>) {
		using P = typename X::partial_type;
		std::vector<P> partials(workers->plan(n, 64, min_slice).slices);
		const X &cx = x;
		workers->for_slices(n, 64, min_slice, [&](std::size_t b, std::size_t e, std::size_t i) {
			cx(src + b, dst + b, e - b, partials[i]);
		});
		for (const P &p : partials)
			x.combine(p);
	} else {
		const X &cx = x;
		workers->for_slices(n, 64, min_slice, [&](std::size_t b, std::size_t e, std::size_t) {
			detail::apply_transform(cx, src + b, dst + b, e - b);
		});
	}
}

template <class X>
struct is_identity_transform : std::false_type {};
template <class T>
struct is_identity_transform<Identity<T>> : std::true_type {};
template <class X>
inline constexpr bool is_identity_transform_v = is_identity_transform<std::remove_cv_t<X>>::value;

namespace detail {

// transform_copy of a plain copy with non-temporal stores (Identity::streaming), sliced over
// the copy threads as transform_copy slices it.
template <class T>
void streaming_copy(CopyWorkers *workers, const Identity<T> &x, const T *src, T *dst, std::size_t n)
{
	constexpr std::size_t min_slice = min_copy_slice_bytes / sizeof(T);
	if (!workers || workers->threads() == 1 || n < 2 * min_slice) {
		x.streaming(src, dst, n);
		return;
	}
	workers->for_slices(n, 64, min_slice, [&](std::size_t b, std::size_t e, std::size_t) {
		x.streaming(src + b, dst + b, e - b);
	});
}

} // namespace detail

} // namespace bufmgr

#endif // BUFMGR_TRANSFORM_HPP
