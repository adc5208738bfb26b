// SPDX-License-Identifier: LGPL-2.1-or-later
// mprace::Board: open, identify, registers, BARs, reset and test logic.
#include <cstdio>
#include <thread>

#include "internal.hpp"

namespace mprace {

EngineCaps EngineCaps::decode(std::uint32_t caps) noexcept
{
	EngineCaps c;
	c.datapathBytes = MP_FIELD_GET(caps, MP_REG_CAPS_DATAPATH_BYTES);
	c.c2hChannels = MP_FIELD_GET(caps, MP_REG_CAPS_C2H_CHANNELS);
	c.h2cChannels = MP_FIELD_GET(caps, MP_REG_CAPS_H2C_CHANNELS);
	c.maxPayload = 128u << MP_FIELD_GET(caps, MP_REG_CAPS_MPS);
	c.maxReadRequest = 128u << MP_FIELD_GET(caps, MP_REG_CAPS_MRRS);
	c.patternGenerator = MP_FIELD_GET(caps, MP_REG_CAPS_PATGEN) != 0;
	c.checker = MP_FIELD_GET(caps, MP_REG_CAPS_CHECKER) != 0;
	c.loopback = MP_FIELD_GET(caps, MP_REG_CAPS_LOOPBACK) != 0;
	c.msiVectors = MP_FIELD_GET(caps, MP_REG_CAPS_MSI_VECTORS);
	return c;
}

namespace {

BoardInfo readIdentity(detail::BoardState &s)
{
	BoardInfo i;
	i.pci = s.dev.info();
	i.name = i.pci.name;
	i.magic = s.rd(MP_REG_MAGIC);
	std::uint32_t v = s.rd(MP_REG_VERSION);
	i.versionMajor = MP_FIELD_GET(v, MP_REG_VERSION_MAJOR);
	i.versionMinor = MP_FIELD_GET(v, MP_REG_VERSION_MINOR);
	i.capsRaw = s.rd(MP_REG_CAPS);
	i.caps = EngineCaps::decode(i.capsRaw);
	i.clockMHz = s.rd(MP_REG_CLOCK_MHZ);
	return i;
}

std::string hex(std::uint32_t v)
{
	char b[16];
	std::snprintf(b, sizeof(b), "0x%08x", v);
	return b;
}

// Halts both channels (no engine open) so that TEST_CONTROL may change.
void haltChannels(detail::BoardState &s)
{
	for (unsigned int c = 0; c < MP_CH_COUNT; c++)
		s.wr(MP_CH_BASE(c) + MP_CHREG_CONTROL, 0);
	auto until = detail::Clock::now() + std::chrono::seconds(1);
	// TEST_CONTROL may only change while no channel is RUNNING or BUSY (spec section 7)
	auto busy = [&](unsigned int c) {
		std::uint32_t st = s.rd(MP_CH_BASE(c) + MP_CHREG_STATUS);
		return MP_FIELD_GET(st, MP_CHREG_STATUS_STATE) == MP_STATE_RUNNING ||
		       (st & MP_CHREG_STATUS_BUSY_MASK);
	};
	for (unsigned int c = 0; c < MP_CH_COUNT; c++) {
		while (busy(c)) {
			s.checkAlive("mprace::Board::setTestRouting");
			if (detail::Clock::now() > until)
				throw Error(ETIMEDOUT, "mprace::Board: a channel did not halt to change TEST_CONTROL");
			std::this_thread::sleep_for(std::chrono::microseconds(20));
		}
	}
}

} // namespace

namespace detail {

bool BoardState::gone()
{
	if (lost.load(std::memory_order_relaxed))
		return true;
	if (!info.isOurEngine() || rd(MP_REG_MAGIC) != kAllOnes)
		return false;
	lost.store(true);
	return true;
}

void BoardState::checkAlive(const char *who)
{
	if (gone())
		throw Error(ENODEV, std::string(who) + ": " + info.name + ": " + kBoardLost);
}

} // namespace detail

Board::Board(std::shared_ptr<detail::BoardState> s) noexcept : s_(std::move(s)), regs_(s_->regs) {}

Board::Board(const std::string &name, unsigned int flags)
{
	if (flags & ~static_cast<unsigned int>(NoCheck))
		throw Error(EINVAL, "mprace::Board: unknown open flags");
	s_ = std::make_shared<detail::BoardState>(name);
	s_->flags = flags;
	s_->regs = s_->dev.regs(MP_ENGINE_BAR);
	if (s_->regs.size < MP_ENGINE_BAR0_SIZE && !(flags & NoCheck))
		throw Error(ENODEV, "mprace::Board: BAR0 of " + name + " is smaller than the engine's");
	s_->info = readIdentity(*s_);
	if (!(flags & NoCheck)) {
		const BoardInfo &i = s_->info;
		if (i.magic == detail::kAllOnes)
			throw Error(ENODEV, "mprace::Board: " + i.name + ": " + detail::kBoardLost);
		if (i.magic != MP_ENGINE_MAGIC)
			throw Error(ENODEV, "mprace::Board: " + i.name + " is not an mprace engine: MAGIC reads " +
					    hex(i.magic) + ", expected " + hex(MP_ENGINE_MAGIC));
		if (i.versionMajor != MP_ENGINE_VERSION_MAJOR)
			throw Error(EPROTONOSUPPORT,
				    "mprace::Board: " + i.name + " implements engine specification " +
					    std::to_string(i.versionMajor) + "." + std::to_string(i.versionMinor) +
					    ", this library speaks major version " +
					    std::to_string(MP_ENGINE_VERSION_MAJOR));
	}
	regs_ = s_->regs;
}

Board Board::byIndex(unsigned int index, unsigned int flags)
{
	std::vector<std::string> names = list();
	if (index >= names.size())
		throw Error(ENODEV, "mprace::Board: no device with index " + std::to_string(index) +
					    " (" + std::to_string(names.size()) + " found)");
	return Board(names[index], flags);
}

std::vector<std::string> Board::list()
{
	std::size_t count = 0;
	int rc = pd_list(nullptr, 0, &count);
	if (rc < 0)
		throw Error(-rc, "pd_list");
	// A device may appear between the two calls: the second fills at most `max` names.
	std::size_t max = count;
	auto buf = std::make_unique<char[][64]>(max);
	rc = pd_list(buf.get(), max, &count);
	if (rc < 0)
		throw Error(-rc, "pd_list");
	std::vector<std::string> names;
	for (std::size_t i = 0; i < count && i < max; i++)
		names.emplace_back(buf[i]);
	return names;
}

Board::Board(Board &&o) noexcept : s_(std::move(o.s_)), regs_(o.regs_) { o.regs_ = pd_regs{}; }

Board &Board::operator=(Board &&o) noexcept
{
	if (this != &o) {
		close();
		s_ = std::move(o.s_);
		regs_ = o.regs_;
		o.regs_ = pd_regs{};
	}
	return *this;
}

Board::~Board() { close(); }

void Board::close() noexcept
{
	if (!s_)
		return;
	s_->closed.store(true);
	{
		std::lock_guard<std::mutex> lk(s_->mu);
		if (s_->engine)
			s_->engine->shutdownLocked();
		s_->engine = nullptr;
	}
	s_.reset();
	regs_ = pd_regs{};
}

namespace {
detail::BoardState &openState(const std::shared_ptr<detail::BoardState> &s)
{
	if (!s)
		throw Error(ENODEV, "mprace::Board: the board is closed");
	return *s;
}
} // namespace

const BoardInfo &Board::info() const { return openState(s_).info; }

BoardInfo Board::identify() const
{
	detail::BoardState &s = openState(s_);
	BoardInfo i = readIdentity(s);
	if (i.magic == detail::kAllOnes && !(s.flags & NoCheck)) {
		s.lost.store(true);
		throw Error(ENODEV, "mprace::Board::identify: " + i.name + ": " + detail::kBoardLost);
	}
	return i;
}

const std::shared_ptr<detail::BoardState> &Board::state() const
{
	openState(s_);
	return s_;
}

pcidriver::PciDevice &Board::device() const { return openState(s_).dev; }

void Board::badRegister(std::uint32_t offset) const
{
	if (!s_)
		throw Error(ENODEV, "mprace::Board: register access on a closed board");
	throw Error(EINVAL, "mprace::Board: register offset " + hex(offset) +
				    " is not 4-byte aligned or outside BAR0 (" +
				    std::to_string(regs_.size) + " bytes)");
}

void Board::reset()
{
	detail::BoardState &s = openState(s_);
	std::lock_guard<std::mutex> lk(s.mu);
	if (s.engine) {
		s.engine->globalResetLocked();
		return;
	}
	s.checkAlive("mprace::Board::reset");
	s.wr(MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	// RESET is self-clearing; wait for it so that the next access sees reset values.
	auto until = detail::Clock::now() + std::chrono::seconds(1);
	while (s.rd(MP_REG_CONTROL) & MP_REG_CONTROL_RESET_MASK) {
		s.checkAlive("mprace::Board::reset");
		if (detail::Clock::now() > until)
			throw Error(ETIMEDOUT, "mprace::Board::reset: CONTROL.RESET did not clear");
		std::this_thread::sleep_for(std::chrono::microseconds(10));
	}
}

// EINVAL naming the BAR's size when [offset, offset + len) is not inside a present BAR (the
// driver would refuse it with a bare EINVAL).
static void checkBarRange(const BoardInfo &i, const char *who, unsigned int bar, std::uint64_t offset,
			  std::size_t len)
{
	if (bar >= PD_MAX_BARS)
		throw Error(EINVAL, std::string(who) + ": no BAR " + std::to_string(bar) + " (0 to " +
					    std::to_string(PD_MAX_BARS - 1) + ")");
	if (!(i.pci.bar[bar].flags & PD_BAR_PRESENT))
		throw Error(EINVAL, std::string(who) + ": BAR " + std::to_string(bar) + " is not present");
	const std::uint64_t size = i.pci.bar[bar].size;
	if (offset > size || len > size - offset) {
		char what[160];
		std::snprintf(what, sizeof(what), "%s: %zu bytes at 0x%llx lie outside BAR %u (%llu bytes)", who, len,
			      static_cast<unsigned long long>(offset), bar, static_cast<unsigned long long>(size));
		throw Error(EINVAL, what);
	}
}

void Board::readBar(unsigned int bar, std::uint64_t offset, void *buf, std::size_t len) const
{
	detail::BoardState &s = openState(s_);
	checkBarRange(s.info, "mprace::Board::readBar", bar, offset, len);
	int rc = pd_bar_read(s.dev.handle(), bar, offset, buf, len);
	if (rc < 0)
		throw Error(-rc, "mprace::Board::readBar");
}

void Board::writeBar(unsigned int bar, std::uint64_t offset, const void *buf, std::size_t len)
{
	detail::BoardState &s = openState(s_);
	checkBarRange(s.info, "mprace::Board::writeBar", bar, offset, len);
	int rc = pd_bar_write(s.dev.handle(), bar, offset, buf, len);
	if (rc < 0)
		throw Error(-rc, "mprace::Board::writeBar");
}

std::uint64_t Board::barSize(unsigned int bar) const
{
	const BoardInfo &i = openState(s_).info;
	if (bar >= PD_MAX_BARS)
		throw Error(EINVAL, "mprace::Board::barSize: no BAR " + std::to_string(bar));
	return (i.pci.bar[bar].flags & PD_BAR_PRESENT) ? i.pci.bar[bar].size : 0;
}

void *Board::mapBar(unsigned int bar, unsigned int flags, std::size_t *size)
{
	detail::BoardState &s = openState(s_);
	return s.dev.mapBar(bar, flags, size);
}

std::uint64_t Board::cycles() const
{
	std::uint32_t lo = getRegister(MP_REG_CYCLE_LO); // latches CYCLE_HI
	std::uint32_t hi = getRegister(MP_REG_CYCLE_HI);
	return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

void Board::setTestRouting(C2HSource source, H2CSink sink)
{
	auto src = static_cast<std::uint32_t>(source), snk = static_cast<std::uint32_t>(sink);
	if (src > MP_C2H_SOURCE_LOOPBACK || snk > MP_H2C_SINK_LOOPBACK)
		throw Error(EINVAL, "mprace::Board::setTestRouting: unknown source or sink");
	std::uint32_t v = MP_FIELD_SET(0u, MP_REG_TEST_CONTROL_C2H_SOURCE, src);
	v = MP_FIELD_SET(v, MP_REG_TEST_CONTROL_H2C_SINK, snk);
	detail::BoardState &s = openState(s_);
	std::lock_guard<std::mutex> lk(s.mu);
	if (s.engine) {
		s.engine->setRoutingLocked(v);
		return;
	}
	s.checkAlive("mprace::Board::setTestRouting");
	haltChannels(s);
	s.wr(MP_REG_TEST_CONTROL, v);
}

C2HSource Board::c2hSource() const
{
	return static_cast<C2HSource>(
		MP_FIELD_GET(getRegister(MP_REG_TEST_CONTROL), MP_REG_TEST_CONTROL_C2H_SOURCE));
}

H2CSink Board::h2cSink() const
{
	return static_cast<H2CSink>(
		MP_FIELD_GET(getRegister(MP_REG_TEST_CONTROL), MP_REG_TEST_CONTROL_H2C_SINK));
}

} // namespace mprace
