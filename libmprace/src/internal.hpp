// SPDX-License-Identifier: LGPL-2.1-or-later
//
// libmprace internals (not installed): the state behind Board, DMABuffer, DMAEngine and
// Transfer.
//
// Locking (lock order, outermost first):
//   BoardState::mu       protects BoardState::engine; held while the board calls into its engine
//                        (reset, test routing, buffer abort, close) so the engine cannot go away
//   ChannelState::mu     (C2H before H2C) protects everything of one channel: the ring's software
//                        state (head, tail, owners), the software queue, the pool, and every
//                        TransferState of the channel except `finished` (atomic, also read
//                        without the lock)
//   EngineState::vec_busy[v]  atomic flags, not locks: which thread waits on IRQ vector v
// Register access (pd_regs) is lock-free; engine registers are written only under the channel's
// lock (or both locks for global ones).
#ifndef MPRACE_SRC_INTERNAL_HPP
#define MPRACE_SRC_INTERNAL_HPP

#include <atomic>
#include <cassert>
#include <thread>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mprace/board.hpp"
#include "mprace/dma.hpp"
#include "mprace/spec.h"

namespace mprace {
namespace detail {

// A mutex that knows which thread holds it, so that a function that needs it held asserts
// it (MPRACE_ASSERT_HELD) instead of saying so in a comment. Costs one relaxed store per
// lock and unlock.
class OwnedMutex {
public:
	void lock()
	{
		m_.lock();
		owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
	}
	bool try_lock()
	{
		if (!m_.try_lock())
			return false;
		owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
		return true;
	}
	void unlock()
	{
		owner_.store(std::thread::id(), std::memory_order_relaxed);
		m_.unlock();
	}
	bool heldByMe() const noexcept
	{
		return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
	}

private:
	std::mutex m_;
	std::atomic<std::thread::id> owner_{};
};

#define MPRACE_ASSERT_HELD(mutex) assert((mutex).heldByMe())

using Clock = std::chrono::steady_clock;

struct BoardState {
	explicit BoardState(const std::string &name) : dev(name) {}

	pcidriver::PciDevice dev;
	pd_regs regs{};
	BoardInfo info;
	unsigned int flags = 0;
	std::atomic<bool> closed{false};

	// The board stopped answering (MAGIC or a channel's STATUS read all-ones, spec section
	// 8): for good. Every transfer failed with ENODEV; every later call answers ENODEV.
	std::atomic<bool> lost{false};

	std::mutex mu;
	EngineState *engine = nullptr; // guarded by mu; set while a DMAEngine is open

	std::uint32_t rd(std::uint32_t off) const { return pd_reg_read32(&regs, off); }
	void wr(std::uint32_t off, std::uint32_t v) const { pd_reg_write32(&regs, off, v); }

	// True once the board is lost; else reads MAGIC (one register read) to find out. Boards
	// opened with NoCheck that are not our engine are never declared lost.
	bool gone();
	// Throws Error(ENODEV) naming `who` when gone().
	void checkAlive(const char *who);
};

struct BufferState {
	std::shared_ptr<BoardState> board;
	std::optional<pcidriver::KernelMemory> km;
	std::optional<pcidriver::UserMemory> um;
	void *ptr = nullptr;
	std::size_t size = 0;
	MemoryKind kind = MemoryKind::kernel;
	pd_dma_dir dir = PD_DMA_BIDIRECTIONAL;
	std::vector<Segment> segs;
	// Transfers submitted with this buffer and not finished; changed under the channel lock of
	// the transfer, read anywhere.
	std::atomic<std::size_t> active{0};
};

struct ChannelState;

struct TransferState {
	ChannelState *ch = nullptr;
	BufferState *buf = nullptr;   // cleared when the transfer finishes
	TransferState *next = nullptr; // software queue or pool free list
	SGSplitter cursor;            // chunks not yet written into the ring
	std::uint64_t length = 0;
	std::uint64_t bytes = 0;
	std::uint32_t in_ring = 0;    // descriptors in the ring, not yet reaped
	std::uint32_t last_ctrl = 0;  // CTRL bits for the last descriptor (EOP)
	bool raw = false;             // one hand-made descriptor (raw_*), not yet in the ring if queued
	DescriptorChunk raw_chunk{};
	std::uint32_t raw_ctrl = 0;
	bool queued = false;          // in the software queue (has chunks left to write)
	bool held = false;            // a Transfer handle / mp_transfer refers to it
	bool abort_req = false;
	int abort_err = ECANCELED; // what an abort of this transfer reports (ETIMEDOUT: wait timeout)
	bool eop = false;
	int err = 0;                  // positive errno once finished with an error
	unsigned int engine_err = 0;
	std::atomic<bool> finished{false};
	// While held: keeps the engine (and this state, part of its pool) alive.
	std::shared_ptr<EngineState> keep;
};

// Transfer states are recycled, so a submit allocates nothing in steady state.
class TransferPool {
public:
	TransferState *get();
	void put(TransferState *t) noexcept
	{
		t->next = free_;
		free_ = t;
	}

private:
	static constexpr std::size_t chunk_ = 256;
	std::vector<std::unique_ptr<TransferState[]>> chunks_;
	TransferState *free_ = nullptr;
};

struct ChannelState {
	ChannelState(EngineState *e, Channel c, Board &board, std::uint32_t entries);

	EngineState *eng;
	Channel id;
	std::uint32_t base;   // MP_CH_BASE
	unsigned int vector;  // done interrupt vector
	std::uint32_t done_bit;

	OwnedMutex mu;
	std::condition_variable_any cv; // interrupt mode: waiters of this channel
	DMADescriptorList ring;
	// head: the next descriptor to reap (written under mu; read without it as a hint by
	// polling waiters); tail: the next free slot = the TAIL last written.
	std::atomic<std::uint32_t> head{0};
	std::uint32_t tail = 0;
	// A copy of tail for lock-free peeks by waiters of the other channel (written under mu).
	std::atomic<std::uint32_t> tail_hint{0};
	TransferState *qhead = nullptr, *qtail = nullptr;
	std::size_t outstanding = 0;
	bool lent = false; // to a ChannelLease: the ring and the doorbell are its producer's
	// Error(EBUSY) naming `who` when lent
	void checkNotLent(const char *who) const;
	std::size_t cancelled = 0; // count of transfers ended with ECANCELED (for abort's result)
	TransferPool pool;
	// Recovery re-queues surviving descriptors from slot 0; preallocated so it cannot fail.
	std::vector<mp_hw_desc> scratch;
	std::vector<TransferState *> scratch_owner;

	std::uint32_t rd(std::uint32_t off) const;
	void wr(std::uint32_t off, std::uint32_t v) const;
};

struct EngineState : std::enable_shared_from_this<EngineState> {
	EngineState(Board &board, const EngineOptions &opts);
	~EngineState();

	std::shared_ptr<BoardState> board;
	EngineOptions opts;
	bool irq = false;
	bool shared_vector = true; // fewer than 4 MSI vectors: every source on vector 0
	std::atomic<bool> closed{false};
	std::atomic<std::int64_t> wait_timeout_ms{0};
	// The wait timeout counts host time; on the simulated RTL (sim:) a second of it moves
	// tens of kilobytes, so there the limit is this many times longer (dma.hpp).
	std::int64_t wait_scale = 1;
	std::atomic<std::uint32_t> stall_us{0};
	// CPU pauses a polling wait spends before it yields (engine_wait.cpp); none where the
	// thread that opened the engine may use one CPU only: there what completes the transfer
	// (the virtual board's threads, the application's other threads) needs that very CPU.
	unsigned int spin_pauses = 64;
	std::unique_ptr<ChannelState> ch[MP_CH_COUNT];
	std::atomic<bool> vec_busy[MP_IRQ_SOURCES] = {};

	ChannelState &chan(Channel c) const;

	// ---- with the channel lock held ----
	void refill(ChannelState &c);
	std::size_t reap(ChannelState &c);
	// Reaps successful records; stops at a failed one. Returns finished transfers; *failed is
	// set when the record at head is DONE|ERROR.
	std::size_t reapRecords(ChannelState &c, bool *failed);
	void recover(ChannelState &c);
	void checkChannel(ChannelState &c);
	// The board reads all-ones: fails every transfer of channel c with ENODEV (lock held).
	void linkLost(ChannelState &c);
	// linkLost() on c if the board is gone (board->gone()); true then.
	bool lostCheck(ChannelState &c);
	// Aborts t (unless finished) reporting `err`; true if this aborted it.
	bool abortOne(TransferState *t, int err = ECANCELED);
	std::size_t abortWhere(ChannelState &c, bool (*pred)(TransferState *, const void *),
			       const void *arg);
	void stopAndCancel(ChannelState &c);
	void setupChannel(ChannelState &c);
	void resetChannel(ChannelState &c);
	void finish(ChannelState &c, TransferState *t, int err, unsigned int code);
	void fail(ChannelState &c, TransferState *t, unsigned int code);
	void enqueue(ChannelState &c, TransferState *t);
	void dropFromQueue(ChannelState &c);
	bool waitState(ChannelState &c, unsigned int state, std::chrono::milliseconds limit);

	// ---- entry points (take locks themselves) ----
	TransferState *submitOne(Channel c, BufferState *b, std::uint64_t off, std::uint64_t len,
				 std::uint32_t flags);
	// emit(ctx, i, state) hands out the state of reqs[i] (under the channel lock: it must not
	// take it).
	void submitMany(Channel c, const Request *reqs, std::size_t n,
			void (*emit)(void *, std::size_t, TransferState *), void *ctx);
	TransferState *submitRaw(Channel c, std::uint64_t bus, std::uint32_t len, std::uint32_t ctrl);
	// true: finished; false: timeout. `forever` ignores the deadline.
	bool wait(TransferState *t, Clock::time_point deadline, bool forever);
	bool waitPolling(TransferState *t, Clock::time_point deadline, bool forever);
	bool waitIrq(TransferState *t, Clock::time_point deadline, bool forever);
	bool isDone(TransferState *t);
	// Without the lock: is a completion record waiting to be consumed? (A hint: a false
	// answer costs a later look, a true one a lock.)
	bool peek(const ChannelState &c) const;
	// Consumes the other channel's completions if it has some and its lock is free, so that
	// its queued transfers move on while nobody waits on it (loopback, fire and forget).
	void serviceOther(const ChannelState &mine, bool check);
	void release(TransferState *t) noexcept;
	std::size_t abortBufferLocked(BufferState *b); // BoardState::mu held
	void globalResetLocked();                        // BoardState::mu held
	void setRoutingLocked(std::uint32_t test_control); // BoardState::mu held
	void shutdownLocked() noexcept;                  // BoardState::mu held
	void shutdown() noexcept;
	void ackVector(unsigned int v);
	void checkArgs(Channel c, BufferState *b, std::uint64_t off, std::uint64_t len,
		       std::uint32_t flags) const;
};

// The result of a finished transfer as an exception.
// The library's own way into its public classes' state (their accessors are private, so that
// no application builds on detail:: types).
struct Access {
	static const std::shared_ptr<BoardState> &board(const Board &b) { return b.state(); }
	static BufferState *buffer(const DMABuffer &b) noexcept { return b.state(); }
	static EngineState *engine(const DMAEngine &e) noexcept { return e.state(); }
	static TransferState *detach(Transfer &t) noexcept { return t.detach(); }
	static Transfer adopt(TransferState *s) noexcept { return Transfer(s); }
};

// Shared by the engine's files (engine*.cpp).
// What a read returns when nobody answers it (link down, device removed, powered off).
constexpr std::uint32_t kAllOnes = 0xffffffffu;
constexpr const char *kBoardLost =
	"the board stopped responding: its registers read all-ones (link down, device removed or "
	"powered off)";
inline unsigned int stateOf(std::uint32_t status)
{
	return MP_FIELD_GET(status, MP_CHREG_STATUS_STATE);
}

inline unsigned int codeOf(std::uint32_t status)
{
	return MP_FIELD_GET(status, MP_CHREG_STATUS_ERROR_CODE);
}

inline TransferState *ownerOf(const DMADescriptor &d)
{
	return static_cast<TransferState *>(d.owner());
}

inline void cpuRelax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Unlinks t from the channel's software queue (channel lock held).
void removeQueued(ChannelState &c, TransferState *t);
// Clears and (in interrupt mode) enables the engine's interrupts (board lock held).
void setupInterrupts(EngineState &e);

[[noreturn]] void throwTransferError(const TransferState *t);

} // namespace detail
} // namespace mprace

#endif // MPRACE_SRC_INTERNAL_HPP
