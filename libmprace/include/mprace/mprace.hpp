// SPDX-License-Identifier: LGPL-2.1-or-later
//
// libmprace C++ API, all of it: Board (board.hpp), DMABuffer, DMADescriptorList, DMAEngine,
// Transfer (dma.hpp), Error and DMAError (error.hpp). Guide: docs/libmprace.md.
#ifndef MPRACE_MPRACE_HPP
#define MPRACE_MPRACE_HPP

#include "mprace/error.hpp"
#include "mprace/board.hpp"
#include "mprace/dma.hpp"

#endif // MPRACE_MPRACE_HPP
