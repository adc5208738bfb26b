// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The network stage's receiving side feeding a GPU: board -> host -> network -> remote host ->
// GPU (docs/network.md, "Into a GPU at the receiver").
//
//   net::ReceiverToGpu  takes each chunk a net::Receiver has landed and has the GPU's copy
//                       engine move it into GPU memory, straight from the receiver's memory
//                       (registered with CUDA, no CPU copy); hands it to the application's
//                       GPU work on a stream, then gives the chunk back to the receiver.
//
// Why through host memory: UCX as Debian builds it has no CUDA support, so the network cannot
// land a chunk in GPU memory itself. Each of the receiver's slots is registered with CUDA
// (cudaHostRegister) the first time a chunk lands in it; from then on a chunk costs one
// cudaMemcpyAsync and two events.
//
// Flow control: a chunk goes back to the receiver (and its credit to the sender) once its copy
// has completed; its GPU buffer is reused once the work on_chunk queued after the copy has
// completed. With every GPU buffer busy, pump() waits for the oldest: a slow GPU stalls the
// senders through their credits, and through them the boards. Nothing is dropped.
//
// Needs UCX and the CUDA runtime API (link cudart; no nvcc).
#ifndef BUFMGR_NET_CUDA_HPP
#define BUFMGR_NET_CUDA_HPP

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bufmgr/cuda.hpp"
#include "bufmgr/net.hpp"

namespace bufmgr::net {

// One chunk in GPU memory, as ReceiverToGpuOptions' hooks see it.
struct GpuNetChunk {
	ChunkHeader header;         // as the sender sent it (source, sequences, timeframe, offset)
	void *gpu = nullptr;        // where it landed in GPU memory (valid until on_done returned)
	std::size_t bytes = 0;      // payload bytes there
	std::size_t connection = 0; // index into Receiver::connections()
	std::uint64_t sequence = 0; // 0, 1, 2, ... over this stage's life
};

// The most GPU buffers a ReceiverToGpu keeps.
inline constexpr std::size_t max_gpu_depth = 256;

struct ReceiverToGpuOptions {
	int device = -1;          // the GPU; -1: the constructing thread's current device
	std::size_t depth = 4;    // GPU buffers of the receiver's max_chunk each: chunks on the GPU at once
	unsigned int streams = 2; // consecutive chunks alternate between these streams
	// On the driving thread, after a chunk's copy was queued on `stream`: work queued there runs
	// once the chunk is in GPU memory, and its GPU buffer is reused only after that work.
	// Throwing ends pump() with that exception; the chunk is given back to the receiver.
	std::function<void(const GpuNetChunk &, cudaStream_t stream)> on_chunk;
	// On the driving thread, once the copy and on_chunk's work have completed, before the GPU
	// buffer is reused (to read a result the work wrote, say). Exceptions pass through.
	std::function<void(const GpuNetChunk &)> on_done;
};

// Requirements: the Receiver outlives the stage, and the thread that drives the Receiver
// calls everything here (pump() calls the Receiver's next() and release()); the application
// takes chunks through pump() only, never through the Receiver's next().
// Errors: Error(EINVAL) bad options (before any CUDA call); CudaError from CUDA (no GPU,
// cudaHostRegister refused, a failed copy or work); the Receiver's own errors.
class ReceiverToGpu {
public:
	ReceiverToGpu(Receiver &rx, ReceiverToGpuOptions o = ReceiverToGpuOptions()) : rx_(rx), opt_(std::move(o))
	{
		if (opt_.depth == 0 || opt_.depth > max_gpu_depth)
			throw Error(EINVAL, "bufmgr::net::ReceiverToGpu: depth must be 1.." + std::to_string(max_gpu_depth) +
						    " GPU buffers");
		if (opt_.streams == 0 || opt_.streams > 64)
			throw Error(EINVAL, "bufmgr::net::ReceiverToGpu: streams must be 1..64");
		if (opt_.device < -1)
			throw Error(EINVAL, "bufmgr::net::ReceiverToGpu: device must be a GPU number or -1");
		if (opt_.device >= 0 && opt_.device >= cuda::device_count())
			throw Error(ENODEV, "bufmgr::net::ReceiverToGpu: there is no GPU " + std::to_string(opt_.device) +
						    (cuda::device_count() ? "" : " (" + cuda::unavailable_reason() + ")"));
		if (opt_.device < 0)
			cuda::check(cudaGetDevice(&opt_.device), "bufmgr::net::ReceiverToGpu: cudaGetDevice");
		try {
			use_device();
			for (unsigned int i = 0; i < opt_.streams; ++i) {
				cudaStream_t s;
				cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
					    "bufmgr::net::ReceiverToGpu: cudaStreamCreate");
				streams_.push_back(s);
			}
			slots_.resize(opt_.depth);
			for (Slot &s : slots_) {
				s.gpu = cuda::DeviceBuffer(rx_.max_chunk());
				cuda::check(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming),
					    "bufmgr::net::ReceiverToGpu: cudaEventCreate");
				cuda::check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming),
					    "bufmgr::net::ReceiverToGpu: cudaEventCreate");
			}
		} catch (...) {
			destroy();
			throw;
		}
		for (std::size_t i = slots_.size(); i-- > 0;)
			free_.push_back(i);
	}
	ReceiverToGpu(const ReceiverToGpu &) = delete;
	ReceiverToGpu &operator=(const ReceiverToGpu &) = delete;
	// Waits for the GPU, gives every chunk back to the receiver (on_done is not called), and
	// unregisters the receiver's memory.
	~ReceiverToGpu() { destroy(); }

	// Waits up to `timeout` for the next chunk and queues its copy into GPU memory and
	// on_chunk's work; std::nullopt when none came. Also gives back the chunks whose copies
	// completed and finishes (on_done) those whose work did. Receiver::interrupt() ends a wait
	// for a chunk at once, except while copies are in flight: then pump() keeps looking until
	// they complete or `timeout` passes, so keep timeouts short (tens of milliseconds).
	std::optional<GpuNetChunk> pump(std::chrono::milliseconds timeout)
	{
		use_device();
		reap();
		if (free_.empty())
			finish(busy_.front());
		const auto deadline = std::chrono::steady_clock::now() + timeout;
		std::optional<Chunk> c;
		// While copies are in flight, look for a chunk without sleeping and give chunks back
		// as their copies complete: their credits may be what the senders wait for.
		while (copying() && !(c = rx_.next(std::chrono::milliseconds(0)))) {
			reap();
			if (std::chrono::steady_clock::now() >= deadline)
				return std::nullopt;
		}
		if (!c) {
			const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				deadline - std::chrono::steady_clock::now());
			c = rx_.next(std::max(left, std::chrono::milliseconds(0)));
		}
		if (!c)
			return std::nullopt;
		return queue(*c);
	}

	// Waits until every chunk queued has completed: on_done called, all given back.
	void flush()
	{
		use_device();
		while (!busy_.empty())
			finish(busy_.front());
	}

	std::size_t in_flight() const noexcept { return busy_.size(); } // chunks on the GPU
	std::uint64_t chunks() const noexcept { return next_sequence_; } // queued so far
	int device() const noexcept { return opt_.device; }

private:
	struct Slot {
		cuda::DeviceBuffer gpu;
		cudaEvent_t copied = nullptr, done = nullptr;
		std::optional<Chunk> host; // the receiver's chunk, until its copy has completed
		GpuNetChunk chunk;
	};

	GpuNetChunk queue(const Chunk &c)
	{
		const std::size_t k = free_.back();
		Slot &s = slots_[k];
		try {
			register_memory(c);
			cudaStream_t st = streams_[next_sequence_ % streams_.size()];
			s.chunk = GpuNetChunk{c.header, s.gpu.data(), c.size, c.connection, next_sequence_};
			cuda::check(cudaMemcpyAsync(s.gpu.data(), c.data, c.size, cudaMemcpyHostToDevice, st),
				    "bufmgr::net::ReceiverToGpu: cudaMemcpyAsync of chunk " +
					    std::to_string(c.header.sequence) + " from source " + std::to_string(c.header.source));
			cuda::check(cudaEventRecord(s.copied, st), "bufmgr::net::ReceiverToGpu: cudaEventRecord");
			s.host = c;
			if (opt_.on_chunk)
				opt_.on_chunk(s.chunk, st);
			cuda::check(cudaEventRecord(s.done, st), "bufmgr::net::ReceiverToGpu: cudaEventRecord");
		} catch (...) {
			// The copy may be queued: the receiver's memory is given back once the GPU is past it.
			if (s.host) {
				cudaEventSynchronize(s.copied);
				(void)cudaGetLastError();
				s.host.reset();
			}
			rx_.release(c);
			throw;
		}
		free_.pop_back();
		busy_.push_back(k);
		++next_sequence_;
		return s.chunk;
	}

	// Gives back the chunks whose copies completed; finishes the oldest chunks whose work did.
	void reap()
	{
		for (std::size_t k : busy_) {
			Slot &s = slots_[k];
			if (s.host && query(s.copied, "copy"))
				give_back(s);
		}
		while (!busy_.empty() && query(slots_[busy_.front()].done, "work"))
			finish(busy_.front());
	}

	// Waits for slot k (the oldest) to complete, gives its chunk back and calls on_done.
	void finish(std::size_t k)
	{
		Slot &s = slots_[k];
		const cudaError_t e = cudaEventSynchronize(s.done);
		busy_.pop_front();
		free_.push_back(k);
		if (s.host) {
			if (e != cudaSuccess)
				cudaEventSynchronize(s.copied);
			give_back(s);
		}
		cuda::check(e, "bufmgr::net::ReceiverToGpu: the copy or the work of chunk " +
				       std::to_string(s.chunk.header.sequence) + " from source " +
				       std::to_string(s.chunk.header.source) + " failed");
		if (opt_.on_done)
			opt_.on_done(s.chunk);
	}

	bool query(cudaEvent_t e, const char *what)
	{
		const cudaError_t r = cudaEventQuery(e);
		if (r == cudaErrorNotReady)
			return false;
		cuda::check(r, std::string("bufmgr::net::ReceiverToGpu: a chunk's ") + what + " failed");
		return true;
	}

	void give_back(Slot &s)
	{
		const Chunk c = *s.host;
		s.host.reset();
		rx_.release(c);
	}

	bool copying() const noexcept
	{
		for (std::size_t k : busy_)
			if (slots_[k].host)
				return true;
		return false;
	}

	// The receiver's slot memory, registered with CUDA the first time a chunk lands in it (a
	// slot holds max_chunk bytes and lives as long as the Receiver).
	void register_memory(const Chunk &c)
	{
		if (registered_.count(c.data))
			return;
		void *p = const_cast<std::byte *>(c.data);
		cuda::check(cudaHostRegister(p, rx_.max_chunk(), cudaHostRegisterDefault),
			    "bufmgr::net::ReceiverToGpu: cudaHostRegister of the receiver's memory (" +
				    std::to_string(rx_.max_chunk()) + " bytes)");
		registered_.insert(c.data);
	}

	void use_device() { cuda::check(cudaSetDevice(opt_.device), "bufmgr::net::ReceiverToGpu: cudaSetDevice"); }

	void destroy() noexcept
	{
		if (opt_.device >= 0)
			cudaSetDevice(opt_.device);
		for (cudaStream_t st : streams_)
			cudaStreamSynchronize(st);
		for (Slot &s : slots_) {
			if (s.host) {
				try {
					give_back(s);
				} catch (...) {
				}
			}
			if (s.copied)
				cudaEventDestroy(s.copied);
			if (s.done)
				cudaEventDestroy(s.done);
		}
		for (cudaStream_t st : streams_)
			cudaStreamDestroy(st);
		for (const std::byte *p : registered_)
			cudaHostUnregister(const_cast<std::byte *>(p));
		(void)cudaGetLastError();
		slots_.clear();
		streams_.clear();
		registered_.clear();
		busy_.clear();
		free_.clear();
	}

	Receiver &rx_;
	ReceiverToGpuOptions opt_;
	std::vector<cudaStream_t> streams_;
	std::vector<Slot> slots_;
	std::vector<std::size_t> free_;  // slots ready for a chunk
	std::deque<std::size_t> busy_;   // slots on the GPU, oldest first
	std::set<const std::byte *> registered_;
	std::uint64_t next_sequence_ = 0;
};

} // namespace bufmgr::net

#endif // BUFMGR_NET_CUDA_HPP
