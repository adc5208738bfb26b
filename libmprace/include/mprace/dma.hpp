// SPDX-License-Identifier: LGPL-2.1-or-later
//
// DMA with our engine (docs/dma-engine.md): DMABuffer, the descriptor ring (DMADescriptorList)
// and DMAEngine with its asynchronous Transfer handles. A guide with examples is in
// docs/libmprace.md; errors and their errno are listed in mprace/error.hpp.
//
// Threading model
//  - DMAEngine: every method is thread-safe. Each channel has its own lock, so C2H and H2C
//    work from different threads never contend; several threads may submit to and wait on the
//    same channel. Lock order: C2H before H2C (only reset, close and test routing take both).
//  - Transfer: like std::future, one handle is used by one thread at a time; different handles
//    (of one channel or not) may be used concurrently. A handle may be destroyed or released at
//    any time: an unfinished transfer then runs on and its result is dropped.
//  - DMABuffer: immutable after construction; data(), segments(), sync*() are thread-safe.
//    Destroying a buffer while transfers use it aborts those transfers (they end with
//    ECANCELED) and waits until the engine no longer touches its memory. Submitting with a
//    buffer concurrently with its destruction is a use-after-free of the caller's.
//  - DMADescriptorList: not thread-safe by itself; the engine serialises access per channel.
//
// Progress: there is no library thread. Completions are consumed, and transfers queued for
// ring slots are written into the ring, inside library calls: wait/get/done/result, poll(),
// and submit when the ring is full. Any thread waiting on the engine services both channels
// (polling: whenever a record is waiting; interrupts: at every wake-up, at least every
// irqRescan), so a loopback waited on from one side, or fire-and-forget transfers, move on as
// long as some thread waits or calls poll().
#ifndef MPRACE_DMA_HPP
#define MPRACE_DMA_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "pcidriver/memory_kind.hpp"
#include "pcidriver/pcidriver.hpp"
#include "mprace/board.hpp"
#include "mprace-spec/engine_spec.h"
#include "mprace/error.hpp"

namespace mprace {

namespace detail {
struct Access;
struct BufferState;
struct EngineState;
struct TransferState;
}

// ------------------------------------------------------------------------------------------
// DMABuffer: one view of pcidriver::KernelMemory or pcidriver::UserMemory.

// A DMABuffer is MemoryKind::kernel (driver-allocated, DMA-coherent, one bus address; cannot
// be cudaHostRegister'd) or MemoryKind::user (process memory pinned by the driver, a
// scatter-gather list of bus addresses). The stack's one type (pcidriver/memory_kind.hpp).
using MemoryKind = pcidriver::MemoryKind;
using pcidriver::to_string;

// One run of contiguous bus addresses: bytes [offset, offset + length) of the buffer are at
// bus addresses [busAddress, busAddress + length).
struct Segment {
	std::uint64_t busAddress;
	std::uint64_t length;
	std::uint64_t offset;
};

class DMABuffer {
public:
	// Allocates kernel memory of `size` bytes.
	// \pre board open (ENODEV), 0 < size <= PD_KMEM_MAX_SIZE (EINVAL, naming the limit).
	// \post zeroed memory with one bus segment (ENOMEM if none). Thread-safe.
	DMABuffer(Board &board, std::size_t size);
	// Pins and maps existing memory (user memory). dir limits the transfers:
	// PD_DMA_FROM_DEVICE allows C2H only, PD_DMA_TO_DEVICE H2C only.
	// \pre addr 4-byte aligned (EINVAL); the memory readable, writable for FROM_DEVICE and
	// BIDIRECTIONAL (EFAULT), and allocated until this buffer is destroyed.
	// \post segments() lists its bus addresses. Thread-safe.
	DMABuffer(Board &board, void *addr, std::size_t size,
		  pd_dma_dir dir = PD_DMA_BIDIRECTIONAL);
	// Adopt memory allocated through board.device().
	DMABuffer(Board &board, pcidriver::KernelMemory &&km);
	DMABuffer(Board &board, pcidriver::UserMemory &&um, pd_dma_dir dir);
	// Imports another driver's dma-buf `fd` (pd_dmabuf_import: GPU memory, udmabuf, DMA-BUF
	// heaps) for transfers in dir; fd stays the caller's. kind() is MemoryKind::imported and
	// data() nullptr: the CPU reaches the memory through its exporter. Errors as
	// pd_dmabuf_import's (EBADF, EINVAL not a dma-buf, EOPNOTSUPP the board cannot reach it).
	static DMABuffer importDmaBuf(Board &board, int fd, pd_dma_dir dir = PD_DMA_BIDIRECTIONAL);

	DMABuffer(DMABuffer &&) noexcept;
	DMABuffer &operator=(DMABuffer &&) noexcept; // the old buffer is destroyed as below
	DMABuffer(const DMABuffer &) = delete;
	DMABuffer &operator=(const DMABuffer &) = delete;
	// Aborts the transfers still using the buffer (ECANCELED) and waits until the engine has
	// let go of it, then frees (kernel) or unpins (user) the memory.
	~DMABuffer();

	void *data() const noexcept;
	std::size_t size() const noexcept;
	MemoryKind kind() const noexcept;
	bool isKernelMemory() const noexcept { return kind() == MemoryKind::kernel; }
	bool isUserMemory() const noexcept { return kind() == MemoryKind::user; }
	pd_dma_dir direction() const noexcept;
	// Bus-address segments in buffer order (kernel memory: exactly one).
	const std::vector<Segment> &segments() const noexcept;
	// Bus address of byte `offset` (Error(ERANGE) past the end).
	std::uint64_t busAddress(std::size_t offset = 0) const;

	// Cache/bounce-buffer maintenance around DMA (pd_umem_sync); no-ops for kernel memory,
	// which is coherent. Call syncForDevice() after the CPU wrote data for H2C, and
	// syncForCpu() after a C2H transfer completed, before reading. ENODEV when the buffer is
	// empty (moved from) or its board was closed.
	void syncForCpu();
	void syncForDevice();

	// Transfers (submitted, not yet finished) that use this buffer. Thread-safe.
	std::size_t activeTransfers() const noexcept;
	// Cancels them (they end with ECANCELED); returns how many were cancelled.
	// \post activeTransfers() == 0. Thread-safe.
	std::size_t abortTransfers();

	// The underlying libpcidriver object (nullptr for the other kind).
	pcidriver::KernelMemory *kernelMemory() noexcept;
	pcidriver::UserMemory *userMemory() noexcept;

private:
	friend struct detail::Access; // the library's own way in (src/internal.hpp)
	detail::BufferState *state() const noexcept { return s_.get(); }
	std::unique_ptr<detail::BufferState> s_;
};

// ------------------------------------------------------------------------------------------
// Descriptor splitting: a buffer range becomes descriptors of at most max_desc_len bytes, each
// inside one bus-address segment; addresses and lengths stay multiples of the granule.

struct DescriptorChunk {
	std::uint64_t busAddress;
	std::uint32_t length;
};

class SGSplitter {
public:
	SGSplitter() noexcept = default;
	// The range must lie inside the segments and be granule-aligned (the engine's submit
	// checks this; the splitter does not). max_len: largest chunk, a multiple of the granule.
	SGSplitter(const std::vector<Segment> &segments, std::uint64_t offset, std::uint64_t length,
		   std::uint32_t max_len = MP_ENGINE_MAX_DESC_LEN) noexcept;

	// The next chunk, or false when the range is exhausted.
	bool next(DescriptorChunk &out) noexcept;
	bool empty() const noexcept { return remaining_ == 0; }
	std::uint64_t remaining() const noexcept { return remaining_; }

	// Number of descriptors the range needs.
	static std::size_t count(const std::vector<Segment> &segments, std::uint64_t offset,
				 std::uint64_t length,
				 std::uint32_t max_len = MP_ENGINE_MAX_DESC_LEN) noexcept;

private:
	const Segment *seg_ = nullptr;
	std::uint64_t pos_ = 0;       // offset inside *seg_
	std::uint64_t remaining_ = 0;
	std::uint32_t max_len_ = MP_ENGINE_MAX_DESC_LEN;
};

// ------------------------------------------------------------------------------------------
// DMADescriptorList: the ring. Native descriptors (struct mp_hw_desc, 32 bytes) are packed
// into the pages of one kernel-memory buffer, 128 per page, none straddling a page; each has a
// software wrapper (DMADescriptor) with its bus address and an owner tag for the engine.

class DMADescriptor {
public:
	// The completion record (words 4-5), read with one 8-byte acquire load.
	struct Record {
		std::uint32_t bytes = 0;
		std::uint32_t status = 0;
		bool done() const noexcept { return status & MP_DESC_RESULT_STATUS_DONE_MASK; }
		bool failed() const noexcept { return status & MP_DESC_RESULT_STATUS_ERROR_MASK; }
		bool endOfPacket() const noexcept { return status & MP_DESC_RESULT_STATUS_EOP_MASK; }
		unsigned int errorCode() const noexcept
		{
			return (status & MP_DESC_RESULT_STATUS_ERROR_CODE_MASK) >>
			       MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT;
		}
	};

	// Words 0-3 and the cookie; the completion record is cleared (released to the engine by the
	// doorbell write that follows).
	void set(std::uint64_t bus_addr, std::uint32_t len, std::uint32_t ctrl,
		 std::uint64_t cookie = 0) noexcept;
	void setControl(std::uint32_t ctrl) noexcept;
	Record record() const noexcept;
	void clearRecord() noexcept;

	std::uint64_t address() const noexcept;
	std::uint32_t length() const noexcept;
	std::uint32_t control() const noexcept;
	std::uint64_t cookie() const noexcept;

	mp_hw_desc *native() const noexcept { return d_; }
	std::uint64_t busAddress() const noexcept { return bus_; } // of the descriptor itself
	std::uint32_t index() const noexcept { return index_; }
	// Software's tag (the engine stores its transfer here).
	void *owner() const noexcept { return owner_; }
	void setOwner(void *o) noexcept { owner_ = o; }

private:
	friend class DMADescriptorList;
	mp_hw_desc *d_ = nullptr;
	std::uint64_t bus_ = 0;
	void *owner_ = nullptr;
	std::uint32_t index_ = 0;
};

class DMADescriptorList {
public:
	static constexpr std::uint32_t perPage = MP_ENGINE_PAGE_SIZE / MP_ENGINE_DESC_SIZE;

	// entries: a power of two from MP_ENGINE_RING_MIN_ENTRIES to MP_ENGINE_RING_MAX_ENTRIES
	// (Error(EINVAL) otherwise). All descriptors start cleared.
	DMADescriptorList(Board &board, std::uint32_t entries);
	DMADescriptorList(DMADescriptorList &&) noexcept = default;
	DMADescriptorList &operator=(DMADescriptorList &&) noexcept = default;

	std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(wrappers_.size()); }
	std::uint32_t mask() const noexcept { return size() - 1; }
	std::size_t pages() const noexcept { return (size() + perPage - 1) / perPage; }
	// RING_BASE: the bus address of descriptor 0.
	std::uint64_t busAddress() const noexcept { return mem_.busAddress(); }
	DMADescriptor &operator[](std::uint32_t i) noexcept { return wrappers_[i]; }
	const DMADescriptor &operator[](std::uint32_t i) const noexcept { return wrappers_[i]; }
	// The slot of free-running descriptor number n (n mod size()).
	DMADescriptor &at(std::uint32_t n) noexcept { return wrappers_[n & mask()]; }
	const pcidriver::KernelMemory &memory() const noexcept { return mem_; }

private:
	pcidriver::KernelMemory mem_;
	std::vector<DMADescriptor> wrappers_;
};

// ------------------------------------------------------------------------------------------
// Transfers and the engine.

struct TransferResult {
	bool done = false;            // finished (successfully or not)
	int error = 0;                // 0, or a positive errno (see error.hpp)
	unsigned int engineError = 0; // MP_ERR_* from the engine, MP_ERR_NONE if none
	std::uint64_t bytes = 0;      // bytes moved (sum of RESULT_BYTES)
	bool endOfPacket = false;     // C2H: the source ended a packet inside this transfer
};

class DMAEngine;

// A handle on one submitted transfer. Move-only; default-constructed or moved-from handles are
// invalid (every call but valid() and release() throws Error(EINVAL)).
class Transfer {
public:
	Transfer() noexcept = default;
	Transfer(Transfer &&o) noexcept : st_(o.st_) { o.st_ = nullptr; }
	Transfer &operator=(Transfer &&o) noexcept;
	Transfer(const Transfer &) = delete;
	Transfer &operator=(const Transfer &) = delete;
	~Transfer() { release(); }

	bool valid() const noexcept { return st_ != nullptr; }
	Channel channel() const;
	std::uint64_t length() const;

	// Per handle: one thread at a time (like std::future); \pre valid() for every call below
	// but release() (else Error(EINVAL)).

	// Non-blocking: processes completions already written back and tells whether this transfer
	// finished (successfully or not).
	bool done();
	// Waits at most `timeout` (polling or interrupts, as the engine was opened). Returns true
	// when the transfer completed successfully, false if it is still running when the timeout
	// expires (it is left running). Throws DMAError when it failed.
	bool wait(std::chrono::microseconds timeout);
	// Waits up to the engine's wait timeout (EngineOptions::waitTimeout; 0: forever) and
	// returns the bytes moved. Throws DMAError when it failed; when the wait timeout expires
	// the transfer is aborted and DMAError(ETIMEDOUT) thrown. \post the transfer is finished.
	std::uint64_t get();
	// Cancels the transfer: it ends with ECANCELED. Descriptors of other transfers that were
	// in flight are re-queued (the channel is reset and restarted from slot 0). Returns false
	// if the transfer had already finished.
	bool abort();
	// The state without waiting and without throwing.
	TransferResult result();

	// Lets go of the handle; an unfinished transfer runs on. Idempotent.
	void release() noexcept;

private:
	friend struct detail::Access; // the library's own way in (src/internal.hpp)
	detail::TransferState *detach() noexcept
	{
		detail::TransferState *s = st_;
		st_ = nullptr;
		return s;
	}
	explicit Transfer(detail::TransferState *s) noexcept : st_(s) {}

	detail::TransferState *st_ = nullptr;
};

enum class Completion {
	Polling,   // read the completion records written back into host memory
	Interrupt, // IRQ_ENABLE + pd_irq_wait on the channel's vector; records scanned after w1c
};

// EngineOptions::waitTimeout's factor on a simulated board.
constexpr int kSimulatedWaitScale = 60;

struct EngineOptions {
	// Descriptors per channel ring (power of two, 2..65536). More transfers than fit are
	// queued in software and submitted as slots free up; they never fail for lack of slots.
	std::uint32_t ringEntries = 1024;
	Completion completion = Completion::Polling;
	// TIMEOUT_US of both channels: the engine fails a descriptor that made no progress for
	// this long (MP_ERR_TIMEOUT -> ETIMEDOUT). 0: never.
	std::uint32_t stallTimeoutUs = 0;
	// Limit of the blocking calls (read, write, Transfer::get), in host time. 0: wait forever.
	// On the simulated RTL (sim:, docs/cosim.md), which moves tens of kilobytes per second of
	// host time, the limit in use is kSimulatedWaitScale times longer (10 s -> 10 min).
	std::chrono::milliseconds waitTimeout{10000};
	// Interrupt mode: a waiter also rescans the records this often, so that an error (whose
	// vector may differ from the done vector) or a lost interrupt delays completion by at
	// most this much instead of forever.
	std::chrono::milliseconds irqRescan{5};
};

// Channel registers as read now (MMIO reads: for debugging, not for the fast path).
struct ChannelStatus {
	unsigned int state = 0;      // MP_STATE_*
	bool busy = false;
	unsigned int errorCode = 0;  // MP_ERR_*
	std::uint32_t head = 0;
	std::uint32_t tail = 0;
	std::uint64_t bytes = 0;     // BYTES since the last reset
};

// One element of a batched submit.
struct Request {
	DMABuffer *buffer = nullptr;
	std::uint64_t offset = 0;
	std::uint64_t length = 0;
	std::uint32_t flags = 0;   // DMAEngine::EndOfPacket
};

// A channel lent to a producer of descriptors outside the library: a GPU kernel that writes
// descriptors into the ring and rings the doorbell itself (bufmgr/cuda_initiated.cuh), or any
// other master that reaches host memory and BAR0. Move-only; the destructor gives the channel
// back. docs/libmprace.md, "Lending a channel", says how a producer uses it.
class ChannelLease {
public:
	ChannelLease() noexcept = default;
	ChannelLease(ChannelLease &&o) noexcept;
	ChannelLease &operator=(ChannelLease &&o) noexcept;
	ChannelLease(const ChannelLease &) = delete;
	ChannelLease &operator=(const ChannelLease &) = delete;
	~ChannelLease() { giveBack(); }

	bool valid() const noexcept { return e_ != nullptr; }
	// \pre valid() for every call below but giveBack() (else Error(EINVAL)).
	Channel channel() const;
	// The channel's ring: descriptor number n (free-running from 0 when lent) goes into slot
	// n mod size(); the engine runs them once the doorbell says so.
	DMADescriptorList &ring() const;
	// BAR0 as pd_map_bar(0) maps it: a real board's registers (device memory: CUDA registers
	// it with cudaHostRegisterIoMemory), or on the virtual board and sim: the doorbell page
	// of docs/dma-engine.md (process memory in which each channel's TAIL is live).
	void *bar0() const;
	std::size_t bar0Size() const;
	bool bar0IsDeviceMemory() const;
	// The channel's TAIL inside bar0(): write the count of descriptors queued so far.
	// Error(ENODEV) once the engine or the board is closed (as for ringDoorbell).
	volatile std::uint32_t *doorbell() const;
	// For a producer on the CPU: `count` into doorbell() with one release store (the
	// descriptors written before it are seen first).
	void ringDoorbell(std::uint32_t count) const;

	// Resets the channel (RESET: HEAD = TAIL = 0, descriptors in flight dropped) and hands it
	// back to the engine, whose transfers work again. The producer must have stopped. Idempotent;
	// does nothing to the hardware once the engine is closed.
	void giveBack() noexcept;

private:
	friend class DMAEngine;
	void checkOpen() const;
	ChannelLease(std::shared_ptr<detail::EngineState> e, Channel ch, void *bar0,
		     std::size_t bar0_size, bool device) noexcept
		: e_(std::move(e)), ch_(ch), bar0_(bar0), bar0_size_(bar0_size), device_(device) {}

	std::shared_ptr<detail::EngineState> e_;
	Channel ch_ = Channel::C2H;
	void *bar0_ = nullptr;
	std::size_t bar0_size_ = 0;
	bool device_ = false;
};

class DMAEngine {
public:
	// H2C only: assert tlast on the last beat of the transfer (CTRL.EOP on its last
	// descriptor). Ignored for C2H.
	static constexpr std::uint32_t EndOfPacket = 1u << 0;

	// Takes the board's engine: resets both channels, sets up the rings and, in interrupt mode,
	// IRQ_ENABLE. Error(EBUSY) if the board already has a DMAEngine, Error(ENODEV) if the board
	// was opened with NoCheck and is not our engine, or is closed; EINVAL for bad options.
	// \post both channels idle, nothing outstanding. Every method of DMAEngine is thread-safe
	// (see the top of this file); destruction must not race other calls.
	explicit DMAEngine(Board &board, const EngineOptions &options = EngineOptions());
	DMAEngine(DMAEngine &&) noexcept;
	DMAEngine &operator=(DMAEngine &&) noexcept;
	DMAEngine(const DMAEngine &) = delete;
	DMAEngine &operator=(const DMAEngine &) = delete;
	// Cancels outstanding transfers (ECANCELED), stops both channels (reset, IDLE) and clears
	// IRQ_ENABLE. Handles that are still alive stay valid and report ECANCELED; the rings' and
	// the handles' memory goes with the last of them.
	~DMAEngine();

	// Asynchronous: C2H ("DMA read": board -> buffer) and H2C ("DMA write": buffer -> board)
	// of bytes [offset, offset + length) of the buffer. Argument errors throw Error (see
	// error.hpp) and nothing is submitted.
	// \pre length > 0; offset, length multiples of 4 (EINVAL); inside the buffer (ERANGE); a
	// buffer of this board (EXDEV) mapped for the direction (EACCES); the board open and not
	// lost (ENODEV). \post the transfer is queued and runs without further calls once in the
	// ring; the returned handle reports its end.
	Transfer readAsync(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length)
	{
		return submit(Channel::C2H, buffer, offset, length, 0);
	}
	Transfer writeAsync(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length,
			    std::uint32_t flags = 0)
	{
		return submit(Channel::H2C, buffer, offset, length, flags);
	}
	Transfer submit(Channel channel, DMABuffer &buffer, std::uint64_t offset,
			std::uint64_t length, std::uint32_t flags = 0);
	// Several transfers with one doorbell write: out[i] receives the handle of reqs[i]. All
	// requests are checked first; if one is invalid, Error is thrown and none is submitted.
	void submit(Channel channel, const Request *reqs, std::size_t n, Transfer *out);

	// Blocking versions (submit + Transfer::get()): return the bytes moved.
	std::uint64_t read(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length);
	std::uint64_t write(DMABuffer &buffer, std::uint64_t offset, std::uint64_t length,
			    std::uint32_t flags = 0);

	// For tests and bring-up: one descriptor with exactly these words, no checks at all (a bus
	// address the driver never handed out makes the engine report BUS_ERROR; invalid lengths
	// or reserved bits its DESC_* errors). The channel recovers as after any error.
	Transfer submitRaw(Channel channel, std::uint64_t bus_addr, std::uint32_t len,
			   std::uint32_t ctrl = 0);

	// Cancels every transfer of the channel (ECANCELED); the channel is reset and usable.
	void abort(Channel channel);
	// Lends the channel to a producer outside the library (ChannelLease): maps BAR0, resets
	// the channel (HEAD = TAIL = 0) and sets RUN. Until the lease is given back, submit, read,
	// write, submitRaw and abort on the channel throw Error(EBUSY); the other channel works
	// as before. Error(EBUSY) if the channel has transfers outstanding or is lent already;
	// the errno of pd_map_bar if BAR0 cannot be mapped; ENODEV if the engine is closed.
	ChannelLease lend(Channel channel);
	// Processes completions written back so far; returns the number of transfers finished.
	// ENODEV once the board or the engine was closed.
	std::size_t poll(Channel channel);
	// Transfers submitted and not finished (in the ring or queued for slots).
	std::size_t outstanding(Channel channel) const;

	void setStallTimeout(std::uint32_t us);          // TIMEOUT_US of both channels
	void setWaitTimeout(std::chrono::milliseconds t);
	std::chrono::milliseconds waitTimeout() const;
	Completion completion() const;
	std::uint32_t ringEntries() const;
	ChannelStatus status(Channel channel) const;
	const DMADescriptorList &ring(Channel channel) const;

private:
	friend struct detail::Access; // the library's own way in (src/internal.hpp)
	detail::EngineState *state() const noexcept { return s_.get(); }
	std::shared_ptr<detail::EngineState> s_;
};

} // namespace mprace

#endif // MPRACE_DMA_HPP
