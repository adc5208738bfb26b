// SPDX-License-Identifier: GPL-2.0
// Shared by the libmprace suites: virtual-board rigs, pattern helpers and error assertions.
#ifndef TESTS_UNIT_TEST_MPRACE_HPP
#define TESTS_UNIT_TEST_MPRACE_HPP

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "check_main.h"
#include "mprace/mprace.hpp"
#include "mprace-spec/pattern.h"

namespace mptest {

using namespace mprace;

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// The pattern the generator sends and the checker expects (mprace-spec/pattern.h), in whole words.
inline void fillPattern(void *p, std::size_t len, std::uint32_t seed)
{
	mp_pattern_fill(p, len & ~std::size_t(3), 0, seed);
}

// Index of the first word that differs from the pattern, or SIZE_MAX.
inline std::size_t patternMismatch(const void *p, std::size_t len, std::uint32_t seed)
{
	const std::int64_t bad = mp_pattern_find_mismatch(p, len & ~std::size_t(3), 0, seed);
	return bad < 0 ? SIZE_MAX : static_cast<std::size_t>(bad / 4);
}

inline void assertPattern(const void *p, std::size_t len, std::uint32_t seed, const char *what)
{
	std::size_t i = patternMismatch(p, len, seed);
	if (i != SIZE_MAX) {
		auto *w = static_cast<const std::uint32_t *>(p);
		ck_abort_msg("%s: word %zu of %zu is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, i,
			     len / 4, w[i], mp_pattern_word(seed, i));
	}
}

// Page-aligned anonymous memory, for user-memory buffers.
class Anon {
public:
	explicit Anon(std::size_t size) : size_(size)
	{
		p_ = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_msg(p_ != MAP_FAILED, "mmap %zu bytes", size);
	}
	~Anon() { munmap(p_, size_); }
	Anon(const Anon &) = delete;
	Anon &operator=(const Anon &) = delete;
	char *data() const { return static_cast<char *>(p_); }
	std::size_t size() const { return size_; }

private:
	void *p_;
	std::size_t size_;
};

// Runs f and returns the errno of the std::system_error it throws (0 if none).
inline int errnoOf(const std::function<void()> &f)
{
	try {
		f();
	} catch (const std::system_error &e) {
		return e.code().value();
	}
	return 0;
}

// Runs f, which must throw DMAError; returns it.
inline DMAError dmaErrorOf(const std::function<void()> &f)
{
	try {
		f();
	} catch (const DMAError &e) {
		return e;
	} catch (const std::exception &e) {
		ck_abort_msg("expected a DMAError, got: %s", e.what());
	}
	ck_abort_msg("expected a DMAError, nothing was thrown");
	return DMAError(0, 0, Channel::C2H, 0, ""); // not reached
}

#define ck_assert_errno(expr, err)                                                            \
	do {                                                                                  \
		int got_ = mptest::errnoOf([&] { (void)(expr); });                           \
		ck_assert_msg(got_ == (err), "%s: errno %d (%s), expected %d (%s)", #expr, got_, \
			      std::strerror(got_), (err), std::strerror(err));                 \
	} while (0)

inline EngineOptions options(Completion mode, std::uint32_t ring = 1024)
{
	EngineOptions o;
	o.completion = mode;
	o.ringEntries = ring;
	o.waitTimeout = std::chrono::milliseconds(60000);
	return o;
}

inline const char *modeName(Completion m) { return m == Completion::Polling ? "polling" : "interrupt"; }

} // namespace mptest

#endif // TESTS_UNIT_TEST_MPRACE_HPP
