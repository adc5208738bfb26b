// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Errors of libmprace (C++). mprace::Error is the stack's one exception class, pcidriver::Error
// (pcidriver/error.hpp): a std::system_error in std::generic_category() carrying a positive
// errno, so `catch (const std::system_error &e)` and `e.code().value()` work everywhere; the C
// API returns the same errno negated. Errors from libpcidriver pass through unchanged.
//
// Misuse (argument checks, done before anything reaches the engine), by errno:
//   EINVAL    zero length, offset or length not a multiple of the 4-byte granule, an unknown
//             channel, a bad option (ring size not a power of two, ...), a register offset
//             outside BAR0 or not 4-byte aligned
//   ERANGE    offset + length runs past the end of the buffer
//   EXDEV     the buffer belongs to another board than the engine
//   EACCES    user memory mapped for the other direction only (PD_DMA_TO_DEVICE used for C2H,
//             PD_DMA_FROM_DEVICE for H2C)
//   ENODEV    the board (or the engine) was closed; or MAGIC is not our engine's at open
//   EPROTONOSUPPORT  the engine's VERSION.MAJOR differs from the one this library implements
//   EBUSY     a second DMAEngine on one board; test routing changed while transfers are
//             outstanding; the C API freeing a buffer that transfers still use
// Failures reported by the engine (DMAError, carrying the spec's error code):
//   BUS_ERROR -> EIO, TIMEOUT -> ETIMEDOUT, ABORTED -> ECANCELED,
//   DESC_LENGTH / DESC_ALIGN / DESC_RESERVED / RING_CONFIG -> EPROTO (the library never builds
//   such descriptors; only submitRaw() can), any other code -> EIO.
// The software wait timeout of a blocking call aborts the transfer and reports ETIMEDOUT with
// engineError() == MP_ERR_ABORTED (the engine did not time out; we gave up waiting).
#ifndef MPRACE_ERROR_HPP
#define MPRACE_ERROR_HPP

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

#include "mprace-spec/engine_spec.h"
#include "pcidriver/error.hpp"

namespace mprace {

using Error = pcidriver::Error;

// errno for an engine error code (MP_ERR_*), as listed above; 0 for MP_ERR_NONE.
constexpr int errnoFromEngineError(unsigned int code) noexcept
{
	switch (code) {
	case MP_ERR_NONE: return 0;
	case MP_ERR_BUS_ERROR: return EIO;
	case MP_ERR_TIMEOUT: return ETIMEDOUT;
	case MP_ERR_ABORTED: return ECANCELED;
	case MP_ERR_DESC_LENGTH:
	case MP_ERR_DESC_ALIGN:
	case MP_ERR_DESC_RESERVED:
	case MP_ERR_RING_CONFIG: return EPROTO;
	default: return EIO;
	}
}

enum class Channel : unsigned int { C2H = MP_CH_C2H, H2C = MP_CH_H2C };

inline const char *to_string(Channel c) noexcept { return c == Channel::C2H ? "C2H" : "H2C"; }

// A transfer that failed in the engine, or was aborted or timed out in software.
class DMAError : public Error {
public:
	DMAError(int err, unsigned int engine_error, Channel channel, std::uint64_t bytes,
		 const std::string &what)
		: Error(err, what), engine_error_(engine_error), channel_(channel), bytes_(bytes) {}

	// The spec's error code (MP_ERR_BUS_ERROR, ...), MP_ERR_NONE if the engine reported none.
	unsigned int engineError() const noexcept { return engine_error_; }
	const char *engineErrorName() const noexcept { return mp_engine_error_name(engine_error_); }
	Channel channel() const noexcept { return channel_; }
	// Bytes the transfer had moved before it failed (completed descriptors plus the failed
	// descriptor's RESULT_BYTES).
	std::uint64_t bytes() const noexcept { return bytes_; }

private:
	unsigned int engine_error_;
	Channel channel_;
	std::uint64_t bytes_;
};

} // namespace mprace

#endif // MPRACE_ERROR_HPP
