// SPDX-License-Identifier: GPL-2.0
// The GPU tests' board: a board opened by name (the virtual board), its DMA engine, and the test
// logic routed pattern generator -> C2H, H2C -> checker; user() is the board side of the CUDA
// stage on user memory (the only kind CUDA can register).
#ifndef TESTS_GPU_BOARD_RIG_HPP
#define TESTS_GPU_BOARD_RIG_HPP

#include <cstdint>

#include "bufmgr/mprace_transfer.hpp"
#include "mprace/mprace.hpp"

struct Rig {
	mprace::Board board;
	mprace::DMAEngine engine;
	explicit Rig(const char *name, std::uint32_t ring_entries = mprace::EngineOptions().ringEntries)
		: board(name), engine(board, options(ring_entries))
	{
		board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
	}
	bufmgr::MpraceTransfer user() { return bufmgr::MpraceTransfer(board, engine, bufmgr::MemoryKind::user); }

private:
	static mprace::EngineOptions options(std::uint32_t ring_entries)
	{
		mprace::EngineOptions o;
		o.ringEntries = ring_entries;
		return o;
	}
};

#endif
