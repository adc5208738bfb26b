// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Several GPUs at once: board(s) -> host -> N GPUs through the CUDA stage.
//
//   cuda::GpuLanes        one thread per GPU for the life of the object, each on the CPUs near
//                         its GPU with that GPU current; run(job) runs job(lane) on all at once
//   cuda::FpgaToGpus<B>   one FpgaToGpu pipeline per lane: each transfer is cut into one part
//                         per GPU, every part moved by its lane at the same time. The lanes'
//                         board sides come from a factory: the same board for all (one board
//                         fanning out; their reads interleave on its C2H channel) or a board
//                         each.
//
// Why a thread per GPU: each pipeline waits on its own copy events and its own board transfers;
// one thread driving all would serialize them. Why near the GPU: what a lane allocates (its DMA
// buffers, registered with its GPU) and starts (the relay's thread, a virtual board's threads)
// inherits its CPUs, so on a machine with several NUMA nodes the data stays on the GPU's node.
//
// This header needs the CUDA runtime, as bufmgr/cuda.hpp.
#ifndef BUFMGR_CUDA_MULTI_HPP
#define BUFMGR_CUDA_MULTI_HPP

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bufmgr/cuda.hpp"

namespace bufmgr::cuda {

// The CPUs near a GPU that this thread may use: its PCI function's local_cpulist in sysfs,
// within the thread's affinity. Empty when unknown (no sysfs entry, no such GPU) or when none
// of them is allowed. Never throws.
inline std::vector<int> cpus_near_device(int device)
{
	std::vector<int> out;
	char bus[32];
	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) != cudaSuccess) {
		(void)cudaGetLastError();
		return out;
	}
	std::string id(bus); // "0000:3B:00.0"; sysfs spells it in lower case
	std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
	std::ifstream f("/sys/bus/pci/devices/" + id + "/local_cpulist");
	std::string list;
	cpu_set_t allowed;
	if (!std::getline(f, list) || sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return out;
	std::stringstream ranges(list);
	std::string r;
	while (std::getline(ranges, r, ',')) {
		int lo = -1, hi = -1;
		char dash = 0;
		std::stringstream one(r);
		if (!(one >> lo))
			return {};
		hi = (one >> dash >> hi) && dash == '-' ? hi : lo;
		for (int c = lo; c <= hi && c >= 0 && c < CPU_SETSIZE; ++c)
			if (CPU_ISSET(c, &allowed))
				out.push_back(c);
	}
	return out;
}

// Policies: none. Requirements: the jobs may run on any lane's thread, several at once; a lane's
// job sees its GPU current. Thread safety: run() is called by one thread at a time (the owner).
// Errors: run() rethrows the first exception a job threw (the other lanes' jobs still ran to
// their end); std::system_error if a thread cannot be started.
class GpuLanes {
public:
	// One lane per entry of devices (a device may appear twice: two lanes on one GPU).
	explicit GpuLanes(std::vector<int> devices) : devices_(std::move(devices))
	{
		if (devices_.empty())
			throw Error(EINVAL, "bufmgr::cuda::GpuLanes: no GPU");
		try {
			for (std::size_t i = 0; i < devices_.size(); ++i)
				threads_.emplace_back([this, i] { loop(i); });
		} catch (...) {
			stop();
			throw;
		}
	}
	GpuLanes(const GpuLanes &) = delete;
	GpuLanes &operator=(const GpuLanes &) = delete;
	~GpuLanes() { stop(); }

	std::size_t size() const noexcept { return devices_.size(); }
	int device(std::size_t lane) const { return devices_.at(lane); }

	// Runs job(lane) on every lane at once; returns when all have finished.
	void run(const std::function<void(std::size_t)> &job)
	{
		std::unique_lock<std::mutex> lk(mu_);
		job_ = &job;
		error_ = nullptr;
		pending_ = devices_.size();
		++generation_;
		wake_.notify_all();
		done_.wait(lk, [this] { return pending_ == 0; });
		job_ = nullptr;
		if (error_)
			std::rethrow_exception(std::exchange(error_, nullptr));
	}

private:
	void loop(std::size_t lane)
	{
		const std::vector<int> cpus = cpus_near_device(devices_[lane]);
		if (!cpus.empty()) {
			cpu_set_t set;
			CPU_ZERO(&set);
			for (int c : cpus)
				CPU_SET(c, &set);
			(void)sched_setaffinity(0, sizeof(set), &set); // a placement hint, not a need
		}
		std::uint64_t seen = 0;
		for (;;) {
			const std::function<void(std::size_t)> *job;
			{
				std::unique_lock<std::mutex> lk(mu_);
				wake_.wait(lk, [&] { return quit_ || generation_ != seen; });
				if (quit_)
					return;
				seen = generation_;
				job = job_;
			}
			std::exception_ptr err;
			try {
				check(cudaSetDevice(devices_[lane]), "bufmgr::cuda::GpuLanes: cudaSetDevice(" +
									     std::to_string(devices_[lane]) + ")");
				(*job)(lane);
			} catch (...) {
				err = std::current_exception();
			}
			std::lock_guard<std::mutex> lk(mu_);
			if (err && !error_)
				error_ = err;
			if (--pending_ == 0)
				done_.notify_all();
		}
	}
	void stop() noexcept
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			quit_ = true;
			wake_.notify_all();
		}
		for (auto &t : threads_)
			if (t.joinable())
				t.join();
	}

	std::vector<int> devices_;
	std::vector<std::thread> threads_;
	std::mutex mu_;
	std::condition_variable wake_, done_;
	const std::function<void(std::size_t)> *job_ = nullptr;
	std::exception_ptr error_;
	std::size_t pending_ = 0;
	std::uint64_t generation_ = 0;
	bool quit_ = false;
};

// Lane `lane`'s part of `bytes` cut into `lanes` parts of whole granules: {offset, length}. The
// first parts take the remainder, so parts differ by at most one granule; bytes that do not fill
// a granule are in no part.
struct LanePart {
	std::size_t offset, length;
};
inline LanePart lane_part(std::size_t bytes, std::size_t lanes, std::size_t lane, std::size_t granule)
{
	granule = std::max<std::size_t>(granule, 1);
	const std::size_t units = bytes / granule, base = units / lanes, extra = units % lanes;
	const std::size_t first = lane * base + std::min(lane, extra);
	return {first * granule, (base + (lane < extra ? 1 : 0)) * granule};
}

// Policies: Board models Transfer with can_c2h (MpraceTransfer on user memory). One FpgaToGpu per
// lane, made on the lane's thread: its board side from make_board(lane), its DMA buffers
// registered with the lane's GPU (CudaOptions::device is set per lane).
// Requirements: a board side shared by several lanes must allow transfers from several threads
// at once (mprace::DMAEngine does); dst[lane] is device memory on the lane's GPU with room for
// its part.
// Errors: as FpgaToGpu (CudaError, bufmgr::Error, the board's errors), the first lane's rethrown
// after every lane has finished its part.
// Thread safety: one thread calls transfer(); abort() from any thread.
template <class Board>
class FpgaToGpus {
public:
	FpgaToGpus(std::vector<int> devices, std::function<Board(std::size_t lane)> make_board, std::size_t count,
		   std::size_t buffer_size, CudaOptions opt = CudaOptions())
		: lanes_(std::move(devices)), pipes_(lanes_.size())
	{
		try {
			lanes_.run([&](std::size_t i) {
				CudaOptions o = opt;
				o.device = lanes_.device(i);
				pipes_[i] = std::make_unique<FpgaToGpu<Board>>(make_board(i), count, buffer_size, o);
			});
			granule_ = std::lcm(pipes_[0]->board().granule(), pipes_[0]->gpu().granule());
		} catch (...) {
			release();
			throw;
		}
	}
	FpgaToGpus(const FpgaToGpus &) = delete;
	FpgaToGpus &operator=(const FpgaToGpus &) = delete;
	~FpgaToGpus() { release(); }

	std::size_t lanes() const noexcept { return lanes_.size(); }
	int device(std::size_t lane) const { return lanes_.device(lane); }
	// The granule a part is cut to: the pipelines' (the board side's and the GPU side's).
	std::size_t granule() const noexcept { return granule_; }
	LanePart part(std::size_t bytes, std::size_t lane) const noexcept
	{
		return lane_part(bytes, lanes(), lane, granule());
	}

	// Moves `bytes` into the GPUs: lane i's part(bytes, i).length bytes into dst[i], all lanes
	// at once. Returns the bytes moved in all (fewer only when a board ended a packet).
	std::size_t transfer(const std::vector<void *> &dst, std::size_t bytes)
	{
		if (dst.size() != lanes())
			throw Error(EINVAL, "bufmgr::cuda::FpgaToGpus: " + std::to_string(dst.size()) +
						    " destinations for " + std::to_string(lanes()) + " GPUs");
		std::vector<std::size_t> got(lanes(), 0);
		lanes_.run([&](std::size_t i) {
			const std::size_t len = part(bytes, i).length;
			if (len)
				got[i] = pipes_[i]->transfer(dst[i], len);
		});
		std::size_t sum = 0;
		for (std::size_t g : got)
			sum += g;
		return sum;
	}
	// Runs job(lane) on every lane's thread (its GPU current, on its CPUs): for allocations
	// that belong near a GPU.
	void on_lanes(const std::function<void(std::size_t)> &job) { lanes_.run(job); }
	// Aborts every lane's transfer in flight (each throws ECANCELED from transfer()).
	void abort() noexcept
	{
		for (auto &p : pipes_)
			if (p)
				p->abort();
	}
	FpgaToGpu<Board> &pipe(std::size_t lane) { return *pipes_.at(lane); }

private:
	// Each pipeline is destroyed on its own lane (its GPU current).
	void release() noexcept
	{
		try {
			lanes_.run([&](std::size_t i) { pipes_[i].reset(); });
		} catch (...) {
		}
	}

	GpuLanes lanes_;
	std::vector<std::unique_ptr<FpgaToGpu<Board>>> pipes_;
	std::size_t granule_ = 1;
};

} // namespace bufmgr::cuda

#endif
