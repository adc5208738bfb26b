// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Waiting for a transfer: polling the completion records with a backoff, or sleeping on the
// channel's interrupt vector; either way with periodic health checks of the channel.
#include <algorithm>
#include <thread>

#include <sys/prctl.h>

#include "internal.hpp"

namespace mprace {
namespace detail {

namespace {

// Waiting for a completion record: spin briefly (a 4 KiB transfer takes about a microsecond;
// no spinning for a thread that may use one CPU only, EngineState::spin_pauses), then yield for up to 400 us of waiting (a sleep and its wake-up cost 15-40 us more than
// asked on a busy or virtual machine), then sleep a thirty-second of the time waited so far
// (6 us .. 1 ms), so that a long wait costs no CPU and is seen done within a few per cent of
// its length.
// The sleeps run with 1 us of timer slack (the thread's own setting is restored afterwards):
// with Linux's default 50 us a 250 us transfer was seen 20 % late.
class Backoff {
public:
	explicit Backoff(unsigned int spin_pauses) : spins_(spin_pauses) {}
	Backoff(const Backoff &) = delete;
	Backoff &operator=(const Backoff &) = delete;
	~Backoff()
	{
		if (slack_set_)
			prctl(PR_SET_TIMERSLACK, old_slack_, 0, 0, 0);
	}
	void pause()
	{
		if (n_ == 0)
			t0_ = Clock::now();
		if (n_ < spins_) {
			cpuRelax();
		} else if (Clock::now() - t0_ < kYieldFor) {
			std::this_thread::yield();
		} else {
			if (!slack_set_) {
				int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
				if (old > 0 && prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0) {
					old_slack_ = static_cast<unsigned long>(old);
					slack_set_ = true;
				}
			}
			auto waited = Clock::now() - t0_;
			std::this_thread::sleep_for(std::clamp<Clock::duration>(
				waited / 32, std::chrono::microseconds(6), std::chrono::milliseconds(1)));
		}
		n_++;
	}
	void reset() { n_ = 0; }

private:
	static constexpr auto kYieldFor = std::chrono::microseconds(400);
	unsigned int spins_;
	unsigned int n_ = 0;
	Clock::time_point t0_;
	unsigned long old_slack_ = 0;
	bool slack_set_ = false;
};

// Checks how long a health check (an MMIO read of STATUS) may be put off while waiting without
// progress: long enough to stay off the fast path, short enough to notice a stop quickly.
constexpr auto kHealthInterval = std::chrono::milliseconds(10);

} // namespace

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
	std::unique_lock<OwnedMutex> lk(o.mu, std::try_to_lock);
	if (!lk)
		return;
	if (check)
		checkChannel(o);
	reap(o);
}

bool EngineState::waitPolling(TransferState *t, Clock::time_point deadline, bool forever)
{
	ChannelState &c = *t->ch;
	Backoff backoff(spin_pauses);
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
			std::lock_guard<OwnedMutex> lk(c.mu);
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
			std::lock_guard<OwnedMutex> lk(c.mu);
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
	std::unique_lock<OwnedMutex> lk(c.mu);
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
				std::lock_guard<OwnedMutex> ol(o->mu);
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
	std::lock_guard<OwnedMutex> lk(c.mu);
	reap(c);
	return t->finished.load(std::memory_order_relaxed);
}

} // namespace detail
} // namespace mprace
