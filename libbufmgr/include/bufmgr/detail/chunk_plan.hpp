// SPDX-License-Identifier: LGPL-2.1-or-later
//
// ChunkPlan: where the pipelines (detail/pipeline.hpp) and Relay cut a transfer into chunks.
#ifndef BUFMGR_DETAIL_CHUNK_PLAN_HPP
#define BUFMGR_DETAIL_CHUNK_PLAN_HPP

#include <algorithm>
#include <cstddef>
#include <utility>

namespace bufmgr::detail {

// Where a transfer of `total` bytes is cut into chunks of at most `chunk`. Full chunks, except
// at an end whose chunk is exposed, not overlapped by another transfer: a read's last chunk (its
// copy), a write's first (its copy), both ends of a Relay (the first chunk's fill, the last
// one's drain). That chunk's worth is cut into halving pieces (chunk/2, chunk/4, ... down to
// min_piece; in reverse at the head), so the exposed work is min_piece bytes, not a whole
// buffer, while each piece still hides behind its neighbour's transfer as long as the exposed
// side is at least twice as fast as the other. A partial chunk goes next to the end that is not
// split (a read's first, a write's last). Every piece is a multiple of unit.
enum class SplitEnds { none, head, tail, both };

class ChunkPlan {
public:
	static constexpr std::size_t min_piece = 256 << 10;

	ChunkPlan(std::size_t total, std::size_t chunk, std::size_t unit, SplitEnds split) noexcept : chunk_(chunk)
	{
		const bool head = split == SplitEnds::head || split == SplitEnds::both;
		const bool tail = split == SplitEnds::tail || split == SplitEnds::both;
		std::size_t rest = total;
		if (head) // with both ends split, at most half of the total for the head
			nhead_ = halve(head_, take(rest, tail ? std::min(chunk, total / 2 / unit * unit) : chunk), unit, true);
		if (tail)
			ntail_ = halve(tail_, take(rest, chunk), unit, false);
		full_ = rest / chunk;
		partial_ = rest % chunk;
		partial_first_ = tail && !head;
		count_ = nhead_ + full_ + (partial_ ? 1 : 0) + ntail_;
	}

	std::size_t count() const noexcept { return count_; }

	// Bytes of chunk c < count().
	std::size_t len(std::size_t c) const noexcept
	{
		if (c < nhead_)
			return head_[c];
		c -= nhead_;
		if (partial_ && partial_first_) {
			if (c == 0)
				return partial_;
			--c;
		}
		if (c < full_)
			return chunk_;
		c -= full_;
		if (partial_ && !partial_first_) {
			if (c == 0)
				return partial_;
			--c;
		}
		return tail_[c];
	}

private:
	static constexpr std::size_t max_pieces = 10;

	static std::size_t take(std::size_t &rest, std::size_t n) noexcept
	{
		n = rest < n ? rest : n;
		rest -= n;
		return n;
	}

	// Cuts n bytes into halving pieces (ascending for the head); returns how many.
	static std::size_t halve(std::size_t *out, std::size_t n, std::size_t unit, bool ascending) noexcept
	{
		if (n == 0)
			return 0;
		std::size_t k = 0, left = n;
		while (k + 1 < max_pieces && (left / 2) / unit * unit >= min_piece) {
			out[k] = (left / 2) / unit * unit;
			left -= out[k++];
		}
		out[k++] = left;
		if (ascending)
			for (std::size_t a = 0, b = k - 1; a < b; ++a, --b)
				std::swap(out[a], out[b]);
		return k;
	}

	std::size_t chunk_, full_ = 0, partial_ = 0, count_ = 0, nhead_ = 0, ntail_ = 0;
	bool partial_first_ = false;
	std::size_t head_[max_pieces] = {}, tail_[max_pieces] = {};
};

} // namespace bufmgr::detail

#endif // BUFMGR_DETAIL_CHUNK_PLAN_HPP
