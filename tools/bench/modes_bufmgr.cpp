// SPDX-License-Identifier: GPL-2.0-or-later
//
// The buffer-manager modes: libbufmgr's ChunkBuffer, DoubleBuffer and PooledBuffer moving a
// user buffer of the measured size through their DMA buffers, with the board's engine as the
// Transfer policy (bufmgr::MpraceTransfer on kernel memory, the library's default) and the
// identity transform (a plain copy). This is what MPRACE's figures compare: the user-visible
// throughput of each algorithm against raw DMA on the same kind of memory.
#include <cstring>
#include <sys/mman.h>

#include "../common/units.hpp"
#include "bufmgr/chunk_buffer.hpp"
#include "bufmgr/double_buffer.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "bufmgr/pooled_buffer.hpp"
#include "modes_impl.hpp"
#include "mprace/mprace.hpp"

using tools::format_size;
using tools::strprintf;

namespace dmabench {

namespace {

std::uint32_t next_seed()
{
	static std::uint32_t s = 0xb0f00000u;
	return s += 0x10001u;
}

template <class Algo>
class BufMgrMode : public Mode {
public:
	BufMgrMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	~BufMgrMode() override { teardown(); }

	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::string description() const override
	{
		const char *algo = s_.algo == 'c' ? "ChunkBuffer" : s_.algo == 'd' ? "DoubleBuffer" : "PooledBuffer";
		return strprintf("bufmgr %s, %u DMA buffer(s) of %s (kernel memory), %s", algo, s_.buf_count,
				 format_size(s_.buf_size).c_str(),
				 s_.c2h ? "board -> user buffer" : "user buffer -> board");
	}
	// MpraceTransfer's DMA buffers are kernel memory: compare with raw DMA on kernel memory.
	std::string auto_reference() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }

	void setup(std::uint64_t max_bytes) override
	{
		mprace::Board &b = env_.board();
		mprace::DMAEngine &e = env_.engine();
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
		b.setPatternRate(0);
		try {
			bufmgr::MpraceTransfer t(b, e, bufmgr::MemoryKind::kernel);
			if constexpr (std::is_same_v<Algo, bufmgr::PooledBuffer<bufmgr::MpraceTransfer>>)
				algo_ = std::make_unique<Algo>(std::move(t), s_.buf_count, s_.buf_size);
			else
				algo_ = std::make_unique<Algo>(std::move(t), s_.buf_size);
		} catch (const std::system_error &ex) {
			throw Unavailable(strprintf("cannot allocate %u DMA buffer(s) of %s: %s", s_.buf_count,
						    format_size(s_.buf_size).c_str(), ex.what()));
		}
		user_size_ = max_bytes;
		void *p = mmap(nullptr, user_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw Unavailable("cannot allocate the user buffer of " + format_size(max_bytes));
		user_ = static_cast<std::byte *>(p);
		// Touch every page now, so that page faults are not part of the first timed transfers.
		fill_pattern(user_, user_size_ & ~3ull, 0);
	}
	void transfer(std::uint64_t bytes) override
	{
		if (s_.c2h) {
			std::size_t got = algo_->read(user_, bytes);
			if (got != bytes)
				throw std::runtime_error(strprintf("%s: read %zu of %llu bytes", s_.canonical.c_str(), got,
								   static_cast<unsigned long long>(bytes)));
		} else {
			algo_->write(user_, bytes);
		}
	}
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		mprace::Board &b = env_.board();
		std::uint32_t seed = next_seed();
		if (s_.c2h) {
			std::memset(user_, 0, bytes);
			b.setPatternSeed(seed);
			transfer(bytes);
			std::int64_t bad = check_pattern(user_, bytes, seed);
			if (bad < 0)
				return true;
			*why = strprintf("user buffer word %lld differs from the pattern", static_cast<long long>(bad));
			return false;
		}
		fill_pattern(user_, bytes, seed);
		b.resetChecker(seed);
		transfer(bytes);
		return checker_ok(env_, bytes, why);
	}
	void teardown() override
	{
		algo_.reset();
		if (user_)
			munmap(user_, user_size_);
		user_ = nullptr;
	}

private:
	ModeSpec s_;
	Env &env_;
	std::unique_ptr<Algo> algo_;
	std::byte *user_ = nullptr;
	std::size_t user_size_ = 0;
};

} // namespace

std::unique_ptr<Mode> make_bufmgr_mode(const ModeSpec &s, Env &env)
{
	if (s.buf_size % MP_ENGINE_GRANULE)
		throw BadMode("mode " + s.canonical + ": the DMA buffer size must be a multiple of 4");
	switch (s.algo) {
	case 'c': return std::make_unique<BufMgrMode<bufmgr::ChunkBuffer<bufmgr::MpraceTransfer>>>(s, env);
	case 'd': return std::make_unique<BufMgrMode<bufmgr::DoubleBuffer<bufmgr::MpraceTransfer>>>(s, env);
	default: return std::make_unique<BufMgrMode<bufmgr::PooledBuffer<bufmgr::MpraceTransfer>>>(s, env);
	}
}

} // namespace dmabench
