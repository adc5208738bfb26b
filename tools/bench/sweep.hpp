// SPDX-License-Identifier: GPL-2.0-or-later
//
// The measurement loop: sizes of a sweep, warm-up, N iterations timed together, and the
// progress bar (stderr, only on a terminal).
#ifndef TOOLS_DMABENCH_SWEEP_HPP
#define TOOLS_DMABENCH_SWEEP_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mode.hpp"
#include "results.hpp"

namespace dmabench {

// "4K:256M:2" (min:max:factor, factor an integer >= 2; max included when it lies on the
// geometric sequence), "4K:256M" (factor 2) or a list "4K,64K,1M". Throws std::invalid_argument.
std::vector<std::uint64_t> parse_sizes(const std::string &spec);
std::vector<std::uint64_t> size_range(std::uint64_t min, std::uint64_t max, std::uint64_t factor);

struct SweepOptions {
	std::vector<std::uint64_t> sizes;
	unsigned warmup = 1;           // untimed transfers before each size
	std::uint64_t iterations = 0;  // fixed N; 0: enough to last min_time (at least min_iterations)
	double min_time_s = 0.05;
	std::uint64_t min_iterations = 2;
	std::uint64_t max_iterations = 100000;
	unsigned repeat = 3;           // timed blocks per size; the fastest counts
	bool verify = false;
	// The clock of the timed blocks, in seconds (the host's steady clock when empty).
	std::function<double()> now;
};

// Ctrl-C: request_stop() (async-signal-safe) makes run_sweep return after the current
// timed block, keeping the sizes measured so far.
void request_stop() noexcept;
bool stop_requested() noexcept;

// Iterations for one size when not fixed: enough for min_time, from one warm-up's time.
std::uint64_t auto_iterations(const SweepOptions &o, double one_transfer_s);

class Progress {
public:
	// Active only when `enabled` and stderr is a terminal.
	Progress(bool enabled, std::size_t total_steps);
	~Progress();
	void step(const std::string &label); // call before each step
	void finish();                        // clears the line
	void message(const std::string &text); // a line on stderr that does not garble the bar

private:
	void draw();
	bool on_ = false;
	std::size_t total_ = 0, done_ = 0;
	std::string label_;
};

// Runs one mode over the sweep (setup already done). Sizes outside the mode's limits or not a
// multiple of its granule are left out. Throws on a transfer error; a verification mismatch is
// recorded in the point ("fail") and reported through *failures.
void run_sweep(Mode &mode, const SweepOptions &o, Progress &progress, ModeResult &out,
	       std::vector<std::string> *failures);

} // namespace dmabench

#endif
