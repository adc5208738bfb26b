// SPDX-License-Identifier: LGPL-2.1-or-later
//
// CopyWorkers: a few threads that share one copy (and its transform) over disjoint slices.
//
// One thread's memcpy moves 5-10 GB/s on large buffers; a Gen4 x16 board delivers 28 GB/s. The
// buffer managers therefore cut each DMA buffer's copy into slices and run them on the calling
// thread plus threads() - 1 workers. The workers live as long as the CopyWorkers (one start-up,
// not one per copy) and sleep on a condition variable between copies.
//
// Slices are claimed one at a time under the mutex, by the workers and by the calling thread
// alike, so a worker that wakes late finds its share already done by the others instead of
// delaying the copy: with every worker asleep the copy runs at one thread's speed, never slower.
// The caller returns only after every claimed slice has finished (under the mutex: what the
// slices wrote happens-before the return).
#ifndef BUFMGR_COPY_WORKERS_HPP
#define BUFMGR_COPY_WORKERS_HPP

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace bufmgr {

// The copy threads a buffer manager uses unless told otherwise: half the CPUs (the other half
// is left to the board's driver, the GPU's and the application), at most 4 (enough for
// 28 GB/s), at least 1 (one thread: the caller alone, no workers).
inline std::size_t default_copy_threads() noexcept
{
	const std::size_t cpus = std::thread::hardware_concurrency();
	return std::clamp<std::size_t>(cpus / 2, 1, 4);
}

// Policies: none. Requirements: body(begin, end) may run on any of the threads, several at once
// on disjoint ranges. Thread safety: for_slices() is called by one thread at a time (the
// owner); the object is neither copyable nor movable (its workers point at it).
class CopyWorkers {
public:
	// The most threads one copy is split over; larger requests are clamped.
	static constexpr std::size_t max_threads = 64;

	// threads: the calling thread plus threads - 1 workers (0 means default_copy_threads()).
	// Throws std::system_error if a thread cannot be started.
	explicit CopyWorkers(std::size_t threads = 0)
	{
		if (threads == 0)
			threads = default_copy_threads();
		threads = std::min(threads, max_threads);
		workers_.reserve(threads - 1);
		try {
			for (std::size_t i = 1; i < threads; ++i)
				workers_.emplace_back([this] { worker_loop(); });
		} catch (...) {
			stop_workers();
			throw;
		}
	}
	CopyWorkers(const CopyWorkers &) = delete;
	CopyWorkers &operator=(const CopyWorkers &) = delete;
	~CopyWorkers() { stop_workers(); }

	std::size_t threads() const noexcept { return workers_.size() + 1; }

	// How for_slices() cuts count elements: the slice length and the number of slices.
	struct Plan {
		std::size_t slice, slices;
	};
	Plan plan(std::size_t count, std::size_t align, std::size_t min_slice) const noexcept
	{
		align = std::max<std::size_t>(align, 1);
		const std::size_t parts = threads() * slices_per_thread;
		std::size_t slice = std::max({min_slice, (count + parts - 1) / parts, std::size_t{1}});
		slice = (slice + align - 1) / align * align;
		if (workers_.empty() || slice >= count)
			return Plan{count, count ? 1u : 0u};
		return Plan{slice, (count + slice - 1) / slice};
	}

	// Owner thread. Calls body(begin, end, index) for the slices of plan(count, align,
	// min_slice): consecutive ranges covering [0, count), index 0, 1, ... in range order, each
	// (but the last) a multiple of align and at least min_slice long. Returns when all have
	// run. If a range throws, the ranges not yet started are skipped and the first exception
	// is rethrown here, after every running range has ended.
	template <class F>
	void for_slices(std::size_t count, std::size_t align, std::size_t min_slice, F &&body)
	{
		const Plan p = plan(count, align, min_slice);
		if (p.slices == 0)
			return;
		if (p.slices == 1) {
			body(std::size_t{0}, count, std::size_t{0});
			return;
		}
		using Body = std::remove_reference_t<F>;
		Job job;
		job.ctx = const_cast<void *>(static_cast<const void *>(&body));
		job.run = [](void *ctx, std::size_t b, std::size_t e, std::size_t i) {
			(*static_cast<Body *>(ctx))(b, e, i);
		};
		job.count = count;
		job.slice = p.slice;
		job.slices = p.slices;

		std::unique_lock<std::mutex> lk(m_);
		job_ = job;
		next_ = 0;
		pending_ = job.slices;
		error_ = nullptr;
		lk.unlock();
		work_cv_.notify_all();
		lk.lock();
		run_slices(lk);
		done_cv_.wait(lk, [&] { return pending_ == 0; });
		job_ = Job();
		if (error_)
			std::rethrow_exception(std::exchange(error_, nullptr));
	}

private:
	// More slices than threads, so that a thread that is descheduled for a moment holds back
	// a small part of the copy only.
	static constexpr std::size_t slices_per_thread = 2;

	struct Job {
		void (*run)(void *, std::size_t, std::size_t, std::size_t) = nullptr;
		void *ctx = nullptr;
		std::size_t count = 0, slice = 0, slices = 0;
	};

	// Claims and runs slices until none is left; called with m_ held, returns with it held.
	void run_slices(std::unique_lock<std::mutex> &lk)
	{
		while (next_ < job_.slices) {
			const std::size_t s = next_++;
			const Job job = job_;
			const bool skip = error_ != nullptr;
			lk.unlock();
			std::exception_ptr err;
			if (!skip) {
				try {
					const std::size_t b = s * job.slice;
					job.run(job.ctx, b, std::min(job.count, b + job.slice), s);
				} catch (...) {
					err = std::current_exception();
				}
			}
			lk.lock();
			if (err && !error_)
				error_ = std::move(err);
			if (--pending_ == 0)
				done_cv_.notify_one();
		}
	}

	void worker_loop()
	{
		std::unique_lock<std::mutex> lk(m_);
		for (;;) {
			work_cv_.wait(lk, [&] { return stop_ || next_ < job_.slices; });
			if (stop_)
				return;
			run_slices(lk);
		}
	}

	void stop_workers() noexcept
	{
		{
			std::lock_guard<std::mutex> lk(m_);
			stop_ = true;
		}
		work_cv_.notify_all();
		for (auto &w : workers_)
			w.join();
		workers_.clear();
	}

	// Lock order: m_ only. m_ protects everything below; workers_ is the owner's.
	std::mutex m_;
	std::condition_variable work_cv_; // a job was posted, or stop_
	std::condition_variable done_cv_; // pending_ reached 0
	Job job_;
	std::size_t next_ = 0;    // first slice not yet claimed
	std::size_t pending_ = 0; // slices claimed or not, not yet finished
	std::exception_ptr error_;
	bool stop_ = false;
	std::vector<std::thread> workers_;
};

} // namespace bufmgr

#endif // BUFMGR_COPY_WORKERS_HPP
