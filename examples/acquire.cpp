// SPDX-License-Identifier: LGPL-2.1-or-later
//
// acquire: continuous acquisition with libbufmgr.
//
// The board streams 16-bit samples (on the virtual board, or a board without user logic: the
// engine's pattern generator); a PooledBuffer keeps K DMA buffers queued on the C2H channel
// while this thread, the consumer, converts each filled buffer to float (Int16ToFloat, merged
// into the copy loop) and keeps running statistics. Like a DAQ that must not stall the board,
// it runs with Overflow::drop: when processing falls behind, buffers are dropped and counted
// instead of throttling the source.
//
//   acquire [DEVICE] [SECONDS] [BUFFERS] [BUFFER_KIB]
//   acquire emu:link=gen3x8 2 16 256
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <bufmgr/bufmgr.hpp>
#include <bufmgr/mprace_transfer.hpp>
#include <mprace/mprace.hpp>

int main(int argc, char **argv)
{
	const std::string device = argc > 1 ? argv[1] : "emu:link=gen3x8";
	const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
	const std::size_t k = argc > 3 ? std::strtoul(argv[3], nullptr, 0) : 16;
	const std::size_t buf = (argc > 4 ? std::strtoul(argv[4], nullptr, 0) : 256) * 1024;
	try {
		mprace::Board board(device);
		mprace::DMAEngine engine(board);
		if (board.info().caps.patternGenerator)
			board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);

		// Samples scaled to [-1, 1).
		using Pool = bufmgr::PooledBuffer<bufmgr::MpraceTransfer, bufmgr::Int16ToFloat>;
		Pool pool(bufmgr::MpraceTransfer(board, engine), k, buf, bufmgr::Int16ToFloat(1.0f / 32768));

		std::vector<float> samples(buf / sizeof(std::int16_t));
		double sum = 0, lo = 1, hi = -1;
		std::uint64_t n = 0;
		const auto t0 = std::chrono::steady_clock::now();
		bufmgr::StreamOptions opt;
		opt.overflow = bufmgr::Overflow::drop;
		const bufmgr::StreamStats st = pool.stream([&](Pool::Filled &f) {
			const std::size_t m = f.transform_into(samples.data());
			f.release(); // back to the board before the (slower) statistics
			for (std::size_t i = 0; i < m; ++i) {
				sum += samples[i];
				lo = std::min<double>(lo, samples[i]);
				hi = std::max<double>(hi, samples[i]);
			}
			n += m;
			return std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds);
		}, opt);
		const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		std::printf("%s: %zu x %zu KiB buffers, %.2f s\n", board.info().name.c_str(), k, buf / 1024, dt);
		std::printf("  delivered %llu buffers (%.1f MB/s), dropped %llu (overruns)\n",
			    static_cast<unsigned long long>(st.buffers), st.bytes / dt / 1e6,
			    static_cast<unsigned long long>(st.overruns));
		std::printf("  %llu samples: mean %.5f, min %.5f, max %.5f\n", static_cast<unsigned long long>(n),
			    n ? sum / n : 0.0, lo, hi);
		return 0;
	} catch (const std::system_error &e) {
		std::fprintf(stderr, "acquire: %s\n", e.what());
		return 1;
	}
}
