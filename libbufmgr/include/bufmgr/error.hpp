// SPDX-License-Identifier: LGPL-2.1-or-later
//
// bufmgr::Error: the exception every part of libbufmgr throws for its own errors.
//
// The stack's one exception class, pcidriver::Error (pcidriver/error.hpp): a std::system_error
// carrying a positive errno value in the generic category, so a caller catches one type for
// all three layers and compares code() with std::errc values. Errors thrown by a Transfer
// policy (e.g. the engine's) reach the caller unchanged.
#ifndef BUFMGR_ERROR_HPP
#define BUFMGR_ERROR_HPP

#include <cerrno>

#include "pcidriver/error.hpp"

namespace bufmgr {

using Error = pcidriver::Error;

} // namespace bufmgr

#endif // BUFMGR_ERROR_HPP
