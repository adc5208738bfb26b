// SPDX-License-Identifier: LGPL-2.1-or-later
//
// mprace._core: the compiled part of the Python package, over libmprace's C++ API (Board,
// DMABuffer, DMAEngine, Transfer). Python-facing names, argument checks and docs live in
// mprace/__init__.py; this file does what Python cannot: the buffer protocol over DMA memory,
// waits with the GIL released that Ctrl-C can interrupt, and the lifetime rules below.
//
// Lifetime. A Board's state (BoardHandle) is shared by its Buffers and Transfers. close()
// aborts what runs, destroys the engine and unmaps every buffer from the device; user memory
// stays this process's memory, so NumPy arrays over it stay valid. Kernel memory belongs to
// the device handle: where a Buffer object of it is still alive at close(), the handle stays
// open (the device unused) until the last such Buffer goes, so that no array ever points at
// unmapped memory; the same holds for a stream's buffers while arrays view its chunks. Every
// call on a closed board, or on a buffer of one, raises ValueError.
//
// CUDA (compiled where CMake finds the toolkit: MPRACE_PY_CUDA). Buffer.cuda() registers user
// memory with CUDA (mapped) once and hands out DLPack views of it that keep the Buffer object
// alive; the registration ends with that object, so no GPU view outlives it. A GpuStage is
// libbufmgr's FPGA -> host -> GPU relay, closed by Board.close() before the engine goes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <utility>
#include <vector>

#include "bufmgr/mprace_transfer.hpp"
#include "bufmgr/pooled_buffer.hpp"
#include "mprace/mprace.hpp"
#include "vboard/vboard.h"

#ifdef MPRACE_PY_UCX
#include "bufmgr/net.hpp"
#endif

#ifdef MPRACE_PY_CUDA
#include <nanobind/ndarray.h>

#include "bufmgr/cuda.hpp"
#endif

#if defined(MPRACE_PY_UCX) && defined(MPRACE_PY_CUDA)
#include "bufmgr/net_cuda.hpp"
#endif

namespace nb = nanobind;
using namespace std::chrono_literals;

namespace {

PyObject *g_no_board, *g_timeout, *g_engine_error, *g_cuda_error; // exception classes (module attributes)

struct BufferCore;
struct StreamCore;
struct RelayUser;

struct BoardHandle {
	std::unique_ptr<mprace::Board> board;
	std::unique_ptr<mprace::DMAEngine> engine;
	std::vector<BufferCore *> buffers; // alive, in creation order
	std::vector<StreamCore *> streams; // alive
	std::vector<RelayUser *> relays; // GPU stages and network senders, alive
	bool closed = false;

	// After close(): the device handle goes once no memory of it can still be viewed.
	void release_when_unused();
};

[[noreturn]] void closed_error()
{
	throw nb::value_error("the board is closed");
}

// Raises cls(errno, message), as OSError subclasses expect.
void set_os_error(PyObject *cls, int err, const std::string &msg)
{
	nb::object e = nb::steal(PyObject_CallFunction(cls, "is", err, msg.c_str()));
	if (!e.is_valid())
		return;
	PyErr_SetObject(cls, e.ptr());
}

void translate(const std::exception_ptr &p, void *)
{
	try {
		std::rethrow_exception(p);
#ifdef MPRACE_PY_CUDA
	} catch (const bufmgr::cuda::CudaError &e) {
		nb::object x = nb::steal(PyObject_CallFunction(g_cuda_error, "is", e.code().value(), e.what()));
		if (!x.is_valid())
			return;
		x.attr("cuda_error") = cudaGetErrorName(e.cuda_error());
		PyErr_SetObject(g_cuda_error, x.ptr());
#endif
	} catch (const mprace::DMAError &e) {
		int err = e.code().value();
		PyObject *cls = err == ETIMEDOUT && e.engineError() == MP_ERR_NONE ? g_timeout : g_engine_error;
		nb::object x = nb::steal(PyObject_CallFunction(cls, "is", err, e.what()));
		if (!x.is_valid())
			return;
		x.attr("engine_error") = e.engineError();
		x.attr("engine_error_name") = e.engineErrorName();
		x.attr("bytes") = e.bytes();
		PyErr_SetObject(cls, x.ptr());
	} catch (const mprace::Error &e) {
		int err = e.code().value();
		set_os_error(err == ENODEV ? g_no_board : err == ETIMEDOUT ? g_timeout : PyExc_OSError, err, e.what());
	}
}

nb::module_ numpy()
{
	return nb::module_::import_("numpy");
}

nb::tuple shape_tuple(const std::vector<Py_ssize_t> &shape)
{
	nb::list l;
	for (Py_ssize_t s : shape)
		l.append(s);
	return nb::tuple(l);
}

// NumPy's __array_interface__ (version 3) of writable memory.
nb::dict array_interface(nb::tuple shape, const std::string &typestr, const void *data)
{
	nb::dict d;
	d["shape"] = shape;
	d["typestr"] = typestr;
	d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(data), false);
	d["version"] = 3;
	return d;
}

std::string hexstr(const void *p)
{
	char b[32];
	std::snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
	return b;
}

// ------------------------------------------------------------------------------ buffers

void cuda_unregister(void *mem) noexcept
{
#ifdef MPRACE_PY_CUDA
	if (cudaHostUnregister(mem) != cudaSuccess)
		(void)cudaGetLastError();
#else
	(void)mem;
#endif
}

struct BufferCore {
	std::shared_ptr<BoardHandle> h;
	std::unique_ptr<mprace::DMABuffer> dma;
	void *mem = nullptr;      // the CPU's view
	std::size_t size = 0;     // bytes
	bool kernel = false;      // kernel memory (else user memory)
	bool own_mapping = false; // user memory this object mapped (munmap at the end)
	nb::object wrapped;       // a NumPy array wrapped as user memory, kept alive
	long exports = 0;         // buffer-protocol views alive (free() of kernel memory waits for none)
	bool freed = false;
	bool cuda_registered = false; // registered with CUDA by cuda(): until this object goes
	// the array view it offers (buffer protocol, __array_interface__)
	std::string format, typestr;
	Py_ssize_t itemsize = 1;
	std::vector<Py_ssize_t> shape, strides;

	BufferCore(std::shared_ptr<BoardHandle> handle) : h(std::move(handle)) { h->buffers.push_back(this); }
	BufferCore(const BufferCore &) = delete;
	~BufferCore()
	{
		if (cuda_registered)
			cuda_unregister(mem); // no GPU view is left: each keeps this object alive
		dma.reset();
		auto &v = h->buffers;
		v.erase(std::remove(v.begin(), v.end(), this), v.end());
		h->release_when_unused();
		if (own_mapping && mem)
			::munmap(mem, size);
	}
	mprace::DMABuffer &buffer()
	{
		if (freed)
			throw nb::value_error("the buffer was freed");
		if (h->closed || !dma)
			closed_error();
		return *dma;
	}
	// Unmaps it from the device now (user memory: unpinned; the memory stays this process's
	// for arrays over it). Kernel memory is unmapped from the process too, so no array may view
	// it: BufferError while any does, as bytearray does on a resize.
	void free()
	{
		if (freed)
			return;
		if (kernel && exports > 0)
			throw nb::buffer_error("arrays still view this buffer's kernel memory: delete them first "
					       "(or let close() keep it until they go)");
		dma.reset();
		freed = true;
		if (kernel)
			mem = nullptr;
		if (!cuda_registered) // else GPU views may still read the wrapped array's memory
			wrapped = nb::object();
	}
	void set_view(const std::string &fmt, const std::string &ts, Py_ssize_t isz, const std::vector<Py_ssize_t> &shp)
	{
		format = fmt;
		typestr = ts;
		itemsize = isz;
		shape = shp;
		strides.assign(shape.size(), isz);
		for (std::size_t k = shape.size(); k-- > 1;)
			strides[k - 1] = strides[k] * shape[k];
	}
};

int buffer_get(PyObject *self, Py_buffer *view, int flags)
{
	BufferCore *b = nb::inst_ptr<BufferCore>(self);
	if (!b->mem) {
		PyErr_SetString(PyExc_BufferError, "the buffer was freed");
		return -1;
	}
	std::memset(view, 0, sizeof(*view));
	view->buf = b->mem;
	view->len = static_cast<Py_ssize_t>(b->size);
	view->itemsize = b->itemsize;
	view->readonly = 0;
	view->ndim = static_cast<int>(b->shape.size());
	view->format = (flags & PyBUF_FORMAT) ? const_cast<char *>(b->format.c_str()) : nullptr;
	view->shape = (flags & PyBUF_ND) ? b->shape.data() : nullptr;
	view->strides = (flags & PyBUF_STRIDES) ? b->strides.data() : nullptr;
	view->obj = self;
	Py_INCREF(self);
	++b->exports;
	return 0;
}

void buffer_release(PyObject *self, Py_buffer *)
{
	--nb::inst_ptr<BufferCore>(self)->exports;
}

PyType_Slot buffer_slots[] = {
	{Py_bf_getbuffer, reinterpret_cast<void *>(buffer_get)},
	{Py_bf_releasebuffer, reinterpret_cast<void *>(buffer_release)},
	{0, nullptr},
};

// ------------------------------------------------------------------------------ waits

// Waits for t with the GIL released, in slices, so that Ctrl-C interrupts it: the transfer
// is aborted and KeyboardInterrupt raised. timeout_s < 0: no limit. Returns the bytes moved.
std::uint64_t wait_transfer(mprace::Transfer &t, double timeout_s)
{
	auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	for (;;) {
		bool ok;
		{
			nb::gil_scoped_release unlocked;
			ok = t.wait(50ms); // throws DMAError when it failed
		}
		if (ok)
			return t.result().bytes;
		if (PyErr_CheckSignals() != 0) {
			t.abort();
			throw nb::python_error();
		}
		if (timeout_s >= 0 && std::chrono::steady_clock::now() >= until) {
			t.abort();
			set_os_error(g_timeout, ETIMEDOUT, "the transfer did not finish in " + std::to_string(timeout_s) + " s (aborted)");
			throw nb::python_error();
		}
	}
}

struct TransferCore {
	std::shared_ptr<BoardHandle> h;
	mprace::Transfer t;
	nb::object keep; // the buffer, alive while the transfer may use it
	bool c2h;

	void check() const
	{
		if (h->closed)
			closed_error();
	}
	std::uint64_t wait(double timeout_s)
	{
		check();
		std::uint64_t n = wait_transfer(t, timeout_s);
		if (c2h)
			nb::cast<BufferCore &>(keep).buffer().syncForCpu();
		return n;
	}
	bool done()
	{
		check();
		return t.done();
	}
	bool abort()
	{
		check();
		return t.abort();
	}
	nb::dict result()
	{
		check();
		mprace::TransferResult r = t.result();
		nb::dict d;
		d["done"] = r.done;
		d["error"] = r.error;
		d["engine_error"] = r.engineError;
		d["engine_error_name"] = mp_engine_error_name(r.engineError);
		d["bytes"] = r.bytes;
		d["end_of_packet"] = r.endOfPacket;
		return d;
	}
};

// ------------------------------------------------------------------------------ streams

// A continuous C2H acquisition through libbufmgr's PooledBuffer: K DMA buffers filled in
// turn by its engine thread, lent to Python as Chunks (zero-copy views) and refilled once
// released. Calls are serialised by the GIL, except the waits in next(), which hold `mu`
// instead (released before the GIL is taken back, so that release() cannot deadlock).
using Pool = bufmgr::PooledBuffer<bufmgr::MpraceTransfer>;

struct ChunkCore;

struct StreamCore {
	std::shared_ptr<BoardHandle> h;
	std::unique_ptr<Pool> pool;
	std::vector<ChunkCore *> lent;
	std::mutex mu;
	std::string format, typestr;
	Py_ssize_t itemsize = 1;
	bool stopped = false;
	long exports = 0;      // buffer-protocol views of chunks: the pool's memory stays while any
	Pool::Filled pending;  // taken by next() under mu, not yet a Chunk

	StreamCore(std::shared_ptr<BoardHandle> handle) : h(std::move(handle)) { h->streams.push_back(this); }
	StreamCore(const StreamCore &) = delete;
	~StreamCore()
	{
		stop();
		pool.reset();
		auto &v = h->streams;
		v.erase(std::remove(v.begin(), v.end(), this), v.end());
		h->release_when_unused();
	}
	void stop();
	nb::object next(nb::handle self);
	nb::dict stats() const
	{
		bufmgr::StreamStats st = pool ? pool->stats() : bufmgr::StreamStats();
		nb::dict d;
		d["buffers"] = st.buffers;
		d["bytes"] = st.bytes;
		d["overruns"] = st.overruns;
		d["dropped_bytes"] = st.dropped_bytes;
		d["backpressure"] = st.backpressure;
		return d;
	}
};

struct ChunkCore {
	nb::object stream; // keeps the StreamCore alive while lent
	Pool::Filled f;
	std::vector<Py_ssize_t> shape{0}, strides{1};

	StreamCore &s() { return nb::cast<StreamCore &>(stream); }
	const Pool::Filled &live() const
	{
		if (!f)
			throw nb::value_error("the chunk was released (its buffer went back to the board)");
		return f;
	}
	void release()
	{
		if (!f)
			return;
		StreamCore &st = s();
		std::lock_guard<std::mutex> l(st.mu);
		f.release();
		st.lent.erase(std::remove(st.lent.begin(), st.lent.end(), this), st.lent.end());
	}
	~ChunkCore()
	{
		if (f)
			release();
	}
};

// May run on another thread than a consumer waiting in next(): the stop request ends that
// wait, `mu` then keeps the two apart, and what the consumer took meanwhile (pending) is given
// back with the lent chunks, before the pool stops (it must not outlive them: ~PooledBuffer).
void StreamCore::stop()
{
	if (stopped)
		return;
	stopped = true;
	if (!pool)
		return;
	{
		nb::gil_scoped_release unlocked;
		pool->request_stop();
		std::lock_guard<std::mutex> l(mu);
		pending.release();
		for (ChunkCore *c : lent)
			c->f.release();
		lent.clear();
		pool->stop_stream();
	}
	if (exports == 0) // else arrays still view its buffers: freed with the last of them
		pool.reset();
}

void BoardHandle::release_when_unused()
{
	if (!closed || !board)
		return;
	if (std::any_of(buffers.begin(), buffers.end(), [](BufferCore *b) { return b->kernel && b->dma; }))
		return;
	if (std::any_of(streams.begin(), streams.end(), [](StreamCore *s) { return s->pool != nullptr; }))
		return;
	board.reset();
}

void chunk_release_buffer(PyObject *self, Py_buffer *)
{
	StreamCore &s = nb::inst_ptr<ChunkCore>(self)->s();
	if (--s.exports == 0 && s.stopped && s.pool) {
		s.pool.reset();
		s.h->release_when_unused();
	}
}

int chunk_get(PyObject *self, Py_buffer *view, int flags)
{
	ChunkCore *c = nb::inst_ptr<ChunkCore>(self);
	if (!c->f) {
		PyErr_SetString(PyExc_BufferError, "the chunk was released (its buffer went back to the board)");
		return -1;
	}
	StreamCore &s = c->s();
	std::memset(view, 0, sizeof(*view));
	view->buf = const_cast<std::byte *>(c->f.data());
	view->len = static_cast<Py_ssize_t>(c->f.bytes());
	view->itemsize = s.itemsize;
	view->readonly = 0;
	view->ndim = 1;
	c->shape[0] = view->len / s.itemsize;
	c->strides[0] = s.itemsize;
	view->format = (flags & PyBUF_FORMAT) ? const_cast<char *>(s.format.c_str()) : nullptr;
	view->shape = (flags & PyBUF_ND) ? c->shape.data() : nullptr;
	view->strides = (flags & PyBUF_STRIDES) ? c->strides.data() : nullptr;
	view->obj = self;
	Py_INCREF(self);
	++s.exports;
	return 0;
}

PyType_Slot chunk_slots[] = {
	{Py_bf_getbuffer, reinterpret_cast<void *>(chunk_get)},
	{Py_bf_releasebuffer, reinterpret_cast<void *>(chunk_release_buffer)},
	{0, nullptr},
};

// The next filled buffer as a Chunk, or None at the end of the stream. Waits in slices with
// the GIL released; Ctrl-C stops the stream and raises KeyboardInterrupt.
nb::object StreamCore::next(nb::handle self)
{
	if (h->closed)
		closed_error();
	if (stopped || !pool)
		return nb::none();
	for (;;) {
		bool timed_out = false;
		{
			nb::gil_scoped_release unlocked;
			std::lock_guard<std::mutex> l(mu);
			if (!stopped) // (else stopped by another thread while this one waited for mu)
				pending = pool->next_for(50ms, &timed_out); // throws the stream's error
		}
		if (stopped) // stop() gave `pending` back already
			return nb::none();
		if (pending) {
			auto *c = new ChunkCore{nb::borrow(self), std::move(pending)};
			lent.push_back(c);
			return nb::cast(c, nb::rv_policy::take_ownership);
		}
		if (!timed_out)
			return nb::none(); // the end (max_buffers, or stopped)
		if (PyErr_CheckSignals() != 0) {
			stop();
			throw nb::python_error();
		}
	}
}

// ------------------------------------------------------------------------------ CUDA

#ifdef MPRACE_PY_CUDA
[[noreturn]] void no_gpu(const std::string &why)
{
	throw bufmgr::cuda::CudaError(cudaErrorNoDevice, why);
}

// A GPU to use: `device` (< 0: the current one), checked against the GPUs there are.
int checked_device(int device)
{
	std::string why = bufmgr::cuda::unavailable_reason();
	if (!why.empty())
		no_gpu(why);
	if (device < 0)
		bufmgr::cuda::check(cudaGetDevice(&device), "cudaGetDevice");
	int n = bufmgr::cuda::device_count();
	if (device >= n)
		throw nb::value_error(("no CUDA device " + std::to_string(device) + " (this machine has " +
				       std::to_string(n) + ")").c_str());
	return device;
}

// Makes `device` current on this thread for its life and then restores the caller's device, so
// that the package leaves CuPy's or PyTorch's current device as it was.
class DeviceScope {
public:
	explicit DeviceScope(int device)
	{
		bufmgr::cuda::check(cudaGetDevice(&saved_), "cudaGetDevice");
		bufmgr::cuda::check(cudaSetDevice(device), "cudaSetDevice");
	}
	DeviceScope(const DeviceScope &) = delete;
	~DeviceScope()
	{
		if (cudaSetDevice(saved_) != cudaSuccess)
			(void)cudaGetLastError();
	}

private:
	int saved_ = 0;
};

// DLPack's type of a NumPy typestr ("<f4", "|u1", ...; Board.alloc admits ints and floats).
nb::dlpack::dtype dlpack_dtype(const std::string &typestr, Py_ssize_t itemsize)
{
	nb::dlpack::dtype t;
	t.code = static_cast<std::uint8_t>(typestr[1] == 'f' ? nb::dlpack::dtype_code::Float
					   : typestr[1] == 'i' ? nb::dlpack::dtype_code::Int
							       : nb::dlpack::dtype_code::UInt);
	t.bits = static_cast<std::uint8_t>(itemsize * 8);
	t.lanes = 1;
	return t;
}
#endif

// Buffer.cuda(): user memory registered with CUDA as mapped host memory (once), viewed as an
// array on `device` (kDLCUDA, its device pointer) or as CUDA host memory (kDLCUDAHost).
nb::object cuda_view(nb::handle self, int device, bool as_host)
{
	BufferCore &b = nb::cast<BufferCore &>(self);
	b.buffer(); // not freed, board open
	if (b.kernel)
		throw nb::value_error("kernel memory cannot be registered with CUDA (its mapping cannot be pinned): "
				      "allocate the buffer with memory=\"user\"");
#ifdef MPRACE_PY_CUDA
	device = checked_device(device);
	DeviceScope on(device);
	if (!b.cuda_registered) {
		bufmgr::cuda::check(cudaHostRegister(b.mem, b.size, cudaHostRegisterPortable | cudaHostRegisterMapped),
				    "cudaHostRegister of the buffer");
		b.cuda_registered = true;
	}
	void *data = b.mem;
	if (!as_host)
		bufmgr::cuda::check(cudaHostGetDevicePointer(&data, b.mem, 0), "cudaHostGetDevicePointer");
	std::vector<std::size_t> shape(b.shape.begin(), b.shape.end());
	nb::ndarray<nb::array_api> a(data, shape.size(), shape.data(), self, nullptr, dlpack_dtype(b.typestr, b.itemsize),
			as_host ? nb::device::cuda_host::value : nb::device::cuda::value, as_host ? 0 : device);
	return nb::cast(a, nb::rv_policy::reference);
#else
	(void)device, (void)as_host;
	set_os_error(g_cuda_error, ENODEV, "this build of mprace has no CUDA support (it was built without the CUDA toolkit)");
	throw nb::python_error();
#endif
}

// A thread of its own that runs one job at a time for a Python call, which waits for it in
// slices with the GIL released so that Ctrl-C or a timeout can abort it. A GPU stage and a
// network sender each have one for their life (no thread is started per call).
class Runner {
public:
	Runner() : thread_([this] { serve(); }) {}
	Runner(const Runner &) = delete;
	~Runner() { stop(); }

	// Ends the thread after the job in progress, if any (a job handed over but not started
	// ends with ECANCELED). Call with the GIL released.
	void stop()
	{
		{
			std::lock_guard<std::mutex> l(mu_);
			quit_ = true;
			cv_.notify_all();
		}
		if (thread_.joinable())
			thread_.join();
	}
	// Under the GIL: runs job on the thread and waits for it; on Ctrl-C or after timeout_s (< 0:
	// none) calls abort() (if it is still set: the owner's close() may have cleared it), waits for
	// the job's end and raises KeyboardInterrupt or TransferTimeout. Else returns the job's
	// result or rethrows what it threw.
	std::size_t run(std::function<std::size_t()> job, const std::function<void()> &abort, double timeout_s,
			const std::string &what)
	{
		{
			std::lock_guard<std::mutex> l(mu_);
			job_ = std::move(job);
			finished_ = false;
			cv_.notify_all();
		}
		auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
		while (!wait_finished(50ms)) {
			bool interrupted = PyErr_CheckSignals() != 0;
			if (interrupted || (timeout_s >= 0 && std::chrono::steady_clock::now() >= until)) {
				if (abort)
					abort();
				while (!wait_finished(1000ms)) {
				}
				if (interrupted)
					throw nb::python_error();
				set_os_error(g_timeout, ETIMEDOUT, what + " did not finish in " + std::to_string(timeout_s) + " s (aborted)");
				throw nb::python_error();
			}
		}
		if (error_)
			std::rethrow_exception(std::exchange(error_, nullptr));
		return result_;
	}

private:
	void serve()
	{
		std::unique_lock<std::mutex> l(mu_);
		for (;;) {
			cv_.wait(l, [this] { return job_ || quit_; });
			if (quit_) {
				if (job_) { // handed over as stop() came: it ends unrun
					job_ = nullptr;
					error_ = std::make_exception_ptr(mprace::Error(ECANCELED, "closed"));
					finished_ = true;
					cv_.notify_all();
				}
				return;
			}
			auto job = std::move(job_);
			job_ = nullptr;
			l.unlock();
			std::size_t n = 0;
			std::exception_ptr e;
			try {
				n = job();
			} catch (...) {
				e = std::current_exception();
			}
			l.lock();
			result_ = n;
			error_ = e;
			finished_ = true;
			cv_.notify_all();
		}
	}
	bool wait_finished(std::chrono::milliseconds slice)
	{
		nb::gil_scoped_release unlocked;
		std::unique_lock<std::mutex> l(mu_);
		return cv_.wait_for(l, slice, [this] { return finished_; });
	}

	std::mutex mu_;
	std::condition_variable cv_;
	std::function<std::size_t()> job_;
	bool finished_ = false, quit_ = false;
	std::size_t result_ = 0;
	std::exception_ptr error_;
	std::thread thread_; // last: starts once the rest is initialised
};

// A relay driven from Python (a GPU stage, a network sender): it uses the board's engine, so
// Board.close() closes it before the engine goes and other transfers wait while it runs.
struct RelayUser {
	explicit RelayUser(const char *what) : name(what) {}
	virtual ~RelayUser() = default;
	virtual void close() = 0;
	const char *name;     // what it is, for messages
	bool running = false; // a call is using the relay: under the GIL
};

// A RelayUser around R (bufmgr::cuda::FpgaToGpu, bufmgr::net::SourceToNetwork): each call runs
// the relay on the Runner, a thread of its own for its life.
template <class R>
struct RelayCore : RelayUser {
	std::shared_ptr<BoardHandle> h;
	std::unique_ptr<R> relay;
	std::unique_ptr<Runner> runner = std::make_unique<Runner>();
	bool closing = false;

	RelayCore(std::shared_ptr<BoardHandle> handle, const char *what) : RelayUser(what), h(std::move(handle))
	{
		h->relays.push_back(this);
	}
	RelayCore(const RelayCore &) = delete;
	~RelayCore() override
	{
		close();
		auto &v = h->relays;
		v.erase(std::remove(v.begin(), v.end(), this), v.end());
	}
	bool closed() const { return !relay || closing; }
	// Aborts a call in progress (another Python thread's), waits for its end, frees the relay.
	void close() override
	{
		if (!relay)
			return;
		closing = true; // no call starts from here on
		nb::gil_scoped_release unlocked;
		relay->abort();
		runner->stop(); // returns after the job in progress, if any
		relay.reset();
	}
	// The relay for a call from Python: open, and no other call using it.
	R &live()
	{
		if (h->closed)
			closed_error();
		if (closed())
			throw nb::value_error((std::string("the ") + name + " is closed").c_str());
		if (running)
			throw mprace::Error(EBUSY, std::string("this ") + name + " is in use (by another thread)");
		return *relay;
	}
	// Runs job(relay) on the Runner (Ctrl-C and timeout_s abort it; see Runner::run).
	std::size_t run(std::function<std::size_t(R &)> job, double timeout_s, const std::string &what)
	{
		R &r = live();
		for (StreamCore *st : h->streams)
			if (!st->stopped)
				throw mprace::Error(EBUSY, "a stream is running on this board: stop it before other transfers");
		running = true;
		try {
			std::size_t n = runner->run([&r, job] { return job(r); }, [this] { if (relay) relay->abort(); },
						    timeout_s, what);
			running = false;
			return n;
		} catch (...) {
			running = false;
			throw;
		}
	}
};

#ifdef MPRACE_PY_CUDA
// board -> host -> GPU through libbufmgr's relay (bufmgr::cuda::FpgaToGpu): `count` user-memory
// DMA buffers of buffer_bytes, registered with CUDA once; the board fills one while the copy
// engine moves the last into GPU memory.
using GpuStage = bufmgr::cuda::FpgaToGpu<bufmgr::MpraceTransfer>;

struct GpuStageCore : RelayCore<GpuStage> {
	int device = 0;
	std::size_t buffer_bytes = 0, count = 0;

	explicit GpuStageCore(std::shared_ptr<BoardHandle> handle) : RelayCore(std::move(handle), "GPU stage") {}
	std::uint64_t read(nb::ndarray<nb::device::cuda, nb::c_contig> to, std::uint64_t n, double timeout_s)
	{
		live();
		if (to.device_id() != device)
			throw nb::value_error(("the destination is on CUDA device " + std::to_string(to.device_id()) +
					       ", the stage on device " + std::to_string(device)).c_str());
		if (n > to.nbytes())
			throw nb::value_error(("nbytes (" + std::to_string(n) + ") exceeds the destination (" +
					       std::to_string(to.nbytes()) + " bytes)").c_str());
		void *dst = to.data();
		return run([dst, n](GpuStage &g) { return g.transfer(dst, n); }, timeout_s, "the GPU read");
	}
};
#endif

// ------------------------------------------------------------------------------ network

#ifdef MPRACE_PY_UCX
// board -> network (bufmgr::net::SourceToNetwork): `count` user-memory DMA buffers of
// buffer_bytes, each sent as one chunk from where the board wrote it. Each send() runs the relay
// on the sender's Runner; finish() and close() end the stream at the receivers.
using NetRelay = bufmgr::net::SourceToNetwork<bufmgr::MpraceTransfer>;

struct NetSenderCore : RelayCore<NetRelay> {
	explicit NetSenderCore(std::shared_ptr<BoardHandle> handle) : RelayCore(std::move(handle), "network sender") {}
	std::uint64_t send(std::uint64_t n, double timeout_s)
	{
		return run([n](NetRelay &r) { return r.run(n); }, timeout_s, "the network send");
	}
	void finish()
	{
		bufmgr::net::Sender &s = live().sink();
		nb::gil_scoped_release unlocked;
		s.finish();
	}
	void reconnect()
	{
		bufmgr::net::Sender &s = live().sink();
		nb::gil_scoped_release unlocked;
		s.reconnect();
	}
	nb::dict stats()
	{
		nb::dict d;
		if (!relay)
			return d;
		const bufmgr::net::Sender &s = relay->sink();
		d["chunks"] = s.stats().chunks;
		d["bytes"] = s.stats().bytes;
		d["credit_waits"] = s.stats().credit_waits;
		d["stream_offset"] = s.stream_offset();
		d["receivers"] = s.receiver_count();
		d["max_chunk"] = s.max_chunk();
		return d;
	}
};

// The receiving side (bufmgr::net::Receiver, no board): chunks lent to Python as NetChunks,
// zero-copy views of the receiver's memory; their memory stays while arrays view them (as a
// stream's buffers do), and release() returns the credit to the sender.
struct NetChunkCore;
struct NetGpuCore;

struct NetReceiverCore {
	std::unique_ptr<bufmgr::net::Receiver> rx;
	std::vector<NetChunkCore *> lent;
	long exports = 0; // buffer-protocol views of chunks: the memory stays while any
	bool closed = false;
	std::atomic<int> waiting{0}; // next() and GPU reads inside the receiver (GIL released)
	NetGpuCore *gpu = nullptr;   // while open, chunks are handed out through it only

	void check() const
	{
		if (closed)
			throw nb::value_error("the receiver is closed");
	}
	nb::object next(nb::handle self, double timeout_s);
	void close();
	void close_gpu();
	// Interrupts the next() or GPU read() another thread is in and waits until it has left.
	void end_waits()
	{
		if (!rx || waiting == 0)
			return;
		rx->interrupt();
		nb::gil_scoped_release unlocked;
		while (waiting > 0)
			std::this_thread::sleep_for(1ms);
	}
	nb::list connections() const
	{
		nb::list out;
		if (!rx)
			return out;
		for (const bufmgr::net::ConnectionStats &c : rx->connections()) {
			nb::dict d;
			d["source"] = c.source;
			d["identified"] = c.identified;
			d["ended"] = c.ended;
			d["lost"] = c.lost;
			d["error"] = c.error;
			d["chunks"] = c.chunks;
			d["bytes"] = c.bytes;
			d["missing"] = c.missing;
			d["duplicates"] = c.duplicates;
			d["reordered"] = c.reordered;
			d["incomplete"] = c.incomplete;
			d["end_sequence"] = c.end_sequence;
			out.append(d);
		}
		return out;
	}
};

struct NetChunkCore {
	nb::object receiver; // keeps the NetReceiverCore alive while lent
	std::optional<bufmgr::net::Chunk> c;
	std::vector<Py_ssize_t> shape{0}, strides{1};

	NetReceiverCore &r() { return nb::cast<NetReceiverCore &>(receiver); }
	const bufmgr::net::Chunk &live() const
	{
		if (!c)
			throw nb::value_error("the chunk was released (its memory went back to the receiver)");
		return *c;
	}
	void release()
	{
		if (!c)
			return;
		NetReceiverCore &rc = r();
		if (rc.rx && !rc.closed)
			rc.rx->release(*c);
		c.reset();
		rc.lent.erase(std::remove(rc.lent.begin(), rc.lent.end(), this), rc.lent.end());
	}
	~NetChunkCore() { release(); }
};

// Between two looks for a chunk: Ctrl-C raises KeyboardInterrupt, a wait past timeout_s (< 0:
// none) TransferTimeout.
template <class TimePoint>
void keep_waiting(double timeout_s, TimePoint until)
{
	if (PyErr_CheckSignals() != 0)
		throw nb::python_error();
	if (timeout_s >= 0 && std::chrono::steady_clock::now() >= until) {
		set_os_error(g_timeout, ETIMEDOUT, "no chunk came in " + std::to_string(timeout_s) + " s");
		throw nb::python_error();
	}
}

nb::object NetReceiverCore::next(nb::handle self, double timeout_s)
{
	check();
	if (gpu)
		throw mprace::Error(EBUSY, "this receiver's chunks go into a GPU (Receiver.gpu()): read them there, "
					   "or close that first");
	auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	for (;;) {
		std::optional<bufmgr::net::Chunk> got;
		bool drained;
		++waiting;
		{
			nb::gil_scoped_release unlocked;
			got = rx->next(50ms);
			drained = !got && rx->drained();
			--waiting; // (before the GIL: close() waits for this with the GIL released)
		}
		if (closed) { // by another thread meanwhile (which released what came)
			if (got && rx)
				rx->release(*got);
			throw nb::value_error("the receiver was closed");
		}
		if (got) {
			auto *c = new NetChunkCore{nb::borrow(self), std::move(got)};
			lent.push_back(c);
			return nb::cast(c, nb::rv_policy::take_ownership);
		}
		if (drained)
			return nb::none(); // every sender ended or was lost, nothing left
		keep_waiting(timeout_s, until);
	}
}

// Another thread may be inside next(): it is interrupted and waited for before the memory goes.
void NetReceiverCore::close()
{
	if (closed)
		return;
	for (NetChunkCore *c : std::vector<NetChunkCore *>(lent))
		c->release();
	closed = true;
	end_waits();
	close_gpu(); // (it uses the receiver's memory)
	if (exports == 0) // else arrays still view its memory: freed with the last of them
		rx.reset();
}

void net_chunk_release_buffer(PyObject *self, Py_buffer *)
{
	NetReceiverCore &r = nb::inst_ptr<NetChunkCore>(self)->r();
	if (--r.exports == 0 && r.closed)
		r.rx.reset();
}

int net_chunk_get(PyObject *self, Py_buffer *view, int flags)
{
	NetChunkCore *c = nb::inst_ptr<NetChunkCore>(self);
	if (!c->c) {
		PyErr_SetString(PyExc_BufferError, "the chunk was released (its memory went back to the receiver)");
		return -1;
	}
	std::memset(view, 0, sizeof(*view));
	view->buf = const_cast<std::byte *>(c->c->data);
	view->len = static_cast<Py_ssize_t>(c->c->size);
	view->itemsize = 1;
	view->readonly = 1;
	view->ndim = 1;
	c->shape[0] = view->len;
	view->format = (flags & PyBUF_FORMAT) ? const_cast<char *>("B") : nullptr;
	view->shape = (flags & PyBUF_ND) ? c->shape.data() : nullptr;
	view->strides = (flags & PyBUF_STRIDES) ? c->strides.data() : nullptr;
	view->obj = self;
	Py_INCREF(self);
	++c->r().exports;
	return 0;
}

PyType_Slot net_chunk_slots[] = {
	{Py_bf_getbuffer, reinterpret_cast<void *>(net_chunk_get)},
	{Py_bf_releasebuffer, reinterpret_cast<void *>(net_chunk_release_buffer)},
	{0, nullptr},
};

#ifdef MPRACE_PY_CUDA
// The receiving side into a GPU (bufmgr::net::ReceiverToGpu): the GPU's copy engine takes each
// chunk from the receiver's memory (registered with CUDA once) into the stage's GPU buffer, and
// read() passes it on into the caller's array, device to device, after the work queued before
// on the legacy default stream (CuPy's and PyTorch's default). read() returns once the chunk is
// there, and its credit has gone back to the sender.
struct NetGpuCore {
	nb::object receiver; // the NetReceiverCore, kept alive
	std::unique_ptr<bufmgr::net::ReceiverToGpu> stage;
	int device = 0;
	void *dst = nullptr;                // during read(): where the chunk goes
	bool closing = false;               // close() from another thread: a read() in progress ends
	cudaEvent_t after_default = nullptr; // the legacy stream's work before the chunk's copy

	NetReceiverCore &r() { return nb::cast<NetReceiverCore &>(receiver); }
	bool closed() const { return !stage; }
	nb::object read(nb::ndarray<nb::device::cuda, nb::c_contig> to, double timeout_s);
	// Frees the GPU buffers and gives the receiver's memory back; the receiver hands chunks out
	// through next() again. Called with no read() inside (the receiver's close() waits for them).
	void close_stage()
	{
		if (!stage)
			return;
		{
			DeviceScope on(device);
			stage.reset();
			cudaEventDestroy(after_default);
			after_default = nullptr;
		}
		r().gpu = nullptr;
	}
	void close()
	{
		if (!stage)
			return;
		NetReceiverCore &rc = r();
		closing = true; // no read() starts from here on
		rc.end_waits();  // one in another thread: interrupted, waited for
		close_stage();
	}
	~NetGpuCore()
	{
		try {
			close_stage();
		} catch (...) {
		}
	}
};

nb::object NetGpuCore::read(nb::ndarray<nb::device::cuda, nb::c_contig> to, double timeout_s)
{
	NetReceiverCore &rc = r();
	rc.check();
	if (!stage || closing)
		throw nb::value_error("the GPU stage is closed");
	if (rc.waiting > 0)
		throw mprace::Error(EBUSY, "this receiver is in use (by another thread)");
	if (to.device_id() != device)
		throw nb::value_error(("the destination is on CUDA device " + std::to_string(to.device_id()) +
				       ", the stage on device " + std::to_string(device)).c_str());
	// Any chunk must fit before one is taken: one that did not would be lost.
	if (to.nbytes() < rc.rx->max_chunk())
		throw nb::value_error(("the destination holds " + std::to_string(to.nbytes()) +
				       " bytes; a chunk may have up to max_chunk = " + std::to_string(rc.rx->max_chunk()))
					      .c_str());
	dst = to.data();
	auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	for (;;) {
		std::optional<bufmgr::net::GpuNetChunk> got;
		bool drained;
		++rc.waiting;
		try {
			nb::gil_scoped_release unlocked;
			DeviceScope on(device);
			got = stage->pump(50ms);
			if (got)
				stage->flush(); // the chunk in dst, its credit back to the sender
			drained = !got && stage->in_flight() == 0 && rc.rx->drained();
		} catch (...) {
			--rc.waiting;
			throw;
		}
		--rc.waiting;
		if (rc.closed)
			throw nb::value_error("the receiver was closed");
		if (got) {
			const bufmgr::net::ChunkHeader &h = got->header;
			return nb::make_tuple(h.source, h.sequence, h.link_sequence, h.timeframe, h.offset, got->bytes,
					      got->connection);
		}
		if (closing)
			throw nb::value_error("the GPU stage was closed");
		if (drained)
			return nb::none(); // every sender ended or was lost, nothing left
		keep_waiting(timeout_s, until);
	}
}

void NetReceiverCore::close_gpu()
{
	if (gpu)
		gpu->close_stage();
}

// Receiver.gpu(): the stage on `device` (< 0: the current one).
NetGpuCore *net_gpu(nb::handle self, int device)
{
	NetReceiverCore &rc = nb::cast<NetReceiverCore &>(self);
	rc.check();
	if (rc.gpu)
		throw mprace::Error(EBUSY, "this receiver feeds a GPU stage already");
	device = checked_device(device);
	DeviceScope on(device);
	auto g = std::make_unique<NetGpuCore>();
	g->receiver = nb::borrow(self);
	g->device = device;
	bufmgr::cuda::check(cudaEventCreateWithFlags(&g->after_default, cudaEventDisableTiming), "cudaEventCreate");
	bufmgr::net::ReceiverToGpuOptions o;
	o.device = device;
	o.depth = 1; // read() takes one chunk at a time
	o.streams = 1;
	NetGpuCore *gp = g.get();
	o.on_chunk = [gp](const bufmgr::net::GpuNetChunk &c, cudaStream_t st) {
		bufmgr::cuda::check(cudaEventRecord(gp->after_default, cudaStreamLegacy), "cudaEventRecord");
		bufmgr::cuda::check(cudaStreamWaitEvent(st, gp->after_default, 0), "cudaStreamWaitEvent");
		bufmgr::cuda::check(cudaMemcpyAsync(gp->dst, c.gpu, c.bytes, cudaMemcpyDeviceToDevice, st),
				    "cudaMemcpyAsync into the destination");
	};
	try {
		g->stage = std::make_unique<bufmgr::net::ReceiverToGpu>(*rc.rx, std::move(o));
	} catch (...) {
		cudaEventDestroy(g->after_default);
		g->after_default = nullptr;
		throw;
	}
	rc.gpu = gp;
	return g.release();
}
#else
void NetReceiverCore::close_gpu() {}
#endif
#endif

// ------------------------------------------------------------------------------ board

struct BoardCore {
	std::shared_ptr<BoardHandle> h = std::make_shared<BoardHandle>();

	explicit BoardCore(const std::string &name)
	{
		h->board = std::make_unique<mprace::Board>(name);
	}
	mprace::Board &board() const
	{
		if (h->closed)
			closed_error();
		return *h->board;
	}
	mprace::DMAEngine &engine()
	{
		if (!h->engine)
			h->engine = std::make_unique<mprace::DMAEngine>(board());
		return *h->engine;
	}
	void close()
	{
		if (h->closed)
			return;
		for (StreamCore *st : std::vector<StreamCore *>(h->streams))
			st->stop(); // before the engine its thread uses
		for (RelayUser *r : h->relays)
			r->close(); // likewise
		h->engine.reset(); // aborts and waits for what runs
		for (BufferCore *b : h->buffers)
			if (!b->kernel)
				b->dma.reset(); // kernel memory stays mapped for arrays over it (see the top)
		h->closed = true;
		h->release_when_unused();
	}
	bool closed() const { return h->closed; }

	// One user of the engine at a time while a stream or a GPU read runs.
	void refuse_if_busy() const
	{
		for (StreamCore *st : h->streams)
			if (!st->stopped)
				throw mprace::Error(EBUSY, "a stream is running on this board: stop it before other transfers");
		for (RelayUser *r : h->relays)
			if (r->running)
				throw mprace::Error(EBUSY, std::string("a ") + r->name + " is using this board: wait for it first");
	}

	nb::dict info() const
	{
		const mprace::BoardInfo &i = board().info();
		nb::dict d;
		d["name"] = i.name;
		d["backend"] = i.backendName();
		d["vendor"] = i.pci.vendor;
		d["device"] = i.pci.device;
		d["subsystem_vendor"] = i.pci.subsystem_vendor;
		d["subsystem_device"] = i.pci.subsystem_device;
		d["magic"] = i.magic;
		d["version"] = nb::make_tuple(i.versionMajor, i.versionMinor);
		d["caps"] = i.capsRaw;
		d["datapath_bytes"] = i.caps.datapathBytes;
		d["max_payload"] = i.pci.max_payload;
		d["max_read_request"] = i.pci.max_read_request;
		d["irq_vectors"] = i.pci.irq_count;
		d["clock_mhz"] = i.clockMHz;
		return d;
	}
	std::uint32_t read_register(std::uint32_t off) const { return board().getRegister(off); }
	void write_register(std::uint32_t off, std::uint32_t v) { board().setRegister(off, v); }

	BufferCore *alloc(std::size_t nbytes, bool kernel, const std::string &fmt, const std::string &typestr,
			  Py_ssize_t itemsize, const std::vector<Py_ssize_t> &shape)
	{
		mprace::Board &b = board();
		auto core = std::make_unique<BufferCore>(h);
		core->kernel = kernel;
		core->size = nbytes;
		if (kernel) {
			core->dma = std::make_unique<mprace::DMABuffer>(b, nbytes);
		} else {
			void *m = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				throw mprace::Error(errno, "mmap of " + std::to_string(nbytes) + " bytes of user memory");
			core->mem = m;
			core->own_mapping = true;
			core->dma = std::make_unique<mprace::DMABuffer>(b, m, nbytes);
		}
		core->mem = core->dma->data();
		core->set_view(fmt, typestr, itemsize, shape);
		return core.release();
	}
	BufferCore *wrap(nb::object array, std::uintptr_t addr, std::size_t nbytes, const std::string &fmt,
			 const std::string &typestr, Py_ssize_t itemsize, const std::vector<Py_ssize_t> &shape)
	{
		mprace::Board &b = board();
		auto core = std::make_unique<BufferCore>(h);
		core->size = nbytes;
		core->dma = std::make_unique<mprace::DMABuffer>(b, reinterpret_cast<void *>(addr), nbytes);
		core->mem = core->dma->data();
		core->wrapped = std::move(array);
		core->set_view(fmt, typestr, itemsize, shape);
		return core.release();
	}

	// One transfer of [offset, offset + length) of buf, waited for (timeout_s < 0: no limit).
	std::uint64_t transfer(bool c2h, nb::object buf, std::uint64_t offset, std::uint64_t length, double timeout_s)
	{
		TransferCore t = start(c2h, std::move(buf), offset, length);
		return t.wait(timeout_s);
	}
	TransferCore start(bool c2h, nb::object buf, std::uint64_t offset, std::uint64_t length)
	{
		BufferCore &b = nb::cast<BufferCore &>(buf);
		refuse_if_busy();
		if (b.h != h)
			throw nb::value_error("the buffer belongs to another board");
		mprace::DMABuffer &d = b.buffer();
		mprace::DMAEngine &e = engine();
		if (!c2h)
			d.syncForDevice();
		TransferCore t{h, c2h ? e.readAsync(d, offset, length) : e.writeAsync(d, offset, length), buf, c2h};
		return t;
	}

	StreamCore *stream(std::size_t buffer_bytes, std::size_t count, bool kernel, bool drop,
			   std::uint64_t max_buffers, const std::string &fmt, const std::string &typestr,
			   Py_ssize_t itemsize)
	{
		mprace::Board &b = board();
		refuse_if_busy();
		auto st = std::make_unique<StreamCore>(h);
		st->format = fmt;
		st->typestr = typestr;
		st->itemsize = itemsize;
		st->pool = std::make_unique<Pool>(
			bufmgr::MpraceTransfer(b, engine(), kernel ? bufmgr::MemoryKind::kernel : bufmgr::MemoryKind::user),
			count, buffer_bytes);
		bufmgr::StreamOptions o;
		o.overflow = drop ? bufmgr::Overflow::drop : bufmgr::Overflow::block;
		o.max_buffers = max_buffers;
		st->pool->start_stream(o);
		return st.release();
	}

#ifdef MPRACE_PY_CUDA
	GpuStageCore *gpu_stage(std::size_t buffer_bytes, std::size_t count, int device)
	{
		mprace::Board &b = board();
		device = checked_device(device);
		bufmgr::cuda::CudaOptions o;
		o.device = device;
		DeviceScope on(device); // (the stage registers its buffers on it)
		auto g = std::make_unique<GpuStageCore>(h);
		g->device = device;
		g->buffer_bytes = buffer_bytes;
		g->count = count;
		nb::gil_scoped_release unlocked; // registers the buffers: milliseconds
		g->relay = std::make_unique<GpuStage>(bufmgr::MpraceTransfer(b, engine(), bufmgr::MemoryKind::user),
						      count, buffer_bytes, o);
		return g.release();
	}
#endif

#ifdef MPRACE_PY_UCX
	NetSenderCore *net_sender(std::vector<std::string> receivers, unsigned source, bool hash,
				  std::uint64_t chunks_per_timeframe, std::size_t buffer_bytes, std::size_t count,
				  double connect_timeout_s)
	{
		mprace::Board &b = board();
		refuse_if_busy();
		bufmgr::net::SenderOptions o;
		o.receivers = std::move(receivers);
		o.source = static_cast<std::uint16_t>(source);
		o.route = hash ? bufmgr::net::Route::hash : bufmgr::net::Route::round_robin;
		o.chunks_per_timeframe = chunks_per_timeframe;
		o.connect_timeout = std::chrono::milliseconds(static_cast<long long>(connect_timeout_s * 1000));
		auto n = std::make_unique<NetSenderCore>(h);
		mprace::DMAEngine &e = engine();
		nb::gil_scoped_release unlocked; // connects: up to connect_timeout
		bufmgr::net::Sender sender(std::move(o));
		if (sender.max_chunk() < buffer_bytes)
			throw mprace::Error(EMSGSIZE, "the receivers take chunks of at most " + std::to_string(sender.max_chunk()) +
							      " bytes, not buffer_bytes=" + std::to_string(buffer_bytes));
		n->relay = std::make_unique<NetRelay>(bufmgr::MpraceTransfer(b, e, bufmgr::MemoryKind::user),
						      std::move(sender), count, buffer_bytes);
		return n.release();
	}
#endif

	// The test logic feeds the channels: take the engine first (its reset of the channels
	// would drop what a source produced ahead for them).
	void set_routing(unsigned source, unsigned sink)
	{
		engine();
		board().setTestRouting(static_cast<mprace::C2HSource>(source), static_cast<mprace::H2CSink>(sink));
	}
	nb::tuple routing() const
	{
		return nb::make_tuple(static_cast<unsigned>(board().c2hSource()), static_cast<unsigned>(board().h2cSink()));
	}
	void set_pattern(std::uint32_t seed, std::uint32_t rate)
	{
		engine();
		board().setPatternSeed(seed);
		board().setPatternRate(rate);
	}
	void reset_checker(std::uint32_t seed)
	{
		engine();
		board().resetChecker(seed);
	}
	nb::tuple checker() const
	{
		mprace::CheckerCounts c = board().checker();
		return nb::make_tuple(c.words, c.errors);
	}
};

nb::list segments(BufferCore &b)
{
	nb::list out;
	for (const mprace::Segment &s : b.buffer().segments())
		out.append(nb::make_tuple(s.offset, s.busAddress, s.length));
	return out;
}

} // namespace

NB_MODULE(_core, m)
{
	m.doc() = "The compiled part of the mprace package (use the names of mprace itself).";
	vboard_register(); // "emu:" and "sim:" without plugins, as the tools do

	g_no_board = PyErr_NewExceptionWithDoc("mprace.NoBoardError",
					       "The board is not there or is gone (ENODEV): no such device, or it dropped off the link.",
					       PyExc_OSError, nullptr);
	g_timeout = PyErr_NewExceptionWithDoc("mprace.TransferTimeout",
					      "A transfer or wait did not finish in time (ETIMEDOUT); the transfer was aborted.",
					      PyExc_TimeoutError, nullptr);
	g_engine_error = PyErr_NewExceptionWithDoc(
		"mprace.EngineError",
		"A transfer failed in the engine (bus error, descriptor error, stall timeout) or was aborted. "
		"Attributes: engine_error (the spec's code), engine_error_name, bytes (moved before it failed).",
		PyExc_OSError, nullptr);
	g_cuda_error = PyErr_NewExceptionWithDoc(
		"mprace.CudaError",
		"CUDA failed or is not there (no GPU or driver: errno ENODEV). Attribute: cuda_error (CUDA's name "
		"of the error, e.g. 'cudaErrorNoDevice').",
		PyExc_OSError, nullptr);
	m.attr("NoBoardError") = nb::borrow(g_no_board);
	m.attr("CudaError") = nb::borrow(g_cuda_error);
	m.attr("TransferTimeout") = nb::borrow(g_timeout);
	m.attr("EngineError") = nb::borrow(g_engine_error);
	nb::register_exception_translator(translate);

	m.def("list_devices", &mprace::Board::list, "Device names: /dev/fpgaN, then emu: and sim:.");
#ifdef MPRACE_PY_CUDA
	m.attr("built_with_cuda") = true;
	m.def("cuda_unavailable_reason", [] {
		std::string why = bufmgr::cuda::unavailable_reason();
		return why;
	});
	m.def("cuda_device_count", [] { return bufmgr::cuda::device_count(); });
#else
	m.attr("built_with_cuda") = false;
	m.def("cuda_unavailable_reason", [] {
		return std::string("this build of mprace has no CUDA support (it was built without the CUDA toolkit)");
	});
	m.def("cuda_device_count", [] { return 0; });
#endif

	nb::class_<BufferCore>(m, "Buffer", nb::type_slots(buffer_slots),
			       "A DMA buffer of a board (Board.alloc, Board.wrap): usable wherever NumPy takes an array,\n"
			       "without a copy (buffer protocol, __array_interface__, __dlpack__). Contiguous views of it\n"
			       "(buf[a:b], np.asarray(buf)[...]) are valid arguments of Board.read/write.")
		.def_prop_ro("address", [](BufferCore &b) { return reinterpret_cast<std::uintptr_t>(b.mem); },
			     "The CPU address of its first byte.")
		.def_prop_ro("nbytes", [](BufferCore &b) { return b.size; })
		.def_prop_ro("memory", [](BufferCore &b) { return b.kernel ? "kernel" : "user"; },
			     "\"kernel\" (one bus address) or \"user\" (this process's memory, scatter-gather).")
		.def_prop_ro("typestr", [](BufferCore &b) { return b.typestr; })
		.def_prop_ro("shape", [](BufferCore &b) { return shape_tuple(b.shape); })
		.def_prop_ro("closed", [](BufferCore &b) { return b.h->closed; }, "Whether its board was closed.")
		.def_prop_ro("freed", [](BufferCore &b) { return b.freed; })
		.def("free", &BufferCore::free,
		     "Unmaps the buffer from the device now (and frees kernel memory: BufferError while arrays\n"
		     "view it). Idempotent; `with buf:` calls it at the end.")
		.def("__enter__", [](nb::handle self) { return nb::borrow(self); })
		.def("__exit__", [](BufferCore &b, nb::args) { b.free(); })
		.def_prop_ro("segments", &segments, "(offset in the buffer, bus address, length) of each run of contiguous bus addresses.")
		.def("bus_address", [](BufferCore &b, std::size_t off) { return b.buffer().busAddress(off); },
		     nb::arg("offset") = 0, "The bus address the board uses for byte `offset`.")
		.def_prop_ro("__array_interface__", [](BufferCore &b) {
			if (!b.mem)
				throw nb::value_error("the buffer was freed");
			return array_interface(shape_tuple(b.shape), b.typestr, b.mem);
		})
		.def_prop_ro("array", [](nb::handle self) { return numpy().attr("asarray")(self); },
			     "The buffer as a NumPy array (no copy).")
		.def("__dlpack__", [](nb::handle self, nb::args a, nb::kwargs k) {
			return numpy().attr("asarray")(self).attr("__dlpack__")(*a, **k);
		})
		.def("__dlpack_device__", [](nb::handle) { return nb::make_tuple(1, 0); }, "(kDLCPU, 0): host memory.")
		.def("cuda", [](nb::handle self, std::optional<int> device, bool host) {
			if (device && *device < 0)
				throw nb::value_error("device is a CUDA device number >= 0, or None (the current one)");
			return cuda_view(self, device ? *device : -1, host);
		}, nb::arg("device").none() = nb::none(), nb::arg("host") = false,
		     "The buffer for GPU libraries, without a copy: user memory registered with CUDA as mapped\n"
		     "host memory (once; until this Buffer object goes) and returned as an array object with\n"
		     "__dlpack__ on CUDA device `device` (default: the current one), whose data pointer is the\n"
		     "GPU's address of this memory: cupy.from_dlpack(buf.cuda()), torch.from_dlpack(buf.cuda()).\n"
		     "GPU kernels read and write it across the bus. host=True describes it as CUDA host memory\n"
		     "(kDLCUDAHost) instead, which NumPy takes (CuPy and PyTorch do not). Kernel memory:\n"
		     "ValueError; no GPU: CudaError.")
		.def_prop_ro("cuda_registered", [](BufferCore &b) { return b.cuda_registered; },
			     "Whether cuda() has registered it with CUDA (until the Buffer object goes).")
		.def("__len__", [](BufferCore &b) { return b.shape.empty() ? 0 : b.shape[0]; })
		.def("__getitem__", [](nb::handle self, nb::handle key) {
			nb::object a = numpy().attr("asarray")(self);
			PyObject *r = PyObject_GetItem(a.ptr(), key.ptr());
			if (!r)
				throw nb::python_error();
			return nb::steal(r);
		})
		.def("__setitem__", [](nb::handle self, nb::handle key, nb::handle value) {
			nb::object a = numpy().attr("asarray")(self);
			if (PyObject_SetItem(a.ptr(), key.ptr(), value.ptr()) != 0)
				throw nb::python_error();
		})
		.def("__repr__", [](BufferCore &b) {
			std::string where = b.freed ? std::string("freed") : b.h->closed ? std::string("closed")
							: std::string(b.kernel ? "kernel" : "user") + " memory at 0x" + hexstr(b.mem);
			return "<mprace.Buffer " + nb::cast<std::string>(nb::repr(shape_tuple(b.shape))) + " " + b.typestr +
			       ", " + std::to_string(b.size) + " bytes, " + where + ">";
		});

	nb::class_<TransferCore>(m, "_Transfer")
		.def("wait", &TransferCore::wait, nb::arg("timeout_s"))
		.def("done", &TransferCore::done)
		.def("abort", &TransferCore::abort)
		.def("result", &TransferCore::result);

	nb::class_<ChunkCore>(m, "Chunk", nb::type_slots(chunk_slots),
			      "One filled DMA buffer of a Stream, lent to you: np.asarray(chunk) views it without a copy.\n"
			      "Release it (chunk.release(), or leave `with chunk:`) to give the buffer back to the board;\n"
			      "dropping the last reference releases it too. A gap in `sequence` means dropped buffers.")
		.def("release", &ChunkCore::release, "Gives the buffer back to the board. Idempotent.")
		.def_prop_ro("released", [](ChunkCore &c) { return !c.f; })
		.def_prop_ro("sequence", [](ChunkCore &c) { return c.live().sequence(); }, "Its number in the stream.")
		.def_prop_ro("nbytes", [](ChunkCore &c) { return c.f ? c.f.bytes() : 0; })
		.def_prop_ro("address", [](ChunkCore &c) { return reinterpret_cast<std::uintptr_t>(c.live().data()); })
		.def_prop_ro("typestr", [](ChunkCore &c) { return c.s().typestr; })
		.def_prop_ro("__array_interface__", [](ChunkCore &c) {
			const Pool::Filled &f = c.live();
			return array_interface(nb::make_tuple(f.bytes() / c.s().itemsize), c.s().typestr, f.data());
		})
		.def_prop_ro("array", [](nb::handle self) { return numpy().attr("asarray")(self); },
			     "The chunk as a NumPy array (no copy).")
		.def("__dlpack__", [](nb::handle self, nb::args a, nb::kwargs k) {
			return numpy().attr("asarray")(self).attr("__dlpack__")(*a, **k);
		})
		.def("__dlpack_device__", [](nb::handle) { return nb::make_tuple(1, 0); })
		.def("__enter__", [](nb::handle self) { return nb::borrow(self); })
		.def("__exit__", [](ChunkCore &c, nb::args) { c.release(); })
		.def("__repr__", [](ChunkCore &c) {
			return c.f ? "<mprace.Chunk #" + std::to_string(c.f.sequence()) + ", " + std::to_string(c.f.bytes()) + " bytes>"
				   : std::string("<mprace.Chunk released>");
		});

	nb::class_<StreamCore>(m, "_Stream")
		.def("next", [](nb::handle self) { return nb::cast<StreamCore &>(self).next(self); })
		.def("stop", &StreamCore::stop)
		.def("stats", &StreamCore::stats)
		.def_prop_ro("stopped", [](StreamCore &s) { return s.stopped; });

#ifdef MPRACE_PY_CUDA
	nb::class_<GpuStageCore>(m, "_GpuStage")
		.def("read", &GpuStageCore::read, nb::arg("dst").noconvert(), nb::arg("nbytes"), nb::arg("timeout_s"))
		.def("close", &GpuStageCore::close)
		.def_prop_ro("closed", &GpuStageCore::closed)
		.def_prop_ro("device", [](GpuStageCore &g) { return g.device; })
		.def_prop_ro("buffer_bytes", [](GpuStageCore &g) { return g.buffer_bytes; })
		.def_prop_ro("count", [](GpuStageCore &g) { return g.count; });
#endif

#ifdef MPRACE_PY_UCX
	m.attr("built_with_ucx") = true;
	m.attr("NET_MAX_WINDOW") = bufmgr::net::max_window;
	m.attr("NET_MAX_CHUNK") = bufmgr::net::max_chunk_limit;
	nb::class_<NetSenderCore>(m, "_NetSender")
		.def("send", &NetSenderCore::send)
		.def("finish", &NetSenderCore::finish)
		.def("reconnect", &NetSenderCore::reconnect)
		.def("close", &NetSenderCore::close)
		.def("stats", &NetSenderCore::stats)
		.def_prop_ro("closed", &NetSenderCore::closed);

	nb::class_<NetChunkCore>(m, "NetChunk", nb::type_slots(net_chunk_slots),
				 "One chunk a Receiver received, lent to you: np.asarray(chunk) views its bytes (read-only)\n"
				 "without a copy. Release it (chunk.release(), or leave `with chunk:`) to give its memory\n"
				 "back and the sender its credit; dropping the last reference releases it too.")
		.def("release", &NetChunkCore::release, "Gives the memory back (and the sender a credit). Idempotent.")
		.def_prop_ro("released", [](NetChunkCore &c) { return !c.c; })
		.def_prop_ro("source", [](NetChunkCore &c) { return c.live().header.source; }, "The sender's id.")
		.def_prop_ro("sequence", [](NetChunkCore &c) { return c.live().header.sequence; },
			     "The sender's chunk number (over all its receivers).")
		.def_prop_ro("link_sequence", [](NetChunkCore &c) { return c.live().header.link_sequence; },
			     "The sender's chunk number to this receiver (what loss is judged by).")
		.def_prop_ro("timeframe", [](NetChunkCore &c) { return c.live().header.timeframe; })
		.def_prop_ro("offset", [](NetChunkCore &c) { return c.live().header.offset; },
			     "Bytes of the sender's stream before this chunk.")
		.def_prop_ro("connection", [](NetChunkCore &c) { return c.live().connection; },
			     "Index into Receiver.connections.")
		.def_prop_ro("nbytes", [](NetChunkCore &c) { return c.c ? c.c->size : 0; })
		.def("__enter__", [](nb::handle self) { return nb::borrow(self); })
		.def("__exit__", [](NetChunkCore &c, nb::args) { c.release(); })
		.def("__repr__", [](NetChunkCore &c) {
			return c.c ? "<mprace.NetChunk source " + std::to_string(c.c->header.source) + " #" +
					     std::to_string(c.c->header.sequence) + ", " + std::to_string(c.c->size) + " bytes>"
				   : std::string("<mprace.NetChunk released>");
		});

	nb::class_<NetReceiverCore>(m, "_NetReceiver")
		.def("__init__", [](NetReceiverCore *self, const std::string &listen, std::size_t window, std::size_t max_chunk) {
			bufmgr::net::ReceiverOptions o;
			o.listen = listen;
			o.window = window;
			o.max_chunk = max_chunk;
			new (self) NetReceiverCore();
			self->rx = std::make_unique<bufmgr::net::Receiver>(std::move(o));
		})
		.def("next", [](nb::handle self, double timeout_s) { return nb::cast<NetReceiverCore &>(self).next(self, timeout_s); })
		.def("close", &NetReceiverCore::close)
		.def("connections", &NetReceiverCore::connections)
		.def_prop_ro("closed", [](NetReceiverCore &r) { return r.closed; })
		.def_prop_ro("port", [](NetReceiverCore &r) { r.check(); return r.rx->port(); })
		.def_prop_ro("drained", [](NetReceiverCore &r) { r.check(); return r.rx->drained(); })
		.def_prop_ro("pending", [](NetReceiverCore &r) { r.check(); return r.rx->pending(); })
		.def_prop_ro("max_chunk", [](NetReceiverCore &r) { r.check(); return r.rx->max_chunk(); })
#ifdef MPRACE_PY_CUDA
		.def("gpu", &net_gpu, nb::rv_policy::take_ownership)
#endif
		;
#ifdef MPRACE_PY_CUDA
	nb::class_<NetGpuCore>(m, "_NetGpu")
		.def("read", &NetGpuCore::read, nb::arg("dst").noconvert(), nb::arg("timeout_s"))
		.def("close", &NetGpuCore::close)
		.def_prop_ro("closed", &NetGpuCore::closed)
		.def_prop_ro("device", [](NetGpuCore &g) { return g.device; });
#endif
#else
	m.attr("built_with_ucx") = false;
#endif

	nb::class_<BoardCore>(m, "_Board")
		.def(nb::init<const std::string &>())
		.def("close", &BoardCore::close)
		.def_prop_ro("closed", &BoardCore::closed)
		.def("info", &BoardCore::info)
		.def("read_register", &BoardCore::read_register)
		.def("write_register", &BoardCore::write_register)
		.def("alloc", &BoardCore::alloc, nb::rv_policy::take_ownership)
		.def("wrap", &BoardCore::wrap, nb::rv_policy::take_ownership)
		.def("transfer", &BoardCore::transfer)
		.def("start", &BoardCore::start)
		.def("stream", &BoardCore::stream, nb::rv_policy::take_ownership)
#ifdef MPRACE_PY_CUDA
		.def("gpu_stage", &BoardCore::gpu_stage, nb::rv_policy::take_ownership)
#endif
#ifdef MPRACE_PY_UCX
		.def("net_sender", &BoardCore::net_sender, nb::rv_policy::take_ownership)
#endif
		.def("set_routing", &BoardCore::set_routing)
		.def("routing", &BoardCore::routing)
		.def("set_pattern", &BoardCore::set_pattern)
		.def("reset_checker", &BoardCore::reset_checker)
		.def("checker", &BoardCore::checker);
}
