// SPDX-License-Identifier: GPL-2.0-or-later
//
// A dmabench mode: one way of moving data whose time per transfer is measured over a sweep of
// sizes. The sweep (sweep.cpp) calls setup() once with the largest size, then per size:
// warm-up transfers, N timed transfers back to back, and with --verify one more transfer
// whose data is checked (kept out of the timing, as in the Edinburgh thesis).
#ifndef TOOLS_DMABENCH_MODE_HPP
#define TOOLS_DMABENCH_MODE_HPP

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mprace {
class Board;
class DMAEngine;
}

namespace dmabench {

// Thrown by a mode factory or setup() when the mode cannot run here (no GPU, no board, a
// feature the board lacks). In a list of several modes it is skipped with its message.
class Unavailable : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// Thrown for a mode name that is not a mode: a usage error.
class BadMode : public std::invalid_argument {
public:
	using std::invalid_argument::invalid_argument;
};

class Mode {
public:
	virtual ~Mode() = default;

	virtual std::string name() const = 0;        // canonical, e.g. "db4M-c2h"
	virtual std::string direction() const = 0;   // c2h, h2c, c2g, g2c, h2g, g2h, host
	virtual std::string description() const = 0;
	// The reference its efficiency is measured against when --ref is auto: a mode name,
	// "min(a,b)" or "" (none).
	virtual std::string auto_reference() const { return std::string(); }
	// Largest size this mode supports after setup(); 0 = any. Larger sizes of the sweep are
	// left out with a note (e.g. PIO, or kernel memory the driver would not give).
	virtual std::uint64_t max_bytes() const { return 0; }
	// Smallest size; 0 = any.
	virtual std::uint64_t min_bytes() const { return 0; }
	// Sizes must be multiples of this (4 for the engine's granule).
	virtual std::uint64_t granule() const { return 1; }
	// A note printed once after setup (e.g. why sizes are capped); "" for none.
	virtual std::string note() const { return std::string(); }

	// Allocates for transfers up to `max_bytes`. May reduce max_bytes() when memory is short.
	virtual void setup(std::uint64_t max_bytes) = 0;
	// One complete transfer of `bytes` (returns when it is done).
	virtual void transfer(std::uint64_t bytes) = 0;
	// `n` transfers back to back; the default calls transfer() n times.
	virtual void run(std::uint64_t bytes, std::uint64_t n)
	{
		for (std::uint64_t i = 0; i < n; ++i)
			transfer(bytes);
	}
	// Whether verify() checks anything.
	virtual bool can_verify() const { return false; }
	// One transfer of `bytes` with its data checked; false with *why on a mismatch.
	virtual bool verify(std::uint64_t bytes, std::string *why)
	{
		(void)bytes;
		if (why)
			*why = "not supported";
		return false;
	}
	// Releases what setup() allocated (also done by the destructor).
	virtual void teardown() {}
	// Latency modes: the round trip of every transfer since the last call, in microseconds
	// (others: none). The sweep takes them before and after the timed blocks of a size.
	virtual std::vector<double> take_latencies() { return {}; }
	// What times those samples when it is not the run's clock (--clock): "gpu" for a mode
	// timed on the GPU's own clock; "" for the run's.
	virtual std::string latency_clock() const { return std::string(); }
	// Modes that time only part of what run() does (the CPU cost modes: the calling thread's
	// CPU time in the library's calls): its seconds in the last run(), which the sweep reports
	// instead of its clock's; NaN for the others.
	virtual double own_seconds() const { return std::nan(""); }
};

// What modes share: the board and its one DMAEngine, opened on first use (so host-only modes
// need neither), and settings of the command line that some modes read.
class Env {
public:
	Env(std::string device, bool verify);
	~Env();
	Env(const Env &) = delete;
	Env &operator=(const Env &) = delete;

	// The board / its engine (with the test logic routed as asked), opened on first call.
	// Throw Unavailable when the board cannot be opened.
	mprace::Board &board();
	mprace::DMAEngine &engine();
	// Routes the test logic (pattern generator, checker, loopback) for the next mode.
	void route(unsigned c2h_source, unsigned h2c_sink);

	bool board_open() const { return board_ != nullptr; }
	bool verify() const { return verify_; }
	// "none": the user asked for no board (host-only modes).
	bool no_device() const { return device_ == "none"; }

	// For the report: the device as given or as chosen by default, the board's own
	// description, and the backend ("kernel", "emu", "sim", "none").
	std::string device_name() const;
	std::string device_description() const;
	std::string backend() const;

	std::uint64_t pio_max() const { return pio_max_; }
	void set_pio_max(std::uint64_t v) { pio_max_ = v; }
	// --copy-threads: threads of the buffer managers' copy and of memcpy-mt (0: bufmgr's default).
	unsigned copy_threads() const { return copy_threads_; }
	void set_copy_threads(unsigned n) { copy_threads_ = n; }
	// --h2c-sink user: H2C data goes to the board's user logic instead of the checker (which
	// the virtual board drops unread: its own CPU cost left out); H2C cannot be verified then.
	void set_h2c_sink_user(bool v) { h2c_sink_user_ = v; }
	// --gpu-convert: how fi/gi ":i16f" convert on the GPU (true: copy, then a kernel;
	// false: one zero-copy kernel, libbufmgr's default).
	// --clock board: time with the board's free-running CYCLE counter instead of the host's
	// clock (in simulation, or to match the board's own view of a round trip).
	void set_board_clock(bool v) { board_clock_ = v; }
	bool board_clock() const { return board_clock_; }
	// Now, in seconds, on the chosen clock (the board is opened on first use).
	double now_s();
	bool gpu_convert_kernel() const { return gpu_convert_kernel_; }
	void set_gpu_convert_kernel(bool v) { gpu_convert_kernel_ = v; }
	// --gpus / --board-per-gpu: the GPUs a multi-GPU mode spreads over (empty: the current one)
	// and whether each gets a board of its own.
	void set_gpus(std::vector<int> gpus, bool board_per_gpu)
	{
		gpus_ = std::move(gpus);
		board_per_gpu_ = board_per_gpu;
	}
	const std::vector<int> &gpus() const { return gpus_; }
	// --net-to / --net-source / --net-seed: the receivers of the net modes, the id in their
	// chunk headers and the seed of the board's pattern.
	void set_net(std::vector<std::string> to, unsigned source, unsigned seed)
	{
		net_to_ = std::move(to);
		net_source_ = source;
		net_seed_ = seed;
	}
	const std::vector<std::string> &net_to() const { return net_to_; }
	unsigned net_source() const { return net_source_; }
	unsigned net_seed() const { return net_seed_; }
	bool board_per_gpu() const { return board_per_gpu_; }
	// Another board on the same device, with its engine (--board-per-gpu); the caller owns it.
	// Throws Unavailable when it cannot be opened.
	std::pair<std::unique_ptr<mprace::Board>, std::unique_ptr<mprace::DMAEngine>> open_another_board();

private:
	std::string device_;
	bool verify_;
	std::unique_ptr<mprace::Board> board_;
	std::unique_ptr<mprace::DMAEngine> engine_;
	std::string open_error_;
	std::uint64_t pio_max_ = 1 << 20;
	unsigned copy_threads_ = 0;
	bool h2c_sink_user_ = false;
	bool gpu_convert_kernel_ = false;
	bool board_clock_ = false;
	std::vector<int> gpus_;
	bool board_per_gpu_ = false;
	std::vector<std::string> net_to_;
	unsigned net_source_ = 0, net_seed_ = 0;
	double cycle_s_ = 0; // seconds per CYCLE tick
};

struct ModeInfo {
	const char *pattern;      // as in --list-modes
	const char *aliases;      // thesis codes etc.
	const char *description;
	bool needs_cuda;
};

// The table printed by --list-modes.
const std::vector<ModeInfo> &mode_table();

// Resolves aliases and expands a direction-less buffer-manager mode ("db4M") into both
// directions. Throws BadMode for an unknown name. Names are case-insensitive.
std::vector<std::string> expand_mode(const std::string &name);

// Creates a mode by canonical name. Throws BadMode or Unavailable.
std::unique_ptr<Mode> make_mode(const std::string &canonical, Env &env);

// Whether a canonical name needs CUDA (for the message when a GPU mode is skipped).
bool is_gpu_mode(const std::string &canonical);

} // namespace dmabench

#endif
