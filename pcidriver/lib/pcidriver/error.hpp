// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The one C++ exception of the stack: libpcidriver, libmprace (mprace::Error) and libbufmgr
// (bufmgr::Error) throw this class (or, for engine and CUDA failures, a class derived from
// it). A std::system_error in std::generic_category() carrying a positive errno; what() is
// the message given, then ": " and the errno's text, once.
#ifndef PCIDRIVER_ERROR_HPP
#define PCIDRIVER_ERROR_HPP

#include <string>
#include <system_error>

namespace pcidriver {

class Error : public std::system_error {
public:
	// err: a positive errno value; what: what failed, and what to do where that helps.
	Error(int err, const std::string &what)
		: std::system_error(err, std::generic_category(), what) {}
};

} // namespace pcidriver

#endif // PCIDRIVER_ERROR_HPP
