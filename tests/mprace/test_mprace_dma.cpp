// SPDX-License-Identifier: GPL-2.0
// libmprace data movement on the virtual board, checked word for word: C2H against the
// pattern generator, H2C against the checker, H2C -> C2H through the loopback; kernel memory
// and scattered user memory; sizes from one granule to 256 MiB around the page and descriptor
// limits at odd aligned offsets; both channels at once; thousands of queued transfers through
// a small ring. Loop tests run once polling (_i = 0) and once with interrupts (_i = 1).
#include <atomic>
#include <cstdlib>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "test_mprace.hpp"

using namespace mptest;

namespace {

Completion modeOf(int i) { return i ? Completion::Interrupt : Completion::Polling; }

struct Rig {
	Rig(const std::string &name, const EngineOptions &o) : board(name), eng(board, o) {}
	Board board;
	DMAEngine eng;
};

const std::uint64_t kSizes[] = {
	4, 8, 12, 60, 4092, 4096, 4100, 8196, 65532, 1 * MiB, 16 * MiB - 4, 16 * MiB,
	16 * MiB + 4, 48 * MiB + 12,
};
const std::uint64_t kOffsets[] = {0, 4, 12, 4092, 4096 + 8};
// The largest size the size tests move (all of kSizes in the plain build, check_main.h).
const std::uint64_t kMaxSize = TEST_SANITIZED ? 16 * MiB + 4 : ~0ull;

// C2H of [off, off + len) from the pattern generator; the words around stay untouched.
void c2hChecked(Rig &r, DMABuffer &buf, std::uint64_t off, std::uint64_t len, std::uint32_t seed)
{
	auto *p = static_cast<char *>(buf.data());
	const std::uint32_t guard = 0xeeeeeeee;
	if (off >= 4)
		std::memcpy(p + off - 4, &guard, 4);
	if (off + len + 4 <= buf.size())
		std::memcpy(p + off + len, &guard, 4);
	r.board.setPatternSeed(seed);
	ck_assert_uint_eq(r.eng.read(buf, off, len), len);
	buf.syncForCpu();
	char what[96];
	std::snprintf(what, sizeof(what), "C2H %" PRIu64 " bytes at offset %" PRIu64, len, off);
	assertPattern(p + off, len, seed, what);
	std::uint32_t w;
	if (off >= 4) {
		std::memcpy(&w, p + off - 4, 4);
		ck_assert_msg(w == guard, "%s: the word before was overwritten", what);
	}
	if (off + len + 4 <= buf.size()) {
		std::memcpy(&w, p + off + len, 4);
		ck_assert_msg(w == guard, "%s: the word after was overwritten", what);
	}
}

// H2C of [off, off + len) holding the pattern; the checker must count every word, no error.
void h2cChecked(Rig &r, DMABuffer &buf, std::uint64_t off, std::uint64_t len, std::uint32_t seed)
{
	fillPattern(static_cast<char *>(buf.data()) + off, len, seed);
	buf.syncForDevice();
	r.board.resetChecker(seed);
	ck_assert_uint_eq(r.eng.write(buf, off, len), len);
	CheckerCounts c = r.board.checker();
	ck_assert_msg(c.words == len / 4 && c.errors == 0,
		      "H2C %" PRIu64 " bytes at offset %" PRIu64 ": checker saw %u words, %u errors",
		      len, off, c.words, c.errors);
}

} // namespace

START_TEST(test_c2h_sizes_kernel_memory)
{
	Rig r("emu:link=ideal", options(modeOf(_i), 64));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 48 * MiB + 16 * KiB);
	std::uint32_t seed = 0x1000;
	for (std::uint64_t len : kSizes)
		for (std::uint64_t off : kOffsets)
			if (off + len <= buf.size() && len <= kMaxSize)
				c2hChecked(r, buf, off, len, seed += 0x777);
}
END_TEST

START_TEST(test_h2c_sizes_kernel_memory)
{
	Rig r("emu:link=ideal", options(modeOf(_i), 64));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 48 * MiB + 16 * KiB);
	std::uint32_t seed = 0xfffff000; // wraps around 2^32 on the way
	for (std::uint64_t len : kSizes)
		for (std::uint64_t off : kOffsets)
			if (off + len <= buf.size() && len <= kMaxSize)
				h2cChecked(r, buf, off, len, seed += 0x333);
	// The checker notices a wrong word: the comparison is real.
	fillPattern(buf.data(), 4096, 9);
	static_cast<std::uint32_t *>(buf.data())[100] ^= 1;
	r.board.resetChecker(9);
	r.eng.write(buf, 0, 4096);
	CheckerCounts c = r.board.checker();
	ck_assert_uint_eq(c.words, 1024);
	ck_assert_uint_eq(c.errors, 1);
}
END_TEST

// User memory scattered page by page (sg=random), starting mid-page, through a ring smaller
// than the number of segments: transfers are written into the ring in pieces.
START_TEST(test_user_memory_fragmented)
{
	Rig r("emu:link=ideal,sg=random", options(modeOf(_i), 16));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	Anon mem(40 * MiB + 8 * KiB);
	DMABuffer buf(r.board, mem.data() + 0x10, 40 * MiB + 4 * KiB);
	ck_assert_uint_gt(buf.segments().size(), 100); // really fragmented
	std::uint32_t seed = 77;
	for (std::uint64_t len : kSizes)
		for (std::uint64_t off : kOffsets)
			if (off + len <= buf.size() && len <= kMaxSize) {
				c2hChecked(r, buf, off, len, seed += 0x101);
				h2cChecked(r, buf, off, len, seed += 0x101);
			}
	// A whole-page-per-segment layout too.
	Rig p("emu:link=ideal,sg=pages", options(modeOf(_i), 8));
	p.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	Anon mem2(2 * MiB);
	DMABuffer pages(p.board, mem2.data() + 4092, 2 * MiB - 4096);
	ck_assert_uint_ge(pages.segments().size(), 511);
	c2hChecked(p, pages, 0, pages.size(), 5);
	c2hChecked(p, pages, 8, 64 * KiB + 4, 6);
	h2cChecked(p, pages, 0, pages.size(), 7);
}
END_TEST

// 256 MiB in one transfer each way: kernel memory (16 descriptors) and user memory. Under a
// sanitizer 64 MiB (4 descriptors, the same shape; check_main.h).
START_TEST(test_256mib)
{
	const std::uint64_t big = TEST_SANITIZED ? 64 * MiB : 256 * MiB;
	Rig r("emu:link=ideal", options(Completion::Polling, 1024));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	{
		DMABuffer k(r.board, big);
		c2hChecked(r, k, 0, big, 0xabcdef00);
		h2cChecked(r, k, 0, big, 0x11);
	}
	Anon mem(big + 8 * KiB);
	DMABuffer u(r.board, mem.data() + 4, big + 4 * KiB);
	c2hChecked(r, u, 4, big, 3);
	h2cChecked(r, u, 0, big + 4 * KiB, 4);
}
END_TEST

// H2C -> loopback FIFO -> C2H: arbitrary data must arrive unchanged. Transfers larger than
// the FIFO only move when both channels run at once.
START_TEST(test_loopback)
{
	Rig r("emu:link=ideal,fifo=64K", options(modeOf(_i), 32));
	r.board.setTestRouting(C2HSource::Loopback, H2CSink::Loopback);
	std::mt19937 rng(7);
	DMABuffer src(r.board, 8 * MiB);
	Anon dmem(8 * MiB);
	DMABuffer dst(r.board, dmem.data(), 8 * MiB, PD_DMA_FROM_DEVICE);
	auto *s = static_cast<std::uint32_t *>(src.data());
	for (std::size_t i = 0; i < src.size() / 4; i++)
		s[i] = rng();
	for (std::uint64_t len : {std::uint64_t(4), std::uint64_t(4096), std::uint64_t(65532),
				  std::uint64_t(MiB), std::uint64_t(8 * MiB - 12)}) {
		std::memset(dst.data(), 0, dst.size());
		std::uint64_t soff = (len == 8 * MiB - 12) ? 12 : 4096;
		if (soff + len > src.size())
			soff = 0;
		Transfer in = r.eng.readAsync(dst, 0, len);
		Transfer out = r.eng.writeAsync(src, soff, len);
		ck_assert_uint_eq(out.get(), len);
		ck_assert_uint_eq(in.get(), len);
		dst.syncForCpu();
		ck_assert_msg(std::memcmp(dst.data(), static_cast<char *>(src.data()) + soff, len) == 0,
			      "loopback of %" PRIu64 " bytes corrupted the data", len);
	}
	// Many small transfers each way, in a different split on each side.
	Transfer ins[64], outs[16];
	for (int i = 0; i < 64; i++)
		ins[i] = r.eng.readAsync(dst, i * 16 * KiB, 16 * KiB);
	for (int i = 0; i < 16; i++)
		outs[i] = r.eng.writeAsync(src, i * 64 * KiB, 64 * KiB);
	for (auto &t : outs)
		t.get();
	for (auto &t : ins)
		t.get();
	ck_assert(std::memcmp(dst.data(), src.data(), MiB) == 0);
}
END_TEST

// C2H and H2C from two threads at the same time, each checking its data.
START_TEST(test_both_channels_concurrently)
{
	const char *name = _i == 2 ? "emu:link=ideal,msi=1" : "emu:link=ideal";
	Rig r(name, options(modeOf(_i != 0), 16));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	const std::uint64_t len = 256 * KiB;
	const int rounds = 200;
	DMABuffer cbuf(r.board, 4 * MiB);
	Anon hmem(len);
	DMABuffer hbuf(r.board, hmem.data(), len, PD_DMA_TO_DEVICE);
	fillPattern(hbuf.data(), len, 0);
	r.board.setPatternSeed(1000);
	r.board.resetChecker(0);
	std::atomic<int> c2h_bad{-1};
	std::thread c2h([&] {
		for (int k = 0; k < rounds; k++) {
			std::uint64_t off = (k % 16) * len;
			r.eng.read(cbuf, off, len);
			std::uint32_t seed = 1000 + static_cast<std::uint32_t>(k * (len / 4));
			if (patternMismatch(static_cast<char *>(cbuf.data()) + off, len, seed) != SIZE_MAX) {
				c2h_bad = k;
				return;
			}
		}
	});
	std::thread h2c([&] {
		// The checker expects one continuous stream: every round sends the next words.
		for (int k = 0; k < rounds; k++) {
			fillPattern(hbuf.data(), len, static_cast<std::uint32_t>(k * (len / 4)));
			r.eng.write(hbuf, 0, len);
		}
	});
	c2h.join();
	h2c.join();
	ck_assert_msg(c2h_bad.load() < 0, "C2H round %d had wrong data", c2h_bad.load());
	CheckerCounts c = r.board.checker();
	ck_assert_uint_eq(c.words, rounds * (len / 4));
	ck_assert_uint_eq(c.errors, 0);
}
END_TEST

// Thousands of transfers through an 8-slot ring: they queue in software and complete in order.
START_TEST(test_many_outstanding)
{
	Rig r("emu:link=ideal", options(modeOf(_i), 8));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	const int n = 5000;
	DMABuffer buf(r.board, n * 4 * KiB);
	std::memset(buf.data(), 0, buf.size());
	r.board.setPatternSeed(42);
	std::vector<Transfer> ts;
	ts.reserve(n);
	for (int i = 0; i < n; i++)
		ts.push_back(r.eng.readAsync(buf, i * 4 * KiB, 4 * KiB));
	ck_assert_uint_gt(r.eng.outstanding(Channel::C2H), 0);
	for (int i = n - 1; i >= 0; i--) // in reverse: order of waiting must not matter
		ck_assert_uint_eq(ts[i].get(), 4 * KiB);
	ck_assert_uint_eq(r.eng.outstanding(Channel::C2H), 0);
	ck_assert_uint_eq(buf.activeTransfers(), 0);
	assertPattern(buf.data(), buf.size(), 42, "5000 queued C2H transfers");

	// A batch: one submit call, one doorbell, 4096 requests.
	std::vector<Request> reqs(4096);
	for (std::size_t i = 0; i < reqs.size(); i++)
		reqs[i] = Request{&buf, i * 4 * KiB, 4 * KiB, 0};
	fillPattern(buf.data(), 4096 * 4 * KiB, 5);
	r.board.resetChecker(5);
	std::vector<Transfer> hs(reqs.size());
	r.eng.submit(Channel::H2C, reqs.data(), reqs.size(), hs.data());
	for (auto &h : hs)
		ck_assert(h.wait(std::chrono::seconds(60)));
	CheckerCounts c = r.board.checker();
	ck_assert_uint_eq(c.words, 4096 * 1024);
	ck_assert_uint_eq(c.errors, 0);

	// Fire and forget: handles released at once; the transfers still complete.
	for (int i = 0; i < 100; i++)
		r.eng.readAsync(buf, i * 4 * KiB, 4 * KiB).release();
	for (int k = 0; k < 10000 && r.eng.outstanding(Channel::C2H); k++) {
		r.eng.poll(Channel::C2H);
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	ck_assert_uint_eq(r.eng.outstanding(Channel::C2H), 0);
}
END_TEST

// Several threads submit to and wait on the same channel.
START_TEST(test_threads_share_a_channel)
{
	Rig r("emu:link=ideal", options(modeOf(_i), 8));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	const int threads = 4, per = 300;
	DMABuffer buf(r.board, threads * per * 4 * KiB);
	std::atomic<int> bad{0};
	std::vector<std::thread> ts;
	for (int t = 0; t < threads; t++)
		ts.emplace_back([&, t] {
			std::vector<Transfer> mine;
			for (int i = 0; i < per; i++) {
				mine.push_back(r.eng.readAsync(buf, (t * per + i) * 4 * KiB, 4 * KiB));
				if (i % 7 == 0)
					mine[i / 2].wait(std::chrono::seconds(30));
			}
			for (auto &h : mine)
				if (h.get() != 4 * KiB)
					bad++;
		});
	for (auto &t : ts)
		t.join();
	ck_assert_int_eq(bad.load(), 0);
	// Each 4 KiB transfer is a contiguous run of the stream.
	auto *w = static_cast<std::uint32_t *>(buf.data());
	for (std::size_t k = 0; k < buf.size() / (4 * KiB); k++)
		ck_assert_msg(patternMismatch(w + k * 1024, 4 * KiB, w[k * 1024]) == SIZE_MAX,
			      "transfer %zu is not a contiguous part of the stream", k);
}
END_TEST

// done(), poll(), result() and wait() with a timeout on a slow transfer.
START_TEST(test_async_handles)
{
	Rig r("emu:link=ideal", options(modeOf(_i), 64));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 1 * MiB);
	r.board.setPatternRate(10); // 10 MB/s: 1 MiB takes ~100 ms
	r.board.setPatternSeed(0);
	Transfer t = r.eng.readAsync(buf, 0, 1 * MiB);
	ck_assert(t.valid());
	ck_assert(t.channel() == Channel::C2H);
	ck_assert_uint_eq(t.length(), 1 * MiB);
	ck_assert(!t.done());
	ck_assert(!t.wait(std::chrono::milliseconds(5)));
	TransferResult res = t.result();
	ck_assert(!res.done);
	ck_assert(t.wait(std::chrono::microseconds::max())); // forever, without overflow
	ck_assert(t.done());
	res = t.result();
	ck_assert(res.done);
	ck_assert_int_eq(res.error, 0);
	ck_assert_uint_eq(res.bytes, 1 * MiB);
	ck_assert_uint_eq(t.get(), 1 * MiB);
	assertPattern(buf.data(), 1 * MiB, 0, "rate-limited C2H");
	Transfer moved(std::move(t));
	ck_assert(!t.valid());
	ck_assert(moved.valid());
	ck_assert(!moved.abort()); // already finished
	r.board.setPatternRate(0);
	ck_assert_uint_eq(r.eng.poll(Channel::C2H), 0);
}
END_TEST

// A user stream that ends packets: a C2H descriptor ends early with EOP, and the transfer
// reports the bytes received.
START_TEST(test_end_of_packet)
{
	Rig r("emu:link=ideal,user=pkt:1000", options(modeOf(_i), 64));
	r.board.setTestRouting(C2HSource::User, H2CSink::User);
	DMABuffer buf(r.board, 64 * KiB);
	Transfer t = r.eng.readAsync(buf, 0, 4096);
	ck_assert_uint_eq(t.get(), 1000);
	TransferResult res = t.result();
	ck_assert(res.endOfPacket);
	ck_assert_uint_eq(res.bytes, 1000);
	// H2C with EOP is accepted (tlast to the user stream).
	ck_assert_uint_eq(r.eng.write(buf, 0, 4096, DMAEngine::EndOfPacket), 4096);
}
END_TEST


// Aborting one transfer spares the one in flight before it: that one continues where the
// abort stopped it, so its data is the stream without a gap (C2H) and the sink sees no byte
// twice (H2C). Without it, the innocent descriptor was done again from its start.
START_TEST(test_abort_spares_the_transfer_in_flight)
{
	Rig r("emu:link=gen1x1", options(modeOf(_i), 64));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 16 * MiB);
	const std::uint64_t big = 8 * MiB;
	for (Channel ch : {Channel::C2H, Channel::H2C}) {
		r.board.setPatternSeed(7);
		r.board.resetChecker(7);
		std::memset(buf.data(), 0, buf.size());
		if (ch == Channel::H2C)
			fillPattern(buf.data(), big, 7);
		buf.syncForDevice();
		Transfer a = ch == Channel::C2H ? r.eng.readAsync(buf, 0, big)
						: r.eng.writeAsync(buf, 0, big);
		Transfer b = ch == Channel::C2H ? r.eng.readAsync(buf, big, 4096)
						: r.eng.writeAsync(buf, big, 4096);
		// gen1x1 carries 8 MiB in ~40 ms: abort b while a is part-way
		std::this_thread::sleep_for(std::chrono::milliseconds(12));
		ck_assert_msg(!a.done(), "the first transfer finished too soon to test anything");
		ck_assert(b.abort());
		ck_assert_uint_eq(a.get(), big);
		ck_assert_errno(b.get(), ECANCELED);
		if (ch == Channel::C2H) {
			buf.syncForCpu();
			assertPattern(buf.data(), big, 7, "C2H in flight during the abort");
		} else {
			CheckerCounts c = r.board.checker();
			ck_assert_msg(c.words == big / 4 && c.errors == 0,
				      "H2C in flight during the abort: checker %u words %u errors", c.words,
				      c.errors);
		}
	}
}
END_TEST

// Random rounds, as a user's own program would do them: kernel and scattered user memory,
// random sizes (one granule to 20 MiB) and aligned offsets, single and batched submits, both
// channels at once, bus errors injected at random descriptors, random aborts. Rounds without
// a failure are checked word for word; after a failure the next round starts a fresh stream.
START_TEST(test_random_rounds)
{
	// MPRACE_RANDOM_SEED=n repeats the test with other rounds (for stress runs by hand).
	const char *env = std::getenv("MPRACE_RANDOM_SEED");
	std::mt19937_64 rng((env ? std::strtoull(env, nullptr, 0) : 1234) + _i);
	std::string name = "emu:link=ideal,sg=random,buserr=c2h:" + std::to_string(5 + rng() % 40) +
			   ",buserr=h2c:" + std::to_string(5 + rng() % 40);
	Rig r(name, options(modeOf(_i), 1u << (1 + rng() % 6)));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer kc(r.board, 64 * MiB), kh(r.board, 64 * MiB);
	Anon mc(64 * MiB + 4096), mh(64 * MiB + 4096);
	DMABuffer uc(r.board, mc.data() + 4 * (rng() % 1024), 64 * MiB);
	DMABuffer uh(r.board, mh.data() + 4 * (rng() % 1024), 64 * MiB);
	auto len = [&]() -> std::uint64_t {
		switch (rng() % 4) {
		case 0: return 4 * (1 + rng() % 64);
		case 1: return 4 * (1 + rng() % 4096);
		case 2: return 4 * (1 + rng() % (1 << 18));
		default: return 16 * MiB - 8 + 4 * (rng() % 5) + (rng() % 2) * 4 * MiB;
		}
	};
	int failures = 0, aborts = 0;
	std::uint32_t cseed = 0, hseed = 0;
	const int rounds = TEST_SANITIZED ? 12 : 40; // check_main.h
	for (int round = 0; round < rounds; round++) {
		DMABuffer &cb = rng() % 2 ? kc : uc;
		DMABuffer &hb = rng() % 2 ? kh : uh;
		// C2H: n transfers into consecutive regions with random gaps; they consume the stream
		// in submission order.
		struct Piece { std::uint64_t off, len; };
		std::vector<Piece> cp, hp;
		for (std::uint64_t off = 4 * (rng() % 64); cp.size() < 1 + rng() % 12;) {
			std::uint64_t l = len();
			if (off + l > cb.size())
				break;
			cp.push_back({off, l});
			off += l + 4 * (rng() % 3);
		}
		for (std::uint64_t off = 4 * (rng() % 64); hp.size() < 1 + rng() % 12;) {
			std::uint64_t l = len();
			if (off + l > hb.size())
				break;
			hp.push_back({off, l});
			off += l;
		}
		cseed = static_cast<std::uint32_t>(rng());
		hseed = static_cast<std::uint32_t>(rng());
		r.board.setPatternSeed(cseed);
		r.board.resetChecker(hseed);
		std::uint32_t w = hseed;
		for (const Piece &p : hp) {
			fillPattern(static_cast<char *>(hb.data()) + p.off, p.len, w);
			w += static_cast<std::uint32_t>(p.len / 4);
		}
		hb.syncForDevice();
		std::vector<Transfer> ct(cp.size()), ht(hp.size());
		std::thread h2c([&] {
			if (rng() % 2) {
				std::vector<Request> reqs;
				for (const Piece &p : hp)
					reqs.push_back(Request{&hb, p.off, p.len, 0});
				r.eng.submit(Channel::H2C, reqs.data(), reqs.size(), ht.data());
			} else {
				for (std::size_t i = 0; i < hp.size(); i++)
					ht[i] = r.eng.writeAsync(hb, hp[i].off, hp[i].len);
			}
		});
		for (std::size_t i = 0; i < cp.size(); i++)
			ct[i] = r.eng.readAsync(cb, cp[i].off, cp[i].len);
		h2c.join();
		bool abort_round = rng() % 8 == 0;
		if (abort_round) {
			aborts++;
			ct[rng() % ct.size()].abort();
			ht[rng() % ht.size()].abort();
		}
		bool c_ok = true, h_ok = true;
		std::uint64_t hbytes = 0;
		for (std::size_t i = 0; i < ct.size(); i++) {
			try {
				ck_assert_uint_eq(ct[i].get(), cp[i].len);
			} catch (const DMAError &e) {
				ck_assert_msg(e.code().value() == EIO || e.code().value() == ECANCELED,
					      "round %d C2H: %s", round, e.what());
				ck_assert(abort_round || e.code().value() == EIO);
				c_ok = false;
			}
		}
		for (std::size_t i = 0; i < ht.size(); i++) {
			try {
				ck_assert_uint_eq(ht[i].get(), hp[i].len);
				hbytes += hp[i].len;
			} catch (const DMAError &e) {
				ck_assert_msg(e.code().value() == EIO || e.code().value() == ECANCELED,
					      "round %d H2C: %s", round, e.what());
				ck_assert(abort_round || e.code().value() == EIO);
				h_ok = false;
			}
		}
		ck_assert_uint_eq(cb.activeTransfers(), 0);
		ck_assert_uint_eq(hb.activeTransfers(), 0);
		failures += !c_ok + !h_ok;
		if (c_ok) {
			cb.syncForCpu();
			std::uint32_t s = cseed;
			for (const Piece &p : cp) {
				char what[64];
				std::snprintf(what, sizeof(what), "round %d C2H piece", round);
				assertPattern(static_cast<char *>(cb.data()) + p.off, p.len, s, what);
				s += static_cast<std::uint32_t>(p.len / 4);
			}
		}
		if (h_ok) {
			CheckerCounts c = r.board.checker();
			ck_assert_msg(c.words == hbytes / 4 && c.errors == 0,
				      "round %d H2C: checker %u words %u errors, expected %" PRIu64, round,
				      c.words, c.errors, hbytes / 4);
		}
	}
	// Both injected bus errors must have hit some round.
	ck_assert_int_ge(failures, 2);
	(void)aborts;
}
END_TEST

// DMAEngine::lend and ChannelLease: every misuse refused with its errno, the lease usable
// after the engine is gone (nothing touched), a lent H2C channel driven by hand through the
// loopback, and the channel back in the engine's hands afterwards.
START_TEST(test_channel_lease)
{
	Board b("emu:");
	DMABuffer kbuf(b, 64 * KiB);
	ChannelLease l;
	ChannelLease none;
	ck_assert(!none.valid());
	ck_assert_errno(none.ring(), EINVAL);
	ck_assert_errno(none.doorbell(), EINVAL);
	ck_assert_errno(none.ringDoorbell(1), EINVAL);
	none.giveBack(); // nothing to give back: no-op
	{
		std::optional<DMAEngine> eng;
		eng.emplace(b);
		DMAEngine &e = *eng;
		ck_assert_errno(e.lend(static_cast<Channel>(2)), EINVAL);
		// outstanding transfers: EBUSY, nothing changed
		b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
		b.setPatternRate(1);
		Transfer slow = e.readAsync(kbuf, 0, 64 * KiB);
		ck_assert_errno(e.lend(Channel::C2H), EBUSY);
		ck_assert(slow.abort());
		b.setPatternRate(0);
		l = e.lend(Channel::C2H);
		ck_assert(l.valid() && l.channel() == Channel::C2H && !l.bar0IsDeviceMemory());
		ck_assert_errno(e.lend(Channel::C2H), EBUSY);
		ck_assert_errno(e.readAsync(kbuf, 0, 4096), EBUSY);
		ck_assert_errno(e.read(kbuf, 0, 4096), EBUSY);
		ck_assert_errno(e.submitRaw(Channel::C2H, kbuf.busAddress(), 4096), EBUSY);
		ck_assert_errno(e.abort(Channel::C2H), EBUSY);
		Request req{&kbuf, 0, 4096, 0};
		Transfer h;
		ck_assert_errno(e.submit(Channel::C2H, &req, 1, &h), EBUSY);
		ck_assert(!h.valid());
		// the other channel lends too, and runs by hand: H2C -> loopback -> lent C2H
		ChannelLease h2c = e.lend(Channel::H2C);
		ck_assert(h2c.doorbell() != l.doorbell());
		ChannelLease moved(std::move(h2c));
		ck_assert(!h2c.valid() && moved.valid());
		b.setTestRouting(C2HSource::Loopback, H2CSink::Loopback);
		fillPattern(kbuf.data(), 16 * KiB, 99);
		std::memset(static_cast<char *>(kbuf.data()) + 32 * KiB, 0, 16 * KiB);
		kbuf.syncForDevice();
		l.ring().at(0).set(kbuf.busAddress(32 * KiB), 16 * KiB, 0, 0);
		l.ringDoorbell(1);
		moved.ring().at(0).set(kbuf.busAddress(0), 16 * KiB, 0, 0);
		moved.ringDoorbell(1);
		// two channels, two records: the C2H one may show before the H2C one (no order between them)
		for (int i = 0; i < 100000 && !(l.ring().at(0).record().done() &&
						moved.ring().at(0).record().done()); ++i)
			std::this_thread::sleep_for(std::chrono::microseconds(50));
		ck_assert(moved.ring().at(0).record().done() && l.ring().at(0).record().done());
		ck_assert_uint_eq(l.ring().at(0).record().bytes, 16 * KiB);
		kbuf.syncForCpu();
		assertPattern(static_cast<char *>(kbuf.data()) + 32 * KiB, 16 * KiB, 99, "loopback");
		moved = ChannelLease(); // move-assigning gives the old lease back
		ck_assert(!moved.valid());
		fillPattern(kbuf.data(), 4096, 5);
		kbuf.syncForDevice();
		b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
		b.resetChecker(5);
		ck_assert_uint_eq(e.write(kbuf, 0, 4096), 4096);
		l.giveBack();
		l.giveBack(); // idempotent
		ck_assert(!l.valid());
		// the borrower's slots are cleared: no stale record or cookie for the engine's users
		// (a ResidentReceiver after an InitiatedReader waited for cookies that never came)
		const DMADescriptorList &ring = e.ring(Channel::C2H);
		for (std::uint32_t i = 0; i < ring.size(); ++i)
			ck_assert_msg(ring[i].cookie() == 0 && ring[i].length() == 0 && ring[i].address() == 0 &&
					      !ring[i].record().done(),
				      "slot %u of the given-back ring is not clear", i);
		b.setPatternSeed(7);
		ck_assert_uint_eq(e.read(kbuf, 0, 4096), 4096);
		kbuf.syncForCpu();
		assertPattern(kbuf.data(), 4096, 7, "after giveBack");
		l = e.lend(Channel::C2H);
		// the engine goes first: the lease stays valid and giving it back touches nothing
		eng.reset();
		eng.emplace(b);
		ck_assert_errno(eng->read(kbuf, 0, 4096), 0); // a new engine owns both channels
		l.giveBack();
		ck_assert_errno(eng->read(kbuf, 0, 4096), 0);
		// a closed board takes no doorbells; giving the lease back afterwards is harmless
		l = eng->lend(Channel::C2H);
	}
	b.close();
	ck_assert_errno(l.ringDoorbell(1), ENODEV);
	ck_assert_errno(l.doorbell(), ENODEV);
	l.giveBack();
	ck_assert(!l.valid());
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("mprace_dma");
	TCase *tc = tcase_create("sizes");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_c2h_sizes_kernel_memory, 0, 2);
	tcase_add_loop_test(tc, test_h2c_sizes_kernel_memory, 0, 2);
	tcase_add_loop_test(tc, test_user_memory_fragmented, 0, 2);
	tcase_add_test(tc, test_256mib);
	suite_add_tcase(s, tc);
	tc = tcase_create("streams");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_loopback, 0, 2);
	tcase_add_loop_test(tc, test_both_channels_concurrently, 0, 3);
	tcase_add_loop_test(tc, test_many_outstanding, 0, 2);
	tcase_add_loop_test(tc, test_threads_share_a_channel, 0, 2);
	tcase_add_loop_test(tc, test_async_handles, 0, 2);
	tcase_add_loop_test(tc, test_end_of_packet, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_random_rounds, 0, 2);
	tcase_add_loop_test(tc, test_abort_spares_the_transfer_in_flight, 0, 2);
	tcase_add_test(tc, test_channel_lease);
	suite_add_tcase(s, tc);
	return s;
}
