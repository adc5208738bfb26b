// SPDX-License-Identifier: GPL-2.0
// The copy split over threads (bufmgr/copy_workers.hpp): CopyWorkers covers every element once
// and really runs slices at once; every algorithm moves the same bytes with 1 to 7 copy threads
// through every shipped transform; a reducing transform (an order-dependent hash) gives the
// one-thread result; errors in a worker's slice and abort() behave as with one thread.
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "test_bufmgr.hpp"

using namespace bufmgr;
using testbm::cyclic;
using testbm::error_of;
using testbm::random_bytes;

static constexpr std::size_t BUF = 256 << 10; // 4 slices of the minimum: the copy is split
static const std::vector<std::byte> &source()
{
	static const auto s = random_bytes(3 * BUF + 4092, 21);
	return s;
}

// Every element in exactly one slice, slices in index order, aligned, for many shapes.
START_TEST(test_slices_cover_once)
{
	for (std::size_t threads : {1, 2, 3, 4, 7}) {
		CopyWorkers w(threads);
		ck_assert_uint_eq(w.threads(), threads);
		for (std::size_t count : {0, 1, 63, 64, 65, 1000, 4096, 100003}) {
			for (std::size_t align : {1, 64}) {
				for (std::size_t min_slice : {1, 100, 5000}) {
					std::vector<std::atomic<int>> hit(count);
					const auto plan = w.plan(count, align, min_slice);
					std::vector<std::pair<std::size_t, std::size_t>> range(plan.slices);
					w.for_slices(count, align, min_slice, [&](std::size_t b, std::size_t e, std::size_t i) {
						ck_assert_uint_lt(i, plan.slices);
						range[i] = {b, e};
						for (std::size_t k = b; k < e; ++k)
							hit[k]++;
					});
					// the first element not run exactly once (one check per shape: a check
					// per element made this test take half a minute under TSan)
					std::size_t k = 0;
					while (k < count && hit[k] == 1)
						++k;
					ck_assert_msg(k == count, "threads %zu count %zu: element %zu run %d times",
						      threads, count, k, k < count ? hit[k].load() : 1);
					std::size_t at = 0;
					for (std::size_t i = 0; i < plan.slices; ++i) {
						ck_assert_uint_eq(range[i].first, at);
						ck_assert_uint_gt(range[i].second, range[i].first);
						if (i + 1 < plan.slices) {
							ck_assert_uint_eq(range[i].first % align, 0);
							ck_assert_uint_ge(range[i].second - range[i].first, min_slice);
						}
						at = range[i].second;
					}
					ck_assert_uint_eq(at, count);
					if (threads == 1)
						ck_assert_uint_le(plan.slices, 1);
				}
			}
		}
	}
}
END_TEST

// The slices really run at once: each waits until all threads have entered one.
START_TEST(test_slices_run_in_parallel)
{
	for (std::size_t threads : {2, 4}) {
		CopyWorkers w(threads);
		std::mutex m;
		std::set<std::thread::id> ids;
		std::atomic<std::size_t> inside{0};
		w.for_slices(1 << 20, 64, 1024, [&](std::size_t, std::size_t, std::size_t) {
			{
				std::lock_guard<std::mutex> lk(m);
				ids.insert(std::this_thread::get_id());
			}
			inside++;
			const auto t0 = std::chrono::steady_clock::now();
			while (inside.load() < threads && testbm::seconds_since(t0) < 10)
				std::this_thread::yield();
		});
		ck_assert_uint_eq(ids.size(), threads);
	}
}
END_TEST

// A throwing slice: the first exception reaches the caller after every slice has ended; the
// workers are then reusable. Destruction joins them (no hang).
START_TEST(test_slice_throws)
{
	CopyWorkers w(4);
	std::atomic<int> running{0}, finished{0};
	try {
		w.for_slices(1 << 16, 64, 64, [&](std::size_t b, std::size_t, std::size_t) {
			running++;
			if (b == 0)
				throw std::out_of_range("slice 0");
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			finished++;
			running--;
		});
		ck_abort_msg("no exception");
	} catch (const std::out_of_range &e) {
		ck_assert_str_eq(e.what(), "slice 0");
	}
	ck_assert_int_eq(running.load() - 1, 0); // nothing still running when it was rethrown
	std::atomic<std::size_t> total{0};
	w.for_slices(100000, 64, 64, [&](std::size_t b, std::size_t e, std::size_t) { total += e - b; });
	ck_assert_uint_eq(total.load(), 100000);
}
END_TEST

// The copy as a public function, with workers and without: the one-thread result.
START_TEST(test_transform_copy)
{
	const std::size_t n = (1 << 20) + 6;
	std::vector<std::int16_t> src(n);
	for (std::size_t k = 0; k < n; ++k)
		src[k] = static_cast<std::int16_t>(k * 40503u);
	std::vector<float> want(n), got(n);
	Int16ToFloat x(0.25f);
	detail::apply_transform(x, src.data(), want.data(), n);
	CopyWorkers w(3);
	transform_copy(&w, x, src.data(), got.data(), n);
	ck_assert_bytes_eq(got.data(), want.data(), 4 * n);
	std::fill(got.begin(), got.end(), 0.0f);
	transform_copy(nullptr, x, src.data(), got.data(), n);
	ck_assert_bytes_eq(got.data(), want.data(), 4 * n);
}
END_TEST

START_TEST(test_thread_counts)
{
	std::vector<std::byte> sink(BUF);
	DoubleBuffer<MemcpyTransfer> d(MemcpyTransfer(testbm::memcpy_options(&source(), &sink)), BUF);
	ck_assert_uint_eq(d.copy_threads(), default_copy_threads());
	ck_assert_uint_ge(default_copy_threads(), 1);
	ck_assert_uint_le(default_copy_threads(), 4);
	d.set_copy_threads(3);
	ck_assert_uint_eq(d.copy_threads(), 3);
	d.set_copy_threads(1);
	ck_assert_uint_eq(d.copy_threads(), 1);
	d.set_copy_threads(0);
	ck_assert_uint_eq(d.copy_threads(), default_copy_threads());
	d.set_copy_threads(1000);
	ck_assert_uint_eq(d.copy_threads(), CopyWorkers::max_threads);
}
END_TEST

// Read then write of n in_type elements through algo with t copy threads, checked against the
// transform applied by hand on one thread.
template <class Algo, class X>
static void round_trip(Algo &a, const X &x, std::size_t n, const std::vector<std::byte> &sink)
{
	using In = typename X::in_type;
	using Out = typename X::out_type;
	const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
	const auto raw = cyclic(source(), pos, n * sizeof(In));
	std::vector<Out> got(n), want(n);
	detail::apply_transform(x, reinterpret_cast<const In *>(raw.data()), want.data(), n);
	ck_assert_uint_eq(a.read(got.data(), n), n);
	ck_assert_bytes_eq(got.data(), want.data(), n * sizeof(Out));

	std::vector<In> src(n);
	std::memcpy(src.data(), raw.data(), n * sizeof(In));
	std::vector<Out> expect(n);
	detail::apply_transform(x, src.data(), expect.data(), n);
	const std::uint64_t wpos = a.transfer().bytes(Direction::h2c);
	a.write(src.data(), n);
	ck_assert_bytes_eq(sink.data() + wpos, expect.data(), n * sizeof(Out));
}

template <template <class, class> class Algo, class X>
static void all_thread_counts(const X &x)
{
	// An element count that is no multiple of anything the slices use (a multiple of 4: 1- and
	// 2-byte elements must make whole 4-byte granules).
	const std::size_t n = ((3 * BUF + 4092) / sizeof(typename X::in_type) - 2) & ~std::size_t{3};
	for (std::size_t t : {1, 2, 7}) {
		std::vector<std::byte> sink(16 * BUF);
		MemcpyTransfer tr(testbm::memcpy_options(&source(), &sink));
		std::unique_ptr<Algo<MemcpyTransfer, X>> a;
		if constexpr (std::is_same_v<Algo<MemcpyTransfer, X>, PooledBuffer<MemcpyTransfer, X>>)
			a = std::make_unique<Algo<MemcpyTransfer, X>>(std::move(tr), 3, BUF, x);
		else
			a = std::make_unique<Algo<MemcpyTransfer, X>>(std::move(tr), BUF, x);
		a->set_copy_threads(t);
		round_trip(*a, x, n, sink);
		round_trip(*a, x, n + 8, sink); // continues the stream at an odd position
	}
}

template <template <class, class> class Algo>
static void every_transform()
{
	all_thread_counts<Algo>(Identity<>());
	all_thread_counts<Algo>(ByteSwap32());
	all_thread_counts<Algo>(Int16ToFloat(1.0f / 32768));
	all_thread_counts<Algo>(FloatToInt16(1000.0f));
	all_thread_counts<Algo>(make_transform<std::uint16_t, std::uint32_t>([](std::uint16_t v) { return v * 3u; }));
}

START_TEST(test_chunk_threads) { every_transform<ChunkBuffer>(); }
END_TEST
START_TEST(test_double_threads) { every_transform<DoubleBuffer>(); }
END_TEST
START_TEST(test_pooled_threads) { every_transform<PooledBuffer>(); }
END_TEST

// An order-dependent hash over the data as it is copied: h = h * 31^n + hash(slice). Each
// slice hashes from 0 and remembers 31^n; combine() folds the slices in data order.
struct HashingCopy {
	using in_type = std::uint32_t;
	using out_type = std::uint32_t;
	struct partial_type {
		std::uint64_t hash = 0, scale = 1;
	};
	std::uint64_t hash = 0;
	std::uint64_t combined = 0; // how many partials were folded in
	void operator()(const std::uint32_t *src, std::uint32_t *dst, std::size_t n, partial_type &p) const
	{
		for (std::size_t k = 0; k < n; ++k) {
			dst[k] = src[k];
			p.hash = p.hash * 31 + src[k];
			p.scale *= 31;
		}
	}
	void combine(const partial_type &p)
	{
		hash = hash * p.scale + p.hash;
		++combined;
	}
};
static_assert(is_reducing_transform_v<HashingCopy> && is_transform_v<HashingCopy>);

static std::uint64_t hash_of(const std::uint32_t *v, std::size_t n, std::uint64_t h = 0)
{
	for (std::size_t k = 0; k < n; ++k)
		h = h * 31 + v[k];
	return h;
}

START_TEST(test_reducing_transform)
{
	const std::size_t n = (3 * BUF + 4092) / 4;
	for (std::size_t t : {1, 4}) {
		std::vector<std::byte> sink(8 * BUF);
		DoubleBuffer<MemcpyTransfer, HashingCopy> d(
			MemcpyTransfer(testbm::memcpy_options(&source(), &sink)), BUF);
		d.set_copy_threads(t);
		const auto raw = cyclic(source(), 0, n * 4);
		std::vector<std::uint32_t> v(n);
		ck_assert_uint_eq(d.read(v.data(), n), n);
		ck_assert_bytes_eq(v.data(), raw.data(), n * 4);
		ck_assert_uint_eq(d.transform().hash, hash_of(v.data(), n));
		if (t > 1) // several slices per DMA buffer were combined
			ck_assert_uint_gt(d.transform().combined, 4);
		// and on the way to the board, continuing the same hash
		d.write(v.data(), n);
		ck_assert_bytes_eq(sink.data(), raw.data(), n * 4);
		ck_assert_uint_eq(d.transform().hash, hash_of(v.data(), n, hash_of(v.data(), n)));
	}
}
END_TEST

// A transform with state of its own that cannot combine: always copied on one thread.
struct RunningDelta {
	using in_type = std::int32_t;
	using out_type = std::int32_t;
	static constexpr bool sequential = true;
	mutable std::int32_t last = 0;
	std::int32_t operator()(std::int32_t v) const { return last += v; }
};

START_TEST(test_sequential_transform)
{
	ck_assert(!is_splittable_v<RunningDelta>);
	ck_assert(is_splittable_v<Int16ToFloat>);
	std::vector<std::byte> sink(8 * BUF);
	DoubleBuffer<MemcpyTransfer, RunningDelta> d(MemcpyTransfer(testbm::memcpy_options(&source(), &sink)), BUF);
	ck_assert_uint_eq(d.copy_threads(), 1);
	const std::size_t n = 3 * BUF / 4;
	const auto raw = cyclic(source(), 0, n * 4);
	std::vector<std::int32_t> v(n);
	ck_assert_uint_eq(d.read(v.data(), n), n);
	std::int32_t acc = 0;
	for (std::size_t k = 0; k < n; ++k) {
		std::int32_t x;
		std::memcpy(&x, raw.data() + 4 * k, 4);
		acc = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc) + static_cast<std::uint32_t>(x));
		ck_assert_int_eq(v[k], acc);
	}
}
END_TEST

// A transform that throws in one slice (not the caller's): the exception reaches read() and
// write(), the object is reusable and moves correct data.
START_TEST(test_transform_throws_in_worker)
{
	std::atomic<int> armed{1};
	auto x = make_transform<std::uint32_t, std::uint32_t>([&armed](std::uint32_t v) {
		if (armed.load() && v == 0xdeadbeef)
			throw std::runtime_error("bad sample");
		return v;
	});
	std::vector<std::byte> src_bytes(BUF);
	for (std::size_t k = 0; k < BUF / 4; ++k) {
		const std::uint32_t v = k == BUF / 4 - 5 ? 0xdeadbeef : static_cast<std::uint32_t>(k);
		std::memcpy(src_bytes.data() + 4 * k, &v, 4);
	}
	std::vector<std::byte> sink(8 * BUF);
	DoubleBuffer<MemcpyTransfer, decltype(x)> d(MemcpyTransfer(testbm::memcpy_options(&src_bytes, &sink)),
						    BUF / 2, x);
	d.set_copy_threads(4);
	std::vector<std::uint32_t> v(BUF / 4);
	ck_assert_int_eq(error_of([&] { d.read(v.data(), v.size()); }), -1); // the transform's own
	std::vector<std::uint32_t> w(BUF / 4);
	std::memcpy(w.data(), src_bytes.data(), BUF);
	ck_assert_int_eq(error_of([&] { d.write(w.data(), w.size()); }), -1);
	armed = 0;
	const std::uint64_t pos = d.transfer().bytes(Direction::c2h);
	ck_assert_uint_eq(d.read(v.data(), v.size()), v.size());
	const auto want = cyclic(src_bytes, pos, BUF);
	ck_assert_bytes_eq(v.data(), want.data(), BUF);
}
END_TEST

// abort() from another thread while the copy threads are busy: ECANCELED, then correct data.
START_TEST(test_abort_while_copying_in_parallel)
{
	std::atomic<bool> go{false};
	std::atomic<std::uint64_t> calls{0};
	auto slow = make_transform<std::uint32_t, std::uint32_t>([&go, &calls](std::uint32_t v) {
		if (++calls % 50000 == 0) {
			go = true;
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		return v;
	});
	MemcpyOptions o;
	o.granule = 4;
	DoubleBuffer<MemcpyTransfer, decltype(slow)> a(MemcpyTransfer(o), BUF, slow);
	a.set_copy_threads(3);
	std::vector<std::uint32_t> v(16 * BUF / 4);
	std::thread t([&] {
		while (!go)
			std::this_thread::yield();
		a.abort();
	});
	ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), ECANCELED);
	t.join();
	const std::uint64_t pos = a.transfer().bytes(Direction::c2h);
	ck_assert_uint_eq(a.read(v.data(), BUF / 4), BUF / 4);
	const auto want = testbm::pattern_bytes(BUF, pos, 0);
	ck_assert_bytes_eq(v.data(), want.data(), BUF);
}
END_TEST

// The stream's read() and Filled::transform_into() copy on the copy threads too.
START_TEST(test_stream_threads)
{
	using Pool = PooledBuffer<MemcpyTransfer, Int16ToFloat>;
	Pool p(MemcpyTransfer(testbm::memcpy_options(&source())), 4, BUF, Int16ToFloat(0.5f));
	p.set_copy_threads(4);
	StreamOptions opt;
	opt.max_buffers = 8;
	std::vector<float> got(BUF / 2), want(BUF / 2);
	std::uint64_t seen = 0;
	p.stream([&](Pool::Filled &f) {
		ck_assert_uint_eq(f.transform_into(got.data()), BUF / 2);
		const auto raw = cyclic(source(), f.sequence() * BUF, BUF);
		detail::apply_transform(Int16ToFloat(0.5f), reinterpret_cast<const std::int16_t *>(raw.data()),
					want.data(), BUF / 2);
		ck_assert_bytes_eq(got.data(), want.data(), BUF * 2);
		++seen;
	}, opt);
	ck_assert_uint_eq(seen, 8);

	p.start_stream(opt);
	const std::size_t n = 3 * BUF / 2 + 6; // crosses buffers, leaves a remainder
	std::vector<float> r(n), e(n);
	ck_assert_uint_eq(p.read(r.data(), n), n);
	const auto raw = cyclic(source(), 8 * BUF, 2 * n);
	detail::apply_transform(Int16ToFloat(0.5f), reinterpret_cast<const std::int16_t *>(raw.data()), e.data(), n);
	ck_assert_bytes_eq(r.data(), e.data(), 4 * n);
	p.stop_stream();
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_parallel");
	TCase *tc = tcase_create("parallel");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_slices_cover_once);
	tcase_add_test(tc, test_slices_run_in_parallel);
	tcase_add_test(tc, test_slice_throws);
	tcase_add_test(tc, test_transform_copy);
	tcase_add_test(tc, test_thread_counts);
	tcase_add_test(tc, test_chunk_threads);
	tcase_add_test(tc, test_double_threads);
	tcase_add_test(tc, test_pooled_threads);
	tcase_add_test(tc, test_reducing_transform);
	tcase_add_test(tc, test_sequential_transform);
	tcase_add_test(tc, test_transform_throws_in_worker);
	tcase_add_test(tc, test_abort_while_copying_in_parallel);
	tcase_add_test(tc, test_stream_threads);
	suite_add_tcase(s, tc);
	return s;
}
