// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The ring of each channel (channel lock held throughout, asserted on entry): the software queue, refill() that
// moves queued descriptors into free slots with one TAIL write, reap() that consumes completion
// records from host memory, and submission (docs/dma-engine.md section 4).
#include "internal.hpp"

namespace mprace {
namespace detail {

// ---- ring bookkeeping (channel lock held: asserted) ----

void EngineState::enqueue(ChannelState &c, TransferState *t)
{
	MPRACE_ASSERT_HELD(c.mu);
	t->queued = true;
	t->next = nullptr;
	if (c.qtail)
		c.qtail->next = t;
	else
		c.qhead = t;
	c.qtail = t;
}

void removeQueued(ChannelState &c, TransferState *t)
{
	MPRACE_ASSERT_HELD(c.mu);
	TransferState *prev = nullptr;
	for (TransferState *p = c.qhead; p; prev = p, p = p->next) {
		if (p != t)
			continue;
		(prev ? prev->next : c.qhead) = t->next;
		if (c.qtail == t)
			c.qtail = prev;
		break;
	}
	t->queued = false;
	t->next = nullptr;
}

void EngineState::refill(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	const std::uint32_t size = c.ring.size();
	std::uint32_t tail = c.tail;
	const std::uint32_t start = tail;
	std::uint32_t room = size - (tail - c.head.load(std::memory_order_relaxed));
	DMADescriptor *last = nullptr;

	while (room && c.qhead) {
		TransferState *t = c.qhead;
		bool complete = false;
		while (room) {
			DescriptorChunk k;
			std::uint32_t ctrl = 0;
			if (t->raw) {
				k = t->raw_chunk;
				ctrl = t->raw_ctrl;
				complete = true;
			} else {
				t->cursor.next(k);
				complete = t->cursor.empty();
				if (complete)
					ctrl = t->last_ctrl;
			}
			if (complete && irq)
				ctrl |= MP_DESC_CTRL_IRQ_MASK;
			DMADescriptor &d = c.ring.at(tail);
			d.set(k.busAddress, k.length, ctrl, tail);
			d.setOwner(t);
			t->in_ring++;
			tail++;
			room--;
			last = &d;
			if (complete)
				break;
		}
		if (!complete)
			break; // ring full in the middle of t: it stays at the head of the queue
		c.qhead = t->next;
		if (!c.qhead)
			c.qtail = nullptr;
		t->queued = false;
		t->next = nullptr;
	}
	if (tail == start)
		return;
	// In interrupt mode the last descriptor of every doorbell raises DONE, so that a waiter
	// whose transfer is still queued wakes when slots free up.
	if (irq)
		last->setControl(last->control() | MP_DESC_CTRL_IRQ_MASK);
	c.tail = tail;
	c.tail_hint.store(tail, std::memory_order_relaxed);
	// Descriptors are plain stores to coherent memory; they must be visible before the
	// doorbell (on x86 the uncached MMIO store is ordered after them; the fence keeps the
	// compiler from sinking them and orders them on weaker architectures).
	std::atomic_thread_fence(std::memory_order_release);
	c.wr(MP_CHREG_TAIL, tail);
}

void EngineState::finish(ChannelState &c, TransferState *t, int err, unsigned int code)
{
	MPRACE_ASSERT_HELD(c.mu);
	bool cancelled = err == ECANCELED;

	t->err = cancelled ? t->abort_err : err;
	t->engine_err = code;
	t->in_ring = 0;
	if (t->buf) {
		t->buf->active.fetch_sub(1, std::memory_order_release);
		t->buf = nullptr;
	}
	c.outstanding--;
	if (cancelled)
		c.cancelled++;
	t->finished.store(true, std::memory_order_release);
	if (!t->held)
		c.pool.put(t);
	if (irq)
		c.cv.notify_all();
}

void EngineState::fail(ChannelState &c, TransferState *t, unsigned int code)
{
	MPRACE_ASSERT_HELD(c.mu);
	if (t->queued)
		removeQueued(c, t);
	int e = (code == MP_ERR_ABORTED) ? ECANCELED : errnoFromEngineError(code);
	finish(c, t, e ? e : EIO, code);
}

// Cancels queued transfers marked for abort (those without descriptors in the ring).
void EngineState::dropFromQueue(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	for (TransferState *t = c.qhead; t;) {
		TransferState *n = t->next;
		if (t->abort_req && !t->finished.load(std::memory_order_relaxed)) {
			removeQueued(c, t);
			finish(c, t, ECANCELED, MP_ERR_ABORTED);
		}
		t = n;
	}
}

std::size_t EngineState::reapRecords(ChannelState &c, bool *failed)
{
	MPRACE_ASSERT_HELD(c.mu);
	std::size_t n = 0;
	std::uint32_t h = c.head.load(std::memory_order_relaxed);
	*failed = false;
	while (h != c.tail) {
		DMADescriptor &d = c.ring.at(h);
		DMADescriptor::Record r = d.record();
		if (!r.done())
			break;
		if (r.failed()) {
			*failed = true;
			break;
		}
		TransferState *t = ownerOf(d);
		t->bytes += r.bytes;
		if (r.endOfPacket())
			t->eop = true;
		++h;
		if (--t->in_ring == 0 && !t->queued && !t->finished.load(std::memory_order_relaxed)) {
			finish(c, t, 0, MP_ERR_NONE);
			n++;
		}
	}
	c.head.store(h, std::memory_order_relaxed);
	return n;
}

std::size_t EngineState::reap(ChannelState &c)
{
	MPRACE_ASSERT_HELD(c.mu);
	bool failed = false;
	std::size_t n = reapRecords(c, &failed);
	if (failed) {
		std::size_t before = c.outstanding;
		recover(c);
		n += before - c.outstanding;
	} else {
		refill(c);
	}
	return n;
}

// ---- submission ----

namespace {
void initTransfer(EngineState &e, ChannelState &c, TransferState *t, BufferState *b,
		  std::uint64_t off, std::uint64_t len, std::uint32_t flags)
{
	t->ch = &c;
	t->buf = b;
	t->next = nullptr;
	t->cursor = b ? SGSplitter(b->segs, off, len) : SGSplitter();
	t->length = len;
	t->bytes = 0;
	t->in_ring = 0;
	t->last_ctrl = (c.id == Channel::H2C && (flags & DMAEngine::EndOfPacket)) ? MP_DESC_CTRL_EOP_MASK : 0;
	t->raw = false;
	t->queued = false;
	t->held = true;
	t->abort_req = false;
	t->abort_err = ECANCELED;
	t->eop = false;
	t->err = 0;
	t->engine_err = 0;
	t->finished.store(false, std::memory_order_relaxed);
	t->keep = e.shared_from_this();
	if (b)
		b->active.fetch_add(1, std::memory_order_relaxed);
	c.outstanding++;
}

// Queue, then fill the ring: reap first only when it is full, so that the fast path reads no
// completion record it does not need.
void kick(EngineState &e, ChannelState &c)
{
	if (c.tail - c.head.load(std::memory_order_relaxed) == c.ring.size())
		e.reap(c);
	else
		e.refill(c);
}
} // namespace

TransferState *EngineState::submitOne(Channel cid, BufferState *b, std::uint64_t off,
				      std::uint64_t len, std::uint32_t flags)
{
	checkArgs(cid, b, off, len, flags);
	ChannelState &c = *ch[static_cast<unsigned int>(cid)];
	std::lock_guard<OwnedMutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed))
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	if (board->lost.load(std::memory_order_relaxed))
		throw Error(ENODEV, std::string("mprace::DMAEngine: ") + kBoardLost);
	c.checkNotLent("mprace::DMAEngine::submit");
	TransferState *t = c.pool.get();
	initTransfer(*this, c, t, b, off, len, flags);
	enqueue(c, t);
	kick(*this, c);
	return t;
}

void EngineState::submitMany(Channel cid, const Request *reqs, std::size_t n,
			     void (*emit)(void *, std::size_t, TransferState *), void *ctx)
{
	if (n && !reqs)
		throw Error(EINVAL, "mprace::DMAEngine::submit: no requests");
	for (std::size_t i = 0; i < n; i++)
		checkArgs(cid, reqs[i].buffer ? Access::buffer(*reqs[i].buffer) : nullptr, reqs[i].offset,
			  reqs[i].length, reqs[i].flags);
	if (n == 0)
		return;
	ChannelState &c = *ch[static_cast<unsigned int>(cid)];
	std::lock_guard<OwnedMutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed))
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	if (board->lost.load(std::memory_order_relaxed))
		throw Error(ENODEV, std::string("mprace::DMAEngine: ") + kBoardLost);
	c.checkNotLent("mprace::DMAEngine::submit");
	// Take every state first (the pool may have to grow), so that running out of memory
	// submits nothing; they are chained through `next` until initialised.
	TransferState *got = nullptr;
	try {
		for (std::size_t i = 0; i < n; i++) {
			TransferState *t = c.pool.get();
			t->next = got;
			got = t;
		}
	} catch (...) {
		while (got) {
			TransferState *t = got;
			got = t->next;
			c.pool.put(t);
		}
		throw;
	}
	for (std::size_t i = 0; i < n; i++) {
		TransferState *t = got;
		got = t->next;
		initTransfer(*this, c, t, Access::buffer(*reqs[i].buffer), reqs[i].offset, reqs[i].length,
			     reqs[i].flags);
		enqueue(c, t);
		emit(ctx, i, t);
	}
	kick(*this, c); // one doorbell for the whole batch
}

TransferState *EngineState::submitRaw(Channel cid, std::uint64_t bus, std::uint32_t len,
				      std::uint32_t ctrl)
{
	ChannelState &c = chan(cid);
	std::lock_guard<OwnedMutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed) || board->closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	if (board->lost.load(std::memory_order_relaxed))
		throw Error(ENODEV, std::string("mprace::DMAEngine: ") + kBoardLost);
	c.checkNotLent("mprace::DMAEngine::submitRaw");
	TransferState *t = c.pool.get();
	initTransfer(*this, c, t, nullptr, 0, len, 0);
	t->raw = true;
	t->raw_chunk = DescriptorChunk{bus, len};
	t->raw_ctrl = ctrl;
	enqueue(c, t);
	kick(*this, c);
	return t;
}

} // namespace detail
} // namespace mprace
