// SPDX-License-Identifier: LGPL-2.1-or-later
//
// bufmgr_bench: throughput of ChunkBuffer, DoubleBuffer and PooledBuffer (one-shot and
// streaming) reading board -> user memory, against the raw engine measured in the same run,
// for transfer sizes from --min to --max. Prints a table and, with --csv, writes CSV.
//
//   raw(S)      the engine alone moving S bytes as two queued C2H transfers, no CPU copy
//   (every figure is the best of 5 trials: see measure())
//   raw_max     raw at the largest size: the link's ceiling in this run
//   eff         throughput / raw_max (the target figures: DoubleBuffer >= 97% at >= 8 MiB,
//               PooledBuffer >= 95% at 1 MiB)
//
// --memcpy RATE runs the same algorithms over the host-only MemcpyTransfer paced at RATE MB/s
// (0: unpaced) instead of the board: the algorithms' own cost without the virtual board's
// threads. Not a test: nothing here passes or fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bufmgr/bufmgr.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "mprace/mprace.hpp"
#include "mprace/vboard.h"

using namespace bufmgr;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
	std::string device = "emu:link=gen3x8";
	std::size_t min = 4 << 10, max = 256 << 20;
	std::size_t chunk_buf = 1 << 20;      // ChunkBuffer: one buffer
	std::size_t double_buf = 256 << 10;   // DoubleBuffer: two buffers
	std::size_t pool_k = 16, pool_buf = 64 << 10;     // PooledBuffer one-shot
	std::size_t stream_k = 16, stream_buf = 256 << 10; // PooledBuffer streaming
	double seconds = 0.25;  // per point (at least 3 repetitions)
	double memcpy_rate = -1; // < 0: the board; >= 0: MemcpyTransfer at this MB/s
	std::string csv;
};

std::size_t parse_size(const char *s)
{
	char *end;
	double v = std::strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return static_cast<std::size_t>(v);
}

std::string human(std::size_t n)
{
	char b[32];
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		std::snprintf(b, sizeof b, "%zuM", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		std::snprintf(b, sizeof b, "%zuK", n >> 10);
	else
		std::snprintf(b, sizeof b, "%zu", n);
	return b;
}

// MB/s of f(size): the best of 5 trials, each repeating f for >= seconds / 5 (and >= 2 times),
// after one warm-up call. Best-of, because on a shared machine interference only ever makes a
// trial slower: the best trial is the closest to what the code can do.
double measure(const std::function<void(std::size_t)> &f, std::size_t size, double seconds)
{
	f(size);
	double best = 0;
	for (int trial = 0; trial < 5; ++trial) {
		int reps = 0;
		const auto t0 = Clock::now();
		double dt = 0;
		do {
			f(size);
			++reps;
			dt = std::chrono::duration<double>(Clock::now() - t0).count();
		} while (reps < 2 || dt < seconds / 5);
		best = std::max(best, static_cast<double>(size) * reps / dt / 1e6);
	}
	return best;
}

void usage()
{
	std::puts("usage: bufmgr_bench [--device NAME] [--min SIZE] [--max SIZE] [--chunk BUF]\n"
		  "                    [--double BUF] [--pool K BUF] [--stream K BUF] [--seconds S]\n"
		  "                    [--memcpy MBPS] [--csv FILE]\n"
		  "defaults: --device emu:link=gen3x8 --min 4K --max 256M --chunk 1M --double 256K\n"
		  "          --pool 16 64K --stream 16 256K --seconds 0.25");
}

template <class Make>
int run(const Config &c, Make make_transfer, const std::function<double(std::size_t)> &raw)
{
	std::vector<std::size_t> sizes;
	for (std::size_t s = c.min; s <= c.max; s *= 4)
		sizes.push_back(s);
	if (std::find(sizes.begin(), sizes.end(), std::size_t{8} << 20) == sizes.end() &&
	    c.min <= (8u << 20) && (8u << 20) <= c.max)
		sizes.push_back(8 << 20);
	std::sort(sizes.begin(), sizes.end());

	std::vector<std::byte> user(c.max);
	std::memset(user.data(), 1, user.size()); // fault the pages in before timing

	using T = decltype(make_transfer());
	ChunkBuffer<T> chunk(make_transfer(), c.chunk_buf);
	DoubleBuffer<T> dbl(make_transfer(), c.double_buf);
	PooledBuffer<T> pool(make_transfer(), c.pool_k, c.pool_buf);
	PooledBuffer<T> stream(make_transfer(), c.stream_k, c.stream_buf);

	struct Row {
		std::size_t size;
		double raw, chunk, dbl, pool, stream;
	};
	std::vector<Row> rows;
	for (std::size_t s : sizes) {
		Row r{s, 0, 0, 0, 0, 0};
		r.raw = raw(s);
		r.chunk = measure([&](std::size_t n) { chunk.read(user.data(), n); }, s, c.seconds);
		r.dbl = measure([&](std::size_t n) { dbl.read(user.data(), n); }, s, c.seconds);
		r.pool = measure([&](std::size_t n) { pool.read(user.data(), n); }, s, c.seconds);
		stream.start_stream();
		r.stream = measure([&](std::size_t n) { stream.read(user.data(), n); }, s, c.seconds);
		stream.stop_stream();
		rows.push_back(r);
		std::fprintf(stderr, "  %s done\n", human(s).c_str());
	}
	const double raw_max = std::max_element(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
		return a.raw < b.raw;
	})->raw;

	std::printf("\nthroughput in MB/s (10^6 B/s); eff = / raw_max = %.0f MB/s\n", raw_max);
	std::printf("%8s %9s | %9s %5s | %9s %5s | %9s %5s | %9s %5s\n", "size", "raw", "chunk", "eff",
		    "double", "eff", "pooled", "eff", "stream", "eff");
	for (const Row &r : rows)
		std::printf("%8s %9.0f | %9.0f %4.0f%% | %9.0f %4.0f%% | %9.0f %4.0f%% | %9.0f %4.0f%%\n",
			    human(r.size).c_str(), r.raw, r.chunk, 100 * r.chunk / raw_max, r.dbl,
			    100 * r.dbl / raw_max, r.pool, 100 * r.pool / raw_max, r.stream,
			    100 * r.stream / raw_max);
	if (!c.csv.empty()) {
		std::FILE *f = std::fopen(c.csv.c_str(), "w");
		if (!f) {
			std::perror(c.csv.c_str());
			return 1;
		}
		std::fprintf(f, "# bufmgr_bench %s; chunk 1x%zu, double 2x%zu, pooled %zux%zu, stream %zux%zu\n",
			     c.memcpy_rate >= 0 ? ("memcpy:" + std::to_string(c.memcpy_rate)).c_str() : c.device.c_str(),
			     c.chunk_buf, c.double_buf, c.pool_k, c.pool_buf, c.stream_k, c.stream_buf);
		std::fprintf(f, "size,raw_MBps,chunk_MBps,double_MBps,pooled_MBps,stream_MBps,raw_max_MBps\n");
		for (const Row &r : rows)
			std::fprintf(f, "%zu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", r.size, r.raw, r.chunk, r.dbl,
				     r.pool, r.stream, raw_max);
		std::fclose(f);
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	mp_vboard_register(); // the virtual board linked in: no plugin needed
	Config c;
	for (int i = 1; i < argc; ++i) {
		const std::string a = argv[i];
		auto need = [&](int n) {
			if (i + n >= argc) {
				usage();
				std::exit(2);
			}
		};
		if (a == "--device") { need(1); c.device = argv[++i]; }
		else if (a == "--min") { need(1); c.min = parse_size(argv[++i]); }
		else if (a == "--max") { need(1); c.max = parse_size(argv[++i]); }
		else if (a == "--chunk") { need(1); c.chunk_buf = parse_size(argv[++i]); }
		else if (a == "--double") { need(1); c.double_buf = parse_size(argv[++i]); }
		else if (a == "--pool") { need(2); c.pool_k = parse_size(argv[++i]); c.pool_buf = parse_size(argv[++i]); }
		else if (a == "--stream") { need(2); c.stream_k = parse_size(argv[++i]); c.stream_buf = parse_size(argv[++i]); }
		else if (a == "--seconds") { need(1); c.seconds = std::atof(argv[++i]); }
		else if (a == "--memcpy") { need(1); c.memcpy_rate = std::atof(argv[++i]); }
		else if (a == "--csv") { need(1); c.csv = argv[++i]; }
		else { usage(); return a == "--help" ? 0 : 2; }
	}
	if (c.min < 8 || c.max < c.min || c.min % 4 || c.max % 4) {
		std::fputs("bufmgr_bench: sizes must be multiples of 4, at least 8, with min <= max\n", stderr);
		return 2;
	}
	try {
		if (c.memcpy_rate >= 0) {
			std::printf("bufmgr_bench: MemcpyTransfer paced at %.0f MB/s (0: unpaced)\n", c.memcpy_rate);
			MemcpyOptions o;
			o.granule = 4;
			o.rate_mbps = c.memcpy_rate;
			// raw: the transfer alone (one buffer of the size, no copy out)
			MemcpyTransfer raw_t(o);
			raw_t.allocate(1, c.max);
			auto raw = [&](std::size_t s) {
				return measure([&](std::size_t n) {
					raw_t.start(Direction::c2h, 0, n);
					raw_t.wait(Direction::c2h, 0);
				}, s, c.seconds);
			};
			return run(c, [&] { return MemcpyTransfer(o); }, raw);
		}
		mprace::Board board(c.device);
		mprace::DMAEngine engine(board);
		board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		std::printf("bufmgr_bench: %s (%s), C2H from the pattern generator\n", c.device.c_str(),
			    board.info().name.c_str());
		std::printf("buffers: chunk 1 x %s, double 2 x %s, pooled %zu x %s, stream %zu x %s\n",
			    human(c.chunk_buf).c_str(), human(c.double_buf).c_str(), c.pool_k,
			    human(c.pool_buf).c_str(), c.stream_k, human(c.stream_buf).c_str());
		// raw: the engine alone, streaming S-byte reads back to back (the next one is queued
		// before the previous completes, alternating between two buffers), no CPU copy. Kernel
		// memory; user memory where the board cannot allocate that much kernel memory.
		HostMemory raw_mem[2]; // declared first: outlive the DMABuffers that pin them
		std::unique_ptr<mprace::DMABuffer> raw_buf[2];
		auto raw = [&](std::size_t s) {
			for (int k = 0; k < 2; ++k) {
				raw_buf[k].reset();
				try {
					raw_buf[k] = std::make_unique<mprace::DMABuffer>(board, s);
				} catch (const std::system_error &) {
					raw_mem[k] = HostMemory(s);
					raw_buf[k] = std::make_unique<mprace::DMABuffer>(board, raw_mem[k].data(), s);
				}
			}
			return measure([&](std::size_t n) {
				// n bytes as two back-to-back halves of n / 2 (n >= 8), so one is always queued
				const std::size_t h = n / 2 / 4 * 4;
				mprace::Transfer a = engine.readAsync(*raw_buf[0], 0, h);
				mprace::Transfer b = engine.readAsync(*raw_buf[1], 0, n - h);
				a.get();
				b.get();
			}, s, c.seconds);
		};
		return run(c, [&] { return MpraceTransfer(board, engine); }, raw);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "bufmgr_bench: %s\n", e.what());
		return 1;
	}
}
