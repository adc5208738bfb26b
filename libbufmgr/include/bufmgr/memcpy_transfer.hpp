// SPDX-License-Identifier: LGPL-2.1-or-later
//
// MemcpyTransfer: a host-only Transfer policy. A worker thread per direction plays the board:
// it fills buffers (C2H) from a source and drains them (H2C) into a sink, asynchronously, in
// order, like the engine's two channels. For tests of the algorithms without any device, for
// comparisons (what the algorithm costs when the "link" is memcpy) and for fault injection.
#ifndef BUFMGR_MEMCPY_TRANSFER_HPP
#define BUFMGR_MEMCPY_TRANSFER_HPP


#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bufmgr/concepts.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/memory.hpp"
#include "mprace-spec/pattern.h"

namespace bufmgr {

// Options of MemcpyTransfer (a namespace-scope struct so that it can be a default argument).
struct MemcpyOptions {
	std::size_t granule = 1;      // lengths must be multiples (set 4 to mimic the engine)
	// C2H source: the counter pattern from pattern_seed, unless `source` is set, whose
	// source_size bytes are then sent over and over.
	std::uint32_t pattern_seed = 0;
	const void *source = nullptr;
	std::size_t source_size = 0;
	// H2C sink: written sequentially into `sink` (a drain past sink_size fails with ENOSPC);
	// without a sink, a checker compares with the pattern from check_seed.
	void *sink = nullptr;
	std::size_t sink_size = 0;
	std::uint32_t check_seed = 0;
	// Link model: each transfer lasts bytes / rate from its own start, the later of its
	// start() and the end of the previous transfer (an idle link banks nothing; a late
	// wake-up of the worker costs nothing). MB/s = 10^6 bytes/s; 0: as fast as memcpy.
	double rate_mbps = 0;
	// Fault injection, counted per direction from 1 since construction (or set_faults):
	// transfer number fail_at[d] moves half its bytes, then fails with fail_errno (the
	// direction then fails everything queued until reset, like the engine);
	// stall_at[d] never finishes until abort(); packet_at[d] (C2H) ends a packet halfway.
	std::uint64_t fail_at[2] = {0, 0};
	int fail_errno = EIO;
	std::uint64_t stall_at[2] = {0, 0};
	std::uint64_t packet_at[2] = {0, 0};
};

// Policies: models Transfer (bufmgr/concepts.hpp), both directions, adopt() supported.
// Requirements: none beyond the concept. Buffers are HostMemory (MemoryKind::host).
// Thread safety: as the concept: one driving thread; abort() and the counters from any thread.
class MemcpyTransfer {
public:
	using Options = MemcpyOptions;


	static constexpr bool can_c2h = true;
	static constexpr bool can_h2c = true;

	explicit MemcpyTransfer(Options o = Options()) : s_(std::make_unique<Shared>(std::move(o)))
	{
		if (s_->opt.granule == 0 || (s_->opt.granule & (s_->opt.granule - 1)) != 0)
			throw Error(EINVAL, "bufmgr::MemcpyTransfer: granule must be a power of two");
		if (s_->opt.source && s_->opt.source_size == 0)
			throw Error(EINVAL, "bufmgr::MemcpyTransfer: source_size is 0");
	}
	MemcpyTransfer(MemcpyTransfer &&) noexcept = default;
	MemcpyTransfer &operator=(MemcpyTransfer &&) noexcept = default;
	~MemcpyTransfer() = default; // Shared's destructor stops and joins the workers

	std::size_t granule() const noexcept { return s_->opt.granule; }

	// Pre: nothing in flight. Replaces the buffers by count fresh HostMemory buffers.
	void allocate(std::size_t count, std::size_t size)
	{
		check_size(count, size);
		std::vector<HostMemory> mem;
		std::vector<BufferView> views;
		for (std::size_t i = 0; i < count; ++i) {
			mem.emplace_back(size);
			views.push_back({mem.back().data(), size, MemoryKind::host});
		}
		set_buffers(std::move(views));
		s_->owned = std::move(mem);
	}

	// Pre: nothing in flight. Uses buffers owned elsewhere (they must outlive their use here).
	void adopt(const BufferView *views, std::size_t count)
	{
		check_size(count, count ? views[0].size : 0);
		std::vector<BufferView> v(views, views + count);
		for (const auto &b : v)
			if (b.size != v[0].size || !b.data)
				throw Error(EINVAL, "bufmgr::MemcpyTransfer::adopt: buffers must be non-null and equally sized");
		set_buffers(std::move(v));
		s_->owned.clear();
	}

	std::size_t buffer_count() const noexcept { return s_->views.size(); }
	std::size_t buffer_size() const noexcept { return s_->views.empty() ? 0 : s_->views[0].size; }
	BufferView view(std::size_t i) const { return s_->views.at(i); }

	// Driving thread. Queues buffer i; returns at once.
	void start(Direction d, std::size_t i, std::size_t n)
	{
		Channel &c = s_->ch[idx(d)];
		if (i >= s_->views.size() || n == 0 || n > s_->views[i].size || n % s_->opt.granule != 0)
			throw Error(EINVAL, std::string("bufmgr::MemcpyTransfer::start: bad buffer or length (") +
					    std::to_string(n) + " bytes)");
		std::lock_guard<std::mutex> lk(c.m);
		if (c.result[i].state != Result::idle)
			throw Error(EBUSY, "bufmgr::MemcpyTransfer::start: buffer already queued");
		c.result[i] = Result{Result::queued, 0, 0, ++c.started};
		c.queue.push_back({i, n, c.started, std::chrono::steady_clock::now()});
		if (!c.worker.joinable())
			c.worker = std::thread([s = s_.get(), d] { s->run(d); });
		c.cv.notify_all();
	}

	// Driving thread. Blocks until buffer i is done; returns the bytes moved or throws.
	std::size_t wait(Direction d, std::size_t i)
	{
		return *wait_until(d, i, std::nullopt, "wait");
	}

	// Driving thread. As wait(), but std::nullopt when buffer i is still busy after timeout.
	std::optional<std::size_t> wait_for(Direction d, std::size_t i, std::chrono::microseconds timeout)
	{
		return wait_until(d, i, std::chrono::steady_clock::now() + timeout, "wait_for");
	}

	// Any thread. Transfers of d started so far end at once (ECANCELED unless already done);
	// later ones are not affected.
	void abort(Direction d) noexcept
	{
		Channel &c = s_->ch[idx(d)];
		std::lock_guard<std::mutex> lk(c.m);
		c.aborted_upto = c.started;
		c.cv.notify_all();
	}

	// Driving thread, no wait in progress. Waits for the worker to let go of the buffers.
	void reset(Direction d) noexcept
	{
		Channel &c = s_->ch[idx(d)];
		std::unique_lock<std::mutex> lk(c.m);
		c.aborted_upto = c.started;
		c.cv.notify_all();
		c.cv.wait(lk, [&] { return !c.busy; });
		c.queue.clear();
		for (auto &r : c.result)
			r = Result{};
		c.error = 0;
		c.link_free = {}; // what was aborted no longer occupies the link
	}

	// Counters and the model's state, any thread.
	std::uint64_t bytes(Direction d) const noexcept { return s_->ch[idx(d)].bytes.load(std::memory_order_relaxed); }
	std::uint64_t transfers(Direction d) const noexcept { return s_->ch[idx(d)].count.load(std::memory_order_relaxed); }
	std::uint64_t check_bytes() const noexcept { return s_->check_bytes.load(std::memory_order_relaxed); }
	std::uint64_t check_mismatches() const noexcept { return s_->check_bad.load(std::memory_order_relaxed); }

	// Driving thread, nothing in flight: new fault settings; the per-direction counts restart.
	void set_faults(const std::uint64_t fail_at[2], const std::uint64_t stall_at[2], int err = EIO)
	{
		for (Channel &c : s_->ch) {
			std::lock_guard<std::mutex> lk(c.m);
			c.count.store(0, std::memory_order_relaxed);
		}
		for (int k = 0; k < 2; ++k) {
			s_->opt.fail_at[k] = fail_at ? fail_at[k] : 0;
			s_->opt.stall_at[k] = stall_at ? stall_at[k] : 0;
		}
		s_->opt.fail_errno = err;
	}

	// Any thread: the transfers start() has queued in direction d (since construction).
	std::uint64_t started(Direction d) const
	{
		Channel &c = s_->ch[idx(d)];
		std::lock_guard<std::mutex> lk(c.m);
		return c.started;
	}

private:
	std::optional<std::size_t> wait_until(Direction d, std::size_t i,
					      std::optional<std::chrono::steady_clock::time_point> deadline,
					      const char *what)
	{
		Channel &c = s_->ch[idx(d)];
		std::unique_lock<std::mutex> lk(c.m);
		Result &r = c.result.at(i);
		if (r.state == Result::idle)
			throw Error(EINVAL, std::string("bufmgr::MemcpyTransfer::") + what + ": buffer was not started");
		auto over = [&] { return r.state == Result::done || r.gen <= c.aborted_upto || c.error; };
		if (!deadline)
			c.cv.wait(lk, over);
		else if (!c.cv.wait_until(lk, *deadline, over))
			return std::nullopt;
		if (r.state != Result::done)
			throw Error(ECANCELED,
				    std::string("bufmgr::MemcpyTransfer: ") + to_string(d) +
					    (c.error ? " transfer cancelled: an earlier one failed" : " transfer aborted"));
		r.state = Result::idle;
		if (r.err)
			throw Error(r.err, std::string("bufmgr::MemcpyTransfer: ") + to_string(d) +
						   (r.err == ECANCELED ? " transfer aborted"
								       : " transfer failed (injected fault or sink full)"));
		return r.bytes;
	}

	struct Result {
		enum State { idle, queued, done } state = idle;
		std::size_t bytes = 0;
		int err = 0;
		std::uint64_t gen = 0; // start number: aborted when <= Channel::aborted_upto
	};
	struct Job {
		std::size_t index, bytes;
		std::uint64_t gen;
		std::chrono::steady_clock::time_point queued; // when start() queued it
	};
	// One direction: its queue, the per-buffer results and the worker that plays the board.
	// m guards everything but the atomics; the worker touches buffer memory only while busy.
	struct Channel {
		std::mutex m;
		std::condition_variable cv;
		std::deque<Job> queue;
		std::vector<Result> result;
		bool busy = false, quit = false;
		std::uint64_t started = 0, aborted_upto = 0; // start numbers
		int error = 0;                  // the direction failed: nothing more is processed
		std::uint64_t pos = 0;          // stream offset of the next byte (worker only)
		std::chrono::steady_clock::time_point link_free{}; // link model: end of the last transfer
		std::atomic<std::uint64_t> count{0}, bytes{0};
		std::thread worker;
	};

	struct Shared {
		explicit Shared(Options o) : opt(std::move(o)) {}
		~Shared()
		{
			for (Channel &c : ch) {
				{
					std::lock_guard<std::mutex> lk(c.m);
					c.quit = true;
					c.cv.notify_all();
				}
				if (c.worker.joinable())
					c.worker.join();
			}
		}

		void run(Direction d)
		{
			Channel &c = ch[idx(d)];
			std::unique_lock<std::mutex> lk(c.m);
			for (;;) {
				c.cv.wait(lk, [&] { return c.quit || (!c.queue.empty() && !c.error); });
				if (c.quit)
					return;
				const Job job = c.queue.front();
				c.queue.pop_front();
				auto aborted = [&] { return job.gen <= c.aborted_upto || c.quit; };
				if (aborted()) {
					c.result[job.index] = Result{Result::done, 0, ECANCELED, job.gen};
					c.cv.notify_all();
					continue;
				}
				c.busy = true;
				const std::uint64_t n = c.count.fetch_add(1, std::memory_order_relaxed) + 1;
				const int k = idx(d);
				const bool fault = n == opt.fail_at[k], stall = n == opt.stall_at[k];
				const bool packet = d == Direction::c2h && n == opt.packet_at[k];
				// The link starts a transfer when it is queued or when the previous one ends,
				// whichever is later: late wake-ups of this thread do not slow the model down,
				// and an idle link banks nothing.
				const auto t0 = std::max(job.queued, c.link_free);
				int err = 0;
				std::size_t moved = job.bytes;
				if (stall) {
					c.cv.wait(lk, aborted);
					err = ECANCELED;
					moved = 0;
				} else {
					if (fault || packet)
						moved = job.bytes / 2 / opt.granule * opt.granule;
					const std::uint64_t pos = c.pos;
					lk.unlock();
					err = move_data(d, views[job.index].data, moved, pos);
					if (fault)
						err = opt.fail_errno;
					lk.lock();
					c.pos += moved;
					c.bytes.fetch_add(moved, std::memory_order_relaxed);
					if (opt.rate_mbps > 0) {
						const auto dt = std::chrono::duration<double>(moved / (opt.rate_mbps * 1e6));
						c.link_free = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(dt);
						c.cv.wait_until(lk, c.link_free, aborted);
					}
				}
				c.busy = false;
				c.result[job.index] = Result{Result::done, moved, err, job.gen};
				if (err && err != ECANCELED)
					c.error = err; // like the engine: a failed direction stops until reset
				c.cv.notify_all();
			}
		}

		int move_data(Direction d, std::byte *buf, std::size_t n, std::uint64_t pos)
		{
			if (d == Direction::c2h) {
				if (!opt.source) {
					mp_pattern_fill(buf, n, pos, opt.pattern_seed);
					return 0;
				}
				const auto *src = static_cast<const std::byte *>(opt.source);
				for (std::size_t k = 0; k < n;) {
					const std::size_t off = (pos + k) % opt.source_size;
					const std::size_t m = std::min(n - k, opt.source_size - off);
					std::memcpy(buf + k, src + off, m);
					k += m;
				}
				return 0;
			}
			if (!opt.sink) {
				check_bad.fetch_add(mp_pattern_count_mismatches(buf, n, pos, opt.check_seed),
						    std::memory_order_relaxed);
				check_bytes.fetch_add(n, std::memory_order_relaxed);
				return 0;
			}
			if (pos + n > opt.sink_size)
				return ENOSPC;
			std::memcpy(static_cast<std::byte *>(opt.sink) + pos, buf, n);
			return 0;
		}

		Options opt;
		std::vector<BufferView> views;
		std::vector<HostMemory> owned;
		Channel ch[2];
		std::atomic<std::uint64_t> check_bytes{0}, check_bad{0};
	};

	static int idx(Direction d) noexcept { return d == Direction::c2h ? 0 : 1; }

	void check_size(std::size_t count, std::size_t size) const
	{
		if (count == 0 || size == 0 || size % s_->opt.granule != 0)
			throw Error(EINVAL, "bufmgr::MemcpyTransfer: need >= 1 buffer of a non-zero multiple of the granule");
	}

	void set_buffers(std::vector<BufferView> v)
	{
		for (Channel &c : s_->ch) {
			std::lock_guard<std::mutex> lk(c.m);
			if (c.busy || !c.queue.empty())
				throw Error(EBUSY, "bufmgr::MemcpyTransfer: buffers replaced while a transfer is in flight");
			c.result.assign(v.size(), Result{});
		}
		s_->views = std::move(v);
	}

	std::unique_ptr<Shared> s_;
};

} // namespace bufmgr

#endif // BUFMGR_MEMCPY_TRANSFER_HPP
