// SPDX-License-Identifier: GPL-2.0
// libmprace without data movement: opening and identifying a board, registers, buffers, the
// descriptor ring and splitting, and every misuse error of the C++ API.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <vector>

#include "mprace/spec.h"

#include "test_mprace.hpp"

using namespace mptest;

// ---- splitting (no device) ----

// The bus address of buffer byte `off`, by walking the segments: the reference the splitter
// is checked against.
static std::uint64_t busOf(const std::vector<Segment> &segs, std::uint64_t off)
{
	auto it = std::upper_bound(segs.begin(), segs.end(), off,
				   [](std::uint64_t o, const Segment &s) { return o < s.offset; });
	ck_assert_msg(it != segs.begin(), "offset %" PRIu64 " before the segments", off);
	--it;
	ck_assert_msg(off < it->offset + it->length, "offset %" PRIu64 " outside the segments", off);
	return it->busAddress + (off - it->offset);
}

static void checkSplit(const std::vector<Segment> &segs, std::uint64_t off, std::uint64_t len,
		       std::uint32_t max_len)
{
	SGSplitter sp(segs, off, len, max_len);
	DescriptorChunk c;
	std::uint64_t pos = off;
	std::size_t n = 0;
	while (sp.next(c)) {
		n++;
		ck_assert_uint_gt(c.length, 0);
		ck_assert_uint_le(c.length, max_len);
		ck_assert_uint_eq(c.length % MP_ENGINE_GRANULE, 0);
		ck_assert_uint_eq(c.busAddress % MP_ENGINE_GRANULE, 0);
		// The chunk is contiguous in bus space: its first and last byte belong to it.
		ck_assert_uint_eq(c.busAddress, busOf(segs, pos));
		ck_assert_uint_eq(c.busAddress + c.length - 1, busOf(segs, pos + c.length - 1));
		pos += c.length;
	}
	ck_assert_uint_eq(pos, off + len);
	ck_assert_uint_eq(n, SGSplitter::count(segs, off, len, max_len));
}

START_TEST(test_split_kernel_memory)
{
	std::vector<Segment> one{{0x10000000ull, 256 * MiB, 0}};
	// 40 MiB from offset 4: 16 + 16 + 8 MiB.
	SGSplitter sp(one, 4, 40 * MiB, MP_ENGINE_MAX_DESC_LEN);
	DescriptorChunk c;
	ck_assert(sp.next(c));
	ck_assert_uint_eq(c.busAddress, 0x10000004ull);
	ck_assert_uint_eq(c.length, 16 * MiB);
	ck_assert(sp.next(c));
	ck_assert_uint_eq(c.busAddress, 0x10000004ull + 16 * MiB);
	ck_assert(sp.next(c));
	ck_assert_uint_eq(c.length, 8 * MiB);
	ck_assert(!sp.next(c));
	ck_assert(sp.empty());
	// Exactly at the descriptor limit and one granule around it.
	ck_assert_uint_eq(SGSplitter::count(one, 0, 16 * MiB), 1);
	ck_assert_uint_eq(SGSplitter::count(one, 0, 16 * MiB + 4), 2);
	ck_assert_uint_eq(SGSplitter::count(one, 0, 16 * MiB - 4), 1);
	ck_assert_uint_eq(SGSplitter::count(one, 0, 256 * MiB), 16);
	ck_assert_uint_eq(SGSplitter::count(one, 4, 4), 1);
	for (std::uint64_t off : {std::uint64_t(0), std::uint64_t(4), std::uint64_t(4092), std::uint64_t(16 * MiB - 4)})
		for (std::uint64_t len : {std::uint64_t(4), std::uint64_t(4096), std::uint64_t(16 * MiB),
						   std::uint64_t(16 * MiB + 4), std::uint64_t(33 * MiB + 12)})
			checkSplit(one, off, len, MP_ENGINE_MAX_DESC_LEN);
}
END_TEST

START_TEST(test_split_scattered)
{
	// A user buffer starting 0x234 into its first page, pages scattered, some runs merged.
	std::mt19937_64 rng(42);
	std::vector<Segment> segs;
	std::uint64_t off = 0;
	std::uint64_t first = 4096 - 0x234;
	segs.push_back({0x7f0000000234ull, first, 0});
	off += first;
	for (int i = 0; i < 300; i++) {
		// Mostly short runs; every 50th beyond the 16 MiB descriptor limit.
		std::uint64_t pages = i % 50 == 7 ? 4097 + rng() % 2000 : 1 + rng() % 8;
		std::uint64_t bus = (0x100000000ull + (rng() % 0x100000) * 4096) << (i % 3);
		segs.push_back({bus, pages * 4096, off});
		off += pages * 4096;
	}
	segs.push_back({0xabc000ull, 0x444, off}); // partial last page
	off += 0x444;
	for (int k = 0; k < 100; k++) {
		std::uint64_t o = (rng() % (off / 4)) * 4;
		std::uint64_t l = 4 + (rng() % ((off - o) / 4)) * 4;
		if (o + l > off)
			l = off - o;
		checkSplit(segs, o, l, MP_ENGINE_MAX_DESC_LEN);
		if (l < 8 * MiB)
			checkSplit(segs, o, l, 4096);
	}
	checkSplit(segs, 0, off, MP_ENGINE_MAX_DESC_LEN);
	checkSplit(segs, off - 4, 4, MP_ENGINE_MAX_DESC_LEN);
}
END_TEST

START_TEST(test_errno_mapping)
{
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_NONE), 0);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_BUS_ERROR), EIO);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_TIMEOUT), ETIMEDOUT);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_ABORTED), ECANCELED);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_DESC_LENGTH), EPROTO);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_DESC_ALIGN), EPROTO);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_DESC_RESERVED), EPROTO);
	ck_assert_int_eq(errnoFromEngineError(MP_ERR_RING_CONFIG), EPROTO);
	ck_assert_int_eq(errnoFromEngineError(200), EIO);
	DMAError e(EIO, MP_ERR_BUS_ERROR, Channel::H2C, 12, "x");
	const std::system_error &se = e; // catchable as system_error with the errno
	ck_assert_int_eq(se.code().value(), EIO);
	ck_assert(se.code().category() == std::generic_category());
	ck_assert_str_eq(e.engineErrorName(), "BUS_ERROR");
}
END_TEST

// ---- board ----

START_TEST(test_board_identify)
{
	Board b("emu:");
	const BoardInfo &i = b.info();
	ck_assert(b.isOpen());
	ck_assert(i.emulated());
	ck_assert(i.isOurEngine());
	ck_assert_uint_eq(i.magic, MP_ENGINE_MAGIC);
	ck_assert_uint_eq(i.versionMajor, MP_ENGINE_VERSION_MAJOR);
	ck_assert_uint_eq(i.capsRaw, b.getRegister(MP_REG_CAPS));
	ck_assert_uint_eq(i.caps.c2hChannels, 1);
	ck_assert_uint_eq(i.caps.h2cChannels, 1);
	ck_assert(i.caps.patternGenerator && i.caps.checker && i.caps.loopback);
	ck_assert_uint_ge(i.caps.maxPayload, 128);
	ck_assert_uint_ge(i.caps.maxReadRequest, 128);
	ck_assert_uint_gt(i.clockMHz, 0);
	ck_assert_uint_eq(i.pci.vendor, MP_ID_VENDOR);
	ck_assert_uint_eq(i.pci.device, MP_ID_DEVICE);
	BoardInfo again = b.identify();
	ck_assert_uint_eq(again.capsRaw, i.capsRaw);
	ck_assert_uint_eq(b.barSize(0), i.pci.bar[0].size);
	ck_assert_uint_ge(b.barSize(0), MP_ENGINE_BAR0_SIZE);
	// The MSI grant shows in CAPS and decides the vectors the engine uses.
	Board one("emu:msi=1");
	ck_assert_uint_eq(one.info().caps.msiVectors, 1);
	Board four("emu:msi=4");
	ck_assert_uint_eq(four.info().caps.msiVectors, 4);
}
END_TEST

START_TEST(test_board_open_errors)
{
	ck_assert_errno(Board("emu:no_such_option=1"), EINVAL);
	ck_assert_int_ne(errnoOf([] { Board("/dev/fpga-not-a-device"); }), 0);
	ck_assert_errno(Board("emu:", Board::NoCheck << 5), EINVAL);
	std::vector<std::string> names = Board::list();
	ck_assert(!names.empty());
	// the backends after the kernel devices: the virtual board and the simulated RTL
	const auto emu = std::find(names.begin(), names.end(), "emu:");
	ck_assert(emu != names.end());
	ck_assert(std::find(names.begin(), names.end(), "sim:") != names.end());
	ck_assert_errno(Board::byIndex(static_cast<unsigned int>(names.size())), ENODEV);
	Board listed = Board::byIndex(static_cast<unsigned int>(emu - names.begin()));
	ck_assert(listed.info().emulated());
	// NoCheck opens anything; its engine still has to identify before DMA.
	Board raw("emu:", Board::NoCheck);
	ck_assert_uint_eq(raw.getRegister(MP_REG_MAGIC), MP_ENGINE_MAGIC);
}
END_TEST

START_TEST(test_registers)
{
	Board b("emu:");
	b.setRegister(MP_REG_SCRATCH, 0xdeadbeef);
	ck_assert_uint_eq(b.getRegister(MP_REG_SCRATCH), 0xdeadbeef);
	b.setRegister(MP_REG_SCRATCH, 0x12345678);
	ck_assert_uint_eq(b.getRegister(MP_REG_SCRATCH), 0x12345678);
	// Unlisted offsets read 0 and ignore writes.
	b.setRegister(0x7f0, 0xffffffff);
	ck_assert_uint_eq(b.getRegister(0x7f0), 0);
	// Channel helpers address the channel block.
	b.setChannelRegister(Channel::H2C, MP_CHREG_TIMEOUT_US, 1234);
	ck_assert_uint_eq(b.getRegister(MP_CH_H2C_BASE + MP_CHREG_TIMEOUT_US), 1234);
	ck_assert_uint_eq(b.getChannelRegister(Channel::H2C, MP_CHREG_TIMEOUT_US), 1234);
	// Misuse
	ck_assert_errno(b.getRegister(2), EINVAL);
	ck_assert_errno(b.setRegister(MP_REG_SCRATCH + 1, 0), EINVAL);
	ck_assert_errno(b.getRegister(static_cast<std::uint32_t>(b.registers().size)), EINVAL);
	ck_assert_errno(b.getRegister(0xfffffffc), EINVAL);
	// Bulk BAR copies go through the same registers.
	std::uint32_t words[2] = {0, 0};
	b.readBar(0, MP_REG_MAGIC, words, sizeof(words));
	ck_assert_uint_eq(words[0], MP_ENGINE_MAGIC);
	ck_assert_errno(b.readBar(0, 2, words, 4), EINVAL);
	ck_assert_errno(b.readBar(PD_MAX_BARS, 0, words, 4), EINVAL);
	std::uint32_t v = 0xa5a5a5a5;
	b.writeBar(0, MP_REG_SCRATCH, &v, 4);
	ck_assert_uint_eq(b.getRegister(MP_REG_SCRATCH), v);
	// The cycle counter runs.
	std::uint64_t c0 = b.cycles();
	std::uint64_t c1 = b.cycles();
	ck_assert_uint_ge(c1, c0);
	// Global reset brings SCRATCH back to its reset value.
	b.setRegister(MP_REG_SCRATCH, 77);
	b.reset();
	ck_assert_uint_ne(b.getRegister(MP_REG_SCRATCH), 77);
}
END_TEST

START_TEST(test_closed_board)
{
	Board b("emu:");
	Board moved(std::move(b));
	ck_assert(!b.isOpen());
	ck_assert_errno(b.getRegister(MP_REG_MAGIC), ENODEV);
	ck_assert_errno(b.info(), ENODEV);
	moved.close();
	moved.close(); // idempotent
	ck_assert(!moved.isOpen());
	ck_assert_errno(moved.getRegister(MP_REG_MAGIC), ENODEV);
	ck_assert_errno(moved.setRegister(MP_REG_SCRATCH, 1), ENODEV);
	ck_assert_errno(moved.reset(), ENODEV);
	ck_assert_errno(moved.identify(), ENODEV);
	ck_assert_errno(moved.setTestRouting(C2HSource::Pattern, H2CSink::Checker), ENODEV);
	ck_assert_errno(DMABuffer(moved, 4096), ENODEV);
	ck_assert_errno(DMAEngine(moved), ENODEV);
}
END_TEST

START_TEST(test_test_logic_registers)
{
	Board b("emu:");
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	ck_assert(b.c2hSource() == C2HSource::Pattern);
	ck_assert(b.h2cSink() == H2CSink::Checker);
	b.setTestRouting(C2HSource::Loopback, H2CSink::Loopback);
	ck_assert(b.c2hSource() == C2HSource::Loopback);
	ck_assert(b.h2cSink() == H2CSink::Loopback);
	ck_assert_errno(b.setTestRouting(static_cast<C2HSource>(3), H2CSink::User), EINVAL);
	b.setPatternSeed(100);
	ck_assert_uint_eq(b.getRegister(MP_REG_PATGEN_SEED), 100);
	b.setPatternRate(250);
	ck_assert_uint_eq(b.getRegister(MP_REG_PATGEN_RATE), 250);
	b.resetChecker(5);
	CheckerCounts c = b.checker();
	ck_assert_uint_eq(c.words, 0);
	ck_assert_uint_eq(c.errors, 0);
	// With an engine open the routing still changes (channels halted and restarted).
	DMAEngine e(b);
	b.setTestRouting(C2HSource::Pattern, H2CSink::Checker);
	ck_assert(b.c2hSource() == C2HSource::Pattern);
}
END_TEST


// ---- identification against other engines ----
// The virtual board always identifies as our engine. To see what the library does with another
// MAGIC or VERSION, this executable interposes pd_regs_get (ELF symbol interposition: libmprace
// calls it through the PLT) and, while `faking` is set, wraps the virtual board's register read
// callback so that MAGIC and VERSION read other values.
namespace {
std::atomic<bool> faking{false};
std::atomic<std::uint32_t> fake_magic{0}, fake_version{0};
std::uint32_t (*real_read32)(void *, std::uint64_t);

std::uint32_t fakeRead32(void *ctx, std::uint64_t off)
{
	if (off == MP_REG_MAGIC)
		return fake_magic.load();
	if (off == MP_REG_VERSION)
		return fake_version.load();
	return real_read32(ctx, off);
}
} // namespace

extern "C" int pd_regs_get(pd_device *dev, unsigned int bar, struct pd_regs *regs)
{
	using Fn = int (*)(pd_device *, unsigned int, struct pd_regs *);
	static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pd_regs_get"));
	int rc = real(dev, bar, regs);
	if (rc == 0 && faking.load() && bar == 0 && !regs->mmio && regs->read32) {
		real_read32 = regs->read32;
		regs->read32 = fakeRead32;
	}
	return rc;
}

START_TEST(test_identification_checks)
{
	faking = true;
	fake_magic = MP_ENGINE_MAGIC;
	fake_version = ((MP_ENGINE_VERSION_MAJOR + 1) << 16) | 0;
	ck_assert_errno(Board("emu:"), EPROTONOSUPPORT);
	try {
		Board b("emu:");
	} catch (const Error &e) {
		ck_assert_msg(std::strstr(e.what(), "2.0") != nullptr, "message: %s", e.what());
	}
	fake_version = (MP_ENGINE_VERSION_MAJOR << 16) | 7; // a newer minor version only adds
	{
		Board b("emu:");
		ck_assert_uint_eq(b.info().versionMinor, 7);
		DMAEngine e(b);
	}
	fake_version = (MP_ENGINE_VERSION_MAJOR << 16);
	fake_magic = 0x12345678;
	try {
		Board b("emu:");
		ck_abort_msg("a wrong MAGIC was accepted");
	} catch (const Error &e) {
		ck_assert_int_eq(e.code().value(), ENODEV);
		ck_assert_msg(std::strstr(e.what(), "0x12345678") != nullptr, "message: %s", e.what());
	}
	// NoCheck opens it for bring-up, but no engine runs on it.
	Board raw("emu:", Board::NoCheck);
	ck_assert(!raw.info().isOurEngine());
	ck_assert_uint_eq(raw.getRegister(MP_REG_MAGIC), 0x12345678);
	ck_assert_uint_eq(raw.getRegister(MP_REG_SCRATCH), raw.getRegister(MP_REG_SCRATCH));
	ck_assert_errno(DMAEngine(raw), ENODEV);
	faking = false;
}
END_TEST

// ---- buffers and ring ----

START_TEST(test_kernel_buffer)
{
	Board b("emu:");
	DMABuffer buf(b, 64 * KiB);
	ck_assert(buf.isKernelMemory());
	ck_assert(buf.kind() == MemoryKind::kernel);
	ck_assert_uint_eq(buf.size(), 64 * KiB);
	ck_assert_ptr_nonnull(buf.data());
	ck_assert_uint_eq(buf.segments().size(), 1);
	ck_assert_uint_eq(buf.segments()[0].length, 64 * KiB);
	ck_assert_uint_eq(buf.busAddress(100), buf.segments()[0].busAddress + 100);
	ck_assert_errno(buf.busAddress(64 * KiB), ERANGE);
	ck_assert_ptr_nonnull(buf.kernelMemory());
	ck_assert_ptr_null(buf.userMemory());
	std::memset(buf.data(), 0x5a, buf.size()); // it is mapped
	buf.syncForCpu();                           // no-ops for kernel memory
	buf.syncForDevice();
	ck_assert_uint_eq(buf.activeTransfers(), 0);
	ck_assert_errno(DMABuffer(b, 0), EINVAL);
	ck_assert_errno(DMABuffer(b, PD_KMEM_MAX_SIZE + 1), EINVAL);
	DMABuffer moved(std::move(buf));
	ck_assert_ptr_null(buf.data());
	ck_assert_uint_eq(moved.size(), 64 * KiB);
}
END_TEST

// Only a dma-buf can be imported (the QEMU suite imports real ones, into pcidriver.ko and
// the virtual board); anything else is refused with the errno the docs give.
START_TEST(test_import_refuses_non_dmabuf)
{
	Board b("emu:");
	int mfd = memfd_create("plain", MFD_CLOEXEC);
	ck_assert_int_ge(mfd, 0);
	ck_assert_int_eq(ftruncate(mfd, 64 * KiB), 0);
	ck_assert_errno(DMABuffer::importDmaBuf(b, mfd), EINVAL);
	ck_assert_errno(DMABuffer::importDmaBuf(b, -1), EBADF);
	close(mfd);
	ck_assert_errno(DMABuffer::importDmaBuf(b, mfd, PD_DMA_TO_DEVICE), EBADF);
	b.close();
	ck_assert_errno(DMABuffer::importDmaBuf(b, 0), ENODEV);
}
END_TEST

namespace {
std::string messageOf(const std::function<void()> &f)
{
	try {
		f();
	} catch (const std::exception &e) {
		return e.what();
	}
	return "";
}
} // namespace

// Refusals say what was wrong with this request, and advise only where the advice fits.
START_TEST(test_buffer_refusal_messages)
{
	Board b("emu:");
	std::string m = messageOf([&] { DMABuffer buf(b, 0); });
	ck_assert_msg(m.find("not 0 bytes") != std::string::npos && m.find("larger buffers") == std::string::npos,
		      "%s", m.c_str());
	m = messageOf([&] { DMABuffer buf(b, std::size_t(PD_KMEM_MAX_SIZE) + 4); });
	ck_assert_msg(m.find("larger buffers") != std::string::npos, "%s", m.c_str());
	int fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	m = messageOf([&] { DMABuffer::importDmaBuf(b, fd, PD_DMA_TO_DEVICE); });
	ck_assert_msg(m.find("not a dma-buf") != std::string::npos, "%s", m.c_str());
	close(fd);
	m = messageOf([&] { DMABuffer::importDmaBuf(b, fd, PD_DMA_TO_DEVICE); });
	ck_assert_msg(m.find("not an open file descriptor") != std::string::npos, "%s", m.c_str());
}
END_TEST

START_TEST(test_user_buffer)
{
	Board b("emu:sg=pages");
	Anon mem(1 * MiB);
	DMABuffer buf(b, mem.data() + 0x104, 256 * KiB, PD_DMA_FROM_DEVICE);
	ck_assert(buf.isUserMemory());
	ck_assert(buf.direction() == PD_DMA_FROM_DEVICE);
	ck_assert_ptr_eq(buf.data(), mem.data() + 0x104);
	ck_assert_ptr_nonnull(buf.userMemory());
	ck_assert_ptr_null(buf.kernelMemory());
	std::uint64_t total = 0;
	for (const Segment &s : buf.segments()) {
		ck_assert_uint_eq(s.offset, total);
		total += s.length;
	}
	ck_assert_uint_eq(total, 256 * KiB);
	ck_assert_uint_ge(buf.segments().size(), 64); // one per page (sg=pages), 65 touched
	ck_assert_uint_eq(buf.busAddress(0), buf.segments()[0].busAddress);
	buf.syncForDevice();
	buf.syncForCpu();
	ck_assert_errno(DMABuffer(b, mem.data() + 2, 4096), EINVAL);  // not 4-byte aligned
	ck_assert_errno(DMABuffer(b, nullptr, 4096), EINVAL);
	ck_assert_errno(DMABuffer(b, mem.data(), 0), EINVAL);
}
END_TEST

START_TEST(test_descriptor_ring)
{
	Board b("emu:");
	DMADescriptorList ring(b, 512);
	ck_assert_uint_eq(ring.size(), 512);
	ck_assert_uint_eq(ring.pages(), 4);
	ck_assert_uint_eq(DMADescriptorList::perPage, 128);
	ck_assert_uint_eq(ring.busAddress() % MP_ENGINE_DESC_SIZE, 0);
	for (std::uint32_t i = 0; i < ring.size(); i++) {
		const DMADescriptor &d = ring[i];
		ck_assert_uint_eq(d.index(), i);
		ck_assert_uint_eq(d.busAddress(), ring.busAddress() + 32ull * i);
		ck_assert_uint_eq(d.busAddress() / 4096, (d.busAddress() + 31) / 4096); // no straddling
		ck_assert_ptr_eq(d.native(), static_cast<mp_hw_desc *>(ring.memory().data()) + i);
		ck_assert(!d.record().done());
	}
	ck_assert_ptr_eq(&ring.at(512 + 3), &ring[3]);
	DMADescriptor &d = ring[7];
	d.set(0x1234567890ull, 4096, MP_DESC_CTRL_IRQ_MASK, 0xfeedull);
	ck_assert_uint_eq(d.address(), 0x1234567890ull);
	ck_assert_uint_eq(d.length(), 4096);
	ck_assert_uint_eq(d.control(), MP_DESC_CTRL_IRQ_MASK);
	ck_assert_uint_eq(d.cookie(), 0xfeedull);
	ck_assert_uint_eq(mp_desc_check(d.native()), MP_ERR_NONE);
	d.native()->result_status = MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_ERROR_MASK |
				    (MP_ERR_BUS_ERROR << MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT);
	d.native()->result_bytes = 64;
	ck_assert(d.record().done());
	ck_assert(d.record().failed());
	ck_assert_uint_eq(d.record().errorCode(), MP_ERR_BUS_ERROR);
	ck_assert_uint_eq(d.record().bytes, 64);
	d.clearRecord();
	ck_assert(!d.record().done());
	ck_assert_errno(DMADescriptorList(b, 3), EINVAL);
	ck_assert_errno(DMADescriptorList(b, 1), EINVAL);
	ck_assert_errno(DMADescriptorList(b, 131072), EINVAL);
	DMADescriptorList small(b, 2);
	ck_assert_uint_eq(small.pages(), 1);
}
END_TEST

// ---- misuse of the engine ----

START_TEST(test_engine_misuse)
{
	Board b("emu:");
	Board other("emu:");
	ck_assert_errno(DMAEngine(b, options(Completion::Polling, 1000)), EINVAL);
	ck_assert_errno(DMAEngine(b, options(Completion::Polling, 1)), EINVAL);
	ck_assert_errno(DMAEngine(b, options(Completion::Polling, 131072)), EINVAL);
	DMAEngine e(b);
	ck_assert_errno(DMAEngine(b), EBUSY); // one engine per board
	ck_assert_uint_eq(e.ringEntries(), 1024);
	ck_assert(e.completion() == Completion::Polling);
	DMABuffer kbuf(b, 64 * KiB);
	DMABuffer foreign(other, 64 * KiB);
	Anon mem(64 * KiB);
	DMABuffer to_dev(b, mem.data(), 32 * KiB, PD_DMA_TO_DEVICE);
	DMABuffer from_dev(b, mem.data() + 32 * KiB, 32 * KiB, PD_DMA_FROM_DEVICE);

	ck_assert_errno(e.readAsync(kbuf, 0, 0), EINVAL);          // zero length
	ck_assert_errno(e.writeAsync(kbuf, 0, 0), EINVAL);
	ck_assert_errno(e.readAsync(kbuf, 2, 4), EINVAL);          // misaligned offset
	ck_assert_errno(e.readAsync(kbuf, 0, 6), EINVAL);          // misaligned length
	ck_assert_errno(e.writeAsync(kbuf, 4, 4094), EINVAL);
	ck_assert_errno(e.readAsync(kbuf, 0, 64 * KiB + 4), ERANGE); // past the end
	ck_assert_errno(e.readAsync(kbuf, 64 * KiB, 4), ERANGE);
	ck_assert_errno(e.readAsync(kbuf, 64 * KiB - 4, 8), ERANGE);
	ck_assert_errno(e.readAsync(kbuf, 0xfffffffffffffffcull, 8), ERANGE); // no wrap-around
	ck_assert_errno(e.readAsync(foreign, 0, 4096), EXDEV);     // another board's buffer
	ck_assert_errno(e.readAsync(to_dev, 0, 4096), EACCES);     // mapped for H2C only
	ck_assert_errno(e.writeAsync(from_dev, 0, 4096), EACCES);  // mapped for C2H only
	ck_assert_errno(e.writeAsync(kbuf, 0, 4096, 0x80), EINVAL); // unknown flag
	ck_assert_errno(e.submit(static_cast<Channel>(2), kbuf, 0, 4096), EINVAL);
	ck_assert_errno(e.read(kbuf, 0, 3), EINVAL);
	// Batches are all or nothing.
	Request reqs[3] = {{&kbuf, 0, 4096, 0}, {&kbuf, 4096, 4096, 0}, {&kbuf, 4096, 0, 0}};
	Transfer hs[3];
	ck_assert_errno(e.submit(Channel::C2H, reqs, 3, hs), EINVAL);
	ck_assert(!hs[0].valid() && !hs[1].valid());
	ck_assert_uint_eq(e.outstanding(Channel::C2H), 0);
	reqs[2].buffer = nullptr;
	ck_assert_errno(e.submit(Channel::C2H, reqs, 3, hs), EINVAL);
	ck_assert_uint_eq(kbuf.activeTransfers(), 0);
	// Empty handles.
	Transfer none;
	ck_assert(!none.valid());
	ck_assert_errno(none.wait(std::chrono::milliseconds(1)), EINVAL);
	ck_assert_errno(none.get(), EINVAL);
	ck_assert_errno(none.abort(), EINVAL);
	ck_assert_errno(none.done(), EINVAL);
	none.release();
	// Timeouts
	ck_assert_errno(e.setWaitTimeout(std::chrono::milliseconds(-1)), EINVAL);
	e.setWaitTimeout(std::chrono::milliseconds(1234));
	ck_assert_int_eq(e.waitTimeout().count(), 1234);
	e.setStallTimeout(500);
	ck_assert_uint_eq(b.getChannelRegister(Channel::C2H, MP_CHREG_TIMEOUT_US), 500);
	ck_assert_uint_eq(b.getChannelRegister(Channel::H2C, MP_CHREG_TIMEOUT_US), 500);
	// A NoCheck board that is not identified as ours gets no engine: covered by isOurEngine();
	// a moved-from engine refuses everything.
	DMAEngine moved(std::move(e));
	ck_assert_errno(e.readAsync(kbuf, 0, 4), ENODEV);
	ck_assert_errno(e.outstanding(Channel::C2H), ENODEV);
	ck_assert_uint_eq(moved.outstanding(Channel::C2H), 0);
}
END_TEST

START_TEST(test_engine_setup_registers)
{
	Board b("emu:");
	DMAEngine e(b, options(Completion::Polling, 64));
	for (Channel c : {Channel::C2H, Channel::H2C}) {
		std::uint64_t base = e.ring(c).busAddress();
		ck_assert_uint_eq(b.getChannelRegister(c, MP_CHREG_RING_BASE_LO), static_cast<std::uint32_t>(base));
		ck_assert_uint_eq(b.getChannelRegister(c, MP_CHREG_RING_BASE_HI), static_cast<std::uint32_t>(base >> 32));
		ck_assert_uint_eq(b.getChannelRegister(c, MP_CHREG_RING_SIZE), 64);
		ChannelStatus s = e.status(c);
		ck_assert_uint_eq(s.state, MP_STATE_RUNNING);
		ck_assert_uint_eq(s.errorCode, MP_ERR_NONE);
		ck_assert_uint_eq(s.head, 0);
		ck_assert_uint_eq(s.tail, 0);
	}
	ck_assert_uint_eq(b.getRegister(MP_REG_IRQ_ENABLE), 0); // polling
}
END_TEST

START_TEST(test_engine_setup_interrupts)
{
	Board b("emu:msi=4");
	DMAEngine e(b, options(Completion::Interrupt));
	ck_assert(e.completion() == Completion::Interrupt);
	ck_assert_uint_eq(b.getRegister(MP_REG_IRQ_ENABLE),
			  MP_REG_IRQ_ENABLE_C2H_DONE_MASK | MP_REG_IRQ_ENABLE_H2C_DONE_MASK |
				  MP_REG_IRQ_ENABLE_ERROR_MASK);
	// Closing the engine leaves the board quiet, and a new engine may be opened.
	{
		DMAEngine gone(std::move(e));
	}
	ck_assert_uint_eq(b.getRegister(MP_REG_IRQ_ENABLE), 0);
	DMAEngine again(b);
	ck_assert_uint_eq(again.outstanding(Channel::H2C), 0);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	Suite *s = suite_create("mprace_api");
	TCase *tc = tcase_create("split");
	tcase_add_test(tc, test_split_kernel_memory);
	tcase_add_test(tc, test_split_scattered);
	tcase_add_test(tc, test_errno_mapping);
	suite_add_tcase(s, tc);
	tc = tcase_create("board");
	tcase_add_test(tc, test_board_identify);
	tcase_add_test(tc, test_board_open_errors);
	tcase_add_test(tc, test_registers);
	tcase_add_test(tc, test_closed_board);
	tcase_add_test(tc, test_test_logic_registers);
	tcase_add_test(tc, test_identification_checks);
	suite_add_tcase(s, tc);
	tc = tcase_create("buffers");
	tcase_add_test(tc, test_kernel_buffer);
	tcase_add_test(tc, test_import_refuses_non_dmabuf);
	tcase_add_test(tc, test_user_buffer);
	tcase_add_test(tc, test_buffer_refusal_messages);
	tcase_add_test(tc, test_descriptor_ring);
	suite_add_tcase(s, tc);
	tc = tcase_create("engine");
	tcase_add_test(tc, test_engine_misuse);
	tcase_add_test(tc, test_engine_setup_registers);
	tcase_add_test(tc, test_engine_setup_interrupts);
	suite_add_tcase(s, tc);
	return s;
}
