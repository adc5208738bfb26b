// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace-recv --gpu: every chunk goes on into a GPU through bufmgr::net::ReceiverToGpu
// (bufmgr/net_cuda.hpp) and is checked there by a kernel. Built by nvcc when configure finds
// CUDA (recv_gpu.cu); otherwise make() says --gpu is not available (recv_nogpu.cpp). This
// header needs no CUDA, so recv.cpp is plain C++.
#ifndef TOOLS_NET_RECV_GPU_HPP
#define TOOLS_NET_RECV_GPU_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bufmgr/net.hpp"

namespace recvgpu {

// A chunk the GPU has finished with: its copy and its check completed.
struct Done {
	bufmgr::net::ChunkHeader header;
	std::size_t bytes = 0;
	std::size_t connection = 0;
	std::uint64_t mismatches = 0;  // bytes that differ from the pattern (0 without the check)
	std::int64_t first_bad = -1;   // the first of them, in the chunk; -1 if none
};

class Stage {
public:
	virtual ~Stage() = default;
	// Takes the next chunk (up to timeout) into the GPU; false when none came.
	virtual bool pump(std::chrono::milliseconds timeout) = 0;
	// Waits for every chunk on the GPU (each reported to the done hook).
	virtual void flush() = 0;
	virtual std::size_t in_flight() const = 0;
	virtual std::string describe() const = 0; // "GPU 0 (name)"
};

// Throws bufmgr::Error: ENODEV no such GPU, EOPNOTSUPP built without CUDA, CUDA's errors.
std::unique_ptr<Stage> make(bufmgr::net::Receiver &rx, int device, std::size_t depth, bool check,
			    std::uint32_t seed, std::function<void(const Done &)> done);

} // namespace recvgpu

#endif
