// SPDX-License-Identifier: GPL-2.0-or-later
//
// Throughput vs transfer size (log x axis), one curve per mode, with the fitted model dashed.
// The SVG is written by the small writer here, so a plot always appears; a PNG is rendered by
// gnuplot or python3-matplotlib when one of them is installed (neither is a dependency).
#ifndef TOOLS_DMABENCH_PLOT_HPP
#define TOOLS_DMABENCH_PLOT_HPP

#include <ostream>
#include <string>
#include <vector>

#include "results.hpp"

namespace dmabench {

// A mode whose peak is below 1/kRightAxisRatio of the fastest one's (PIO next to DMA) is drawn
// against a right-hand axis of its own, marked "(right axis)" in the legend; otherwise it
// would lie on the zero line.
constexpr double kRightAxisRatio = 20;
std::vector<bool> right_axis_modes(const Run &run);

void write_svg(std::ostream &os, const Run &run);

// Renders png_path from the run's JSON file (already written) with gnuplot, else matplotlib.
// Returns the renderer used ("gnuplot", "matplotlib"), or "" with *why set when none worked.
std::string render_png(const Run &run, const std::string &json_path, const std::string &png_path,
		       std::string *why);

} // namespace dmabench

#endif
