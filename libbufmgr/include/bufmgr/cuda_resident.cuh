// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The resident receive path: board -> host memory -> a GPU kernel that stays resident, watches
// the engine's completion records itself and hands each landed chunk to a device function, with
// no copy-engine call and no kernel launch per chunk (both cost microseconds per 4 KiB chunk).
//
//   cuda::ResidentReceiver<Consumer>   K user-memory DMA buffers registered with CUDA; the
//       C2H descriptor ring registered too, so that a resident block polls the records; the
//       host submits reads into the buffers in turn, the block consumes chunk k (in place over
//       the bus, or copied into GPU memory by the block first) and writes k + 1 into a counter
//       in host memory, which tells the host that buffer k mod K may be filled again.
//
// Which record is chunk k's: libmprace numbers the descriptors it writes into the ring (the
// software cookie, words 6-7: 0, 1, 2, ... from the channel's last reset, which the receiver
// does when it starts its block), so the descriptors of chunk
// k follow those of chunk k - 1. Warp 0 of the block looks at the next 32 numbers at once (their
// slots are number mod ring size), skips the done ones that end elsewhere on the bus (the chunk's
// earlier pieces) and stops at the done one that ends where the chunk ends. A slot already
// holding a later number was done and reaped. run() keeps so few chunks in flight that the ring
// never wraps onto a chunk's last descriptor before the block has seen it.
//
// Memory ordering (why the data is there when the record says done): the engine writes the
// chunk's data, then the record, as posted writes in that order (the virtual board: the record
// with a release store after the data). The host writes a slot as: record cleared, address and
// length, cookie (DMADescriptor::set). The block reads a slot's cookie first, with an acquire
// load at system scope (ld.acquire.sys), then its address and record: a slot that showed
// number n shows n's address and no record or n's own (read together, an old DONE record once
// passed beside a new cookie and chunks were read before their data had landed). The record
// too is read with an acquire load: the one that shows the chunk's end DONE orders the later
// loads of its thread, and through __syncthreads() those of the block, after it, so they see
// the data that preceded the record; the data is read past the GPU's caches (load_landed).
// (Relaxed loads and acquire fences, fence.acq_rel.sys, did the same at a fence's cost.) A
// chunk's job is read after `posted` and an acquire fence. The other way: the block's threads
// finish with the chunk, __syncthreads(), and thread 0 stores k + 1 into the host counter with a
// system-scope release store, so the host never refills a buffer the GPU is still reading.
//
// Consumer: a trivially copyable struct with
//   __device__ void operator()(const ResidentChunk &chunk) const
// called by every thread of the block (blockDim.x threads; split the work by threadIdx.x). Its
// return ends the chunk. It must not call __syncthreads() conditionally. It reads chunk.host
// with load_landed() (or __ldcv): the board rewrites the buffer for later chunks, and an
// ordinary load may find a line of an earlier chunk in the GPU's caches.
//
// This header needs nvcc (it holds a kernel) and libmprace.
#ifndef BUFMGR_CUDA_RESIDENT_CUH
#define BUFMGR_CUDA_RESIDENT_CUH

#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bufmgr/cuda.hpp"
#include "bufmgr/error.hpp"
#include "mprace/mprace.hpp"

namespace bufmgr::cuda {

// One landed chunk as the consumer sees it.
struct ResidentChunk {
	const void *host;        // the DMA buffer the board wrote (device-accessible host memory)
	void *gpu;               // its copy in GPU memory (ResidentOptions::copy), else nullptr
	std::size_t bytes;       // bytes of the chunk (as requested from the board)
	std::uint64_t sequence;  // 0, 1, 2, ... over the receiver's life
	std::uint64_t stream_offset; // bytes the receiver read before this chunk
	unsigned int buffer;     // which DMA buffer
};

// Loads of host memory that the board rewrites: past the GPU's caches every time (a cached line
// of a buffer's previous chunk would otherwise be read again).
__device__ inline uint4 load_landed(const uint4 *p) { return __ldcv(p); }
__device__ inline unsigned int load_landed(const unsigned int *p) { return __ldcv(p); }

struct ResidentOptions {
	int device = -1;            // GPU; -1: the calling thread's current device
	unsigned int threads = 1024; // threads of the resident block (32 .. 1024, a multiple of 32)
	bool copy = false;          // the block copies each chunk into GPU memory before the consumer
	// How long stop() waits for the block to notice the stop flag before it gives up (the block
	// checks it on every poll, so this only runs out if a consumer hangs).
	std::chrono::milliseconds stop_timeout{2000};
};

namespace detail {

// Host memory both sides see (cudaHostAlloc, mapped). The host writes `posted`, `jobs` and
// `stop`; the block writes `consumed` and `error`.
struct ResidentShared {
	static constexpr unsigned kJobs = 64; // posted chunks the block may be behind by
	struct Job {
		std::uint64_t end_bus;   // where the chunk's last descriptor ends on the bus
		std::uint64_t bytes;
		std::uint64_t stream_offset;
		unsigned int buffer;
	};
	volatile std::uint64_t posted;   // chunks posted so far
	volatile std::uint64_t consumed; // chunks the block has finished
	volatile std::uint32_t stop;
	volatile std::uint32_t error;    // RESULT_STATUS of a failed record, 0 if none
	Job jobs[kJobs];
};

// Acquire and release at system scope: all the ordering argued above needs. An acquire load
// orders the thread's later loads after it without a fence (a system-scope fence, cheaper than
// __threadfence_system() but still a wait, cost the GPU-initiated reader 0.6-0.8 us a chunk).
__device__ inline void fence_acquire_system() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ inline std::uint32_t load_acquire_system(const volatile std::uint32_t *p)
{
	std::uint32_t v;
	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
__device__ inline std::uint64_t load_acquire_system(const volatile std::uint64_t *p)
{
	std::uint64_t v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
__device__ inline void store_release_system(volatile std::uint64_t *p, std::uint64_t v)
{
	asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Registers host memory with CUDA, mapped, and returns the GPU's address of it. Process memory
// registers plainly; memory the plain way refuses (a dma_mmap_coherent mapping of pcidriver's
// kernel memory, a BAR) is tried again as I/O memory (*io then true).
inline void *register_mapped(void *p, std::size_t n, bool *io, const char *who)
{
	*io = false;
	cudaError_t e = cudaHostRegister(p, n, cudaHostRegisterMapped | cudaHostRegisterPortable);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		e = cudaHostRegister(p, n, cudaHostRegisterMapped | cudaHostRegisterIoMemory);
		*io = e == cudaSuccess;
	}
	check(e, std::string(who) + ": cudaHostRegister");
	void *d = nullptr;
	check(cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer");
	return d;
}

// K user-memory DMA buffers of one size (FROM_DEVICE), each registered with CUDA as mapped
// memory, and a table of their GPU addresses in device memory: what a block that reads the
// board's chunks in place needs (the resident receiver, the GPU-initiated reader).
class MappedDmaBuffers {
public:
	MappedDmaBuffers() = default;
	MappedDmaBuffers(const MappedDmaBuffers &) = delete;
	MappedDmaBuffers &operator=(const MappedDmaBuffers &) = delete;
	~MappedDmaBuffers() { release(); }

	// \pre empty. Throws (and keeps what it made, for release()) on failure.
	void create(mprace::Board &board, unsigned int count, std::size_t size, const char *who)
	{
		size_ = size;
		std::vector<std::uintptr_t> table(count);
		for (unsigned int b = 0; b < count; ++b) {
			void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				throw Error(errno, std::string(who) + ": mmap");
			host_.push_back(p);
			bufs_.push_back(std::make_unique<mprace::DMABuffer>(board, p, size, PD_DMA_FROM_DEVICE));
			bool io = false;
			table[b] = reinterpret_cast<std::uintptr_t>(register_mapped(p, size, &io, who));
			registered_.push_back(p);
		}
		check(cudaMalloc(&table_, count * sizeof(std::uintptr_t)), "cudaMalloc");
		check(cudaMemcpy(table_, table.data(), count * sizeof(std::uintptr_t), cudaMemcpyHostToDevice),
		      "cudaMemcpy");
	}
	void release() noexcept
	{
		if (table_)
			cudaFree(table_);
		table_ = nullptr;
		for (void *p : registered_)
			cudaHostUnregister(p);
		registered_.clear();
		bufs_.clear();
		for (void *p : host_)
			munmap(p, size_);
		host_.clear();
	}

	unsigned int count() const noexcept { return static_cast<unsigned int>(bufs_.size()); }
	mprace::DMABuffer &operator[](unsigned int b) const noexcept { return *bufs_[b]; }
	// GPU addresses of the buffers, in device memory
	const std::uintptr_t *gpu_table() const noexcept { return static_cast<const std::uintptr_t *>(table_); }

private:
	std::size_t size_ = 0;
	std::vector<void *> host_, registered_;
	std::vector<std::unique_ptr<mprace::DMABuffer>> bufs_;
	void *table_ = nullptr;
};

// The arguments every reader of this kind checks alike.
inline void check_reader_args(const char *who, unsigned int count, unsigned int max_count,
			      std::size_t buffer_size, unsigned int threads)
{
	if (count < 1 || count > max_count)
		throw Error(EINVAL, std::string(who) + ": 1 to " + std::to_string(max_count) + " buffers");
	if (buffer_size == 0 || buffer_size % MP_ENGINE_GRANULE)
		throw Error(EINVAL, std::string(who) + ": the buffer size must be a non-zero multiple of 4");
	if (threads < 32 || threads > 1024 || threads % 32)
		throw Error(EINVAL, std::string(who) + ": threads must be 32 .. 1024, a multiple of 32");
}

// One look at ring slot (n mod size) for descriptor number n. The host writes a slot in the
// order: record cleared, address and length, cookie (libmprace, DMADescriptor::set); the engine
// writes the record last of all. So the cookie is read first (an acquire load), and only after
// it the record and the address: a slot that shows cookie n then shows n's address and either no
// record or n's own. (Reading them together let an old DONE record pass beside a new cookie:
// chunks were consumed before their data had landed.)
struct SlotLook {
	bool written; // the slot holds descriptor n
	bool done;    // ... and its record says DONE
	bool lapped;  // the slot holds a later descriptor: n was done and reaped long ago
	std::uint32_t status;
	std::uint64_t end; // its bus address + length
};
// cookie_seen: this thread has already seen cookie n in the slot (with an acquire load), so only
// the record and the address are read: one round trip over the bus per look while waiting.
__device__ inline SlotLook look_at(const mp_hw_desc *ring, unsigned int mask, std::uint64_t n, bool cookie_seen)
{
	const mp_hw_desc *d = ring + (n & mask);
	SlotLook l{};
	if (!cookie_seen) {
		// (the cookie's two words are one aligned 8-byte load: little-endian, lo first)
		const std::uint64_t cookie = load_acquire_system(reinterpret_cast<const std::uint64_t *>(&d->sw_cookie_lo));
		l.written = cookie == n;
		l.lapped = cookie > n;
		if (!l.written)
			return l;
	}
	l.written = true;
	// the address first, then the record with acquire (the chunk's data after it): both in
	// flight at once, one round trip a look
	const uint4 head = __ldcv(reinterpret_cast<const uint4 *>(d)); // addr_lo, addr_hi, len, ctrl
	const std::uint32_t status = load_acquire_system(&d->result_status);
	l.status = status;
	l.done = (status & MP_DESC_RESULT_STATUS_DONE_MASK) != 0;
	l.end = (head.x | (static_cast<std::uint64_t>(head.y) << 32)) + head.z;
	return l;
}

// The resident block. Warp 0 finds each chunk's record: the chunk's descriptors come after the
// previous chunk's in the ring's numbering (the cookies), so the warp looks at the next 32
// descriptor numbers at once, skips those that are done and end elsewhere (the chunk's earlier
// pieces), and stops at the one that ends where the chunk ends. Then every thread of the block
// consumes the chunk, and thread 0 publishes it.
template <class Consumer>
__global__ void resident_kernel(ResidentShared *sh, const mp_hw_desc *ring, unsigned int ring_mask,
				const std::uintptr_t *buffers, void *const *gpu_copy,
				Consumer consume)
{
	__shared__ std::uint64_t s_seq, s_bytes, s_offset;
	__shared__ unsigned int s_buffer;
	__shared__ int s_quit;
	const unsigned int lane = threadIdx.x % 32;
	// next: the first descriptor not yet seen (the channel was reset at the launch: numbers from 0)
	std::uint64_t seq = sh->consumed, next = 0;
	std::uint64_t confirmed = ~0ull; // the descriptor number whose cookie this lane has seen
	for (;;) {
		if (threadIdx.x < 32) {
			int quit = 0;
			// chunk `seq` posted? (lane 0 reads host memory, the warp follows)
			for (;;) {
				if (lane == 0)
					quit = sh->stop ? 1 : sh->posted > seq ? 2 : 0;
				quit = __shfl_sync(0xffffffffu, quit, 0);
				if (quit)
					break;
			}
			quit = quit == 1;
			if (!quit) {
				// the job after `posted`, for every lane of the warp (lane 0's acquire load
				// and __syncwarp() instead made a 64 KiB chunk 2.5 us slower, not understood)
				fence_acquire_system();
				const ResidentShared::Job &j = sh->jobs[seq % ResidentShared::kJobs];
				const std::uint64_t end = j.end_bus;
				for (;;) {
					if (lane == 0)
						quit = sh->stop;
					if (__shfl_sync(0xffffffffu, quit, 0)) {
						quit = 1;
						break;
					}
					const SlotLook l = look_at(ring, ring_mask, next + lane, confirmed == next + lane);
					if (l.written)
						confirmed = next + lane;
					const bool ends_here = l.done && l.end == end;
					const unsigned int mine = __ballot_sync(0xffffffffu, ends_here);
					const unsigned int failed =
						__ballot_sync(0xffffffffu, l.done && (l.status & MP_DESC_RESULT_STATUS_ERROR_MASK));
					// a lapped slot's descriptor was reaped, so done: never the chunk's end, which
					// run() keeps from being lapped before the block has seen it
					const unsigned int done = __ballot_sync(0xffffffffu, l.done || l.lapped);
					// descriptors up to the first one not done yet are settled
					const unsigned int settled = done == 0xffffffffu ? 32 : __ffs(~done) - 1;
					const unsigned int hit = mine & (settled == 32 ? 0xffffffffu : (1u << settled) - 1);
					const unsigned int bad = failed & (settled == 32 ? 0xffffffffu : (1u << settled) - 1);
					if (bad && (!hit || __ffs(bad) <= __ffs(hit))) {
						if (lane == __ffs(bad) - 1)
							sh->error = l.status;
						quit = 1;
						break;
					}
					if (hit) { // (its lane's acquire load of the record orders the data after it)
						next += __ffs(hit); // past the chunk's last descriptor
						break;
					}
					next += settled; // earlier pieces of the chunk: done, not its end
				}
				if (lane == 0 && !quit) {
					s_bytes = j.bytes;
					s_offset = j.stream_offset;
					s_buffer = j.buffer;
					s_seq = seq;
				}
			}
			if (lane == 0)
				s_quit = quit;
		}
		__syncthreads();
		if (s_quit)
			break;
		ResidentChunk c;
		c.host = reinterpret_cast<const void *>(buffers[s_buffer]);
		c.gpu = gpu_copy ? gpu_copy[s_buffer] : nullptr;
		c.bytes = s_bytes;
		c.sequence = s_seq;
		c.stream_offset = s_offset;
		c.buffer = s_buffer;
		if (c.gpu) { // the block copies the chunk first: 4 x 16 bytes in flight per thread
			const uint4 *src = static_cast<const uint4 *>(c.host);
			uint4 *dst = static_cast<uint4 *>(c.gpu);
			const std::size_t quads = c.bytes / 16, step = blockDim.x;
			std::size_t i = threadIdx.x;
			for (; i + 3 * step < quads; i += 4 * step) {
				const uint4 a = load_landed(src + i), b = load_landed(src + i + step),
					    e = load_landed(src + i + 2 * step), f = load_landed(src + i + 3 * step);
				dst[i] = a;
				dst[i + step] = b;
				dst[i + 2 * step] = e;
				dst[i + 3 * step] = f;
			}
			for (; i < quads; i += step)
				dst[i] = load_landed(src + i);
			const unsigned int *src4 = static_cast<const unsigned int *>(c.host);
			for (std::size_t i = c.bytes / 16 * 4 + threadIdx.x; i < c.bytes / 4; i += blockDim.x)
				static_cast<unsigned int *>(c.gpu)[i] = load_landed(src4 + i);
			__syncthreads();
		}
		consume(c);
		__syncthreads();
		++seq;
		if (threadIdx.x == 0) // after everything the block did with the chunk (the barrier above)
			store_release_system(&sh->consumed, seq);
	}
}

} // namespace detail

// Policies: Consumer (above). Requirements: the receiver is the only user of the engine's C2H
// channel while it lives (it matches records by where they end and by their cookies): the
// constructor resets the channel (no C2H transfer may be outstanding: EBUSY), so that the
// engine numbers descriptors from 0 again; after an error (EIO) it does the same and starts its
// block again, so the next run() works (and so does a new receiver on the same engine). The
// board is routed to the source it should read (seed the pattern generator after the
// constructor: on the RTL the reset drops what it took ahead). The ring's memory and the DMA
// buffers must be registrable with CUDA: the virtual board's are process memory; on real hardware the ring is
// pcidriver kernel memory (a dma_mmap_coherent mapping), which needs cudaHostRegisterIoMemory
// (tried when the plain registration fails; not tested on a real board yet).
// Errors: CudaError for CUDA calls, bufmgr::Error (EINVAL bad options, EIO a failed record, with
// its status: the receiver has restarted and stays usable; ETIMEDOUT the block did not stop or
// made no progress), the board's errors (mprace::Error, DMAError; EBUSY from the constructor).
// Thread safety: one thread drives run(); stop() from the destructor or that thread.
template <class Consumer>
class ResidentReceiver {
public:
	ResidentReceiver(mprace::Board &board, mprace::DMAEngine &engine, unsigned int count,
			 std::size_t buffer_size, Consumer consume, ResidentOptions o = ResidentOptions())
		: engine_(engine), opt_(o), size_(buffer_size), consume_(consume)
	{
		detail::check_reader_args("bufmgr::cuda::ResidentReceiver", count, detail::ResidentShared::kJobs,
					  buffer_size, o.threads);
		if (opt_.device < 0)
			check(cudaGetDevice(&opt_.device), "cudaGetDevice");
		check(cudaSetDevice(opt_.device), "cudaSetDevice");
		try {
			setup(board, count);
		} catch (...) {
			release();
			throw;
		}
	}
	ResidentReceiver(const ResidentReceiver &) = delete;
	ResidentReceiver &operator=(const ResidentReceiver &) = delete;
	~ResidentReceiver()
	{
		try {
			stop();
		} catch (...) {
		}
		release();
	}

	unsigned int count() const noexcept { return bufs_.count(); }
	std::size_t buffer_size() const noexcept { return size_; }
	// Chunks the block has consumed so far.
	std::uint64_t consumed() const noexcept { return sh_->consumed; }

	// Moves `chunks` chunks of `bytes` (<= buffer_size(), a multiple of 4) from the board through
	// the block, keeping up to count() in flight; returns when the block has consumed them all.
	void run(std::uint64_t chunks, std::size_t bytes)
	{
		if (bytes == 0 || bytes > size_ || bytes % MP_ENGINE_GRANULE)
			throw Error(EINVAL, "bufmgr::cuda::ResidentReceiver::run: " + std::to_string(bytes) +
						    " bytes: 4 .. buffer_size() in multiples of 4");
		if (stopped_)
			throw Error(EINVAL, "bufmgr::cuda::ResidentReceiver::run: stopped");
		const std::uint64_t last = posted_ + chunks;
		// Chunks in flight: as many as the buffers, but never so many descriptors after a chunk's
		// last one that the ring wraps onto it before the block has seen it.
		const std::uint64_t descs = descriptors_for(bytes);
		const std::uint64_t ring = engine_.ringEntries();
		const std::uint64_t in_flight =
			std::max<std::uint64_t>(1, std::min<std::uint64_t>(count(), (ring / 2 - 1) / descs + 1));
		const auto patience = engine_.waitTimeout();
		std::uint64_t seen = done_upto();
		auto progress = std::chrono::steady_clock::now();
		for (unsigned int spins = 0; done_upto() < last; ++spins) {
			// post while buffers are free: chunk n goes to buffer n mod K once n - K is consumed
			while (posted_ < last && posted_ < done_upto() + in_flight)
				post(bytes);
			if (sh_->error)
				fail();
			engine_.poll(mprace::Channel::C2H); // reaps records: frees slots for queued descriptors
			if (done_upto() != seen) {
				seen = done_upto();
				progress = std::chrono::steady_clock::now();
				spins = 0;
				continue;
			}
			if (spins % 1024 == 1023) { // now and then: is the block still there, is it stuck?
				if (cudaStreamQuery(stream_) != cudaErrorNotReady)
					throw Error(EIO, "bufmgr::cuda::ResidentReceiver: the resident block has ended");
				if (patience.count() && std::chrono::steady_clock::now() - progress > patience)
					throw Error(ETIMEDOUT, "bufmgr::cuda::ResidentReceiver: no chunk consumed for " +
								       std::to_string(patience.count()) + " ms");
			}
			cpu_relax();
		}
		if (sh_->error)
			fail();
		// finish the handles, so the ring's slots are free and errors are raised
		for (auto &t : pending_)
			if (t.valid())
				t.get();
	}

	// Asks the block to leave and waits for it (stop_timeout); idempotent.
	void stop()
	{
		if (stopped_ || !sh_)
			return;
		stopped_ = true;
		sh_->stop = 1;
		const auto until = std::chrono::steady_clock::now() + opt_.stop_timeout;
		cudaError_t e;
		while ((e = cudaStreamQuery(stream_)) == cudaErrorNotReady) {
			if (std::chrono::steady_clock::now() > until)
				throw Error(ETIMEDOUT, "bufmgr::cuda::ResidentReceiver: the resident block did not stop "
						       "(a consumer that never returns?)");
			std::this_thread::sleep_for(std::chrono::microseconds(50));
		}
		check(e, "bufmgr::cuda::ResidentReceiver: the resident block");
		for (auto &t : pending_)
			if (t.valid())
				t.abort();
	}

private:
	std::uint64_t done_upto() const noexcept { return sh_->consumed; }
	// the host polls host memory the GPU writes: a pause, not a system call, between looks
	static void cpu_relax() noexcept
	{
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#else
		std::this_thread::yield();
#endif
	}

	// An upper bound of the descriptors a read of `bytes` into a buffer takes: one per bus
	// segment it touches, more where a segment is longer than a descriptor may be.
	std::uint64_t descriptors_for(std::size_t bytes) const
	{
		std::uint64_t n = 0;
		for (const mprace::Segment &g : bufs_[0].segments()) {
			if (g.offset >= bytes)
				break;
			const std::uint64_t len = std::min<std::uint64_t>(g.length, bytes - g.offset);
			n += (len + MP_ENGINE_MAX_DESC_LEN - 1) / MP_ENGINE_MAX_DESC_LEN;
		}
		return std::max<std::uint64_t>(n, 1);
	}

	void post(std::size_t bytes)
	{
		const unsigned int b = static_cast<unsigned int>(posted_ % count());
		if (pending_[b].valid())
			pending_[b].get(); // the previous chunk of this buffer: finished, its slot reaped
		detail::ResidentShared::Job &j = sh_->jobs[posted_ % detail::ResidentShared::kJobs];
		j.end_bus = bufs_[b].busAddress(bytes - 1) + 1;
		j.bytes = bytes;
		j.stream_offset = offset_;
		j.buffer = b;
		std::atomic_thread_fence(std::memory_order_release);
		sh_->posted = posted_ + 1;
		pending_[b] = engine_.readAsync(bufs_[b], 0, bytes);
		++posted_;
		offset_ += bytes;
	}
	[[noreturn]] void fail()
	{
		const std::uint32_t st = sh_->error;
		const std::string what = "bufmgr::cuda::ResidentReceiver: chunk " + std::to_string(sh_->consumed) +
					 " failed on the board (RESULT_STATUS 0x" + hex(st) + ", engine error " +
					 std::to_string((st & MP_DESC_RESULT_STATUS_ERROR_CODE_MASK) >>
							MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT) + ")";
		restart();
		throw Error(EIO, what);
	}

	// After a failed record (the block has left): the chunks still posted are aborted, the
	// channel reset (its numbering from 0 again) and the block started anew, so the receiver goes
	// on with the next run(); the failed chunk and those after it are not consumed, and the stream
	// offsets go on from the failed chunk's.
	void restart()
	{
		const auto until = std::chrono::steady_clock::now() + opt_.stop_timeout;
		cudaError_t e;
		while ((e = cudaStreamQuery(stream_)) == cudaErrorNotReady) {
			if (std::chrono::steady_clock::now() > until) {
				stop(); // cannot restart a block that does not leave: stop for good
				return;
			}
			std::this_thread::sleep_for(std::chrono::microseconds(50));
		}
		check(e, "bufmgr::cuda::ResidentReceiver: the resident block");
		for (auto &t : pending_) {
			if (t.valid())
				t.abort();
			t = mprace::Transfer();
		}
		engine_.lend(mprace::Channel::C2H).giveBack();
		const std::uint64_t c = sh_->consumed;
		if (posted_ > c)
			offset_ = sh_->jobs[c % detail::ResidentShared::kJobs].stream_offset;
		posted_ = c;
		sh_->posted = c;
		sh_->error = 0;
		launch();
	}
	static std::string hex(std::uint32_t v)
	{
		char s[16];
		std::snprintf(s, sizeof(s), "%x", v);
		return s;
	}
	void setup(mprace::Board &board, unsigned int count)
	{
		check(cudaHostAlloc(reinterpret_cast<void **>(&sh_), sizeof(*sh_), cudaHostAllocMapped),
		      "bufmgr::cuda::ResidentReceiver: cudaHostAlloc");
		std::memset(static_cast<void *>(sh_), 0, sizeof(*sh_));
		check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev_sh_), sh_, 0), "cudaHostGetDevicePointer");
		// A clean channel: RESET and the ring cleared (lent and given back at once), so that the
		// engine numbers its descriptors from 0 again and no record written before (an error's
		// recovery restarts the numbering too) passes for one of ours. EBUSY while C2H
		// transfers are outstanding or the channel is lent.
		engine_.lend(mprace::Channel::C2H).giveBack();
		const mprace::DMADescriptorList &ring = engine_.ring(mprace::Channel::C2H);
		ring_host_ = ring.memory().data();
		ring_bytes_ = ring.memory().size();
		bool io = false;
		const void *dev_ring = detail::register_mapped(ring_host_, ring_bytes_, &io, "bufmgr::cuda::ResidentReceiver");
		ring_registered_ = true;
		bufs_.create(board, count, size_, "bufmgr::cuda::ResidentReceiver");
		pending_.resize(count);
		if (opt_.copy) {
			std::vector<void *> copies(count);
			for (auto &c : copies) {
				check(cudaMalloc(&c, size_), "cudaMalloc");
				gpu_copies_.push_back(c);
			}
			check(cudaMalloc(&dev_copies_, count * sizeof(void *)), "cudaMalloc");
			check(cudaMemcpy(dev_copies_, copies.data(), count * sizeof(void *), cudaMemcpyHostToDevice),
			      "cudaMemcpy");
		}
		check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
		dev_ring_ = static_cast<const mp_hw_desc *>(dev_ring);
		ring_mask_ = ring.mask();
		launch();
	}
	// The block starts at chunk sh_->consumed and descriptor number 0 (a channel just reset).
	void launch()
	{
		detail::resident_kernel<Consumer><<<1, opt_.threads, 0, stream_>>>(
			dev_sh_, dev_ring_, ring_mask_, bufs_.gpu_table(),
			static_cast<void *const *>(dev_copies_), consume_);
		check(cudaGetLastError(), "bufmgr::cuda::ResidentReceiver: launching the resident block");
	}
	void release() noexcept
	{
		if (stream_ && !stopped_ && sh_) {
			sh_->stop = 1; // best effort: setup failed after the launch
			cudaStreamSynchronize(stream_);
		}
		pending_.clear();
		if (stream_)
			cudaStreamDestroy(stream_);
		stream_ = nullptr;
		for (void *c : gpu_copies_)
			cudaFree(c);
		gpu_copies_.clear();
		if (dev_copies_)
			cudaFree(dev_copies_);
		dev_copies_ = nullptr;
		bufs_.release();
		if (ring_registered_)
			cudaHostUnregister(ring_host_);
		ring_registered_ = false;
		if (sh_)
			cudaFreeHost(sh_);
		sh_ = nullptr;
	}

	mprace::DMAEngine &engine_;
	ResidentOptions opt_;
	std::size_t size_;
	detail::ResidentShared *sh_ = nullptr, *dev_sh_ = nullptr;
	void *ring_host_ = nullptr;
	std::size_t ring_bytes_ = 0;
	bool ring_registered_ = false;
	std::vector<void *> gpu_copies_;
	detail::MappedDmaBuffers bufs_;
	std::vector<mprace::Transfer> pending_;
	void *dev_copies_ = nullptr;
	cudaStream_t stream_ = nullptr;
	const mp_hw_desc *dev_ring_ = nullptr;
	unsigned int ring_mask_ = 0;
	Consumer consume_;
	std::uint64_t posted_ = 0, offset_ = 0;
	bool stopped_ = false;
};

} // namespace bufmgr::cuda

#endif
