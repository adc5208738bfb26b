// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef BUFMGR_CHUNK_BUFFER_HPP
#define BUFMGR_CHUNK_BUFFER_HPP

#include "bufmgr/detail/buffer_base.hpp"

namespace bufmgr {

// ChunkBuffer: moves a user buffer of any size through ONE DMA buffer, serially: fill (or copy),
// wait, copy (or drain), repeat. The transfer and the copy never overlap, which is MPRACE's
// "significant overhead"; it is the reference the other algorithms are measured against and
// the right choice when memory for DMA buffers is scarce.
//
// Policies:
//   Transfer   models the Transfer concept (bufmgr/concepts.hpp): MemcpyTransfer,
//              MpraceTransfer, cuda::CudaTransfer, or your own.
//   Transform  models the Transform concept: Identity<T> (default: bytes), ByteSwap16/32/64,
//              Int16ToFloat, FloatToInt16, make_transform<In, Out>(f).
// Requirements:
//   read() needs Transfer::can_c2h, write() needs Transfer::can_h2c (static_assert otherwise).
//   The DMA-side byte count (count * sizeof(in_type) for read, count * sizeof(out_type) for
//   write) must be a multiple of the transfer's granule, else Error(EINVAL).
// Thread safety: one thread at a time calls read()/write() (not thread-safe); abort() may be
// called from any thread.
template <class Transfer, class Transform = Identity<>>
class ChunkBuffer : public detail::BufferBase<Transfer, Transform> {
	using Base = detail::BufferBase<Transfer, Transform>;

public:
	using typename Base::in_type;
	using typename Base::out_type;

	// buffer_size: bytes of the one DMA buffer (a multiple of the granule).
	// Throws Error(EINVAL) for a bad size, or what the transfer's allocate() throws.
	ChunkBuffer(Transfer transfer, std::size_t buffer_size, Transform transform = Transform())
		: Base(std::move(transfer), 1, buffer_size, std::move(transform)) {}

	// Board -> user: reads count in_type elements from the board into dst as out_type.
	// Pre: the owning thread; no other read()/write() in progress. dst holds count elements.
	// Post: returns the elements delivered: count, or fewer only if the source ended a packet.
	// Throws: the transfer's error (e.g. a DMA error) or the transform's; the transfer has then
	// been aborted and reset, and this object is usable again. Strong guarantee for *this only.
	std::size_t read(out_type *dst, std::size_t count) { return this->do_read(1, dst, count); }

	// User -> board: writes count in_type elements from src, transformed, to the board.
	// Pre/Post/Throws: as read(); on return every byte has been drained to the board.
	void write(const in_type *src, std::size_t count) { this->do_write(1, src, count); }
};

} // namespace bufmgr

#endif // BUFMGR_CHUNK_BUFFER_HPP
