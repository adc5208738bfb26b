// SPDX-License-Identifier: GPL-2.0-or-later
//
// The buffer-manager modes: libbufmgr's ChunkBuffer, DoubleBuffer and PooledBuffer moving a
// user buffer of the measured size through their DMA buffers, with the board's engine as the
// Transfer policy (bufmgr::MpraceTransfer on kernel memory, the library's default) and the
// identity transform (a plain copy), or with ":i16f" the DAQ conversion merged into the copy
// (int16 samples on the board, float in the user's buffer: Int16ToFloat on C2H, FloatToInt16
// on H2C). This is what MPRACE's figures compare: the user-visible throughput of each algorithm
// against raw DMA on the same kind of memory. Sizes count the bytes on the board's side. The
// copy runs on --copy-threads threads (bufmgr's default when not given).
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

// The user's side of a mode: bytes as they are, or the conversion pair of ":i16f".
struct Bytes {
	using Read = bufmgr::Identity<>;
	using Write = bufmgr::Identity<>;
	static Read read_transform() { return Read(); }
	static Write write_transform() { return Write(); }
};
struct Samples {
	using Read = bufmgr::Int16ToFloat;
	using Write = bufmgr::FloatToInt16;
	static Read read_transform() { return Read(1.0f / 32768); }
	static Write write_transform() { return Write(32768.0f); }
};

template <template <class, class> class Algo, class Conv>
class BufMgrMode : public Mode {
	using ReadAlgo = Algo<bufmgr::MpraceTransfer, typename Conv::Read>;
	using WriteAlgo = Algo<bufmgr::MpraceTransfer, typename Conv::Write>;
	static constexpr bool pooled = std::is_same_v<ReadAlgo, bufmgr::PooledBuffer<bufmgr::MpraceTransfer, typename Conv::Read>>;
	// The board's element and the user's: equal but for :i16f.
	using BoardElem = typename Conv::Read::in_type;
	using UserElem = typename Conv::Read::out_type;

public:
	BufMgrMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	~BufMgrMode() override { teardown(); }

	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::string description() const override
	{
		const char *algo = s_.algo == 'c' ? "ChunkBuffer" : s_.algo == 'd' ? "DoubleBuffer" : "PooledBuffer";
		std::string d = strprintf("bufmgr %s, %u DMA buffer(s) of %s (kernel memory), %s", algo,
					  s_.buf_count, format_size(s_.buf_size).c_str(),
					  s_.c2h ? "board -> user buffer" : "user buffer -> board");
		if (s_.samples)
			d += s_.c2h ? ", int16 -> float" : ", float -> int16";
		return d + strprintf(", %zu copy thread(s)", copy_threads_);
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
			if (s_.c2h)
				reader_ = make<ReadAlgo>(std::move(t), Conv::read_transform());
			else
				writer_ = make<WriteAlgo>(std::move(t), Conv::write_transform());
		} catch (const std::system_error &ex) {
			throw Unavailable(strprintf("cannot allocate %u DMA buffer(s) of %s: %s", s_.buf_count,
						    format_size(s_.buf_size).c_str(), ex.what()));
		}
		user_size_ = max_bytes / sizeof(BoardElem) * sizeof(UserElem);
		void *p = mmap(nullptr, user_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw Unavailable("cannot allocate the user buffer of " + format_size(user_size_));
		user_ = static_cast<UserElem *>(p);
		// Touch every page now, so that page faults are not part of the first timed transfers;
		// for H2C this is already the data the checker expects.
		fill_user(max_bytes, 0);
	}
	void transfer(std::uint64_t bytes) override
	{
		const std::size_t n = bytes / sizeof(BoardElem);
		if (s_.c2h) {
			std::size_t got = reader_->read(user_, n);
			if (got != n)
				throw std::runtime_error(strprintf("%s: read %zu of %llu bytes", s_.canonical.c_str(),
								   got * sizeof(BoardElem), static_cast<unsigned long long>(bytes)));
		} else {
			writer_->write(user_, n);
		}
	}
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		mprace::Board &b = env_.board();
		std::uint32_t seed = next_seed();
		if (s_.c2h) {
			std::memset(user_, 0, bytes / sizeof(BoardElem) * sizeof(UserElem));
			b.setPatternSeed(seed);
			transfer(bytes);
			std::int64_t bad = first_difference(bytes, seed);
			if (bad < 0)
				return true;
			*why = strprintf("user buffer element %lld differs from the (converted) pattern",
					 static_cast<long long>(bad));
			return false;
		}
		fill_user(bytes, seed);
		b.resetChecker(seed);
		transfer(bytes);
		return checker_ok(env_, bytes, why);
	}
	void teardown() override
	{
		reader_.reset();
		writer_.reset();
		if (user_)
			munmap(user_, user_size_);
		user_ = nullptr;
	}

private:
	template <class A, class X>
	std::unique_ptr<A> make(bufmgr::MpraceTransfer t, X x)
	{
		std::unique_ptr<A> a;
		if constexpr (pooled)
			a = std::make_unique<A>(std::move(t), s_.buf_count, s_.buf_size, x);
		else
			a = std::make_unique<A>(std::move(t), s_.buf_size, x);
		if (env_.copy_threads())
			a->set_copy_threads(env_.copy_threads());
		copy_threads_ = a->copy_threads();
		return a;
	}

	// The user's data of an H2C transfer of `bytes` board bytes: the pattern itself, or the
	// floats FloatToInt16 turns back into it.
	void fill_user(std::uint64_t bytes, std::uint32_t seed)
	{
		if constexpr (std::is_same_v<UserElem, BoardElem>) {
			fill_pattern(user_, bytes, seed);
		} else {
			std::vector<BoardElem> board(bytes / sizeof(BoardElem));
			fill_pattern(board.data(), bytes, seed);
			auto x = Conv::read_transform();
			bufmgr::transform_copy(nullptr, x, board.data(), user_, board.size());
		}
	}

	// The first user element that differs from the pattern converted as the mode converts
	// it, or -1.
	std::int64_t first_difference(std::uint64_t bytes, std::uint32_t seed)
	{
		if constexpr (std::is_same_v<UserElem, BoardElem>) {
			return check_pattern(user_, bytes, seed);
		} else {
			const std::size_t n = bytes / sizeof(BoardElem);
			std::vector<BoardElem> board(n);
			std::vector<UserElem> want(n);
			fill_pattern(board.data(), bytes, seed);
			auto x = Conv::read_transform();
			bufmgr::transform_copy(nullptr, x, board.data(), want.data(), n);
			for (std::size_t k = 0; k < n; ++k)
				if (std::memcmp(&want[k], &user_[k], sizeof(UserElem)) != 0)
					return static_cast<std::int64_t>(k);
			return -1;
		}
	}

	ModeSpec s_;
	Env &env_;
	std::unique_ptr<ReadAlgo> reader_;
	std::unique_ptr<WriteAlgo> writer_;
	std::size_t copy_threads_ = 1;
	UserElem *user_ = nullptr;
	std::size_t user_size_ = 0;
};

template <template <class, class> class Algo>
std::unique_ptr<Mode> make_for(const ModeSpec &s, Env &env)
{
	if (s.samples)
		return std::make_unique<BufMgrMode<Algo, Samples>>(s, env);
	return std::make_unique<BufMgrMode<Algo, Bytes>>(s, env);
}

} // namespace

std::unique_ptr<Mode> make_bufmgr_mode(const ModeSpec &s, Env &env)
{
	if (s.buf_size % MP_ENGINE_GRANULE)
		throw BadMode("mode " + s.canonical + ": the DMA buffer size must be a multiple of 4");
	switch (s.algo) {
	case 'c': return make_for<bufmgr::ChunkBuffer>(s, env);
	case 'd': return make_for<bufmgr::DoubleBuffer>(s, env);
	default: return make_for<bufmgr::PooledBuffer>(s, env);
	}
}

} // namespace dmabench
