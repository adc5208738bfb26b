// SPDX-License-Identifier: LGPL-2.1-or-later
//
// libbufmgr: everything that needs neither libmprace nor CUDA. The libmprace Transfer policy
// is in bufmgr/mprace_transfer.hpp, the CUDA stage in bufmgr/cuda.hpp.
#ifndef BUFMGR_BUFMGR_HPP
#define BUFMGR_BUFMGR_HPP

#include "bufmgr/chunk_buffer.hpp"
#include "bufmgr/concepts.hpp"
#include "bufmgr/double_buffer.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/memcpy_transfer.hpp"
#include "bufmgr/memory.hpp"
#include "bufmgr/pooled_buffer.hpp"
#include "bufmgr/relay.hpp"
#include "bufmgr/transform.hpp"

#endif // BUFMGR_BUFMGR_HPP
