// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace-recv: the receiving end of the network stage (bufmgr/net.hpp). Listens on an address,
// accepts any number of senders (dmabench's net modes, or a program of the user's), checks each
// chunk against the board's counter pattern at the chunk's stream offset, counts lost,
// duplicated and reordered chunks per sender, and prints the throughput it sees. With --gpu
// every chunk goes on into GPU memory (bufmgr/net_cuda.hpp) and is checked there; with --board
// it goes on to this host's board (H2C), whose pattern checker checks it.
// docs/network.md and mprace-recv(1) describe it.
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "../common/device.hpp"
#include "../common/units.hpp"
#include "bufmgr/net.hpp"
#include "mprace-spec/pattern.h"
#include "recv_board.hpp"
#include "recv_gpu.hpp"

using tools::strprintf;

namespace {

constexpr int EXIT_DATA = 1, EXIT_USAGE = 2, EXIT_GPU = 3, EXIT_BOARD = 4, EXIT_INTERRUPTED = 130;

void usage(FILE *f)
{
	std::fprintf(f,
"Usage: mprace-recv --listen [HOST]:PORT [OPTIONS]\n"
"Receive the chunks of network-stage senders (dmabench -m net --net-to HOST:PORT), check them\n"
"against the board's counter pattern and print the throughput.\n"
"\n"
"  -l, --listen [HOST]:PORT  address to listen on; port 0 picks a free one (see --port-file)\n"
"      --senders N        stop when N senders have ended their stream (or were lost);\n"
"                         default: run until Ctrl-C or --duration\n"
"      --duration SEC     stop after SEC seconds\n"
"      --seed N           the pattern's seed (dmabench --net-seed; default 0)\n"
"      --no-check         do not check the data (count it only)\n"
"      --window N         chunks each sender may have in flight (credits; default 8)\n"
"      --max-chunk SIZE   the largest chunk taken (default 4M)\n"
"      --hold-us US       keep each chunk US microseconds before releasing it: a slow\n"
"                         consumer, whose back-pressure reaches the senders' boards\n"
"      --gpu N            take every chunk on into GPU N's memory (the copy engine reads the\n"
"                         receiver's memory) and check the pattern there, on the GPU\n"
"      --gpu-depth N      chunks on the GPU at once (GPU buffers of --max-chunk; default 4)\n"
"      --board DEVICE     write every chunk on to this host's board (H2C, from where it\n"
"                         landed: no CPU copy), whose pattern checker checks it (emu:,\n"
"                         sim:, /dev/fpgaN)\n"
"      --port-file FILE   write the port listened on to FILE once listening\n"
"      --interval SEC     print the throughput every SEC seconds (default 1; 0: never)\n"
"  -q, --quiet            only the summary\n"
"  -h, --help             this text\n"
"\n"
"Exit status: 0 every sender ended with all its chunks intact, 1 data missing, duplicated,\n"
"wrong or a sender lost, 2 bad usage, cannot listen, cannot write the port file, no such\n"
"GPU or board, 3 a GPU error, 4 a board error, 130 interrupted (summary printed).\n");
}

[[noreturn]] void usage_error(const std::string &msg)
{
	std::fprintf(stderr, "mprace-recv: %s\n\n", msg.c_str());
	usage(stderr);
	std::exit(EXIT_USAGE);
}

std::atomic<bool> g_stop{false};
bufmgr::net::Receiver *g_receiver = nullptr;

void on_signal(int)
{
	g_stop.store(true);
	if (g_receiver)
		g_receiver->interrupt(); // ucp_worker_signal: a write to an event fd
}

struct Options {
	std::string listen;
	std::uint64_t senders = 0, seed = 0, window = 8, max_chunk = 4u << 20, hold_us = 0;
	int gpu = -1; // --gpu
	std::uint64_t gpu_depth = 4;
	bool gpu_depth_given = false;
	std::string board; // --board
	double duration = 0, interval = 1;
	bool check = true, quiet = false;
	std::string port_file;
};

Options parse(int argc, char **argv)
{
	enum { OPT_SENDERS = 256, OPT_DURATION, OPT_SEED, OPT_NO_CHECK, OPT_WINDOW, OPT_MAX_CHUNK, OPT_HOLD,
	       OPT_PORT_FILE, OPT_INTERVAL, OPT_GPU, OPT_GPU_DEPTH, OPT_BOARD };
	static const option longopts[] = {
		{"listen", required_argument, nullptr, 'l'},
		{"senders", required_argument, nullptr, OPT_SENDERS},
		{"duration", required_argument, nullptr, OPT_DURATION},
		{"seed", required_argument, nullptr, OPT_SEED},
		{"no-check", no_argument, nullptr, OPT_NO_CHECK},
		{"window", required_argument, nullptr, OPT_WINDOW},
		{"max-chunk", required_argument, nullptr, OPT_MAX_CHUNK},
		{"hold-us", required_argument, nullptr, OPT_HOLD},
		{"port-file", required_argument, nullptr, OPT_PORT_FILE},
		{"gpu", required_argument, nullptr, OPT_GPU},
		{"gpu-depth", required_argument, nullptr, OPT_GPU_DEPTH},
		{"board", required_argument, nullptr, OPT_BOARD},
		{"interval", required_argument, nullptr, OPT_INTERVAL},
		{"quiet", no_argument, nullptr, 'q'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	Options o;
	opterr = 0;
	int c;
	const auto number = [](const char *opt, std::uint64_t most) {
		std::uint64_t v = 0;
		try {
			v = tools::parse_u64(optarg, "number");
		} catch (const std::invalid_argument &) {
			usage_error(strprintf("--%s takes a number, not '%s'", opt, optarg));
		}
		if (v > most)
			usage_error(strprintf("--%s takes at most %llu", opt, static_cast<unsigned long long>(most)));
		return v;
	};
	const auto seconds = [](const char *opt) {
		double v = -1;
		try {
			v = tools::parse_double(optarg, "seconds");
		} catch (const std::invalid_argument &) {
		}
		if (!(v >= 0) || v > 1e7)
			usage_error(strprintf("--%s takes seconds (>= 0), not '%s'", opt, optarg));
		return v;
	};
	while ((c = getopt_long(argc, argv, ":l:qh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'l': o.listen = optarg; break;
		case OPT_SENDERS: o.senders = number("senders", 65536); break;
		case OPT_DURATION: o.duration = seconds("duration"); break;
		case OPT_SEED: o.seed = number("seed", UINT32_MAX); break;
		case OPT_NO_CHECK: o.check = false; break;
		case OPT_WINDOW:
			o.window = number("window", 1024);
			if (o.window == 0)
				usage_error("--window takes 1 to 1024 chunks");
			break;
		case OPT_MAX_CHUNK:
			try {
				o.max_chunk = tools::parse_size(optarg);
			} catch (const std::invalid_argument &) {
				usage_error(strprintf("--max-chunk takes a size such as 4M, not '%s'", optarg));
			}
			if (o.max_chunk == 0 || o.max_chunk > UINT32_MAX)
				usage_error("--max-chunk takes 1 byte to 4G - 1");
			break;
		case OPT_HOLD: o.hold_us = number("hold-us", 10000000); break;
		case OPT_PORT_FILE: o.port_file = optarg; break;
		case OPT_GPU: o.gpu = static_cast<int>(number("gpu", 1023)); break;
		case OPT_GPU_DEPTH:
			o.gpu_depth = number("gpu-depth", 256); // bufmgr::net::max_gpu_depth
			if (o.gpu_depth == 0)
				usage_error("--gpu-depth takes 1 to 256 chunks");
			o.gpu_depth_given = true;
			break;
		case OPT_BOARD:
			if (!*optarg)
				usage_error("--board takes a device name (emu:, sim:, /dev/fpgaN)");
			o.board = optarg;
			break;
		case OPT_INTERVAL: o.interval = seconds("interval"); break;
		case 'q': o.quiet = true; break;
		case 'h': usage(stdout); std::exit(0);
		case ':': usage_error(strprintf("%s needs a value", argv[optind - 1]));
		default: usage_error(strprintf("unknown option %s", argv[optind - 1]));
		}
	}
	if (optind < argc)
		usage_error(strprintf("unexpected argument '%s'", argv[optind]));
	if (o.listen.empty())
		usage_error("--listen [HOST]:PORT is required");
	if (o.gpu_depth_given && o.gpu < 0)
		usage_error("--gpu-depth needs --gpu");
	if (!o.board.empty() && o.gpu >= 0)
		usage_error("--board and --gpu: a chunk goes on to one of them");
	return o;
}

double mbps(std::uint64_t bytes, double s) { return s > 0 ? bytes / s / 1e6 : 0; }

} // namespace

int main(int argc, char **argv)
{
	tools::link_virtual_board();
	const Options o = parse(argc, argv);
	// A receiver restarted after a crash takes its port again at once (SO_REUSEADDR), unless
	// the user says otherwise; UCX reads this when it starts.
	setenv("UCX_TCP_CM_REUSEADDR", "y", 0);
	bufmgr::net::ReceiverOptions ro;
	ro.listen = o.listen;
	ro.window = o.window;
	ro.max_chunk = o.max_chunk;
	std::unique_ptr<bufmgr::net::Receiver> rx;
	try {
		rx = std::make_unique<bufmgr::net::Receiver>(ro);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "mprace-recv: %s\n", e.what());
		return EXIT_USAGE;
	}
	// The board before the port file: a script that sees the port expects a receiver that runs.
	std::unique_ptr<recvboard::Sink> board;
	if (!o.board.empty()) {
		try {
			board = std::make_unique<recvboard::Sink>(o.board, o.max_chunk, static_cast<std::uint32_t>(o.seed));
		} catch (const std::exception &e) {
			std::fprintf(stderr, "mprace-recv: --board %s: %s\n", o.board.c_str(), e.what());
			return EXIT_USAGE;
		}
	}
	g_receiver = rx.get();
	struct sigaction sa{};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	if (!o.port_file.empty()) {
		// whole, or not there yet (a script polls for it); one that cannot be written would
		// leave that script waiting for ever
		const std::string tmp = o.port_file + ".tmp";
		std::ofstream f(tmp);
		f << rx->port() << "\n";
		f.close();
		if (!f || std::rename(tmp.c_str(), o.port_file.c_str())) {
			const int err = errno;
			std::remove(tmp.c_str());
			std::fprintf(stderr, "mprace-recv: cannot write the port file %s: %s\n", o.port_file.c_str(),
				     std::strerror(err ? err : EIO));
			return EXIT_USAGE;
		}
	}
	std::printf("mprace-recv: listening on %s (port %u), window %llu, max chunk %llu bytes\n",
		    o.listen.c_str(), rx->port(), static_cast<unsigned long long>(o.window),
		    static_cast<unsigned long long>(o.max_chunk));
	std::fflush(stdout);

	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	clock::time_point first{}, last{}, tick = start;
	std::uint64_t bytes = 0, chunks = 0, bytes_at_tick = 0, pattern_errors = 0;
	std::vector<std::uint64_t> bad_per_conn;
	// A chunk found wrong: counted, and the first few said.
	const auto wrong = [&](const bufmgr::net::ChunkHeader &h, std::size_t conn, const std::string &what) {
		if (bad_per_conn.size() <= conn)
			bad_per_conn.resize(conn + 1);
		++pattern_errors;
		++bad_per_conn[conn];
		if (pattern_errors <= 5)
			std::printf("mprace-recv: source %u chunk %llu: %s\n", h.source,
				    static_cast<unsigned long long>(h.sequence), what.c_str());
	};
	// A chunk that arrived whole (and, with --gpu, was copied and checked on the GPU); `at` is
	// where it first differs from the pattern, -1 where it does not or was not checked.
	const auto arrived = [&](const bufmgr::net::ChunkHeader &h, std::size_t size, std::size_t conn, std::int64_t at) {
		const auto t = clock::now();
		if (!chunks)
			first = t;
		last = t;
		++chunks;
		bytes += size;
		if (bad_per_conn.size() <= conn)
			bad_per_conn.resize(conn + 1);
		if (at >= 0)
			wrong(h, conn, strprintf("byte %lld (stream offset %llu) differs from the pattern%s",
						 static_cast<long long>(at), static_cast<unsigned long long>(h.offset + at),
						 o.gpu >= 0 ? " (in GPU memory)" : ""));
	};
	std::unique_ptr<recvgpu::Stage> gpu;
	if (o.gpu >= 0) {
		try {
			gpu = recvgpu::make(*rx, o.gpu, o.gpu_depth, o.check, static_cast<std::uint32_t>(o.seed),
					    [&](const recvgpu::Done &d) { arrived(d.header, d.bytes, d.connection, d.first_bad); });
		} catch (const std::exception &e) {
			std::fprintf(stderr, "mprace-recv: --gpu %d: %s\n", o.gpu, e.what());
			return EXIT_USAGE;
		}
		std::printf("mprace-recv: chunks go on into %s, %llu at a time%s\n", gpu->describe().c_str(),
			    static_cast<unsigned long long>(o.gpu_depth), o.check ? ", checked there" : "");
		std::fflush(stdout);
	}
	if (board) {
		std::printf("mprace-recv: chunks go on to the board %s%s\n", board->device().c_str(),
			    o.check ? ", checked by its pattern checker" : "");
		std::fflush(stdout);
	}
	bool gpu_failed = false, board_failed = false;
	// --board: a chunk the board has taken goes back to the receiver; a run of chunks the
	// checker found wrong is reported with its first chunk.
	const auto board_took = [&](const bufmgr::net::Chunk &c) {
		arrived(c.header, c.size, c.connection, -1);
		if (o.hold_us)
			std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
		rx->release(c);
	};
	const auto board_judged = [&](const recvboard::Run &r) {
		if (!o.check || (r.checked == r.words && r.errors == 0))
			return;
		const bufmgr::net::ChunkHeader &a = r.chunks.front().header, &z = r.chunks.back().header;
		wrong(a, r.chunks.front().connection,
		      strprintf("the board's checker found %llu of %llu words differing from the pattern in "
				"chunks %llu to %llu (stream offsets %llu to %llu)%s",
				static_cast<unsigned long long>(r.errors), static_cast<unsigned long long>(r.words),
				static_cast<unsigned long long>(a.sequence), static_cast<unsigned long long>(z.sequence),
				static_cast<unsigned long long>(a.offset),
				static_cast<unsigned long long>(z.offset + z.length),
				r.checked == r.words ? "" : strprintf(", and compared %llu words",
								      static_cast<unsigned long long>(r.checked)).c_str()));
	};
	for (;;) {
		if (g_stop.load())
			break;
		const auto now = clock::now();
		if (o.duration > 0 && std::chrono::duration<double>(now - start).count() >= o.duration)
			break;
		if (o.senders) {
			const auto conns = rx->connections();
			std::size_t over = 0;
			for (const auto &c : conns)
				over += c.ended || c.lost;
			if (over >= o.senders && rx->pending() == 0) // and every chunk that came is handed out
				break;
		}
		if (gpu) {
			try {
				if (gpu->pump(std::chrono::milliseconds(100)) && o.hold_us)
					std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
			} catch (const std::exception &e) {
				std::fprintf(stderr, "mprace-recv: %s\n", e.what());
				gpu_failed = true;
				break;
			}
		} else if (board) {
			try {
				board->reap(board->full(), board_took);
				// while chunks are on the board, look for the next one without sleeping
				auto chunk = rx->next(std::chrono::milliseconds(board->busy() ? 0 : 100));
				if (chunk && !recvboard::Sink::fits(*chunk)) {
					wrong(chunk->header, chunk->connection,
					      strprintf("%zu bytes at stream offset %llu: not whole 32-bit words, which the "
							"board cannot take (not written to it)",
							chunk->size, static_cast<unsigned long long>(chunk->header.offset)));
					arrived(chunk->header, chunk->size, chunk->connection, -1);
					rx->release(*chunk);
				} else if (chunk) {
					board->submit(*chunk, board_took, board_judged);
				} else if (!board->busy()) {
					board->drain(board_took, board_judged); // a pause: judge what came
				}
			} catch (const std::exception &e) {
				std::fprintf(stderr, "mprace-recv: the board %s: %s\n", board->device().c_str(), e.what());
				board_failed = true;
				break;
			}
		} else if (auto chunk = rx->next(std::chrono::milliseconds(100))) {
			std::int64_t at = -1;
			if (o.check)
				at = mp_pattern_find_mismatch(chunk->data, chunk->size, chunk->header.offset,
							      static_cast<std::uint32_t>(o.seed));
			arrived(chunk->header, chunk->size, chunk->connection, at);
			if (o.hold_us)
				std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
			rx->release(*chunk);
		}
		const auto t = clock::now();
		if (!o.quiet && o.interval > 0 && std::chrono::duration<double>(t - tick).count() >= o.interval) {
			const double dt = std::chrono::duration<double>(t - tick).count();
			std::printf("%8.1f s %10.1f MB/s %12llu chunks %3zu senders connected\n",
				    std::chrono::duration<double>(t - start).count(), mbps(bytes - bytes_at_tick, dt),
				    static_cast<unsigned long long>(chunks), rx->active());
			std::fflush(stdout);
			tick = t;
			bytes_at_tick = bytes;
		}
	}
	// What is still on the board is counted and judged too.
	if (board && !board_failed) {
		try {
			board->drain(board_took, board_judged);
		} catch (const std::exception &e) {
			std::fprintf(stderr, "mprace-recv: the board %s: %s\n", board->device().c_str(), e.what());
			board_failed = true;
		}
	}
	// What is still on the GPU is counted too.
	if (gpu && !gpu_failed) {
		try {
			gpu->flush();
		} catch (const std::exception &e) {
			std::fprintf(stderr, "mprace-recv: %s\n", e.what());
			gpu_failed = true;
		}
	}

	// The summary, also after Ctrl-C: what arrived is what was measured.
	bool bad = pattern_errors != 0;
	const auto conns = rx->connections();
	for (std::size_t i = 0; i < conns.size(); ++i) {
		const auto &c = conns[i];
		const std::uint64_t wrong = i < bad_per_conn.size() ? bad_per_conn[i] : 0;
		std::string state = c.ended ? "ended" : c.lost ? "LOST (" + c.error + ")" : "still connected";
		std::uint64_t missing = c.missing;
		if (c.ended && c.end_sequence > c.next_sequence)
			missing += c.end_sequence - c.next_sequence; // the tail that never came
		if (c.lost || missing || c.duplicates || c.incomplete || wrong)
			bad = true;
		std::printf("source %u: %llu chunks, %llu bytes, missing %llu, duplicates %llu, reordered %llu, "
			    "incomplete %llu, pattern errors %llu, %s\n",
			    c.source, static_cast<unsigned long long>(c.chunks), static_cast<unsigned long long>(c.bytes),
			    static_cast<unsigned long long>(missing), static_cast<unsigned long long>(c.duplicates),
			    static_cast<unsigned long long>(c.reordered), static_cast<unsigned long long>(c.incomplete),
			    static_cast<unsigned long long>(wrong), state.c_str());
	}
	const double span = std::chrono::duration<double>(last - first).count();
	std::printf("total: %llu chunks, %llu bytes from %zu senders, %.1f MB/s from the first chunk to the "
		    "last%s\n",
		    static_cast<unsigned long long>(chunks), static_cast<unsigned long long>(bytes), conns.size(),
		    mbps(bytes, span),
		    !o.check ? " (data not checked)" : gpu ? " (checked in GPU memory)" : board ? " (checked by the board)" : "");
	std::fflush(stdout);
	gpu.reset(); // gives the receiver's memory back before the receiver goes
	board.reset(); // unmaps it from the board
	g_receiver = nullptr;
	if (gpu_failed)
		return EXIT_GPU;
	if (board_failed)
		return EXIT_BOARD;
	if (g_stop.load())
		return EXIT_INTERRUPTED;
	return bad ? EXIT_DATA : 0;
}
