// SPDX-License-Identifier: GPL-2.0-or-later
//
// dmabench: throughput curves of the board's DMA engine, PIO, the buffer managers and the GPU
// paths; a latency/bandwidth fit per mode; table, CSV, JSON and plots. docs/dmabench.md and
// dmabench(1) describe the options and the file formats.
#include "config.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <getopt.h>
#include <iostream>
#include <sched.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/device.hpp"
#include "../common/units.hpp"
#include "bufmgr/copy_workers.hpp"
#include "mode.hpp"
#include "mprace/board.hpp"
#include "plot.hpp"
#include "report.hpp"
#include "sweep.hpp"

using namespace dmabench;
using tools::format_size;
using tools::strprintf;

namespace {

const char *const kDefaultModes = "c2h,h2c,c2h-umem,h2c-umem,pio-read,pio-write,cb4M,db4M,pb1Mx8";
const char *const kDefaultSizes = "4K:256M:2";
// On the simulated RTL (sim:) a second of wall time is microseconds of the board's: the
// engine's own modes, timed by its clock, each size for this long of simulated time.
const char *const kSimModes = "c2h,h2c";
const double kSimMinTime = 20e-6;
const char *const kQuickSizes = "4K:16M:4";
// CPUs the virtual board needs to keep its timing next to dmabench (engine threads per
// channel, copy threads, the measuring thread); with fewer, dmabench and the board share one
// (one_cpu_for_virtual_board)
const long kVboardCpus = 4;
// --gpus: the most GPUs one run spreads a mode over
const std::size_t kMaxGpus = 64;

// Exit codes (also in dmabench(1)).
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNAVAILABLE = 3, EXIT_INTERRUPTED = 130 };

void usage(std::FILE *f)
{
	std::fprintf(f,
"Usage: dmabench [OPTION]... [MODE]...\n"
"Measure DMA/PIO/buffer-manager/GPU throughput over a sweep of transfer sizes, fit\n"
"t = latency + size / bandwidth per mode, and write a table (stdout), CSV, JSON and plots.\n"
"\n"
"Modes (comma-separated with -m, or as arguments; --list-modes for all):\n"
"  c2h h2c             raw DMA card->host / host->card on kernel memory (thesis FH, HF)\n"
"  c2h-umem h2c-umem   the same on user memory (pinned by the driver, scatter-gather)\n"
"  pio-read pio-write  32-bit register/BAR accesses by the CPU\n"
"  cb<S> db<S> pb<S>x<N>[-c2h|-h2c]  ChunkBuffer, DoubleBuffer, PooledBuffer (libbufmgr)\n"
"                      with DMA buffers of S bytes (N of them); both directions without suffix\n"
"  lat-c2h lat-h2c     raw DMA, each transfer's round trip: p50/p99/p99.9/max (latency CSV)\n"
"  memcpy              host memcpy, a reference that needs no board\n"
"  memcpy-mt[N]        the same on N threads (default --copy-threads): the host's copy limit\n"
"  net net-pb<S>x<N>   board -> host -> network to --net-to's receivers (UCX builds)\n"
"  hg gh fi fi-serial gi gi-serial fr gr\n"
"                                     GPU paths (CUDA builds; thesis HG, GH, FI, GI, FR, GR)\n"
"  default: %s\n"
"\n"
"Options:\n"
"  -m, --modes LIST       modes to run, in this order\n"
"  -d, --device NAME      board: /dev/fpgaN, fpgaN, N, the virtual board emu:[OPTIONS] or the\n"
"                         simulated RTL sim:[OPTIONS] (times by the board's clock)\n"
"                         (e.g. emu:link=gen3x8); 'none' for host-only modes. Default:\n"
"                         $PCIDRIVER_DEVICE, else /dev/fpga0; without either the tools (not\n"
"                         libpcidriver) fall back to the virtual board emu: and say so\n"
"  -s, --sizes SPEC       MIN:MAX[:FACTOR] or a list (4K,64K,1M); default %s\n"
"  -n, --iterations N     transfers timed together per size (default: enough for --min-time)\n"
"  -t, --min-time SEC     auto iterations: time each size at least this long (default 0.05)\n"
"  -w, --warmup N         untimed transfers before each timed block (default 1)\n"
"  -r, --repeat N         time each size N times and keep the fastest (default 3); the\n"
"                         repeats are passes over all sizes, so that a slowdown of the\n"
"                         host for a while meets one of them, not all\n"
"      --verify           after timing a size, one more transfer with its data checked\n"
"      --ref MODE|auto|none  efficiency reference (default auto: the raw DMA mode of the\n"
"                         same direction; for fi/gi the slower of its two stages)\n"
"      --pio-max SIZE     largest size for the PIO modes (default 1M)\n"
"      --h2c-sink checker|user  where H2C data goes on the board (default checker, which\n"
"                         --verify reads; user: the board's user logic, which the virtual\n"
"                         board drops without reading it)\n"
"      --clock wall|board time transfers with the host's clock or the board's free-running\n"
"                         CYCLE counter (its CLOCK_MHZ is printed); default: board on\n"
"                         sim: (simulated time), wall elsewhere. On sim: the defaults\n"
"                         are also modes c2h,h2c, --min-time 20e-6 (of the board's\n"
"                         time) and --repeat 1\n"
"      --gpus LIST        hg and fi (also fi-db<S>, fi-pb<S>x<N>) over several GPUs at once, e.g.\n"
"                         0-3: each transfer is cut into one part per GPU, each part moved by a\n"
"                         thread on the CPUs near its GPU (default: the current GPU alone)\n"
"      --board-per-gpu    with --gpus, fi: every GPU fed by its own board (the device opened\n"
"                         once per GPU; each emu: is a board of its own) instead of one board\n"
"                         fanning out to all; ri, ri-copy, ig, ig-b<N> spread over several GPUs\n"
"                         this way only\n"
"      --net-to LIST      net modes: the receivers (mprace-recv), HOST:PORT[,HOST:PORT...];\n"
"                         whole chunks go to them in turn (round-robin)\n"
"      --net-source N     net modes: this sender's id in every chunk header (default 0)\n"
"      --net-seed N       net modes: the seed of the board's counter pattern, which the\n"
"                         receivers check (default 0, as mprace-recv's --seed)\n"
"      --gpu-convert zero-copy|kernel  how fi/gi ...:i16f convert on the GPU: one kernel\n"
"                         reading the host buffer (default), or a copy, then a kernel\n"
"      --copy-threads N   threads of the buffer managers' copy and of memcpy-mt (1 to 64;\n"
"                         default: libbufmgr's, half the CPUs, at most 4)\n"
"  -c, --cpus LIST        pin dmabench (and the threads it starts) to CPUs, e.g. 0 or 2-3\n"
"  -q, --quick            short run for CI: sizes %s, min-time 0.01, repeat 1\n"
"  -o, --out PREFIX       write PREFIX.csv, PREFIX-fit.csv, PREFIX.json, PREFIX.svg and\n"
"                         PREFIX.png (directories are created; default ./dmabench)\n"
"      --plot WHAT        svg, png, all (default: svg, and png when gnuplot or\n"
"                         python3-matplotlib is installed) or none\n"
"      --no-progress      no progress bar (it is drawn on stderr only when it is a terminal)\n"
"      --list-modes       list the modes and their aliases\n"
"  -h, --help             this text;  -V, --version  the version\n"
"\n"
"Exit status: 0 ok, 1 a transfer or a verification failed, 2 bad usage,\n"
"3 no requested mode can run here (e.g. GPU modes without a GPU, or no size fits),\n"
"130 interrupted by Ctrl-C (what was measured is printed and written).\n",
		     kDefaultModes, kDefaultSizes, kQuickSizes);
}

[[noreturn]] void usage_error(const std::string &msg)
{
	std::fprintf(stderr, "dmabench: %s\n\n", msg.c_str());
	usage(stderr);
	std::exit(EXIT_USAGE);
}

void list_modes()
{
	std::printf("%-24s %-14s %s\n", "MODE", "ALIASES", "WHAT IT MEASURES");
	for (const auto &m : mode_table())
		std::printf("%-24s %-14s %s%s\n", m.pattern, *m.aliases ? m.aliases : "-", m.description,
			    m.needs_cuda ? " [CUDA]" : "");
}

std::string iso_date_utc()
{
	std::time_t t = std::time(nullptr);
	struct tm tm;
	gmtime_r(&t, &tm);
	char buf[32];
	std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

std::string hostname()
{
	char buf[256] = {0};
	if (gethostname(buf, sizeof(buf) - 1) != 0)
		return std::string();
	return buf;
}

void mkdirs(const std::string &dir)
{
	std::string cur;
	for (const auto &part : tools::split(dir, '/')) {
		cur += part;
		if (!cur.empty() && mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST)
			throw std::runtime_error("cannot create directory " + cur + ": " + std::strerror(errno));
		cur += '/';
	}
}

// --cpus: every CPU must exist and be one this process may run on (a usage error, exit 2).
void check_cpus(const std::string &list)
{
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		usage_error(std::string("--cpus: cannot read this process's CPUs: ") + std::strerror(errno));
	for (int cpu : tools::parse_cpu_list(list))
		if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
			usage_error(strprintf("--cpus: CPU %d is not one this process may run on (%d of them here)",
					      cpu, CPU_COUNT(&allowed)));
}

// Fails now, before minutes of measuring, when `out` cannot take the result files: each is
// opened for writing (without truncating; one that did not exist is removed again).
void check_output_prefix(const std::string &out, const std::string &plot)
{
	auto slash = out.rfind('/');
	std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
	try {
		mkdirs(dir);
	} catch (const std::exception &e) {
		usage_error(std::string("--out: ") + e.what());
	}
	struct stat st;
	if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
		usage_error("--out: " + dir + " is not a directory");
	std::vector<std::string> files = {out + ".csv", out + "-fit.csv", out + ".json"};
	if (plot == "svg" || plot == "all")
		files.push_back(out + ".svg");
	if (plot == "png" || plot == "all")
		files.push_back(out + ".png");
	for (const auto &f : files) {
		bool existed = access(f.c_str(), F_OK) == 0;
		int fd = open(f.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			usage_error("--out: cannot write " + f + ": " + std::strerror(errno));
		close(fd);
		if (!existed)
			unlink(f.c_str());
	}
}

template <class F>
void write_file(const std::string &path, F writer, std::vector<std::string> &written)
{
	std::ofstream f(path);
	if (!f)
		throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
	writer(f);
	f.close();
	if (!f)
		throw std::runtime_error("error writing " + path);
	written.push_back(path);
}

// HOST:PORT or [V6]:PORT with a port of 1..65535 (the full check, and the name lookup, are the
// network stage's when the mode starts).
bool valid_endpoint(const std::string &e)
{
	const auto colon = e.rfind(':');
	if (colon == std::string::npos || colon == 0 || colon + 1 == e.size() || colon + 6 < e.size())
		return false;
	const std::string port = e.substr(colon + 1);
	if (port.find_first_not_of("0123456789") != std::string::npos)
		return false;
	const unsigned long p = std::stoul(port);
	return p >= 1 && p <= 65535;
}

// What the command line asks for.
struct Config {
	std::vector<std::string> modes; // canonical names, in order
	SweepOptions sweep;
	std::string device, ref = "auto", out = "dmabench", plot = "all", cpus, command_line;
	bool progress = true;
	std::uint64_t pio_max = 1 << 20;
	unsigned copy_threads = 0; // 0: libbufmgr's default
	bool h2c_sink_user = false;
	bool gpu_convert_kernel = false;
	bool board_clock = false;
	bool clock_given = false;   // --clock was given (else: board on sim:, wall elsewhere)
	std::vector<int> gpus;      // --gpus: empty = the current GPU alone
	bool board_per_gpu = false;
	std::vector<std::string> net_to; // --net-to: the receivers of the net modes
	unsigned net_source = 0;         // --net-source
	unsigned net_seed = 0;           // --net-seed
};

// Parses and checks the command line; exits with EXIT_USAGE (or after --help) on its own.
Config parse_command_line(int argc, char **argv)
{
	enum { OPT_VERIFY = 256, OPT_REF, OPT_PIO_MAX, OPT_COPY_THREADS, OPT_H2C_SINK, OPT_GPU_CONVERT, OPT_CLOCK, OPT_GPUS, OPT_BOARD_PER_GPU, OPT_NET_TO, OPT_NET_SOURCE, OPT_NET_SEED, OPT_PLOT, OPT_NO_PROGRESS, OPT_LIST_MODES };
	static const struct option longopts[] = {
		{"modes", required_argument, nullptr, 'm'},
		{"device", required_argument, nullptr, 'd'},
		{"sizes", required_argument, nullptr, 's'},
		{"iterations", required_argument, nullptr, 'n'},
		{"min-time", required_argument, nullptr, 't'},
		{"warmup", required_argument, nullptr, 'w'},
		{"repeat", required_argument, nullptr, 'r'},
		{"verify", no_argument, nullptr, OPT_VERIFY},
		{"ref", required_argument, nullptr, OPT_REF},
		{"pio-max", required_argument, nullptr, OPT_PIO_MAX},
		{"copy-threads", required_argument, nullptr, OPT_COPY_THREADS},
		{"h2c-sink", required_argument, nullptr, OPT_H2C_SINK},
		{"gpu-convert", required_argument, nullptr, OPT_GPU_CONVERT},
		{"clock", required_argument, nullptr, OPT_CLOCK},
		{"gpus", required_argument, nullptr, OPT_GPUS},
		{"board-per-gpu", no_argument, nullptr, OPT_BOARD_PER_GPU},
		{"net-to", required_argument, nullptr, OPT_NET_TO},
		{"net-source", required_argument, nullptr, OPT_NET_SOURCE},
		{"net-seed", required_argument, nullptr, OPT_NET_SEED},
		{"cpus", required_argument, nullptr, 'c'},
		{"quick", no_argument, nullptr, 'q'},
		{"out", required_argument, nullptr, 'o'},
		{"plot", required_argument, nullptr, OPT_PLOT},
		{"no-progress", no_argument, nullptr, OPT_NO_PROGRESS},
		{"list-modes", no_argument, nullptr, OPT_LIST_MODES},
		{"help", no_argument, nullptr, 'h'},
		{"version", no_argument, nullptr, 'V'},
		{nullptr, 0, nullptr, 0},
	};
	Config cfg;
	SweepOptions &so = cfg.sweep;
	std::string modes_arg, sizes_arg;
	bool modes_given = false;
	bool quick = false, min_time_given = false, repeat_given = false;

	for (int i = 0; i < argc; ++i)
		cfg.command_line += (i ? " " : "") + std::string(argv[i]);
	opterr = 0;
	int c;
	try {
		while ((c = getopt_long(argc, argv, ":m:d:s:n:t:w:r:c:qo:hV", longopts, nullptr)) != -1) {
			switch (c) {
			case 'm':
				if (!*optarg)
					usage_error("--modes needs a mode list, e.g. c2h,h2c");
				modes_arg += (modes_given ? "," : "") + std::string(optarg);
				modes_given = true;
				break;
			case 'd': cfg.device = optarg; break;
			case 's': sizes_arg = optarg; break;
			case 'n':
				so.iterations = tools::parse_u64(optarg, "iteration count");
				if (so.iterations == 0)
					usage_error("--iterations must be at least 1");
				break;
			case 't':
				so.min_time_s = tools::parse_double(optarg, "time");
				if (so.min_time_s < 0)
					usage_error("--min-time must not be negative");
				min_time_given = true;
				break;
			case 'w': so.warmup = tools::parse_u32(optarg, "warm-up count"); break;
			case 'r':
				so.repeat = tools::parse_u32(optarg, "repeat count");
				repeat_given = true;
				if (so.repeat == 0)
					usage_error("--repeat must be at least 1");
				break;
			case OPT_VERIFY: so.verify = true; break;
			case OPT_REF: cfg.ref = optarg; break;
			case OPT_PIO_MAX: cfg.pio_max = tools::parse_size(optarg); break;
			case OPT_COPY_THREADS:
				cfg.copy_threads = tools::parse_u32(optarg, "thread count");
				if (cfg.copy_threads < 1 || cfg.copy_threads > bufmgr::CopyWorkers::max_threads)
					usage_error(strprintf("--copy-threads takes 1 to %zu", bufmgr::CopyWorkers::max_threads));
				break;
			case 'c': cfg.cpus = optarg; check_cpus(cfg.cpus); break;
			case 'q': quick = true; break;
			case 'o': cfg.out = optarg; break;
			case OPT_H2C_SINK:
				if (std::strcmp(optarg, "checker") != 0 && std::strcmp(optarg, "user") != 0)
					usage_error("--h2c-sink takes checker or user");
				cfg.h2c_sink_user = std::strcmp(optarg, "user") == 0;
				break;
			case OPT_GPU_CONVERT:
				if (std::strcmp(optarg, "zero-copy") != 0 && std::strcmp(optarg, "kernel") != 0)
					usage_error("--gpu-convert takes zero-copy or kernel");
				cfg.gpu_convert_kernel = std::strcmp(optarg, "kernel") == 0;
				break;
			case OPT_GPUS:
				try {
					cfg.gpus = tools::parse_cpu_list(optarg);
				} catch (const std::exception &) {
					usage_error(std::string("--gpus takes a list of GPU numbers such as 0,1 or 0-3, not '") +
						    optarg + "'");
				}
				if (cfg.gpus.empty() || cfg.gpus.size() > kMaxGpus)
					usage_error(strprintf("--gpus takes 1 to %zu GPUs", kMaxGpus));
				break;
			case OPT_BOARD_PER_GPU: cfg.board_per_gpu = true; break;
			case OPT_NET_TO: {
				cfg.net_to.clear();
				std::string list = optarg;
				for (std::size_t at = 0; at <= list.size();) {
					std::size_t comma = list.find(',', at);
					if (comma == std::string::npos)
						comma = list.size();
					cfg.net_to.push_back(list.substr(at, comma - at));
					at = comma + 1;
				}
				for (const auto &r : cfg.net_to)
					if (!valid_endpoint(r))
						usage_error("--net-to takes receivers as HOST:PORT[,HOST:PORT...], not '" + r + "'");
				break;
			}
			case OPT_NET_SOURCE:
			case OPT_NET_SEED: {
				std::uint64_t v = 0;
				try {
					v = tools::parse_u64(optarg, "number");
				} catch (const std::invalid_argument &) {
					v = UINT64_MAX;
				}
				const std::uint64_t most = c == OPT_NET_SOURCE ? 65535 : UINT32_MAX;
				if (v > most)
					usage_error(strprintf("--%s takes a number from 0 to %llu, not '%s'",
							      c == OPT_NET_SOURCE ? "net-source" : "net-seed",
							      static_cast<unsigned long long>(most), optarg));
				(c == OPT_NET_SOURCE ? cfg.net_source : cfg.net_seed) = static_cast<unsigned>(v);
				break;
			}
			case OPT_CLOCK:
				if (std::strcmp(optarg, "wall") != 0 && std::strcmp(optarg, "board") != 0)
					usage_error("--clock takes wall or board");
				cfg.board_clock = std::strcmp(optarg, "board") == 0;
				cfg.clock_given = true;
				break;
			case OPT_PLOT:
				cfg.plot = optarg;
				if (cfg.plot != "svg" && cfg.plot != "png" && cfg.plot != "all" && cfg.plot != "none")
					usage_error("--plot takes svg, png, all or none");
				break;
			case OPT_NO_PROGRESS: cfg.progress = false; break;
			case OPT_LIST_MODES: list_modes(); std::exit(EXIT_OK);
			case 'h': usage(stdout); std::exit(EXIT_OK);
			case 'V': std::printf("dmabench (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION); std::exit(EXIT_OK);
			case ':': usage_error(strprintf("option %s needs an argument", argv[optind - 1]));
			default:
				usage_error(optopt ? strprintf("unknown option -%c", optopt)
						   : strprintf("unknown option %s", argv[optind - 1]));
			}
		}
	} catch (const std::invalid_argument &e) {
		usage_error(e.what());
	}

	if (cfg.out.empty())
		usage_error("--out needs a file name prefix");
	if (cfg.out.back() == '/')
		cfg.out += "dmabench";
	struct stat st;
	if (stat(cfg.out.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
		cfg.out += "/dmabench";

	// Modes: -m lists and arguments, in order; duplicates dropped.
	std::string all_modes = modes_arg;
	for (int i = optind; i < argc; ++i)
		all_modes += (all_modes.empty() ? "" : ",") + std::string(argv[i]);
	// a simulated board (sim:) is timed and sized by its own clock unless told otherwise
	const char *dev_env = std::getenv("PCIDRIVER_DEVICE");
	const std::string dev_name = !cfg.device.empty() ? cfg.device : dev_env ? dev_env : "";
	const bool simulated = dev_name.compare(0, 3, "sim") == 0;
	if (simulated && !cfg.clock_given)
		cfg.board_clock = true;
	if (all_modes.empty())
		all_modes = simulated ? kSimModes : kDefaultModes;
	try {
		for (const auto &item : tools::split(all_modes, ',')) {
			if (item.empty())
				usage_error("empty item in the mode list '" + all_modes + "'");
			for (const auto &n : expand_mode(item))
				if (std::find(cfg.modes.begin(), cfg.modes.end(), n) == cfg.modes.end())
					cfg.modes.push_back(n);
		}
		so.sizes = parse_sizes(!sizes_arg.empty() ? sizes_arg : quick ? kQuickSizes : kDefaultSizes);
		if (cfg.ref != "auto" && cfg.ref != "none") {
			auto r = expand_mode(cfg.ref);
			if (r.size() != 1)
				usage_error("--ref needs one mode with its direction, e.g. db4M-c2h");
			cfg.ref = r[0];
		}
	} catch (const std::invalid_argument &e) {
		usage_error(e.what());
	}
	if (cfg.modes.empty())
		usage_error("no mode given");
	if (cfg.board_clock && cfg.device == "none")
		usage_error("--clock board needs a board (not --device none)");
	if (cfg.h2c_sink_user && so.verify)
		usage_error("--verify checks H2C data with the board's checker: not with --h2c-sink user");
	if (quick && !min_time_given)
		so.min_time_s = 0.01;
	if (simulated && !min_time_given)
		so.min_time_s = kSimMinTime;
	if (cfg.board_per_gpu && cfg.gpus.size() < 2)
		usage_error("--board-per-gpu needs --gpus with at least two GPUs");
	if ((quick || simulated) && !repeat_given)
		so.repeat = 1;
	return cfg;
}

void pin_to_cpus(const std::string &cpus)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int cpu : tools::parse_cpu_list(cpus))
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		std::fprintf(stderr, "dmabench: cannot pin to CPUs %s: %s\n", cpus.c_str(), std::strerror(errno));
		std::exit(EXIT_FAILED);
	}
}

long usable_cpus()
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return sysconf(_SC_NPROCESSORS_ONLN);
	return CPU_COUNT(&set);
}

// Without --cpus, on the virtual board with fewer than kVboardCpus usable CPUs: the CPU that
// dmabench and the board's threads share, else -1. The board hands every buffer it fills (or
// drains) to the thread that copies it; on two CPUs that hand-off crosses CPUs, and on a shared
// virtual machine whose two CPUs sit apart for seconds at a time it ran 15 times slower (curves
// dipped by half between neighbouring sizes). On one CPU the data stays in its caches, and the
// board's and the application's waits yield to each other (virtual-board.md).
int one_cpu_for_virtual_board(const Config &cfg)
{
	if (!cfg.cpus.empty() || cfg.device == "none" || usable_cpus() >= kVboardCpus)
		return -1;
	if (tools::pick_device(cfg.device, "dmabench", false).rfind("emu", 0) != 0)
		return -1;
	return sched_getcpu();
}

// Ctrl-C: the sweep stops at the next size, what was measured is written, exit 130. A second
// Ctrl-C ends the program at once, without writing (the way out of a transfer that never
// ends); the first one says so on the terminal.
void on_interrupt(int)
{
	static const char msg[] = "\ndmabench: interrupted: stopping after this size and writing what was "
				  "measured; Ctrl-C again quits at once without writing\n";
	request_stop();
	std::signal(SIGINT, SIG_DFL);
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
}

// Runs every mode; returns the exit code so far. Modes that cannot run here are skipped.
int measure(const Config &cfg, Env &env, Run &run, std::vector<std::string> &failures,
	    std::size_t &ran)
{
	const SweepOptions &so = cfg.sweep;
	Progress progress(cfg.progress, cfg.modes.size() * so.sizes.size() * std::max(1u, so.repeat));
	int exit_code = EXIT_OK;

	for (const auto &name : cfg.modes) {
		if (stop_requested())
			break;
		ModeResult mr;
		mr.name = name;
		std::string no_points; // why no size fitted the mode
		try {
			auto mode = make_mode(name, env);
			mode->setup(so.sizes.back());
			mr.direction = mode->direction();
			mr.latency_clock = mode->latency_clock();
			mr.description = mode->description();
			if (cfg.ref == "auto")
				mr.reference = mode->auto_reference();
			else if (cfg.ref != "none" && cfg.ref != name)
				mr.reference = cfg.ref;
			if (!mode->note().empty())
				progress.message("dmabench: " + name + ": " + mode->note());
			if (so.verify && !mode->can_verify())
				progress.message("dmabench: " + name + ": --verify: this mode has no data check");
			run_sweep(*mode, so, progress, mr, &failures);
			if (mr.points.empty())
				no_points = "no size of --sizes fits this mode (it moves multiples of " +
					    format_size(mode->granule()) + ")";
			mode->teardown();
		} catch (const Unavailable &e) {
			progress.message(strprintf("dmabench: %s skipped: %s", name.c_str(), e.what()));
			run.skipped.push_back({name, e.what()});
			for (std::size_t k = 0; k < so.sizes.size(); ++k)
				progress.step(name);
			continue;
		} catch (const std::exception &e) {
			progress.message(strprintf("dmabench: %s failed: %s", name.c_str(), e.what()));
			run.skipped.push_back({name, std::string("failed: ") + e.what()});
			exit_code = EXIT_FAILED;
			continue;
		}
		if (mr.points.empty()) {
			if (stop_requested())
				break;   // interrupted before its first size: nothing to report
			progress.message(strprintf("dmabench: %s skipped: %s", name.c_str(), no_points.c_str()));
			run.skipped.push_back({name, no_points});
			continue;
		}
		++ran;
		run.modes.push_back(std::move(mr));
	}
	progress.finish();
	return exit_code;
}

// The table on stdout and the files; returns false if a file could not be written.
bool report(const Config &cfg, Run &run, const std::vector<std::string> &failures, std::size_t ran)
{
	RunInfo &info = run.info;
	for (auto &m : run.modes)
		if (!apply_reference(m, run))
			m.reference.clear(); // not measured in this run: no efficiency

	std::cout << "dmabench " << PACKAGE_VERSION << " on " << (info.device.empty() ? "(no board)" : info.device);
	if (!info.device_desc.empty() && info.device_desc != info.device)
		std::cout << " (" << info.device_desc << ")";
	std::cout << ", " << info.date << "\n";
	if (info.clock != "wall")
		std::cout << "clock: " << info.clock << ", CPU % from the host's clock\n";
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (info.backend == "emu" && info.cpus_shared)
		std::cout << strprintf("note: the virtual board runs its link model on threads; on this %ld-CPU "
				       "machine they and dmabench share CPU %s (--cpus chooses others; "
				       "docs/dmabench.md)\n",
				       cpus, info.cpus.c_str());
	else if (info.backend == "emu" && cpus > 0 && cpus < kVboardCpus)
		std::cout << strprintf("note: the virtual board runs its link model on threads of this %ld-CPU "
				       "machine, beside dmabench: below %ld CPUs it moves the data on one "
				       "thread, and modes that also copy on the CPU share it "
				       "(docs/dmabench.md)\n",
				       cpus, kVboardCpus);
	std::cout << "\n";
	for (const auto &m : run.modes)
		write_mode_table(std::cout, m);
	write_summary(std::cout, run);
	for (const auto &f : failures)
		std::cout << "VERIFY FAILED: " << f << "\n";

	std::vector<std::string> written;
	bool ok = true;
	const std::string &out = cfg.out;
	try {
		auto slash = out.rfind('/');
		if (slash != std::string::npos && slash > 0)
			mkdirs(out.substr(0, slash));
		write_file(out + ".csv", [&](std::ostream &o) { write_points_csv(o, run); }, written);
		write_file(out + "-fit.csv", [&](std::ostream &o) { write_fit_csv(o, run); }, written);
		write_file(out + ".json", [&](std::ostream &o) { write_json(o, run); }, written);
		const bool latency = std::any_of(run.modes.begin(), run.modes.end(), [](const ModeResult &m) {
			return std::any_of(m.points.begin(), m.points.end(), [](const Point &p) { return !p.latency_us.empty(); });
		});
		if (latency) {
			write_file(out + "-latency.csv", [&](std::ostream &o) { write_latency_csv(o, run); }, written);
			write_file(out + "-latency-hist.csv", [&](std::ostream &o) { write_latency_histogram_csv(o, run); },
				   written);
		}
		if (cfg.plot == "svg" || cfg.plot == "all")
			write_file(out + ".svg", [&](std::ostream &o) { write_svg(o, run); }, written);
		if (cfg.plot == "png" || cfg.plot == "all") {
			std::string why;
			std::string png = out + ".png";
			std::remove(png.c_str());
			if (!render_png(run, out + ".json", png, &why).empty())
				written.push_back(png);
			else if (cfg.plot == "png")
				std::fprintf(stderr, "dmabench: no PNG: %s\n", why.c_str());
		}
	} catch (const std::exception &e) {
		std::fprintf(stderr, "dmabench: %s\n", e.what());
		ok = false;
	}
	std::cout << strprintf("\n%zu mode(s) measured in %.1f s%s; files written:\n", ran, info.wall_s,
			       stop_requested() ? " (interrupted: what was measured so far)" : "");
	for (const auto &w : written)
		std::cout << "  " << w << "\n";
	std::cout.flush();
	return ok;
}

} // namespace

int main(int argc, char **argv)
{
	tools::link_virtual_board();
	Config cfg = parse_command_line(argc, argv);
	check_output_prefix(cfg.out, cfg.plot);
	bool cpus_shared = false;
	if (int cpu = one_cpu_for_virtual_board(cfg); cpu >= 0) {
		cfg.cpus = std::to_string(cpu);
		cpus_shared = true;
	}
	if (!cfg.cpus.empty())
		pin_to_cpus(cfg.cpus);
	std::signal(SIGINT, on_interrupt);

	auto t_start = std::chrono::steady_clock::now();
	Run run;
	RunInfo &info = run.info;
	info.version = PACKAGE_VERSION;
	info.date = iso_date_utc();
	info.host = hostname();
	info.command_line = cfg.command_line;
	info.sizes = cfg.sweep.sizes;
	info.warmup = cfg.sweep.warmup;
	info.iterations = cfg.sweep.iterations;
	info.min_time_s = cfg.sweep.min_time_s;
	info.repeat = cfg.sweep.repeat;
	info.verify = cfg.sweep.verify;
	info.cpus = cfg.cpus;
	info.cpus_shared = cpus_shared;
	info.gpus = cfg.gpus;
	info.board_per_gpu = cfg.board_per_gpu;
	info.reference = cfg.ref;

	Env env(cfg.device, cfg.sweep.verify);
	env.set_pio_max(cfg.pio_max);
	env.set_copy_threads(cfg.copy_threads);
	env.set_h2c_sink_user(cfg.h2c_sink_user);
	env.set_gpu_convert_kernel(cfg.gpu_convert_kernel);
	env.set_gpus(cfg.gpus, cfg.board_per_gpu);
	env.set_net(cfg.net_to, cfg.net_source, cfg.net_seed);
	env.set_board_clock(cfg.board_clock);
	if (cfg.board_clock) {
		try {
			env.now_s(); // opens the board and reads its clock frequency
		} catch (const std::exception &e) {
			std::fprintf(stderr, "dmabench: --clock board: %s\n", e.what());
			return EXIT_UNAVAILABLE;
		}
		cfg.sweep.now = [&env] { return env.now_s(); };
		info.clock = strprintf("board CYCLE counter at %u MHz", env.board().info().clockMHz);
	}
	std::vector<std::string> failures;
	std::size_t ran = 0;
	int exit_code = measure(cfg, env, run, failures, ran);
	info.device = env.device_name();
	info.device_desc = env.device_description();
	info.backend = env.backend();
	info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();

	if (!report(cfg, run, failures, ran) || !failures.empty())
		exit_code = EXIT_FAILED;
	if (stop_requested())
		return EXIT_INTERRUPTED;
	if (ran == 0 && exit_code == EXIT_OK)
		exit_code = EXIT_UNAVAILABLE;
	return exit_code;
}
