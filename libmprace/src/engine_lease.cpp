// SPDX-License-Identifier: LGPL-2.1-or-later
//
// A channel lent to a producer outside the library (ChannelLease in dma.hpp): the ring and the
// doorbell are the producer's until it is given back, which resets the channel and clears the
// ring so that the library's own numbering starts again from slot 0, as after recovery.
#include <cstring>

#include "internal.hpp"

namespace mprace {

namespace detail {

void ChannelState::checkNotLent(const char *who) const
{
	MPRACE_ASSERT_HELD(mu);
	if (lent)
		throw Error(EBUSY, std::string(who) + ": the channel is lent (DMAEngine::lend); "
						      "give the ChannelLease back first");
}

} // namespace detail

ChannelLease DMAEngine::lend(Channel channel)
{
	if (!s_)
		throw Error(ENODEV, "mprace::DMAEngine::lend: moved-from engine");
	detail::EngineState &e = *s_;
	detail::ChannelState &c = e.chan(channel);
	detail::BoardState &b = *e.board;
	if (b.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine::lend: the board is closed");
	std::size_t size = 0;
	void *bar0 = nullptr;
	try {
		bar0 = b.dev.mapBar(MP_ENGINE_BAR, 0, &size);
	} catch (const Error &err) {
		throw Error(err.code().value(), std::string("mprace::DMAEngine::lend: BAR0 cannot be "
							    "mapped: ") + err.what());
	}
	if (size < MP_ENGINE_BAR0_SIZE)
		throw Error(EINVAL, "mprace::DMAEngine::lend: BAR0 is " + std::to_string(size) +
					    " bytes, smaller than the engine's registers");
	std::lock_guard<detail::OwnedMutex> lk(c.mu);
	if (e.closed.load())
		throw Error(ENODEV, "mprace::DMAEngine::lend: the engine is closed");
	if (b.lost.load())
		throw Error(ENODEV, std::string("mprace::DMAEngine::lend: ") + detail::kBoardLost);
	if (c.lent)
		throw Error(EBUSY, "mprace::DMAEngine::lend: the channel is lent already");
	if (c.outstanding)
		throw Error(EBUSY, "mprace::DMAEngine::lend: " + std::to_string(c.outstanding) +
					   " transfers of the channel are outstanding; wait for them first");
	e.resetChannel(c);
	c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
	c.lent = true;
	return ChannelLease(s_, channel, bar0, size, b.info.pci.backend == PD_BACKEND_KERNEL);
}

ChannelLease::ChannelLease(ChannelLease &&o) noexcept
	: e_(std::move(o.e_)), ch_(o.ch_), bar0_(o.bar0_), bar0_size_(o.bar0_size_),
	  device_(o.device_)
{
	o.e_.reset();
}

ChannelLease &ChannelLease::operator=(ChannelLease &&o) noexcept
{
	if (this != &o) {
		giveBack();
		e_ = std::move(o.e_);
		o.e_.reset();
		ch_ = o.ch_;
		bar0_ = o.bar0_;
		bar0_size_ = o.bar0_size_;
		device_ = o.device_;
	}
	return *this;
}

namespace {
const ChannelLease &need(const ChannelLease &l)
{
	if (!l.valid())
		throw Error(EINVAL, "mprace::ChannelLease: not a lease (moved from or given back)");
	return l;
}
} // namespace

// The lease keeps the board's device (and so BAR0's mapping) open, but a closed engine or
// board takes no more doorbells: the channel was reset when it closed.
void ChannelLease::checkOpen() const
{
	need(*this);
	if (e_->closed.load() || e_->board->closed.load())
		throw Error(ENODEV, "mprace::ChannelLease: the engine or the board is closed");
}

Channel ChannelLease::channel() const { return need(*this).ch_; }
DMADescriptorList &ChannelLease::ring() const { return need(*this).e_->chan(ch_).ring; }
void *ChannelLease::bar0() const { return need(*this).bar0_; }
std::size_t ChannelLease::bar0Size() const { return need(*this).bar0_size_; }
bool ChannelLease::bar0IsDeviceMemory() const { return need(*this).device_; }

volatile std::uint32_t *ChannelLease::doorbell() const
{
	checkOpen();
	return reinterpret_cast<volatile std::uint32_t *>(
		static_cast<unsigned char *>(bar0_) + MP_CH_BASE(static_cast<unsigned int>(ch_)) +
		MP_CHREG_TAIL);
}

void ChannelLease::ringDoorbell(std::uint32_t count) const
{
	// one 32-bit release store: the descriptors before it, for any observer (an atomic store,
	// not a volatile one, so that the virtual board's watching thread reads it race-free)
	__atomic_store_n(const_cast<std::uint32_t *>(doorbell()), count, __ATOMIC_RELEASE);
}

void ChannelLease::giveBack() noexcept
{
	if (!e_)
		return;
	detail::EngineState &e = *e_;
	detail::ChannelState &c = e.chan(ch_);
	{
		std::lock_guard<detail::OwnedMutex> lk(c.mu);
		if (!e.closed.load() && !e.board->closed.load() && !e.board->lost.load()) {
			e.resetChannel(c);
			// the borrower's slots mean nothing to the engine's users: a stale record or
			// cookie would pass for one of theirs (the ring is idle after the RESET)
			std::memset(c.ring.memory().data(), 0, c.ring.memory().size());
			c.wr(MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
		}
		c.lent = false;
	}
	e_.reset();
}

} // namespace mprace
