// SPDX-License-Identifier: LGPL-2.1-or-later
//
// DMA buffers as the algorithms see them (BufferView, MemoryKind) and HostMemory, the
// page-aligned anonymous memory that host-only and CUDA transfer policies allocate.
#ifndef BUFMGR_MEMORY_HPP
#define BUFMGR_MEMORY_HPP

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <utility>

#include "bufmgr/error.hpp"
#include "pcidriver/memory_kind.hpp"

namespace bufmgr {

// Where a DMA buffer's memory comes from (host, user, kernel, pinned): the stack's one type,
// pcidriver/memory_kind.hpp, which says who else may use each kind.
using MemoryKind = pcidriver::MemoryKind;
using pcidriver::to_string;

// One DMA buffer: its address in this process, its size in bytes and its kind. Views are
// handed out by a Transfer policy (view(i)) and stay valid until its next allocate().
struct BufferView {
	std::byte *data = nullptr;
	std::size_t size = 0;
	MemoryKind kind = MemoryKind::host;
};

inline std::size_t page_size() noexcept
{
	static const std::size_t ps = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	return ps;
}

// Page-aligned, zero-filled anonymous memory (mmap), owned: what CUDA can register and the
// driver can pin. Move-only. Errors throw bufmgr::Error with the errno of mmap.
class HostMemory {
public:
	HostMemory() noexcept = default;
	explicit HostMemory(std::size_t size) : size_(size)
	{
		if (size == 0)
			return;
		void *p = mmap(nullptr, mapped(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw Error(errno, "bufmgr::HostMemory: mmap of " + std::to_string(size) + " bytes");
		data_ = static_cast<std::byte *>(p);
	}
	HostMemory(HostMemory &&o) noexcept
		: data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
	HostMemory &operator=(HostMemory &&o) noexcept
	{
		std::swap(data_, o.data_);
		std::swap(size_, o.size_);
		return *this;
	}
	HostMemory(const HostMemory &) = delete;
	HostMemory &operator=(const HostMemory &) = delete;
	~HostMemory()
	{
		if (data_)
			munmap(data_, mapped());
	}

	std::byte *data() const noexcept { return data_; }
	std::size_t size() const noexcept { return size_; }

private:
	std::size_t mapped() const noexcept { return (size_ + page_size() - 1) / page_size() * page_size(); }

	std::byte *data_ = nullptr;
	std::size_t size_ = 0;
};

} // namespace bufmgr

#endif // BUFMGR_MEMORY_HPP
