// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Recovery and shutdown (channel lock held, asserted, unless a function says otherwise): the checks of a
// channel that stopped making progress, RESET and the rewrite of what must still run, aborts
// of single transfers or of every transfer of a buffer, global reset, test routing and
// shutdown (docs/dma-engine.md sections 5-7).
#include "internal.hpp"

namespace mprace {
namespace detail {

bool EngineState::waitState(ChannelState &c, unsigned int state, std::chrono::milliseconds limit)
{
	auto until = Clock::now() + limit;
	for (;;) {
		std::uint32_t st = c.rd(MP_CHREG_STATUS);
		if (st == kAllOnes) {
			board->lost.store(true); // nobody answers: no state will come
			return false;
		}
		if (stateOf(st) == state)
			return true;
		if (Clock::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(10));
	}
}

void EngineState::resetChannel(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	// BUSY stays set until read completions still on their way have arrived or timed out;
	// only then may memory they would have landed in be reused (and the rings rewritten).
	auto until = Clock::now() + std::chrono::seconds(2);
	for (;;) {
		std::uint32_t st = c.rd(MP_CHREG_STATUS);
		if (!(st & MP_CHREG_STATUS_BUSY_MASK) && stateOf(st) == MP_STATE_IDLE)
			break;
		if (st == kAllOnes) {
			board->lost.store(true);
			break;
		}
		if (Clock::now() > until)
			break; // nothing better to do than to go on; the next error will tell
		std::this_thread::sleep_for(std::chrono::microseconds(10));
	}
	std::uint64_t base = c.ring.busAddress();
	c.wr(MP_CHREG_RING_BASE_LO, static_cast<std::uint32_t>(base));
	c.wr(MP_CHREG_RING_BASE_HI, static_cast<std::uint32_t>(base >> 32));
	c.wr(MP_CHREG_RING_SIZE, c.ring.size());
	c.wr(MP_CHREG_TIMEOUT_US, stall_us.load());
	c.head.store(0, std::memory_order_relaxed);
	c.tail = 0;
	c.tail_hint.store(0, std::memory_order_relaxed);
}

void EngineState::setupChannel(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	resetChannel(c);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

void EngineState::recover(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	// The engine writes the failed record and enters ERROR; the reset must come after both.
	std::uint32_t st = c.rd(MP_CHREG_STATUS);
	if (stateOf(st) == MP_STATE_RUNNING && c.head.load(std::memory_order_relaxed) != c.tail) {
		waitState(c, MP_STATE_ERROR, std::chrono::milliseconds(100));
		st = c.rd(MP_CHREG_STATUS);
	}
	std::uint32_t h = c.head.load(std::memory_order_relaxed);
	std::uint32_t resume = 0; // bytes the descriptor at HEAD already moved
	if (h != c.tail) {
		DMADescriptor &d = c.ring.at(h);
		TransferState *t = ownerOf(d);
		DMADescriptor::Record r = d.record();
		if (r.done() && r.failed()) {
			unsigned int code = r.errorCode();
			if (!(code == MP_ERR_ABORTED && !t->abort_req)) {
				t->bytes += r.bytes;
				fail(c, t, code);
				++h;
			} else if (r.bytes >= d.length()) {
				// In flight when *another* transfer was aborted, and all moved: completed.
				t->bytes += r.bytes;
				++h;
				if (--t->in_ring == 0 && !t->queued)
					finish(c, t, 0, MP_ERR_NONE);
			} else if (r.bytes % 4 == 0) {
				// In flight when another transfer was aborted: it continues where it
				// stopped, so no byte is moved twice (a sink would see it again, and the
				// stream source has already given it).
				t->bytes += r.bytes;
				resume = r.bytes;
			}
		} else if (stateOf(st) == MP_STATE_ERROR && codeOf(st) != MP_ERR_NONE &&
			   codeOf(st) != MP_ERR_ABORTED) {
			// Fetching the descriptor itself failed: the engine wrote no record.
			fail(c, t, codeOf(st));
			++h;
		}
	}
	// Survivors, in order, go back into the ring from slot 0.
	std::uint32_t k = 0;
	for (; h != c.tail; ++h) {
		DMADescriptor &d = c.ring.at(h);
		TransferState *t = ownerOf(d);
		if (t->finished.load(std::memory_order_relaxed))
			continue;
		if (t->abort_req) {
			if (t->queued)
				removeQueued(c, t);
			finish(c, t, ECANCELED, MP_ERR_ABORTED);
			continue;
		}
		c.scratch[k] = *d.native();
		if (resume) {
			std::uint64_t a = (static_cast<std::uint64_t>(c.scratch[k].addr_hi) << 32 |
					   c.scratch[k].addr_lo) + resume;
			c.scratch[k].addr_lo = static_cast<std::uint32_t>(a);
			c.scratch[k].addr_hi = static_cast<std::uint32_t>(a >> 32);
			c.scratch[k].len -= resume;
			resume = 0;
		}
		c.scratch_owner[k++] = t;
	}
	dropFromQueue(c);
	resetChannel(c);
	for (std::uint32_t i = 0; i < k; i++) {
		const mp_hw_desc &s = c.scratch[i];
		std::uint32_t ctrl = s.ctrl;
		if (irq && i + 1 == k)
			ctrl |= MP_DESC_CTRL_IRQ_MASK;
		DMADescriptor &d = c.ring[i];
		d.set((static_cast<std::uint64_t>(s.addr_hi) << 32) | s.addr_lo, s.len, ctrl, i);
		d.setOwner(c.scratch_owner[i]);
	}
	board->wr(MP_REG_IRQ_STATUS, MP_REG_IRQ_STATUS_ERROR_MASK);
	c.tail = k;
	c.tail_hint.store(k, std::memory_order_relaxed);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
	if (k) {
		std::atomic_thread_fence(std::memory_order_release);
		c.wr(MP_CHREG_TAIL, k);
	}
	refill(c);
}

void EngineState::checkChannel(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	if (c.head.load(std::memory_order_relaxed) == c.tail && !c.qhead)
		return;
	std::uint32_t st = c.rd(MP_CHREG_STATUS);
	if (st == kAllOnes || board->lost.load(std::memory_order_relaxed)) {
		linkLost(c);   // STATUS is never all-ones (reserved bits read 0): nobody answers
	} else if (stateOf(st) == MP_STATE_ERROR) {
		bool failed = false;
		reapRecords(c, &failed);
		recover(c);
	} else if (stateOf(st) == MP_STATE_IDLE) {
		// Halted with work queued (a raw descriptor with CTRL.STOP, or someone wrote RUN = 0
		// behind our back): continue at HEAD.
		c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
	}
}

void EngineState::linkLost(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	board->lost.store(true);
	for (std::uint32_t h = c.head.load(std::memory_order_relaxed); h != c.tail; ++h) {
		TransferState *t = ownerOf(c.ring.at(h));
		if (t->finished.load(std::memory_order_relaxed))
			continue;
		if (t->queued)
			removeQueued(c, t);
		finish(c, t, ENODEV, MP_ERR_NONE);
	}
	while (TransferState *t = c.qhead) {
		removeQueued(c, t);
		finish(c, t, ENODEV, MP_ERR_NONE);
	}
	c.head.store(c.tail, std::memory_order_relaxed); // nothing of the ring will come back
}

bool EngineState::lostCheck(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	if (!board->gone())
		return false;
	linkLost(c);
	return true;
}

std::size_t EngineState::abortWhere(ChannelState &c, bool (*pred)(TransferState *, const void *),
				    const void *arg)
{
	MPRACE_ASSERT_HELD(c.mu);
	if (lostCheck(c))
		return 0; // every transfer failed with ENODEV; nothing to abort
	reap(c);
	std::size_t before = c.cancelled;
	bool marked = false, in_ring = false;
	for (TransferState *t = c.qhead; t; t = t->next) {
		if (pred(t, arg)) {
			t->abort_req = marked = true;
			if (t->in_ring)
				in_ring = true;
		}
	}
	for (std::uint32_t h = c.head.load(std::memory_order_relaxed); h != c.tail; ++h) {
		TransferState *t = ownerOf(c.ring.at(h));
		if (!t->finished.load(std::memory_order_relaxed) && pred(t, arg))
			t->abort_req = marked = in_ring = true;
	}
	if (!marked)
		return 0;
	if (!in_ring) {
		dropFromQueue(c);
		return c.cancelled - before;
	}
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
	waitState(c, MP_STATE_ERROR, std::chrono::seconds(1));
	bool failed = false;
	reapRecords(c, &failed);
	recover(c);
	return c.cancelled - before;
}

void EngineState::stopAndCancel(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	if (lostCheck(c))
		return; // no register answers: nothing to stop or wait for
	if (c.head.load(std::memory_order_relaxed) != c.tail) {
		c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_ABORT_MASK);
		waitState(c, MP_STATE_ERROR, std::chrono::seconds(1));
		bool failed = false;
		reapRecords(c, &failed);
		std::uint32_t h = c.head.load(std::memory_order_relaxed);
		if (failed) {
			DMADescriptor &d = c.ring.at(h);
			DMADescriptor::Record r = d.record();
			if (r.errorCode() != MP_ERR_ABORTED) {
				ownerOf(d)->bytes += r.bytes;
				fail(c, ownerOf(d), r.errorCode()); // a real error, not ours
			}
		}
		for (; h != c.tail; ++h) {
			TransferState *t = ownerOf(c.ring.at(h));
			if (t->finished.load(std::memory_order_relaxed))
				continue;
			if (t->queued)
				removeQueued(c, t);
			finish(c, t, ECANCELED, MP_ERR_ABORTED);
		}
	}
	while (TransferState *t = c.qhead) {
		removeQueued(c, t);
		finish(c, t, ECANCELED, MP_ERR_ABORTED);
	}
	resetChannel(c);
	board->wr(MP_REG_IRQ_STATUS, MP_REG_IRQ_STATUS_ERROR_MASK);
}

namespace {
bool isThis(TransferState *t, const void *arg) { return t == arg; }
bool usesBuffer(TransferState *t, const void *arg) { return t->buf == arg; }
} // namespace

bool EngineState::abortOne(TransferState *t, int err)
{
	ChannelState &c = *t->ch;
	std::lock_guard<OwnedMutex> lk(c.mu);
	if (t->finished.load(std::memory_order_relaxed))
		return false;
	t->abort_err = err;
	abortWhere(c, isThis, t);
	if (!t->finished.load(std::memory_order_relaxed))
		t->abort_err = ECANCELED;
	return t->finished.load(std::memory_order_relaxed) && t->err == err;
}

void EngineState::release(TransferState *t) noexcept
{
	std::shared_ptr<EngineState> keep;
	{
		ChannelState &c = *t->ch;
		std::lock_guard<OwnedMutex> lk(c.mu);
		t->held = false;
		keep = std::move(t->keep);
		if (t->finished.load(std::memory_order_relaxed))
			c.pool.put(t);
	}
	// `keep` may be the last reference: the engine state (with the mutex above) goes here.
}

std::size_t EngineState::abortBufferLocked(BufferState *b)
{
	std::size_t n = 0;
	for (auto &c : ch) {
		std::lock_guard<OwnedMutex> lk(c->mu);
		n += abortWhere(*c, usesBuffer, b);
	}
	return n;
}

void setupInterrupts(EngineState &e)
{
	BoardState &b = *e.board;
	std::uint32_t all = MP_REG_IRQ_STATUS_C2H_DONE_MASK | MP_REG_IRQ_STATUS_H2C_DONE_MASK |
			    MP_REG_IRQ_STATUS_ERROR_MASK;
	b.wr(MP_REG_IRQ_ENABLE, 0);
	b.wr(MP_REG_IRQ_STATUS, all);
	if (!e.irq)
		return;
	for (unsigned int v = 0; v < MP_IRQ_SOURCES && v < b.info.pci.irq_count; v++)
		pd_irq_clear(b.dev.handle(), v);
	b.wr(MP_REG_IRQ_ENABLE, all);
}

void EngineState::globalResetLocked()
{
	std::lock_guard<OwnedMutex> l0(ch[0]->mu);
	std::lock_guard<OwnedMutex> l1(ch[1]->mu);
	if (closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	for (auto &c : ch)
		stopAndCancel(*c);
	board->checkAlive("mprace::Board::reset");
	board->wr(MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	auto until = Clock::now() + std::chrono::seconds(1);
	while ((board->rd(MP_REG_CONTROL) & MP_REG_CONTROL_RESET_MASK) && Clock::now() < until)
		std::this_thread::sleep_for(std::chrono::microseconds(10));
	for (auto &c : ch)
		setupChannel(*c);
	setupInterrupts(*this);
}

void EngineState::setRoutingLocked(std::uint32_t test_control)
{
	std::lock_guard<OwnedMutex> l0(ch[0]->mu);
	std::lock_guard<OwnedMutex> l1(ch[1]->mu);
	if (closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	bool gone = false;
	for (auto &c : ch)
		gone = lostCheck(*c) || gone;
	if (gone)
		board->checkAlive("mprace::Board::setTestRouting");
	for (auto &c : ch)
		reap(*c);
	if (ch[0]->outstanding || ch[1]->outstanding)
		throw Error(EBUSY, "mprace::Board::setTestRouting: transfers are outstanding");
	// TEST_CONTROL may change only while both channels are IDLE (spec section 7).
	for (auto &c : ch)
		c->wr(MP_CHREG_CONTROL, 0);
	bool idle = true;
	for (auto &c : ch)
		idle = waitState(*c, MP_STATE_IDLE, std::chrono::seconds(1)) && idle;
	if (idle)
		board->wr(MP_REG_TEST_CONTROL, test_control);
	for (auto &c : ch)
		c->wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
	if (!idle)
		throw Error(ETIMEDOUT, "mprace::Board::setTestRouting: a channel did not halt");
}

void EngineState::shutdownLocked() noexcept
{
	if (closed.exchange(true))
		return;
	for (auto &c : ch) {
		std::lock_guard<OwnedMutex> lk(c->mu);
		stopAndCancel(*c); // leaves the channel reset and IDLE (or fails all: board lost)
		c->cv.notify_all();
	}
	if (board->engine == this)
		board->engine = nullptr;
	if (board->lost.load())
		return;
	board->wr(MP_REG_IRQ_ENABLE, 0);
	board->wr(MP_REG_IRQ_STATUS, MP_REG_IRQ_STATUS_C2H_DONE_MASK | MP_REG_IRQ_STATUS_H2C_DONE_MASK |
					     MP_REG_IRQ_STATUS_ERROR_MASK);
	if (board->engine == this)
		board->engine = nullptr;
}

void EngineState::shutdown() noexcept
{
	std::lock_guard<std::mutex> lk(board->mu);
	shutdownLocked();
}

} // namespace detail
} // namespace mprace
