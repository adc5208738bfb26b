// SPDX-License-Identifier: LGPL-2.1-or-later
//
// What ChunkBuffer, DoubleBuffer and PooledBuffer share: the policy checks, the owned Transfer
// and Transform, buffer allocation and the pipelined read/write of detail/pipeline.hpp.
#ifndef BUFMGR_DETAIL_BUFFER_BASE_HPP
#define BUFMGR_DETAIL_BUFFER_BASE_HPP

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "bufmgr/concepts.hpp"
#include "bufmgr/copy_workers.hpp"
#include "bufmgr/detail/pipeline.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/transform.hpp"

namespace bufmgr::detail {

template <class Transfer, class Transform>
class BufferBase {
	static_assert(check_transfer<Transfer>::value, "bufmgr: Transfer policy rejected (see above)");
	static_assert(check_transform<Transform>::value, "bufmgr: Transform policy rejected (see above)");
	static_assert(Transfer::can_c2h || Transfer::can_h2c,
		      "bufmgr: a Transfer policy must support at least one direction (can_c2h or can_h2c)");

public:
	using transfer_type = Transfer;
	using transform_type = Transform;
	using in_type = typename Transform::in_type;
	using out_type = typename Transform::out_type;

	BufferBase(const BufferBase &) = delete;
	BufferBase &operator=(const BufferBase &) = delete;

	// The policies, e.g. to read a checker's counters or to change a transform's scale between
	// transfers. Same thread rules as read()/write().
	Transfer &transfer() noexcept { return transfer_; }
	const Transfer &transfer() const noexcept { return transfer_; }
	Transform &transform() noexcept { return transform_; }
	const Transform &transform() const noexcept { return transform_; }

	std::size_t buffer_count() const { return transfer_.buffer_count(); }
	std::size_t buffer_size() const { return transfer_.buffer_size(); }

	// Threads that share each copy between a DMA buffer and the user's buffer: the calling
	// thread plus copy_threads() - 1 workers owned by this object. Starts at
	// default_copy_threads() (1 for a transform that declares sequential = true).
	std::size_t copy_threads() const noexcept { return copy_ ? copy_->threads() : 1; }

	// Owning thread, no read()/write() or stream in progress. n = 1: the calling thread alone
	// (no worker); 0: default_copy_threads(); clamped to CopyWorkers::max_threads. Throws
	// std::system_error if a thread cannot be started (the previous setting then stays).
	void set_copy_threads(std::size_t n)
	{
		static_assert(is_splittable_v<Transform>,
			"bufmgr: this Transform declares `sequential = true` (it keeps state from one element "
			"to the next), so its copy cannot be split over threads; give it a partial_type and "
			"combine() (see the Transform concept in bufmgr/concepts.hpp) to run it in parallel");
		if (n == 0)
			n = default_copy_threads();
		if (n == copy_threads())
			return;
		std::unique_ptr<CopyWorkers> w;
		if (n > 1)
			w = std::make_unique<CopyWorkers>(n);
		copy_ = std::move(w);
	}

	// Any thread: makes the read() or write() in progress throw ECANCELED promptly (no effect
	// on later calls). The buffer manager is reusable afterwards (the failed call has reset the
	// transfer). On a PooledBuffer stream, the stream fails with ECANCELED.
	void abort() noexcept
	{
		cancel_.store(true, std::memory_order_release);
		if constexpr (Transfer::can_c2h)
			transfer_.abort(Direction::c2h);
		if constexpr (Transfer::can_h2c)
			transfer_.abort(Direction::h2c);
	}

protected:
	BufferBase(Transfer transfer, std::size_t count, std::size_t size, Transform transform)
		: transfer_(std::move(transfer)), transform_(std::move(transform))
	{
		const std::size_t g = transfer_.granule();
		if (size == 0 || size % g != 0)
			throw Error(EINVAL, "bufmgr: DMA buffer size " + std::to_string(size) +
					    " must be a non-zero multiple of the transfer's granule (" +
					    std::to_string(g) + " bytes)");
		if (count == 0)
			throw Error(EINVAL, "bufmgr: at least one DMA buffer is needed");
		if constexpr (Transfer::can_c2h)
			if (chunk_bytes(size, g, sizeof(in_type)) == 0)
				throw Error(EINVAL, "bufmgr: DMA buffer size " + std::to_string(size) +
						    " holds no whole element of in_type");
		if constexpr (Transfer::can_h2c)
			if (chunk_bytes(size, g, sizeof(out_type)) == 0)
				throw Error(EINVAL, "bufmgr: DMA buffer size " + std::to_string(size) +
						    " holds no whole element of out_type");
		transfer_.allocate(count, size);
		if constexpr (is_splittable_v<Transform>)
			set_copy_threads(0);
	}
	~BufferBase() = default;

	std::size_t do_read(std::size_t depth, out_type *dst, std::size_t count)
	{
		static_assert(Transfer::can_c2h,
			"bufmgr: read() moves data board -> user and needs a Transfer with can_c2h = true; "
			"this Transfer only drains buffers (use write(), or a policy that can fill)");
		cancel_.store(false, std::memory_order_relaxed);
		return pipelined_read(transfer_, transform_, copy_.get(), depth, dst, count, &cancel_);
	}

	void do_write(std::size_t depth, const in_type *src, std::size_t count)
	{
		static_assert(Transfer::can_h2c,
			"bufmgr: write() moves data user -> board and needs a Transfer with can_h2c = true; "
			"this Transfer only fills buffers (use read(), or a policy that can drain)");
		cancel_.store(false, std::memory_order_relaxed);
		pipelined_write(transfer_, transform_, copy_.get(), depth, src, count, &cancel_);
	}

	// Owning thread: the copy between DMA and user buffers, through the copy threads.
	void copy(const in_type *src, out_type *dst, std::size_t n) { transform_copy(copy_.get(), transform_, src, dst, n); }

	Transfer transfer_;
	Transform transform_;
	std::unique_ptr<CopyWorkers> copy_; // null: the calling thread copies alone
	std::atomic<bool> cancel_{false}; // set by abort(), seen by the call in progress
};

} // namespace bufmgr::detail

#endif // BUFMGR_DETAIL_BUFFER_BASE_HPP
