// SPDX-License-Identifier: GPL-2.0-or-later
//
// Commands about DMA buffers this invocation holds: mem alloc, mem free, mem list (with the
// kernel driver's counters of the device).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.hpp"
#include "cli_util.hpp"
#include "common/units.hpp"

using tools::format_size;
using tools::strprintf;

namespace cli {

void cmd_mem_alloc(Session &s, const Args &a)
{
	a.max_positionals(2);
	std::string kind = a.at(0, "kind (kmem or umem)");
	std::uint64_t size = size_arg(a, a.at(1, "size"));
	if (kind != "kmem" && kind != "umem")
		a.fail("kind must be kmem or umem");
	if (size == 0 || size % 4)
		a.fail("size must be a positive multiple of 4");
	unsigned id = s.next_id();
	HeldBuffer &slot = s.held()[id];
	try {
		if (kind == "umem") {
			slot.size = (size + 4095) & ~4095ull; // what mmap maps, and munmap unmaps
			void *p = mmap(nullptr, slot.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				throw Failed(std::string("mmap: ") + std::strerror(errno));
			slot.anon = p;
			slot.buf = std::make_unique<mprace::DMABuffer>(s.board(), p, size);
		} else {
			slot.buf = std::make_unique<mprace::DMABuffer>(s.board(), size);
			slot.size = size;
		}
	} catch (...) {
		s.held().erase(id);
		throw;
	}
	std::printf("buffer %u: %s %s, %zu segment(s), bus address 0x%llx\n", id, format_size(size).c_str(),
		    kind == "kmem" ? "kernel memory" : "user memory", slot.buf->segments().size(),
		    static_cast<unsigned long long>(slot.buf->busAddress(0)));
}

void cmd_mem_free(Session &s, const Args &a)
{
	a.max_positionals(1);
	unsigned id = num32(a, a.at(0, "buffer id"), "buffer id");
	if (!s.held().erase(id))
		throw Failed(strprintf("no buffer %u", id));
	if (!s.quiet())
		std::printf("buffer %u freed\n", id);
}

// The kernel driver's counters of the device (/sys/class/pcidriver/fpgaN/, found by the PCI
// address its `device` link points to): what all processes hold through the driver.
static void print_driver_counters(Session &s)
{
	const mprace::BoardInfo &i = s.board().info();
	if (i.emulated() || i.simulated())
		return;
	const std::string cls = "/sys/class/pcidriver";
	for (unsigned n = 0; n < 256; ++n) {
		std::string dir = cls + "/fpga" + std::to_string(n);
		char target[4096];
		ssize_t len = readlink((dir + "/device").c_str(), target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		std::string t(target);
		if (t.substr(t.rfind('/') + 1) != i.name)
			continue;
		std::printf("driver (%s):", dir.c_str());
		for (const char *attr : {"kmem_count", "kmem_bytes", "umem_count", "umem_pinned_bytes"}) {
			std::ifstream f(dir + "/" + attr);
			std::string v;
			if (f >> v)
				std::printf(" %s %s", attr, v.c_str());
		}
		std::printf("\n");
		return;
	}
}

void cmd_mem_list(Session &s, const Args &a)
{
	a.max_positionals(0);
	print_driver_counters(s);
	if (s.held().empty()) {
		std::printf("no buffers held by this invocation (mem alloc creates some; they live until it ends)\n");
		return;
	}
	std::printf("%-4s %-14s %12s %9s  %s\n", "id", "kind", "size", "segments", "bus addresses");
	for (const auto &kv : s.held()) {
		const mprace::DMABuffer &b = *kv.second.buf;
		std::string segs;
		std::size_t shown = 0;
		for (const auto &sg : b.segments()) {
			if (shown++ == 4) {
				segs += " ...";
				break;
			}
			segs += strprintf(" 0x%llx+%s", static_cast<unsigned long long>(sg.busAddress),
					  tools::format_size_short(sg.length).c_str());
		}
		std::printf("%-4u %-14s %12s %9zu %s\n", kv.first, mprace::to_string(b.kind()), format_size(b.size()).c_str(),
			    b.segments().size(), segs.c_str());
	}
}

} // namespace cli
