// SPDX-License-Identifier: GPL-2.0-or-later
//
// The text outputs of a run: a table for people (stdout) and CSV and JSON for programs. The
// CSV columns and the JSON keys are a stable interface documented in docs/dmabench.md: new
// columns/keys may be appended in a later schema version, none is renamed or removed.
#ifndef TOOLS_DMABENCH_REPORT_HPP
#define TOOLS_DMABENCH_REPORT_HPP

#include <ostream>
#include <string>
#include <vector>

#include "results.hpp"

namespace dmabench {

extern const char *const kSchema;          // value of the JSON "schema" key
extern const char *const kPointsCsvHeader; // first line of PREFIX.csv
extern const char *const kFitCsvHeader;    // first line of PREFIX-fit.csv

// Fills the efficiencies and the fit efficiency of m from its reference: a mode name or
// "min(a;b)". Returns false (and fills nothing) when the reference is empty or not in the run.
bool apply_reference(ModeResult &m, const Run &run);

// Latency modes: the order statistics of one size's round trips (nearest rank).
struct LatencySummary {
	std::size_t samples = 0;
	double min = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
};
LatencySummary summarize_latency(const std::vector<double> &sorted_us);

void write_mode_table(std::ostream &os, const ModeResult &m);
// PREFIX-latency.csv (kLatencyCsvHeader) and PREFIX-latency-hist.csv (kLatencyHistCsvHeader):
// the latency modes' round trips per size, summarised and as a histogram.
extern const char *const kLatencyCsvHeader;
extern const char *const kLatencyHistCsvHeader;
void write_latency_csv(std::ostream &os, const Run &run);
void write_latency_histogram_csv(std::ostream &os, const Run &run);
void write_summary(std::ostream &os, const Run &run);
// Part of the summary: each mode's efficiency at 1M, 8M, 64M, 256M, 1G where measured.
void write_efficiency_by_size(std::ostream &os, const Run &run);
void write_points_csv(std::ostream &os, const Run &run);
void write_fit_csv(std::ostream &os, const Run &run);
void write_json(std::ostream &os, const Run &run);

std::string json_escape(const std::string &s);

} // namespace dmabench

#endif
