// SPDX-License-Identifier: GPL-2.0
// Errors in the middle of a transfer, for every algorithm and both directions: the error reaches
// the caller with its errno, no thread hangs, and the same object then moves correct data.
// Faults are injected into the memcpy Transfer (the Nth buffer fails, stalls, or the transform
// throws); abort() comes from another thread.
#include <atomic>
#include <stdexcept>
#include <thread>

#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::cyclic;
using testbm::error_of;
using testbm::random_bytes;

static constexpr std::size_t BUF = 4096;
static const std::vector<std::byte> &source()
{
	static const auto s = random_bytes(5 * BUF + 44, 9);
	return s;
}

static MemcpyOptions options(std::vector<std::byte> *sink = nullptr)
{
	return testbm::memcpy_options(&source(), sink);
}

// Fault at C2H buffer `at` (1-based); then a read of 10 buffers must be correct.
template <class Algo>
static void read_fault(Algo &a, std::uint64_t at, int err)
{
	const std::uint64_t f[2] = {at, 0}, none[2] = {0, 0};
	a.transfer().set_faults(f, none, err);
	std::vector<std::byte> v(10 * BUF + 8);
	ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), err);
	a.transfer().set_faults(none, none);
	const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
	ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
	const auto want = cyclic(source(), pos, v.size());
	ck_assert_bytes_eq(v.data(), want.data(), v.size());
}

template <class Algo>
static void write_fault(Algo &a, const std::vector<std::byte> &sink, std::uint64_t at, int err)
{
	const std::uint64_t f[2] = {0, at}, none[2] = {0, 0};
	a.transfer().set_faults(f, none, err);
	const auto src = random_bytes(10 * BUF + 8, static_cast<unsigned>(at));
	ck_assert_int_eq(error_of([&] { a.write(src.data(), src.size()); }), err);
	a.transfer().set_faults(none, none);
	const std::uint64_t pos = a.transfer().bytes(Direction::h2c);
	a.write(src.data(), src.size());
	ck_assert_bytes_eq(sink.data() + pos, src.data(), src.size());
}

template <class Algo>
static void all_faults(Algo &a, const std::vector<std::byte> &sink)
{
	for (std::uint64_t at : {1, 2, 5, 11}) { // first, second, middle, last chunk
		read_fault(a, at, EIO);
		write_fault(a, sink, at, EIO);
	}
	read_fault(a, 3, ETIMEDOUT); // the errno is passed through as it is
	write_fault(a, sink, 3, EFAULT);
}

START_TEST(test_chunk_faults)
{
	std::vector<std::byte> sink(1 << 20);
	ChunkBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), BUF);
	all_faults(a, sink);
}
END_TEST

START_TEST(test_double_faults)
{
	std::vector<std::byte> sink(1 << 20);
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), BUF);
	all_faults(a, sink);
}
END_TEST

START_TEST(test_pooled_faults)
{
	std::vector<std::byte> sink(1 << 20);
	PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), 5, BUF);
	all_faults(a, sink);
}
END_TEST

// A sink that is full: ENOSPC from the transfer, as any other error.
START_TEST(test_sink_full)
{
	std::vector<std::byte> sink(3 * BUF);
	DoubleBuffer<MemcpyTransfer> a(MemcpyTransfer(options(&sink)), BUF);
	const auto src = random_bytes(4 * BUF);
	ck_assert_int_eq(error_of([&] { a.write(src.data(), src.size()); }), ENOSPC);
	ck_assert_bytes_eq(sink.data(), src.data(), 3 * BUF);
}
END_TEST

// The transform throws mid-copy: the exception reaches the caller unchanged, the object is
// reusable.
START_TEST(test_transform_throws)
{
	std::atomic<int> armed{1};
	auto x = make_transform<std::uint32_t, std::uint32_t>([&armed](std::uint32_t v) {
		if (armed.load() && v == 5000)
			throw std::runtime_error("bad sample");
		return v;
	});
	std::vector<std::byte> sink(1 << 20);
	MemcpyOptions o = testbm::memcpy_options(nullptr, &sink);
	PooledBuffer<MemcpyTransfer, decltype(x)> a(MemcpyTransfer(o), 4, BUF, x);
	std::vector<std::uint32_t> v(10000);
	ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), -1); // not a system_error
	for (std::size_t k = 0; k < v.size(); ++k)
		v[k] = static_cast<std::uint32_t>(k);
	ck_assert_int_eq(error_of([&] { a.write(v.data(), v.size()); }), -1);
	armed = 0;
	const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
	ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
	for (std::size_t k = 0; k < v.size(); ++k)
		ck_assert_uint_eq(v[k], pos / 4 + k);
}
END_TEST

// abort() from another thread while the transfer never completes: ECANCELED, promptly, in
// both directions and every algorithm; then a normal transfer.
template <class Algo>
static void abort_stalled(Algo &a, Direction d)
{
	const std::uint64_t none[2] = {0, 0};
	std::uint64_t stall[2] = {0, 0};
	stall[d == Direction::c2h ? 0 : 1] = 2;
	a.transfer().set_faults(none, stall);
	std::vector<std::byte> v(8 * BUF);
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		a.abort();
	});
	const auto t0 = std::chrono::steady_clock::now();
	const int err = error_of([&] {
		if (d == Direction::c2h)
			a.read(v.data(), v.size());
		else
			a.write(v.data(), v.size());
	});
	t.join();
	ck_assert_int_eq(err, ECANCELED);
	ck_assert(testbm::seconds_since(t0) < 5.0);
	a.transfer().set_faults(none, none);
	if (d == Direction::c2h) {
		const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
		ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
		const auto want = cyclic(source(), pos, v.size());
		ck_assert_bytes_eq(v.data(), want.data(), v.size());
	} else {
		a.write(v.data(), v.size());
	}
}

START_TEST(test_abort_from_other_thread)
{
	std::vector<std::byte> sink(1 << 20);
	ChunkBuffer<MemcpyTransfer> c(MemcpyTransfer(options(&sink)), BUF);
	DoubleBuffer<MemcpyTransfer> d(MemcpyTransfer(options(&sink)), BUF);
	PooledBuffer<MemcpyTransfer> p(MemcpyTransfer(options(&sink)), 4, BUF);
	for (Direction dir : {Direction::c2h, Direction::h2c}) {
		abort_stalled(c, dir);
		abort_stalled(d, dir);
		abort_stalled(p, dir);
	}
}
END_TEST

// abort() while the caller is busy copying (nothing of ours blocked yet) still ends the call.
START_TEST(test_abort_while_copying)
{
	std::atomic<bool> go{false};
	auto slow = make_transform<std::uint32_t, std::uint32_t>([&go](std::uint32_t v) {
		if (v == 1500) {
			go = true;
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		}
		return v;
	});
	MemcpyOptions o;
	o.granule = 4;
	ChunkBuffer<MemcpyTransfer, decltype(slow)> a(MemcpyTransfer(o), BUF, slow);
	std::vector<std::uint32_t> v(100000);
	std::thread t([&] {
		while (!go)
			std::this_thread::yield();
		a.abort();
	});
	ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), ECANCELED);
	t.join();
}
END_TEST

// Destroying an object whose transfer is stuck (after the failed call returned) does not hang.
START_TEST(test_destroy_after_error)
{
	const auto t0 = std::chrono::steady_clock::now();
	{
		MemcpyOptions o = options();
		o.fail_at[0] = 2;
		o.rate_mbps = 20; // the transfers behind the failed one are still running
		PooledBuffer<MemcpyTransfer> a(MemcpyTransfer(o), 8, BUF);
		std::vector<std::byte> v(50 * BUF);
		ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), EIO);
	}
	ck_assert(testbm::seconds_since(t0) < 5.0);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_errors");
	TCase *tc = tcase_create("errors");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_chunk_faults);
	tcase_add_test(tc, test_double_faults);
	tcase_add_test(tc, test_pooled_faults);
	tcase_add_test(tc, test_sink_full);
	tcase_add_test(tc, test_transform_throws);
	tcase_add_test(tc, test_abort_from_other_thread);
	tcase_add_test(tc, test_abort_while_copying);
	tcase_add_test(tc, test_destroy_after_error);
	suite_add_tcase(s, tc);
	return s;
}
