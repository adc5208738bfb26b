// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Doorbell: lets a thread sleep until a lock-free queue it polls may have changed (an
// "eventcount"). The queues themselves stay lock-free; the mutex is touched only when a thread
// really sleeps or wakes a sleeper.
//
//   waiter:   auto key = bell.prepare();  if (q.pop(x)) ...; else bell.wait(key);
//   notifier: q.push(x); bell.notify();
//
// No wake-up is lost: the waiter announces itself (waiters_++) before re-checking the epoch, the
// notifier bumps the epoch before checking for waiters; both pairs are seq_cst, so at least one
// of them sees the other (Dekker). A sleeper re-checks the epoch under the mutex the notifier
// takes before notify_all().
#ifndef BUFMGR_DETAIL_DOORBELL_HPP
#define BUFMGR_DETAIL_DOORBELL_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace bufmgr::detail {

class Doorbell {
public:
	using Key = std::uint64_t;

	// Any thread. Read before polling the condition.
	Key prepare() const noexcept { return epoch_.load(std::memory_order_seq_cst); }

	// Any thread. Returns once notify() was called after prepare() returned key (at once if it
	// already was). May return spuriously; callers re-poll.
	void wait(Key key)
	{
		waiters_.fetch_add(1, std::memory_order_seq_cst);
		if (epoch_.load(std::memory_order_seq_cst) == key) {
			std::unique_lock<std::mutex> lk(m_);
			cv_.wait(lk, [&] { return epoch_.load(std::memory_order_seq_cst) != key; });
		}
		waiters_.fetch_sub(1, std::memory_order_seq_cst);
	}

	// As wait(), but gives up after rel_time; returns false on timeout.
	template <class Rep, class Period>
	bool wait_for(Key key, std::chrono::duration<Rep, Period> rel_time)
	{
		bool rang = true;
		waiters_.fetch_add(1, std::memory_order_seq_cst);
		if (epoch_.load(std::memory_order_seq_cst) == key) {
			std::unique_lock<std::mutex> lk(m_);
			rang = cv_.wait_for(lk, rel_time,
					    [&] { return epoch_.load(std::memory_order_seq_cst) != key; });
		}
		waiters_.fetch_sub(1, std::memory_order_seq_cst);
		return rang;
	}

	// Any thread, after making the change visible (e.g. after a queue push).
	void notify()
	{
		epoch_.fetch_add(1, std::memory_order_seq_cst);
		if (waiters_.load(std::memory_order_seq_cst) != 0) {
			{ std::lock_guard<std::mutex> lk(m_); }
			cv_.notify_all();
		}
	}

private:
	std::atomic<Key> epoch_{0};
	std::atomic<int> waiters_{0};
	std::mutex m_;
	std::condition_variable cv_;
};

} // namespace bufmgr::detail

#endif // BUFMGR_DETAIL_DOORBELL_HPP
