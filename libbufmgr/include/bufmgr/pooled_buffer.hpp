// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef BUFMGR_POOLED_BUFFER_HPP
#define BUFMGR_POOLED_BUFFER_HPP

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "bufmgr/detail/buffer_base.hpp"
#include "bufmgr/detail/doorbell.hpp"

namespace bufmgr {

// What a stream does when the consumer falls behind and every DMA buffer is full.
enum class Overflow {
	block, // backpressure: the transfer waits for the consumer to release a buffer (lossless)
	drop,  // overrun: the newest filled buffer is refilled at once, its data dropped and counted,
	       // so the transfer never waits (a board whose source cannot be paused)
};

struct StreamOptions {
	Overflow overflow = Overflow::block;
	// Bytes asked of the transfer per buffer; 0: the whole buffer (rounded down to whole
	// elements of in_type and to the granule). Smaller buffers mean lower latency per buffer.
	std::size_t bytes_per_buffer = 0;
	// Length of the stream in buffers filled (delivered or dropped); 0: until stopped.
	std::uint64_t max_buffers = 0;
};

struct StreamStats {
	std::uint64_t buffers = 0;       // buffers handed to the consumer
	std::uint64_t bytes = 0;         // bytes in them
	std::uint64_t overruns = 0;      // buffers filled and dropped (Overflow::drop)
	std::uint64_t dropped_bytes = 0; // bytes in them
	std::uint64_t backpressure = 0;  // times the transfer had no free buffer and waited (block)
};

// PooledBuffer: K DMA buffers (K a runtime parameter, >= 2) with two ways to use them.
//
// One-shot read()/write(): as DoubleBuffer, with all K buffers in flight. Small buffers keep
// latency per chunk low while K of them keep the transfer busy.
//
// Streaming (board -> user, continuous acquisition): start_stream() starts an engine thread
// that keeps every free buffer queued on the transfer and hands each filled one to the consumer
// (the thread that called start_stream) in order. The consumer takes them with next(), an RAII
// Filled handle that gives the raw data, its sequence number and transform_into(), and returns
// the buffer to the pool when released; or with stream(callback); or with read(), which copies
// through the transform from the stream and keeps the rest of a buffer for the next call.
// Because the buffers are filled before they are asked for, small reads cost a copy, not a DMA
// round trip: this is the pool "for small transfers" MPRACE planned. When the consumer falls
// behind, Overflow::block applies backpressure and Overflow::drop counts overruns.
//
// Hand-off: two Boost.Lockfree spsc_queues, filled (engine -> consumer) and free (consumer ->
// engine), each with capacity K so a push never fails. Inside each queue the write index and
// the read index sit on separate cache lines; each side reads its own index relaxed and the
// other's with acquire, and publishes its own with release (boost/lockfree/spsc_queue.hpp,
// ringbuffer_base::push/pop). The queues are aligned to their own cache lines too. A thread
// with nothing to do sleeps on a Doorbell (detail/doorbell.hpp) instead of spinning.
//
// Policies and Requirements: as ChunkBuffer (bufmgr/chunk_buffer.hpp); the streaming API needs
// Transfer::can_c2h. Errors: a failed transfer ends the stream; the consumer's next() or read()
// rethrows the error (once), and stop_stream() then makes the object reusable.
// Thread safety: the owning (consumer) thread calls everything except request_stop(), abort()
// and stats(), which any thread may call.
template <class Transfer, class Transform = Identity<>>
class PooledBuffer : public detail::BufferBase<Transfer, Transform> {
	using Base = detail::BufferBase<Transfer, Transform>;
	static constexpr std::size_t cache_line = 64;

public:
	using typename Base::in_type;
	using typename Base::out_type;

	// A filled buffer lent to the consumer. Move-only; released (returned to the pool) by
	// release() or its destructor, on the consumer thread, before the PooledBuffer is destroyed
	// or the stream is restarted. An empty Filled (false) marks the end of the stream.
	class Filled {
	public:
		Filled() noexcept = default;
		Filled(Filled &&o) noexcept
			: owner_(std::exchange(o.owner_, nullptr)), index_(o.index_), bytes_(o.bytes_), seq_(o.seq_) {}
		Filled &operator=(Filled &&o) noexcept
		{
			if (this != &o) {
				release();
				owner_ = std::exchange(o.owner_, nullptr);
				index_ = o.index_;
				bytes_ = o.bytes_;
				seq_ = o.seq_;
			}
			return *this;
		}
		Filled(const Filled &) = delete;
		Filled &operator=(const Filled &) = delete;
		~Filled() { release(); }

		explicit operator bool() const noexcept { return owner_ != nullptr; }
		// The raw data as the transfer delivered it (no transform).
		const in_type *data() const noexcept { return reinterpret_cast<const in_type *>(owner_->ptr_[index_]); }
		std::size_t size() const noexcept { return bytes_ / sizeof(in_type); } // whole elements
		std::size_t bytes() const noexcept { return bytes_; }
		// Position in the stream: 0, 1, 2, ... counting dropped buffers too, so a gap in the
		// sequence is an overrun. Without packet ends, the data began at stream byte
		// sequence() * bytes_per_buffer.
		std::uint64_t sequence() const noexcept { return seq_; }
		// Consumer thread. Copies the data through the PooledBuffer's transform, on its copy
		// threads; dst holds size() elements.
		std::size_t transform_into(out_type *dst) const
		{
			owner_->copy(data(), dst, size());
			return size();
		}
		// Consumer thread. Returns the buffer to the pool (no-op when empty).
		void release() noexcept
		{
			if (owner_)
				std::exchange(owner_, nullptr)->give_back(index_);
		}

	private:
		friend class PooledBuffer;
		Filled(PooledBuffer *o, std::uint32_t i, std::size_t b, std::uint64_t s) noexcept
			: owner_(o), index_(i), bytes_(b), seq_(s) {}
		PooledBuffer *owner_ = nullptr;
		std::uint32_t index_ = 0;
		std::size_t bytes_ = 0;
		std::uint64_t seq_ = 0;
	};

	// count: number of DMA buffers K (>= 2); buffer_size: bytes each (a multiple of the granule).
	PooledBuffer(Transfer transfer, std::size_t count, std::size_t buffer_size,
		     Transform transform = Transform())
		: Base(std::move(transfer), check_count(count), buffer_size, std::move(transform)),
		  filled_(count), free_(count), k_(count) {}

	// Stops a running stream (aborting what is in flight) and joins its thread.
	// Pre: no Filled handle outstanding.
	~PooledBuffer() { stop_stream(); }

	// One-shot, with K buffers in flight. Pre/Post/Throws: as ChunkBuffer::read(). While a
	// stream runs, read() instead takes count elements from the stream (see above) and returns
	// fewer only when the stream ended; it rethrows the stream's error.
	std::size_t read(out_type *dst, std::size_t count)
	{
		if (!engine_.joinable())
			return this->do_read(k_, dst, count);
		std::size_t done = 0;
		while (done < count) {
			if (!current_ || offset_ == current_.size()) {
				current_.release();
				offset_ = 0;
				current_ = next();
				if (!current_)
					break;
			}
			const std::size_t n = std::min(count - done, current_.size() - offset_);
			this->copy(current_.data() + offset_, dst + done, n);
			offset_ += n;
			done += n;
		}
		return done;
	}

	// One-shot, with K buffers in flight. Pre/Post/Throws: as ChunkBuffer::write().
	// Pre: no stream running (Error EBUSY otherwise).
	void write(const in_type *src, std::size_t count)
	{
		if (engine_.joinable())
			throw Error(EBUSY, "bufmgr::PooledBuffer::write: a C2H stream is running on the buffers");
		this->do_write(k_, src, count);
	}

	// ---- streaming (board -> user) ----

	// Owning thread. Starts the engine thread; the calling thread becomes the consumer.
	// Pre: no stream running (stop_stream() first, also after the stream ended by itself) and
	// no Filled outstanding; else Error(EBUSY). Post: buffers are being filled.
	void start_stream(const StreamOptions &opt = StreamOptions())
	{
		static_assert(Transfer::can_c2h,
			"bufmgr: streaming moves data board -> user and needs a Transfer with can_c2h = true");
		if (engine_.joinable() || outstanding_ != 0)
			throw Error(EBUSY, "bufmgr::PooledBuffer::start_stream: a stream is running or a "
					   "Filled buffer is still held; stop_stream() and release them first");
		const std::size_t g = this->transfer_.granule();
		const std::size_t chunk = detail::chunk_bytes(this->buffer_size(), g, sizeof(in_type));
		std::size_t len = opt.bytes_per_buffer ? opt.bytes_per_buffer : chunk;
		if (len == 0 || len > this->buffer_size() || len % std::lcm(g, sizeof(in_type)) != 0)
			throw Error(EINVAL, "bufmgr::PooledBuffer::start_stream: bytes_per_buffer must be a "
					    "non-zero multiple of the granule and of sizeof(in_type), at most the buffer size");
		ptr_.clear();
		for (std::size_t i = 0; i < k_; ++i)
			ptr_.push_back(this->transfer_.view(i).data);
		Slot s;
		std::uint32_t i;
		while (filled_.pop(s)) {}
		while (free_.pop(i)) {}
		for (std::uint32_t b = 0; b < k_; ++b)
			free_.push(b);
		stats_reset();
		error_ = nullptr;
		stop_.store(false, std::memory_order_relaxed);
		ended_.store(false, std::memory_order_relaxed);
		engine_ = std::thread([this, opt, len] { engine_loop(opt, len); });
	}

	// Consumer thread. The next filled buffer, in order; blocks until there is one. Returns an
	// empty Filled when the stream has ended (max_buffers reached, or stopped). Throws the
	// transfer's error once if the stream failed; Error(EDEADLK) if the consumer already holds
	// all K buffers (nothing could ever be filled); Error(EINVAL) if no stream was started.
	Filled next()
	{
		return next_waiting([this](auto key) { consumer_bell_.wait(key); return true; });
	}

	// Consumer thread. As next(), but waits at most `timeout`: then it returns an empty Filled
	// with *timed_out set (the stream runs on). An empty Filled with *timed_out clear means the
	// stream has ended. For a consumer that must stay responsive while it waits (the Python
	// package checks for Ctrl-C between waits).
	template <class Rep, class Period>
	Filled next_for(std::chrono::duration<Rep, Period> timeout, bool *timed_out)
	{
		const auto until = std::chrono::steady_clock::now() + timeout;
		*timed_out = false;
		Filled f = next_waiting([&](auto key) {
			const auto now = std::chrono::steady_clock::now();
			if (now >= until)
				return false;
			consumer_bell_.wait_for(key, until - now);
			return true;
		});
		if (!f && !ended_.load(std::memory_order_acquire))
			*timed_out = true;
		return f;
	}

	// Consumer thread. As next(), but never blocks: an empty Filled when none is ready.
	Filled try_next()
	{
		Slot s;
		if (engine_.joinable() && outstanding_ < k_ && filled_.pop(s))
			return lend(s);
		return Filled();
	}

	// Owning thread: runs a whole stream with the calling thread as consumer. on_buffer(Filled &)
	// is called for each filled buffer in order; if it returns bool, false ends the stream. The
	// buffer is released after the call unless the callback moved it out. Ends also at
	// max_buffers or request_stop(). Returns the stream's statistics. Throws the transfer's or
	// the callback's exception after stopping the stream.
	template <class F>
	StreamStats stream(F &&on_buffer, const StreamOptions &opt = StreamOptions())
	{
		start_stream(opt);
		struct Stop {
			PooledBuffer *self;
			~Stop() { self->stop_stream(); }
		} stop{this};
		while (Filled f = next()) {
			if constexpr (std::is_same_v<std::invoke_result_t<F &, Filled &>, bool>) {
				if (!on_buffer(f))
					break;
			} else {
				on_buffer(f);
			}
		}
		return stats();
	}

	// Any thread. Asks the stream to end now: in-flight transfers are aborted, the consumer's
	// next() returns buffers already filled, then an empty Filled. Does not join.
	void request_stop() noexcept
	{
		// seq_cst against the engine's check before each wait(): either the engine sees the
		// flag and aborts itself, or everything it started precedes this abort.
		stop_.store(true, std::memory_order_seq_cst);
		this->transfer_.abort(Direction::c2h);
		engine_bell_.notify();
		consumer_bell_.notify();
	}

	// Owning thread. Stops the stream (as request_stop) and joins the engine thread; buffers
	// still queued for the consumer return to the pool. Post: no stream; start_stream() or the
	// one-shot calls may follow. Idempotent. Pre: no Filled outstanding except read()'s own.
	void stop_stream() noexcept
	{
		current_.release();
		offset_ = 0;
		if (!engine_.joinable())
			return;
		request_stop();
		engine_.join();
		error_ = nullptr;
	}

	// True while a stream is started and not stopped (it may have ended by itself).
	bool streaming() const noexcept { return engine_.joinable(); }

	// Any thread: counters of the current (or last) stream.
	StreamStats stats() const noexcept
	{
		StreamStats s;
		s.buffers = delivered_.load(std::memory_order_relaxed);
		s.bytes = delivered_bytes_.load(std::memory_order_relaxed);
		s.overruns = overruns_.load(std::memory_order_relaxed);
		s.dropped_bytes = dropped_bytes_.load(std::memory_order_relaxed);
		s.backpressure = backpressure_.load(std::memory_order_relaxed);
		return s;
	}

private:
	struct Slot {
		std::uint32_t index;
		std::size_t bytes;
		std::uint64_t seq;
	};

	static std::size_t check_count(std::size_t count)
	{
		if (count < 2 || count > UINT32_MAX)
			throw Error(EINVAL, "bufmgr::PooledBuffer: needs at least 2 DMA buffers");
		return count;
	}

	Filled lend(const Slot &s)
	{
		++outstanding_;
		delivered_.fetch_add(1, std::memory_order_relaxed);
		delivered_bytes_.fetch_add(s.bytes, std::memory_order_relaxed);
		return Filled(this, s.index, s.bytes, s.seq);
	}

	void give_back(std::uint32_t index) noexcept
	{
		--outstanding_;
		free_.push(index); // capacity K: never full
		engine_bell_.notify();
	}

	void stats_reset() noexcept
	{
		delivered_.store(0, std::memory_order_relaxed);
		delivered_bytes_.store(0, std::memory_order_relaxed);
		overruns_.store(0, std::memory_order_relaxed);
		dropped_bytes_.store(0, std::memory_order_relaxed);
		backpressure_.store(0, std::memory_order_relaxed);
	}

	// The engine thread: keeps every free buffer queued on the transfer and hands the filled
	// ones to the consumer, in order.
	void engine_loop(const StreamOptions opt, const std::size_t len) noexcept
	{
		constexpr Direction d = Direction::c2h;
		Transfer &t = this->transfer_;
		std::deque<std::uint32_t> inflight;
		std::uint64_t issued = 0, seq = 0;
		auto more = [&] { return opt.max_buffers == 0 || issued < opt.max_buffers; };
		auto stopping = [&] { return stop_.load(std::memory_order_seq_cst); };
		try {
			for (;;) {
				std::uint32_t i;
				while (!stopping() && more() && free_.pop(i)) {
					t.start(d, i, len);
					inflight.push_back(i);
					++issued;
				}
				if (inflight.empty()) {
					if (stopping() || !more())
						break;
					// Backpressure: the consumer holds every buffer.
					const auto key = engine_bell_.prepare();
					if (free_.read_available() == 0 && !stopping()) {
						backpressure_.fetch_add(1, std::memory_order_relaxed);
						engine_bell_.wait(key);
					}
					continue;
				}
				// A stop requested after our last start() would not have aborted it.
				if (stopping())
					t.abort(d);
				i = inflight.front();
				const std::size_t got = t.wait(d, i);
				inflight.pop_front();
				const std::uint64_t s = seq++;
				if (opt.overflow == Overflow::drop && inflight.empty() &&
				    free_.read_available() == 0 && !stopping() && more()) {
					// Delivering it would leave the transfer with nothing to fill.
					overruns_.fetch_add(1, std::memory_order_relaxed);
					dropped_bytes_.fetch_add(got, std::memory_order_relaxed);
					t.start(d, i, len);
					inflight.push_back(i);
					++issued;
					continue;
				}
				filled_.push(Slot{i, got, s}); // capacity K: never full
				consumer_bell_.notify();
			}
		} catch (...) {
			if (!stopping())
				error_ = std::current_exception();
		}
		t.abort(d);
		t.reset(d);
		ended_.store(true, std::memory_order_release); // publishes error_
		consumer_bell_.notify();
	}

	// Hand-off queues, each on its own cache lines (their indices are the hot shared data).
	alignas(cache_line) boost::lockfree::spsc_queue<Slot> filled_; // engine -> consumer
	alignas(cache_line) boost::lockfree::spsc_queue<std::uint32_t> free_; // consumer -> engine
	alignas(cache_line) detail::Doorbell consumer_bell_;
	detail::Doorbell engine_bell_;
	alignas(cache_line) std::atomic<bool> stop_{false};
	std::atomic<bool> ended_{false};
	std::exception_ptr error_; // written by the engine before ended_ (release), read after (acquire)
	// next() and next_for(): wait(key) sleeps until the doorbell rings or gives up (false).
	template <class Wait>
	Filled next_waiting(Wait wait)
	{
		if (!engine_.joinable())
			throw Error(EINVAL, "bufmgr::PooledBuffer::next: no stream (start_stream() first)");
		if (outstanding_ >= k_)
			throw Error(EDEADLK, "bufmgr::PooledBuffer::next: the consumer holds all buffers; "
					     "release one before asking for the next");
		for (;;) {
			const auto key = consumer_bell_.prepare();
			Slot s;
			if (filled_.pop(s))
				return lend(s);
			if (ended_.load(std::memory_order_acquire)) {
				if (filled_.pop(s)) // pushed before the end was published
					return lend(s);
				if (error_)
					std::rethrow_exception(std::exchange(error_, nullptr));
				return Filled();
			}
			if (!wait(key))
				return Filled();
		}
	}

	// Statistics: one writer each, relaxed; read by stats() from any thread.
	alignas(cache_line) std::atomic<std::uint64_t> overruns_{0}, dropped_bytes_{0}, backpressure_{0};
	alignas(cache_line) std::atomic<std::uint64_t> delivered_{0}, delivered_bytes_{0};
	// Consumer thread only.
	std::size_t k_;
	std::size_t outstanding_ = 0;
	std::vector<std::byte *> ptr_;
	Filled current_;
	std::size_t offset_ = 0;
	std::thread engine_;
};

} // namespace bufmgr

#endif // BUFMGR_POOLED_BUFFER_HPP
