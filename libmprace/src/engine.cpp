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
//
// The work is split by concern: engine_ring.cpp (queue, ring, reap, submission),
// engine_wait.cpp (polling and interrupt waits), engine_recovery.cpp (errors, aborts, reset,
// shutdown); this file has the state's construction and the public classes.
#include <algorithm>
#include <thread>

#include <sched.h>

#include "internal.hpp"

namespace mprace {
namespace detail {

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

EngineState::EngineState(Board &b, const EngineOptions &o) : board(Access::board(b)), opts(o)
{
	if (board->closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the board is closed");
	board->checkAlive("mprace::DMAEngine");
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
	wait_scale = board->info.simulated() ? kSimulatedWaitScale : 1;
	stall_us.store(o.stallTimeoutUs);
	cpu_set_t cpus;
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) == 1)
		spin_pauses = 0;
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
	if (board->lost.load(std::memory_order_relaxed))
		throw Error(ENODEV, std::string("mprace::DMAEngine: ") + kBoardLost);
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

[[noreturn]] void throwTransferError(const TransferState *t)
{
	std::string what = std::string(to_string(t->ch->id)) + " transfer of " +
			   std::to_string(t->length) + " bytes ";
	if (t->engine_err != MP_ERR_NONE && !(t->err == ECANCELED && t->engine_err == MP_ERR_ABORTED))
		what += std::string("failed with engine error ") + mp_engine_error_name(t->engine_err);
	else if (t->err == ECANCELED)
		what += "was aborted";
	else
		what += "failed";
	what += " after " + std::to_string(t->bytes) + " bytes";
	if (t->err == ENODEV)
		what += std::string(": ") + kBoardLost;
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
	std::int64_t ms = e.wait_timeout_ms.load(std::memory_order_relaxed) * e.wait_scale;
	bool forever = ms == 0 || std::chrono::milliseconds(ms) >= kForever;
	if (!e.wait(t, forever ? detail::Clock::now() : detail::Clock::now() + std::chrono::milliseconds(ms),
		    forever)) {
		if (e.abortOne(t, ETIMEDOUT))
			throw DMAError(ETIMEDOUT, MP_ERR_ABORTED, t->ch->id, t->bytes,
				       std::string(to_string(t->ch->id)) +
					       " transfer not finished within the wait timeout of " +
					       std::to_string(ms) + " ms: aborted after " +
					       std::to_string(t->bytes) + " bytes");
	}
	if (t->err)
		detail::throwTransferError(t);
	return t->bytes;
}

bool Transfer::abort()
{
	detail::EngineState &e = *need(st_)->ch->eng;
	bool aborted = e.abortOne(st_);
	if (!aborted && e.board->lost.load())
		e.board->checkAlive("mprace::Transfer::abort"); // it failed with ENODEV instead
	return aborted;
}

TransferResult Transfer::result()
{
	detail::TransferState *t = need(st_);
	TransferResult r;
	if (!t->ch->eng->isDone(t)) {
		std::lock_guard<detail::OwnedMutex> lk(t->ch->mu);
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
		std::lock_guard<detail::OwnedMutex> cl(c->mu);
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
	return detail::Access::adopt(need(s_).submitOne(channel, detail::Access::buffer(buffer), offset, length, flags));
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
			static_cast<Transfer *>(ctx)[i] = detail::Access::adopt(t);
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
	return detail::Access::adopt(need(s_).submitRaw(channel, bus_addr, len, ctrl));
}

void DMAEngine::abort(Channel channel)
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<detail::OwnedMutex> lk(c.mu);
	if (e.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine: the engine is closed");
	c.checkNotLent("mprace::DMAEngine::abort");
	e.stopAndCancel(c);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

std::size_t DMAEngine::poll(Channel channel)
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<detail::OwnedMutex> lk(c.mu);
	if (e.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine::poll: the board or the engine was closed");
	return e.reap(c);
}

std::size_t DMAEngine::outstanding(Channel channel) const
{
	detail::EngineState &e = need(s_);
	detail::ChannelState &c = e.chan(channel);
	std::lock_guard<detail::OwnedMutex> lk(c.mu);
	return c.outstanding;
}

void DMAEngine::setStallTimeout(std::uint32_t us)
{
	detail::EngineState &e = need(s_);
	for (auto &c : e.ch) {
		std::lock_guard<detail::OwnedMutex> lk(c->mu);
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
	std::lock_guard<detail::OwnedMutex> lk(c.mu); // BYTES_LO latches BYTES_HI
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
