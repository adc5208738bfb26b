// SPDX-License-Identifier: LGPL-2.1-or-later
//
// MpraceTransfer: the Transfer policy of the board: C2H and H2C through mprace::DMAEngine on
// mprace::DMABuffers (kernel memory or user memory). Needs libmprace (pkg-config mprace).
#ifndef BUFMGR_MPRACE_TRANSFER_HPP
#define BUFMGR_MPRACE_TRANSFER_HPP

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mprace/mprace.hpp"

#include "bufmgr/concepts.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/memory.hpp"

namespace bufmgr {

// Policies: models Transfer (bufmgr/concepts.hpp), both directions, no adopt(): it allocates
// its DMA buffers itself, as
//   MemoryKind::kernel  driver kernel memory (contiguous: one descriptor per buffer; at most
//                       PD_KMEM_MAX_SIZE, real kernels guarantee only 4 MiB without CMA), or
//   MemoryKind::user    page-aligned anonymous memory pinned and mapped by the driver (SG list).
//                       The CUDA stage needs these: CUDA cannot register kernel memory.
// Requirements: the Board and its DMAEngine outlive the transfer (they are not owned).
// Lengths are multiples of the engine's 4-byte granule (granule() == 4).
// Errors: the engine's errors pass through unchanged (mprace::DMAError, a std::system_error:
// EIO for a bus error, ETIMEDOUT, ECANCELED for aborted transfers).
// wait() is Transfer::get(): it gives up after EngineOptions::waitTimeout (10 s by default) with
// ETIMEDOUT; for a source that may pause longer (a sparse DAQ stream), open the DMAEngine with
// waitTimeout = 0.
// abort(d) cancels this policy's own transfers (those using its DMA buffers), never those of
// other users of the same DMAEngine.
// Thread safety: as the concept.
class MpraceTransfer {
public:
	static constexpr bool can_c2h = true;
	static constexpr bool can_h2c = true;

	MpraceTransfer(mprace::Board &board, mprace::DMAEngine &engine,
		       MemoryKind kind = MemoryKind::kernel)
		: board_(&board), engine_(&engine), kind_(kind)
	{
		if (kind != MemoryKind::kernel && kind != MemoryKind::user)
			throw Error(EINVAL, std::string("bufmgr::MpraceTransfer: DMA buffers must be kernel "
							"or user memory, not ") + to_string(kind));
	}
	MpraceTransfer(MpraceTransfer &&) noexcept = default;
	MpraceTransfer &operator=(MpraceTransfer &&) noexcept = default;
	// Destroying the DMABuffers aborts transfers still using them (libmprace).
	~MpraceTransfer() = default;

	std::size_t granule() const noexcept { return MP_ENGINE_GRANULE; }
	MemoryKind memory_kind() const noexcept { return kind_; }

	// Driving thread, nothing in flight. Throws what libmprace throws (ENOMEM, EINVAL).
	void allocate(std::size_t count, std::size_t size)
	{
		if (count == 0 || size == 0 || size % MP_ENGINE_GRANULE != 0)
			throw Error(EINVAL, "bufmgr::MpraceTransfer: need >= 1 buffer of a non-zero multiple of 4 bytes");
		for (auto &h : pending_)
			h.clear();
		bufs_.clear();
		bufs_.reserve(count);
		for (std::size_t i = 0; i < count; ++i) {
			auto b = std::make_unique<Buf>();
			if (kind_ == MemoryKind::kernel) {
				b->dma.emplace(*board_, size);
			} else {
				b->mem = HostMemory(size);
				b->dma.emplace(*board_, b->mem.data(), size, PD_DMA_BIDIRECTIONAL);
			}
			bufs_.push_back(std::move(b));
		}
		for (auto &h : pending_)
			h.resize(count);
		size_ = size;
	}

	std::size_t buffer_count() const noexcept { return bufs_.size(); }
	std::size_t buffer_size() const noexcept { return size_; }
	BufferView view(std::size_t i) const
	{
		const mprace::DMABuffer &b = *bufs_.at(i)->dma;
		return BufferView{static_cast<std::byte *>(b.data()), size_, kind_};
	}
	// The libmprace buffer behind view(i), e.g. for its segments.
	mprace::DMABuffer &dma_buffer(std::size_t i) { return *bufs_.at(i)->dma; }
	mprace::DMAEngine &engine() noexcept { return *engine_; }
	mprace::Board &board() noexcept { return *board_; }

	// Driving thread. Submits bytes [0, n) of buffer i on the direction's channel.
	void start(Direction d, std::size_t i, std::size_t n)
	{
		mprace::DMABuffer &b = *bufs_.at(i)->dma;
		mprace::Transfer &h = pending_[idx(d)].at(i);
		if (h.valid())
			throw Error(EBUSY, "bufmgr::MpraceTransfer::start: buffer already queued");
		if (d == Direction::h2c)
			b.syncForDevice(); // the CPU wrote it
		h = engine_->submit(channel(d), b, 0, n);
	}

	// Driving thread. The bytes moved; the engine's error otherwise.
	std::size_t wait(Direction d, std::size_t i)
	{
		mprace::Transfer &h = pending_[idx(d)].at(i);
		if (!h.valid())
			throw Error(EINVAL, "bufmgr::MpraceTransfer::wait: buffer was not started");
		mprace::Transfer t = std::move(h); // the slot is free again, whatever happens
		const std::uint64_t got = t.get();
		if (d == Direction::c2h)
			bufs_[i]->dma->syncForCpu(); // before anyone reads what the board wrote
		return static_cast<std::size_t>(got);
	}

	// Driving thread. As wait(), but std::nullopt when buffer i's transfer is still running
	// after timeout (a failed one is reported by wait(), which also frees the slot).
	std::optional<std::size_t> wait_for(Direction d, std::size_t i, std::chrono::microseconds timeout)
	{
		mprace::Transfer &h = pending_[idx(d)].at(i);
		if (!h.valid())
			throw Error(EINVAL, "bufmgr::MpraceTransfer::wait_for: buffer was not started");
		bool finished;
		try {
			finished = h.wait(timeout);
		} catch (const std::exception &) {
			finished = true; // failed
		}
		if (!finished)
			return std::nullopt;
		return wait(d, i);
	}

	// Any thread (not during allocate()): cancels the transfers on this policy's DMA buffers
	// (ECANCELED), and no one else's; the engine recovers the channel and later submissions
	// run normally. A transfer policy drives one direction at a time, so these are d's.
	void abort(Direction d) noexcept
	{
		(void)d;
		for (auto &b : bufs_) {
			try {
				b->dma->abortTransfers();
			} catch (...) {
				// Only a closed board/engine throws; it has cancelled everything itself.
			}
		}
	}

	// Driving thread: cancels our unfinished transfers of d (only ours) and forgets them.
	void reset(Direction d) noexcept
	{
		for (mprace::Transfer &h : pending_[idx(d)]) {
			try {
				if (h.valid() && !h.done())
					h.abort();
			} catch (...) {
			}
			h.release();
		}
	}

private:
	// Declaration order = reverse destruction order: the DMABuffer (unpins) before its memory.
	struct Buf {
		HostMemory mem;
		std::optional<mprace::DMABuffer> dma;
	};

	static int idx(Direction d) noexcept { return d == Direction::c2h ? 0 : 1; }
	static mprace::Channel channel(Direction d) noexcept
	{
		return d == Direction::c2h ? mprace::Channel::C2H : mprace::Channel::H2C;
	}

	mprace::Board *board_;
	mprace::DMAEngine *engine_;
	MemoryKind kind_;
	std::size_t size_ = 0;
	std::vector<std::unique_ptr<Buf>> bufs_;
	std::vector<mprace::Transfer> pending_[2]; // per direction, per buffer: the handle in flight
};

} // namespace bufmgr

#endif // BUFMGR_MPRACE_TRANSFER_HPP
