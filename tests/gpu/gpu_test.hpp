// SPDX-License-Identifier: GPL-2.0
// A minimal harness for the GPU tests: each check prints one TAP-style line ("ok N - what" or
// "not ok N - what: why"); main() returns 0 when all passed, 1 otherwise, and 77 (automake's
// SKIP) when the test needs a GPU and there is none. Plain exit codes, no Check: the GPU
// machine needs nothing but a compiler and nvcc to build these.
#ifndef TESTS_GPU_GPU_TEST_HPP
#define TESTS_GPU_GPU_TEST_HPP

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <system_error>

namespace gputest {

inline int &checks() { static int n = 0; return n; }
inline int &failures() { static int n = 0; return n; }

inline bool report(bool ok, const std::string &what, const char *fmt = nullptr, ...)
{
	++checks();
	if (ok) {
		std::printf("ok %d - %s\n", checks(), what.c_str());
	} else {
		++failures();
		std::printf("not ok %d - %s", checks(), what.c_str());
		if (fmt) {
			std::va_list ap;
			va_start(ap, fmt);
			std::printf(": ");
			std::vprintf(fmt, ap);
			va_end(ap);
		}
		std::printf("\n");
	}
	std::fflush(stdout);
	return ok;
}

// Runs a named case; an exception is a failure with its text.
inline void run(const std::string &name, const std::function<void()> &f)
{
	const int before = failures();
	try {
		f();
	} catch (const std::exception &e) {
		report(false, name, "threw: %s", e.what());
		return;
	}
	if (failures() == before)
		std::printf("# %s: passed\n", name.c_str());
}

// The errno and text of the std::system_error f throws (0, "" if none; -1 for other exceptions).
struct Thrown {
	int err = 0;
	std::string what;
};
inline Thrown thrown(const std::function<void()> &f)
{
	try {
		f();
	} catch (const std::system_error &e) {
		return {e.code().value(), e.what()};
	} catch (const std::exception &e) {
		return {-1, e.what()};
	}
	return {};
}

inline int finish()
{
	std::printf("1..%d\n# %d of %d checks failed\n", checks(), failures(), checks());
	return failures() ? 1 : 0;
}

} // namespace gputest

#endif
