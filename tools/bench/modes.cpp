// SPDX-License-Identifier: GPL-2.0-or-later
//
// The mode names (with the Edinburgh thesis' codes as aliases) and the counter pattern; no
// board needed, so the unit tests link this file (libdmabench.la).
#include "modes_impl.hpp"

#include <cstring>

#include "../common/units.hpp"
#include "bufmgr/copy_workers.hpp"
#include "mprace-spec/engine_spec.h"

using tools::format_size_short;
using tools::to_lower;

namespace dmabench {

const std::vector<ModeInfo> &mode_table()
{
	static const std::vector<ModeInfo> t = {
		{"c2h", "FH, c2h-kmem", "raw DMA card->host into kernel memory (pattern generator source)", false},
		{"h2c", "HF, h2c-kmem", "raw DMA host->card from kernel memory (checker sink)", false},
		{"c2h-umem", "", "raw DMA card->host into user memory (pinned, scatter-gather)", false},
		{"h2c-umem", "", "raw DMA host->card from user memory", false},
		{"loopback", "lb", "H2C and C2H at once through the engine's loopback (round trip)", false},
		{"lat-c2h", "", "raw DMA card->host, each transfer's round trip (submit -> completion seen): p50/p99/p99.9/max", false},
		{"lat-h2c", "", "the same host->card", false},
		{"ops-c2h[-bN]", "", "host CPU cost of libmprace per C2H operation: the calling thread's CPU time in submit + complete only (N per submit call with -bN; sizes up to 16M)", false},
		{"ops-h2c[-bN]", "", "the same for H2C", false},
		{"pio-read", "", "CPU reads of a BAR, 32 bits at a time (sizes up to --pio-max)", false},
		{"pio-write", "", "CPU writes to a BAR, 32 bits at a time (sizes up to --pio-max)", false},
		{"cb<S>[-c2h|-h2c]", "", "bufmgr ChunkBuffer, one DMA buffer of S bytes", false},
		{"db<S>[-c2h|-h2c]", "", "bufmgr DoubleBuffer, two DMA buffers of S bytes", false},
		{"pb<S>x<N>[-c2h|-h2c]", "", "bufmgr PooledBuffer, N DMA buffers of S bytes", false},
		{"cb|db|pb...:i16f", "", "the same converting int16 on the board <-> float in the user buffer", false},
		{"memcpy", "", "host memcpy between two buffers (no board needed)", false},
		{"memcpy-mt[N]", "", "the same on N threads, as the buffer managers copy (N: --copy-threads)", false},
		{"hg", "HG", "cudaMemcpy pinned host -> GPU (the host link's limit)", true},
		{"gh", "GH", "cudaMemcpy GPU -> pinned host", true},
		{"fi", "FI", "board -> host -> GPU pipelined through bufmgr's CUDA stage (default buffers)", true},
		{"fi-db<S> fi-pb<S>x<N>", "", "the same with a DoubleBuffer / PooledBuffer of S-byte buffers", true},
		{"fi-serial", "", "DMA into user memory, then cudaMemcpy (the naive serial path)", true},
		{"gi", "GI", "GPU -> host -> board pipelined through bufmgr's CUDA stage", true},
		{"gi-db<S> gi-pb<S>x<N>", "", "the same with a DoubleBuffer / PooledBuffer", true},
		{"gi-serial", "", "cudaMemcpy to user memory, then DMA (serial)", true},
		{"fr", "FR", "board -> GPU memory directly: CUDA's dma-buf imported by the board (peer-to-peer)", true},
		{"gr", "GR", "GPU memory -> board directly (peer-to-peer)", true},
		{"fi...:i16f gi...:i16f", "", "fi/gi converting int16 on the board <-> float on the GPU, on the GPU", true},
		{"ri ri-copy", "", "board -> host -> a resident GPU block that polls the completion records and checks each chunk (in place over the bus, or copied into GPU memory first); 8 buffers in flight", true},
		{"lat-ri lat-ri-copy", "", "the same one chunk at a time, each chunk's round trip (submit -> the block's done seen by the host): p50/p99/p99.9/max", true},
		{"lat-fi", "", "fi one chunk at a time (the copy engine), each chunk's round trip: the reference for lat-ri", true},
		{"ig", "", "GPU-initiated: a GPU kernel writes the descriptors, rings the doorbell through BAR0 mapped into the GPU and checks each chunk in place; 8 chunks queued; no CPU in the loop", true},
		{"ig-b<N>", "", "the same with N blocks (1 to 8) checking chunks at once while block 0's first thread keeps the ring", true},
		{"lat-ig", "", "the same one chunk at a time, each chunk's round trip on the GPU's clock (doorbell -> chunk checked): p50/p99/p99.9/max", true},
		{"net", "", "board -> host -> network to the receivers of --net-to (mprace-recv), through bufmgr's network stage (UCX), 4 user-memory DMA buffers of 1 MiB", false},
		{"net-db<S> net-pb<S>x<N>", "", "the same with two / N DMA buffers of S bytes", false},
	};
	return t;
}

namespace {

// "4m" -> 4 MiB; BadMode on anything else, and on sizes the engine cannot move whole (the
// check belongs to the name, so that a bad one is a usage error before anything runs).
std::uint64_t mode_size(const std::string &text, const std::string &name)
{
	std::uint64_t s;
	try {
		s = tools::parse_size(text);
		if (s == 0)
			throw std::invalid_argument("zero");
	} catch (const std::invalid_argument &) {
		throw BadMode("mode '" + name + "': bad buffer size '" + text + "' (e.g. db4M, pb1Mx8)");
	}
	if (s % MP_ENGINE_GRANULE)
		throw BadMode("mode '" + name + "': the DMA buffer size must be a multiple of 4 bytes");
	return s;
}

// Splits "<S>x<N>" of a pooled buffer.
void pool_spec(const std::string &text, const std::string &name, std::uint64_t *size, unsigned *count)
{
	auto x = text.rfind('x');
	if (x == std::string::npos || x == 0)
		throw BadMode("mode '" + name + "': a pooled buffer needs <size>x<count>, e.g. pb1Mx8");
	*size = mode_size(text.substr(0, x), name);
	std::uint64_t n;
	try {
		n = tools::parse_u64(text.substr(x + 1), "count");
	} catch (const std::invalid_argument &) {
		throw BadMode("mode '" + name + "': bad buffer count in '" + text + "'");
	}
	if (n < 2 || n > 4096)
		throw BadMode("mode '" + name + "': a pooled buffer needs 2 to 4096 buffers");
	*count = static_cast<unsigned>(n);
}

// "db<S>" or "pb<S>x<N>" after a pipelined mode's name (fi-, gi-, net-): the DMA buffers of
// its Relay. False when `rest` is neither.
bool relay_buffers(const std::string &rest, const std::string &name, ModeSpec &s)
{
	if (rest.compare(0, 2, "db") == 0) {
		s.algo = 'd';
		s.buf_size = mode_size(rest.substr(2), name);
		s.buf_count = 2;
	} else if (rest.compare(0, 2, "pb") == 0) {
		s.algo = 'p';
		pool_spec(rest.substr(2), name, &s.buf_size, &s.buf_count);
	} else {
		return false;
	}
	return true;
}

// "-db4M", "-pb1Mx8": the canonical spelling of relay_buffers()' part.
std::string relay_buffers_name(const ModeSpec &s)
{
	return std::string("-") + s.algo + "b" + format_size_short(s.buf_size) +
	       (s.algo == 'p' ? "x" + std::to_string(s.buf_count) : "");
}

bool strip_suffix(std::string &s, const char *suffix)
{
	std::size_t n = std::strlen(suffix);
	if (s.size() > n && s.compare(s.size() - n, n, suffix) == 0) {
		s.resize(s.size() - n);
		return true;
	}
	return false;
}

} // namespace

ModeSpec parse_mode(const std::string &name)
{
	ModeSpec s;
	std::string n = to_lower(name);
	static const struct {
		const char *alias, *canonical;
	} aliases[] = {
		{"fh", "c2h"}, {"hf", "h2c"}, {"c2h-kmem", "c2h"}, {"h2c-kmem", "h2c"}, {"lb", "loopback"},
	};
	for (const auto &a : aliases)
		if (n == a.alias)
			n = a.canonical;
	if (n == "memcpy") {
		s.family = Family::Memcpy;
	} else if (n.compare(0, 9, "memcpy-mt") == 0) {
		s.family = Family::Memcpy;
		s.threads = kThreadsFromOption;
		if (n.size() > 9) {
			std::uint64_t t = 0;
			try {
				t = tools::parse_u64(n.substr(9), "thread count");
			} catch (const std::invalid_argument &) {
			}
			if (t < 1 || t > bufmgr::CopyWorkers::max_threads)
				throw BadMode("mode '" + name + "': memcpy-mt takes a thread count from 1 to " +
					      std::to_string(bufmgr::CopyWorkers::max_threads) + ", e.g. memcpy-mt4");
			s.threads = static_cast<unsigned>(t);
		}
	} else if (n == "c2h" || n == "h2c" || n == "c2h-umem" || n == "h2c-umem") {
		s.family = Family::Dma;
		s.c2h = n[0] == 'c';
		s.umem = n.size() > 3;
	} else if (n == "lat-c2h" || n == "lat-h2c") {
		s.family = Family::Dma;
		s.c2h = n == "lat-c2h";
		s.latency = true;
	} else if (n.compare(0, 7, "ops-c2h") == 0 || n.compare(0, 7, "ops-h2c") == 0) {
		s.family = Family::Ops;
		s.c2h = n[4] == 'c';
		std::string rest = n.substr(7);
		if (!rest.empty()) {
			std::uint64_t b = 0;
			if (rest.compare(0, 2, "-b") == 0) {
				try {
					b = tools::parse_u64(rest.substr(2), "batch");
				} catch (const std::invalid_argument &) {
				}
			}
			if (b < 1 || b > 256)
				throw BadMode("mode '" + name + "': ops-c2h/ops-h2c take a batch of 1 to 256 "
					      "operations per submit call as -bN, e.g. ops-c2h-b64");
			s.batch = static_cast<unsigned>(b);
		}
	} else if (n == "loopback") {
		s.family = Family::Loopback;
	} else if (n == "pio-read" || n == "pio-write") {
		s.family = Family::Pio;
		s.c2h = n == "pio-read";
	} else if (n == "hg" || n == "gh" || n == "fi-serial" || n == "gi-serial" || n == "fi" || n == "gi") {
		s.family = Family::Gpu;
		s.gpu = n;
	} else if (n == "fr" || n == "gr" || n == "ri" || n == "ri-copy" || n == "lat-ri" || n == "lat-ri-copy" ||
		   n == "lat-fi" || n == "ig" || n == "lat-ig") {
		s.family = Family::Gpu;
		s.gpu = n;
		s.latency = n.compare(0, 4, "lat-") == 0;
	} else if (n.compare(0, 4, "ig-b") == 0) {
		std::uint64_t b = 0;
		try {
			b = tools::parse_u64(n.substr(4), "block count");
		} catch (const std::invalid_argument &) {
		}
		if (b < 1 || b > 8)
			throw BadMode("mode '" + name + "': ig takes 1 to 8 consuming blocks as -bN, e.g. ig-b4");
		s.family = Family::Gpu;
		s.gpu = "ig";
		s.blocks = static_cast<unsigned>(b);
	} else if ((n.compare(0, 3, "fi-") == 0 || n.compare(0, 3, "gi-") == 0 || n.compare(0, 3, "fi:") == 0 ||
		    n.compare(0, 3, "gi:") == 0) && n.find("-serial") == std::string::npos) {
		s.family = Family::Gpu;
		s.gpu = n.substr(0, 2);
		std::string rest = n.substr(3);
		s.samples = strip_suffix(n, ":i16f");
		if (n.find(':') != std::string::npos)
			throw BadMode("mode '" + name + "': the one conversion is :i16f (int16 <-> float)");
		rest = n.size() > 3 ? n.substr(3) : std::string();
		if (!relay_buffers(rest, name, s) && !rest.empty()) {
			throw BadMode("unknown mode '" + name + "' (fi/gi take -serial, -db<S> or -pb<S>x<N>, and :i16f)");
		}
	} else if (n == "net" || n.compare(0, 4, "net-") == 0) {
		s.family = Family::Net;
		if (n == "net") { // 4 buffers of 1 MiB
			s.algo = 'p';
			s.buf_size = 1u << 20;
			s.buf_count = 4;
		} else if (!relay_buffers(n.substr(4), name, s)) {
			throw BadMode("unknown mode '" + name + "' (net takes -db<S> or -pb<S>x<N>, e.g. net-pb1Mx8)");
		}
	} else if (n.compare(0, 2, "cb") == 0 || n.compare(0, 2, "db") == 0 || n.compare(0, 2, "pb") == 0) {
		s.family = Family::BufMgr;
		s.algo = n[0];
		std::string rest = n.substr(2);
		s.samples = strip_suffix(rest, ":i16f");
		if (rest.find(':') != std::string::npos)
			throw BadMode("mode '" + name + "': the one conversion is :i16f (int16 <-> float)");
		if (strip_suffix(rest, "-c2h"))
			s.c2h = true;
		else if (strip_suffix(rest, "-h2c"))
			s.c2h = false;
		else
			throw BadMode("mode '" + name + "' needs a direction (-c2h or -h2c)");
		if (rest.empty() || rest == "-")
			throw BadMode("mode '" + name.substr(0, 2) + "' needs a DMA buffer size" +
				      (s.algo == 'p' ? " and count, e.g. pb1Mx8" : std::string(", e.g. ") + s.algo + "b4M"));
		if (s.algo == 'p') {
			pool_spec(rest, name, &s.buf_size, &s.buf_count);
		} else {
			s.buf_size = mode_size(rest, name);
			s.buf_count = s.algo == 'c' ? 1 : 2;
		}
	} else {
		throw BadMode("unknown mode '" + name + "' (dmabench --list-modes lists them)");
	}
	// The canonical spelling, as it appears in the CSV and JSON.
	switch (s.family) {
	case Family::BufMgr:
		s.canonical = std::string(1, s.algo) + "b" + format_size_short(s.buf_size) +
			      (s.algo == 'p' ? "x" + std::to_string(s.buf_count) : "") + (s.c2h ? "-c2h" : "-h2c") +
			      (s.samples ? ":i16f" : "");
		break;
	case Family::Gpu:
		s.canonical = s.gpu;
		if (s.algo)
			s.canonical += relay_buffers_name(s);
		if (s.samples)
			s.canonical += ":i16f";
		if (s.blocks > 1)
			s.canonical += "-b" + std::to_string(s.blocks);
		break;
	case Family::Net:
		s.canonical = n == "net" ? n : "net" + relay_buffers_name(s);
		break;
	case Family::Ops:
		s.canonical = std::string(s.c2h ? "ops-c2h" : "ops-h2c") +
			      (s.batch > 1 ? "-b" + std::to_string(s.batch) : "");
		break;
	default:
		s.canonical = n;
	}
	return s;
}

std::vector<std::string> expand_mode(const std::string &name)
{
	std::string n = to_lower(name);
	bool bufmgr = (n.compare(0, 2, "cb") == 0 || n.compare(0, 2, "db") == 0 || n.compare(0, 2, "pb") == 0);
	if (bufmgr && (n.size() == 2 || n[2] == '-' || n[2] == ':'))
		throw BadMode("mode '" + n.substr(0, 2) + "' needs a DMA buffer size" +
			      (n[0] == 'p' ? " and count, e.g. pb1Mx8" : std::string(", e.g. ") + n[0] + "b4M"));
	std::string conversion;
	if (bufmgr && strip_suffix(n, ":i16f"))
		conversion = ":i16f";
	if (bufmgr && !(n.size() > 4 && (n.compare(n.size() - 4, 4, "-c2h") == 0 || n.compare(n.size() - 4, 4, "-h2c") == 0)))
		return {parse_mode(n + "-c2h" + conversion).canonical, parse_mode(n + "-h2c" + conversion).canonical};
	if (bufmgr)
		return {parse_mode(n + conversion).canonical};
	return {parse_mode(name).canonical};
}

bool is_gpu_mode(const std::string &canonical) { return parse_mode(canonical).family == Family::Gpu; }

} // namespace dmabench
