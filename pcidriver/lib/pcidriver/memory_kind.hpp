// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Where a buffer's memory comes from: one type for the whole stack (mprace::MemoryKind and
// bufmgr::MemoryKind name it). It decides who else may use the memory: CUDA can register
// (cudaHostRegister) ordinary process memory, including memory the driver has pinned as user
// memory, but not the driver's kernel memory, whose dma_mmap_coherent mapping
// (VM_IO|VM_PFNMAP) cannot be pinned a second time.
#ifndef PCIDRIVER_MEMORY_KIND_HPP
#define PCIDRIVER_MEMORY_KIND_HPP

namespace pcidriver {

enum class MemoryKind {
	host,   // ordinary process memory, not mapped for a device
	user,   // process memory pinned and mapped for the device (pd_umem: an SG list)
	kernel, // the driver's DMA-coherent kernel memory (pd_kmem: one bus address)
	pinned, // process memory page-locked for CUDA (cudaHostRegister)
	imported, // another driver's dma-buf imported for the device (pd_dmabuf_import): an SG
		  // list, no CPU view (GPU memory, udmabuf, DMA-BUF heaps)
	// the spellings of libmprace before the types were one
	Kernel [[deprecated("use MemoryKind::kernel")]] = kernel,
	User [[deprecated("use MemoryKind::user")]] = user,
};

inline const char *to_string(MemoryKind k) noexcept
{
	switch (k) {
	case MemoryKind::host: return "host memory";
	case MemoryKind::user: return "user memory";
	case MemoryKind::kernel: return "kernel memory";
	case MemoryKind::pinned: return "CUDA-pinned host memory";
	case MemoryKind::imported: return "imported dma-buf";
	}
	return "?";
}

} // namespace pcidriver

#endif // PCIDRIVER_MEMORY_KIND_HPP
