// SPDX-License-Identifier: GPL-2.0-or-later
//
// Internal to dmabench: the parsed form of a mode name and the factories of each family.
#ifndef TOOLS_DMABENCH_MODES_IMPL_HPP
#define TOOLS_DMABENCH_MODES_IMPL_HPP

#include <cstdint>
#include <memory>
#include <string>

#include "mode.hpp"
#include "mprace-spec/pattern.h"

namespace dmabench {

enum class Family {
	Memcpy,    // memcpy, memcpy-mt[N]
	Dma,       // c2h, h2c, c2h-umem, h2c-umem, lat-c2h, lat-h2c
	Loopback,  // loopback
	Pio,       // pio-read, pio-write
	BufMgr,    // cb, db, pb
	Gpu,       // hg, gh, fi, fi-serial, gi, gi-serial, fr, gr and the fi-/gi- buffer variants
	Ops,       // ops-c2h, ops-h2c[-bN]: the host CPU cost of libmprace per operation
	Net,       // net, net-db<S>, net-pb<S>x<N>: board -> host -> network (bufmgr/net.hpp)
};

struct ModeSpec {
	Family family = Family::Memcpy;
	std::string canonical;
	bool c2h = true;          // Dma/BufMgr/Pio: direction (Pio: read)
	bool umem = false;        // Dma: user memory
	bool latency = false;     // Dma: lat-c2h / lat-h2c, each transfer's round trip recorded
	char algo = 0;            // BufMgr and fi/gi variants: 'c', 'd' or 'p'; 0 default
	std::uint64_t buf_size = 0;
	unsigned buf_count = 0;
	std::string gpu;          // Gpu: "hg", "gh", "fi", "fi-serial", "gi", "gi-serial", "fr", "gr"
	unsigned threads = 0;     // Memcpy: 0 plain memcpy; memcpy-mt: N, or kThreadsFromOption
	bool samples = false;     // BufMgr ":i16f": int16 on the board, float in the user's buffer
	unsigned batch = 1;       // Ops: operations per submit call
	unsigned blocks = 1;      // ig-b<N>: GPU blocks consuming chunks
};

// memcpy-mt without a count: as many threads as --copy-threads gives the buffer managers.
constexpr unsigned kThreadsFromOption = ~0u;

// Parses one canonical or user-spelled name with its direction; throws BadMode.
ModeSpec parse_mode(const std::string &name);

std::unique_ptr<Mode> make_memcpy_mode(const ModeSpec &s, Env &env);
std::unique_ptr<Mode> make_dma_mode(const ModeSpec &s, Env &env);
std::unique_ptr<Mode> make_loopback_mode(const ModeSpec &s, Env &env);
std::unique_ptr<Mode> make_pio_mode(const ModeSpec &s, Env &env);
std::unique_ptr<Mode> make_ops_mode(const ModeSpec &s, Env &env);
std::unique_ptr<Mode> make_bufmgr_mode(const ModeSpec &s, Env &env);
// In modes_cuda.cu, or modes_nocuda.cpp when built without CUDA (throws Unavailable).
std::unique_ptr<Mode> make_gpu_mode(const ModeSpec &s, Env &env);
// In modes_net.cpp, or modes_nonet.cpp when built without UCX (throws Unavailable).
std::unique_ptr<Mode> make_net_mode(const ModeSpec &s, Env &env);

// The engine's counter pattern (mprace-spec/pattern.h) in whole words: fill_pattern fills a
// buffer, check_pattern returns the first word that differs, or -1.
inline void fill_pattern(void *buf, std::uint64_t bytes, std::uint32_t seed)
{
	mp_pattern_fill(buf, bytes & ~3ull, 0, seed);
}
inline std::int64_t check_pattern(const void *buf, std::uint64_t bytes, std::uint32_t seed)
{
	const std::int64_t bad = mp_pattern_find_mismatch(buf, bytes & ~3ull, 0, seed);
	return bad < 0 ? -1 : bad / 4;
}

// After an H2C transfer of `bytes` of the counter pattern into the engine's checker (reset to
// the pattern's seed before): true when it counted every word and found no mismatch; else
// false with *why. The counters may trail the completion record by a moment: it waits up to
// 200 ms for them (env.cpp).
bool checker_ok(Env &env, std::uint64_t bytes, std::string *why);

} // namespace dmabench

#endif
