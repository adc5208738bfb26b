// SPDX-License-Identifier: LGPL-2.1-or-later
//
// bufmgr::cuda::GpuDirect: board <-> GPU memory with no host buffer in between, the direct path
// (the thesis' FR: board -> GPU memory, GR: GPU memory -> board), beside the indirect pipeline
// of cuda.hpp (FpgaToGpu / GpuToFpga), with the same streaming call: transfer(device pointer,
// bytes).
//
// How: CUDA exports the GPU allocation that holds the destination as a dma-buf
// (cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), the board's driver
// imports it (mprace::DMABuffer::importDmaBuf -> pd_dmabuf_import), and the engine moves the
// data between the board and GPU memory peer to peer. Each allocation is imported once, on
// the first transfer that touches it (or prepare()), and stays imported until the GpuDirect is
// destroyed: allocations must outlive it (freeing one while imported is the same mistake as
// freeing a DMA buffer in use).
//
// Requirements (docs/gpu-direct.md): a GPU and driver that export dma-bufs
// (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: NVIDIA's open kernel modules), allocations from
// cudaMalloc/cuMemAlloc whose start and size are multiples of the host page (cudaMalloc of
// >= 2 MiB is), a board driver that imports dma-bufs (pcidriver.ko), and a platform on which
// the board reaches the GPU's memory window (peer-to-peer under one PCIe switch, or through a
// root complex that forwards it; the IOMMU and ACS must allow it). Where one is missing the
// call throws bufmgr::Error saying which: EOPNOTSUPP when the GPU cannot export or the board
// cannot reach exported memory (the virtual board reaches only what the CPU can map, never
// GPU memory), the exporter's or driver's errno otherwise.
//
// Thread-safety: one thread per GpuDirect (like the engine calls it makes, which are
// thread-safe themselves).
#ifndef BUFMGR_CUDA_DIRECT_HPP
#define BUFMGR_CUDA_DIRECT_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#include "bufmgr/cuda.hpp"
#include "bufmgr/error.hpp"
#include "mprace/mprace.hpp"

namespace bufmgr {
namespace cuda {

// The driver API calls the direct path needs, found through the runtime
// (cudaGetDriverEntryPointByVersion), so that a program linking only cudart (static) works.
class DriverApi {
public:
	// Throws Error(ENODEV) without a driver, EOPNOTSUPP when the driver lacks a call.
	static const DriverApi &get()
	{
		static const DriverApi api;
		if (!api.why_.empty())
			throw Error(api.errno_, api.why_);
		return api;
	}
	CUresult (*getAttribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
	CUresult (*getHandle)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
			      unsigned long long) = nullptr;
	CUresult (*getAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr) = nullptr;

private:
	DriverApi()
	{
		std::string no_gpu = unavailable_reason();
		if (!no_gpu.empty()) {
			errno_ = ENODEV;
			why_ = "bufmgr::cuda::GpuDirect: " + no_gpu;
			return;
		}
		if (!find("cuDeviceGetAttribute", &getAttribute, 12000) ||
		    !find("cuMemGetHandleForAddressRange", &getHandle, 12000) ||
		    !find("cuMemGetAddressRange", &getAddressRange, 12000)) {
			errno_ = EOPNOTSUPP;
			why_ = "bufmgr::cuda::GpuDirect: the CUDA driver does not provide " +
			       missing_ + " (needed to export GPU memory as a dma-buf)";
		}
	}
	template <class F> bool find(const char *name, F *fn, unsigned int version)
	{
		void *p = nullptr;
		cudaDriverEntryPointQueryResult q{};
		if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) !=
			    cudaSuccess ||
		    q != cudaDriverEntryPointSuccess || !p) {
			(void)cudaGetLastError();
			missing_ = name;
			return false;
		}
		*fn = reinterpret_cast<F>(p);
		return true;
	}
	int errno_ = 0;
	std::string why_, missing_;
};

// Whether `device` exports its memory as dma-bufs (the driver's answer; false without one).
inline bool dmabuf_export_supported(int device = 0)
{
	try {
		int v = 0;
		return DriverApi::get().getAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
						     device) == CUDA_SUCCESS && v;
	} catch (const Error &) {
		return false;
	}
}

// The dma-buf of GPU memory [dev, dev + size): a file descriptor the caller owns (close it).
// \pre dev and size multiples of the host page, inside one allocation. Throws Error:
// EOPNOTSUPP when the GPU or driver cannot export, EINVAL for a range CUDA refuses.
inline int export_dmabuf(const void *dev, std::size_t size)
{
	const DriverApi &api = DriverApi::get();
	int fd = -1;
	CUresult r = api.getHandle(&fd, reinterpret_cast<CUdeviceptr>(dev), size,
				   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r == CUDA_SUCCESS)
		return fd;
	if (r == CUDA_ERROR_NOT_SUPPORTED)
		throw Error(EOPNOTSUPP, "bufmgr::cuda: this GPU or driver does not export dma-bufs "
					"(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: NVIDIA's open "
					"kernel modules export them)");
	throw Error(EINVAL, "bufmgr::cuda: cuMemGetHandleForAddressRange refused " +
				    std::to_string(size) + " bytes of GPU memory (CUresult " +
				    std::to_string(static_cast<int>(r)) +
				    "): start and size must be multiples of the host page, in one "
				    "cudaMalloc allocation");
}

class GpuDirect {
public:
	enum class Direction { to_gpu, from_gpu }; // FR, GR

	GpuDirect(mprace::Board &board, mprace::DMAEngine &engine, Direction dir)
		: board_(board), engine_(engine), dir_(dir) {}
	GpuDirect(const GpuDirect &) = delete;
	GpuDirect &operator=(const GpuDirect &) = delete;
	// Cancels nothing itself: each DMABuffer aborts its own transfers as it goes.
	~GpuDirect() = default;

	// Imports the allocation that holds [dev, dev + bytes) now, so that the first transfer
	// pays no set-up. \post transfers into it need no further import.
	void prepare(const void *dev, std::size_t bytes) { (void)find(dev, bytes); }

	// Moves `bytes` (a multiple of 4) from the board into GPU memory at dev (to_gpu), or from
	// dev to the board (from_gpu), in one engine transfer per segment run of the import.
	// \pre dev inside a cudaMalloc allocation that lives as long as this object.
	// \post the data is in place (to_gpu: visible to kernels launched afterwards). Returns
	// bytes.
	std::size_t transfer(void *dev, std::size_t bytes)
	{
		if (!bytes)
			return 0;
		Import &imp = find(dev, bytes);
		const std::uint64_t off = reinterpret_cast<CUdeviceptr>(dev) - imp.base;
		if (dir_ == Direction::to_gpu)
			engine_.read(*imp.buf, off, bytes);
		else
			engine_.write(*imp.buf, off, bytes);
		return bytes;
	}

	std::size_t imports() const noexcept { return imports_.size(); }

private:
	struct Import {
		CUdeviceptr base = 0;
		std::size_t size = 0;
		std::unique_ptr<mprace::DMABuffer> buf;
	};

	Import &find(const void *dev, std::size_t bytes)
	{
		const auto p = reinterpret_cast<CUdeviceptr>(dev);
		for (Import &i : imports_)
			if (p >= i.base && p - i.base <= i.size && bytes <= i.size - (p - i.base))
				return i;
		const DriverApi &api = DriverApi::get();
		Import imp;
		if (api.getAddressRange(&imp.base, &imp.size, p) != CUDA_SUCCESS)
			throw Error(EINVAL, "bufmgr::cuda::GpuDirect: the address is not GPU memory "
					    "allocated with cudaMalloc");
		if (p - imp.base > imp.size || bytes > imp.size - (p - imp.base))
			throw Error(ERANGE, "bufmgr::cuda::GpuDirect: " + std::to_string(bytes) +
						    " bytes run past the end of their GPU allocation");
		const int fd = export_dmabuf(reinterpret_cast<void *>(imp.base), imp.size);
		try {
			imp.buf = std::make_unique<mprace::DMABuffer>(mprace::DMABuffer::importDmaBuf(
				board_, fd,
				dir_ == Direction::to_gpu ? PD_DMA_FROM_DEVICE : PD_DMA_TO_DEVICE));
		} catch (const Error &e) {
			::close(fd);
			if (e.code().value() != EOPNOTSUPP)
				throw;
			throw Error(EOPNOTSUPP,
				    std::string("bufmgr::cuda::GpuDirect: the board cannot reach GPU "
						"memory (") + e.what() +
					    "): the virtual board reaches only memory the CPU can map, "
					    "and CUDA's dma-bufs cannot be mapped; a board behind "
					    "pcidriver.ko can");
		} catch (...) {
			::close(fd);
			throw;
		}
		::close(fd); // the import holds the dma-buf
		imports_.push_back(std::move(imp));
		return imports_.back();
	}

	mprace::Board &board_;
	mprace::DMAEngine &engine_;
	Direction dir_;
	std::vector<Import> imports_;
};

} // namespace cuda
} // namespace bufmgr

#endif // BUFMGR_CUDA_DIRECT_HPP
