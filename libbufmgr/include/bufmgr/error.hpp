// SPDX-License-Identifier: LGPL-2.1-or-later
//
// bufmgr::Error: the exception every part of libbufmgr throws for its own errors.
//
// A std::system_error carrying a positive errno value in the generic category, like
// pcidriver::Error and mprace's errors, so a caller can catch std::system_error for all three
// layers and compare code() with std::errc values. Errors thrown by a Transfer policy (e.g.
// the engine's) reach the caller unchanged.
#ifndef BUFMGR_ERROR_HPP
#define BUFMGR_ERROR_HPP

#include <cerrno>
#include <string>
#include <system_error>

namespace bufmgr {

class Error : public std::system_error {
public:
	// err: a positive errno value; what: what failed, and what to do about it where that helps.
	Error(int err, const std::string &what)
		: std::system_error(err, std::generic_category(), what) {}
};

} // namespace bufmgr

#endif // BUFMGR_ERROR_HPP
