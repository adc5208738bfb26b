// SPDX-License-Identifier: LGPL-2.1-or-later
//
// libpcidriver C++ API: RAII owners of the C handles in pcidriver.h.
//
// PciDevice is a shared handle: KernelMemory and UserMemory keep the device open for as long
// as they live, so destruction order never matters. Errors throw pcidriver::Error
// (pcidriver/error.hpp), a std::system_error carrying the errno.
#ifndef PCIDRIVER_PCIDRIVER_HPP
#define PCIDRIVER_PCIDRIVER_HPP

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "pcidriver/error.hpp"
#include "pcidriver/pcidriver.h"

namespace pcidriver {

// Throws Error for a negative return code of the C API; returns non-negative codes.
inline int check(int rc, const char *what)
{
	if (rc < 0)
		throw Error(-rc, what);
	return rc;
}

class PciDevice;

// A DMA-coherent buffer allocated by the driver, mapped into this process.
class KernelMemory {
public:
	KernelMemory(PciDevice &dev, std::size_t size);
	KernelMemory(const KernelMemory &) = delete;
	KernelMemory &operator=(const KernelMemory &) = delete;
	KernelMemory(KernelMemory &&) noexcept = default;
	// Swap, so that the old memory is freed (by o) before its device reference goes.
	KernelMemory &operator=(KernelMemory &&o) noexcept
	{
		std::swap(dev_, o.dev_);
		std::swap(km_, o.km_);
		return *this;
	}
	~KernelMemory() = default;

	void *data() const { return pd_kmem_ptr(km_.get()); }
	std::uint64_t busAddress() const { return pd_kmem_bus_addr(km_.get()); }
	std::size_t size() const { return pd_kmem_size(km_.get()); }
	std::uint32_t id() const { return pd_kmem_id(km_.get()); }
	pd_kmem *handle() const { return km_.get(); }

private:
	struct Free {
		void operator()(pd_kmem *k) const { pd_kmem_free(k); }
	};
	std::shared_ptr<pd_device> dev_; // declared first: released after the memory
	std::unique_ptr<pd_kmem, Free> km_;
};

// An existing user buffer pinned and mapped for DMA, with its scatter-gather list; or
// another driver's dma-buf imported for the device (importDmaBuf), which has no CPU view:
// data() is nullptr, imported() true.
class UserMemory {
public:
	UserMemory(PciDevice &dev, void *addr, std::size_t size, pd_dma_dir dir);
	// pd_dmabuf_import: fd stays the caller's (it may be closed afterwards).
	static UserMemory importDmaBuf(PciDevice &dev, int fd, pd_dma_dir dir);
	UserMemory(const UserMemory &) = delete;
	UserMemory &operator=(const UserMemory &) = delete;
	UserMemory(UserMemory &&) noexcept = default;
	UserMemory &operator=(UserMemory &&o) noexcept
	{
		std::swap(dev_, o.dev_);
		std::swap(um_, o.um_);
		std::swap(sg_, o.sg_);
		return *this;
	}
	~UserMemory() = default;

	void *data() const { return pd_umem_ptr(um_.get()); }
	bool imported() const { return um_ && !data(); }
	std::size_t size() const { return pd_umem_size(um_.get()); }
	std::uint32_t id() const { return pd_umem_id(um_.get()); }
	const std::vector<pd_sg_entry> &sg() const { return sg_; }
	void syncForCpu() { check(pd_umem_sync(um_.get(), PD_SYNC_FOR_CPU), "pd_umem_sync"); }
	void syncForDevice() { check(pd_umem_sync(um_.get(), PD_SYNC_FOR_DEVICE), "pd_umem_sync"); }
	pd_umem *handle() const { return um_.get(); }

private:
	struct Unmap {
		void operator()(pd_umem *u) const { pd_umem_unmap(u); }
	};
	explicit UserMemory(const std::shared_ptr<pd_device> &dev) : dev_(dev) {}
	void adopt(pd_umem *u);
	std::shared_ptr<pd_device> dev_;
	std::unique_ptr<pd_umem, Unmap> um_;
	std::vector<pd_sg_entry> sg_;
};

class PciDevice {
public:
	// name: see pcidriver.h ("" picks the default device).
	explicit PciDevice(const std::string &name = std::string())
	{
		pd_device *d = nullptr;
		int rc = pd_open(name.empty() ? nullptr : name.c_str(), &d);
		if (rc < 0) // pd_open_error() names the device and what to do
			throw Error(-rc, *pd_open_error() ? std::string(pd_open_error())
							  : "pd_open " + name);
		dev_.reset(d, pd_close);
	}

	struct pd_info info() const
	{
		struct pd_info i;
		check(pd_info(dev_.get(), &i), "pd_info");
		return i;
	}

	// Maps a whole BAR (kept until the device closes); returns its address, size in *size.
	void *mapBar(unsigned int bar, unsigned int flags = 0, std::size_t *size = nullptr)
	{
		void *addr = nullptr;
		check(pd_map_bar(dev_.get(), bar, flags, &addr, size), "pd_map_bar");
		return addr;
	}

	pd_regs regs(unsigned int bar) const
	{
		pd_regs r;
		check(pd_regs_get(dev_.get(), bar, &r), "pd_regs_get");
		return r;
	}

	std::uint32_t cfgRead32(std::uint32_t offset) const
	{
		std::uint32_t v = 0;
		check(pd_cfg_read(dev_.get(), offset, &v, sizeof(v)), "pd_cfg_read");
		return v;
	}

	void cfgWrite32(std::uint32_t offset, std::uint32_t v)
	{
		check(pd_cfg_write(dev_.get(), offset, &v, sizeof(v)), "pd_cfg_write");
	}

	// Number of events (>= 1), or 0 when the timeout expired.
	int waitIrq(unsigned int source, std::uint32_t timeout_ms = PD_WAIT_FOREVER)
	{
		int rc = pd_irq_wait(dev_.get(), source, timeout_ms);
		return rc == -ETIMEDOUT ? 0 : check(rc, "pd_irq_wait");
	}

	void clearIrq(unsigned int source) { check(pd_irq_clear(dev_.get(), source), "pd_irq_clear"); }

	pd_device *handle() const { return dev_.get(); }
	const std::shared_ptr<pd_device> &shared() const { return dev_; }

private:
	std::shared_ptr<pd_device> dev_;
};

inline KernelMemory::KernelMemory(PciDevice &dev, std::size_t size) : dev_(dev.shared())
{
	pd_kmem *k = nullptr;
	check(pd_kmem_alloc(dev_.get(), size, &k), "pd_kmem_alloc");
	km_.reset(k);
}

inline UserMemory::UserMemory(PciDevice &dev, void *addr, std::size_t size, pd_dma_dir dir)
	: dev_(dev.shared())
{
	pd_umem *u = nullptr;
	check(pd_umem_map(dev_.get(), addr, size, dir, &u), "pd_umem_map");
	adopt(u);
}

namespace detail {
// What pd_dmabuf_import's error means for this fd and direction, in words.
inline std::string dmabufImportError(int fd, pd_dma_dir dir, int err)
{
	std::string what = "pd_dmabuf_import of fd " + std::to_string(fd);
	switch (err) {
	case EBADF:
		return what + ": not an open file descriptor";
	case EINVAL:
		if (dir != PD_DMA_TO_DEVICE && dir != PD_DMA_FROM_DEVICE && dir != PD_DMA_BIDIRECTIONAL)
			return what + ": unknown direction " + std::to_string(static_cast<int>(dir));
		return what + ": not a dma-buf (export the memory first: udmabuf, a DMA-BUF heap, "
			      "cuMemGetHandleForAddressRange), or larger than PD_UMEM_MAX_SIZE";
	case EACCES:
		return what + ": the dma-buf is read-only (exported without write access): the device "
			      "may only read it (PD_DMA_TO_DEVICE)";
	case E2BIG:
		return what + ": its segments are longer than a bounce buffer (swiotlb) maps at once";
	case ERANGE:
		return what + ": memory beyond the device's DMA mask (dma_bits), with no bounce "
			      "buffer it can reach";
	case ENOMEM:
		return what + ": over RLIMIT_MEMLOCK, or out of memory, IOVA or bounce-buffer space";
	case EOPNOTSUPP:
		return what + ": this backend cannot import it (an older pcidriver.ko; the virtual "
			      "board: memory the CPU cannot map)";
	default:
		return what;
	}
}
} // namespace detail

inline UserMemory UserMemory::importDmaBuf(PciDevice &dev, int fd, pd_dma_dir dir)
{
	UserMemory m(dev.shared());
	pd_umem *u = nullptr;
	int rc = pd_dmabuf_import(m.dev_.get(), fd, dir, &u);
	if (rc < 0)
		throw Error(-rc, detail::dmabufImportError(fd, dir, -rc));
	m.adopt(u);
	return m;
}

inline void UserMemory::adopt(pd_umem *u)
{
	um_.reset(u);
	sg_.resize(pd_umem_sg_count(u));
	check(pd_umem_sglist(u, sg_.data(), sg_.size()), "pd_umem_sglist");
}

} // namespace pcidriver

#endif // PCIDRIVER_PCIDRIVER_HPP
