// SPDX-License-Identifier: LGPL-2.1-or-later
//
// GPU-initiated transfers: a GPU kernel asks the board for data itself — it writes the
// descriptors into the engine's C2H ring, rings the channel's doorbell (TAIL in BAR0, mapped into
// the GPU), waits for the completion record and hands the landed chunk to a device function —
// with no CPU in the loop (the seed paper's "GPU masters the transfer", what BaM does for NVMe).
//
//   cuda::InitiatedReader<Consumer>   K user-memory DMA buffers registered with CUDA; the C2H
//       channel lent by the engine (DMAEngine::lend): its ring and BAR0 registered with CUDA.
//       run(n, bytes) launches one kernel that moves n chunks: chunk c goes into buffer c mod K,
//       up to `depth` chunks queued at once. Thread 0 of block 0 keeps the ring; with `blocks`
//       > 1 the other blocks consume chunks at the same time (block k: chunks k, k + blocks, ...),
//       so the ring's upkeep and one block's reading rate stop bounding the throughput.
//
// BAR0 into the GPU: on a board behind pcidriver.ko, pd_map_bar(0) maps the registers and CUDA
// registers that mapping as I/O memory (cudaHostRegisterIoMemory): the GPU's store of TAIL is a
// posted write to the board. On the virtual board and sim:, BAR0 maps as the doorbell page
// (docs/dma-engine.md, "Doorbells from other bus masters"): process memory in which each
// channel's TAIL is live; the same kernel runs on all three.
//
// Memory ordering. Descriptors before the doorbell: thread 0 writes a chunk's descriptors (words
// 0-3, then the record cleared and the cookie) into the ring with system-scope stores to mapped
// host memory, then stores TAIL with a release store at system scope (st.release.sys): every
// store of the thread before it is seen by any other agent (the engine's descriptor fetch, the
// virtual board's watching thread) before TAIL is, so the engine never fetches a slot older than
// its doorbell (on a board, the GPU's posted writes reach the root complex in that order). The
// data before the record: the engine writes a chunk's data and then its record (posted writes in
// order; the virtual board's record is a release store after the data). Thread 0 polls the
// records in order with system-scope acquire loads (system scope: the GPU wrote those lines
// itself, see store_system); the one that finds the chunk's last record done orders later loads
// after it: its own block's (through __syncthreads) and, through its release store of the
// count of landed chunks that the other blocks load with acquire, theirs. (A relaxed load and
// then a system-scope fence, as before, cost 0.6-0.8 us more per chunk.) The consumer reads the
// data with load_landed() (past the caches: a buffer is rewritten for later chunks). A slot is
// written again only after its record was seen, and a buffer only for the chunk `depth` chunks
// later, after this one and every one before it were consumed (each block's release store of
// its chunk's done flag after its __syncthreads, loaded with acquire).
//
// Consumer: as for cuda::ResidentReceiver (cuda_resident.cuh): a trivially copyable struct with
//   __device__ void operator()(const ResidentChunk &chunk) const
// run by every thread of the block. chunk.gpu is nullptr (the data is read in place). With one
// block, chunks are consumed in order; with more, several at once in any order (each chunk once,
// chunk.sequence and chunk.stream_offset say which).
//
// This header needs nvcc (it holds a kernel) and libmprace.
#ifndef BUFMGR_CUDA_INITIATED_CUH
#define BUFMGR_CUDA_INITIATED_CUH

#include <cuda_runtime.h>
#include <sys/mman.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bufmgr/cuda_resident.cuh"

namespace bufmgr::cuda {

struct InitiatedOptions {
	int device = -1;             // GPU; -1: the calling thread's current device
	unsigned int threads = 1024; // threads of the block (32 .. 1024, a multiple of 32)
	unsigned int depth = 0;      // chunks queued on the board at once (1 .. buffers; 0: all)
	// Blocks consuming chunks (1 .. 64): block k takes chunks k, k + blocks, ... With more than
	// one, chunks are consumed concurrently, in any order, while the ring is kept going; all
	// blocks must fit on the GPU at once (a cooperative launch).
	unsigned int blocks = 1;
	// How long run() waits without a chunk consumed before it stops the kernel (ETIMEDOUT);
	// 0: the engine's wait timeout.
	std::chrono::milliseconds patience{0};
	std::chrono::milliseconds stop_timeout{2000}; // for the kernel to notice a stop
};

namespace detail {

// Mapped host memory: the host writes `stop`; the kernel the rest.
struct InitiatedShared {
	volatile std::uint32_t stop;
	volatile std::uint32_t error;     // RESULT_STATUS of the failed record, 0 if none
	volatile std::uint32_t next_desc; // the descriptor number after the last one written
	volatile std::uint64_t consumed;  // chunks of this run the block has finished
	volatile std::uint64_t failed_at; // the chunk whose record failed
};

struct InitiatedDesc {
	std::uint64_t bus;
	std::uint32_t len;
	std::uint32_t pad;
};

struct InitiatedRun {
	mp_hw_desc *ring;                  // the C2H ring (GPU address)
	unsigned int ring_mask;
	volatile std::uint32_t *doorbell;  // the channel's TAIL (GPU address)
	const InitiatedDesc *descs;        // per buffer: `per` descriptors, the first ndesc used
	const std::uint32_t *ndesc;        // per buffer
	unsigned int per;                  // table entries per buffer
	const std::uintptr_t *buffers;     // GPU addresses of the DMA buffers
	unsigned int count;                // buffers
	unsigned int depth;
	std::uint32_t first_desc;          // the free-running descriptor number the run starts at
	std::uint64_t first_chunk;         // chunks moved by earlier runs
	std::uint64_t first_offset;        // bytes moved by earlier runs
	std::uint64_t chunks;
	std::size_t bytes;
	std::uint64_t *latency_ns;         // per chunk (GPU address of mapped host memory) or null
};

__device__ inline std::uint64_t global_ns()
{
	std::uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// The ring is written and read by the GPU and by the engine: system-scope accesses, so that a
// line the GPU wrote (a slot) is not read back from the GPU's own cache once the engine has
// written the record into it (__ldcv, enough for memory the GPU only reads, returned the GPU's
// stale copy of a slot it had cleared).
__device__ inline void store_system(void *p, uint4 v)
{
	asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
		     "r"(v.z), "r"(v.w)
		     : "memory");
}
__device__ inline std::uint32_t load_system(const void *p)
{
	std::uint32_t v;
	asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

// The doorbell: a release store at system scope, so that every earlier store of the thread (the
// descriptors) is seen by any observer (the engine's fetch, the virtual board's watcher) before
// it. Cheaper than __threadfence_system() and a plain store (a sequentially consistent fence).
__device__ inline void ring_doorbell(volatile std::uint32_t *tail, std::uint32_t v)
{
	asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(tail), "r"(v) : "memory");
}

constexpr unsigned int kMaxInFlight = 64; // chunks queued or being consumed (depth <= buffers <= 64)
constexpr unsigned int kMaxBlocks = 64;   // consuming blocks
// The manager's per-chunk arrays: chunks written (at most depth + 1 ahead of the consumed) and
// not yet consumed.
constexpr unsigned int kTrack = 2 * kMaxInFlight;

// Device memory the blocks of one run share (cleared before each launch).
struct InitiatedSync {
	std::uint64_t landed;                 // chunks whose records have all been seen (the manager)
	std::uint32_t quit;                   // the manager ended the run (a failed record, a stop)
	std::uint32_t pad;
	std::uint64_t done[kMaxInFlight];     // chunk c consumed: done[c % kMaxInFlight] == c + 1
	std::uint64_t t0[kTrack];             // chunk c's doorbell (GPU clock)
};

__device__ inline void store_release_gpu(std::uint64_t *p, std::uint64_t v)
{
	asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ inline std::uint64_t load_acquire_gpu(const std::uint64_t *p)
{
	std::uint64_t v;
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

// The manager: thread 0 of block 0 keeps the ring. Its state lives in registers across the calls
// of manage(): chunks whose descriptors are written (`posted`, of which `part` descriptors of the
// next are written too), whose first descriptor is rung (`started`), landed (every record seen)
// and consumed (in order: every chunk before it done); the next descriptor number, the TAIL last
// written and the first descriptor whose record has not been seen yet.
struct Manager {
	std::uint64_t posted, started, landed, consumed;
	std::uint32_t part, next, rung, waited;
};

// Shared memory of block 0, the manager's only: each chunk's first and last descriptor.
struct ManagerMarks {
	std::uint32_t first[kTrack], last[kTrack];
};

constexpr std::uint64_t kUntilAllConsumed = ~0ull;

// Rings what may run: every written descriptor of the chunks below `allowed` (the consumed
// ones plus depth). The descriptors of the next chunk are written ahead but not rung, so that its
// turn costs only the doorbell.
__device__ inline void ring_allowed(const InitiatedRun &r, InitiatedSync *sync, Manager &m, const ManagerMarks &mk)
{
	const std::uint64_t allowed = m.consumed + r.depth;
	const std::uint32_t tail = m.posted < allowed ? m.next : mk.last[(allowed - 1) % kTrack] + 1;
	if (tail == m.rung)
		return;
	ring_doorbell(r.doorbell, tail); // after the descriptors it covers
	m.rung = tail;
	const std::uint64_t now = global_ns();
	const std::uint64_t written = m.posted + (m.part ? 1 : 0);
	while (m.started < written && static_cast<std::int32_t>(tail - mk.first[m.started % kTrack]) > 0)
		sync->t0[m.started++ % kTrack] = now;
}

// Runs the ring until chunk `until` has landed (or, with kUntilAllConsumed, until every chunk is
// consumed). Returns false when the run must end (a failed record, the host's stop): every block
// then sees sync->quit.
__device__ inline bool manage(InitiatedShared *sh, const InitiatedRun &r, InitiatedSync *sync, Manager &m,
			      ManagerMarks &mk, std::uint64_t until)
{
	const std::uint32_t ring = r.ring_mask + 1;
	bool waiting = false; // the last look at the records found nothing new
	for (;;) {
		// chunks the consumers finished, in order: their buffers may be filled again
		const std::uint64_t was = m.consumed;
		while (m.consumed < m.landed && load_acquire_gpu(&sync->done[m.consumed % kMaxInFlight]) == m.consumed + 1)
			++m.consumed;
		ring_allowed(r, sync, m, mk); // first: the chunks the consumers just made room for
		// write the descriptors of the chunks allowed, and while the board works (a look at the
		// records found nothing new: the stores then delay no doorbell and no look) those of one
		// chunk more, as far as the ring has room (a slot is rewritten only after its record was
		// seen); refill once half of it is free, so that a chunk of many descriptors costs a
		// doorbell per half ring
		if (m.next - m.waited <= ring / 2) {
			const std::uint64_t limit = m.consumed + r.depth + (waiting ? 1 : 0);
			while (m.posted < r.chunks && m.posted < limit && m.next - m.waited < ring) {
				const unsigned int b = static_cast<unsigned int>((r.first_chunk + m.posted) % r.count);
				const InitiatedDesc &d = r.descs[static_cast<std::size_t>(b) * r.per + m.part];
				if (m.part == 0)
					mk.first[m.posted % kTrack] = m.next;
				mp_hw_desc *slot = r.ring + (m.next & r.ring_mask);
				// words 0-3, then the record cleared and the cookie
				store_system(slot, make_uint4(static_cast<std::uint32_t>(d.bus),
							      static_cast<std::uint32_t>(d.bus >> 32), d.len, 0));
				store_system(&slot->result_bytes, make_uint4(0, 0, m.next, 0));
				++m.next;
				if (++m.part == r.ndesc[b]) {
					mk.last[m.posted % kTrack] = m.next - 1;
					m.part = 0;
					++m.posted;
				}
			}
			ring_allowed(r, sync, m, mk);
		}
		if (m.consumed != was) {
			// progress for the host's patience only (it reads the rest after the kernel ended):
			// plain stores, as a release store here would wait for the doorbell to be performed
			sh->next_desc = m.rung;
			sh->consumed = m.consumed;
		}
		if (until == kUntilAllConsumed ? m.consumed == r.chunks : m.landed > until)
			return true;
		bool quit = false;
		if (m.rung != m.waited) {
			// Records come in order and an error stops the channel, so a record that says done
			// without an error vouches for every descriptor before it: look at the last
			// descriptor of the oldest chunk not landed (at most a quarter ring ahead, so that
			// the ring is refilled while the engine still has work) and, while that is not
			// done, at the oldest one, where a failure would show.
			std::uint32_t target = m.rung - 1;
			if (target - m.waited > ring / 4)
				target = m.waited + ring / 4;
			if (m.landed < m.posted && static_cast<std::int32_t>(mk.last[m.landed % kTrack] - target) < 0)
				target = mk.last[m.landed % kTrack];
			std::uint32_t st = load_acquire_system(&r.ring[target & r.ring_mask].result_status);
			if (!(st & MP_DESC_RESULT_STATUS_DONE_MASK) && target != m.waited) {
				st = load_acquire_system(&r.ring[m.waited & r.ring_mask].result_status);
				target = m.waited;
			}
			if (st & MP_DESC_RESULT_STATUS_DONE_MASK) {
				if (st & MP_DESC_RESULT_STATUS_ERROR_MASK) {
					sh->failed_at = m.landed;
					sh->error = st;
					quit = true;
				} else {
					m.waited = target + 1;
					const std::uint64_t before = m.landed;
					while (m.landed < m.posted &&
					       static_cast<std::int32_t>(m.waited - mk.last[m.landed % kTrack]) > 0)
						++m.landed;
					if (m.landed != before && gridDim.x > 1) // (its own block: __syncthreads)
						store_release_gpu(&sync->landed, m.landed);
					waiting = false;
					continue;
				}
			}
		}
		if (quit || sh->stop) {
			atomicExch(&sync->quit, 1u);
			return false;
		}
		waiting = true;
	}
}

// One kernel per run: block k consumes chunks k, k + gridDim.x, ...; thread 0 of block 0 is also
// the manager, which runs the ring while its own block waits for a chunk (and, after its last one,
// until every chunk is consumed). With one block this is a single loop: find, consume, queue.
// Data visibility for the other blocks: the manager's system-scope acquire fence after the records
// and its release store of `landed` (cumulative), their acquire load of it, then loads past the
// caches (load_landed). A buffer is refilled only after its chunk's done flag (a release store
// after the block's __syncthreads) was seen, in order.
template <class Consumer>
__global__ void initiated_kernel(InitiatedShared *sh, InitiatedRun r, Consumer consume, InitiatedSync *sync)
{
	__shared__ ManagerMarks s_marks;
	__shared__ int s_quit;
	Manager m{0, 0, 0, 0, 0, r.first_desc, r.first_desc, r.first_desc};
	const bool manager = blockIdx.x == 0 && threadIdx.x == 0;
	for (std::uint64_t c = blockIdx.x; c < r.chunks; c += gridDim.x) {
		if (threadIdx.x == 0) {
			bool go;
			if (manager) {
				go = manage(sh, r, sync, m, s_marks, c);
			} else {
				go = true;
				while (load_acquire_gpu(&sync->landed) <= c)
					if (*static_cast<volatile std::uint32_t *>(&sync->quit)) {
						go = false;
						break;
					}
			}
			s_quit = !go;
		}
		__syncthreads();
		if (s_quit)
			return;
		ResidentChunk ch;
		const unsigned int b = static_cast<unsigned int>((r.first_chunk + c) % r.count);
		ch.host = reinterpret_cast<const void *>(r.buffers[b]);
		ch.gpu = nullptr;
		ch.bytes = r.bytes;
		ch.sequence = r.first_chunk + c;
		ch.stream_offset = r.first_offset + c * r.bytes;
		ch.buffer = b;
		consume(ch);
		__syncthreads();
		if (threadIdx.x == 0) {
			if (r.latency_ns)
				r.latency_ns[c] = global_ns() - sync->t0[c % kTrack];
			store_release_gpu(&sync->done[c % kMaxInFlight], c + 1);
		}
	}
	if (manager)
		manage(sh, r, sync, m, s_marks, kUntilAllConsumed);
}

} // namespace detail

// Policies: Consumer (above). Requirements: the engine's C2H channel is free (no transfers
// outstanding): the reader borrows it for its life (DMAEngine::lend), and the engine's own C2H
// transfers fail with EBUSY meanwhile; the board is routed to the source it should read; BAR0
// can be mapped (pd_map_bar) and registered with CUDA. Chunks of a reader form one stream: chunk
// k holds the source's bytes [k * bytes, (k + 1) * bytes) as long as every run() uses the same
// `bytes` (ResidentChunk::stream_offset says where a chunk starts).
// Errors: CudaError for CUDA calls; bufmgr::Error: EINVAL bad arguments, EIO a failed record
// (with the engine's code; the channel is reset and the reader usable again), ETIMEDOUT no chunk
// consumed for `patience` (the kernel is stopped, the channel reset); the engine's errors
// (EBUSY: C2H busy or lent) from the constructor; EINVAL also for `blocks` that the GPU cannot
// hold at once. After EIO or ETIMEDOUT, chunks() counts the chunks consumed in order; with
// several blocks a few chunks after those may have reached their consumer too, and chunks that
// had landed but not reached one are dropped (the stream goes on after chunks()).
// Thread safety: one thread calls run(); the destructor stops a kernel still running.
template <class Consumer>
class InitiatedReader {
public:
	InitiatedReader(mprace::Board &board, mprace::DMAEngine &engine, unsigned int count,
			std::size_t buffer_size, Consumer consume, InitiatedOptions o = InitiatedOptions())
		: engine_(engine), opt_(o), size_(buffer_size), consume_(consume)
	{
		detail::check_reader_args("bufmgr::cuda::InitiatedReader", count, 64, buffer_size, o.threads);
		if (o.depth > count)
			throw Error(EINVAL, "bufmgr::cuda::InitiatedReader: depth must be 1 .. the number of "
					    "buffers (0: all)");
		if (opt_.depth == 0)
			opt_.depth = count;
		if (o.blocks == 0 || o.blocks > detail::kMaxBlocks)
			throw Error(EINVAL, "bufmgr::cuda::InitiatedReader: blocks must be 1 .. " +
						    std::to_string(detail::kMaxBlocks));
		if (opt_.device < 0)
			check(cudaGetDevice(&opt_.device), "cudaGetDevice");
		check(cudaSetDevice(opt_.device), "cudaSetDevice");
		check_blocks_fit();
		try {
			setup(board, count);
		} catch (...) {
			release();
			throw;
		}
	}
	InitiatedReader(const InitiatedReader &) = delete;
	InitiatedReader &operator=(const InitiatedReader &) = delete;
	~InitiatedReader()
	{
		stop_kernel();
		release();
	}

	unsigned int count() const noexcept { return bufs_.count(); }
	std::size_t buffer_size() const noexcept { return size_; }
	// Chunks consumed over the reader's life.
	std::uint64_t chunks() const noexcept { return chunks_; }

	// Moves `n` chunks of `bytes` (4 .. buffer_size(), a multiple of 4) from the board through
	// one kernel launch; returns when the blocks have consumed them all. latency_ns, if given,
	// receives each chunk's time from the doorbell that starts it (its descriptors are written
	// ahead, during the chunk before) to its consumer done, on the GPU's clock (%globaltimer), n
	// entries.
	void run(std::uint64_t n, std::size_t bytes, std::vector<std::uint64_t> *latency_ns = nullptr)
	{
		if (bytes == 0 || bytes > size_ || bytes % MP_ENGINE_GRANULE)
			throw Error(EINVAL, "bufmgr::cuda::InitiatedReader::run: " + std::to_string(bytes) +
						    " bytes: 4 .. buffer_size() in multiples of 4");
		if (n == 0)
			return;
		check(cudaSetDevice(opt_.device), "cudaSetDevice");
		prepare(bytes);
		if (latency_ns && latency_ns->size() < n)
			latency_ns->resize(n);
		std::uint64_t *lat = nullptr;
		if (latency_ns) {
			ensure_latency_room(n);
			lat = dev_lat_;
		}
		sh_->stop = 0;
		sh_->error = 0;
		sh_->consumed = 0;
		check(cudaMemsetAsync(dev_sync_, 0, sizeof(detail::InitiatedSync), stream_), "cudaMemsetAsync");
		detail::InitiatedRun r{};
		r.ring = dev_ring_;
		r.ring_mask = ring_mask_;
		r.doorbell = dev_doorbell_;
		r.descs = static_cast<const detail::InitiatedDesc *>(dev_descs_);
		r.ndesc = static_cast<const std::uint32_t *>(dev_ndesc_);
		r.per = per_;
		r.buffers = bufs_.gpu_table();
		r.count = count();
		r.depth = opt_.depth;
		r.first_desc = next_desc_;
		r.first_chunk = chunks_;
		r.first_offset = offset_;
		r.chunks = n;
		r.bytes = bytes;
		r.latency_ns = lat;
		if (opt_.blocks == 1) {
			detail::initiated_kernel<Consumer><<<1, opt_.threads, 0, stream_>>>(dev_sh_, r, consume_, dev_sync_);
			check(cudaGetLastError(), "bufmgr::cuda::InitiatedReader: launching the kernel");
		} else { // the blocks wait for each other: all must be resident at once
			void *args[] = {&dev_sh_, &r, &consume_, &dev_sync_};
			check(cudaLaunchCooperativeKernel(reinterpret_cast<const void *>(&detail::initiated_kernel<Consumer>),
							  dim3(opt_.blocks), dim3(opt_.threads), args, 0, stream_),
			      "bufmgr::cuda::InitiatedReader: launching the kernel");
		}
		running_ = true;
		wait_for(n, bytes);
		next_desc_ = sh_->next_desc;
		chunks_ += n;
		offset_ += n * bytes;
		if (latency_ns)
			for (std::uint64_t i = 0; i < n; ++i)
				(*latency_ns)[i] = lat_host_[i];
	}

private:
	static void nap() { std::this_thread::sleep_for(std::chrono::microseconds(100)); }

	// The host sleeps while the kernel works: it only watches for the end, errors and stalls.
	void wait_for(std::uint64_t n, std::size_t bytes)
	{
		std::chrono::milliseconds patience = opt_.patience.count() ? opt_.patience : engine_.waitTimeout();
		std::uint64_t seen = 0;
		auto progress = std::chrono::steady_clock::now();
		for (;;) {
			const cudaError_t q = cudaStreamQuery(stream_);
			if (q != cudaErrorNotReady) {
				running_ = false;
				check(q, "bufmgr::cuda::InitiatedReader: the kernel");
				break;
			}
			if (sh_->error)
				continue; // the kernel ends at once
			if (sh_->consumed != seen) {
				seen = sh_->consumed;
				progress = std::chrono::steady_clock::now();
			} else if (patience.count() && std::chrono::steady_clock::now() - progress > patience) {
				stop_kernel();
				const std::string where = stall_report();
				recover();
				throw Error(ETIMEDOUT, "bufmgr::cuda::InitiatedReader: no chunk consumed for " +
							       std::to_string(patience.count()) + " ms (" +
							       std::to_string(seen) + " of " + std::to_string(n) + "; " + where + ")");
			}
			nap();
		}
		if (sh_->error) {
			const std::uint32_t st = sh_->error;
			const std::uint64_t at = chunks_ + sh_->failed_at;
			chunks_ += sh_->consumed;
			offset_ += sh_->consumed * bytes;
			recover();
			throw Error(EIO, "bufmgr::cuda::InitiatedReader: chunk " + std::to_string(at) +
						 " failed on the board (engine error " +
						 mp_engine_error_name((st & MP_DESC_RESULT_STATUS_ERROR_CODE_MASK) >>
								      MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT) + ")");
		}
	}

	// What the engine and the ring show when the kernel waits in vain: whether the doorbell
	// arrived (TAIL), what the engine did with it (HEAD, state) and the next record.
	std::string stall_report() const
	{
		const mprace::ChannelStatus st = engine_.status(mprace::Channel::C2H);
		std::string s = "engine: state " + std::to_string(st.state) + ", error " +
				mp_engine_error_name(st.errorCode) + ", HEAD " + std::to_string(st.head) +
				", TAIL " + std::to_string(st.tail);
		for (std::uint32_t n : {st.head - 1, st.head}) {
			const mprace::DMADescriptor &d = lease_.ring().at(n);
			s += "; descriptor " + std::to_string(n) + ": " + std::to_string(d.length()) +
			     " bytes, cookie " + std::to_string(d.cookie()) + ", status 0x" + hex(d.record().status);
		}
		return s;
	}
	static std::string hex(std::uint32_t v)
	{
		char s[16];
		std::snprintf(s, sizeof(s), "%x", v);
		return s;
	}

	// Sets the kernel's stop flag and waits for it to leave (stop_timeout).
	void stop_kernel() noexcept
	{
		if (!running_ || !sh_)
			return;
		sh_->stop = 1;
		const auto until = std::chrono::steady_clock::now() + opt_.stop_timeout;
		while (cudaStreamQuery(stream_) == cudaErrorNotReady && std::chrono::steady_clock::now() < until)
			nap();
		running_ = cudaStreamQuery(stream_) == cudaErrorNotReady;
	}

	// After a failed or stopped run: the channel reset (given back and lent again), the
	// descriptor numbering from 0.
	void recover()
	{
		if (running_)
			throw Error(ETIMEDOUT, "bufmgr::cuda::InitiatedReader: the kernel did not stop (a "
					       "consumer that never returns?)");
		lease_.giveBack();
		lease_ = engine_.lend(mprace::Channel::C2H);
		next_desc_ = 0;
	}

	// More than one block: the GPU must take them all at once (their blocks wait on each other).
	void check_blocks_fit() const
	{
		if (opt_.blocks == 1)
			return;
		int coop = 0, sms = 0, per_sm = 0;
		check(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, opt_.device), "cudaDeviceGetAttribute");
		check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, opt_.device), "cudaDeviceGetAttribute");
		check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
			      &per_sm, reinterpret_cast<const void *>(&detail::initiated_kernel<Consumer>),
			      static_cast<int>(opt_.threads), 0),
		      "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
		if (!coop)
			throw Error(EINVAL, "bufmgr::cuda::InitiatedReader: this GPU has no cooperative launch: blocks "
					    "must be 1");
		if (static_cast<long>(opt_.blocks) > static_cast<long>(sms) * per_sm)
			throw Error(EINVAL, "bufmgr::cuda::InitiatedReader: " + std::to_string(opt_.blocks) +
						    " blocks of " + std::to_string(opt_.threads) + " threads do not fit on the GPU at once (at most " +
						    std::to_string(sms * per_sm) + ")");
	}

	// The descriptor table for chunks of `bytes` (rebuilt when the size changes).
	void prepare(std::size_t bytes)
	{
		if (bytes == prepared_bytes_)
			return;
		std::vector<std::size_t> need(count());
		std::size_t per = 1;
		for (unsigned int b = 0; b < count(); ++b) {
			need[b] = mprace::SGSplitter::count(bufs_[b].segments(), 0, bytes);
			per = std::max(per, need[b]);
		}
		std::vector<detail::InitiatedDesc> table(count() * per);
		std::vector<std::uint32_t> ndesc(count());
		for (unsigned int b = 0; b < count(); ++b) {
			mprace::SGSplitter split(bufs_[b].segments(), 0, bytes);
			mprace::DescriptorChunk d;
			std::uint32_t i = 0;
			while (split.next(d))
				table[b * per + i++] = detail::InitiatedDesc{d.busAddress, d.length, 0};
			ndesc[b] = i;
		}
		if (dev_descs_)
			cudaFree(dev_descs_);
		dev_descs_ = nullptr;
		check(cudaMalloc(&dev_descs_, table.size() * sizeof(table[0])), "cudaMalloc");
		check(cudaMemcpy(dev_descs_, table.data(), table.size() * sizeof(table[0]), cudaMemcpyHostToDevice),
		      "cudaMemcpy");
		check(cudaMemcpy(dev_ndesc_, ndesc.data(), count() * sizeof(std::uint32_t), cudaMemcpyHostToDevice),
		      "cudaMemcpy");
		per_ = static_cast<unsigned int>(per);
		prepared_bytes_ = bytes;
	}

	void ensure_latency_room(std::uint64_t n)
	{
		if (n <= lat_room_)
			return;
		if (lat_host_)
			cudaFreeHost(lat_host_);
		lat_host_ = nullptr;
		lat_room_ = 0;
		check(cudaHostAlloc(reinterpret_cast<void **>(&lat_host_), n * sizeof(std::uint64_t), cudaHostAllocMapped),
		      "cudaHostAlloc");
		check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev_lat_), lat_host_, 0),
		      "cudaHostGetDevicePointer");
		lat_room_ = n;
	}

	void setup(mprace::Board &board, unsigned int count)
	{
		check(cudaHostAlloc(reinterpret_cast<void **>(&sh_), sizeof(*sh_), cudaHostAllocMapped),
		      "bufmgr::cuda::InitiatedReader: cudaHostAlloc");
		std::memset(static_cast<void *>(sh_), 0, sizeof(*sh_));
		check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev_sh_), sh_, 0), "cudaHostGetDevicePointer");
		bufs_.create(board, count, size_, "bufmgr::cuda::InitiatedReader");
		check(cudaMalloc(&dev_ndesc_, count * sizeof(std::uint32_t)), "cudaMalloc");
		check(cudaMalloc(reinterpret_cast<void **>(&dev_sync_), sizeof(detail::InitiatedSync)), "cudaMalloc");
		lease_ = engine_.lend(mprace::Channel::C2H);
		mprace::DMADescriptorList &ring = lease_.ring();
		ring_host_ = ring.memory().data();
		ring_mask_ = ring.mask();
		bool io = false;
		dev_ring_ = static_cast<mp_hw_desc *>(detail::register_mapped(ring_host_, ring.memory().size(), &io,
									      "bufmgr::cuda::InitiatedReader: the ring"));
		ring_registered_ = true;
		bar0_ = lease_.bar0();
		const unsigned int flags = cudaHostRegisterMapped |
					   (lease_.bar0IsDeviceMemory() ? cudaHostRegisterIoMemory : 0u);
		check(cudaHostRegister(bar0_, lease_.bar0Size(), flags),
		      "bufmgr::cuda::InitiatedReader: registering BAR0 with CUDA");
		bar0_registered_ = true;
		void *dev_bar0 = nullptr;
		check(cudaHostGetDevicePointer(&dev_bar0, bar0_, 0), "cudaHostGetDevicePointer");
		dev_doorbell_ = reinterpret_cast<volatile std::uint32_t *>(
			static_cast<unsigned char *>(dev_bar0) +
			(reinterpret_cast<volatile unsigned char *>(lease_.doorbell()) - static_cast<unsigned char *>(bar0_)));
		check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
	}

	void release() noexcept
	{
		if (stream_)
			cudaStreamDestroy(stream_);
		stream_ = nullptr;
		if (bar0_registered_)
			cudaHostUnregister(bar0_);
		bar0_registered_ = false;
		if (ring_registered_)
			cudaHostUnregister(ring_host_);
		ring_registered_ = false;
		if (!running_)
			lease_.giveBack(); // else the kernel may still ring: keep the channel lent
		bufs_.release();
		for (void *p : {dev_ndesc_, dev_descs_, static_cast<void *>(dev_sync_)})
			if (p)
				cudaFree(p);
		dev_ndesc_ = dev_descs_ = nullptr;
		dev_sync_ = nullptr;
		if (lat_host_)
			cudaFreeHost(lat_host_);
		lat_host_ = nullptr;
		if (sh_)
			cudaFreeHost(sh_);
		sh_ = nullptr;
	}

	mprace::DMAEngine &engine_;
	InitiatedOptions opt_;
	std::size_t size_;
	Consumer consume_;
	mprace::ChannelLease lease_;
	detail::InitiatedShared *sh_ = nullptr, *dev_sh_ = nullptr;
	detail::InitiatedSync *dev_sync_ = nullptr;
	detail::MappedDmaBuffers bufs_;
	void *dev_ndesc_ = nullptr, *dev_descs_ = nullptr;
	void *ring_host_ = nullptr, *bar0_ = nullptr;
	bool ring_registered_ = false, bar0_registered_ = false, running_ = false;
	mp_hw_desc *dev_ring_ = nullptr;
	volatile std::uint32_t *dev_doorbell_ = nullptr;
	unsigned int ring_mask_ = 0, per_ = 1;
	std::size_t prepared_bytes_ = 0;
	std::uint32_t next_desc_ = 0;
	std::uint64_t chunks_ = 0, offset_ = 0;
	std::uint64_t *lat_host_ = nullptr, *dev_lat_ = nullptr;
	std::uint64_t lat_room_ = 0;
	cudaStream_t stream_ = nullptr;
};

} // namespace bufmgr::cuda

#endif
