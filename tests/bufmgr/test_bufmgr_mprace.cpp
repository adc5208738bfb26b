// SPDX-License-Identifier: GPL-2.0
// bufmgr over libmprace on the virtual board: the engine's pattern generator through every
// algorithm, kernel and user memory, with and without transforms (byte for byte against the
// counter pattern); the checker and the loopback for H2C; streaming; the board's own fault
// injection (emu:buserr=, emu:stall=) mid-transfer, abort, shutdown; Relay with the board on
// either side (the CUDA stage's data path without a GPU).
#include <thread>
#include <type_traits>

#include "test_bufmgr.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "mprace/mprace.hpp"

using namespace bufmgr;
using testbm::error_of;
using testbm::pattern_bytes;
using testbm::random_bytes;

static constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// A board, its engine, test routing set; the pattern generator starts at `seed`.
struct Rig {
	mprace::Board board;
	mprace::DMAEngine engine;
	explicit Rig(const char *name, std::uint32_t seed = 0x1000,
		     mprace::C2HSource src = mprace::C2HSource::Pattern,
		     mprace::H2CSink sink = mprace::H2CSink::Checker)
		: board(name), engine(board, engine_options())
	{
		board.setTestRouting(src, sink);
		board.setPatternSeed(seed);
		board.resetChecker(seed);
	}
	static mprace::EngineOptions engine_options()
	{
		mprace::EngineOptions o;
		o.ringEntries = 64;
		o.waitTimeout = std::chrono::milliseconds(60000);
		return o;
	}
	MpraceTransfer transfer(MemoryKind k = MemoryKind::kernel) { return MpraceTransfer(board, engine, k); }
};

// One MemoryKind for the stack: the two libraries' names denote the same type, so both
// namespaces can be used at once (they collided before), and libmprace's old spellings still
// compile (deprecated) as the same values.
static_assert(std::is_same_v<mprace::MemoryKind, bufmgr::MemoryKind>, "one MemoryKind");
namespace both_namespaces {
using namespace mprace;
using namespace bufmgr;
[[maybe_unused]] constexpr MemoryKind kUser = MemoryKind::user;
} // namespace both_namespaces
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(mprace::MemoryKind::Kernel == mprace::MemoryKind::kernel &&
	      mprace::MemoryKind::User == bufmgr::MemoryKind::user, "old spellings");
#pragma GCC diagnostic pop

static MemoryKind kind_of(int i) { return i % 2 ? MemoryKind::user : MemoryKind::kernel; }

// The pattern, byte for byte, across reads of awkward sizes (the generator's stream goes on).
template <class Algo>
static void check_pattern_reads(Algo &a, std::uint32_t seed)
{
	std::uint64_t pos = 0;
	for (std::size_t n : {std::size_t{4}, 64 * KiB - 4, 64 * KiB, 3 * 64 * KiB + 12, 4 * MiB + 4,
			      std::size_t{0}, 20 * 64 * KiB + 8}) {
		std::vector<std::byte> v(n);
		ck_assert_uint_eq(a.read(v.data(), n), n);
		const auto want = pattern_bytes(n, pos, seed);
		ck_assert_bytes_eq(v.data(), want.data(), n);
		pos += n;
	}
}

START_TEST(test_c2h_pattern)
{
	const MemoryKind k = kind_of(_i);
	{
		Rig r("emu:link=ideal", 0x1000);
		ChunkBuffer<MpraceTransfer> a(r.transfer(k), 64 * KiB);
		check_pattern_reads(a, 0x1000);
	}
	{
		Rig r("emu:link=ideal", 0xfffff000u);
		DoubleBuffer<MpraceTransfer> a(r.transfer(k), 64 * KiB);
		check_pattern_reads(a, 0xfffff000u);
	}
	{
		Rig r("emu:link=gen3x8", 7);
		PooledBuffer<MpraceTransfer> a(r.transfer(k), 6, 64 * KiB);
		check_pattern_reads(a, 7);
	}
}
END_TEST

// Transforms on the engine's data, against the transform applied to the known pattern.
START_TEST(test_c2h_transforms)
{
	const MemoryKind k = kind_of(_i);
	const std::size_t n = (5 * 64 * KiB + 8) / 4;
	{
		Rig r("emu:link=ideal", 0x01020304u);
		DoubleBuffer<MpraceTransfer, ByteSwap32> a(r.transfer(k), 64 * KiB);
		std::vector<std::uint32_t> v(n);
		ck_assert_uint_eq(a.read(v.data(), n), n);
		for (std::size_t i = 0; i < n; ++i)
			ck_assert_msg(v[i] == __builtin_bswap32(0x01020304u + static_cast<std::uint32_t>(i)), "word %zu", i);
	}
	{
		Rig r("emu:link=ideal", 0x7ff0fff0u);
		PooledBuffer<MpraceTransfer, Int16ToFloat> a(r.transfer(k), 4, 64 * KiB, Int16ToFloat(0.5f));
		std::vector<float> v(2 * n);
		ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
		for (std::size_t i = 0; i < n; ++i) {
			const std::uint32_t w = 0x7ff0fff0u + static_cast<std::uint32_t>(i);
			ck_assert(v[2 * i] == 0.5f * static_cast<std::int16_t>(w & 0xffff));
			ck_assert(v[2 * i + 1] == 0.5f * static_cast<std::int16_t>(w >> 16));
		}
	}
	{
		Rig r("emu:link=ideal", 99);
		auto x = make_transform<std::uint32_t, std::uint64_t>([](std::uint32_t w) { return std::uint64_t{w} * w; });
		ChunkBuffer<MpraceTransfer, decltype(x)> a(r.transfer(k), 64 * KiB, x);
		std::vector<std::uint64_t> v(n);
		ck_assert_uint_eq(a.read(v.data(), n), n);
		for (std::size_t i = 0; i < n; ++i) {
			const std::uint64_t w = 99 + i;
			ck_assert(v[i] == w * w);
		}
	}
}
END_TEST

// H2C into the engine's checker: the pattern arrives intact (words counted, no error); one
// wrong word is seen as exactly one error.
START_TEST(test_h2c_checker)
{
	const MemoryKind k = kind_of(_i);
	const std::size_t n = (7 * 64 * KiB + 4) / 4;
	std::vector<std::uint32_t> w(n);
	Rig r("emu:link=gen3x8", 0x2000);
	{
		DoubleBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(k), 64 * KiB);
		for (std::size_t i = 0; i < n; ++i)
			w[i] = 0x2000 + static_cast<std::uint32_t>(i);
		a.write(w.data(), n);
		mprace::CheckerCounts c = r.board.checker();
		ck_assert_uint_eq(c.words, n);
		ck_assert_uint_eq(c.errors, 0);
	}
	{
		// byte-swapped data swapped back in the copy loop; one word wrong
		PooledBuffer<MpraceTransfer, ByteSwap32> a(r.transfer(k), 5, 64 * KiB);
		for (std::size_t i = 0; i < n; ++i)
			w[i] = __builtin_bswap32(0x2000 + static_cast<std::uint32_t>(n + i));
		w[n / 2] ^= 1;
		a.write(w.data(), n);
		mprace::CheckerCounts c = r.board.checker();
		ck_assert_uint_eq(c.words, 2 * n);
		ck_assert_uint_eq(c.errors, 1);
	}
	{
		ChunkBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(k), 64 * KiB);
		r.board.resetChecker(5);
		for (std::size_t i = 0; i < n; ++i)
			w[i] = 5 + static_cast<std::uint32_t>(i);
		a.write(w.data(), n);
		ck_assert_uint_eq(r.board.checker().words, n);
		ck_assert_uint_eq(r.board.checker().errors, 0);
	}
}
END_TEST

// Loopback: random data written H2C comes back C2H byte for byte; both directions run at once
// (two buffer managers on the two channels of one engine).
START_TEST(test_loopback)
{
	const MemoryKind k = kind_of(_i);
	Rig r("emu:link=gen3x8,fifo=64K", 0, mprace::C2HSource::Loopback, mprace::H2CSink::Loopback);
	DoubleBuffer<MpraceTransfer> w(r.transfer(k), 32 * KiB);
	PooledBuffer<MpraceTransfer> rd(r.transfer(k), 4, 16 * KiB);
	const auto src = random_bytes(3 * MiB + 20, 5);
	std::vector<std::byte> got(src.size());
	int werr = 0;
	std::thread t([&] { werr = error_of([&] { w.write(src.data(), src.size()); }); });
	ck_assert_uint_eq(rd.read(got.data(), got.size()), got.size());
	t.join();
	ck_assert_int_eq(werr, 0);
	ck_assert_bytes_eq(got.data(), src.data(), src.size());
}
END_TEST

// Streaming the pattern generator: each buffer is the pattern at sequence * bytes.
START_TEST(test_stream_pattern)
{
	const MemoryKind k = kind_of(_i);
	Rig r("emu:link=gen3x8", 0x55);
	PooledBuffer<MpraceTransfer> p(r.transfer(k), 6, 64 * KiB);
	StreamOptions so;
	so.max_buffers = 200;
	so.bytes_per_buffer = 32 * KiB;
	std::uint64_t expect = 0;
	const StreamStats st = p.stream([&](PooledBuffer<MpraceTransfer>::Filled &f) {
		ck_assert_uint_eq(f.sequence(), expect++);
		const auto want = pattern_bytes(32 * KiB, f.sequence() * 32 * KiB, 0x55);
		ck_assert_bytes_eq(f.data(), want.data(), 32 * KiB);
	}, so);
	ck_assert_uint_eq(st.buffers, 200);
	ck_assert_uint_eq(st.overruns, 0);
}
END_TEST

// A bus error injected by the board mid-transfer (descriptor N of the channel, counted from 0):
// the engine's errno (EIO) reaches the caller; the same object then reads the pattern again.
template <class Algo>
static void buserr_read(Algo &a, Rig &r)
{
	std::vector<std::uint32_t> v(10 * 16 * KiB / 4);
	const int err = error_of([&] { a.read(v.data(), v.size()); });
	ck_assert_int_eq(err, EIO);
	// The generator's position is somewhere past the failure: restart it and read again.
	r.board.setPatternSeed(0x777);
	ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
	for (std::size_t i = 0; i < v.size(); ++i)
		ck_assert_msg(v[i] == 0x777 + static_cast<std::uint32_t>(i), "word %zu", i);
}

START_TEST(test_buserr_c2h)
{
	{
		Rig r("emu:link=ideal,buserr=c2h:0");
		ChunkBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(), 16 * KiB);
		buserr_read(a, r);
	}
	{
		Rig r("emu:link=ideal,buserr=c2h:3");
		DoubleBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(), 16 * KiB);
		buserr_read(a, r);
	}
	{
		Rig r("emu:link=gen3x8,buserr=c2h:5");
		PooledBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(), 4, 16 * KiB);
		buserr_read(a, r);
	}
}
END_TEST

START_TEST(test_buserr_h2c)
{
	Rig r("emu:link=gen3x8,buserr=h2c:2", 0);
	PooledBuffer<MpraceTransfer, Identity<std::uint32_t>> a(r.transfer(), 4, 16 * KiB);
	std::vector<std::uint32_t> w(10 * 16 * KiB / 4);
	ck_assert_int_eq(error_of([&] { a.write(w.data(), w.size()); }), EIO);
	r.board.resetChecker(0x99);
	for (std::size_t i = 0; i < w.size(); ++i)
		w[i] = 0x99 + static_cast<std::uint32_t>(i);
	a.write(w.data(), w.size());
	ck_assert_uint_eq(r.board.checker().words, w.size());
	ck_assert_uint_eq(r.board.checker().errors, 0);
}
END_TEST

START_TEST(test_buserr_stream)
{
	Rig r("emu:link=gen3x8,buserr=c2h:4", 0x10);
	PooledBuffer<MpraceTransfer> p(r.transfer(), 3, 16 * KiB);
	p.start_stream();
	for (int k = 0; k < 4; ++k) {
		auto f = p.next();
		ck_assert_uint_eq(f.sequence(), k);
		const auto want = pattern_bytes(16 * KiB, k * 16 * KiB, 0x10);
		ck_assert_bytes_eq(f.data(), want.data(), 16 * KiB);
	}
	ck_assert_int_eq(error_of([&] { p.next(); }), EIO);
	p.stop_stream();
	r.board.setPatternSeed(0);
	p.start_stream();
	auto f = p.next();
	const auto want = pattern_bytes(16 * KiB, 0, 0);
	ck_assert_bytes_eq(f.data(), want.data(), 16 * KiB);
	f.release();
}
END_TEST

// The board stalls (a descriptor never completes): abort() from another thread ends the read
// with ECANCELED; destroying a stream stuck on the stall returns promptly.
START_TEST(test_stall_abort_and_shutdown)
{
	{
		Rig r("emu:link=ideal,stall=c2h:2");
		DoubleBuffer<MpraceTransfer> a(r.transfer(), 16 * KiB);
		std::vector<std::byte> v(10 * 16 * KiB);
		std::thread t([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			a.abort();
		});
		const auto t0 = std::chrono::steady_clock::now();
		ck_assert_int_eq(error_of([&] { a.read(v.data(), v.size()); }), ECANCELED);
		ck_assert(testbm::seconds_since(t0) < 10);
		t.join();
		r.board.setPatternSeed(3);
		ck_assert_uint_eq(a.read(v.data(), v.size()), v.size());
		const auto want = pattern_bytes(v.size(), 0, 3);
		ck_assert_bytes_eq(v.data(), want.data(), v.size());
	}
	const auto t0 = std::chrono::steady_clock::now();
	{
		Rig r("emu:link=gen3x8,stall=c2h:3");
		PooledBuffer<MpraceTransfer> p(r.transfer(MemoryKind::user), 4, 16 * KiB);
		p.start_stream();
		for (int k = 0; k < 3; ++k)
			p.next();
	} // destroyed while the engine thread waits on the stalled descriptor
	{
		Rig r("emu:link=gen3x8");
		PooledBuffer<MpraceTransfer> p(r.transfer(), 8, 64 * KiB);
		p.start_stream(StreamOptions{Overflow::drop, 0, 0});
		p.next();
	} // destroyed at full speed with buffers in flight
	ck_assert(testbm::seconds_since(t0) < 10);
}
END_TEST

// abort() on one buffer manager cancels its own transfers only: another one on the same
// engine and channel keeps its data (before, an idle DoubleBuffer's abort() cancelled it).
START_TEST(test_abort_is_scoped)
{
	Rig r("emu:link=gen1x1");   // ~200 MB/s: 4 MiB take ~20 ms
	DoubleBuffer<MpraceTransfer> idle(r.transfer(), 16 * KiB);
	MpraceTransfer busy = r.transfer();
	busy.allocate(1, 4 * MiB);
	busy.start(Direction::c2h, 0, 4 * MiB);
	idle.abort();
	ck_assert_uint_eq(busy.wait(Direction::c2h, 0), 4 * MiB);
	const auto want = pattern_bytes(4 * MiB, 0, 0x1000);
	ck_assert_bytes_eq(busy.view(0).data, want.data(), 4 * MiB);
	// and its own transfers it does cancel
	busy.start(Direction::c2h, 0, 4 * MiB);
	busy.abort(Direction::c2h);
	ck_assert_int_eq(error_of([&] { busy.wait(Direction::c2h, 0); }), ECANCELED);
}
END_TEST

// Relay with the board on either side (user-memory buffers shared with a memcpy endpoint):
// FPGA -> host -> sink and source -> host -> FPGA, no CPU copy.
START_TEST(test_relay_board)
{
	{
		Rig r("emu:link=gen3x8", 0xabc);
		MemcpyOptions o;
		o.granule = 4;
		o.check_seed = 0xabc;
		Relay<MpraceTransfer, MemcpyTransfer> rl(r.transfer(MemoryKind::user), MemcpyTransfer(o), 4, 256 * KiB);
		ck_assert_uint_eq(rl.run(32 * MiB + 4), 32 * MiB + 4);
		ck_assert_uint_eq(rl.sink().check_bytes(), 32 * MiB + 4);
		ck_assert_uint_eq(rl.sink().check_mismatches(), 0);
		ck_assert(rl.sink().view(0).data == rl.source().view(0).data);
		ck_assert(rl.source().view(0).kind == MemoryKind::user);
	}
	{
		Rig r("emu:link=gen3x8", 0);
		r.board.resetChecker(0x4242);
		MemcpyOptions o;
		o.granule = 4;
		o.pattern_seed = 0x4242;
		Relay<MemcpyTransfer, MpraceTransfer> rl(MemcpyTransfer(o), r.transfer(MemoryKind::user), 4, 256 * KiB);
		ck_assert_uint_eq(rl.run(16 * MiB), 16 * MiB);
		ck_assert_uint_eq(r.board.checker().words, 4 * MiB);
		ck_assert_uint_eq(r.board.checker().errors, 0);
	}
	{
		// a bus error on the board side: EIO; the relay then moves the restarted pattern
		Rig r("emu:link=ideal,buserr=c2h:5", 0);
		std::vector<std::byte> sink(8 * MiB);
		MemcpyOptions o;
		o.granule = 4;
		o.sink = sink.data();
		o.sink_size = sink.size();
		Relay<MpraceTransfer, MemcpyTransfer> rl(r.transfer(MemoryKind::user), MemcpyTransfer(o), 4, 64 * KiB);
		ck_assert_int_eq(error_of([&] { rl.run(4 * MiB); }), EIO);
		const std::uint64_t pos = rl.sink().bytes(Direction::h2c);
		r.board.setPatternSeed(0x31);
		ck_assert_uint_eq(rl.run(MiB), MiB);
		const auto want = pattern_bytes(MiB, 0, 0x31);
		ck_assert_bytes_eq(sink.data() + pos, want.data(), MiB);
	}
}
END_TEST

// The CUDA stage's memory rule, without CUDA: the board's buffers report their kind, so the
// GPU stage can refuse kernel memory (tests/gpu checks the refusal itself).
START_TEST(test_memory_kinds)
{
	Rig r("emu:link=ideal");
	MpraceTransfer k = r.transfer(MemoryKind::kernel), u = r.transfer(MemoryKind::user);
	k.allocate(2, 64 * KiB);
	u.allocate(2, 64 * KiB);
	ck_assert(k.view(1).kind == MemoryKind::kernel && k.dma_buffer(1).isKernelMemory());
	ck_assert(u.view(1).kind == MemoryKind::user && u.dma_buffer(1).isUserMemory());
	ck_assert_uint_eq(reinterpret_cast<std::uintptr_t>(u.view(0).data) % page_size(), 0);
	ck_assert_int_eq(error_of([&] { r.transfer(MemoryKind::pinned); }), EINVAL);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("bufmgr_mprace");
	TCase *tc = tcase_create("emu");
	tcase_set_timeout(tc, 120);
	// loop index: even = kernel memory, odd = user memory
	tcase_add_loop_test(tc, test_c2h_pattern, 0, 2);
	tcase_add_loop_test(tc, test_c2h_transforms, 0, 2);
	tcase_add_loop_test(tc, test_h2c_checker, 0, 2);
	tcase_add_loop_test(tc, test_loopback, 0, 2);
	tcase_add_loop_test(tc, test_stream_pattern, 0, 2);
	tcase_add_test(tc, test_buserr_c2h);
	tcase_add_test(tc, test_buserr_h2c);
	tcase_add_test(tc, test_buserr_stream);
	tcase_add_test(tc, test_stall_abort_and_shutdown);
	tcase_add_test(tc, test_relay_board);
	tcase_add_test(tc, test_abort_is_scoped);
	tcase_add_test(tc, test_memory_kinds);
	suite_add_tcase(s, tc);
	return s;
}
