// SPDX-License-Identifier: LGPL-2.1-or-later
//
// mprace::Board: one board with our DMA engine (docs/dma-engine.md), opened through
// libpcidriver by name ("/dev/fpga0", "emu:link=gen3x8", ...) or by index in pd_list().
//
// Opening identifies the engine: MAGIC must read MP_ENGINE_MAGIC (else Error(ENODEV)) and
// VERSION.MAJOR must equal MP_ENGINE_VERSION_MAJOR (else Error(EPROTONOSUPPORT)); a newer minor
// version is accepted (minor versions only add). Board::NoCheck skips this, for bring-up of a
// board whose BAR0 is not (yet) our engine: registers and BARs work, a DMAEngine refuses.
//
// Threading: getRegister/setRegister, readBar/writeBar, info() and the test-logic counters
// are thread-safe and lock-free (they are register accesses). reset() and setTestRouting()
// coordinate with the board's DMAEngine (they take its channel locks). close() and
// destruction must not run concurrently with other calls on the same Board object.
//
// Lifetime: a DMAEngine and DMABuffers made from a Board share its device; they may outlive the
// Board object. After close() (or destruction of the Board) every call on the Board throws
// Error(ENODEV); the engine cancels its transfers (ECANCELED) and refuses new ones (ENODEV);
// buffers stay readable memory until destroyed but cannot be transferred any more.
#ifndef MPRACE_BOARD_HPP
#define MPRACE_BOARD_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pcidriver/pcidriver.h"
#include "pcidriver/pcidriver.hpp"
#include "mprace-spec/engine_spec.h"
#include "mprace/error.hpp"

namespace mprace {

namespace detail {
struct BoardState;
struct Access;
}

// CAPS decoded (docs/dma-engine.md section 9).
struct EngineCaps {
	unsigned int datapathBytes = 0;   // AXI datapath width in bytes
	unsigned int c2hChannels = 0;
	unsigned int h2cChannels = 0;
	unsigned int maxPayload = 0;      // bytes (128 << CAPS.MPS)
	unsigned int maxReadRequest = 0;  // bytes (128 << CAPS.MRRS)
	bool patternGenerator = false;
	bool checker = false;
	bool loopback = false;
	unsigned int msiVectors = 0;      // granted by the host; >= 4: one vector per source

	static EngineCaps decode(std::uint32_t caps) noexcept;
};

struct BoardInfo {
	std::string name;                 // PCI address, or the virtual board's description
	struct pd_info pci{};                 // IDs, BARs, interrupt mode, backend (pcidriver.h)
	std::uint32_t magic = 0;
	unsigned int versionMajor = 0;
	unsigned int versionMinor = 0;
	std::uint32_t capsRaw = 0;
	EngineCaps caps;
	unsigned int clockMHz = 0;

	bool emulated() const noexcept { return pci.backend == PD_BACKEND_EMU; }
	bool simulated() const noexcept { return pci.backend == PD_BACKEND_SIM; }   // the RTL, "sim:"
	// "kernel", "emu" or "sim"
	const char *backendName() const noexcept { return emulated() ? "emu" : simulated() ? "sim" : "kernel"; }
	bool isOurEngine() const noexcept
	{
		return magic == MP_ENGINE_MAGIC && versionMajor == MP_ENGINE_VERSION_MAJOR;
	}
};

// TEST_CONTROL selections (docs/dma-engine.md section 7).
enum class C2HSource : unsigned int {
	User = MP_C2H_SOURCE_USER,
	Pattern = MP_C2H_SOURCE_PATTERN,
	Loopback = MP_C2H_SOURCE_LOOPBACK,
};
enum class H2CSink : unsigned int {
	User = MP_H2C_SINK_USER,
	Checker = MP_H2C_SINK_CHECKER,
	Loopback = MP_H2C_SINK_LOOPBACK,
};

struct CheckerCounts {
	std::uint32_t words = 0;  // CHECK_WORDS: words compared since the last CHECK_SEED write
	std::uint32_t errors = 0; // CHECK_ERRORS: mismatches among them (saturating)
};

class Board {
public:
	enum OpenFlags : unsigned int {
		NoCheck = 1u << 0, // do not require our engine's MAGIC/VERSION
	};

	// name: a libpcidriver device name; "" picks the default ($PCIDRIVER_DEVICE, else
	// /dev/fpga0; never the virtual board unless asked for: Error(ENODEV) whose message says
	// to set PCIDRIVER_DEVICE=emu:). Throws Error (ENODEV, EPROTONOSUPPORT, or pd_open's
	// errno, with pd_open_error()'s words).
	// \post isOpen(); info() holds the identity read now. Thread-safe (boards are independent).
	explicit Board(const std::string &name = std::string(), unsigned int flags = 0);
	// The index-th name of pd_list() (kernel devices first, then the backends' "PREFIX:").
	// Error(ENODEV) when there is no such index. Thread-safe.
	static Board byIndex(unsigned int index, unsigned int flags = 0);
	// Device names, as pd_list() reports them.
	static std::vector<std::string> list();

	Board(Board &&o) noexcept;
	Board &operator=(Board &&o) noexcept;
	Board(const Board &) = delete;
	Board &operator=(const Board &) = delete;
	~Board();

	// Cancels the engine's transfers and releases this object's hold on the device.
	// Idempotent. Further calls throw Error(ENODEV).
	// \pre no other thread is inside a call on this Board. \post !isOpen(); the engine and
	// buffers made from it answer ENODEV. One thread.
	void close() noexcept;
	bool isOpen() const noexcept { return regs_.size != 0; }

	// What was read at open (identification registers, CAPS, pd_info).
	const BoardInfo &info() const;
	// Reads the identification registers again (e.g. after reprogramming the FPGA).
	BoardInfo identify() const;

	// Global CONTROL.RESET: both channels, test logic, IRQ_STATUS/IRQ_ENABLE and SCRATCH go to
	// their reset values. With a DMAEngine open, its outstanding transfers end with
	// ECANCELED and it sets its rings up again: it stays usable. Thread-safe.
	void reset();

	// 32-bit register access in BAR0 by byte offset. On the kernel backend this is one
	// volatile load/store of the mapped BAR (plus a bounds check); on the virtual board a
	// call into the model. Error(EINVAL) for an offset outside BAR0 or not 4-byte aligned,
	// Error(ENODEV) after close(). \pre offset 4-byte aligned, inside BAR0. Thread-safe
	// (lock-free), not against close().
	std::uint32_t getRegister(std::uint32_t offset) const
	{
		if (__builtin_expect((offset & 3u) != 0 || offset >= regs_.size, 0))
			badRegister(offset);
		return pd_reg_read32(&regs_, offset);
	}
	void setRegister(std::uint32_t offset, std::uint32_t value)
	{
		if (__builtin_expect((offset & 3u) != 0 || offset >= regs_.size, 0))
			badRegister(offset);
		pd_reg_write32(&regs_, offset, value);
	}
	// A channel register: offset within the channel block (MP_CHREG_*).
	std::uint32_t getChannelRegister(Channel c, std::uint32_t offset) const
	{
		return getRegister(MP_CH_BASE(static_cast<unsigned int>(c)) + offset);
	}
	void setChannelRegister(Channel c, std::uint32_t offset, std::uint32_t value)
	{
		setRegister(MP_CH_BASE(static_cast<unsigned int>(c)) + offset, value);
	}

	// Any BAR: checked 32-bit copies (offset and len multiples of 4), its size (0: absent),
	// and a mapping of a whole memory BAR (Error(EOPNOTSUPP) for the virtual board's register
	// BAR: use getRegister). The mapping lives until the device closes.
	void readBar(unsigned int bar, std::uint64_t offset, void *buf, std::size_t len) const;
	void writeBar(unsigned int bar, std::uint64_t offset, const void *buf, std::size_t len);
	std::uint64_t barSize(unsigned int bar) const;
	void *mapBar(unsigned int bar, unsigned int flags = 0, std::size_t *size = nullptr);

	// The free-running cycle counter (CYCLE_LO then CYCLE_HI), in units of 1/clockMHz us.
	std::uint64_t cycles() const;

	// ---- test logic (docs/dma-engine.md section 7) ----
	// Select where C2H data comes from and where H2C data goes. TEST_CONTROL may only change
	// while both channels are idle: with a DMAEngine open this halts both channels, writes,
	// and restarts them; Error(EBUSY) if transfers are outstanding.
	// \pre no transfer outstanding. \post c2hSource() == source, h2cSink() == sink; both
	// channels idle or running as before. Thread-safe.
	void setTestRouting(C2HSource source, H2CSink sink);
	C2HSource c2hSource() const;
	H2CSink h2cSink() const;
	// Pattern generator: the next C2H word is `seed`, then seed + 1, ... (mod 2^32).
	void setPatternSeed(std::uint32_t seed) { setRegister(MP_REG_PATGEN_SEED, seed); }
	// Rate limit in MB/s (10^6 bytes/s); 0: as fast as the link takes it.
	void setPatternRate(std::uint32_t mbytes_per_s) { setRegister(MP_REG_PATGEN_RATE, mbytes_per_s); }
	// Checker: expect `seed` next; clears CHECK_WORDS and CHECK_ERRORS.
	void resetChecker(std::uint32_t seed) { setRegister(MP_REG_CHECK_SEED, seed); }
	CheckerCounts checker() const
	{
		CheckerCounts c;
		c.words = getRegister(MP_REG_CHECK_WORDS);
		c.errors = getRegister(MP_REG_CHECK_ERRORS);
		return c;
	}

	// The libpcidriver device (to allocate pcidriver::KernelMemory etc. directly).
	pcidriver::PciDevice &device() const;
	// The register accessor of BAR0 (for code that wants pd_reg_read32 itself).
	const pd_regs &registers() const noexcept { return regs_; }

private:
	friend struct detail::Access; // the library's own way in (src/internal.hpp)
	const std::shared_ptr<detail::BoardState> &state() const;
	explicit Board(std::shared_ptr<detail::BoardState> s) noexcept;
	[[noreturn]] void badRegister(std::uint32_t offset) const;

	std::shared_ptr<detail::BoardState> s_;
	// A copy of BAR0's accessor, so that register access is inline; size 0 means closed.
	pd_regs regs_{};
};

} // namespace mprace

#endif // MPRACE_BOARD_HPP
