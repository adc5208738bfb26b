// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef BUFMGR_RELAY_HPP
#define BUFMGR_RELAY_HPP

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "bufmgr/concepts.hpp"
#include "bufmgr/detail/chunk_plan.hpp"
#include "bufmgr/detail/doorbell.hpp"
#include "bufmgr/error.hpp"

namespace bufmgr {

// Relay: moves a stream from one Transfer to another through K shared DMA buffers, with no
// CPU copy: Source fills a buffer (C2H), Sink drains the very same memory (H2C), and the buffer
// returns to Source when Sink is done with it. The two links run at the same time (while the
// board fills buffer k+1 the GPU reads buffer k), so the throughput approaches the slower link
// instead of the harmonic sum of both (SEEDS §3: split large indirect transfers into chunks).
// This is the algorithm of the CUDA stage (bufmgr/cuda.hpp: FPGA -> host -> GPU and back).
//
// Policies:
//   Source  models Transfer with can_c2h (the board via MpraceTransfer, cuda::CudaTransfer
//           reading the GPU, MemcpyTransfer)
//   Sink    models Transfer with can_h2c
// Requirements: Source or Sink provides adopt() (static_assert otherwise). The one without it
// allocates the K buffers and the other adopts them; if both can adopt, Source allocates. The
// adopting side may refuse the memory (the CUDA stage refuses kernel-memory buffers).
//
// Threads: the thread that calls run() drives Source; a worker thread owned by the Relay drives
// Sink. A run() of at most one small piece (kInlineMax, which a pipeline could not overlap
// anyway) drives both on the calling thread, one after the other: no hand-off, so its latency
// is the two links' own, without the thread wake-ups (tens of microseconds) of the pipeline.
// Hand-off through two Boost.Lockfree spsc_queues (ready: caller -> worker, free:
// worker -> caller); in each, the write and read indices sit on separate cache lines, each side
// reads its own index relaxed and the other's with acquire and publishes its own with release
// (boost/lockfree/spsc_queue.hpp). A thread with nothing to do sleeps on a Doorbell.
// Errors: the first error of either side aborts both; run() rethrows it after both transfers
// are reset, and the Relay is reusable. Thread safety: one thread calls run() at a time;
// abort() from any thread.
template <class Source, class Sink>
class Relay {
	static_assert(check_transfer<Source>::value && check_transfer<Sink>::value,
		      "bufmgr::Relay: a policy was rejected (see above)");
	static_assert(Source::can_c2h, "bufmgr::Relay: Source must fill buffers (can_c2h = true)");
	static_assert(Sink::can_h2c, "bufmgr::Relay: Sink must drain buffers (can_h2c = true)");
	static_assert(can_adopt_v<Source> || can_adopt_v<Sink>,
		"bufmgr::Relay: Source and Sink share their buffers, so one of them must provide "
		"`void adopt(const bufmgr::BufferView *, std::size_t)` (MemcpyTransfer and "
		"cuda::CudaTransfer do)");
	static constexpr std::size_t cache_line = 64;
	static constexpr std::uint32_t end_marker = UINT32_MAX;

public:
	using source_type = Source;
	using sink_type = Sink;

	// count: buffers K (>= 2); buffer_size: bytes each (a multiple of both granules).
	// Throws Error(EINVAL), or what allocate()/adopt() throw (e.g. the CUDA stage's refusal).
	Relay(Source source, Sink sink, std::size_t count, std::size_t buffer_size)
		: src_opt_(std::move(source)), sink_opt_(std::move(sink)), src_(*src_opt_), sink_(*sink_opt_),
		  k_(count), unit_(std::lcm(src_.granule(), sink_.granule())), ready_(count + 1), free_(count)
	{
		if (count < 2 || count >= end_marker)
			throw Error(EINVAL, "bufmgr::Relay: needs at least 2 buffers");
		if (buffer_size == 0 || buffer_size % unit_ != 0)
			throw Error(EINVAL, "bufmgr::Relay: buffer size " + std::to_string(buffer_size) +
					    " must be a non-zero multiple of both transfers' granules (" +
					    std::to_string(unit_) + ")");
		std::vector<BufferView> v;
		if constexpr (!can_adopt_v<Sink>) {
			sink_.allocate(count, buffer_size);
			for (std::size_t i = 0; i < count; ++i)
				v.push_back(sink_.view(i));
			src_.adopt(v.data(), v.size());
		} else {
			src_.allocate(count, buffer_size);
			for (std::size_t i = 0; i < count; ++i)
				v.push_back(src_.view(i));
			sink_.adopt(v.data(), v.size());
		}
		chunk_ = buffer_size;
		worker_ = std::thread([this] { worker_main(); });
	}

	Relay(const Relay &) = delete;
	Relay &operator=(const Relay &) = delete;

	// Stops the worker. Pre: no run() in progress (abort() it and let it return first).
	~Relay()
	{
		{
			std::lock_guard<std::mutex> lk(job_m_);
			quit_ = true;
		}
		job_cv_.notify_all();
		worker_.join();
		// The side that adopted the buffers lets go of them (e.g. cudaHostUnregister) before
		// the side that owns them frees them.
		if constexpr (!can_adopt_v<Sink>) {
			src_opt_.reset();
			sink_opt_.reset();
		} else {
			sink_opt_.reset();
			src_opt_.reset();
		}
	}

	// Owning thread. Moves `bytes` from Source to Sink (a multiple of both granules; 0 is a
	// no-op). Post: returns the bytes that reached Sink (fewer only when Source ended a
	// packet); every buffer is back in the pool. Throws the first error of either side
	// (ECANCELED after abort()); both transfers have then been reset and run() may be called
	// again.
	std::size_t run(std::size_t bytes)
	{
		if (bytes == 0)
			return 0;
		if (bytes % unit_ != 0)
			throw Error(EINVAL, "bufmgr::Relay::run: " + std::to_string(bytes) +
					    " bytes is not a multiple of the granule (" + std::to_string(unit_) + ")");
		if (bytes <= std::min(chunk_, kInlineMax))
			return run_inline(bytes);
		// The worker is idle between jobs: the queues are ours to reset.
		Slot s;
		std::uint32_t i;
		while (ready_.pop(s)) {}
		while (free_.pop(i)) {}
		spare_.clear();
		for (std::uint32_t b = 0; b < k_; ++b)
			spare_.push_back(b);
		error_ = nullptr;
		failed_.store(false, std::memory_order_seq_cst);
		{
			std::lock_guard<std::mutex> lk(job_m_);
			++job_seq_;
		}
		job_cv_.notify_all();

		std::size_t moved = 0;
		try {
			moved = drive_source(bytes);
		} catch (...) {
			record_failure(std::current_exception());
		}
		ready_.push(Slot{end_marker, 0}); // capacity K + 1: never full
		sink_bell_.notify();
		{
			std::unique_lock<std::mutex> lk(job_m_);
			job_cv_.wait(lk, [&] { return job_done_ == job_seq_; });
		}
		if (failed_.load(std::memory_order_seq_cst)) {
			src_.abort(Direction::c2h);
			src_.reset(Direction::c2h);
			std::exception_ptr e;
			{
				std::lock_guard<std::mutex> lk(error_m_);
				e = std::exchange(error_, nullptr);
			}
			if (e)
				std::rethrow_exception(e);
			throw Error(ECANCELED, "bufmgr::Relay::run: aborted");
		}
		return moved;
	}

	// The largest run() done on the calling thread alone: below the smallest piece the
	// pipeline splits its ends into (detail::ChunkPlan::min_piece), overlap gains little.
	static constexpr std::size_t kInlineMax = detail::ChunkPlan::min_piece;

	// Any thread: the run() in progress throws ECANCELED promptly.
	void abort() noexcept
	{
		record_failure(nullptr);
	}

	Source &source() noexcept { return src_; }
	Sink &sink() noexcept { return sink_; }
	std::size_t buffer_count() const noexcept { return k_; }
	std::size_t buffer_size() const noexcept { return chunk_; }

private:
	struct Slot {
		std::uint32_t index;
		std::size_t bytes;
	};

	bool failed() const noexcept { return failed_.load(std::memory_order_seq_cst); }

	// Any thread: records the first error, aborts both sides and wakes both threads. Each side
	// also checks failed() before every wait(), so a transfer it started after these aborts
	// is aborted by itself (seq_cst orders the flag against those checks).
	void record_failure(std::exception_ptr e) noexcept
	{
		{
			std::lock_guard<std::mutex> lk(error_m_);
			if (!failed())
				error_ = e; // the first one; null from abort() becomes ECANCELED in run()
			failed_.store(true, std::memory_order_seq_cst);
		}
		src_.abort(Direction::c2h);
		sink_.abort(Direction::h2c);
		src_bell_.notify();
		sink_bell_.notify();
	}

	// Waits for the oldest transfer of side t, buffer i. While `more` (another buffer may come
	// to this side before that transfer ends) and t can wait with a timeout, it returns
	// std::nullopt as soon as `arrived()` so that the caller starts that buffer first: with
	// two buffers, a blocking wait would leave the link idle for one wake-up and submit per
	// buffer (~4 % at 28 GB/s with 8 MiB buffers). Otherwise it blocks in wait(), which keeps
	// the transfer's own timeout.
	template <class T, class Arrived>
	static std::optional<std::size_t> wait_oldest(T &t, Direction d, std::uint32_t i, bool more,
						      Arrived arrived)
	{
		if constexpr (can_wait_for_v<T>) {
			if (more)
				for (;;) {
					if (std::optional<std::size_t> r = t.wait_for(d, i, kArrivalPoll))
						return r;
					if (arrived())
						return std::nullopt;
				}
		}
		return t.wait(d, i);
	}
	static constexpr std::chrono::microseconds kArrivalPoll{20};

	// run() of one small piece: Source fills buffer 0, then Sink drains it, both on this
	// thread (the worker stays idle, so neither side is shared). An abort() from another
	// thread reaches the waits through the transfers' own abort(), as in the pipeline.
	std::size_t run_inline(std::size_t bytes)
	{
		error_ = nullptr;
		failed_.store(false, std::memory_order_seq_cst);
		try {
			src_.start(Direction::c2h, 0, bytes);
			const std::size_t got = src_.wait(Direction::c2h, 0);
			if (got > bytes)
				throw Error(EIO, "bufmgr::Relay: Source reported more bytes than requested");
			if (got > 0 && !failed()) {
				sink_.start(Direction::h2c, 0, got);
				if (sink_.wait(Direction::h2c, 0) != got)
					throw Error(EIO, "bufmgr::Relay: Sink drained fewer bytes than it was given");
			}
			if (failed())
				throw Error(ECANCELED, "bufmgr::Relay::run: aborted");
			return got;
		} catch (...) {
			src_.abort(Direction::c2h);
			src_.reset(Direction::c2h);
			sink_.abort(Direction::h2c);
			sink_.reset(Direction::h2c);
			throw;
		}
	}

	// The caller's side: keep Source busy with every free buffer, hand filled ones to the worker.
	std::size_t drive_source(std::size_t total)
	{
		constexpr Direction d = Direction::c2h;
		// Both ends are exposed: the sink waits for the first fill, the source is done before
		// the last drain.
		const detail::ChunkPlan plan(total, chunk_, unit_, detail::SplitEnds::both);
		const std::size_t nchunks = plan.count();
		auto len = [&](std::size_t c) { return plan.len(c); };
		std::deque<Slot> inflight;
		std::size_t issued = 0, moved = 0;
		for (;;) {
			if (failed())
				return moved;
			std::uint32_t i;
			while (issued < nchunks) {
				if (!spare_.empty()) {
					i = spare_.back();
					spare_.pop_back();
				} else if (!free_.pop(i)) {
					break;
				}
				src_.start(d, i, len(issued));
				inflight.push_back(Slot{i, len(issued)});
				++issued;
			}
			if (inflight.empty()) {
				if (issued == nchunks)
					return moved;
				const auto key = src_bell_.prepare();
				if (free_.read_available() == 0 && !failed())
					src_bell_.wait(key);
				continue;
			}
			if (failed()) {
				src_.abort(d);
				return moved;
			}
			const Slot s = inflight.front();
			// a buffer with the sink may come back while we wait: start it at once
			const bool more = issued < nchunks && inflight.size() < k_;
			const std::optional<std::size_t> r = wait_oldest(src_, d, s.index, more, [&] {
				return free_.read_available() != 0 || failed();
			});
			if (!r)
				continue;
			const std::size_t got = *r;
			inflight.pop_front();
			if (got > s.bytes)
				throw Error(EIO, "bufmgr::Relay: Source reported more bytes than requested");
			moved += got;
			if (got > 0) {
				ready_.push(Slot{s.index, got});
				sink_bell_.notify();
			} else {
				spare_.push_back(s.index);
			}
			if (got < s.bytes) { // end of packet: the relay ends here
				if (!inflight.empty()) {
					src_.abort(d);
					src_.reset(d);
				}
				return moved;
			}
		}
	}

	// The worker's side, one job per run(): drain every ready buffer through Sink, return it.
	void drive_sink()
	{
		constexpr Direction d = Direction::h2c;
		std::deque<Slot> inflight;
		bool end = false;
		for (;;) {
			Slot s;
			while (!end && !failed() && ready_.pop(s)) {
				if (s.index == end_marker) {
					end = true;
					break;
				}
				sink_.start(d, s.index, s.bytes);
				inflight.push_back(s);
			}
			if (failed())
				return;
			if (inflight.empty()) {
				if (end)
					return;
				const auto key = sink_bell_.prepare();
				if (ready_.read_available() == 0 && !failed())
					sink_bell_.wait(key);
				continue;
			}
			s = inflight.front();
			// the source may hand over another buffer while we wait: start it at once
			const bool more = !end && inflight.size() < k_;
			const std::optional<std::size_t> r = wait_oldest(sink_, d, s.index, more, [&] {
				return ready_.read_available() != 0 || failed();
			});
			if (!r)
				continue;
			const std::size_t got = *r;
			inflight.pop_front();
			if (got != s.bytes)
				throw Error(EIO, "bufmgr::Relay: Sink drained fewer bytes than it was given");
			free_.push(s.index); // capacity K: never full
			src_bell_.notify();
		}
	}

	void worker_main()
	{
		std::uint64_t seen = 0;
		for (;;) {
			{
				std::unique_lock<std::mutex> lk(job_m_);
				job_cv_.wait(lk, [&] { return quit_ || job_seq_ != seen; });
				if (quit_)
					return;
				seen = job_seq_;
			}
			try {
				drive_sink();
			} catch (...) {
				record_failure(std::current_exception());
			}
			if (failed()) {
				sink_.abort(Direction::h2c);
				sink_.reset(Direction::h2c);
			}
			{
				std::lock_guard<std::mutex> lk(job_m_);
				job_done_ = seen;
			}
			job_cv_.notify_all();
		}
	}

	std::optional<Source> src_opt_;
	std::optional<Sink> sink_opt_;
	Source &src_; // *src_opt_, alive until the destructor's end
	Sink &sink_;
	std::size_t k_, unit_, chunk_ = 0;
	alignas(cache_line) boost::lockfree::spsc_queue<Slot> ready_; // caller -> worker
	alignas(cache_line) boost::lockfree::spsc_queue<std::uint32_t> free_; // worker -> caller
	alignas(cache_line) detail::Doorbell src_bell_;
	detail::Doorbell sink_bell_;
	alignas(cache_line) std::atomic<bool> failed_{false};
	std::mutex error_m_;
	std::exception_ptr error_; // the first error; guarded by error_m_
	std::vector<std::uint32_t> spare_; // caller only: buffers not yet (or back) in circulation
	std::mutex job_m_;
	std::condition_variable job_cv_;
	std::uint64_t job_seq_ = 0, job_done_ = 0; // guarded by job_m_
	bool quit_ = false;
	std::thread worker_;
};

} // namespace bufmgr

#endif // BUFMGR_RELAY_HPP
