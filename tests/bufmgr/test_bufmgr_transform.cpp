// SPDX-License-Identifier: GPL-2.0
// bufmgr transforms: each one against a reference computed independently, the policy
// detection traits, and transforms merged into the copy of a read and a write.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::random_bytes;

// ---- compile-time: the traits accept the shipped policies and reject broken ones ----
namespace {
struct NoTypes {
	int operator()(int v) const { return v; }
};
struct NonConst {
	using in_type = int;
	using out_type = int;
	int operator()(int v) { return v; }
};
struct Block {
	using in_type = std::uint8_t;
	using out_type = std::uint16_t;
	mutable int calls = 0;
	void operator()(const std::uint8_t *s, std::uint16_t *d, std::size_t n) const
	{
		++calls;
		for (std::size_t k = 0; k < n; ++k)
			d[k] = static_cast<std::uint16_t>(s[k] * 3);
	}
	std::uint16_t operator()(std::uint8_t) const { return 0xdead; } // must not be used
};
} // namespace

static_assert(is_transform_v<Identity<>>);
static_assert(is_transform_v<ByteSwap16> && is_transform_v<ByteSwap32> && is_transform_v<ByteSwap64>);
static_assert(is_transform_v<Int16ToFloat> && is_transform_v<FloatToInt16>);
static_assert(is_transform_v<Block> && is_block_transform_v<Block>);
static_assert(!is_transform_v<NoTypes>);
static_assert(!is_transform_v<NonConst>);
static_assert(is_transfer_v<MemcpyTransfer> && can_adopt_v<MemcpyTransfer>);
static_assert(!is_transfer_v<NoTypes>);

template <class T>
static T reversed(T v)
{
	unsigned char b[sizeof(T)], r[sizeof(T)];
	std::memcpy(b, &v, sizeof(T));
	for (std::size_t k = 0; k < sizeof(T); ++k)
		r[k] = b[sizeof(T) - 1 - k];
	std::memcpy(&v, r, sizeof(T));
	return v;
}

template <class T>
static void check_byteswap()
{
	const std::size_t n = 1001;
	auto raw = random_bytes(n * sizeof(T), sizeof(T));
	std::vector<T> src(n), dst(n);
	std::memcpy(src.data(), raw.data(), raw.size());
	detail::apply_transform(ByteSwap<T>(), src.data(), dst.data(), n);
	for (std::size_t k = 0; k < n; ++k)
		ck_assert_msg(dst[k] == reversed(src[k]), "element %zu", k);
	// twice is the identity
	std::vector<T> back(n);
	detail::apply_transform(ByteSwap<T>(), dst.data(), back.data(), n);
	ck_assert_bytes_eq(back.data(), src.data(), n * sizeof(T));
}

START_TEST(test_identity)
{
	auto src = random_bytes(12345);
	std::vector<std::byte> dst(src.size());
	detail::apply_transform(Identity<>(), src.data(), dst.data(), src.size());
	ck_assert_bytes_eq(dst.data(), src.data(), src.size());
	detail::apply_transform(Identity<>(), src.data(), dst.data(), 0); // n = 0 touches nothing
}
END_TEST

START_TEST(test_byteswap)
{
	check_byteswap<std::uint16_t>();
	check_byteswap<std::uint32_t>();
	check_byteswap<std::uint64_t>();
	check_byteswap<std::int32_t>();
	ck_assert_uint_eq(ByteSwap32()(0x11223344u), 0x44332211u);
	ck_assert_uint_eq(ByteSwap16()(0xa1b2u), 0xb2a1u);
	ck_assert(ByteSwap64()(0x0102030405060708ull) == 0x0807060504030201ull);
}
END_TEST

START_TEST(test_int16_to_float)
{
	std::vector<std::int16_t> src;
	for (int v = -32768; v <= 32767; ++v)
		src.push_back(static_cast<std::int16_t>(v));
	std::vector<float> dst(src.size());
	detail::apply_transform(Int16ToFloat(), src.data(), dst.data(), src.size());
	for (std::size_t k = 0; k < src.size(); ++k)
		ck_assert_msg(dst[k] == static_cast<float>(src[k]), "value %d", src[k]);
	detail::apply_transform(Int16ToFloat(1.0f / 32768), src.data(), dst.data(), src.size());
	ck_assert(dst.front() == -1.0f);
	ck_assert(dst[32768] == 0.0f);
	ck_assert(dst.back() == 32767.0f / 32768.0f);
}
END_TEST

START_TEST(test_float_to_int16)
{
	const float in[] = {0.0f, 1.4f, 1.5f, 2.5f, -1.5f, -0.6f, 32767.4f, 40000.0f, -40000.0f,
			    std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
			    std::numeric_limits<float>::quiet_NaN()};
	const std::int16_t want[] = {0, 1, 2, 2, -2, -1, 32767, 32767, -32768, 32767, -32768, 0};
	std::int16_t out[12];
	detail::apply_transform(FloatToInt16(), in, out, 12);
	for (int k = 0; k < 12; ++k)
		ck_assert_msg(out[k] == want[k], "in[%d] = %g gave %d, want %d", k, in[k], out[k], want[k]);
	// round trip through the scaled pair
	std::vector<std::int16_t> s{-32768, -1, 0, 1, 12345, 32767};
	std::vector<float> f(s.size());
	std::vector<std::int16_t> back(s.size());
	detail::apply_transform(Int16ToFloat(1.0f / 32768), s.data(), f.data(), s.size());
	detail::apply_transform(FloatToInt16(32768.0f), f.data(), back.data(), s.size());
	ck_assert_bytes_eq(back.data(), s.data(), s.size() * 2);
}
END_TEST

// The branch-free FloatToInt16 against the obvious one (NaN -> 0, clamp, nearbyint), on every
// quarter from -40000 to 40000 (all the ties), the edges, and a million random bit patterns
// (NaNs with payloads, infinities, denormals, -0).
START_TEST(test_float_to_int16_exhaustive)
{
	auto reference = [](float y) -> std::int16_t {
		if (std::isnan(y))
			return 0;
		y = std::min(std::max(y, -32768.0f), 32767.0f);
		return static_cast<std::int16_t>(std::nearbyint(y));
	};
	std::vector<float> in;
	for (int k = -160000; k <= 160000; ++k)
		in.push_back(k / 4.0f);
	for (float e : {32767.49f, 32767.5f, 32767.51f, 32768.0f, -32768.49f, -32768.5f, -32768.51f,
			-32769.0f, 8388608.0f, 12582912.0f, -12582912.0f, 3e38f, -3e38f, 1e-40f, -0.0f})
		in.push_back(e);
	std::mt19937 rng(5);
	for (int k = 0; k < 1000000; ++k) {
		const std::uint32_t b = rng();
		float f;
		std::memcpy(&f, &b, 4);
		in.push_back(f);
	}
	std::vector<std::int16_t> out(in.size());
	detail::apply_transform(FloatToInt16(), in.data(), out.data(), in.size());
	for (std::size_t k = 0; k < in.size(); ++k)
		ck_assert_msg(out[k] == reference(in[k]), "%a gave %d, want %d", static_cast<double>(in[k]), out[k],
			      reference(in[k]));
	// and through a scale
	detail::apply_transform(FloatToInt16(3.0f), in.data(), out.data(), in.size());
	for (std::size_t k = 0; k < in.size(); ++k)
		ck_assert_int_eq(out[k], reference(in[k] * 3.0f));
}
END_TEST

START_TEST(test_user_functor)
{
	const std::uint32_t key = 0x5a5a5a5au;
	auto x = make_transform<std::uint32_t, std::uint64_t>(
		[key](std::uint32_t v) { return (static_cast<std::uint64_t>(v ^ key) << 1) | 1; });
	static_assert(is_transform_v<decltype(x)>);
	std::vector<std::uint32_t> src(777);
	for (std::size_t k = 0; k < src.size(); ++k)
		src[k] = static_cast<std::uint32_t>(k * 2654435761u);
	std::vector<std::uint64_t> dst(src.size());
	detail::apply_transform(x, src.data(), dst.data(), src.size());
	for (std::size_t k = 0; k < src.size(); ++k)
		ck_assert(dst[k] == ((static_cast<std::uint64_t>(src[k] ^ key) << 1) | 1));
}
END_TEST

START_TEST(test_block_form_preferred)
{
	Block b;
	std::uint8_t s[5] = {1, 2, 3, 4, 255};
	std::uint16_t d[5];
	detail::apply_transform(b, s, d, 5);
	ck_assert_int_eq(b.calls, 1);
	for (int k = 0; k < 5; ++k)
		ck_assert_uint_eq(d[k], s[k] * 3u);
}
END_TEST

// Transforms merged into a real read: the source sends random bytes; the user gets them
// converted, through every algorithm, across chunk boundaries (buffer 4 KiB, 3 chunks + tail).
template <class Algo>
static void read_transformed(Algo &&a, const std::vector<std::byte> &src)
{
	using X = typename std::decay_t<Algo>::transform_type;
	using In = typename X::in_type;
	using Out = typename X::out_type;
	const std::size_t n = (3 * 4096 + 8) / sizeof(In);
	std::vector<Out> got(n);
	ck_assert_uint_eq(a.read(got.data(), n), n);
	std::vector<In> in(n);
	std::memcpy(in.data(), src.data(), n * sizeof(In));
	const X x = a.transform();
	for (std::size_t k = 0; k < n; ++k) {
		const Out want = x(in[k]);
		ck_assert_msg(std::memcmp(&got[k], &want, sizeof(Out)) == 0, "element %zu", k);
	}
}

START_TEST(test_read_with_transforms)
{
	const auto src = random_bytes(1 << 16, 7);
	MemcpyOptions o;
	o.granule = 4;
	o.source = src.data();
	o.source_size = src.size();
	read_transformed(ChunkBuffer<MemcpyTransfer, ByteSwap16>(MemcpyTransfer(o), 4096), src);
	read_transformed(DoubleBuffer<MemcpyTransfer, ByteSwap32>(MemcpyTransfer(o), 4096), src);
	read_transformed(PooledBuffer<MemcpyTransfer, ByteSwap64>(MemcpyTransfer(o), 3, 4096), src);
	read_transformed(DoubleBuffer<MemcpyTransfer, Int16ToFloat>(MemcpyTransfer(o), 4096,
								     Int16ToFloat(0.5f)), src);
	auto f = make_transform<std::uint16_t, std::uint32_t>([](std::uint16_t v) { return v * 7u + 1; });
	read_transformed(PooledBuffer<MemcpyTransfer, decltype(f)>(MemcpyTransfer(o), 4, 4096, f), src);
}
END_TEST

// And into a write: the board (a memcpy sink) receives out_type.
START_TEST(test_write_with_transforms)
{
	const std::size_t n = 5000; // 10000 bytes of int16 -> 20000 bytes of float: 5 chunks
	std::vector<std::int16_t> s(n);
	for (std::size_t k = 0; k < n; ++k)
		s[k] = static_cast<std::int16_t>(k * 37 - 30000);
	std::vector<float> sink(n + 16, -1.0f);
	MemcpyOptions o;
	o.granule = 4;
	o.sink = sink.data();
	o.sink_size = sink.size() * sizeof(float);
	DoubleBuffer<MemcpyTransfer, Int16ToFloat> db(MemcpyTransfer(o), 4096, Int16ToFloat(2.0f));
	db.write(s.data(), n);
	for (std::size_t k = 0; k < n; ++k)
		ck_assert_msg(sink[k] == 2.0f * s[k], "element %zu", k);
	ck_assert(sink[n] == -1.0f); // nothing past the end

	std::vector<float> fs(n);
	for (std::size_t k = 0; k < n; ++k)
		fs[k] = static_cast<float>(k) - 2500.25f;
	std::vector<std::int16_t> sink16(n);
	o.sink = sink16.data();
	o.sink_size = n * 2;
	ChunkBuffer<MemcpyTransfer, FloatToInt16> cb(MemcpyTransfer(o), 4096);
	cb.write(fs.data(), n);
	for (std::size_t k = 0; k < n; ++k)
		ck_assert_int_eq(sink16[k], static_cast<std::int16_t>(std::nearbyint(fs[k])));
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_transform");
	TCase *tc = tcase_create("transform");
	tcase_add_test(tc, test_identity);
	tcase_add_test(tc, test_byteswap);
	tcase_add_test(tc, test_int16_to_float);
	tcase_add_test(tc, test_float_to_int16);
	tcase_add_test(tc, test_float_to_int16_exhaustive);
	tcase_add_test(tc, test_user_functor);
	tcase_add_test(tc, test_block_form_preferred);
	tcase_add_test(tc, test_read_with_transforms);
	tcase_add_test(tc, test_write_with_transforms);
	suite_add_tcase(s, tc);
	return s;
}
