// SPDX-License-Identifier: GPL-2.0-or-later
#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "../common/units.hpp"
#include "report.hpp"

using tools::strprintf;

namespace dmabench {

namespace {

// Okabe-Ito plus a few (its yellow darkened for a white background): distinguishable by
// most colour-blind readers.
const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
			       "#56B4E9", "#000000", "#7F3C8D", "#8C564B", "#B8A200"};
const char *const dashes[] = {"", "6,3", "2,2", "8,3,2,3"};

std::string xml(const std::string &s)
{
	std::string out;
	for (char c : s) {
		switch (c) {
		case '<': out += "&lt;"; break;
		case '>': out += "&gt;"; break;
		case '&': out += "&amp;"; break;
		case '"': out += "&quot;"; break;
		default: out += c;
		}
	}
	return out;
}

// A "nice" upper bound and step for the y axis: steps of 1, 2 or 5 times a power of ten.
void nice_axis(double max, double *top, double *step)
{
	if (!(max > 0))
		max = 1;
	double raw = max / 6;
	double mag = std::pow(10, std::floor(std::log10(raw)));
	double s = mag;
	for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
		s = m * mag;
		if (s >= raw)
			break;
	}
	*step = s;
	*top = std::ceil(max * 1.04 / s) * s;
}

// Latency with one decimal for legends, without a "-0.0" for a fit that landed just below zero.
double legend_us(const Fit &f)
{
	double us = f.latency_us();
	return std::fabs(us) < 0.05 ? 0.0 : us;
}

double peak_MBps(const ModeResult &m)
{
	double y = 0;
	for (const auto &p : m.points)
		y = std::max(y, p.throughput_MBps());
	return y;
}

std::string title_of(const Run &run)
{
	std::string t = "dmabench: throughput vs transfer size";
	if (!run.info.device_desc.empty())
		t += " \u2014 " + run.info.device_desc;
	else if (!run.info.device.empty())
		t += " \u2014 " + run.info.device;
	return t;
}

} // namespace

std::vector<bool> right_axis_modes(const Run &run)
{
	double top = 0;
	for (const auto &m : run.modes)
		top = std::max(top, peak_MBps(m));
	std::vector<bool> right(run.modes.size(), false);
	bool any_left = false;
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		double y = peak_MBps(run.modes[k]);
		right[k] = y > 0 && y < top / kRightAxisRatio;
		any_left = any_left || (y > 0 && !right[k]);
	}
	if (!any_left) // nothing on the left: one axis is enough
		std::fill(right.begin(), right.end(), false);
	return right;
}

void write_svg(std::ostream &os, const Run &run)
{
	const std::vector<bool> right = right_axis_modes(run);
	const bool two_axes = std::find(right.begin(), right.end(), true) != right.end();
	// the right-hand axis' labels sit between the plot and the legend
	const double R = two_axes ? 340 : 290, W = 1000 + (two_axes ? 50 : 0);
	const double H = 620, L = 80, T = 56, B = 64;
	const double pw = W - L - R, ph = H - T - B;
	std::uint64_t smin = UINT64_MAX, smax = 0;
	double ymax = 0, y2max = 0;
	for (std::size_t k = 0; k < run.modes.size(); ++k)
		for (const auto &p : run.modes[k].points) {
			smin = std::min(smin, p.bytes);
			smax = std::max(smax, p.bytes);
			(right[k] ? y2max : ymax) = std::max(right[k] ? y2max : ymax, p.throughput_MBps());
		}
	if (smax == 0) {
		smin = 4096;
		smax = 1 << 20;
	}
	double x0 = std::floor(std::log2(static_cast<double>(std::max<std::uint64_t>(smin, 1))));
	double x1 = std::ceil(std::log2(static_cast<double>(smax)));
	if (x1 <= x0)
		x1 = x0 + 1;
	double ytop, ystep, y2top = 1, y2step = 1;
	nice_axis(ymax, &ytop, &ystep);
	if (two_axes)
		nice_axis(y2max, &y2top, &y2step);
	auto X = [&](double bytes) { return L + (std::log2(bytes) - x0) / (x1 - x0) * pw; };
	auto Y = [&](double mbps) { return T + ph - mbps / ytop * ph; };
	// modes far slower than the rest (PIO) on a right-hand axis of their own
	auto Yk = [&](std::size_t k, double mbps) {
		return right[k] ? T + ph - mbps / y2top * ph : Y(mbps);
	};

	os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	os << strprintf("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
			"viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
			"font-size=\"13\">\n",
			W, H, W, H);
	os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
	os << strprintf("<text x=\"%.0f\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s</text>\n", L,
			xml(title_of(run)).c_str());
	os << strprintf("<text x=\"%.0f\" y=\"42\" fill=\"#555\">%s%s</text>\n", L, xml(run.info.date).c_str(),
			run.info.host.empty() ? "" : xml(", host " + run.info.host).c_str());

	// Grid and axes.
	os << "<g stroke=\"#ddd\" stroke-width=\"1\">\n";
	for (double y = 0; y <= ytop + ystep / 2; y += ystep)
		os << strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, Y(y), L + pw, Y(y));
	int span = static_cast<int>(x1 - x0);
	int every = span <= 14 ? 1 : span <= 28 ? 2 : 4;
	for (int e = static_cast<int>(x0); e <= static_cast<int>(x1); ++e)
		if ((e - static_cast<int>(x0)) % every == 0)
			os << strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", X(std::ldexp(1, e)), T,
					X(std::ldexp(1, e)), T + ph);
	os << "</g>\n";
	os << strprintf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
			L, T, pw, ph);
	os << "<g fill=\"#333\">\n";
	for (double y = 0; y <= ytop + ystep / 2; y += ystep)
		os << strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, Y(y) + 4, y);
	for (int e = static_cast<int>(x0); e <= static_cast<int>(x1); ++e)
		if ((e - static_cast<int>(x0)) % every == 0)
			os << strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", X(std::ldexp(1, e)),
					T + ph + 18,
					tools::format_size_short(static_cast<std::uint64_t>(std::ldexp(1, e))).c_str());
	os << strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">transfer size (bytes, log scale)</text>\n",
			L + pw / 2, H - 18);
	os << strprintf("<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">"
			"throughput (MB/s, 10^6 B/s)</text>\n",
			T + ph / 2, T + ph / 2);
	if (two_axes) {
		for (double y = 0; y <= y2top + y2step / 2; y += y2step)
			os << strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" fill=\"#777\">%g</text>\n",
					L + pw + 6, T + ph - y / y2top * ph + 4, y);
		os << strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#777\" "
				"transform=\"rotate(90 %.1f %.1f)\">right axis: MB/s of the slow modes</text>\n",
				L + pw + 48, T + ph / 2, L + pw + 48, T + ph / 2);
	}
	os << "</g>\n";

	// Curves: measured points solid with markers, the fitted model dashed and lighter.
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		const ModeResult &m = run.modes[k];
		const char *colour = palette[k % 10];
		const char *dash = dashes[(k / 10) % 4];
		if (m.fit.valid && m.points.size() >= 2) {
			os << strprintf("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" stroke-opacity=\"0.6\" "
					"stroke-dasharray=\"3,3\" points=\"",
					colour);
			double a = std::log2(static_cast<double>(m.points.front().bytes));
			double b = std::log2(static_cast<double>(m.points.back().bytes));
			for (int j = 0; j <= 100; ++j) {
				double s = std::exp2(a + (b - a) * j / 100.0);
				double mbps = s / m.fit.predict_seconds(s) / 1e6;
				double lim = right[k] ? y2top : ytop;
				if (mbps > 0 && mbps <= lim * 1.5)
					os << strprintf("%.1f,%.1f ", X(s), Yk(k, std::min(mbps, lim)));
			}
			os << "\"/>\n";
		}
		os << strprintf("<g><title>%s</title>\n", xml(m.name).c_str());
		os << strprintf("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
				*dash ? strprintf(" stroke-dasharray=\"%s\"", dash).c_str() : "");
		for (const auto &p : m.points)
			os << strprintf("%.1f,%.1f ", X(static_cast<double>(p.bytes)), Yk(k, p.throughput_MBps()));
		os << "\"/>\n";
		for (const auto &p : m.points)
			os << strprintf("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s %s: %.1f MB/s</title></circle>\n",
					X(static_cast<double>(p.bytes)), Yk(k, p.throughput_MBps()), colour, xml(m.name).c_str(),
					tools::format_size(p.bytes).c_str(), p.throughput_MBps());
		os << "</g>\n";
	}

	// Legend with the fitted figures, as the thesis' tables give them.
	double lx = L + pw + (two_axes ? 66 : 16), ly = T + 8;
	os << strprintf("<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">mode: bandwidth, latency (fit)</text>\n",
			lx, ly);
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		const ModeResult &m = run.modes[k];
		double y = ly + 22 + 20 * static_cast<double>(k);
		const char *dash = dashes[(k / 10) % 4];
		os << strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
				lx, y - 4, lx + 24, y - 4, palette[k % 10],
				*dash ? strprintf(" stroke-dasharray=\"%s\"", dash).c_str() : "");
		std::string label = m.name;
		if (m.fit.valid)
			label += strprintf(": %.0f MB/s, %.1f \u00b5s", m.fit.bandwidth_MBps(), legend_us(m.fit));
		if (right[k])
			label += " (right axis)";
		os << strprintf("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n", lx + 30, y, xml(label).c_str());
	}
	os << "</svg>\n";
}

namespace {

// Runs argv with `input` on its stdin; stdout and stderr go to `log`. Returns the exit status,
// or -1 when it could not be started.
int run_program(const std::vector<std::string> &argv, const std::string &input, std::string *log)
{
	int in[2], out[2];
	if (pipe(in) != 0)
		return -1;
	if (pipe(out) != 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		std::vector<char *> args;
		for (const auto &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		execvp(args[0], args.data());
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	// The scripts are small (a few KiB), far below the pipe buffer: write all, then read.
	std::size_t off = 0;
	while (off < input.size()) {
		ssize_t n = write(in[1], input.data() + off, input.size() - off);
		if (n <= 0)
			break;
		off += static_cast<std::size_t>(n);
	}
	close(in[1]);
	char buf[4096];
	ssize_t n;
	while ((n = read(out[0], buf, sizeof(buf))) > 0)
		if (log)
			log->append(buf, static_cast<std::size_t>(n));
	close(out[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
	return -1;
}

bool on_path(const char *prog)
{
	const char *path = std::getenv("PATH");
	if (!path)
		return false;
	for (const auto &dir : tools::split(path, ':')) {
		std::string p = (dir.empty() ? "." : dir) + "/" + prog;
		if (access(p.c_str(), X_OK) == 0)
			return true;
	}
	return false;
}

std::string gnuplot_quote(const std::string &s)
{
	std::string out = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\')
			out += '\\';
		out += c;
	}
	return out + "\"";
}

std::string gnuplot_script(const Run &run, const std::string &png, const char *terminal)
{
	std::ostringstream g;
	g << "set terminal " << terminal << " size 1300,780 font \",11\"\n";
	g << "set output " << gnuplot_quote(png) << "\n";
	g << "set title " << gnuplot_quote(title_of(run)) << " noenhanced\n";
	g << "set logscale x 2\nset grid\nset key outside right top noenhanced\n";
	// Tics at powers of two labelled 4K, 1M, ... like the SVG.
	std::uint64_t smin = UINT64_MAX, smax = 0;
	for (const auto &m : run.modes)
		for (const auto &p : m.points) {
			smin = std::min(smin, p.bytes);
			smax = std::max(smax, p.bytes);
		}
	if (smax) {
		int e0 = static_cast<int>(std::floor(std::log2(static_cast<double>(smin))));
		int e1 = static_cast<int>(std::ceil(std::log2(static_cast<double>(smax))));
		int every = e1 - e0 <= 14 ? 1 : e1 - e0 <= 28 ? 2 : 4;
		g << "set xrange [" << std::ldexp(1, e0) << ":" << std::ldexp(1, e1) << "]\nset xtics (";
		for (int e = e0; e <= e1; e += every)
			g << (e == e0 ? "" : ", ") << "\"" << tools::format_size_short(static_cast<std::uint64_t>(std::ldexp(1, e)))
			  << "\" " << std::ldexp(1, e);
		g << ")\n";
	}
	g << "set xlabel \"transfer size (bytes, log scale)\"\nset ylabel \"throughput (MB/s, 10^6 B/s)\" noenhanced\n";
	const std::vector<bool> right = right_axis_modes(run);
	double ymax = 0, y2max = 0, ytop, ystep;
	for (std::size_t k = 0; k < run.modes.size(); ++k)
		for (const auto &p : run.modes[k].points)
			(right[k] ? y2max : ymax) = std::max(right[k] ? y2max : ymax, p.throughput_MBps());
	nice_axis(ymax, &ytop, &ystep);
	g << "set yrange [0:" << ytop << "]\nset ytics " << ystep << " nomirror\n";
	if (y2max > 0) {
		double y2top, y2step;
		nice_axis(y2max, &y2top, &y2step);
		g << "set y2range [0:" << y2top << "]\nset y2tics " << y2step << "\n";
	}
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		g << "$d" << k << " << EOD\n";
		for (const auto &p : run.modes[k].points)
			g << p.bytes << " " << strprintf("%.3f", p.throughput_MBps()) << "\n";
		g << "EOD\n";
	}
	g << "plot ";
	bool first = true;
	for (std::size_t k = 0; k < run.modes.size(); ++k) {
		const ModeResult &m = run.modes[k];
		if (m.points.empty())
			continue;
		std::string label = m.name;
		if (m.fit.valid)
			label += strprintf(": %.0f MB/s, %.1f us", m.fit.bandwidth_MBps(), legend_us(m.fit));
		if (right[k])
			label += " (right axis)";
		g << (first ? "" : ", \\\n  ") << "$d" << k << " using 1:2 axes x1" << (right[k] ? "y2" : "y1")
		  << " with linespoints lw 2 pt 7 ps 0.6 lc rgb \""
		  << palette[k % 10] << "\" title " << gnuplot_quote(label);
		first = false;
	}
	if (first)
		g << "NaN notitle";
	g << "\n";
	return g.str();
}

const char *const matplotlib_script = R"PY(
import json, sys
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except Exception as e:
    print("matplotlib not available:", e)
    sys.exit(3)
run = json.load(open(sys.argv[1]))
def short(b):
    for u, n in ((1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= u and b % u == 0:
            return "%d%s" % (b // u, n)
    return "%d" % b
fig, ax = plt.subplots(figsize=(13, 7.8), dpi=100)
right = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else set()
ax2 = ax.twinx() if right else None
lines = []
for i, m in enumerate(run["modes"]):
    pts = m["points"]
    if not pts:
        continue
    label = m["name"]
    f = m["fit"]
    if f["valid"]:
        lat = f["latency_us"] if abs(f["latency_us"]) >= 0.05 else 0.0
        label += ": %.0f MB/s, %.1f us" % (f["bandwidth_MBps"], lat)
    on = ax2 if m["name"] in right else ax
    if on is ax2:
        label += " (right axis)"
    lines += on.plot([p["bytes"] for p in pts], [p["throughput_MBps"] for p in pts], marker="o", ms=3, lw=2,
                     label=label, color="C%d" % (i % 10))
if ax2:
    ax2.set_ylim(bottom=0)
ax.set_xscale("log", base=2)
ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: short(int(round(v)))))
ax.set_ylim(bottom=0)
ax.grid(True, alpha=0.4)
ax.set_xlabel("transfer size (bytes, log scale)")
ax.set_ylabel("throughput (MB/s, 10^6 B/s)")
dev = run["device"]["description"] or run["device"]["name"]
ax.set_title("dmabench: throughput vs transfer size" + (" \u2014 " + dev if dev else ""))
ax.legend(lines, [l.get_label() for l in lines], loc="upper left", bbox_to_anchor=(1.06 if ax2 else 1.01, 1),
          fontsize=9)
fig.tight_layout()
fig.savefig(sys.argv[2])
)PY";

} // namespace

std::string render_png(const Run &run, const std::string &json_path, const std::string &png_path,
		       std::string *why)
{
	std::string log;
	if (on_path("gnuplot")) {
		for (const char *term : {"pngcairo", "png"}) {
			log.clear();
			int rc = run_program({"gnuplot"}, gnuplot_script(run, png_path, term), &log);
			if (rc == 0 && access(png_path.c_str(), R_OK) == 0)
				return "gnuplot";
		}
		if (why)
			*why = "gnuplot failed: " + log;
	}
	if (on_path("python3")) {
		log.clear();
		std::string right;
		std::vector<bool> r = right_axis_modes(run);
		for (std::size_t k = 0; k < run.modes.size(); ++k)
			if (r[k])
				right += (right.empty() ? "" : ",") + run.modes[k].name;
		int rc = run_program({"python3", "-c", matplotlib_script, json_path, png_path, right}, "", &log);
		if (rc == 0 && access(png_path.c_str(), R_OK) == 0)
			return "matplotlib";
		if (why && rc != 3)
			*why = "matplotlib failed: " + log;
	}
	if (why && why->empty())
		*why = "no PNG renderer (install gnuplot or python3-matplotlib for a PNG next to the SVG)";
	return std::string();
}

} // namespace dmabench
