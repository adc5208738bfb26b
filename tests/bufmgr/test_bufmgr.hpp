// SPDX-License-Identifier: GPL-2.0
// Helpers shared by the bufmgr suites (test_bufmgr_*.cpp).
#ifndef TESTS_UNIT_TEST_BUFMGR_HPP
#define TESTS_UNIT_TEST_BUFMGR_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <system_error>
#include <vector>

#include "check_main.h"
#include "bufmgr/bufmgr.hpp"

namespace testbm {

// MemcpyTransfer options with the engine's 4-byte granule: C2H sends `source` over and over,
// H2C writes into `sink` (without one, the checker compares with the pattern).
inline bufmgr::MemcpyOptions memcpy_options(const std::vector<std::byte> *source,
					    std::vector<std::byte> *sink = nullptr)
{
	bufmgr::MemcpyOptions o;
	o.granule = 4;
	if (source) {
		o.source = source->data();
		o.source_size = source->size();
	}
	if (sink) {
		o.sink = sink->data();
		o.sink_size = sink->size();
	}
	return o;
}

inline std::vector<std::byte> random_bytes(std::size_t n, unsigned seed = 1)
{
	std::mt19937 rng(seed);
	std::vector<std::byte> v(n);
	for (auto &b : v)
		b = static_cast<std::byte>(rng());
	return v;
}

inline std::vector<std::byte> pattern_bytes(std::size_t n, std::uint64_t pos = 0, std::uint32_t seed = 0)
{
	std::vector<std::byte> v(n);
	mp_pattern_fill(v.data(), n, pos, seed);
	return v;
}

// Bytes [pos, pos + n) of a source of src.size() bytes repeated forever.
inline std::vector<std::byte> cyclic(const std::vector<std::byte> &src, std::uint64_t pos, std::size_t n)
{
	std::vector<std::byte> v(n);
	for (std::size_t k = 0; k < n; ++k)
		v[k] = src[(pos + k) % src.size()];
	return v;
}

// The errno of the std::system_error f throws; -1 if it throws something else, 0 if nothing.
inline int error_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const std::system_error &e) {
		return e.code().value();
	} catch (...) {
		return -1;
	}
	return 0;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ck_assert on byte equality, naming the first difference.
#define ck_assert_bytes_eq(a, b, n)                                                             \
	do {                                                                                    \
		const auto *pa_ = reinterpret_cast<const unsigned char *>(a);                   \
		const auto *pb_ = reinterpret_cast<const unsigned char *>(b);                   \
		const std::size_t n_ = (n);                                                     \
		std::size_t k_ = 0;                                                             \
		while (k_ < n_ && pa_[k_] == pb_[k_])                                           \
			++k_;                                                                   \
		ck_assert_msg(k_ == n_, "bytes differ at offset %zu of %zu: 0x%02x != 0x%02x", k_, \
			      n_, k_ < n_ ? pa_[k_] : 0, k_ < n_ ? pb_[k_] : 0);                \
	} while (0)

} // namespace testbm

#endif
