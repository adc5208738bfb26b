// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The CUDA stage: FPGA -> host -> GPU and GPU -> host -> FPGA without a CPU copy.
//
// The board's DMA buffers are registered with CUDA (cudaHostRegister), so the GPU's copy
// engine reads (or writes) the very memory the board wrote (or will read), with
// cudaMemcpyAsync on a few streams; a buffer returns to the board when its CUDA event has
// completed. The two links run at once (Relay, bufmgr/relay.hpp), so the throughput approaches
// the slower link.
//
//   cuda::CudaTransfer    the Transfer policy of the GPU side (host buffer <-> GPU memory);
//                         usable on its own in the other algorithms too (a DoubleBuffer
//                         through pinned staging buffers: MPRACE's "CUDA pinned memory").
//   cuda::FpgaToGpu<B>    Relay<B, CudaTransfer>: board -> GPU memory
//   cuda::GpuToFpga<B>    Relay<CudaTransfer, B>: GPU memory -> board
//   cuda::DeviceBuffer    cudaMalloc'd memory, owned
//
// Memory rule: the buffers must be ordinary process memory. pcidriver *user memory* (anonymous
// memory pinned by the driver: MpraceTransfer(board, engine, bufmgr::MemoryKind::user)) is;
// pcidriver *kernel memory* is not: its dma_mmap_coherent mapping (VM_IO | VM_PFNMAP) cannot be
// pinned a second time, so cudaHostRegister would fail on real hardware. CudaTransfer::adopt()
// refuses kernel-memory buffers with Error(EINVAL) on every backend, the virtual board included,
// so tests enforce what hardware demands. A failing cudaHostRegister throws CudaError; there is
// never a silent fallback to pageable copies.
//
// This header needs the CUDA runtime (cuda_runtime_api.h; link cudart, e.g. nvcc's default
// static cudart); the rest of libbufmgr builds without CUDA. No CUDA call is made before the
// first allocate()/adopt(), so the refusal of kernel memory needs no GPU.
#ifndef BUFMGR_CUDA_HPP
#define BUFMGR_CUDA_HPP

#include <cuda_runtime_api.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <memory>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "bufmgr/concepts.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/memory.hpp"
#include "bufmgr/relay.hpp"

namespace bufmgr::cuda {

// errno for a CUDA runtime error, so that CudaError is compared like every other error.
inline int errno_of(cudaError_t e) noexcept
{
	switch (e) {
	case cudaSuccess: return 0;
	case cudaErrorMemoryAllocation: return ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidMemcpyDirection: return EINVAL;
	case cudaErrorHostMemoryAlreadyRegistered: return EEXIST;
	case cudaErrorHostMemoryNotRegistered: return ENOENT;
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
	case cudaErrorInsufficientDriver: return ENODEV;
	case cudaErrorNotSupported: return EOPNOTSUPP;
	default: return EIO;
	}
}

// A CUDA runtime error: a bufmgr::Error (std::system_error) with the errno above, the CUDA
// error's name and text in what(), and the cudaError_t itself.
class CudaError : public Error {
public:
	CudaError(cudaError_t e, const std::string &what)
		: Error(errno_of(e), what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")"),
		  err_(e) {}
	cudaError_t cuda_error() const noexcept { return err_; }

private:
	cudaError_t err_;
};

inline void check(cudaError_t e, const std::string &what)
{
	if (e != cudaSuccess) {
		(void)cudaGetLastError(); // clear the (non-sticky) error
		throw CudaError(e, what);
	}
}

// Why no CUDA GPU can be used here, in words; "" when one can (never throws). Without the
// NVIDIA kernel driver the runtime reports an "insufficient driver version", which misleads:
// that case is named for what it is.
inline std::string unavailable_reason()
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaSuccess)
		return n ? std::string() : std::string("no CUDA GPU found");
	(void)cudaGetLastError();
	if ((e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) &&
	    access("/proc/driver/nvidia/version", F_OK) != 0)
		return "no NVIDIA driver on this machine (/proc/driver/nvidia is absent): no CUDA GPU "
		       "can be used";
	return std::string("no usable CUDA GPU (") + cudaGetErrorString(e) + ")";
}

// Number of usable GPUs; 0 when there is none or no driver (never throws).
inline int device_count() noexcept
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

// cudaMalloc'd device memory, owned. Move-only.
class DeviceBuffer {
public:
	DeviceBuffer() noexcept = default;
	explicit DeviceBuffer(std::size_t size) : size_(size)
	{
		check(cudaMalloc(&p_, size ? size : 1), "bufmgr::cuda::DeviceBuffer: cudaMalloc of " +
								std::to_string(size) + " bytes");
	}
	DeviceBuffer(DeviceBuffer &&o) noexcept : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
	DeviceBuffer &operator=(DeviceBuffer &&o) noexcept
	{
		std::swap(p_, o.p_);
		std::swap(size_, o.size_);
		return *this;
	}
	DeviceBuffer(const DeviceBuffer &) = delete;
	DeviceBuffer &operator=(const DeviceBuffer &) = delete;
	~DeviceBuffer()
	{
		if (p_)
			cudaFree(p_);
	}
	void *data() const noexcept { return p_; }
	std::size_t size() const noexcept { return size_; }

private:
	void *p_ = nullptr;
	std::size_t size_ = 0;
};

// How a GPU conversion moves its data.
enum class GpuConvertPath {
	// A kernel reads the registered host buffer over the bus and writes the converted result
	// straight into GPU memory (GPU -> board: reads GPU memory, writes the host buffer): the
	// copy and the conversion in one pass, done by the SMs instead of the copy engine.
	zero_copy,
	// The copy engine moves the raw bytes into a staging area in GPU memory, then a kernel
	// converts them (GPU -> board: the kernel first, then the copy): two passes.
	copy_then_kernel,
};

// A conversion the GPU stage runs on the GPU, made from a Transform by
// bufmgr::cuda::make_gpu_conversion() (bufmgr/cuda_transform.cuh, compiled by nvcc). Board ->
// GPU: the host buffer holds in_type, GPU memory receives out_type; GPU -> board: GPU memory
// holds in_type, the host buffer (and the board) gets out_type. Empty: a plain copy.
struct GpuConversion {
	std::size_t in_size = 0, out_size = 0; // element sizes
	GpuConvertPath path = GpuConvertPath::zero_copy;
	// Queues the conversion of n elements from src to dst (device-accessible) on a stream.
	cudaError_t (*launch)(const void *transform, const void *src, void *dst, std::size_t n,
			      cudaStream_t stream) = nullptr;
	std::shared_ptr<const void> transform; // the Transform object launch() is given
	explicit operator bool() const noexcept { return launch != nullptr; }
};

// One chunk that has landed in GPU memory (board -> GPU), as CudaOptions::on_chunk sees it.
struct GpuChunk {
	void *gpu;                  // where it landed (after the conversion, if any)
	std::size_t gpu_bytes;      // bytes there
	const void *host;           // the board's DMA buffer it came from (device-accessible)
	std::size_t host_bytes;     // bytes there
	std::size_t buffer;         // which DMA buffer
	std::uint64_t sequence;     // 0, 1, 2, ... over the transfer's life
};

struct CudaOptions {
	unsigned int streams = 2; // copies of consecutive buffers alternate between these streams
	int device = -1;          // GPU to use; -1: the calling thread's current device
	bool blocking_sync = false; // wait() sleeps (cudaEventBlockingSync) instead of spinning
	unsigned int register_flags = cudaHostRegisterDefault;
	// Converts the data on its way (int16 -> float, ...); see GpuConversion.
	GpuConversion conversion;
	// Board -> GPU: called on the driving thread for each chunk after its copy (and conversion)
	// has been queued on `stream`, before the DMA buffer is handed back to the board. Work the
	// hook queues on that stream runs once the chunk is in GPU memory, and the buffer returns to
	// the board only after it (so a kernel may also read the host buffer). Throwing fails the
	// transfer like a CUDA error.
	std::function<void(const GpuChunk &, cudaStream_t stream)> on_chunk;
};

// Policies: models Transfer (bufmgr/concepts.hpp) with adopt(). The "other side" is GPU memory:
//   Direction::h2c  drain a host buffer into GPU memory at the target's cursor (host -> GPU)
//   Direction::c2h  fill a host buffer from GPU memory at the source's cursor (GPU -> host)
// set_target()/set_source() name the GPU region of each direction; consecutive transfers walk
// through it. granule() is 1.
// Requirements: buffers are host, user or pinned memory (kernel memory: Error(EINVAL)).
// Ordering: the copies run on streams created without cudaStreamNonBlocking, so they wait for
// work queued earlier on the legacy default stream; work on other streams (or with per-thread
// default streams) must be synchronized by the caller before a transfer reads its results.
// Errors: CudaError (cudaHostRegister, cudaMemcpyAsync, an event's error); Error(ENOSPC) when a
// transfer would run past the GPU region. abort() cannot stop a GPU copy; the copy finishes
// (microseconds to milliseconds) and its wait() then throws ECANCELED.
// Thread safety: as the concept. Each call sets the device first, so any thread may drive it.
class CudaTransfer {
public:
	static constexpr bool can_c2h = true;
	static constexpr bool can_h2c = true;

	explicit CudaTransfer(CudaOptions o = CudaOptions()) : s_(std::make_unique<State>())
	{
		if (o.streams == 0)
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer: needs at least one stream");
		if (o.conversion && (o.conversion.in_size == 0 || o.conversion.out_size == 0 || !o.conversion.transform))
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer: incomplete GpuConversion (use make_gpu_conversion)");
		s_->opt = std::move(o);
	}
	CudaTransfer(CudaTransfer &&) noexcept = default;
	CudaTransfer &operator=(CudaTransfer &&) noexcept = default;
	~CudaTransfer()
	{
		if (s_) {
			reset(Direction::c2h);
			reset(Direction::h2c);
		}
	}

	// 1, or with a conversion its element sizes' lcm (whole elements on either side).
	std::size_t granule() const noexcept
	{
		const GpuConversion &c = s_->opt.conversion;
		return c ? std::lcm(c.in_size, c.out_size) : 1;
	}

	// The GPU memory that host_bytes in a host buffer become (direction d), with the conversion.
	std::size_t gpu_bytes(Direction d, std::size_t host_bytes) const noexcept
	{
		const GpuConversion &c = s_->opt.conversion;
		if (!c)
			return host_bytes;
		return d == Direction::h2c ? host_bytes / c.in_size * c.out_size : host_bytes / c.out_size * c.in_size;
	}

	// The GPU memory that h2c transfers write (set_target) and c2h transfers read
	// (set_source), from its start. Pre: nothing in flight in that direction.
	void set_target(void *gpu_dst, std::size_t size) { set_region(1, gpu_dst, size); }
	void set_source(const void *gpu_src, std::size_t size) { set_region(0, const_cast<void *>(gpu_src), size); }
	// Bytes into the region the next transfer of d starts at.
	std::size_t cursor(Direction d) const noexcept { return s_->dir[idx(d)].cursor; }

	// Pre: nothing in flight. count page-aligned host buffers, registered with CUDA.
	void allocate(std::size_t count, std::size_t size)
	{
		if (count == 0 || size == 0)
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer: need >= 1 buffer of > 0 bytes");
		std::vector<HostMemory> mem;
		std::vector<BufferView> v;
		for (std::size_t i = 0; i < count; ++i) {
			mem.emplace_back(size);
			v.push_back(BufferView{mem.back().data(), size, MemoryKind::host});
		}
		adopt(v.data(), v.size());
		for (auto &b : s_->bufs)
			b.kind = MemoryKind::pinned;
		s_->owned = std::move(mem);
	}

	// Pre: nothing in flight. Registers buffers owned elsewhere (e.g. the board's user-memory
	// DMA buffers) with cudaHostRegister; they are unregistered when replaced or destroyed.
	// Throws Error(EINVAL) for kernel memory (before any CUDA call), CudaError when CUDA
	// refuses to register a buffer.
	void adopt(const BufferView *views, std::size_t count)
	{
		if (count == 0)
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer::adopt: no buffers");
		for (std::size_t i = 0; i < count; ++i) {
			if (views[i].kind == MemoryKind::kernel)
				throw Error(EINVAL,
					"bufmgr::cuda: DMA buffer " + std::to_string(i) + " is pcidriver kernel memory, "
					"which CUDA cannot register (its dma_mmap_coherent mapping cannot be pinned); "
					"the GPU stage needs user-memory DMA buffers: "
					"MpraceTransfer(board, engine, bufmgr::MemoryKind::user)");
			if (!views[i].data || views[i].size != views[0].size)
				throw Error(EINVAL, "bufmgr::cuda::CudaTransfer::adopt: buffers must be non-null "
						    "and equally sized");
		}
		release_buffers();
		use_device();
		ensure_streams();
		std::vector<Buf> bufs;
		for (std::size_t i = 0; i < count; ++i) {
			Buf b;
			b.view = views[i];
			b.kind = views[i].kind;
			const cudaError_t e = cudaHostRegister(views[i].data, views[i].size, s_->opt.register_flags);
			if (e != cudaSuccess) {
				for (Buf &r : bufs)
					cudaHostUnregister(r.view.data);
				check(e, "bufmgr::cuda: cudaHostRegister of DMA buffer " + std::to_string(i) + " (" +
						 std::to_string(views[i].size) + " bytes of " + to_string(views[i].kind) +
						 ") failed; the GPU stage does not fall back to pageable copies");
			}
			b.registered = true;
			bufs.push_back(b);
			// the address kernels use for it (the same one where addressing is unified)
			const cudaError_t g = cudaHostGetDevicePointer(&bufs.back().dev, views[i].data, 0);
			if (g != cudaSuccess) {
				for (Buf &r : bufs)
					cudaHostUnregister(r.view.data);
				check(g, "bufmgr::cuda: cudaHostGetDevicePointer of DMA buffer " + std::to_string(i));
			}
		}
		try {
			for (Buf &b : bufs)
				for (auto &ev : b.event) {
					cudaEvent_t e;
					check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming |
						(s_->opt.blocking_sync ? cudaEventBlockingSync : 0)),
					      "bufmgr::cuda: cudaEventCreate");
					ev = e;
				}
		} catch (...) {
			for (Buf &b : bufs)
				destroy(b);
			throw;
		}
		std::vector<DeviceBuffer> staging;
		if (s_->opt.conversion && s_->opt.conversion.path == GpuConvertPath::copy_then_kernel) {
			try {
				for (std::size_t i = 0; i < count; ++i)
					staging.emplace_back(views[0].size);
			} catch (...) {
				for (Buf &b : bufs)
					destroy(b);
				throw;
			}
		}
		s_->bufs = std::move(bufs);
		s_->staging = std::move(staging);
		for (auto &d : s_->dir)
			d.pending.assign(count, Pending{});
	}

	std::size_t buffer_count() const noexcept { return s_->bufs.size(); }
	std::size_t buffer_size() const noexcept { return s_->bufs.empty() ? 0 : s_->bufs[0].view.size; }
	BufferView view(std::size_t i) const
	{
		const Buf &b = s_->bufs.at(i);
		return BufferView{b.view.data, b.view.size, b.kind};
	}

	// Driving thread. Queues the copy of buffer i (n bytes) on stream i mod streams.
	void start(Direction d, std::size_t i, std::size_t n)
	{
		Dir &dr = s_->dir[idx(d)];
		Buf &b = s_->bufs.at(i);
		Pending &p = dr.pending.at(i);
		if (p.gen)
			throw Error(EBUSY, "bufmgr::cuda::CudaTransfer::start: buffer already queued");
		if (n == 0 || n > b.view.size || n % granule() != 0)
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer::start: bad length");
		const std::size_t gn = gpu_bytes(d, n);
		if (!dr.gpu || dr.cursor + gn > dr.size)
			throw Error(ENOSPC, std::string("bufmgr::cuda::CudaTransfer: the GPU ") +
					    (d == Direction::h2c ? "target" : "source") +
					    " region is too small or not set (set_target/set_source)");
		use_device();
		const int ev = idx(d);
		cudaStream_t st = s_->streams[i % s_->streams.size()];
		std::byte *gpu = static_cast<std::byte *>(dr.gpu) + dr.cursor;
		if (s_->opt.conversion)
			queue_conversion(d, i, n, gpu, st);
		else if (d == Direction::h2c)
			check(cudaMemcpyAsync(gpu, b.view.data, n, cudaMemcpyHostToDevice, st),
			      "bufmgr::cuda: cudaMemcpyAsync host -> GPU");
		else
			check(cudaMemcpyAsync(b.view.data, gpu, n, cudaMemcpyDeviceToHost, st),
			      "bufmgr::cuda: cudaMemcpyAsync GPU -> host");
		if (d == Direction::h2c && s_->opt.on_chunk)
			s_->opt.on_chunk(GpuChunk{gpu, gn, b.dev, n, i, dr.chunks}, st);
		++dr.chunks;
		check(cudaEventRecord(b.event[ev], st), "bufmgr::cuda: cudaEventRecord");
		dr.cursor += gn;
		p.bytes = n;
		p.gen = dr.started.fetch_add(1, std::memory_order_seq_cst) + 1;
	}

	// Driving thread. Blocks until buffer i's copy has completed (the buffer may be reused).
	std::size_t wait(Direction d, std::size_t i)
	{
		Dir &dr = s_->dir[idx(d)];
		Pending &p = dr.pending.at(i);
		if (!p.gen)
			throw Error(EINVAL, "bufmgr::cuda::CudaTransfer::wait: buffer was not started");
		const Pending done = std::exchange(p, Pending{});
		use_device();
		check(cudaEventSynchronize(s_->bufs[i].event[idx(d)]), "bufmgr::cuda: copy failed");
		if (done.gen <= dr.aborted_upto.load(std::memory_order_seq_cst))
			throw Error(ECANCELED, "bufmgr::cuda: transfer aborted");
		return done.bytes;
	}

	// Any thread. Copies started so far complete anyway; their wait() throws ECANCELED.
	void abort(Direction d) noexcept
	{
		Dir &dr = s_->dir[idx(d)];
		dr.aborted_upto.store(dr.started.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
	}

	// Driving thread. Waits until the GPU no longer touches the buffers; forgets the copies.
	void reset(Direction d) noexcept
	{
		Dir &dr = s_->dir[idx(d)];
		bool any = false;
		for (Pending &p : dr.pending)
			any |= std::exchange(p, Pending{}).gen != 0;
		if (any) {
			use_device_noexcept();
			for (cudaStream_t st : s_->streams)
				cudaStreamSynchronize(st);
			(void)cudaGetLastError();
		}
	}

private:
	// The conversion of buffer i's n host bytes to or from gpu, queued on st.
	void queue_conversion(Direction d, std::size_t i, std::size_t n, std::byte *gpu, cudaStream_t st)
	{
		const GpuConversion &c = s_->opt.conversion;
		const Buf &b = s_->bufs[i];
		const void *x = c.transform.get();
		if (c.path == GpuConvertPath::zero_copy) {
			if (d == Direction::h2c)
				check(c.launch(x, b.dev, gpu, n / c.in_size, st), "bufmgr::cuda: conversion kernel (host -> GPU)");
			else
				check(c.launch(x, gpu, b.dev, n / c.out_size, st), "bufmgr::cuda: conversion kernel (GPU -> host)");
			return;
		}
		void *stage = s_->staging.at(i).data();
		if (d == Direction::h2c) {
			check(cudaMemcpyAsync(stage, b.view.data, n, cudaMemcpyHostToDevice, st),
			      "bufmgr::cuda: cudaMemcpyAsync host -> GPU staging");
			check(c.launch(x, stage, gpu, n / c.in_size, st), "bufmgr::cuda: conversion kernel");
		} else {
			check(c.launch(x, gpu, stage, n / c.out_size, st), "bufmgr::cuda: conversion kernel");
			check(cudaMemcpyAsync(b.view.data, stage, n, cudaMemcpyDeviceToHost, st),
			      "bufmgr::cuda: cudaMemcpyAsync GPU staging -> host");
		}
	}

	struct Buf {
		BufferView view;
		void *dev = nullptr; // the buffer's address in kernels
		MemoryKind kind = MemoryKind::host;
		bool registered = false;
		cudaEvent_t event[2] = {nullptr, nullptr}; // per direction
	};
	struct Pending {
		std::uint64_t gen = 0; // start number; 0: not started
		std::size_t bytes = 0;
	};
	struct Dir {
		void *gpu = nullptr;
		std::size_t size = 0, cursor = 0;
		std::vector<Pending> pending;
		std::uint64_t chunks = 0; // started since construction (GpuChunk::sequence)
		std::atomic<std::uint64_t> started{0}, aborted_upto{0};
	};
	struct State {
		CudaOptions opt;
		int device = -1;
		std::vector<cudaStream_t> streams;
		std::vector<Buf> bufs;
		std::vector<HostMemory> owned; // allocate()'s memory, unregistered before it is freed
		std::vector<DeviceBuffer> staging; // per buffer, for GpuConvertPath::copy_then_kernel
		Dir dir[2];
		~State()
		{
			for (cudaStream_t s : streams)
				cudaStreamSynchronize(s); // nothing may still use staging or the buffers
			for (Buf &b : bufs)
				destroy(b);
			for (cudaStream_t s : streams)
				cudaStreamDestroy(s);
		}
	};

	static int idx(Direction d) noexcept { return d == Direction::c2h ? 0 : 1; }

	static void destroy(Buf &b) noexcept
	{
		for (auto &e : b.event)
			if (e)
				cudaEventDestroy(std::exchange(e, nullptr));
		if (b.registered)
			cudaHostUnregister(b.view.data);
		b.registered = false;
	}

	void set_region(int k, void *p, std::size_t size)
	{
		for (const Pending &q : s_->dir[k].pending)
			if (q.gen)
				throw Error(EBUSY, "bufmgr::cuda::CudaTransfer: GPU region changed while copies are in flight");
		s_->dir[k].gpu = p;
		s_->dir[k].size = size;
		s_->dir[k].cursor = 0;
	}

	void use_device()
	{
		if (s_->device < 0) {
			if (s_->opt.device >= 0)
				s_->device = s_->opt.device;
			else
				check(cudaGetDevice(&s_->device), "bufmgr::cuda: cudaGetDevice");
		}
		check(cudaSetDevice(s_->device), "bufmgr::cuda: cudaSetDevice");
	}
	void use_device_noexcept() noexcept
	{
		if (s_->device >= 0)
			cudaSetDevice(s_->device);
	}

	void ensure_streams()
	{
		while (s_->streams.size() < s_->opt.streams) {
			cudaStream_t st;
			// Blocking streams: the copies wait for work queued before them on the legacy
			// default stream (e.g. the kernel that produced the data for GpuToFpga).
			check(cudaStreamCreateWithFlags(&st, cudaStreamDefault), "bufmgr::cuda: cudaStreamCreate");
			s_->streams.push_back(st);
		}
	}

	void release_buffers() noexcept
	{
		reset(Direction::c2h);
		reset(Direction::h2c);
		for (Buf &b : s_->bufs)
			destroy(b);
		s_->bufs.clear();
		s_->owned.clear();
		s_->staging.clear();
	}

	std::unique_ptr<State> s_;
};

namespace detail {
template <class T, class = void>
struct has_memory_kind : std::false_type {};
template <class T>
struct has_memory_kind<T, std::void_t<decltype(std::declval<const T &>().memory_kind())>> : std::true_type {};

// Refuse a board transfer that would allocate kernel memory before it allocates anything.
template <class Board>
const Board &refuse_kernel_memory(const Board &b)
{
	if constexpr (has_memory_kind<Board>::value)
		if (b.memory_kind() == MemoryKind::kernel)
			throw Error(EINVAL,
				"bufmgr::cuda: the board transfer uses pcidriver kernel memory, which CUDA cannot "
				"register (its dma_mmap_coherent mapping cannot be pinned); the GPU stage needs "
				"user-memory DMA buffers: MpraceTransfer(board, engine, bufmgr::MemoryKind::user)");
	return b;
}
} // namespace detail

// FPGA -> host -> GPU. Board: a Transfer that fills buffers (MpraceTransfer with user memory;
// MemcpyTransfer to play the board). K buffers of buffer_size bytes, filled by the board and
// read by the GPU's copy engine while the board fills the next.
// Thread safety: as Relay (one thread calls transfer(); abort() from any thread).
template <class Board>
class FpgaToGpu {
public:
	FpgaToGpu(Board board, std::size_t count, std::size_t buffer_size, CudaOptions opt = CudaOptions())
		: relay_((detail::refuse_kernel_memory(board), std::move(board)), CudaTransfer(opt), count, buffer_size) {}

	// Moves `bytes` from the board into GPU memory at gpu_dst (a device pointer, room for
	// gpu().gpu_bytes(Direction::h2c, bytes): bytes, or what the conversion makes of them).
	// Post: the data is in GPU memory (every copy's event completed); returns the board bytes
	// moved (fewer only when the board ended a packet). Throws as Relay::run().
	std::size_t transfer(void *gpu_dst, std::size_t bytes)
	{
		relay_.sink().set_target(gpu_dst, relay_.sink().gpu_bytes(Direction::h2c, bytes));
		return relay_.run(bytes);
	}

	void abort() noexcept { relay_.abort(); }
	Board &board() noexcept { return relay_.source(); }
	CudaTransfer &gpu() noexcept { return relay_.sink(); }
	Relay<Board, CudaTransfer> &relay() noexcept { return relay_; }

private:
	Relay<Board, CudaTransfer> relay_;
};

// GPU -> host -> FPGA: the mirror image; the GPU fills the board's buffers, the board drains
// them.
template <class Board>
class GpuToFpga {
public:
	GpuToFpga(Board board, std::size_t count, std::size_t buffer_size, CudaOptions opt = CudaOptions())
		: relay_(CudaTransfer(opt), (detail::refuse_kernel_memory(board), std::move(board)), count, buffer_size) {}

	// Moves `bytes` to the board from GPU memory at gpu_src (gpu().gpu_bytes(Direction::c2h,
	// bytes) of it: bytes, or what the conversion reads for them). Post: the board has received
	// every byte. Throws as Relay::run().
	std::size_t transfer(const void *gpu_src, std::size_t bytes)
	{
		relay_.source().set_source(gpu_src, relay_.source().gpu_bytes(Direction::c2h, bytes));
		return relay_.run(bytes);
	}

	void abort() noexcept { relay_.abort(); }
	Board &board() noexcept { return relay_.sink(); }
	CudaTransfer &gpu() noexcept { return relay_.source(); }
	Relay<CudaTransfer, Board> &relay() noexcept { return relay_; }

private:
	Relay<CudaTransfer, Board> relay_;
};

} // namespace bufmgr::cuda

#endif // BUFMGR_CUDA_HPP
