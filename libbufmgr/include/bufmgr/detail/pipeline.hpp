// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The copy pipeline shared by ChunkBuffer (depth 1), DoubleBuffer (depth 2) and PooledBuffer
// (depth K): up to `depth` DMA buffers in flight, the caller's thread (with the copy threads, if
// any) copying and transforming the oldest finished one while the transfer works on the others.
#ifndef BUFMGR_DETAIL_PIPELINE_HPP
#define BUFMGR_DETAIL_PIPELINE_HPP

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "bufmgr/concepts.hpp"
#include "bufmgr/copy_workers.hpp"
#include "bufmgr/detail/chunk_plan.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/transform.hpp"

namespace bufmgr::detail {

// Bytes per chunk when the DMA side holds elements of elem bytes: the largest multiple of both
// the granule and elem that fits into one buffer (0 when none does).
inline std::size_t chunk_bytes(std::size_t buffer_size, std::size_t granule, std::size_t elem) noexcept
{
	const std::size_t unit = std::lcm(granule, elem);
	return buffer_size / unit * unit;
}

inline std::size_t checked_bytes(std::size_t count, std::size_t elem, std::size_t granule, const char *what)
{
	if (count > std::numeric_limits<std::size_t>::max() / elem)
		throw Error(EOVERFLOW, std::string("bufmgr: ") + what + ": element count overflows size_t");
	const std::size_t total = count * elem;
	if (total % granule != 0)
		throw Error(EINVAL, std::string("bufmgr: ") + what + " of " + std::to_string(total) +
				    " bytes is not a multiple of the transfer's granule (" +
				    std::to_string(granule) + " bytes)");
	return total;
}

inline void check_cancel(const std::atomic<bool> *cancel, const char *what)
{
	if (cancel && cancel->load(std::memory_order_acquire))
		throw Error(ECANCELED, std::string("bufmgr: ") + what + " aborted");
}

// Aborts and resets a direction unless dismissed: every error path (a failed transfer, a
// throwing transform, a short read) leaves the transfer idle and reusable.
template <class Transfer>
class CancelGuard {
public:
	CancelGuard(Transfer &t, Direction d) noexcept : t_(t), d_(d) {}
	CancelGuard(const CancelGuard &) = delete;
	CancelGuard &operator=(const CancelGuard &) = delete;
	~CancelGuard()
	{
		if (armed_) {
			t_.abort(d_);
			t_.reset(d_);
		}
	}
	void dismiss() noexcept { armed_ = false; }

private:
	Transfer &t_;
	Direction d_;
	bool armed_ = true;
};

// Board -> user: count in_type elements through the transfer's buffers into dst as out_type.
// Returns the elements delivered (fewer than count only when the source ended a packet, which
// ends the read; buffers queued behind it are cancelled).
template <class Transfer, class X>
std::size_t pipelined_read(Transfer &t, X &x, CopyWorkers *workers, std::size_t depth,
			   typename X::out_type *dst, std::size_t count, const std::atomic<bool> *cancel = nullptr)
{
	using In = typename X::in_type;
	constexpr Direction d = Direction::c2h;
	if (count == 0)
		return 0;
	const std::size_t total = checked_bytes(count, sizeof(In), t.granule(), "read");
	const std::size_t chunk = chunk_bytes(t.buffer_size(), t.granule(), sizeof(In));
	const std::size_t nbuf = std::min(depth, t.buffer_count());
	if (chunk == 0 || nbuf == 0)
		throw Error(EINVAL, "bufmgr: read: no DMA buffer large enough for one element");
	// with one buffer nothing overlaps: nothing to gain from cutting the last chunk
	const ChunkPlan plan(total, chunk, std::lcm(t.granule(), sizeof(In)), nbuf > 1 ? SplitEnds::tail : SplitEnds::none);
	const std::size_t nchunks = plan.count();
	auto len = [&](std::size_t c) { return plan.len(c); };

	// a plain copy into a destination larger than the caches streams past them
	bool streaming = false;
	if constexpr (is_identity_transform_v<X>)
		streaming = total >= streaming_min_bytes;

	CancelGuard<Transfer> guard(t, d);
	std::size_t issued = 0;
	for (; issued < nchunks && issued < nbuf; ++issued)
		t.start(d, issued % nbuf, len(issued));

	std::size_t delivered = 0;
	for (std::size_t c = 0; c < nchunks; ++c) {
		const std::size_t b = c % nbuf;
		const std::size_t want = len(c);
		const std::size_t got = t.wait(d, b);
		if (got > want)
			throw Error(EIO, "bufmgr: read: the transfer reported more bytes than requested");
		const std::size_t n = got / sizeof(In);
		const In *from = reinterpret_cast<const In *>(t.view(b).data);
		if constexpr (is_identity_transform_v<X>) {
			if (streaming)
				streaming_copy(workers, x, from, dst + delivered, n);
			else
				transform_copy(workers, x, from, dst + delivered, n);
		} else {
			transform_copy(workers, x, from, dst + delivered, n);
		}
		delivered += n;
		if (got < want)
			return delivered; // end of packet: the guard cancels what is queued behind it
		if (issued < nchunks) {
			check_cancel(cancel, "read");
			t.start(d, b, len(issued)); // issued % nbuf == b
			++issued;
		}
	}
	guard.dismiss();
	return delivered;
}

// User -> board: count in_type elements from src, transformed into the buffers as out_type.
template <class Transfer, class X>
void pipelined_write(Transfer &t, X &x, CopyWorkers *workers, std::size_t depth,
		     const typename X::in_type *src, std::size_t count, const std::atomic<bool> *cancel = nullptr)
{
	using Out = typename X::out_type;
	constexpr Direction d = Direction::h2c;
	if (count == 0)
		return;
	const std::size_t total = checked_bytes(count, sizeof(Out), t.granule(), "write");
	const std::size_t chunk = chunk_bytes(t.buffer_size(), t.granule(), sizeof(Out));
	const std::size_t nbuf = std::min(depth, t.buffer_count());
	if (chunk == 0 || nbuf == 0)
		throw Error(EINVAL, "bufmgr: write: no DMA buffer large enough for one element");
	const ChunkPlan plan(total, chunk, std::lcm(t.granule(), sizeof(Out)), nbuf > 1 ? SplitEnds::head : SplitEnds::none);
	const std::size_t nchunks = plan.count();
	auto len = [&](std::size_t c) { return plan.len(c); };
	auto finish = [&](std::size_t c) {
		if (t.wait(d, c % nbuf) != len(c))
			throw Error(EIO, "bufmgr: write: the transfer drained fewer bytes than queued");
	};

	CancelGuard<Transfer> guard(t, d);
	std::size_t consumed = 0;
	for (std::size_t c = 0; c < nchunks; ++c) {
		const std::size_t b = c % nbuf;
		if (c >= nbuf)
			finish(c - nbuf); // buffer b is free again once its previous chunk has drained
		const std::size_t n = len(c) / sizeof(Out);
		transform_copy(workers, x, src + consumed, reinterpret_cast<Out *>(t.view(b).data), n);
		consumed += n;
		check_cancel(cancel, "write");
		t.start(d, b, len(c));
	}
	for (std::size_t c = nchunks > nbuf ? nchunks - nbuf : 0; c < nchunks; ++c)
		finish(c);
	guard.dismiss();
}

} // namespace bufmgr::detail

#endif // BUFMGR_DETAIL_PIPELINE_HPP
