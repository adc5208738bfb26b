// SPDX-License-Identifier: LGPL-2.1-or-later
//
// mprace::DMAEngine: the driver of the engine's two channels (docs/dma-engine.md sections 4-6).
//
// Per channel, software mirrors the ring with two free-running counters: `head` (the next
// descriptor whose completion record we have not consumed) and `tail` (the TAIL last written).
// Transfers wait in a FIFO software queue until their descriptors fit; refill() moves as many
// descriptors as there are free slots into the ring and writes TAIL once. reap() consumes
// completion records (host memory, no MMIO read) and finishes transfers whose descriptors have
// all completed. A failed record, an abort or a stopped channel goes through recover(): the
// channel is RESET and the descriptors that must still run are written again from slot 0.
#include <algorithm>
#include <thread>

#include "internal.hpp"

namespace mprace {
namespace detail {

namespace {

inline unsigned int stateOf(std::uint32_t status)
{
	return MP_FIELD_GET(status, MP_CHREG_STATUS_STATE);
}

inline unsigned int codeOf(std::uint32_t status)
{
	return MP_FIELD_GET(status, MP_CHREG_STATUS_ERROR_CODE);
}

inline TransferState *ownerOf(const DMADescriptor &d)
{
	return static_cast<TransferState *>(d.owner());
}

inline void cpuRelax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Waiting for a completion record: spin briefly (a 4 KiB transfer takes about a microsecond),
// then yield, then sleep with growing intervals so that a long wait costs no CPU.
class Backoff {
public:
	void pause()
	{
		if (n_ < 64) {
			cpuRelax();
		} else if (n_ < 64 + 256) {
			std::this_thread::yield();
		} else {
			unsigned int k = std::min<unsigned int>((n_ - 64 - 256) / 8, 5);
			std::this_thread::sleep_for(std::chrono::microseconds(10u << k));
		}
		n_++;
	}
	void reset() { n_ = 0; }

private:
	unsigned int n_ = 0;
};

// Checks how long a health check (an MMIO read of STATUS) may be put off while waiting without
// progress: long enough to stay off the fast path, short enough to notice a stop quickly.
constexpr auto kHealthInterval = std::chrono::milliseconds(10);

} // namespace

// ---- pool and channel ----

TransferState *TransferPool::get()
{
	if (!free_) {
		chunks_.reserve(chunks_.size() + 1);
		auto c = std::make_unique<TransferState[]>(chunk_);
		for (std::size_t i = 0; i + 1 < chunk_; i++)
			c[i].next = &c[i + 1];
		c[chunk_ - 1].next = nullptr;
		free_ = &c[0];
		chunks_.push_back(std::move(c));
	}
	TransferState *t = free_;
	free_ = t->next;
	t->next = nullptr;
	return t;
}

ChannelState::ChannelState(EngineState *e, Channel c, Board &board, std::uint32_t entries)
	: eng(e), id(c), base(MP_CH_BASE(static_cast<unsigned int>(c))), vector(0),
	  done_bit(c == Channel::C2H ? MP_REG_IRQ_STATUS_C2H_DONE_MASK : MP_REG_IRQ_STATUS_H2C_DONE_MASK),
	  ring(board, entries), scratch(entries), scratch_owner(entries)
{
}

std::uint32_t ChannelState::rd(std::uint32_t off) const { return eng->board->rd(base + off); }
void ChannelState::wr(std::uint32_t off, std::uint32_t v) const { eng->board->wr(base + off, v); }

// ---- engine state ----

EngineState::EngineState(Board &b, const EngineOptions &o) : board(b.state()), opts(o)
{
	if (board->closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the board is closed");
	if (!board->info.isOurEngine())
		throw Error(ENODEV, "mprace::DMAEngine: " + board->info.name +
					    " does not identify as an mprace engine (opened with NoCheck)");
	if (!mp_ring_size_valid(o.ringEntries))
		throw Error(EINVAL, "mprace::DMAEngine: ringEntries must be a power of two from " +
					    std::to_string(MP_ENGINE_RING_MIN_ENTRIES) + " to " +
					    std::to_string(MP_ENGINE_RING_MAX_ENTRIES));
	if (o.waitTimeout.count() < 0 || o.irqRescan.count() <= 0)
		throw Error(EINVAL, "mprace::DMAEngine: negative wait timeout or irqRescan <= 0");
	if (o.completion != Completion::Polling && o.completion != Completion::Interrupt)
		throw Error(EINVAL, "mprace::DMAEngine: unknown completion mode");
	irq = o.completion == Completion::Interrupt;
	if (irq && (board->info.pci.irq_mode == PD_IRQ_NONE || board->info.pci.irq_count == 0))
		throw Error(EOPNOTSUPP, "mprace::DMAEngine: the device has no interrupt");
	// Spec section 6: one vector per source only with at least 4 granted MSI vectors.
	shared_vector = board->info.caps.msiVectors < 4 || board->info.pci.irq_count < MP_IRQ_SOURCES;
	wait_timeout_ms.store(o.waitTimeout.count());
	stall_us.store(o.stallTimeoutUs);
	ch[0] = std::make_unique<ChannelState>(this, Channel::C2H, b, o.ringEntries);
	ch[1] = std::make_unique<ChannelState>(this, Channel::H2C, b, o.ringEntries);
	ch[0]->vector = MP_IRQ_C2H_DONE_VECTOR;
	ch[1]->vector = shared_vector ? 0 : MP_IRQ_H2C_DONE_VECTOR;
}

EngineState::~EngineState() = default;

ChannelState &EngineState::chan(Channel c) const
{
	auto i = static_cast<unsigned int>(c);
	if (i >= MP_CH_COUNT)
		throw Error(EINVAL, "mprace::DMAEngine: unknown channel " + std::to_string(i));
	return *ch[i];
}

void EngineState::checkArgs(Channel c, BufferState *b, std::uint64_t off, std::uint64_t len,
			    std::uint32_t flags) const
{
	if (closed.load(std::memory_order_relaxed) || board->closed.load(std::memory_order_relaxed))
		throw Error(ENODEV, "mprace::DMAEngine: the board or engine is closed");
	if (static_cast<unsigned int>(c) >= MP_CH_COUNT)
		throw Error(EINVAL, "mprace::DMAEngine: unknown channel");
	if (!b)
		throw Error(EINVAL, "mprace::DMAEngine: no buffer (moved-from DMABuffer?)");
	if (len == 0)
		throw Error(EINVAL, "mprace::DMAEngine: zero-length transfer");
	if ((off | len) % MP_ENGINE_GRANULE)
		throw Error(EINVAL, "mprace::DMAEngine: offset " + std::to_string(off) + " and length " +
					    std::to_string(len) +
					    " must be multiples of the 4-byte granule");
	if (off > b->size || len > b->size - off)
		throw Error(ERANGE, "mprace::DMAEngine: bytes " + std::to_string(off) + ".." +
					    std::to_string(off + len) + " run past the end of the " +
					    std::to_string(b->size) + "-byte buffer");
	if (b->board != board)
		throw Error(EXDEV, "mprace::DMAEngine: the buffer belongs to another board");
	if ((c == Channel::C2H && b->dir == PD_DMA_TO_DEVICE) ||
	    (c == Channel::H2C && b->dir == PD_DMA_FROM_DEVICE))
		throw Error(EACCES, std::string("mprace::DMAEngine: the user memory is not mapped for ") +
					    to_string(c));
	if (flags & ~DMAEngine::EndOfPacket)
		throw Error(EINVAL, "mprace::DMAEngine: unknown transfer flags");
}

// ---- ring bookkeeping (channel lock held) ----

void EngineState::enqueue(ChannelState &c, TransferState *t)
{
	t->queued = true;
	t->next = nullptr;
	if (c.qtail)
		c.qtail->next = t;
	else
		c.qhead = t;
	c.qtail = t;
}

static void removeQueued(ChannelState &c, TransferState *t)
{
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
	if (t->queued)
		removeQueued(c, t);
	int e = (code == MP_ERR_ABORTED) ? ECANCELED : errnoFromEngineError(code);
	finish(c, t, e ? e : EIO, code);
}

// Cancels queued transfers marked for abort (those without descriptors in the ring).
void EngineState::dropFromQueue(ChannelState &c)
{
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

bool EngineState::waitState(ChannelState &c, unsigned int state, std::chrono::milliseconds limit)
{
	auto until = Clock::now() + limit;
	for (;;) {
		if (stateOf(c.rd(MP_CHREG_STATUS)) == state)
			return true;
		if (Clock::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(10));
	}
}

void EngineState::resetChannel(ChannelState &c)
{
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	// BUSY stays set until read completions still on their way have arrived or timed out;
	// only then may memory they would have landed in be reused (and the rings rewritten).
	auto until = Clock::now() + std::chrono::seconds(2);
	for (;;) {
		std::uint32_t st = c.rd(MP_CHREG_STATUS);
		if (!(st & MP_CHREG_STATUS_BUSY_MASK) && stateOf(st) == MP_STATE_IDLE)
			break;
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
	resetChannel(c);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

void EngineState::recover(ChannelState &c)
{
	// The engine writes the failed record and enters ERROR; the reset must come after both.
	std::uint32_t st = c.rd(MP_CHREG_STATUS);
	if (stateOf(st) == MP_STATE_RUNNING && c.head.load(std::memory_order_relaxed) != c.tail) {
		waitState(c, MP_STATE_ERROR, std::chrono::milliseconds(100));
		st = c.rd(MP_CHREG_STATUS);
	}
	std::uint32_t h = c.head.load(std::memory_order_relaxed);
	if (h != c.tail) {
		DMADescriptor &d = c.ring.at(h);
		TransferState *t = ownerOf(d);
		DMADescriptor::Record r = d.record();
		if (r.done() && r.failed()) {
			unsigned int code = r.errorCode();
			// A descriptor that was in flight when *another* transfer was aborted is simply
			// done again.
			if (!(code == MP_ERR_ABORTED && !t->abort_req)) {
				t->bytes += r.bytes;
				fail(c, t, code);
				++h;
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
	if (c.head.load(std::memory_order_relaxed) == c.tail)
		return;
	std::uint32_t st = c.rd(MP_CHREG_STATUS);
	if (stateOf(st) == MP_STATE_ERROR) {
		bool failed = false;
		reapRecords(c, &failed);
		recover(c);
	} else if (stateOf(st) == MP_STATE_IDLE) {
		// Halted with work queued (a raw descriptor with CTRL.STOP, or someone wrote RUN = 0
		// behind our back): continue at HEAD.
		c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
	}
}

std::size_t EngineState::abortWhere(ChannelState &c, bool (*pred)(TransferState *, const void *),
				    const void *arg)
{
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
	std::lock_guard<std::mutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed))
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
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
		checkArgs(cid, reqs[i].buffer ? reqs[i].buffer->state() : nullptr, reqs[i].offset,
			  reqs[i].length, reqs[i].flags);
	if (n == 0)
		return;
	ChannelState &c = *ch[static_cast<unsigned int>(cid)];
	std::lock_guard<std::mutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed))
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
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
		initTransfer(*this, c, t, reqs[i].buffer->state(), reqs[i].offset, reqs[i].length,
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
	std::lock_guard<std::mutex> lk(c.mu);
	if (closed.load(std::memory_order_relaxed) || board->closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	TransferState *t = c.pool.get();
	initTransfer(*this, c, t, nullptr, 0, len, 0);
	t->raw = true;
	t->raw_chunk = DescriptorChunk{bus, len};
	t->raw_ctrl = ctrl;
	enqueue(c, t);
	kick(*this, c);
	return t;
}

// ---- waiting ----

bool EngineState::wait(TransferState *t, Clock::time_point deadline, bool forever)
{
	if (t->finished.load(std::memory_order_acquire))
		return true;
	return irq ? waitIrq(t, deadline, forever) : waitPolling(t, deadline, forever);
}

bool EngineState::peek(const ChannelState &c) const
{
	std::uint32_t h = c.head.load(std::memory_order_relaxed);
	return h != c.tail_hint.load(std::memory_order_relaxed) &&
	       const_cast<ChannelState &>(c).ring.at(h).record().done();
}

void EngineState::serviceOther(const ChannelState &mine, bool check)
{
	ChannelState &o = *ch[mine.id == Channel::C2H ? 1 : 0];
	if (!check && !peek(o))
		return;
	// try_lock: if its lock is taken, someone is working on that channel already.
	std::unique_lock<std::mutex> lk(o.mu, std::try_to_lock);
	if (!lk)
		return;
	if (check)
		checkChannel(o);
	reap(o);
}

bool EngineState::waitPolling(TransferState *t, Clock::time_point deadline, bool forever)
{
	ChannelState &c = *t->ch;
	Backoff backoff;
	auto last_check = Clock::now();
	for (;;) {
		if (t->finished.load(std::memory_order_acquire))
			return true;
		// Peek at the next record without the lock: only a written record (or a due health
		// check) is worth taking it. The ring lives as long as the engine state.
		bool ready = peek(c);
		auto now = Clock::now();
		bool check = now - last_check > kHealthInterval;
		if (ready || check) {
			std::lock_guard<std::mutex> lk(c.mu);
			if (check)
				checkChannel(c);
			reap(c);
			if (t->finished.load(std::memory_order_relaxed))
				return true;
			if (ready)
				backoff.reset();
		}
		serviceOther(c, check);
		if (check)
			last_check = now;
		if (!forever && now >= deadline) {
			std::lock_guard<std::mutex> lk(c.mu);
			reap(c);
			return t->finished.load(std::memory_order_relaxed);
		}
		backoff.pause();
	}
}

void EngineState::ackVector(unsigned int v)
{
	std::uint32_t bits;
	if (shared_vector)
		bits = MP_REG_IRQ_STATUS_C2H_DONE_MASK | MP_REG_IRQ_STATUS_H2C_DONE_MASK |
		       MP_REG_IRQ_STATUS_ERROR_MASK;
	else if (v == MP_IRQ_C2H_DONE_VECTOR)
		bits = MP_REG_IRQ_STATUS_C2H_DONE_MASK;
	else if (v == MP_IRQ_H2C_DONE_VECTOR)
		bits = MP_REG_IRQ_STATUS_H2C_DONE_MASK;
	else
		bits = MP_REG_IRQ_STATUS_ERROR_MASK;
	board->wr(MP_REG_IRQ_STATUS, bits);
}

// Interrupt mode (spec section 6). At most one thread waits on a vector (pd_irq_wait counts
// events per handle, so two waiters could split one event); it clears the vector's bits in
// IRQ_STATUS (w1c) and then scans the records of every channel on the vector, and wakes the
// other waiters through the channels' condition variables. Everybody also rescans every
// irqRescan: a lost interrupt or an error (whose vector may be another one) then costs at most
// that much latency.
bool EngineState::waitIrq(TransferState *t, Clock::time_point deadline, bool forever)
{
	ChannelState &c = *t->ch;
	const unsigned int v = c.vector;
	pd_device *dev = board->dev.handle();
	std::unique_lock<std::mutex> lk(c.mu);
	for (;;) {
		reap(c);
		if (t->finished.load(std::memory_order_relaxed))
			return true;
		auto now = Clock::now();
		if (!forever && now >= deadline)
			return false;
		auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(opts.irqRescan);
		if (!forever)
			slice = std::min(slice, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
		if (slice.count() < 1)
			slice = std::chrono::milliseconds(1);
		if (!vec_busy[v].exchange(true, std::memory_order_acquire)) {
			lk.unlock();
			int rc = pd_irq_wait(dev, v, static_cast<std::uint32_t>(slice.count()));
			if (rc > 0)
				ackVector(v);
			else if (rc < 0 && rc != -ETIMEDOUT)
				// -EINTR or a failing device: rescan at the slice's pace, never spin.
				std::this_thread::sleep_for(std::min(slice, std::chrono::milliseconds(1)));
			for (auto &o : ch) {
				if (o.get() == &c)
					continue;
				if (o->vector != v) {
					// Its waiters (if any) have their own vector; without any, its
					// queued transfers still move on at every wake-up here.
					serviceOther(c, rc <= 0);
					continue;
				}
				std::lock_guard<std::mutex> ol(o->mu);
				reap(*o);
				if (rc <= 0)
					checkChannel(*o);
				o->cv.notify_all();
			}
			lk.lock();
			vec_busy[v].store(false, std::memory_order_release);
			if (rc <= 0)
				checkChannel(c);
			// Whoever still waits may take the vector over.
			c.cv.notify_all();
			for (auto &o : ch)
				if (o.get() != &c && o->vector == v)
					o->cv.notify_all();
		} else {
			c.cv.wait_for(lk, slice);
		}
	}
}

bool EngineState::isDone(TransferState *t)
{
	if (t->finished.load(std::memory_order_acquire))
		return true;
	ChannelState &c = *t->ch;
	std::lock_guard<std::mutex> lk(c.mu);
	reap(c);
	return t->finished.load(std::memory_order_relaxed);
}

namespace {
bool isThis(TransferState *t, const void *arg) { return t == arg; }
bool usesBuffer(TransferState *t, const void *arg) { return t->buf == arg; }
} // namespace

bool EngineState::abortOne(TransferState *t, int err)
{
	ChannelState &c = *t->ch;
	std::lock_guard<std::mutex> lk(c.mu);
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
		std::lock_guard<std::mutex> lk(c.mu);
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
		std::lock_guard<std::mutex> lk(c->mu);
		n += abortWhere(*c, usesBuffer, b);
	}
	return n;
}

namespace {
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
} // namespace

void EngineState::globalResetLocked()
{
	std::lock_guard<std::mutex> l0(ch[0]->mu);
	std::lock_guard<std::mutex> l1(ch[1]->mu);
	if (closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	for (auto &c : ch)
		stopAndCancel(*c);
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
	std::lock_guard<std::mutex> l0(ch[0]->mu);
	std::lock_guard<std::mutex> l1(ch[1]->mu);
	if (closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
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
		std::lock_guard<std::mutex> lk(c->mu);
		stopAndCancel(*c); // leaves the channel reset and IDLE
		c->cv.notify_all();
	}
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

[[noreturn]] void throwTransferError(const TransferState *t)
{
	std::string what = std::string("mprace: ") + to_string(t->ch->id) + " transfer of " +
			   std::to_string(t->length) + " bytes ";
	if (t->engine_err != MP_ERR_NONE && !(t->err == ECANCELED && t->engine_err == MP_ERR_ABORTED))
		what += std::string("failed with engine error ") + mp_engine_error_name(t->engine_err);
	else if (t->err == ECANCELED)
		what += "was aborted";
	else
		what += "failed";
	what += " after " + std::to_string(t->bytes) + " bytes";
	throw DMAError(t->err, t->engine_err, t->ch->id, t->bytes, what);
}

} // namespace detail

// ------------------------------------------------------------------------------------------
// Transfer

namespace {
detail::TransferState *need(detail::TransferState *s)
{
	if (!s)
		throw Error(EINVAL, "mprace::Transfer: invalid (empty or moved-from) handle");
	return s;
}
} // namespace

Transfer &Transfer::operator=(Transfer &&o) noexcept
{
	if (this != &o) {
		release();
		st_ = o.st_;
		o.st_ = nullptr;
	}
	return *this;
}

Channel Transfer::channel() const { return need(st_)->ch->id; }
std::uint64_t Transfer::length() const { return need(st_)->length; }

bool Transfer::done() { return need(st_)->ch->eng->isDone(st_); }

namespace {
// Timeouts beyond ~100 years (microseconds::max() included) mean "forever"; adding them to
// now() would overflow the clock's representation.
constexpr auto kForever = std::chrono::hours(24 * 365 * 100);
} // namespace

bool Transfer::wait(std::chrono::microseconds timeout)
{
	detail::TransferState *t = need(st_);
	bool forever = timeout >= kForever;
	if (timeout.count() < 0)
		timeout = std::chrono::microseconds(0);
	if (!t->ch->eng->wait(t, forever ? detail::Clock::now() : detail::Clock::now() + timeout, forever))
		return false;
	if (t->err)
		detail::throwTransferError(t);
	return true;
}

std::uint64_t Transfer::get()
{
	detail::TransferState *t = need(st_);
	detail::EngineState &e = *t->ch->eng;
	std::int64_t ms = e.wait_timeout_ms.load(std::memory_order_relaxed);
	bool forever = ms == 0 || std::chrono::milliseconds(ms) >= kForever;
	if (!e.wait(t, forever ? detail::Clock::now() : detail::Clock::now() + std::chrono::milliseconds(ms),
		    forever)) {
		if (e.abortOne(t, ETIMEDOUT))
			throw DMAError(ETIMEDOUT, MP_ERR_ABORTED, t->ch->id, t->bytes,
				       std::string("mprace: ") + to_string(t->ch->id) +
					       " transfer not finished within the wait timeout of " +
					       std::to_string(ms) + " ms: aborted after " +
					       std::to_string(t->bytes) + " bytes");
	}
	if (t->err)
		detail::throwTransferError(t);
	return t->bytes;
}

bool Transfer::abort() { return need(st_)->ch->eng->abortOne(st_); }

TransferResult Transfer::result()
{
	detail::TransferState *t = need(st_);
	TransferResult r;
	if (!t->ch->eng->isDone(t)) {
		std::lock_guard<std::mutex> lk(t->ch->mu);
		r.bytes = t->bytes;
		r.endOfPacket = t->eop;
		r.done = t->finished.load(std::memory_order_relaxed);
		if (!r.done)
			return r;
	}
	r.done = true;
	r.error = t->err;
	r.engineError = t->engine_err;
	r.bytes = t->bytes;
	r.endOfPacket = t->eop;
	return r;
}

void Transfer::release() noexcept
{
	if (st_) {
		st_->ch->eng->release(st_);
		st_ = nullptr;
	}
}

// ------------------------------------------------------------------------------------------
// DMAEngine

namespace {
detail::EngineState &need(const std::shared_ptr<detail::EngineState> &s)
{
	if (!s)
		throw Error(ENODEV, "mprace::DMAEngine: moved-from engine");
	return *s;
}
} // namespace

DMAEngine::DMAEngine(Board &board, const EngineOptions &options)
{
	if (!board.isOpen())
		throw Error(ENODEV, "mprace::DMAEngine: the board is closed");
	auto s = std::make_shared<detail::EngineState>(board, options);
	detail::BoardState &b = *s->board;
	std::lock_guard<std::mutex> lk(b.mu);
	if (b.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the board is closed");
	if (b.engine)
		throw Error(EBUSY, "mprace::DMAEngine: the board already has an open DMAEngine");
	for (auto &c : s->ch) {
		std::lock_guard<std::mutex> cl(c->mu);
		s->setupChannel(*c);
	}
	detail::setupInterrupts(*s);
	b.engine = s.get();
	s_ = std::move(s);
}

DMAEngine::DMAEngine(DMAEngine &&) noexcept = default;

DMAEngine &DMAEngine::operator=(DMAEngine &&o) noexcept
{
	if (this != &o) {
		if (s_)
			s_->shutdown();
		s_ = std::move(o.s_);
	}
	return *this;
}

DMAEngine::~DMAEngine()
{
	if (s_)
		s_->shutdown();
}

Transfer DMAEngine::submit(Channel channel, DMABuffer &buffer, std::uint64_t offset,
			   std::uint64_t length, std::uint32_t flags)
{
	return Transfer(need(s_).submitOne(channel, buffer.state(), offset, length, flags));
}

void DMAEngine::submit(Channel channel, const Request *reqs, std::size_t n, Transfer *out)
{
	detail::EngineState &e = need(s_);
	if (n && !out)
		throw Error(EINVAL, "mprace::DMAEngine::submit: no room for handles");
	// Old handles in `out` are released first: releasing takes the channel lock, which the
	// submission holds while it hands out the new ones.
	for (std::size_t i = 0; i < n; i++)
		out[i].release();
	e.submitMany(
		channel, reqs, n,
		[](void *ctx, std::size_t i, detail::TransferState *t) {
			static_cast<Transfer *>(ctx)[i] = Transfer(t);
		},
		out);
}

std::uint64_t DMAEngine::read(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length)
{
	return submit(Channel::C2H, buffer, offset, length, 0).get();
}

std::uint64_t DMAEngine::write(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length,
			       std::uint32_t flags)
{
	return submit(Channel::H2C, buffer, offset, length, flags).get();
}

Transfer DMAEngine::submitRaw(Channel channel, std::uint64_t bus_addr, std::uint32_t len,
			      std::uint32_t ctrl)
{
	return Transfer(need(s_).submitRaw(channel, bus_addr, len, ctrl));
}

void DMAEngine::abort(Channel channel)
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<std::mutex> lk(c.mu);
	if (e.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	e.stopAndCancel(c);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

std::size_t DMAEngine::poll(Channel channel)
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<std::mutex> lk(c.mu);
	if (e.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine::poll: the board or the engine was closed");
	return e.reap(c);
}

std::size_t DMAEngine::outstanding(Channel channel) const
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<std::mutex> lk(c.mu);
	return c.outstanding;
}

void DMAEngine::setStallTimeout(std::uint32_t us)
{
	detail::EngineState &e = need(s_);
	for (auto &c : e.ch) {
		std::lock_guard<std::mutex> lk(c->mu);
		if (e.closed.load())
			throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
		e.stall_us.store(us);
		c->wr(MP_CHREG_TIMEOUT_US, us);
	}
}

void DMAEngine::setWaitTimeout(std::chrono::milliseconds t)
{
	if (t.count() < 0)
		throw Error(EINVAL, "mprace::DMAEngine: negative wait timeout");
	need(s_).wait_timeout_ms.store(t.count());
}

std::chrono::milliseconds DMAEngine::waitTimeout() const
{
	return std::chrono::milliseconds(need(s_).wait_timeout_ms.load());
}

Completion DMAEngine::completion() const { return need(s_).opts.completion; }
std::uint32_t DMAEngine::ringEntries() const { return need(s_).opts.ringEntries; }

ChannelStatus DMAEngine::status(Channel channel) const
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<std::mutex> lk(c.mu); // BYTES_LO latches BYTES_HI
	ChannelStatus s;
	std::uint32_t st = c.rd(MP_CHREG_STATUS);
	s.state = MP_FIELD_GET(st, MP_CHREG_STATUS_STATE);
	s.busy = (st & MP_CHREG_STATUS_BUSY_MASK) != 0;
	s.errorCode = MP_FIELD_GET(st, MP_CHREG_STATUS_ERROR_CODE);
	s.head = c.rd(MP_CHREG_HEAD);
	s.tail = c.rd(MP_CHREG_TAIL);
	std::uint32_t lo = c.rd(MP_CHREG_BYTES_LO);
	s.bytes = (static_cast<std::uint64_t>(c.rd(MP_CHREG_BYTES_HI)) << 32) | lo;
	return s;
}

const DMADescriptorList &DMAEngine::ring(Channel channel) const
{
	return need(s_).chan(channel).ring;
}

} // namespace mprace
