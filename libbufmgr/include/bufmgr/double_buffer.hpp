// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef BUFMGR_DOUBLE_BUFFER_HPP
#define BUFMGR_DOUBLE_BUFFER_HPP

#include "bufmgr/detail/buffer_base.hpp"

namespace bufmgr {

// DoubleBuffer: moves a user buffer of any size through TWO DMA buffers so that the transfer
// of one overlaps the copy (and transform) of the other. Read: both buffers are queued; while
// the caller copies buffer A out, the transfer fills B, then A is re-queued. Write: the caller
// fills A while B drains. The transfer never waits for the copy as long as the copy of one
// buffer is faster than the transfer of the other; what remains is the copy of the last chunk
// and the latency of the first, so efficiency grows with size (MPRACE: ~95% for big transfers).
//
// Policies and Requirements: as ChunkBuffer (bufmgr/chunk_buffer.hpp).
// Thread safety: one thread at a time calls read()/write(); abort() from any thread.
template <class Transfer, class Transform = Identity<>>
class DoubleBuffer : public detail::BufferBase<Transfer, Transform> {
	using Base = detail::BufferBase<Transfer, Transform>;

public:
	using typename Base::in_type;
	using typename Base::out_type;

	// buffer_size: bytes of each of the two DMA buffers (a multiple of the granule).
	DoubleBuffer(Transfer transfer, std::size_t buffer_size, Transform transform = Transform())
		: Base(std::move(transfer), 2, buffer_size, std::move(transform)) {}

	// Pre/Post/Throws: as ChunkBuffer::read().
	std::size_t read(out_type *dst, std::size_t count) { return this->do_read(2, dst, count); }
	// Pre/Post/Throws: as ChunkBuffer::write().
	void write(const in_type *src, std::size_t count) { this->do_write(2, src, count); }
};

} // namespace bufmgr

#endif // BUFMGR_DOUBLE_BUFFER_HPP
