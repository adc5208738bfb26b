// SPDX-License-Identifier: GPL-2.0
//
// dmabench's arithmetic and file formats, without a board: the latency/bandwidth fit on
// synthetic data with known parameters, the size sweep and size parsing, mode names, the
// reference efficiencies, and the CSV/JSON outputs compared byte for byte with golden files
// (tests/tools/tools-golden/), so that any change of the documented schema fails here.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "check_main.h"
#include "size_cases.h"
#include "bench/fit.hpp"
#include "bench/modes_impl.hpp"
#include "bench/plot.hpp"
#include "bench/report.hpp"
#include "bench/sweep.hpp"
#include "common/units.hpp"

using namespace dmabench;

namespace {

std::vector<Sample> model(double latency_s, double bw_Bps, std::uint64_t min, std::uint64_t max,
			  double noise = 0)
{
	std::vector<Sample> v;
	unsigned seed = 12345;
	for (std::uint64_t s = min; s <= max; s *= 2) {
		double t = latency_s + static_cast<double>(s) / bw_Bps;
		if (noise > 0) {
			// deterministic pseudo-random factor in [1 - noise, 1 + noise]
			seed = seed * 1103515245u + 12345u;
			double u = static_cast<double>((seed >> 8) & 0xffff) / 65535.0;
			t *= 1 + noise * (2 * u - 1);
		}
		v.push_back({static_cast<double>(s), t});
	}
	return v;
}

// Check's ck_assert_str_eq keeps its argument's pointer past the end of the full expression,
// which dangles for a std::string temporary: compare std::strings here instead.
void expect_str(const std::string &got, const char *want)
{
	ck_assert_msg(got == want, "got '%s', want '%s'", got.c_str(), want);
}

bool near(double got, double want, double rel) { return std::fabs(got - want) <= rel * std::fabs(want); }

std::string slurp(const std::string &path)
{
	std::ifstream f(path);
	ck_assert_msg(f.good(), "cannot read %s", path.c_str());
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

// Compares with tests/tools/tools-golden/NAME; on a difference the output is left in
// NAME.actual (build directory) for diff.
void check_golden(const std::string &out, const char *name)
{
	const char *top = std::getenv("top_srcdir");
	std::string want = slurp(std::string(top ? top : "../..") + "/tests/tools/tools-golden/" + name);
	if (out != want) {
		std::ofstream(std::string(name) + ".actual") << out;
		ck_abort_msg("%s differs from tools-golden/%s (see %s.actual)", name, name, name);
	}
}

// A run with fixed numbers: two modes with exact model times, one reference, one skipped.
Run synthetic_run()
{
	Run run;
	RunInfo &i = run.info;
	i.version = "0.1.0";
	i.date = "2026-01-02T03:04:05Z";
	i.host = "testhost";
	i.device = "emu:link=gen3x8";
	i.device_desc = "virtual board \"gen3x8\"";
	i.backend = "emu";
	i.command_line = "dmabench --quick";
	i.sizes = {4096, 65536, 1048576};
	i.warmup = 1;
	i.iterations = 0;
	i.min_time_s = 0.01;
	i.repeat = 1;
	i.verify = true;
	i.cpus = "";
	i.reference = "auto";
	i.wall_s = 1.25;
	const double lat[2] = {2e-6, 3e-6}, bw[2] = {6.4e9, 3.2e9};
	const char *names[2] = {"c2h", "db4M-c2h"};
	for (int m = 0; m < 2; ++m) {
		ModeResult r;
		r.name = names[m];
		r.direction = "c2h";
		r.description = m ? "bufmgr DoubleBuffer" : "raw DMA";
		r.reference = m ? "c2h" : "";
		for (std::uint64_t s : i.sizes) {
			Point p;
			p.bytes = s;
			p.iterations = 100;
			p.total_s = 100 * (lat[m] + static_cast<double>(s) / bw[m]);
			p.verified = "ok";
			r.points.push_back(p);
		}
		std::vector<Sample> samples;
		for (const auto &p : r.points)
			samples.push_back({static_cast<double>(p.bytes), p.seconds()});
		r.fit = fit_latency_bandwidth(samples);
		run.modes.push_back(r);
	}
	run.skipped.push_back({"hg", "no CUDA GPU found"});
	for (auto &m : run.modes)
		apply_reference(m, run);
	return run;
}

} // namespace

START_TEST(test_fit_exact)
{
	// The thesis' Linux figures (MB/s, us): every curve t = latency + size / bandwidth.
	const double figures[][2] = {{1817, 3}, {1706, 3}, {6243, 8}, {6389, 10}, {1389, 7}, {55200, 8.5}};
	for (const auto &f : figures) {
		Fit fit = fit_latency_bandwidth(model(f[1] * 1e-6, f[0] * 1e6, 4, 32u << 20));
		ck_assert(fit.valid);
		ck_assert_msg(near(fit.bandwidth_MBps(), f[0], 1e-9), "bandwidth %f, want %f", fit.bandwidth_MBps(), f[0]);
		ck_assert_msg(near(fit.latency_us(), f[1], 1e-9), "latency %f, want %f", fit.latency_us(), f[1]);
		ck_assert(fit.rms_rel_error < 1e-9);
		ck_assert_uint_eq(fit.points, 24);
	}
}
END_TEST

START_TEST(test_fit_noisy)
{
	// +-3% multiplicative noise on each time: the relative weighting keeps both parameters
	// close, the latency included (plain least squares would lose it in the big sizes' noise).
	Fit fit = fit_latency_bandwidth(model(5e-6, 6.4e9, 4096, 1u << 30, 0.03));
	ck_assert(fit.valid);
	ck_assert_msg(near(fit.bandwidth_MBps(), 6400, 0.03), "bandwidth %f", fit.bandwidth_MBps());
	ck_assert_msg(near(fit.latency_us(), 5, 0.10), "latency %f", fit.latency_us());
	ck_assert(fit.rms_rel_error > 0.005 && fit.rms_rel_error < 0.03);
	// The model reproduces the data it was fitted to.
	ck_assert(near(fit.predict_seconds(1 << 20), 5e-6 + 1048576 / 6.4e9, 0.03));
}
END_TEST

// Data whose free fit has a negative intercept (per-transfer time falls faster than the
// size): the latency is clamped to 0 and the bandwidth is the best line through the origin.
START_TEST(test_fit_latency_never_negative)
{
	std::vector<Sample> s = {{4096, 0.5e-6}, {8192, 1.3e-6}, {16384, 2.9e-6}, {32768, 6.1e-6}};
	Fit fit = fit_latency_bandwidth(s);
	ck_assert(fit.valid);
	ck_assert(fit.latency_s == 0);
	// weighted least squares through the origin: slope = sum(w x t) / sum(w x^2), w = 1/t^2
	double num = 0, den = 0;
	for (const auto &p : s) {
		num += p.bytes / p.seconds;
		den += p.bytes * p.bytes / (p.seconds * p.seconds);
	}
	ck_assert_msg(near(fit.bandwidth_Bps, den / num, 1e-9), "bandwidth %g, want %g",
		      fit.bandwidth_Bps, den / num);
	ck_assert(fit.rms_rel_error > 0.05);   // the model fits poorly, and says so
}
END_TEST

START_TEST(test_fit_degenerate)
{
	ck_assert(!fit_latency_bandwidth({}).valid);
	ck_assert(!fit_latency_bandwidth({{4096, 1e-6}}).valid);
	ck_assert(!fit_latency_bandwidth({{4096, 1e-6}, {4096, 2e-6}}).valid);    // one size
	ck_assert(!fit_latency_bandwidth({{4096, 2e-6}, {8192, 1e-6}}).valid);    // slope < 0
	ck_assert(!fit_latency_bandwidth({{4096, 0}, {8192, 1e-6}}).valid);       // zero time
	Fit two = fit_latency_bandwidth({{4096, 2e-6}, {8192, 3e-6}});
	ck_assert(two.valid);
	ck_assert(near(two.latency_us(), 1, 1e-9));
	ck_assert(near(two.bandwidth_MBps(), 4096.0, 1e-9));
}
END_TEST

START_TEST(test_sizes)
{
	using tools::parse_size;
	// the one table the C tests use too (tests/common/size_cases.h)
	for (const size_case &c : size_cases) {
		bool threw = false;
		std::uint64_t v = 0;
		try {
			v = parse_size(c.text);
		} catch (const std::invalid_argument &) {
			threw = true;
		}
		if (c.ok)
			ck_assert_msg(!threw && v == c.bytes, "'%s': %llu", c.text,
				      static_cast<unsigned long long>(v));
		else
			ck_assert_msg(threw, "'%s' accepted", c.text);
	}
	ck_assert_uint_eq(parse_size("256MiB"), 256u << 20);
	expect_str(tools::format_size(4096), "4 KiB");
	expect_str(tools::format_size(3 << 19), "1.50 MiB");
	expect_str(tools::format_size_short(256u << 20), "256M");

	auto d = parse_sizes("4K:256M:2"); // the default sweep
	ck_assert_uint_eq(d.size(), 17);
	ck_assert_uint_eq(d.front(), 4096);
	ck_assert_uint_eq(d.back(), 256u << 20);
	auto q = parse_sizes("4K:16M:4"); // --quick
	ck_assert_uint_eq(q.size(), 7);
	ck_assert_uint_eq(q[1], 16384);
	ck_assert_uint_eq(parse_sizes("4K:10K:2").size(), 2); // max not on the sequence
	auto l = parse_sizes("1M,4K,64K,4K");
	ck_assert_uint_eq(l.size(), 3);
	ck_assert_uint_eq(l[0], 4096);
	ck_assert_uint_eq(l[2], 1u << 20);
	for (const char *bad : {"4K:1K", "4K:1M:1", "0:1M", "4K:1M:2:3", "4K,,8K", "4K,0"}) {
		bool threw = false;
		try {
			parse_sizes(bad);
		} catch (const std::invalid_argument &) {
			threw = true;
		}
		ck_assert_msg(threw, "'%s' accepted", bad);
	}
}
END_TEST

START_TEST(test_iterations)
{
	SweepOptions o;
	o.min_time_s = 0.05;
	ck_assert_uint_eq(auto_iterations(o, 1e-3), 50);
	ck_assert_uint_eq(auto_iterations(o, 1.0), o.min_iterations);
	ck_assert_uint_eq(auto_iterations(o, 1e-12), o.max_iterations);
	o.iterations = 7;
	ck_assert_uint_eq(auto_iterations(o, 1e-3), 7);
}
END_TEST

START_TEST(test_mode_names)
{
	auto one = [](const char *n) {
		auto v = expand_mode(n);
		ck_assert_uint_eq(v.size(), 1);
		return v[0];
	};
	expect_str(one("FH"), "c2h");
	expect_str(one("HF"), "h2c");
	expect_str(one("HG"), "hg");
	expect_str(one("GH"), "gh");
	expect_str(one("FI"), "fi");
	expect_str(one("GI"), "gi");
	expect_str(one("C2H-UMEM"), "c2h-umem");
	expect_str(one("db4096k-h2c"), "db4M-h2c");
	expect_str(one("pb1mx8-c2h"), "pb1Mx8-c2h");
	expect_str(one("fi-pb4Mx8"), "fi-pb4Mx8");
	expect_str(one("fi-db8M"), "fi-db8M");
	expect_str(one("memcpy-mt"), "memcpy-mt");
	expect_str(one("MEMCPY-MT8"), "memcpy-mt8");
	expect_str(one("db4M-c2h:i16f"), "db4M-c2h:i16f");
	expect_str(one("OPS-C2H"), "ops-c2h");
	expect_str(one("ops-h2c-b64"), "ops-h2c-b64");
	expect_str(one("ops-c2h-b1"), "ops-c2h");
	expect_str(one("IG-B4"), "ig-b4");
	expect_str(one("ig-b1"), "ig");
	ck_assert(is_gpu_mode("ig-b8"));
	auto samples = expand_mode("pb1Mx8:I16F");
	ck_assert_uint_eq(samples.size(), 2);
	ck_assert_str_eq(samples[0].c_str(), "pb1Mx8-c2h:i16f");
	ck_assert_str_eq(samples[1].c_str(), "pb1Mx8-h2c:i16f");
	auto both = expand_mode("cb4M");
	ck_assert_uint_eq(both.size(), 2);
	ck_assert_str_eq(both[0].c_str(), "cb4M-c2h");
	ck_assert_str_eq(both[1].c_str(), "cb4M-h2c");
	ck_assert(is_gpu_mode("fi-serial"));
	ck_assert(is_gpu_mode("fr") && is_gpu_mode("GR"));
	ck_assert(!is_gpu_mode("c2h"));
	for (const char *bad : {"", "c3h", "db", "dbx-c2h", "pb4M-c2h", "pb4Mx1", "fi-xx", "fr-db4M", "db4M-x2h",
				"memcpy-mt0", "memcpy-mt65", "memcpy-mtx", "db4M:f16i", "db4M-c2h:i16f:i16f",
				"ops-c2h-b0", "ops-c2h-b257", "ops-c2h-bx", "ops-c2h64", "ops-c2hx", "ig-b0", "ig-b9",
				"ig-bx", "ig-b", "ig-b4x"}) {
		bool threw = false;
		try {
			expand_mode(bad);
		} catch (const BadMode &) {
			threw = true;
		}
		ck_assert_msg(threw, "mode '%s' accepted", bad);
	}
}
END_TEST

START_TEST(test_pattern)
{
	std::uint32_t buf[64];
	fill_pattern(buf, sizeof(buf), 0xfffffff0u);
	ck_assert_uint_eq(buf[0], 0xfffffff0u);
	ck_assert_uint_eq(buf[16], 0); // wraps mod 2^32
	ck_assert_int_eq(check_pattern(buf, sizeof(buf), 0xfffffff0u), -1);
	buf[33] ^= 1;
	ck_assert_int_eq(check_pattern(buf, sizeof(buf), 0xfffffff0u), 33);
}
END_TEST

START_TEST(test_reference)
{
	Run run = synthetic_run();
	const ModeResult &db = run.modes[1];
	// DoubleBuffer at half the bandwidth: efficiency = its throughput / c2h's at each size.
	for (std::size_t k = 0; k < db.points.size(); ++k)
		ck_assert(near(db.points[k].efficiency,
			       db.points[k].throughput_MBps() / run.modes[0].points[k].throughput_MBps(), 1e-12));
	ck_assert(near(db.fit_efficiency, 0.5, 1e-9));
	ck_assert(std::isnan(run.modes[0].points[0].efficiency));
	// min(a;b): the slower of two stages at each size.
	ModeResult m = run.modes[1];
	m.name = "fi";
	m.reference = "min(c2h;db4M-c2h)";
	apply_reference(m, run);
	ck_assert(near(m.points[2].efficiency, 1.0, 1e-12));
	ck_assert(near(m.fit_efficiency, 1.0, 1e-9));
	// The knee: the smallest size from which on every size is at >= 90 % (db4M-c2h against
	// c2h reaches only ~62 %).
	ck_assert_uint_eq(m.knee90_bytes(), 4096);
	ck_assert_uint_eq(db.knee90_bytes(), 0);
	m.points[0].efficiency = 0.89;
	ck_assert_uint_eq(m.knee90_bytes(), 65536);
	m.points[0].efficiency = 0.95; // reaching 90 % once at a small size is no knee
	m.points[1].efficiency = 0.85;
	ck_assert_uint_eq(m.knee90_bytes(), 1048576);
	m.points[2].efficiency = 0.85;
	ck_assert_uint_eq(m.knee90_bytes(), 0);
	// A reference that is not in the run gives no efficiency.
	m.reference = "h2c";
	m.points[0].efficiency = NAN;
	apply_reference(m, run);
	ck_assert(std::isnan(m.points[0].efficiency));
}
END_TEST

START_TEST(test_csv_schema)
{
	// The documented headers (docs/dmabench.md), spelled out here on purpose.
	ck_assert_str_eq(kPointsCsvHeader,
		"mode,direction,bytes,iterations,total_s,time_us,throughput_MBps,efficiency,reference,verified");
	ck_assert_str_eq(kFitCsvHeader,
		"mode,direction,latency_us,bandwidth_MBps,rms_rel_error,points,reference,bandwidth_efficiency,knee90_bytes");
	ck_assert_str_eq(kSchema, "mprace-dmabench/1");
	Run run = synthetic_run();
	std::ostringstream pts, fit;
	write_points_csv(pts, run);
	write_fit_csv(fit, run);
	check_golden(pts.str(), "run.csv");
	check_golden(fit.str(), "run-fit.csv");
}
END_TEST

START_TEST(test_json_schema)
{
	Run run = synthetic_run();
	std::ostringstream js;
	write_json(js, run);
	check_golden(js.str(), "run.json");
	expect_str(json_escape("a\"b\\c\n\x01"), "a\\\"b\\\\c\\n\\u0001");
}
END_TEST

// A mode far slower than the others (PIO next to DMA) gets the right-hand axis, so that it does
// not lie on the zero line; with only slow modes there is one axis.
START_TEST(test_svg_right_axis)
{
	Run run = synthetic_run();
	ModeResult pio = run.modes[0];
	pio.name = "pio-read";
	for (auto &p : pio.points)
		p.total_s = p.iterations * static_cast<double>(p.bytes) / 4e6;   // 4 MB/s
	std::vector<Sample> samples;
	for (const auto &p : pio.points)
		samples.push_back({static_cast<double>(p.bytes), p.seconds()});
	pio.fit = fit_latency_bandwidth(samples);
	run.modes.push_back(pio);
	std::vector<bool> right = right_axis_modes(run);
	ck_assert_uint_eq(right.size(), 3);
	ck_assert(!right[0] && !right[1] && right[2]);
	std::ostringstream svg;
	write_svg(svg, run);
	std::string s = svg.str();
	ck_assert(s.find("pio-read: 4 MB/s, 0.0 \u00b5s (right axis)") != std::string::npos);
	ck_assert(s.find("right axis: MB/s of the slow modes") != std::string::npos);
	Run slow;
	slow.modes.push_back(pio);
	right = right_axis_modes(slow);
	ck_assert(!right[0]);
}
END_TEST

START_TEST(test_svg)
{
	Run run = synthetic_run();
	std::ostringstream svg;
	write_svg(svg, run);
	std::string s = svg.str();
	ck_assert(s.compare(0, 5, "<?xml") == 0);
	ck_assert(s.find("</svg>") != std::string::npos);
	// one curve per mode, one marker per point, the legend with the fitted figures
	std::size_t curves = 0, pos = 0;
	while ((pos = s.find("stroke-width=\"2\" points=", pos)) != std::string::npos)
		++curves, ++pos;
	ck_assert_uint_eq(curves, 2);
	ck_assert(s.find("db4M-c2h: 3200 MB/s, 3.0") != std::string::npos);
	ck_assert(s.find("&quot;gen3x8&quot;") != std::string::npos); // escaped
	ck_assert(s.find("right axis") == std::string::npos);       // both fast: one axis
}
END_TEST

// Latency percentiles by nearest rank on known data.
START_TEST(test_latency_summary)
{
	std::vector<double> v;
	for (int k = 1; k <= 1000; ++k)
		v.push_back(k);
	LatencySummary l = summarize_latency(v);
	ck_assert_uint_eq(l.samples, 1000);
	ck_assert(l.min == 1 && l.p50 == 500 && l.p99 == 990 && l.p999 == 999 && l.max == 1000);
	l = summarize_latency({7.5});
	ck_assert(l.samples == 1 && l.p50 == 7.5 && l.p999 == 7.5 && l.max == 7.5);
	l = summarize_latency({});
	ck_assert_uint_eq(l.samples, 0);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *tc = tcase_create("dmabench");
	tcase_add_test(tc, test_fit_exact);
	tcase_add_test(tc, test_fit_noisy);
	tcase_add_test(tc, test_fit_degenerate);
	tcase_add_test(tc, test_fit_latency_never_negative);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_iterations);
	tcase_add_test(tc, test_mode_names);
	tcase_add_test(tc, test_pattern);
	tcase_add_test(tc, test_reference);
	tcase_add_test(tc, test_csv_schema);
	tcase_add_test(tc, test_json_schema);
	tcase_add_test(tc, test_svg);
	tcase_add_test(tc, test_svg_right_axis);
	tcase_add_test(tc, test_latency_summary);
	suite_add_tcase(s, tc);
	return s;
}
