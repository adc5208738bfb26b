// SPDX-License-Identifier: GPL-2.0-or-later
//
// The Env shared by the modes (board and engine opened on first use), the mode factory, and
// the host-only memcpy mode.
#include "modes_impl.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <thread>

#include "../common/device.hpp"
#include "../common/units.hpp"

#include "bufmgr/copy_workers.hpp"
#include "bufmgr/transform.hpp"
#include "mprace/mprace.hpp"

namespace dmabench {

std::unique_ptr<Mode> make_mode(const std::string &canonical, Env &env)
{
	ModeSpec s = parse_mode(canonical);
	switch (s.family) {
	case Family::Memcpy: return make_memcpy_mode(s, env);
	case Family::Dma: return make_dma_mode(s, env);
	case Family::Loopback: return make_loopback_mode(s, env);
	case Family::Pio: return make_pio_mode(s, env);
	case Family::Ops: return make_ops_mode(s, env);
	case Family::BufMgr: return make_bufmgr_mode(s, env);
	case Family::Gpu: return make_gpu_mode(s, env);
	case Family::Net: return make_net_mode(s, env);
	}
	throw BadMode("unknown mode '" + canonical + "'");
}


// ---------------------------------------------------------------------------------------- Env

Env::Env(std::string device, bool verify) : device_(std::move(device)), verify_(verify) {}

Env::~Env()
{
	engine_.reset(); // before the board
	board_.reset();
}

mprace::Board &Env::board()
{
	if (board_)
		return *board_;
	if (no_device())
		throw Unavailable("needs a board, and --device none was given");
	if (!open_error_.empty())
		throw Unavailable(open_error_);
	try {
		board_ = std::make_unique<mprace::Board>(tools::pick_device(device_, "dmabench"));
	} catch (const std::exception &e) {
		open_error_ = std::string("cannot open the board: ") + e.what() +
			      " (`mprace list` shows the boards; --device emu: is the virtual board)";
		throw Unavailable(open_error_);
	}
	return *board_;
}

mprace::DMAEngine &Env::engine()
{
	if (!engine_) {
		mprace::Board &b = board();
		try {
			engine_ = std::make_unique<mprace::DMAEngine>(b);
		} catch (const std::exception &e) {
			throw Unavailable(std::string("cannot take the DMA engine: ") + e.what());
		}
	}
	return *engine_;
}

std::pair<std::unique_ptr<mprace::Board>, std::unique_ptr<mprace::DMAEngine>> Env::open_another_board()
{
	board(); // the first one, so that its errors are said first
	std::unique_ptr<mprace::Board> b;
	std::unique_ptr<mprace::DMAEngine> e;
	try {
		b = std::make_unique<mprace::Board>(tools::pick_device(device_, "dmabench", false));
		e = std::make_unique<mprace::DMAEngine>(*b);
	} catch (const std::exception &ex) {
		throw Unavailable(std::string("--board-per-gpu: cannot open another board on ") +
				  tools::pick_device(device_, "dmabench", false) + ": " + ex.what());
	}
	return {std::move(b), std::move(e)};
}

void Env::route(unsigned c2h_source, unsigned h2c_sink)
{
	mprace::Board &b = board();
	if (h2c_sink == MP_H2C_SINK_CHECKER && h2c_sink_user_)
		h2c_sink = MP_H2C_SINK_USER;
	auto src = static_cast<mprace::C2HSource>(c2h_source);
	auto sink = static_cast<mprace::H2CSink>(h2c_sink);
	if (b.c2hSource() != src || b.h2cSink() != sink)
		b.setTestRouting(src, sink);
}

double Env::now_s()
{
	if (!board_clock_)
		return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
	if (cycle_s_ == 0) {
		const unsigned mhz = board().info().clockMHz;
		if (mhz == 0)
			throw Unavailable("--clock board: the board reports no clock frequency (CLOCK_MHZ 0)");
		cycle_s_ = 1e-6 / mhz;
	}
	return static_cast<double>(board().cycles()) * cycle_s_;
}

std::string Env::device_name() const
{
	if (no_device())
		return device_;
	// said when the board is opened, not when a run that never needed it is reported
	return tools::pick_device(device_, "dmabench", false);
}

std::string Env::device_description() const
{
	if (!board_)
		return std::string();
	return board_->info().name;
}

std::string Env::backend() const
{
	if (!board_)
		return "none";
	return board_->info().backendName();
}

bool checker_ok(Env &env, std::uint64_t bytes, std::string *why)
{
	mprace::Board &b = env.board();
	const std::uint64_t words = bytes / 4;
	auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
	mprace::CheckerCounts c = b.checker();
	while (c.words < words && std::chrono::steady_clock::now() < until) {
		std::this_thread::sleep_for(std::chrono::microseconds(100));
		c = b.checker();
	}
	if (c.errors == 0 && c.words == words)
		return true;
	*why = tools::strprintf("the checker counted %u words with %u mismatches (expected %llu words, none wrong)",
				c.words, c.errors, static_cast<unsigned long long>(words));
	return false;
}

// ------------------------------------------------------------------------------------- memcpy

namespace {

// memcpy: one thread's std::memcpy. memcpy-mt: the same copy cut into slices on N threads by
// bufmgr::CopyWorkers, exactly as the buffer managers run it: the host's copy limit.
class MemcpyMode : public Mode {
public:
	MemcpyMode(const ModeSpec &s, unsigned threads) : name_(s.canonical), threads_(threads) {}
	std::string name() const override { return name_; }
	std::string direction() const override { return "host"; }
	std::string description() const override
	{
		if (!workers_ && threads_ == 0)
			return "host memcpy between two buffers (no board)";
		return tools::strprintf("host memcpy between two buffers on %u threads (bufmgr's copy threads, no board)",
					workers_ ? static_cast<unsigned>(workers_->threads()) : threads_);
	}
	void setup(std::uint64_t max_bytes) override
	{
		src_.assign(max_bytes, std::byte{0});
		dst_.assign(max_bytes, std::byte{0});
		fill_pattern(src_.data(), max_bytes & ~3ull, 0x1234);
		if (threads_)
			workers_ = std::make_unique<bufmgr::CopyWorkers>(threads_);
	}
	void transfer(std::uint64_t bytes) override
	{
		if (!workers_) {
			std::memcpy(dst_.data(), src_.data(), bytes);
			return;
		}
		bufmgr::transform_copy(workers_.get(), identity_, src_.data(), dst_.data(), bytes);
	}
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		std::memset(dst_.data(), 0, bytes);
		transfer(bytes);
		if (std::memcmp(dst_.data(), src_.data(), bytes) == 0)
			return true;
		*why = "destination differs from the source";
		return false;
	}
	void teardown() override
	{
		workers_.reset();
		std::vector<std::byte>().swap(src_);
		std::vector<std::byte>().swap(dst_);
	}

private:
	std::string name_;
	unsigned threads_;
	bufmgr::Identity<> identity_;
	std::unique_ptr<bufmgr::CopyWorkers> workers_;
	std::vector<std::byte> src_, dst_;
};

} // namespace

std::unique_ptr<Mode> make_memcpy_mode(const ModeSpec &s, Env &env)
{
	unsigned threads = s.threads;
	if (threads == kThreadsFromOption)
		threads = env.copy_threads() ? env.copy_threads()
					     : static_cast<unsigned>(bufmgr::default_copy_threads());
	return std::make_unique<MemcpyMode>(s, threads);
}

} // namespace dmabench
