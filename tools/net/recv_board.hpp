// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace-recv --board: network -> host -> board. Every chunk is written to the receiving host's
// board (H2C) straight from the receiver's memory, where UCX landed it: each of the receiver's
// slots is pinned and mapped for the board once, the first time a chunk lands in it (slots live
// as long as the Receiver), so a chunk costs one DMA transfer and no CPU copy. The board's
// H2C path ends in its pattern checker, set before each chunk to the pattern word at the
// chunk's stream offset, so chunks of several senders, in any order, are each checked by the
// board byte for byte.
#ifndef TOOLS_NET_RECV_BOARD_HPP
#define TOOLS_NET_RECV_BOARD_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "bufmgr/net.hpp"
#include "mprace-spec/pattern.h"
#include "mprace/mprace.hpp"

namespace recvboard {

// What the board's checker made of one chunk.
struct Checked {
	std::uint64_t words = 0;  // 32-bit words it compared
	std::uint64_t errors = 0; // of them, differing from the pattern
};

class Sink {
public:
	// Opens the board `device` and its engine (mprace::Error: ENODEV no such board, EBUSY its
	// engine in use) and routes H2C to the checker; C2H keeps its source.
	Sink(const std::string &device, std::size_t max_chunk)
		: device_(device), board_(device), engine_(board_), max_chunk_(max_chunk)
	{
		board_.setTestRouting(board_.c2hSource(), mprace::H2CSink::Checker);
	}

	// A chunk the engine can move: whole 32-bit words, at a word of the stream.
	static bool fits(const bufmgr::net::Chunk &c) noexcept
	{
		return c.size % MP_ENGINE_GRANULE == 0 && c.header.offset % MP_ENGINE_GRANULE == 0;
	}

	// Writes the chunk (one that fits()) to the board, its checker expecting the pattern of
	// `seed` from the chunk's stream offset. Throws mprace::Error for the board's errors (EIO,
	// ETIMEDOUT ...).
	Checked write(const bufmgr::net::Chunk &c, std::uint32_t seed)
	{
		board_.resetChecker(mp_pattern_word(seed, c.header.offset / 4));
		engine_.write(buffer_of(c), 0, c.size);
		const mprace::CheckerCounts k = board_.checker();
		return Checked{k.words, k.errors};
	}

	const std::string &device() const noexcept { return device_; }

private:
	mprace::DMABuffer &buffer_of(const bufmgr::net::Chunk &c)
	{
		auto it = mapped_.find(c.data);
		if (it == mapped_.end()) {
			void *p = const_cast<std::byte *>(c.data);
			it = mapped_.emplace(c.data, std::make_unique<mprace::DMABuffer>(board_, p, max_chunk_,
											   PD_DMA_TO_DEVICE))
				     .first;
		}
		return *it->second;
	}

	std::string device_;
	mprace::Board board_;
	mprace::DMAEngine engine_;
	std::size_t max_chunk_;
	std::map<const std::byte *, std::unique_ptr<mprace::DMABuffer>> mapped_; // destroyed before the engine
};

} // namespace recvboard

#endif
