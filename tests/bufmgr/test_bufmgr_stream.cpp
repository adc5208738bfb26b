// SPDX-License-Identifier: GPL-2.0
// PooledBuffer's streaming API over the memcpy Transfer: order and data of every buffer,
// Filled handles, read() from a running stream, backpressure and overrun counting, stop and
// destruction while streaming (also with a transfer that never completes), errors mid-stream,
// next_for()'s timeout against the end of the stream.
#include <atomic>
#include <thread>

#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::error_of;
using testbm::pattern_bytes;
using Pool = PooledBuffer<MemcpyTransfer>;

static constexpr std::size_t BUF = 4096;

static MemcpyOptions options(std::uint32_t seed = 0x10)
{
	MemcpyOptions o;
	o.granule = 4;
	o.pattern_seed = seed;
	return o;
}

// The buffer's data is the pattern at stream offset sequence * bytes per buffer.
static void check_filled(const Pool::Filled &f, std::size_t len, std::uint32_t seed = 0x10)
{
	ck_assert(static_cast<bool>(f));
	ck_assert_uint_eq(f.bytes(), len);
	const auto want = pattern_bytes(len, f.sequence() * len, seed);
	ck_assert_bytes_eq(f.data(), want.data(), len);
}

START_TEST(test_callback_order_and_data)
{
	Pool p(MemcpyTransfer(options()), 4, BUF);
	StreamOptions so;
	so.max_buffers = 300;
	std::uint64_t expect = 0;
	const StreamStats st = p.stream([&](Pool::Filled &f) {
		ck_assert_uint_eq(f.sequence(), expect);
		++expect;
		check_filled(f, BUF);
	}, so);
	ck_assert_uint_eq(expect, 300);
	ck_assert_uint_eq(st.buffers, 300);
	ck_assert_uint_eq(st.bytes, 300 * BUF);
	ck_assert_uint_eq(st.overruns, 0);
	ck_assert(!p.streaming());
}
END_TEST

START_TEST(test_callback_ends_stream)
{
	Pool p(MemcpyTransfer(options()), 3, BUF);
	int calls = 0;
	p.stream([&](Pool::Filled &f) {
		check_filled(f, BUF);
		return ++calls < 10;
	});
	ck_assert_int_eq(calls, 10);
	// the object is reusable: a one-shot read right after (the stream position moved on)
	std::vector<std::byte> v(3 * BUF);
	ck_assert_uint_eq(p.read(v.data(), v.size()), v.size());
}
END_TEST

// Holding several buffers, releasing them out of order, smaller bytes_per_buffer.
START_TEST(test_filled_handles)
{
	Pool p(MemcpyTransfer(options()), 5, BUF);
	StreamOptions so;
	so.bytes_per_buffer = 1024;
	p.start_stream(so);
	std::vector<Pool::Filled> held;
	for (int k = 0; k < 4; ++k) {
		held.push_back(p.next());
		check_filled(held.back(), 1024);
		ck_assert_uint_eq(held.back().sequence(), k);
	}
	held[2].release();
	held[0].release();
	for (int k = 4; k < 40; ++k) {
		Pool::Filled f = p.next();
		check_filled(f, 1024);
		ck_assert_uint_eq(f.sequence(), k);
	}
	check_filled(held[1], 1024); // still intact while held
	check_filled(held[3], 1024);
	ck_assert_int_eq(error_of([&] { p.start_stream(); }), EBUSY); // running, and handles held
	held.clear();
	p.stop_stream();
	ck_assert(!p.streaming());
}
END_TEST

START_TEST(test_deadlock_detected)
{
	Pool p(MemcpyTransfer(options()), 2, BUF);
	p.start_stream();
	Pool::Filled a = p.next(), b = p.next();
	ck_assert_int_eq(error_of([&] { p.next(); }), EDEADLK);
	b.release();
	Pool::Filled c = p.next();
	ck_assert_uint_eq(c.sequence(), 2);
	a.release();
	c.release();
	ck_assert_int_eq(error_of([&] {
		std::uint8_t x[4];
		p.write(reinterpret_cast<const std::byte *>(x), 4);
	}), EBUSY);
	p.stop_stream();
	ck_assert_int_eq(error_of([&] { p.next(); }), EINVAL); // no stream
}
END_TEST

// Small reads from a running stream, through a transform, reassemble the continuous stream.
START_TEST(test_read_from_stream)
{
	PooledBuffer<MemcpyTransfer, ByteSwap32> p(MemcpyTransfer(options(0)), 4, 1024);
	p.start_stream();
	std::vector<std::uint32_t> all;
	const std::size_t steps[] = {1, 7, 255, 256, 257, 3, 1000, 2};
	for (int round = 0; round < 20; ++round)
		for (std::size_t n : steps) {
			std::vector<std::uint32_t> v(n);
			ck_assert_uint_eq(p.read(v.data(), n), n);
			all.insert(all.end(), v.begin(), v.end());
		}
	for (std::size_t k = 0; k < all.size(); ++k)
		ck_assert_msg(all[k] == __builtin_bswap32(static_cast<std::uint32_t>(k)), "word %zu", k);
	p.stop_stream();
	ck_assert_uint_eq(p.stats().overruns, 0);
}
END_TEST

// A stream with max_buffers ends by itself: read() returns what there was.
START_TEST(test_read_until_end)
{
	Pool p(MemcpyTransfer(options(0)), 3, 1024);
	StreamOptions so;
	so.max_buffers = 5;
	p.start_stream(so);
	std::vector<std::byte> v(100000);
	ck_assert_uint_eq(p.read(v.data(), v.size()), 5 * 1024);
	const auto want = pattern_bytes(5 * 1024, 0, 0);
	ck_assert_bytes_eq(v.data(), want.data(), want.size());
	ck_assert(!p.next());
	p.stop_stream();
}
END_TEST

// Overflow::block: a slow consumer throttles the transfer; nothing is lost.
START_TEST(test_backpressure)
{
	Pool p(MemcpyTransfer(options()), 3, BUF);
	StreamOptions so;
	so.max_buffers = 40;
	std::uint64_t expect = 0;
	const StreamStats st = p.stream([&](Pool::Filled &f) {
		ck_assert_uint_eq(f.sequence(), expect++);
		check_filled(f, BUF);
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}, so);
	ck_assert_uint_eq(st.buffers, 40);
	ck_assert_uint_eq(st.overruns, 0);
	ck_assert_uint_gt(st.backpressure, 0);
}
END_TEST

// Overflow::drop: a slow consumer makes overruns; every delivered buffer is intact and at the
// right stream position; delivered + dropped = filled.
START_TEST(test_overrun_counting)
{
	Pool p(MemcpyTransfer(options()), 3, BUF);
	StreamOptions so;
	so.max_buffers = 400;
	so.overflow = Overflow::drop;
	std::uint64_t last = 0, gaps = 0;
	bool first = true;
	const StreamStats st = p.stream([&](Pool::Filled &f) {
		if (!first) {
			ck_assert_uint_gt(f.sequence(), last);
			gaps += f.sequence() - last - 1;
		}
		first = false;
		last = f.sequence();
		check_filled(f, BUF);
		std::this_thread::sleep_for(std::chrono::microseconds(500));
	}, so);
	ck_assert_uint_gt(st.overruns, 0);
	ck_assert_uint_eq(st.buffers + st.overruns, 400);
	ck_assert_uint_eq(st.dropped_bytes, st.overruns * BUF);
	ck_assert_uint_eq(gaps + (400 - 1 - last), st.overruns); // gaps in sequence = overruns
}
END_TEST

// Overflow::drop drops exactly when the transfer would otherwise have nothing to fill. With
// K = 4, a consumer that takes nothing yet and a source that stalls on its 6th transfer: buffers
// 0, 1, 2 are delivered, buffer 3 finds the engine idle and is refilled twice (sequence 3 and 4
// dropped), the refill after that stalls. Deterministic, no timing involved.
START_TEST(test_drop_semantics)
{
	MemcpyOptions o = options();
	o.stall_at[0] = 6;
	Pool p(MemcpyTransfer(o), 4, BUF);
	p.start_stream(StreamOptions{Overflow::drop, 0, 0});
	const auto t0 = std::chrono::steady_clock::now();
	while (p.stats().overruns < 2 && testbm::seconds_since(t0) < 10)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::this_thread::sleep_for(std::chrono::milliseconds(20)); // nothing more may happen
	ck_assert_uint_eq(p.stats().overruns, 2);
	ck_assert_uint_eq(p.stats().dropped_bytes, 2 * BUF);
	for (std::uint64_t k = 0; k < 3; ++k) {
		Pool::Filled f = p.next();
		ck_assert_uint_eq(f.sequence(), k);
		check_filled(f, BUF);
	}
	p.request_stop();
	ck_assert(!p.next());
	p.stop_stream();
	ck_assert_uint_eq(p.stats().buffers, 3);
}
END_TEST

// request_stop() from another thread while the consumer blocks in next() on a transfer that
// never completes: next() returns the end, nothing hangs.
START_TEST(test_request_stop_other_thread)
{
	MemcpyOptions o = options();
	o.stall_at[0] = 3;
	Pool p(MemcpyTransfer(o), 4, BUF);
	p.start_stream();
	ck_assert_uint_eq(p.next().sequence(), 0);
	ck_assert_uint_eq(p.next().sequence(), 1);
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		p.request_stop();
	});
	const auto t0 = std::chrono::steady_clock::now();
	Pool::Filled f = p.next(); // blocks: buffer 2 stalls
	ck_assert(!f);
	ck_assert(testbm::seconds_since(t0) < 5.0);
	t.join();
	p.stop_stream();
	// usable again, data from where the source is now
	std::vector<std::byte> v(2 * BUF);
	ck_assert_uint_eq(p.read(v.data(), v.size()), v.size());
}
END_TEST

// Destruction while streaming: (a) the transfer never completes, (b) the consumer is behind
// (backpressure, engine asleep), (c) buffers in flight at full speed.
START_TEST(test_destroy_while_streaming)
{
	const auto t0 = std::chrono::steady_clock::now();
	{
		MemcpyOptions o = options();
		o.stall_at[0] = 2;
		Pool p(MemcpyTransfer(o), 4, BUF);
		p.start_stream();
		Pool::Filled f = p.next();
		check_filled(f, BUF);
	}
	{
		Pool p(MemcpyTransfer(options()), 4, BUF);
		p.start_stream();
		std::this_thread::sleep_for(std::chrono::milliseconds(20)); // all 4 filled, engine waits
	}
	{
		MemcpyOptions o = options();
		o.rate_mbps = 50;
		Pool p(MemcpyTransfer(o), 8, BUF);
		p.start_stream(StreamOptions{Overflow::drop, 0, 0});
		for (int k = 0; k < 3; ++k)
			p.next();
	}
	ck_assert(testbm::seconds_since(t0) < 5.0);
}
END_TEST

// An error mid-stream reaches the consumer once, after the buffers filled before it; the
// object is reusable after stop_stream().
START_TEST(test_error_mid_stream)
{
	MemcpyOptions o = options();
	o.fail_at[0] = 6;
	o.fail_errno = EIO;
	Pool p(MemcpyTransfer(o), 3, BUF);
	p.start_stream();
	for (int k = 0; k < 5; ++k) {
		Pool::Filled f = p.next();
		ck_assert_uint_eq(f.sequence(), k);
		check_filled(f, BUF);
	}
	ck_assert_int_eq(error_of([&] { p.next(); }), EIO);
	ck_assert(!p.next()); // reported once; then the end
	p.stop_stream();
	// restart: a fresh stream, data from the source's current position
	const std::uint64_t pos = p.transfer().bytes(Direction::c2h);
	p.start_stream();
	Pool::Filled f = p.next();
	ck_assert_uint_eq(f.sequence(), 0);
	const auto want = pattern_bytes(BUF, pos, 0x10);
	ck_assert_bytes_eq(f.data(), want.data(), BUF);
	f.release();
	p.stop_stream();
}
END_TEST

// An exception thrown by the callback stops the stream and reaches the caller.
START_TEST(test_callback_throws)
{
	Pool p(MemcpyTransfer(options()), 4, BUF);
	int calls = 0;
	ck_assert_int_eq(error_of([&] {
		p.stream([&](Pool::Filled &) {
			if (++calls == 7)
				throw Error(ENOTRECOVERABLE, "consumer gave up");
		});
	}), ENOTRECOVERABLE);
	ck_assert(!p.streaming());
	ck_assert_int_eq(calls, 7);
}
END_TEST

// abort() (any thread) fails a running stream with ECANCELED.
START_TEST(test_abort_stream)
{
	MemcpyOptions o = options();
	o.stall_at[0] = 4;
	Pool p(MemcpyTransfer(o), 4, BUF);
	p.start_stream();
	for (int k = 0; k < 3; ++k)
		p.next();
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		p.abort();
	});
	ck_assert_int_eq(error_of([&] { p.next(); }), ECANCELED);
	t.join();
	p.stop_stream();
}
END_TEST

// next_for(): times out (stream running on) while the link is slow, delivers the buffers in
// order and intact, and tells the end of the stream apart from a timeout.
START_TEST(test_next_for)
{
	MemcpyOptions o = options();
	o.rate_mbps = 0.5; // 4 KiB per ~8 ms
	Pool p(MemcpyTransfer(o), 3, BUF);
	StreamOptions so;
	so.max_buffers = 3;
	p.start_stream(so);
	bool timed_out = false;
	Pool::Filled f = p.next_for(std::chrono::microseconds(100), &timed_out);
	ck_assert(!f);
	ck_assert(timed_out);
	for (std::uint64_t k = 0; k < 3; ++k) {
		do
			f = p.next_for(std::chrono::milliseconds(2), &timed_out);
		while (!f && timed_out);
		ck_assert_uint_eq(f.sequence(), k);
		check_filled(f, BUF);
		f.release();
	}
	f = p.next_for(std::chrono::seconds(5), &timed_out);
	ck_assert(!f);
	ck_assert(!timed_out); // the end, not a timeout
	p.stop_stream();
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_stream");
	TCase *tc = tcase_create("stream");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_callback_order_and_data);
	tcase_add_test(tc, test_callback_ends_stream);
	tcase_add_test(tc, test_filled_handles);
	tcase_add_test(tc, test_deadlock_detected);
	tcase_add_test(tc, test_read_from_stream);
	tcase_add_test(tc, test_read_until_end);
	tcase_add_test(tc, test_backpressure);
	tcase_add_test(tc, test_overrun_counting);
	tcase_add_test(tc, test_drop_semantics);
	tcase_add_test(tc, test_request_stop_other_thread);
	tcase_add_test(tc, test_destroy_while_streaming);
	tcase_add_test(tc, test_error_mid_stream);
	tcase_add_test(tc, test_callback_throws);
	tcase_add_test(tc, test_abort_stream);
	tcase_add_test(tc, test_next_for);
	suite_add_tcase(s, tc);
	return s;
}
