// SPDX-License-Identifier: GPL-2.0-or-later
//
// mprace-recv --board: network -> host -> board. Every chunk is written to the receiving host's
// board (H2C) straight from the receiver's memory, where UCX landed it: each of the receiver's
// slots is pinned and mapped for the board once, the first time a chunk lands in it (slots live
// as long as the Receiver), so a chunk costs one DMA transfer and no CPU copy.
//
// The board's H2C path ends in its pattern checker, which compares the words it gets with the
// pattern from the word it was last set to (CHECK_SEED) and counts them. The pattern's word at
// stream offset o is mp_pattern_word(seed, o / 4) whatever the sender, so a chunk that continues
// the checker's stream (offset = where the last chunk ended) needs no reset and can be written
// while the ones before it are still on the board; a chunk elsewhere in the stream (another
// sender, a gap) waits until the board has taken those, then the checker is set to its offset.
// The counts are read when nothing is on the board, and judge every chunk written since the
// last reading at once (a "run").
#ifndef TOOLS_NET_RECV_BOARD_HPP
#define TOOLS_NET_RECV_BOARD_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bufmgr/net.hpp"
#include "mprace-spec/pattern.h"
#include "mprace/mprace.hpp"

namespace recvboard {

// What the board's checker made of the chunks written since it was last read.
struct Run {
	std::vector<bufmgr::net::Chunk> chunks; // in the order written (their memory given back)
	std::uint64_t words = 0;                // 32-bit words written
	std::uint64_t checked = 0;              // of them, the checker compared
	std::uint64_t errors = 0;               // of those, differing from the pattern
};

class Sink {
public:
	static constexpr std::size_t depth = 4;     // chunks on the board at once
	static constexpr std::size_t run_limit = 64; // chunks judged at least this often

	// Opens the board `device` and its engine (mprace::Error: ENODEV no such board, EBUSY its
	// engine in use) and routes H2C to the checker; C2H keeps its source.
	Sink(const std::string &device, std::size_t max_chunk, std::uint32_t seed)
		: device_(device), board_(device), engine_(board_), max_chunk_(max_chunk), seed_(seed)
	{
		board_.setTestRouting(board_.c2hSource(), mprace::H2CSink::Checker);
	}

	// A chunk the engine can move: whole 32-bit words, at a word of the stream.
	static bool fits(const bufmgr::net::Chunk &c) noexcept
	{
		return c.size % MP_ENGINE_GRANULE == 0 && c.header.offset % MP_ENGINE_GRANULE == 0;
	}

	bool busy() const noexcept { return !queue_.empty(); }
	bool full() const noexcept { return queue_.size() >= depth; }
	const std::string &device() const noexcept { return device_; }

	// Queues the chunk (one that fits(); with room: reap() until !full()) for the board. `done` gets each
	// chunk the board has taken (to give it back to the receiver), `judged` each run read off
	// the checker. Throws mprace::Error for the board's errors (EIO, ETIMEDOUT ...).
	void submit(const bufmgr::net::Chunk &c, const std::function<void(const bufmgr::net::Chunk &)> &done,
		    const std::function<void(const Run &)> &judged)
	{
		if (next_offset_ != c.header.offset || run_.chunks.size() + queue_.size() >= run_limit) {
			drain(done, judged);
			board_.resetChecker(mp_pattern_word(seed_, c.header.offset / 4));
		}
		queue_.push_back(Pending{c, engine_.writeAsync(buffer_of(c), 0, c.size)});
		next_offset_ = c.header.offset + c.size;
	}

	// Gives `done` the chunks the board has taken, oldest first; with wait, waits for the
	// oldest if none has. A failed write throws std::runtime_error naming its chunk.
	void reap(bool wait, const std::function<void(const bufmgr::net::Chunk &)> &done)
	{
		while (!queue_.empty() && (queue_.front().write.done() || wait)) {
			try {
				queue_.front().write.get();
			} catch (const std::exception &e) {
				const bufmgr::net::ChunkHeader &h = queue_.front().chunk.header;
				throw std::runtime_error("chunk " + std::to_string(h.sequence) + " of source " +
							 std::to_string(h.source) + ": " + e.what());
			}
			const bufmgr::net::Chunk c = queue_.front().chunk;
			queue_.pop_front();
			run_.chunks.push_back(c);
			run_.words += c.size / 4;
			done(c);
			wait = false;
		}
	}

	// Waits until the board has taken every chunk, then judges the run (if any).
	void drain(const std::function<void(const bufmgr::net::Chunk &)> &done,
		   const std::function<void(const Run &)> &judged)
	{
		while (!queue_.empty())
			reap(true, done);
		if (run_.chunks.empty())
			return;
		const mprace::CheckerCounts k = board_.checker();
		run_.checked = k.words;
		run_.errors = k.errors;
		judged(run_);
		run_ = Run{};
		next_offset_.reset(); // the counts are per reset: the next chunk starts a run
	}

private:
	struct Pending {
		bufmgr::net::Chunk chunk;
		mprace::Transfer write;
	};

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
	std::uint32_t seed_;
	std::map<const std::byte *, std::unique_ptr<mprace::DMABuffer>> mapped_; // destroyed before the engine
	std::deque<Pending> queue_;                // on the board, oldest first
	Run run_;                                  // taken by the board since the checker was read
	std::optional<std::uint64_t> next_offset_; // where the checker's stream goes on
};

} // namespace recvboard

#endif
