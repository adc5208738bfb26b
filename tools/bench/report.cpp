// SPDX-License-Identifier: GPL-2.0-or-later
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "../common/units.hpp"

using tools::format_size;
using tools::strprintf;

namespace dmabench {

const char *const kSchema = "mprace-dmabench/1";
const char *const kPointsCsvHeader =
	"mode,direction,bytes,iterations,total_s,time_us,throughput_MBps,efficiency,reference,verified";
const char *const kLatencyCsvHeader = "mode,direction,bytes,samples,clock,min_us,p50_us,p99_us,p999_us,max_us,cpu_pct";
const char *const kLatencyHistCsvHeader = "mode,bytes,from_us,to_us,count";
const char *const kFitCsvHeader =
	"mode,direction,latency_us,bandwidth_MBps,rms_rel_error,points,reference,bandwidth_efficiency,knee90_bytes";

namespace {

std::string num(double v, const char *fmt)
{
	if (!std::isfinite(v))
		return std::string();
	return strprintf(fmt, v);
}

std::string jnum(double v, const char *fmt)
{
	if (!std::isfinite(v))
		return "null";
	return strprintf(fmt, v);
}

std::string jstr(const std::string &s) { return "\"" + json_escape(s) + "\""; }

std::string jstr_or_null(const std::string &s) { return s.empty() ? "null" : jstr(s); }

// CSV fields never contain commas or quotes in our data, but a mode name comes from the user.
std::string csv(const std::string &s)
{
	if (s.find_first_of(",\"\n") == std::string::npos)
		return s;
	std::string out = "\"";
	for (char c : s) {
		if (c == '"')
			out += '"';
		out += c;
	}
	return out + "\"";
}

const ModeResult *find_mode(const Run &run, const std::string &name)
{
	for (const auto &m : run.modes)
		if (m.name == name)
			return &m;
	return nullptr;
}

double throughput_at(const ModeResult &m, std::uint64_t bytes)
{
	for (const auto &p : m.points)
		if (p.bytes == bytes)
			return p.throughput_MBps();
	return std::nan("");
}

} // namespace

std::string json_escape(const std::string &s)
{
	std::string out;
	for (unsigned char c : s) {
		switch (c) {
		case '"': out += "\\\""; break;
		case '\\': out += "\\\\"; break;
		case '\n': out += "\\n"; break;
		case '\t': out += "\\t"; break;
		case '\r': out += "\\r"; break;
		default:
			if (c < 0x20)
				out += strprintf("\\u%04x", c);
			else
				out += static_cast<char>(c);
		}
	}
	return out;
}

// The reference is one mode ("c2h") or the slower of two ("min(c2h;hg)": no comma, so that CSV fields never need quotes), the natural limit of a
// two-stage path. A reference not in the run leaves the efficiencies empty.
bool apply_reference(ModeResult &m, const Run &run)
{
	std::vector<const ModeResult *> refs;
	const std::string &r = m.reference;
	if (r.empty())
		return false;
	if (r.compare(0, 4, "min(") == 0 && r.back() == ')') {
		for (const auto &n : tools::split(r.substr(4, r.size() - 5), ';'))
			refs.push_back(find_mode(run, n));
	} else {
		refs.push_back(find_mode(run, r));
	}
	for (auto *ref : refs)
		if (!ref || ref == &m)
			return false;
	for (auto &p : m.points) {
		double best = INFINITY;
		for (auto *ref : refs)
			best = std::min(best, throughput_at(*ref, p.bytes));
		if (std::isfinite(best) && best > 0)
			p.efficiency = p.throughput_MBps() / best;
	}
	double best = INFINITY;
	for (auto *ref : refs) {
		if (!ref->fit.valid)
			return true;
		best = std::min(best, ref->fit.bandwidth_MBps());
	}
	if (m.fit.valid && best > 0)
		m.fit_efficiency = m.fit.bandwidth_MBps() / best;
	return true;
}

void write_mode_table(std::ostream &os, const ModeResult &m)
{
	bool eff = !m.reference.empty();
	bool ver = std::any_of(m.points.begin(), m.points.end(),
			       [](const Point &p) { return !p.verified.empty(); });
	bool lat = std::any_of(m.points.begin(), m.points.end(),
			       [](const Point &p) { return !p.latency_us.empty(); });
	os << "mode " << m.name << ": " << m.description << "\n";
	os << strprintf("  %10s %9s %12s %11s %6s", "size", "iters", "time/us", "MB/s", "cpu%");
	if (lat)
		os << strprintf(" %9s %9s %9s %9s", "p50/us", "p99/us", "p99.9/us", "max/us");
	if (eff)
		os << strprintf("  %8s", "eff");
	if (ver)
		os << "  verify";
	os << "\n";
	for (const auto &p : m.points) {
		os << strprintf("  %10s %9llu %12.2f %11.1f %6s", format_size(p.bytes).c_str(),
				static_cast<unsigned long long>(p.iterations), p.time_us(), p.throughput_MBps(),
				num(p.cpu_pct, "%.0f").c_str());
		if (lat) {
			const LatencySummary l = summarize_latency(p.latency_us);
			os << strprintf(" %9.2f %9.2f %9.2f %9.2f", l.p50, l.p99, l.p999, l.max);
		}
		if (eff)
			os << (std::isfinite(p.efficiency) ? strprintf("  %7.1f%%", 100 * p.efficiency)
							    : strprintf("  %8s", "-"));
		if (ver)
			os << "  " << (p.verified.empty() ? "-" : p.verified);
		os << "\n";
	}
	if (m.fit.valid)
		os << strprintf("  fit t = %.2f us + size / %.1f MB/s  (rms relative error %.1f%%, %zu sizes)",
				m.fit.latency_us(), m.fit.bandwidth_MBps(), 100 * m.fit.rms_rel_error,
				m.fit.points);
	else
		os << "  fit: not enough sizes";
	if (eff)
		os << "; efficiency against " << m.reference;
	os << "\n\n";
}

void write_summary(std::ostream &os, const Run &run)
{
	os << "summary (t = latency + size / bandwidth)\n";
	os << strprintf("  %-22s %-7s %12s %15s %9s %8s %9s  %s\n", "mode", "dir", "latency/us", "bandwidth/MB/s",
			"rms err", "bw eff", "90% from", "reference");
	for (const auto &m : run.modes) {
		if (m.fit.valid)
			os << strprintf("  %-22s %-7s %12.2f %15.1f %8.1f%%", m.name.c_str(), m.direction.c_str(),
					m.fit.latency_us(), m.fit.bandwidth_MBps(), 100 * m.fit.rms_rel_error);
		else if (m.points.size() == 1 && m.points[0].throughput_MBps() > 0)
			// one size fits no line: its time and throughput as measured, marked with '*'
			os << strprintf("  %-22s %-7s %11.2f* %14.1f* %9s", m.name.c_str(), m.direction.c_str(),
					m.points[0].time_us(), m.points[0].throughput_MBps(), "-");
		else
			os << strprintf("  %-22s %-7s %12s %15s %9s", m.name.c_str(), m.direction.c_str(), "-", "-", "-");
		os << (std::isfinite(m.fit_efficiency) ? strprintf(" %7.1f%%", 100 * m.fit_efficiency)
						       : strprintf(" %8s", "-"));
		os << strprintf(" %9s", m.knee90_bytes() ? tools::format_size_short(m.knee90_bytes()).c_str()
							   : m.reference.empty() ? "-" : "never");
		os << "  " << (m.reference.empty() ? "-" : m.reference) << "\n";
	}
	for (const auto &s : run.skipped)
		os << strprintf("  %-22s skipped: %s\n", s.mode.c_str(), s.reason.c_str());
	for (const auto &m : run.modes)
		if (!m.fit.valid && m.points.size() == 1) {
			os << "  * one size: the time of one transfer and its throughput, as measured (a fit needs two sizes)\n";
			break;
		}
	write_efficiency_by_size(os, run);
}

void write_efficiency_by_size(std::ostream &os, const Run &run)
{
	// The sizes performance targets are stated for, where the sweep has them; else its largest.
	std::vector<std::uint64_t> all;
	bool any = false;
	for (const auto &m : run.modes)
		for (const auto &p : m.points) {
			if (std::find(all.begin(), all.end(), p.bytes) == all.end())
				all.push_back(p.bytes);
			any |= std::isfinite(p.efficiency);
		}
	if (!any)
		return;
	std::sort(all.begin(), all.end());
	std::vector<std::uint64_t> cols;
	for (std::uint64_t b : all)
		if (b == 1u << 20 || b == 8u << 20 || b == 64u << 20 || b == 256u << 20 || b == 1u << 30)
			cols.push_back(b);
	if (cols.empty())
		cols.assign(all.size() > 4 ? all.end() - 4 : all.begin(), all.end());
	os << "efficiency by size (throughput / the reference's at the same size)\n";
	os << strprintf("  %-22s", "mode");
	for (std::uint64_t b : cols)
		os << strprintf(" %8s", tools::format_size_short(b).c_str());
	os << "\n";
	for (const auto &m : run.modes) {
		if (m.reference.empty())
			continue;
		os << strprintf("  %-22s", m.name.c_str());
		for (std::uint64_t b : cols) {
			auto p = std::find_if(m.points.begin(), m.points.end(), [b](const Point &q) { return q.bytes == b; });
			os << (p != m.points.end() && std::isfinite(p->efficiency) ? strprintf(" %7.1f%%", 100 * p->efficiency)
										 : strprintf(" %8s", "-"));
		}
		os << "\n";
	}
}

LatencySummary summarize_latency(const std::vector<double> &sorted_us)
{
	LatencySummary l;
	const std::size_t n = sorted_us.size();
	if (n == 0)
		return l;
	// nearest rank: the smallest sample with at least q of all samples at or below it
	auto rank = [&](double q) {
		std::size_t k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
		return sorted_us[std::min(n, std::max<std::size_t>(k, 1)) - 1];
	};
	l.samples = n;
	l.min = sorted_us.front();
	l.p50 = rank(0.5);
	l.p99 = rank(0.99);
	l.p999 = rank(0.999);
	l.max = sorted_us.back();
	return l;
}

void write_latency_csv(std::ostream &os, const Run &run)
{
	os << kLatencyCsvHeader << "\n";
	for (const auto &m : run.modes)
		for (const auto &p : m.points) {
			if (p.latency_us.empty())
				continue;
			const LatencySummary l = summarize_latency(p.latency_us);
			os << csv(m.name) << ',' << m.direction << ',' << p.bytes << ',' << l.samples << ','
			   << csv(m.latency_clock.empty() ? run.info.clock : m.latency_clock) << ',' << num(l.min, "%.3f") << ',' << num(l.p50, "%.3f") << ','
			   << num(l.p99, "%.3f") << ',' << num(l.p999, "%.3f") << ',' << num(l.max, "%.3f") << ','
			   << num(p.cpu_pct, "%.1f") << "\n";
		}
}

void write_latency_histogram_csv(std::ostream &os, const Run &run)
{
	os << kLatencyHistCsvHeader << "\n";
	for (const auto &m : run.modes)
		for (const auto &p : m.points) {
			// bins a quarter octave wide: [2^(k/4), 2^((k+1)/4)) microseconds
			std::map<int, std::size_t> bins;
			for (double us : p.latency_us)
				++bins[static_cast<int>(std::floor(4 * std::log2(std::max(us, 1e-3))))];
			for (const auto &b : bins)
				os << csv(m.name) << ',' << p.bytes << ',' << num(std::exp2(b.first / 4.0), "%.4f") << ','
				   << num(std::exp2((b.first + 1) / 4.0), "%.4f") << ',' << b.second << "\n";
		}
}

void write_points_csv(std::ostream &os, const Run &run)
{
	os << kPointsCsvHeader << "\n";
	for (const auto &m : run.modes)
		for (const auto &p : m.points)
			os << csv(m.name) << ',' << m.direction << ',' << p.bytes << ',' << p.iterations << ','
			   << num(p.total_s, "%.9f") << ',' << num(p.time_us(), "%.4f") << ','
			   << num(p.throughput_MBps(), "%.3f") << ',' << num(p.efficiency, "%.5f") << ','
			   << csv(m.reference) << ',' << p.verified << "\n";
}

void write_fit_csv(std::ostream &os, const Run &run)
{
	os << kFitCsvHeader << "\n";
	for (const auto &m : run.modes) {
		double nan = std::nan("");
		os << csv(m.name) << ',' << m.direction << ',' << num(m.fit.valid ? m.fit.latency_us() : nan, "%.4f")
		   << ',' << num(m.fit.valid ? m.fit.bandwidth_MBps() : nan, "%.3f") << ','
		   << num(m.fit.valid ? m.fit.rms_rel_error : nan, "%.5f") << ',' << m.fit.points << ','
		   << csv(m.reference) << ',' << num(m.fit_efficiency, "%.5f") << ','
		   << (m.knee90_bytes() ? std::to_string(m.knee90_bytes()) : std::string()) << "\n";
	}
}

void write_json(std::ostream &os, const Run &run)
{
	const RunInfo &i = run.info;
	os << "{\n";
	os << "  \"schema\": " << jstr(kSchema) << ",\n";
	os << "  \"tool\": \"dmabench\",\n";
	os << "  \"version\": " << jstr(i.version) << ",\n";
	os << "  \"date\": " << jstr(i.date) << ",\n";
	os << "  \"host\": " << jstr(i.host) << ",\n";
	os << "  \"command_line\": " << jstr(i.command_line) << ",\n";
	os << "  \"wall_s\": " << jnum(i.wall_s, "%.3f") << ",\n";
	os << "  \"device\": {\"name\": " << jstr(i.device) << ", \"description\": " << jstr(i.device_desc)
	   << ", \"backend\": " << jstr(i.backend) << "},\n";
	os << "  \"settings\": {\n";
	os << "    \"sizes\": [";
	for (std::size_t k = 0; k < i.sizes.size(); ++k)
		os << (k ? ", " : "") << i.sizes[k];
	os << "],\n";
	os << "    \"warmup\": " << i.warmup << ",\n";
	os << "    \"iterations\": " << i.iterations << ",\n";
	os << "    \"min_time_s\": " << jnum(i.min_time_s, "%.6g") << ",\n";
	os << "    \"repeat\": " << i.repeat << ",\n";
	os << "    \"verify\": " << (i.verify ? "true" : "false") << ",\n";
	os << "    \"cpus\": " << jstr_or_null(i.cpus) << ",\n";
	os << "    \"cpus_chosen_by_dmabench\": " << (i.cpus_shared ? "true" : "false") << ",\n";
	os << "    \"gpus\": ";
	if (i.gpus.empty())
		os << "null";
	for (std::size_t k = 0; k < i.gpus.size(); ++k)
		os << (k ? ", " : "[") << i.gpus[k] << (k + 1 == i.gpus.size() ? "]" : "");
	os << ",\n";
	os << "    \"board_per_gpu\": " << (i.board_per_gpu ? "true" : "false") << ",\n";
	os << "    \"reference\": " << jstr(i.reference) << "\n";
	os << "  },\n";
	os << "  \"modes\": [";
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		const ModeResult &m = run.modes[k];
		os << (k ? ",\n" : "\n");
		os << "    {\n";
		os << "      \"name\": " << jstr(m.name) << ",\n";
		os << "      \"direction\": " << jstr(m.direction) << ",\n";
		os << "      \"description\": " << jstr(m.description) << ",\n";
		os << "      \"reference\": " << jstr_or_null(m.reference) << ",\n";
		os << "      \"fit\": {\"valid\": " << (m.fit.valid ? "true" : "false")
		   << ", \"latency_us\": " << jnum(m.fit.valid ? m.fit.latency_us() : NAN, "%.4f")
		   << ", \"bandwidth_MBps\": " << jnum(m.fit.valid ? m.fit.bandwidth_MBps() : NAN, "%.3f")
		   << ", \"rms_rel_error\": " << jnum(m.fit.valid ? m.fit.rms_rel_error : NAN, "%.5f")
		   << ", \"points\": " << m.fit.points
		   << ", \"bandwidth_efficiency\": " << jnum(m.fit_efficiency, "%.5f")
		   << ", \"knee90_bytes\": " << (m.knee90_bytes() ? std::to_string(m.knee90_bytes()) : std::string("null"))
		   << "},\n";
		os << "      \"points\": [";
		for (std::size_t j = 0; j < m.points.size(); ++j) {
			const Point &p = m.points[j];
			os << (j ? ",\n" : "\n");
			os << "        {\"bytes\": " << p.bytes << ", \"iterations\": " << p.iterations
			   << ", \"total_s\": " << jnum(p.total_s, "%.9f") << ", \"time_us\": " << jnum(p.time_us(), "%.4f")
			   << ", \"throughput_MBps\": " << jnum(p.throughput_MBps(), "%.3f")
			   << ", \"efficiency\": " << jnum(p.efficiency, "%.5f")
			   << ", \"verified\": " << jstr_or_null(p.verified) << "}";
		}
		os << (m.points.empty() ? "]\n" : "\n      ]\n");
		os << "    }";
	}
	os << (run.modes.empty() ? "],\n" : "\n  ],\n");
	os << "  \"skipped\": [";
	for (std::size_t k = 0; k < run.skipped.size(); ++k)
		os << (k ? ", " : "") << "{\"mode\": " << jstr(run.skipped[k].mode)
		   << ", \"reason\": " << jstr(run.skipped[k].reason) << "}";
	os << "]\n";
	os << "}\n";
}

} // namespace dmabench
