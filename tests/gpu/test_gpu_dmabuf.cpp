// SPDX-License-Identifier: GPL-2.0
// The direct path's first half on a real GPU: CUDA exports device memory as a dma-buf (the
// device attribute, an fd, its size), and the virtual board refuses that fd with the
// documented error (EOPNOTSUPP: it reaches memory only through CPU mappings, which CUDA's
// dma-bufs do not offer), as do DMABuffer::importDmaBuf, bufmgr::cuda::GpuDirect and
// dmabench's fr/gr (exit 3, "unavailable"). Exits 77 without a GPU, or when the GPU's driver
// does not export dma-bufs (it says which). Where the machine has a udmabuf device, the
// virtual board's import of a CPU-mappable dma-buf is checked too (the QEMU suite checks it
// everywhere).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bufmgr/cuda.hpp"
#include "bufmgr/cuda_direct.hpp"
#include "gpu_test.hpp"
#include "mprace-spec/pattern.h"
#include "vboard/vboard.h"

using gputest::report;
using gputest::thrown;

namespace {

std::string exporter_of(int fd)
{
	char path[64], line[256];
	std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	std::string name;
	if (FILE *f = std::fopen(path, "re")) {
		while (std::fgets(line, sizeof(line), f))
			if (!std::strncmp(line, "exp_name:", 9)) {
				name = line + 9;
				name.erase(0, name.find_first_not_of(" \t"));
				name.erase(name.find_last_not_of("\n") + 1);
			}
		std::fclose(f);
	}
	return name;
}

struct GpuMem {
	explicit GpuMem(std::size_t n) : size(n) { bufmgr::cuda::check(cudaMalloc(&p, n), "cudaMalloc"); }
	~GpuMem() { cudaFree(p); }
	void *p = nullptr;
	std::size_t size;
};

// A udmabuf of `size` bytes over a sealed memfd (its fd in *memfd), or -errno.
int udmabuf_new(std::size_t size, int *memfd)
{
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	int mfd = memfd_create("gpu-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	udmabuf_create c{};
	c.memfd = static_cast<__u32>(mfd);
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.size = size;
	int fd = -EINVAL;
	if (mfd >= 0 && !ftruncate(mfd, static_cast<off_t>(size)) &&
	    !fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0) {
		fd = -errno;
		if (mfd >= 0)
			close(mfd);
	} else {
		*memfd = mfd;
	}
	close(dev);
	return fd;
}

} // namespace

int main()
{
	if (bufmgr::cuda::device_count() == 0) {
		std::printf("# no CUDA GPU: SKIP\n");
		return 77;
	}
	int attr = bufmgr::cuda::dmabuf_export_supported(0);
	std::printf("# CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = %d\n", attr);
	if (!attr) {
		std::printf("# this GPU's driver does not export dma-bufs (NVIDIA's open kernel "
			    "modules do): SKIP\n");
		return 77;
	}
	vboard_register();
	const std::size_t size = 4u << 20;
	GpuMem gpu(size);

	gputest::run("CUDA exports device memory as a dma-buf", [&] {
		int fd = bufmgr::cuda::export_dmabuf(gpu.p, size);
		off_t end = lseek(fd, 0, SEEK_END);
		std::string exp = exporter_of(fd);
		std::printf("# fd %d, %lld bytes, exporter '%s'\n", fd, static_cast<long long>(end), exp.c_str());
		report(fd >= 0, "cuMemGetHandleForAddressRange gives an fd");
		report(end == static_cast<off_t>(size), "the dma-buf is as large as the range",
		       "%lld bytes", static_cast<long long>(end));
		report(!exp.empty(), "the kernel lists it as a dma-buf (fdinfo exp_name)");
		void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		report(m == MAP_FAILED, "the CPU cannot map it (why the virtual board cannot reach it)",
		       "mmap succeeded");
		if (m != MAP_FAILED)
			munmap(m, size);
		close(fd);
		auto e = thrown([&] { bufmgr::cuda::export_dmabuf(static_cast<char *>(gpu.p) + 100, 4096); });
		report(e.err == EINVAL, "a range not on page boundaries is refused with EINVAL",
		       "errno %d: %s", e.err, e.what.c_str());
	});

	gputest::run("the virtual board refuses CUDA's dma-buf with EOPNOTSUPP", [&] {
		int fd = bufmgr::cuda::export_dmabuf(gpu.p, size);
		pd_device *dev = nullptr;
		pd_umem *um = nullptr;
		int rc = pd_open("emu:", &dev);
		if (!rc)
			rc = pd_dmabuf_import(dev, fd, PD_DMA_FROM_DEVICE, &um);
		report(rc == -EOPNOTSUPP && !um, "pd_dmabuf_import: -EOPNOTSUPP", "%d (%s)", rc,
		       pd_strerror(rc));
		pd_close(dev);

		mprace::Board board("emu:");
		auto e = thrown([&] { mprace::DMABuffer::importDmaBuf(board, fd, PD_DMA_FROM_DEVICE); });
		report(e.err == EOPNOTSUPP, "DMABuffer::importDmaBuf throws EOPNOTSUPP", "errno %d: %s",
		       e.err, e.what.c_str());
		close(fd);

		mprace::DMAEngine engine(board);
		bufmgr::cuda::GpuDirect direct(board, engine, bufmgr::cuda::GpuDirect::Direction::to_gpu);
		e = thrown([&] { direct.transfer(gpu.p, 65536); });
		std::printf("# %s\n", e.what.c_str());
		report(e.err == EOPNOTSUPP && e.what.find("cannot reach GPU memory") != std::string::npos,
		       "GpuDirect says the board cannot reach GPU memory", "errno %d: %s", e.err,
		       e.what.c_str());
		report(direct.imports() == 0, "nothing stays imported");
	});

	gputest::run("the virtual board imports a udmabuf (where /dev/udmabuf exists)", [&] {
		int mfd = -1, fd = udmabuf_new(1 << 20, &mfd);
		if (fd < 0) {
			std::printf("# no udmabuf here (%s): skipped\n", std::strerror(-fd));
			return;
		}
		mprace::Board board("emu:");
		mprace::DMAEngine engine(board);
		board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		board.setPatternSeed(77);
		auto buf = mprace::DMABuffer::importDmaBuf(board, fd, PD_DMA_FROM_DEVICE);
		engine.read(buf, 0, 1 << 20);
		void *m = mmap(nullptr, 1 << 20, PROT_READ, MAP_SHARED, mfd, 0);
		report(m != MAP_FAILED && mp_pattern_find_mismatch(m, 1 << 20, 0, 77) < 0,
		       "1 MiB of the board's pattern lands in the memfd");
		if (m != MAP_FAILED)
			munmap(m, 1 << 20);
		close(fd);
		close(mfd);
	});
	return gputest::finish();
}
