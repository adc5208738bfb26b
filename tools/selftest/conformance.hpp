// SPDX-License-Identifier: GPL-2.0
// The engine conformance suite (conformance.cpp), run by `mprace selftest`.
#ifndef TOOLS_SELFTEST_CONFORMANCE_HPP
#define TOOLS_SELFTEST_CONFORMANCE_HPP

#include <cstdint>
#include <cstdio>
#include <vector>

#include "mprace/board.hpp"

namespace selftest {

struct Options {
	std::uint32_t seed = 0;       // every random choice follows from it: a run repeats exactly
	bool quick = false;           // fewer transfers (selftest's short mode)
	bool slow = false;            // sized for a board that moves kilobytes per second of wall
				      // time (sim:): transfers of at most 64 KiB, waits up to 10 min
	std::vector<std::FILE *> out; // TAP lines go to each
};

struct Outcome {
	int checks = 0, failures = 0, skipped = 0;
};

// Runs every check on b, which must be a board with our engine (the identity checks fail
// otherwise); leaves the engine idle, routed to the pattern generator and checker.
// \pre no other user of b's engine. One run at a time per board.
Outcome run(mprace::Board &b, const Options &o);

} // namespace selftest

#endif
