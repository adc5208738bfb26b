// SPDX-License-Identifier: GPL-2.0
// libmprace when things go wrong, on the virtual board: engine and software timeouts, injected
// bus errors and stalls, addresses the driver never handed out, hand-made invalid descriptors,
// abort, buffers destroyed or boards closed under running transfers, dropped interrupts. After
// every failure the same engine must move correct data again. Loop tests: _i = 0 polling,
// _i = 1 interrupts.
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

// The engine works after whatever happened: fresh data both ways, checked.
void assertUsable(Rig &r, DMABuffer &buf, const char *after)
{
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	r.board.setPatternSeed(0x5150);
	std::memset(buf.data(), 0, 8 * KiB);
	ck_assert_uint_eq(r.eng.read(buf, 0, 8 * KiB), 8 * KiB);
	assertPattern(buf.data(), 8 * KiB, 0x5150, after);
	fillPattern(buf.data(), 8 * KiB, 0x77);
	r.board.resetChecker(0x77);
	ck_assert_uint_eq(r.eng.write(buf, 0, 8 * KiB), 8 * KiB);
	CheckerCounts c = r.board.checker();
	ck_assert_msg(c.words == 2048 && c.errors == 0, "%s: checker %u words %u errors", after,
		      c.words, c.errors);
	ck_assert_uint_eq(r.eng.outstanding(Channel::C2H), 0);
	ck_assert_uint_eq(r.eng.outstanding(Channel::H2C), 0);
}

EngineOptions quick(int i, std::uint32_t ring = 64, int wait_ms = 300)
{
	EngineOptions o = options(modeOf(i), ring);
	o.waitTimeout = std::chrono::milliseconds(wait_ms);
	return o;
}

} // namespace

// TIMEOUT_US: C2H from the user stream, which sends nothing here.
START_TEST(test_engine_timeout)
{
	EngineOptions o = quick(_i);
	o.stallTimeoutUs = 2000;
	Rig r("emu:link=ideal,user=none", o);
	DMABuffer buf(r.board, 64 * KiB);
	r.board.setTestRouting(C2HSource::User, H2CSink::Checker);
	DMAError e = dmaErrorOf([&] { r.eng.read(buf, 0, 4096); });
	ck_assert_int_eq(e.code().value(), ETIMEDOUT);
	ck_assert_uint_eq(e.engineError(), MP_ERR_TIMEOUT);
	ck_assert(e.channel() == Channel::C2H);
	// Queued behind a stalled one: each times out in turn, none hangs.
	Transfer a = r.eng.readAsync(buf, 0, 4096), b = r.eng.readAsync(buf, 4096, 4096);
	ck_assert_int_eq(dmaErrorOf([&] { a.get(); }).code().value(), ETIMEDOUT);
	ck_assert_int_eq(dmaErrorOf([&] { b.get(); }).code().value(), ETIMEDOUT);
	assertUsable(r, buf, "after engine timeouts");
}
END_TEST

// The board drops off the link mid-run (linkdown=): registers read all-ones. Every transfer
// fails with ENODEV long before the wait timeout, and nothing new is accepted.
START_TEST(test_link_down)
{
	Rig r("emu:link=ideal,linkdown=c2h:1", quick(_i, 64, 20000));
	DMABuffer buf(r.board, 64 * KiB);
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	ck_assert_uint_eq(r.eng.read(buf, 0, 4096), 4096);
	auto t0 = std::chrono::steady_clock::now();
	Transfer a = r.eng.readAsync(buf, 0, 4096), b = r.eng.readAsync(buf, 4096, 4096);
	DMAError e = dmaErrorOf([&] { a.get(); });
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
	ck_assert_int_eq(e.code().value(), ENODEV);
	ck_assert_msg(std::string(e.what()).find("all-ones") != std::string::npos, "%s", e.what());
	ck_assert_msg(ms.count() < 5000, "took %lld ms", static_cast<long long>(ms.count()));
	ck_assert_int_eq(dmaErrorOf([&] { b.get(); }).code().value(), ENODEV);
	ck_assert_errno(r.eng.writeAsync(buf, 0, 4096), ENODEV);
	ck_assert_errno(r.eng.read(buf, 0, 4096), ENODEV);
}
END_TEST

namespace {
long long msSince(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
		.count();
}
} // namespace

// After the board dropped off the link, every control call answers ENODEV at once, or tears
// down at once, instead of polling registers that read all-ones until a timeout (before: 2 s
// for setTestRouting and abort, 9 s for reset, which then reported success, 4 s to destroy
// an engine, 4-8 s to create one, which succeeded; identify() returned MAGIC 0xffffffff).
START_TEST(test_link_down_control_calls)
{
	auto board = std::make_unique<Board>("emu:link=ideal,linkdown=c2h:1");
	auto eng = std::make_unique<DMAEngine>(*board, quick(_i, 64, 20000));
	DMABuffer buf(*board, 64 * KiB);
	board->setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	ck_assert_uint_eq(eng->read(buf, 0, 4096), 4096);
	Transfer a = eng->readAsync(buf, 0, 4096); // its descriptor takes the link down
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	auto t0 = std::chrono::steady_clock::now();
	ck_assert_errno(a.abort(), ENODEV);
	ck_assert_int_eq(dmaErrorOf([&] { a.get(); }).code().value(), ENODEV);
	ck_assert_errno(board->identify(), ENODEV);
	ck_assert_errno(board->setTestRouting(C2HSource::Pattern, H2CSink::Checker), ENODEV);
	ck_assert_errno(board->reset(), ENODEV);
	eng.reset(); // the destructor
	ck_assert_errno(DMAEngine(*board, quick(_i)), ENODEV);
	ck_assert_errno(board->reset(), ENODEV); // also without an engine
	ck_assert_errno(board->setTestRouting(C2HSource::Pattern, H2CSink::Checker), ENODEV);
	board->close();
	long long ms = msSince(t0);
	ck_assert_msg(ms < 1000, "the control calls on a lost board took %lld ms", ms);

	// Closing a board whose engine is open, on a board found lost by nobody yet
	Board b2("emu:link=ideal,linkdown=c2h:1");
	DMAEngine e2(b2, quick(_i, 64, 20000));
	DMABuffer buf2(b2, 64 * KiB);
	b2.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	ck_assert_uint_eq(e2.read(buf2, 0, 4096), 4096);
	Transfer t = e2.readAsync(buf2, 0, 4096);
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	t0 = std::chrono::steady_clock::now();
	b2.close();
	ms = msSince(t0);
	ck_assert_msg(ms < 1000, "closing a lost board with its engine open took %lld ms", ms);
	ck_assert_int_ne(dmaErrorOf([&] { t.get(); }).code().value(), 0);
}
END_TEST

// The software wait timeout of a blocking call: no TIMEOUT_US, the transfer never ends; the
// call gives up, aborts the transfer and reports ETIMEDOUT.
START_TEST(test_software_timeout)
{
	Rig r("emu:link=ideal,user=none", quick(_i, 64, 100));
	DMABuffer buf(r.board, 64 * KiB);
	r.board.setTestRouting(C2HSource::User, H2CSink::Checker);
	auto t0 = std::chrono::steady_clock::now();
	DMAError e = dmaErrorOf([&] { r.eng.read(buf, 0, 4096); });
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
	ck_assert_int_eq(e.code().value(), ETIMEDOUT);
	ck_assert_uint_eq(e.engineError(), MP_ERR_ABORTED);
	ck_assert_int_ge(ms.count(), 100);
	// get() of an async transfer: the same, and its result says ETIMEDOUT too (not ECANCELED)
	Transfer g = r.eng.readAsync(buf, 0, 4096);
	DMAError ge = dmaErrorOf([&] { g.get(); });
	ck_assert_int_eq(ge.code().value(), ETIMEDOUT);
	TransferResult gr = g.result();
	ck_assert(gr.done);
	ck_assert_int_eq(gr.error, ETIMEDOUT);
	ck_assert_uint_eq(gr.engineError, MP_ERR_ABORTED);
	ck_assert_int_eq(dmaErrorOf([&] { g.get(); }).code().value(), ETIMEDOUT);
	// wait() with a timeout leaves the transfer running.
	Transfer t = r.eng.readAsync(buf, 0, 4096);
	ck_assert(!t.wait(std::chrono::milliseconds(20)));
	ck_assert(!t.done());
	ck_assert(t.abort());
	DMAError c = dmaErrorOf([&] { t.get(); });
	ck_assert_int_eq(c.code().value(), ECANCELED);
	ck_assert_uint_eq(c.engineError(), MP_ERR_ABORTED);
	TransferResult res = t.result();
	ck_assert(res.done);
	ck_assert_int_eq(res.error, ECANCELED);
	ck_assert(!t.abort()); // finished already
	// Routing cannot change under a running transfer.
	Transfer busy = r.eng.readAsync(buf, 0, 4096);
	ck_assert_errno(r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker), EBUSY);
	busy.abort();
	assertUsable(r, buf, "after software timeouts");
}
END_TEST

// stall= holds one descriptor forever: the engine's TIMEOUT_US ends it on H2C, the software
// timeout on C2H; the transfers queued behind it then run.
START_TEST(test_injected_stall)
{
	EngineOptions o = quick(_i, 64, 200);
	Rig r("emu:link=ideal,stall=c2h:2,stall=h2c:1", o);
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 64 * KiB);
	Transfer c[4];
	for (int i = 0; i < 4; i++)
		c[i] = r.eng.readAsync(buf, i * 4096, 4096);
	ck_assert_uint_eq(c[0].get(), 4096);
	ck_assert_uint_eq(c[1].get(), 4096);
	DMAError e = dmaErrorOf([&] { c[2].get(); });
	ck_assert_int_eq(e.code().value(), ETIMEDOUT);
	ck_assert_uint_eq(c[3].get(), 4096); // re-queued after the abort and recovery
	r.eng.setStallTimeout(3000);
	Transfer h[3];
	for (int i = 0; i < 3; i++)
		h[i] = r.eng.writeAsync(buf, i * 4096, 4096);
	ck_assert_uint_eq(h[0].get(), 4096);
	DMAError he = dmaErrorOf([&] { h[1].get(); });
	ck_assert_int_eq(he.code().value(), ETIMEDOUT);
	ck_assert_uint_eq(he.engineError(), MP_ERR_TIMEOUT);
	ck_assert(he.channel() == Channel::H2C);
	ck_assert_uint_eq(h[2].get(), 4096);
	r.eng.setStallTimeout(0);
	assertUsable(r, buf, "after injected stalls");
}
END_TEST

// buserr= fails descriptor N: its transfer reports EIO / BUS_ERROR, the others complete.
START_TEST(test_injected_bus_error)
{
	Rig r("emu:link=ideal,buserr=c2h:3,buserr=h2c:0", quick(_i, 4, 10000));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 1 * MiB);
	Transfer t[8];
	for (int i = 0; i < 8; i++)
		t[i] = r.eng.readAsync(buf, i * 4096, 4096);
	for (int i = 0; i < 8; i++) {
		if (i == 3) {
			DMAError e = dmaErrorOf([&] { t[i].get(); });
			ck_assert_int_eq(e.code().value(), EIO);
			ck_assert_uint_eq(e.engineError(), MP_ERR_BUS_ERROR);
			ck_assert(e.channel() == Channel::C2H);
		} else {
			ck_assert_uint_eq(t[i].get(), 4096);
		}
	}
	ck_assert_uint_eq(buf.activeTransfers(), 0);
	DMAError h = dmaErrorOf([&] { r.eng.write(buf, 0, 64 * KiB); });
	ck_assert_int_eq(h.code().value(), EIO);
	ck_assert_uint_eq(h.engineError(), MP_ERR_BUS_ERROR);
	assertUsable(r, buf, "after injected bus errors");
}
END_TEST

// A bus error in the middle of a multi-descriptor transfer of scattered user memory.
START_TEST(test_bus_error_mid_transfer)
{
	Rig r("emu:link=ideal,sg=pages,buserr=c2h:5", quick(_i, 4, 10000));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	Anon mem(256 * KiB);
	DMABuffer buf(r.board, mem.data(), mem.size());
	Transfer t = r.eng.readAsync(buf, 0, 64 * KiB); // 16 descriptors of one page
	Transfer after = r.eng.readAsync(buf, 64 * KiB, 64 * KiB);
	DMAError e = dmaErrorOf([&] { t.get(); });
	ck_assert_int_eq(e.code().value(), EIO);
	ck_assert_uint_eq(e.engineError(), MP_ERR_BUS_ERROR);
	ck_assert_uint_ge(e.bytes(), 5 * 4096);
	ck_assert_uint_lt(e.bytes(), 64 * KiB);
	ck_assert_uint_eq(after.get(), 64 * KiB);
	assertUsable(r, buf, "after a bus error inside a transfer");
}
END_TEST

// Addresses and descriptors the library did not make: the engine must refuse them.
START_TEST(test_foreign_addresses)
{
	Rig r("emu:link=ideal", quick(_i, 8, 10000));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 64 * KiB);
	std::uint64_t freed;
	{
		DMABuffer tmp(r.board, 64 * KiB);
		freed = tmp.busAddress();
	}
	struct {
		Channel ch;
		std::uint64_t addr;
		std::uint32_t len, ctrl;
		int err;
		unsigned int code;
	} cases[] = {
		{Channel::C2H, 0xdead0000000ull, 4096, 0, EIO, MP_ERR_BUS_ERROR},  // never mapped
		{Channel::H2C, 0xdead0000000ull, 4096, 0, EIO, MP_ERR_BUS_ERROR},
		{Channel::C2H, freed, 4096, 0, EIO, MP_ERR_BUS_ERROR},             // unmapped again
		{Channel::H2C, freed, 4096, 0, EIO, MP_ERR_BUS_ERROR},
		{Channel::C2H, buf.busAddress() + 64 * KiB - 4, 8, 0, EIO, MP_ERR_BUS_ERROR}, // past the end
		{Channel::H2C, buf.busAddress() + 64 * KiB - 4, 8, 0, EIO, MP_ERR_BUS_ERROR},
		{Channel::C2H, buf.busAddress(), 0, 0, EPROTO, MP_ERR_DESC_LENGTH},
		{Channel::C2H, buf.busAddress(), 16 * MiB + 4, 0, EPROTO, MP_ERR_DESC_LENGTH},
		{Channel::H2C, buf.busAddress() + 2, 4096, 0, EPROTO, MP_ERR_DESC_ALIGN},
		{Channel::H2C, buf.busAddress(), 4094, 0, EPROTO, MP_ERR_DESC_ALIGN},
		{Channel::C2H, buf.busAddress(), 4096, 1u << 7, EPROTO, MP_ERR_DESC_RESERVED},
		{Channel::C2H, buf.busAddress(), 4096 | (1u << 30), 0, EPROTO, MP_ERR_DESC_RESERVED},
	};
	for (const auto &c : cases) {
		Transfer t = r.eng.submitRaw(c.ch, c.addr, c.len, c.ctrl);
		DMAError e = dmaErrorOf([&] { t.get(); });
		ck_assert_msg(e.code().value() == c.err && e.engineError() == c.code,
			      "raw %s 0x%" PRIx64 " len %u: errno %d engine %s, expected %d %s",
			      to_string(c.ch), c.addr, c.len, e.code().value(), e.engineErrorName(),
			      c.err, mp_engine_error_name(c.code));
		// A correct transfer right after, on the same channel.
		if (c.ch == Channel::C2H) {
			r.board.setPatternSeed(3);
			r.eng.read(buf, 0, 4096);
			assertPattern(buf.data(), 4096, 3, "C2H after a refused descriptor");
		} else {
			r.eng.write(buf, 0, 4096);
		}
	}
	// A valid raw descriptor works like any transfer.
	r.board.setPatternSeed(11);
	ck_assert_uint_eq(r.eng.submitRaw(Channel::C2H, buf.busAddress(4096), 4096).get(), 4096);
	assertPattern(static_cast<char *>(buf.data()) + 4096, 4096, 11, "raw C2H");
	assertUsable(r, buf, "after foreign addresses");
}
END_TEST

// Abort one transfer among several, and a whole channel; the channel runs on.
START_TEST(test_abort)
{
	Rig r("emu:link=ideal", quick(_i, 4, 10000));
	r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	DMABuffer buf(r.board, 4 * MiB);
	r.board.setPatternRate(20); // 512 KiB take ~26 ms
	Transfer t[4];
	for (int i = 0; i < 4; i++)
		t[i] = r.eng.readAsync(buf, i * 512 * KiB, 512 * KiB);
	ck_assert(t[1].abort());
	ck_assert_uint_eq(t[0].get(), 512 * KiB);
	ck_assert_int_eq(dmaErrorOf([&] { t[1].get(); }).code().value(), ECANCELED);
	ck_assert_uint_eq(t[2].get(), 512 * KiB);
	ck_assert_uint_eq(t[3].get(), 512 * KiB);
	// A transfer still queued in software (ring of 4 full of others) is dropped directly.
	std::vector<Transfer> many;
	for (int i = 0; i < 12; i++)
		many.push_back(r.eng.readAsync(buf, (i % 8) * 4096, 4096));
	ck_assert(many[11].abort());
	// Abort the whole channel.
	r.eng.abort(Channel::C2H);
	ck_assert_uint_eq(r.eng.outstanding(Channel::C2H), 0);
	for (int i = 0; i < 11; i++) {
		TransferResult res = many[i].result();
		ck_assert(res.done);
		ck_assert(res.error == 0 || res.error == ECANCELED);
	}
	ck_assert_int_eq(many[11].result().error, ECANCELED);
	r.board.setPatternRate(0);
	r.eng.abort(Channel::H2C); // nothing outstanding: harmless
	assertUsable(r, buf, "after aborts");
}
END_TEST

// Destroying a buffer under a running transfer cancels the transfer before the memory goes.
START_TEST(test_buffer_destroyed_while_busy)
{
	Rig r("emu:link=ideal,user=none", quick(_i, 8, 10000));
	DMABuffer keep(r.board, 64 * KiB);
	r.board.setTestRouting(C2HSource::User, H2CSink::Checker);
	Transfer t, q;
	{
		auto mem = std::make_unique<Anon>(64 * KiB);
		DMABuffer buf(r.board, mem->data(), mem->size());
		t = r.eng.readAsync(buf, 0, 4096);
		q = r.eng.readAsync(buf, 4096, 4096);
		ck_assert_uint_eq(buf.activeTransfers(), 2);
		// buf goes first (cancels), then the memory is unmapped: the engine must not touch it.
	}
	ck_assert_int_eq(t.result().error, ECANCELED);
	ck_assert_int_eq(q.result().error, ECANCELED);
	ck_assert_uint_eq(r.eng.outstanding(Channel::C2H), 0);
	// An explicit cancel of a buffer's transfers, with another buffer's transfer queued too.
	DMABuffer other(r.board, 64 * KiB);
	Transfer a = r.eng.readAsync(other, 0, 4096);
	Transfer b = r.eng.readAsync(keep, 0, 4096);
	ck_assert_uint_eq(other.abortTransfers(), 1);
	ck_assert_int_eq(a.result().error, ECANCELED);
	ck_assert(!b.result().done);
	b.abort();
	assertUsable(r, keep, "after destroying a busy buffer");
}
END_TEST

// Closing the board (or resetting it) under running transfers.
START_TEST(test_close_and_reset_while_busy)
{
	auto r = std::make_unique<Rig>("emu:link=ideal,user=none", quick(_i, 8, 10000));
	DMABuffer buf(r->board, 64 * KiB);
	r->board.setTestRouting(C2HSource::User, H2CSink::Checker);
	Transfer t = r->eng.readAsync(buf, 0, 4096);
	r->board.reset(); // cancels, and the engine stays usable
	ck_assert_int_eq(t.result().error, ECANCELED);
	assertUsable(*r, buf, "after a board reset");
	r->board.setTestRouting(C2HSource::User, H2CSink::Checker);
	t = r->eng.readAsync(buf, 0, 4096);
	Transfer u = r->eng.writeAsync(buf, 0, 4096);
	u.get();
	r->board.close();
	ck_assert_int_eq(t.result().error, ECANCELED);
	ck_assert_errno(r->eng.readAsync(buf, 0, 4096), ENODEV);
	ck_assert_errno(r->eng.read(buf, 0, 4096), ENODEV);
	ck_assert_errno(r->eng.abort(Channel::C2H), ENODEV);
	ck_assert_errno(r->board.getRegister(0), ENODEV);
	ck_assert_uint_eq(buf.activeTransfers(), 0);
	std::memset(buf.data(), 1, buf.size()); // still valid memory
	r.reset();                              // engine and board objects go; buf outlives them
	ck_assert_uint_eq(buf.size(), 64 * KiB);
	ck_assert_int_eq(t.result().error, ECANCELED); // a handle outlives the engine as well
}
END_TEST

// An engine destroyed with transfers outstanding: handles stay valid and report ECANCELED.
START_TEST(test_engine_destroyed_while_busy)
{
	Board b("emu:link=ideal,user=none");
	DMABuffer buf(b, 64 * KiB);
	b.setTestRouting(C2HSource::User, H2CSink::Checker);
	Transfer t;
	std::vector<Transfer> more;
	{
		DMAEngine e(b, quick(_i, 2));
		t = e.readAsync(buf, 0, 4096);
		for (int i = 0; i < 10; i++)
			more.push_back(e.readAsync(buf, 0, 4096));
	}
	ck_assert_int_eq(dmaErrorOf([&] { t.get(); }).code().value(), ECANCELED);
	for (auto &m : more)
		ck_assert(m.done());
	ck_assert_uint_eq(buf.activeTransfers(), 0);
	DMAEngine again(b, quick(_i));
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	b.setPatternSeed(1);
	again.read(buf, 0, 4096);
	assertPattern(buf.data(), 4096, 1, "a second engine");
}
END_TEST

// Interrupt mode survives a lost interrupt (the waiter rescans), and an error whose interrupt
// is on another vector.
START_TEST(test_dropped_interrupt)
{
	for (const char *name : {"emu:link=ideal,dropirq=0", "emu:link=ideal,dropirq=3,msi=1"}) {
		EngineOptions o = options(Completion::Interrupt, 16);
		o.irqRescan = std::chrono::milliseconds(5);
		Rig r(name, o);
		r.board.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
		DMABuffer buf(r.board, 64 * KiB);
		for (int i = 0; i < 8; i++) {
			r.board.setPatternSeed(i);
			r.eng.read(buf, 0, 4096);
			assertPattern(buf.data(), 4096, i, name);
		}
	}
	Rig e("emu:link=ideal,msi=4,buserr=h2c:0", options(Completion::Interrupt, 16));
	DMABuffer buf(e.board, 64 * KiB);
	ck_assert_int_eq(dmaErrorOf([&] { e.eng.write(buf, 0, 4096); }).code().value(), EIO);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("mprace_faults");
	TCase *tc = tcase_create("timeouts");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_engine_timeout, 0, 2);
	tcase_add_loop_test(tc, test_software_timeout, 0, 2);
	tcase_add_loop_test(tc, test_injected_stall, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_injected_bus_error, 0, 2);
	tcase_add_loop_test(tc, test_bus_error_mid_transfer, 0, 2);
	tcase_add_loop_test(tc, test_foreign_addresses, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("abort");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_abort, 0, 2);
	tcase_add_loop_test(tc, test_buffer_destroyed_while_busy, 0, 2);
	tcase_add_loop_test(tc, test_close_and_reset_while_busy, 0, 2);
	tcase_add_loop_test(tc, test_engine_destroyed_while_busy, 0, 2);
	tcase_add_test(tc, test_dropped_interrupt);
	tcase_add_loop_test(tc, test_link_down, 0, 2);
	tcase_add_loop_test(tc, test_link_down_control_calls, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
