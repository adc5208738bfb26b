// SPDX-License-Identifier: GPL-2.0-or-later
// mprace-recv without CUDA: --gpu says why it is not there.
#include <cerrno>

#include "recv_gpu.hpp"

std::unique_ptr<recvgpu::Stage> recvgpu::make(bufmgr::net::Receiver &, int, std::size_t, bool, std::uint32_t,
					      std::function<void(const Done &)>)
{
	throw bufmgr::Error(EOPNOTSUPP, "--gpu is not available: mprace-recv was built without CUDA "
					"(configure found no nvcc)");
}
