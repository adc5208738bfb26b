// SPDX-License-Identifier: GPL-2.0-or-later
//
// The latency/bandwidth model of the Edinburgh thesis: the time of one transfer of s bytes is
//     t(s) = latency + s / bandwidth
// fitted by weighted linear least squares with weights 1/t_i^2, i.e. minimising the sum of
// squared *relative* residuals. Plain least squares on absolute times lets the largest sizes
// (hundreds of ms) decide everything and the latency (µs) comes out as noise; relative weights
// give every size of a log sweep the same say. docs/dmabench.md explains the choice.
#ifndef TOOLS_DMABENCH_FIT_HPP
#define TOOLS_DMABENCH_FIT_HPP

#include <cstdint>
#include <vector>

namespace dmabench {

struct Sample {
	double bytes;   // transfer size
	double seconds; // time of one transfer
};

struct Fit {
	bool valid = false;        // at least two distinct sizes and a positive slope
	double latency_s = 0;      // intercept, >= 0 (constrained: see fit.cpp)
	double bandwidth_Bps = 0;  // 1 / slope, bytes per second
	double rms_rel_error = 0;  // sqrt(mean(((t_i - t(s_i)) / t_i)^2))
	std::size_t points = 0;

	double latency_us() const { return latency_s * 1e6; }
	double bandwidth_MBps() const { return bandwidth_Bps / 1e6; } // MB = 10^6 bytes
	double predict_seconds(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
};

Fit fit_latency_bandwidth(const std::vector<Sample> &samples);

} // namespace dmabench

#endif
