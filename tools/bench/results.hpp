// SPDX-License-Identifier: GPL-2.0-or-later
//
// What one dmabench run measured, independent of how it was measured: the input of the table,
// CSV, JSON and plot writers (report.hpp, plot.hpp).
#ifndef TOOLS_DMABENCH_RESULTS_HPP
#define TOOLS_DMABENCH_RESULTS_HPP

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fit.hpp"

namespace dmabench {

// One size of one mode: `iterations` transfers timed together.
struct Point {
	std::uint64_t bytes = 0;
	std::uint64_t iterations = 0;
	double total_s = 0;                // wall time of all iterations together
	double efficiency = std::nan("");  // throughput / reference's throughput at this size; NaN: none
	std::string verified;              // "" (not checked), "ok" or "fail"
	double cpu_pct = std::nan("");     // CPU time of dmabench in the kept block / its wall time
	std::vector<double> latency_us;    // latency modes: each transfer's round trip, sorted

	double seconds() const { return iterations ? total_s / static_cast<double>(iterations) : 0; }
	double time_us() const { return seconds() * 1e6; }
	double throughput_MBps() const
	{
		double t = seconds();
		return t > 0 ? static_cast<double>(bytes) / t / 1e6 : 0;
	}
};

struct ModeResult {
	std::string name;        // canonical mode name, e.g. "c2h", "db4M-c2h"
	std::string direction;   // c2h, h2c, h2g, g2h, c2g, g2c, host
	std::string description; // one line for people
	std::string reference;   // the mode (or "min(a,b)") efficiencies are relative to; "" none
	std::string latency_clock; // what timed its latency samples when not the run's clock ("gpu")
	std::vector<Point> points;
	Fit fit;
	double fit_efficiency = std::nan(""); // fit bandwidth / reference fit bandwidth

	// The knee: the smallest size from which on every measured size reaches 90 % efficiency
	// (a single lucky small size does not count); 0 when the largest size does not, or there
	// is no reference.
	std::uint64_t knee90_bytes() const
	{
		std::uint64_t knee = 0;
		for (auto it = points.rbegin(); it != points.rend(); ++it) {
			if (!(std::isfinite(it->efficiency) && it->efficiency >= 0.9))
				break;
			knee = it->bytes;
		}
		return knee;
	}
};

struct Skipped {
	std::string mode;
	std::string reason;
};

struct RunInfo {
	std::string version;      // package version
	std::string date;         // ISO 8601, UTC
	std::string host;         // hostname
	std::string device;       // as given (--device) or chosen by default
	std::string device_desc;  // the board's own description (pd_info.name)
	std::string backend;      // "kernel", "emu", "sim" or "none"
	std::string command_line;
	std::vector<std::uint64_t> sizes;
	unsigned warmup = 0;
	std::uint64_t iterations = 0; // 0: chosen per size from min_time
	double min_time_s = 0;
	unsigned repeat = 1;
	bool verify = false;
	std::string cpus;         // "" when not pinned
	bool cpus_shared = false; // pinned by dmabench itself: the virtual board on a small host
	std::vector<int> gpus;    // --gpus; empty: the current GPU
	bool board_per_gpu = false;
	std::string reference;    // --ref as given ("auto" or a mode)
	double wall_s = 0;        // the whole run
	std::string clock = "wall"; // what timed the transfers: "wall", or "board (N MHz)"
};

struct Run {
	RunInfo info;
	std::vector<ModeResult> modes;
	std::vector<Skipped> skipped;
};

} // namespace dmabench

#endif
