// SPDX-License-Identifier: GPL-2.0
// ChunkBuffer, DoubleBuffer and PooledBuffer over the memcpy Transfer policy, both directions:
// sizes 0, one granule, around and far beyond the buffer and pool sizes; data compared byte for
// byte with an independent reference, and the stream position checked across calls.
#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::cyclic;
using testbm::error_of;
using testbm::random_bytes;

static constexpr std::size_t BUF = 4096;
// Byte counts (multiples of the 4-byte granule): 0, one granule, below/at/above one buffer,
// non-multiples of the buffer, and many times a pool of 7 buffers.
static const std::size_t sizes[] = {0, 4, BUF - 4, BUF, BUF + 4, 3 * BUF + 12, 2 * BUF,
				    100 * BUF + 4, (1 << 20) + 36};
static constexpr int nsizes = sizeof(sizes) / sizeof(sizes[0]);
// A source whose length is no multiple of anything above, so a misplaced chunk shows.
static const std::vector<std::byte> &source()
{
	static const auto s = random_bytes(3 * BUF * 7 + 4 * 13, 42);
	return s;
}

static MemcpyOptions options(std::vector<std::byte> *sink = nullptr)
{
	return testbm::memcpy_options(&source(), sink);
}

// Reads every size in turn from one manager: the data must continue the source stream.
template <class Algo>
static void check_reads(Algo &a)
{
	std::uint64_t pos = 0;
	for (int k = 0; k < nsizes; ++k) {
		const std::size_t n = sizes[k];
		std::vector<std::byte> got(n + 8, std::byte{0xee});
		ck_assert_uint_eq(a.read(got.data(), n), n);
		const auto want = cyclic(source(), pos, n);
		ck_assert_bytes_eq(got.data(), want.data(), n);
		for (std::size_t j = n; j < n + 8; ++j)
			ck_assert_msg(got[j] == std::byte{0xee}, "read wrote past the end (size %zu)", n);
		pos += n;
		ck_assert_uint_eq(a.transfer().bytes(Direction::c2h), pos);
	}
}

template <class Algo>
static void check_writes(Algo &a, const std::vector<std::byte> &sink)
{
	std::uint64_t pos = 0;
	for (int k = 0; k < nsizes; ++k) {
		const std::size_t n = sizes[k];
		const auto src = random_bytes(n, 100 + k);
		a.write(src.data(), n);
		ck_assert_bytes_eq(sink.data() + pos, src.data(), n);
		pos += n;
		ck_assert_uint_eq(a.transfer().bytes(Direction::h2c), pos);
	}
}

static std::size_t total_size()
{
	std::size_t t = 0;
	for (auto n : sizes)
		t += n;
	return t;
}

// Reads of at least streaming_min_bytes copy with non-temporal stores: every head alignment of
// the destination and every tail length around the 64-byte blocks, then reads that large
// through each algorithm into a destination at an odd offset, byte for byte, nothing written
// past the end.
START_TEST(test_streaming_copy)
{
	const auto src = random_bytes(4096 + 64 + 8, 7);   // the longest copy from offset 7
	std::vector<std::byte> dst(4096 + 64 + 32);
	for (std::size_t off = 0; off < 16; ++off)
		for (std::size_t len : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 200u, 4096u, 4096u + 63}) {
			std::fill(dst.begin(), dst.end(), std::byte{0xee});
			bufmgr::detail::copy_streaming(dst.data() + off, src.data() + off / 2, len);
			ck_assert_bytes_eq(dst.data() + off, src.data() + off / 2, len);
			for (std::size_t j = 0; j < off; ++j)
				ck_assert_msg(dst[j] == std::byte{0xee}, "wrote before the start (%zu, %zu)", off, len);
			for (std::size_t j = off + len; j < dst.size(); ++j)
				ck_assert_msg(dst[j] == std::byte{0xee}, "wrote past the end (%zu, %zu)", off, len);
		}
}
END_TEST

START_TEST(test_large_reads_stream)
{
	const std::size_t n = streaming_min_bytes + 4 * 1000 + 12;   // streamed, odd tail
	std::vector<std::byte> got(n + 3 + 8);
	auto check = [&](auto &a, std::uint64_t pos) {
		std::fill(got.begin(), got.end(), std::byte{0xee});
		ck_assert_uint_eq(a.read(got.data() + 3, n), n);   // destination not aligned
		const auto want = cyclic(source(), pos, n);
		ck_assert_bytes_eq(got.data() + 3, want.data(), n);
		for (std::size_t j : {std::size_t{0}, std::size_t{1}, std::size_t{2}, n + 3, n + 10})
			ck_assert_msg(got[j] == std::byte{0xee}, "byte %zu outside the read written", j);
	};
	ChunkBuffer<MemcpyTransfer> c(MemcpyTransfer(options()), 1 << 20);
	DoubleBuffer<MemcpyTransfer> d(MemcpyTransfer(options()), 256 << 10);
	PooledBuffer<MemcpyTransfer> p(MemcpyTransfer(options()), 5, 64 << 10);
	check(c, 0);
	check(c, n);   // the stream continues
	check(d, 0);
	check(p, 0);
}
END_TEST

START_TEST(test_chunk_read)
{
	ChunkBuffer<MemcpyTransfer> a(MemcpyTransfer(options()), BUF);
	check_reads(a);
}
END_TEST

START_TEST(test_double_read)
{
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(options()), BUF);
	check_reads(a);
}
END_TEST

START_TEST(test_pooled_read)
{
	PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(options()), 7, BUF);
	check_reads(a);
	PooledBuffer<MemcpyTransfer> b(MemcpyTransfer(options()), 2, BUF + 4); // odd buffer size
	check_reads(b);
}
END_TEST

START_TEST(test_chunk_write)
{
	std::vector<std::byte> sink(total_size());
	ChunkBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), BUF);
	check_writes(a, sink);
}
END_TEST

START_TEST(test_double_write)
{
	std::vector<std::byte> sink(total_size());
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), BUF);
	check_writes(a, sink);
}
END_TEST

START_TEST(test_pooled_write)
{
	std::vector<std::byte> sink(total_size());
	PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), 7, BUF);
	check_writes(a, sink);
}
END_TEST

// The counter pattern (what the engine's generator sends) and the checker on the H2C side.
START_TEST(test_pattern_and_checker)
{
	MemcpyOptions o;
	o.granule = 4;
	o.pattern_seed = 0xfffffff0u; // wraps around 2^32 within the first buffer
	o.check_seed = 0x1234;
	DoubleBuffer<MemcpyTransfer, Identity<std::uint32_t>> a(MemcpyTransfer(o), BUF);
	std::vector<std::uint32_t> w(100000 + 3);
	ck_assert_uint_eq(a.read(w.data(), w.size()), w.size());
	for (std::size_t k = 0; k < w.size(); ++k)
		ck_assert_msg(w[k] == 0xfffffff0u + static_cast<std::uint32_t>(k), "word %zu", k);
	for (std::size_t k = 0; k < w.size(); ++k)
		w[k] = 0x1234 + static_cast<std::uint32_t>(k);
	a.write(w.data(), w.size());
	ck_assert_uint_eq(a.transfer().check_bytes(), w.size() * 4);
	ck_assert_uint_eq(a.transfer().check_mismatches(), 0);
	// the checker's stream continues: the next words are 0x1234 + size, ...; one wrong byte
	for (std::size_t k = 0; k < w.size(); ++k)
		w[k] = 0x1234 + static_cast<std::uint32_t>(w.size() + k);
	w[777] ^= 0x100;
	a.write(w.data(), w.size());
	ck_assert_uint_eq(a.transfer().check_mismatches(), 1);
}
END_TEST

// Element types wider than the granule and buffers that do not divide by them: chunks are cut at
// whole elements, so no element straddles two DMA buffers.
START_TEST(test_element_boundaries)
{
	struct Rec {
		std::uint8_t b[12];
	};
	MemcpyOptions o = options();
	DoubleBuffer<MemcpyTransfer, Identity<Rec>> a(MemcpyTransfer(o), 4096 + 4); // 341.67 Recs
	std::vector<Rec> r(1000);
	ck_assert_uint_eq(a.read(r.data(), r.size()), r.size());
	const auto want = cyclic(source(), 0, r.size() * sizeof(Rec));
	ck_assert_bytes_eq(r.data(), want.data(), want.size());
}
END_TEST

START_TEST(test_argument_errors)
{
	MemcpyOptions o = options();
	// buffer size not a multiple of the granule, zero, smaller than an element
	ck_assert_int_eq(error_of([&] { DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 4098); }), EINVAL);
	ck_assert_int_eq(error_of([&] { ChunkBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 0); }), EINVAL);
	ck_assert_int_eq(error_of([&] {
		DoubleBuffer<MemcpyTransfer, Identity<std::uint64_t>> a(MemcpyTransfer(o), 4);
	}), EINVAL);
	ck_assert_int_eq(error_of([&] { PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 1, BUF); }), EINVAL);
	ck_assert_int_eq(error_of([&] { MemcpyOptions p; p.granule = 3; MemcpyTransfer t(p); }), EINVAL);

	// a length that is not a multiple of the granule: EINVAL, nothing moved, still usable
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(o), BUF);
	std::vector<std::byte> v(BUF * 3);
	ck_assert_int_eq(error_of([&] { a.read(v.data(), 4097); }), EINVAL);
	ck_assert_int_eq(error_of([&] { a.write(v.data(), 6); }), EINVAL);
	ck_assert_uint_eq(a.transfer().bytes(Direction::c2h), 0);
	ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
	const auto want = cyclic(source(), 0, v.size());
	ck_assert_bytes_eq(v.data(), want.data(), v.size());
}
END_TEST

// A short packet (the source ends a packet mid-buffer): read() returns what arrived, and the
// next read continues after it.
START_TEST(test_short_packet)
{
	MemcpyOptions o = options();
	o.packet_at[0] = 3; // the third C2H transfer delivers half a buffer
	PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 4, BUF);
	std::vector<std::byte> v(10 * BUF);
	const std::size_t got = a.read(v.data(), v.size());
	ck_assert_uint_eq(got, 2 * BUF + BUF / 2);
	auto want = cyclic(source(), 0, got);
	ck_assert_bytes_eq(v.data(), want.data(), got);
	// what was queued behind it is cancelled, its data (already the next packet's) dropped;
	// the next read continues where the source is now
	const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
	ck_assert_uint_ge(pos, got);
	ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
	want = cyclic(source(), pos, v.size());
	ck_assert_bytes_eq(v.data(), want.data(), v.size());
}
END_TEST

// The link model: a rate-limited transfer takes at least bytes / rate.
START_TEST(test_rate_model)
{
	MemcpyOptions o = options();
	o.rate_mbps = 100; // 1 MB takes 10 ms
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 64 * 1024);
	std::vector<std::byte> v(2000000);
	const auto t0 = std::chrono::steady_clock::now();
	a.read(v.data(), v.size());
	const double dt = testbm::seconds_since(t0);
	ck_assert_msg(dt >= 0.0199, "2 MB at 100 MB/s took %.4f s", dt);
}
END_TEST

// Where transfers cut their bytes: whole, pieces of the unit, full chunks but for the halving
// pieces at the split ends (a read's last chunk, a write's first, both for a Relay), the
// partial chunk next to the end that is not split.
START_TEST(test_chunk_plan)
{
	using detail::ChunkPlan;
	using detail::SplitEnds;
	const std::size_t M = 1 << 20;
	for (std::size_t chunk : {4 * M, M, M / 4, M / 16}) {
		for (std::size_t total : {std::size_t{4}, 300 * M / 1024, M, M + 36, 4 * M, 4 * M + 8, 9 * M, 64 * M + 12}) {
			for (SplitEnds split : {SplitEnds::none, SplitEnds::head, SplitEnds::tail, SplitEnds::both}) {
				const ChunkPlan p(total, chunk, 4, split);
				std::size_t sum = 0;
				for (std::size_t c = 0; c < p.count(); ++c) {
					const std::size_t n = p.len(c);
					ck_assert_uint_gt(n, 0);
					ck_assert_uint_le(n, chunk);
					ck_assert_uint_eq(n % 4, 0);
					sum += n;
				}
				ck_assert_uint_eq(sum, total);
				const std::size_t plain = (total + chunk - 1) / chunk;
				if (split == SplitEnds::none || chunk < 2 * ChunkPlan::min_piece) {
					ck_assert_uint_eq(p.count(), plain);
					continue;
				}
				ck_assert_uint_le(p.count(), plain + 20);
				// an exposed end: below 2 * min_piece once there is that much
				if (total >= 2 * ChunkPlan::min_piece) {
					if (split != SplitEnds::head)
						ck_assert_uint_lt(p.len(p.count() - 1), 2 * ChunkPlan::min_piece);
					if (split != SplitEnds::tail)
						ck_assert_uint_lt(p.len(0), 2 * ChunkPlan::min_piece);
				}
			}
		}
	}
	// 4 MiB buffers, 64 MiB read: 15 full chunks, then 2M, 1M, 512K, 256K, 256K
	const ChunkPlan r(64 * M, 4 * M, 4, SplitEnds::tail);
	ck_assert_uint_eq(r.count(), 20);
	ck_assert_uint_eq(r.len(14), 4 * M);
	ck_assert_uint_eq(r.len(15), 2 * M);
	ck_assert_uint_eq(r.len(18), 256u << 10);
	ck_assert_uint_eq(r.len(19), 256u << 10);
	// a write: the same in reverse; the partial chunk first for a read, last for a write
	const ChunkPlan w(64 * M, 4 * M, 4, SplitEnds::head);
	ck_assert_uint_eq(w.len(0), 256u << 10);
	ck_assert_uint_eq(w.len(4), 2 * M);
	ck_assert_uint_eq(w.len(5), 4 * M);
	ck_assert_uint_eq(ChunkPlan(9 * M, 4 * M, 4, SplitEnds::tail).len(0), M);
	const ChunkPlan wp(9 * M, 4 * M, 4, SplitEnds::head);
	ck_assert_uint_eq(wp.len(wp.count() - 1), M);
	// a Relay: both ends
	const ChunkPlan b(64 * M, 4 * M, 4, SplitEnds::both);
	ck_assert_uint_eq(b.count(), 24);
	ck_assert_uint_eq(b.len(0), 256u << 10);
	ck_assert_uint_eq(b.len(5), 4 * M);
	ck_assert_uint_eq(b.len(23), 256u << 10);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_algorithms");
	TCase *tc = tcase_create("memcpy");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_streaming_copy);
	tcase_add_test(tc, test_large_reads_stream);
	tcase_add_test(tc, test_chunk_read);
	tcase_add_test(tc, test_double_read);
	tcase_add_test(tc, test_pooled_read);
	tcase_add_test(tc, test_chunk_write);
	tcase_add_test(tc, test_double_write);
	tcase_add_test(tc, test_pooled_write);
	tcase_add_test(tc, test_pattern_and_checker);
	tcase_add_test(tc, test_element_boundaries);
	tcase_add_test(tc, test_argument_errors);
	tcase_add_test(tc, test_short_packet);
	tcase_add_test(tc, test_rate_model);
	tcase_add_test(tc, test_chunk_plan);
	suite_add_tcase(s, tc);
	return s;
}
