// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/units.hpp"

using tools::format_size;
using tools::parse_size;

namespace dmabench {

std::vector<std::uint64_t> size_range(std::uint64_t min, std::uint64_t max, std::uint64_t factor)
{
	if (min == 0)
		throw std::invalid_argument("the smallest size must be at least 1 byte");
	if (max < min)
		throw std::invalid_argument("the largest size is smaller than the smallest");
	if (factor < 2)
		throw std::invalid_argument("the size factor must be an integer >= 2");
	std::vector<std::uint64_t> out;
	for (std::uint64_t s = min; s <= max; s *= factor) {
		out.push_back(s);
		if (s > max / factor)
			break;
	}
	return out;
}

std::vector<std::uint64_t> parse_sizes(const std::string &spec)
{
	if (spec.find(':') != std::string::npos) {
		auto parts = tools::split(spec, ':');
		if (parts.size() < 2 || parts.size() > 3)
			throw std::invalid_argument("invalid size sweep '" + spec + "' (MIN:MAX[:FACTOR], e.g. 4K:256M:2)");
		std::uint64_t factor = parts.size() == 3 ? tools::parse_u64(parts[2], "size factor") : 2;
		return size_range(parse_size(parts[0]), parse_size(parts[1]), factor);
	}
	std::vector<std::uint64_t> out;
	for (const auto &p : tools::split(spec, ',')) {
		std::uint64_t s = parse_size(p);
		if (s == 0)
			throw std::invalid_argument("size 0 in '" + spec + "'");
		out.push_back(s);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

std::uint64_t auto_iterations(const SweepOptions &o, double one_transfer_s)
{
	if (o.iterations)
		return o.iterations;
	double n = one_transfer_s > 0 ? std::ceil(o.min_time_s / one_transfer_s) : static_cast<double>(o.max_iterations);
	n = std::max(n, static_cast<double>(o.min_iterations));
	n = std::min(n, static_cast<double>(o.max_iterations));
	return static_cast<std::uint64_t>(n);
}

Progress::Progress(bool enabled, std::size_t total_steps)
	: on_(enabled && isatty(STDERR_FILENO)), total_(total_steps)
{
}

Progress::~Progress() { finish(); }

void Progress::draw()
{
	if (!on_)
		return;
	const int width = 30;
	int fill = total_ ? static_cast<int>(width * done_ / total_) : 0;
	std::string bar(static_cast<std::size_t>(fill), '#');
	bar.resize(width, '.');
	std::string label = label_.size() > 40 ? label_.substr(0, 40) : label_;
	std::fprintf(stderr, "\r\033[K[%s] %3zu%% %s", bar.c_str(), total_ ? 100 * done_ / total_ : 0,
		     label.c_str());
	std::fflush(stderr);
}

void Progress::step(const std::string &label)
{
	label_ = label;
	draw();
	++done_;
}

void Progress::finish()
{
	if (on_) {
		std::fprintf(stderr, "\r\033[K");
		std::fflush(stderr);
	}
}

void Progress::message(const std::string &text)
{
	if (on_)
		std::fprintf(stderr, "\r\033[K");
	std::fprintf(stderr, "%s\n", text.c_str());
	draw();
}

namespace {
volatile std::sig_atomic_t stop_flag = 0;
} // namespace

void request_stop() noexcept { stop_flag = 1; }
bool stop_requested() noexcept { return stop_flag != 0; }

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// User and system time of the whole process (all its threads) so far.
double cpu_seconds()
{
	struct rusage u;
	if (getrusage(RUSAGE_SELF, &u) != 0)
		return NAN;
	return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

} // namespace

// One timed block of p.iterations transfers of p.bytes after o.warmup untimed ones: p keeps
// the fastest block so far (and its CPU share); the mode's latency samples are appended.
static void timed_block(Mode &mode, const SweepOptions &o, Point &p)
{
	using clock = std::chrono::steady_clock;
	for (unsigned w = 0; w < o.warmup; ++w)
		mode.transfer(p.bytes);
	mode.take_latencies(); // the warm-up's are not reported
	const double cpu0 = cpu_seconds();
	const auto w0 = clock::now();
	const double t0 = o.now ? o.now() : 0;
	mode.run(p.bytes, p.iterations);
	const double own = mode.own_seconds();
	const double t = !std::isnan(own) ? own : o.now ? o.now() - t0 : seconds_since(w0);
	const double cpu = cpu_seconds() - cpu0, wall = seconds_since(w0);
	if (t < p.total_s) {
		p.total_s = t;
		p.cpu_pct = wall > 0 ? 100 * cpu / wall : NAN;
	}
	std::vector<double> lat = mode.take_latencies();
	p.latency_us.insert(p.latency_us.end(), lat.begin(), lat.end());
}

void run_sweep(Mode &mode, const SweepOptions &o, Progress &progress, ModeResult &out,
	       std::vector<std::string> *failures)
{
	using clock = std::chrono::steady_clock;
	// Pass 1 calibrates each size and times its first block; the further --repeat passes go
	// over the sizes again, so that a slowdown of the host lasting seconds (other machines'
	// work on a shared host, the kernel's own threads) meets one block of a size, not all of
	// them, and the fastest block is the host's undisturbed figure.
	std::vector<Point> points;
	for (std::uint64_t bytes : o.sizes) {
		if (stop_requested())
			break;
		progress.step(mode.name() + " " + format_size(bytes));
		if ((mode.max_bytes() && bytes > mode.max_bytes()) || bytes < mode.min_bytes() ||
		    bytes % mode.granule() != 0)
			continue;
		double warm = 0;
		for (unsigned w = 0; w < o.warmup; ++w) {
			auto t0 = clock::now();
			mode.transfer(bytes);
			warm = seconds_since(t0);
		}
		if (o.warmup == 0 && !o.iterations) {
			// Without a warm-up the first timed transfer calibrates, and is not discarded.
			auto t0 = clock::now();
			mode.transfer(bytes);
			warm = seconds_since(t0);
		}
		if (!o.iterations) {
			// Calibrate N on blocks that grow until one lasts half of min_time: a single
			// transfer's time is too noisy a guide for transfers of microseconds. These blocks
			// are warm-up too; none of them is reported.
			std::uint64_t n = 1;
			double t = warm;
			while (t < o.min_time_s / 2 && n < o.max_iterations) {
				double grow = t > 0 ? std::min(100.0, o.min_time_s / t) : 100.0;
				n = std::min<std::uint64_t>(o.max_iterations,
							    std::max<std::uint64_t>(2 * n, static_cast<std::uint64_t>(std::ceil(n * grow))));
				auto t0 = clock::now();
				mode.run(bytes, n);
				t = seconds_since(t0);
			}
			warm = t / static_cast<double>(n);
		}
		Point p;
		p.bytes = bytes;
		p.iterations = auto_iterations(o, warm);
		p.total_s = INFINITY;
		mode.take_latencies(); // the calibration's are not reported
		SweepOptions first = o;
		first.warmup = 0;      // warmed up just now
		timed_block(mode, first, p);
		points.push_back(std::move(p));
	}
	for (unsigned r = 1; r < o.repeat; ++r)
		for (Point &p : points) {
			if (stop_requested())
				break;
			progress.step(mode.name() + " " + format_size(p.bytes) + " (pass " +
				      std::to_string(r + 1) + ")");
			timed_block(mode, o, p);
		}
	for (Point &p : points) {
		std::sort(p.latency_us.begin(), p.latency_us.end());
		if (o.verify && mode.can_verify() && !stop_requested()) {
			std::string why;
			bool ok = mode.verify(p.bytes, &why);
			p.verified = ok ? "ok" : "fail";
			if (!ok && failures)
				failures->push_back(mode.name() + " at " + format_size(p.bytes) + ": " + why);
		}
		out.points.push_back(std::move(p));
	}
	std::vector<Sample> samples;
	for (const auto &p : out.points)
		samples.push_back({static_cast<double>(p.bytes), p.seconds()});
	out.fit = fit_latency_bandwidth(samples);
}

} // namespace dmabench
