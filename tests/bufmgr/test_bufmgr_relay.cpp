// SPDX-License-Identifier: GPL-2.0
// Relay (the algorithm of the CUDA stage) on host-only transfers: a source fills shared buffers,
// a sink drains the same memory, no CPU copy in between. Data byte for byte, buffer sharing,
// errors on either side, abort, reuse.
#include <thread>

#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::cyclic;
using testbm::error_of;
using testbm::random_bytes;
using R = Relay<MemcpyTransfer, MemcpyTransfer>;

static constexpr std::size_t BUF = 8192;
static const std::vector<std::byte> &source()
{
	static const auto s = random_bytes(7 * BUF + 20, 3);
	return s;
}

static MemcpyTransfer src_transfer()
{
	return MemcpyTransfer(testbm::memcpy_options(&source()));
}

static MemcpyTransfer sink_transfer(std::vector<std::byte> &sink)
{
	return MemcpyTransfer(testbm::memcpy_options(nullptr, &sink));
}

START_TEST(test_relay_data)
{
	std::vector<std::byte> sink(16 << 20);
	R r(src_transfer(), sink_transfer(sink), 4, BUF);
	// The sink adopted the source's buffers: the same memory, no copy.
	ck_assert_uint_eq(r.sink().buffer_count(), 4);
	for (std::size_t i = 0; i < 4; ++i)
		ck_assert_ptr_eq(r.sink().view(i).data, r.source().view(i).data);
	std::uint64_t pos = 0;
	for (std::size_t n : {std::size_t{0}, std::size_t{4}, BUF - 4, BUF, 3 * BUF + 12,
			      std::size_t{(1 << 20) + 4}, std::size_t{9 << 20}}) {
		ck_assert_uint_eq(r.run(n), n);
		const auto want = cyclic(source(), pos, n);
		ck_assert_bytes_eq(sink.data() + pos, want.data(), n);
		pos += n;
	}
	ck_assert_uint_eq(r.source().bytes(Direction::c2h), pos);
	ck_assert_uint_eq(r.sink().bytes(Direction::h2c), pos);
	ck_assert_int_eq(error_of([&] { r.run(6); }), EINVAL);
}
END_TEST

// The counter pattern into the checker, the way the GPU tests use the board: 64 MiB.
START_TEST(test_relay_pattern_checker)
{
	MemcpyOptions s, k;
	s.granule = k.granule = 4;
	s.pattern_seed = k.check_seed = 77;
	Relay<MemcpyTransfer, MemcpyTransfer> r(MemcpyTransfer(s), MemcpyTransfer(k), 6, 1 << 20);
	ck_assert_uint_eq(r.run(64 << 20), 64u << 20);
	ck_assert_uint_eq(r.sink().check_bytes(), 64u << 20);
	ck_assert_uint_eq(r.sink().check_mismatches(), 0);
}
END_TEST

// Both links run at once: while the source is stuck on its 3rd buffer, the sink has already
// drained the first two (a fill-then-drain relay would not have started draining).
START_TEST(test_relay_overlaps)
{
	std::vector<std::byte> sink(1 << 20);
	MemcpyOptions o = testbm::memcpy_options(&source());
	o.stall_at[0] = 3;
	R r(MemcpyTransfer(o), sink_transfer(sink), 4, BUF);
	int err = 0;
	std::thread t([&] { err = error_of([&] { r.run(10 * BUF); }); });
	const auto t0 = std::chrono::steady_clock::now();
	while (r.sink().bytes(Direction::h2c) < 2 * BUF && testbm::seconds_since(t0) < 10)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ck_assert_uint_eq(r.sink().bytes(Direction::h2c), 2 * BUF);
	ck_assert_uint_eq(r.source().bytes(Direction::c2h), 2 * BUF); // the 3rd never moved
	r.abort();
	t.join();
	ck_assert_int_eq(err, ECANCELED);
	const auto want = cyclic(source(), 0, 2 * BUF);
	ck_assert_bytes_eq(sink.data(), want.data(), 2 * BUF);
}
END_TEST

// With two buffers, one that comes back while the driving thread waits for the other is
// started at once (wait_for), on both sides: the source's 2nd fill and the sink's 2nd drain
// never finish, yet the first buffer goes round again (a blocking wait would hold it back).
START_TEST(test_relay_restarts_while_waiting)
{
	std::vector<std::byte> sink(1 << 20);
	const std::uint64_t none[2] = {0, 0}, src_stall[2] = {2, 0}, sink_stall[2] = {0, 2};
	for (int side = 0; side < 2; ++side) {
		// the other side is slow (20 ms a buffer), so the waiting side is surely waiting when
		// the buffer comes back
		MemcpyOptions so = testbm::memcpy_options(&source());
		MemcpyOptions ko = testbm::memcpy_options(nullptr, &sink);
		(side == 0 ? ko : so).rate_mbps = BUF / 0.02 / 1e6;
		R r(MemcpyTransfer(so), MemcpyTransfer(ko), 2, BUF);
		(side == 0 ? r.source() : r.sink()).set_faults(none, side == 0 ? src_stall : sink_stall);
		int err = 0;
		std::thread t([&] { err = error_of([&] { r.run(10 * BUF); }); });
		const auto t0 = std::chrono::steady_clock::now();
		auto restarted = [&] {
			return side == 0 ? r.source().started(Direction::c2h) >= 3
					 : r.sink().started(Direction::h2c) >= 3;
		};
		while (!restarted() && testbm::seconds_since(t0) < 10)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		if (side == 0) {
			ck_assert_uint_eq(r.source().started(Direction::c2h), 3); // buffer 0 again, behind the stall
			ck_assert_uint_eq(r.sink().bytes(Direction::h2c), BUF);
		} else {
			// buffer 0 drained and refilled, then queued on the sink behind the stalled drain
			ck_assert_uint_eq(r.sink().started(Direction::h2c), 3);
			ck_assert_uint_eq(r.sink().bytes(Direction::h2c), BUF);
		}
		r.abort();
		t.join();
		ck_assert_int_eq(err, ECANCELED);
		const auto want = cyclic(source(), 0, BUF);
		ck_assert_bytes_eq(sink.data(), want.data(), BUF);
	}
}
END_TEST

static void faulty_run(R &r, std::vector<std::byte> &sink, int side, std::uint64_t at)
{
	const std::uint64_t none[2] = {0, 0};
	std::uint64_t f[2] = {0, 0};
	f[side] = at;
	(side == 0 ? r.source() : r.sink()).set_faults(f, none, EIO);
	ck_assert_int_eq(error_of([&] { r.run(20 * BUF); }), EIO);
	(side == 0 ? r.source() : r.sink()).set_faults(none, none);
	// reusable: the next run delivers exactly the source's next bytes
	const std::uint64_t spos = r.source().bytes(Direction::c2h);
	const std::uint64_t kpos = r.sink().bytes(Direction::h2c);
	ck_assert_uint_eq(r.run(10 * BUF), 10 * BUF);
	const auto want = cyclic(source(), spos, 10 * BUF);
	ck_assert_bytes_eq(sink.data() + kpos, want.data(), 10 * BUF);
}

START_TEST(test_relay_faults)
{
	std::vector<std::byte> sink(16 << 20);
	R r(src_transfer(), sink_transfer(sink), 4, BUF);
	for (std::uint64_t at : {1, 3, 20}) {
		faulty_run(r, sink, 0, at);
		faulty_run(r, sink, 1, at);
	}
}
END_TEST

START_TEST(test_relay_abort)
{
	std::vector<std::byte> sink(16 << 20);
	R r(src_transfer(), sink_transfer(sink), 4, BUF);
	const std::uint64_t none[2] = {0, 0}, stall[2] = {0, 3};
	r.sink().set_faults(none, stall); // the sink never finishes its 3rd buffer
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		r.abort();
	});
	const auto t0 = std::chrono::steady_clock::now();
	ck_assert_int_eq(error_of([&] { r.run(100 * BUF); }), ECANCELED);
	ck_assert(testbm::seconds_since(t0) < 5.0);
	t.join();
	r.sink().set_faults(none, none);
	ck_assert_uint_eq(r.run(5 * BUF), 5 * BUF);
}
END_TEST

// Runs of one small piece go through the calling thread alone (Relay::kInlineMax): the same
// data, errors of either side, abort from another thread and reuse as the pipeline.
START_TEST(test_relay_small_runs)
{
	static_assert(R::kInlineMax >= BUF, "the runs below must be small ones");
	std::vector<std::byte> sink(1 << 20);
	R r(src_transfer(), sink_transfer(sink), 4, BUF);
	const std::uint64_t none[2] = {0, 0};
	std::uint64_t pos = 0;
	for (std::size_t n : {std::size_t{4}, std::size_t{1000}, BUF}) {
		ck_assert_uint_eq(r.run(n), n);
		const auto want = cyclic(source(), pos, n);
		ck_assert_bytes_eq(sink.data() + pos, want.data(), n);
		pos += n;
	}
	for (int side = 0; side < 2; ++side) {
		std::uint64_t f[2] = {0, 0};
		f[side] = 1; // the next transfer (set_faults restarts the counts)
		(side == 0 ? r.source() : r.sink()).set_faults(f, none, EIO);
		ck_assert_int_eq(error_of([&] { r.run(BUF); }), EIO);
		(side == 0 ? r.source() : r.sink()).set_faults(none, none);
		const std::uint64_t spos = r.source().bytes(Direction::c2h);
		const std::uint64_t kpos = r.sink().bytes(Direction::h2c);
		ck_assert_uint_eq(r.run(BUF / 2), BUF / 2);
		const auto want = cyclic(source(), spos, BUF / 2);
		ck_assert_bytes_eq(sink.data() + kpos, want.data(), BUF / 2);
	}
	const std::uint64_t stall[2] = {0, 1};
	r.sink().set_faults(none, stall); // the sink never finishes the next buffer
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		r.abort();
	});
	const auto t0 = std::chrono::steady_clock::now();
	ck_assert_int_eq(error_of([&] { r.run(BUF); }), ECANCELED);
	ck_assert(testbm::seconds_since(t0) < 5.0);
	t.join();
	r.sink().set_faults(none, none);
	ck_assert_uint_eq(r.run(BUF), BUF);
}
END_TEST

// A short packet from the source ends the run with what arrived.
START_TEST(test_relay_short_packet)
{
	std::vector<std::byte> sink(1 << 20);
	MemcpyOptions o = testbm::memcpy_options(&source());
	o.packet_at[0] = 2;
	R r(MemcpyTransfer(o), sink_transfer(sink), 3, BUF);
	ck_assert_uint_eq(r.run(10 * BUF), BUF + BUF / 2);
	const auto want = cyclic(source(), 0, BUF + BUF / 2);
	ck_assert_bytes_eq(sink.data(), want.data(), want.size());
}
END_TEST

START_TEST(test_relay_destroy_after_error)
{
	const auto t0 = std::chrono::steady_clock::now();
	{
		std::vector<std::byte> sink(16 << 20);
		MemcpyOptions o;
		o.granule = 4;
		o.fail_at[0] = 2;
		o.rate_mbps = 10;
		R r(MemcpyTransfer(o), sink_transfer(sink), 8, BUF);
		ck_assert_int_eq(error_of([&] { r.run(100 * BUF); }), EIO);
	}
	ck_assert(testbm::seconds_since(t0) < 5.0);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_relay");
	TCase *tc = tcase_create("relay");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_relay_data);
	tcase_add_test(tc, test_relay_pattern_checker);
	tcase_add_test(tc, test_relay_overlaps);
	tcase_add_test(tc, test_relay_restarts_while_waiting);
	tcase_add_test(tc, test_relay_faults);
	tcase_add_test(tc, test_relay_small_runs);
	tcase_add_test(tc, test_relay_abort);
	tcase_add_test(tc, test_relay_short_packet);
	tcase_add_test(tc, test_relay_destroy_after_error);
	suite_add_tcase(s, tc);
	return s;
}
