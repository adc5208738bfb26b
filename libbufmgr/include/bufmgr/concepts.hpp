// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The two policy concepts of libbufmgr, documented once, and the compile-time checks that turn a
// policy that does not model them into one readable static_assert message.
//
// Every algorithm (ChunkBuffer, DoubleBuffer, PooledBuffer, Relay) combines three independent
// parts, as MPRACE's buffer manager did: a Transfer policy (how a DMA buffer is filled from or
// drained to the other side), a Transform policy (the copy between the user's buffer and a DMA
// buffer, with a conversion merged into the loop) and the buffering algorithm itself.
//
// ---------------------------------------------------------------------------------------------
// Transfer concept
//
// A Transfer owns (or adopts) a set of equally sized DMA buffers and moves data between them and
// "the other side" (the board, a GPU, or a host-memory model) asynchronously, per Direction:
//   Direction::c2h  fill a buffer from the other side  (card to host, MPRACE "DMA read")
//   Direction::h2c  drain a buffer to the other side   (host to card, MPRACE "DMA write")
// The other side is a byte stream per direction: consecutive start() calls of one direction
// continue where the previous one ended.
//
// Given  T t;  const T ct;  Direction d;  std::size_t i, n, count, size;
//
//   T is MoveConstructible (an algorithm takes its Transfer by value).
//   T::can_c2h, T::can_h2c     static constexpr bool: the directions T supports. An algorithm's
//                              read() needs can_c2h, write() needs can_h2c (static_assert).
//   ct.granule()               size_t, a power of two: start() lengths and buffer sizes are
//                              multiples of it (4 for the engine, 1 for host-only transfers).
//   t.allocate(count, size)    (re)creates count >= 1 buffers of size bytes (a multiple of the
//                              granule) and releases the previous ones. Nothing may be in flight.
//   ct.buffer_count(), ct.buffer_size()
//   ct.view(i)                 BufferView of buffer i < buffer_count(): data, size, MemoryKind.
//   t.start(d, i, n)           queues filling (c2h) or draining (h2c) the first n bytes of buffer
//                              i, 0 < n <= buffer_size(), n a multiple of the granule; returns at
//                              once. A buffer is started at most once until it has been waited for.
//   t.wait(d, i)               blocks until buffer i's transfer has finished and returns the bytes
//                              moved (c2h: fewer than n when the source ended a packet). Buffers
//                              are waited for in the order they were started, per direction.
//                              Throws (a std::system_error) when the transfer failed or was
//                              aborted; afterwards the direction accepts only abort() and reset().
//   t.abort(d)                 noexcept, callable from ANY thread, also while another thread is
//                              blocked in wait(d, .): the transfers of d started before the call
//                              end promptly; wait() returns the result of one that had already
//                              finished and throws ECANCELED for the others. Transfers started
//                              after the call are not affected (an idle abort is harmless).
//   t.reset(d)                 noexcept: forgets everything in flight in direction d (aborting
//                              it), so the direction is idle and reusable; required after any
//                              wait(d, .) threw. May block until the other side has stopped
//                              touching the buffers. Not while another thread is in wait(d, .).
// Optional:
//   t.wait_for(d, i, timeout)  (std::chrono::microseconds) std::optional<std::size_t>: as wait(),
//                              but std::nullopt when buffer i's transfer has not finished
//                              within timeout (it stays started and is waited for again). Relay
//                              uses it to start a buffer that came back while it waits, so that
//                              with two buffers the link does not idle for a wake-up per buffer.
//   t.adopt(views, count)      (const BufferView *, size_t) use buffers owned elsewhere instead of
//                              allocating: how Relay lets two transfers share one pool (the board
//                              fills a buffer, the GPU reads the same memory). Throws when the
//                              transfer cannot use that kind of memory.
//
// Threads: allocate/adopt/start/wait/reset are called by one thread at a time (the algorithm's
// driving thread); only abort() may come from another thread.
//
// ---------------------------------------------------------------------------------------------
// Transform concept
//
// A Transform is the copy loop between a DMA buffer and the user's buffer. It maps in_type
// elements to out_type elements and is applied from source to destination of the copy:
//   read  (board -> user):  the DMA buffer holds in_type, the user receives out_type;
//   write (user -> board):  the user passes in_type, the DMA buffer (and the board) gets out_type.
//
// Given  const X x;  const X::in_type *src;  X::out_type *dst;  X::in_type v;  std::size_t n;
//
//   X::in_type, X::out_type    trivially copyable element types.
//   X is CopyConstructible (an algorithm keeps a copy; it may carry state such as a scale).
//   and one of
//   x(v)                       element form: returns the out_type for one element. The algorithm
//                              runs it in a plain loop the compiler can vectorise.
//   x(src, dst, n)             block form: converts n elements (src and dst do not overlap).
//                              Preferred when present (Identity uses memcpy).
//   or the reducing form, for a transform that computes something over the data as it copies
//   (a checksum, a histogram, a count):
//   X::partial_type            default-constructible: what one slice of the data contributes.
//   x(src, dst, n, partial)    const: converts n elements and accumulates into partial (which
//                              starts value-initialised for each slice).
//   x2.combine(partial)        (X x2, const partial_type &) folds one slice's partial into x2's
//                              state; called on the owning thread, in data order, once every
//                              slice of a copy has succeeded.
// Either may throw; the algorithm then cancels its transfers and rethrows to the caller.
//
// Threads. An algorithm may split one copy into slices of consecutive elements and run them at
// once on its copy threads (set_copy_threads(), bufmgr/copy_workers.hpp): a call may see any
// contiguous part of a buffer, calls for different parts run concurrently on different threads
// and finish in any order. So a transform may rely on its const state (a scale) and on the
// elements it is given, nothing else; one that keeps state between calls needs either
//   - the reducing form above (a running checksum whose partials combine in order), or
//   - static constexpr bool sequential = true: the algorithm then copies on its own thread
//     only, and asking it for more copy threads fails to compile.
// The element and block forms are called on const objects: a transform whose operator() is not
// const (a naive running checksum) is rejected at compile time for that reason.
// ---------------------------------------------------------------------------------------------
#ifndef BUFMGR_CONCEPTS_HPP
#define BUFMGR_CONCEPTS_HPP

#include <chrono>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "bufmgr/memory.hpp"

namespace bufmgr {

enum class Direction {
	c2h, // card to host: the other side fills a DMA buffer ("DMA read", board -> user)
	h2c, // host to card: the other side drains a DMA buffer ("DMA write", user -> board)
};

inline const char *to_string(Direction d) noexcept { return d == Direction::c2h ? "C2H" : "H2C"; }

namespace detail {

// ---- detection idiom (std::experimental::is_detected, spelled out for C++17) ----
template <class, template <class...> class Op, class... Args>
struct detector : std::false_type {};
template <template <class...> class Op, class... Args>
struct detector<std::void_t<Op<Args...>>, Op, Args...> : std::true_type {};
template <template <class...> class Op, class... Args>
constexpr bool is_detected = detector<void, Op, Args...>::value;

// ---- Transfer members ----
template <class T> using t_can_c2h = decltype(bool{T::can_c2h});
template <class T> using t_can_h2c = decltype(bool{T::can_h2c});
template <class T> using t_granule = decltype(std::size_t{std::declval<const T &>().granule()});
template <class T>
using t_allocate = decltype(std::declval<T &>().allocate(std::size_t{}, std::size_t{}));
template <class T> using t_count = decltype(std::size_t{std::declval<const T &>().buffer_count()});
template <class T> using t_size = decltype(std::size_t{std::declval<const T &>().buffer_size()});
template <class T>
using t_view = std::enable_if_t<std::is_convertible_v<
	decltype(std::declval<const T &>().view(std::size_t{})), BufferView>>;
template <class T>
using t_start = decltype(std::declval<T &>().start(Direction{}, std::size_t{}, std::size_t{}));
template <class T>
using t_wait = decltype(std::size_t{std::declval<T &>().wait(Direction{}, std::size_t{})});
template <class T>
using t_abort = std::enable_if_t<noexcept(std::declval<T &>().abort(Direction{}))>;
template <class T>
using t_reset = std::enable_if_t<noexcept(std::declval<T &>().reset(Direction{}))>;
template <class T>
using t_wait_for = decltype(std::optional<std::size_t>{std::declval<T &>().wait_for(
	Direction{}, std::size_t{}, std::chrono::microseconds{})});
template <class T>
using t_adopt = decltype(std::declval<T &>().adopt(std::declval<const BufferView *>(), std::size_t{}));

// ---- Transform members ----
template <class X> using x_in = typename X::in_type;
template <class X> using x_out = typename X::out_type;
template <class X>
using x_element = std::enable_if_t<std::is_convertible_v<
	decltype(std::declval<const X &>()(std::declval<const typename X::in_type &>())),
	typename X::out_type>>;
template <class X>
using x_block = decltype(std::declval<const X &>()(std::declval<const typename X::in_type *>(),
						   std::declval<typename X::out_type *>(), std::size_t{}));
template <class X> using x_partial = typename X::partial_type;
template <class X>
using x_reduce = decltype(std::declval<const X &>()(std::declval<const typename X::in_type *>(),
						    std::declval<typename X::out_type *>(), std::size_t{},
						    std::declval<typename X::partial_type &>()));
template <class X>
using x_combine = decltype(std::declval<X &>().combine(std::declval<const typename X::partial_type &>()));
template <class X> using x_sequential = decltype(bool{X::sequential});

template <class X, bool = is_detected<x_sequential, X>>
struct declared_sequential : std::false_type {};
template <class X>
struct declared_sequential<X, true> : std::bool_constant<X::sequential> {};

} // namespace detail

// True when T provides wait_for(): a wait with a timeout.
template <class T>
constexpr bool can_wait_for_v = detail::is_detected<detail::t_wait_for, T>;

// True when T provides adopt(): it can work on buffers another transfer owns.
template <class T>
constexpr bool can_adopt_v = detail::is_detected<detail::t_adopt, T>;

template <class T>
constexpr bool is_transfer_v =
	std::is_move_constructible_v<T> && detail::is_detected<detail::t_can_c2h, T> &&
	detail::is_detected<detail::t_can_h2c, T> && detail::is_detected<detail::t_granule, T> &&
	detail::is_detected<detail::t_allocate, T> && detail::is_detected<detail::t_count, T> &&
	detail::is_detected<detail::t_size, T> && detail::is_detected<detail::t_view, T> &&
	detail::is_detected<detail::t_start, T> && detail::is_detected<detail::t_wait, T> &&
	detail::is_detected<detail::t_abort, T> && detail::is_detected<detail::t_reset, T>;

template <class X>
constexpr bool is_block_transform_v = detail::is_detected<detail::x_block, X>;
template <class X>
constexpr bool is_element_transform_v = detail::is_detected<detail::x_element, X>;
template <class X>
constexpr bool is_reducing_transform_v = detail::is_detected<detail::x_partial, X> &&
	detail::is_detected<detail::x_reduce, X> && detail::is_detected<detail::x_combine, X>;
// False when X declares `sequential = true`: its copy must not be split over threads.
template <class X>
constexpr bool is_splittable_v = !detail::declared_sequential<X>::value;

template <class X, bool = detail::is_detected<detail::x_in, X> && detail::is_detected<detail::x_out, X>>
struct is_transform : std::false_type {};
template <class X>
struct is_transform<X, true>
	: std::bool_constant<std::is_trivially_copyable_v<typename X::in_type> &&
			     std::is_trivially_copyable_v<typename X::out_type> &&
			     std::is_copy_constructible_v<X> &&
			     (is_block_transform_v<X> || is_element_transform_v<X> ||
			      is_reducing_transform_v<X>)> {};
template <class X>
constexpr bool is_transform_v = is_transform<X>::value;

// One static_assert per requirement, so the first error names exactly what is missing.
// Algorithms instantiate these; users may too, to check their own policies early.
template <class T>
struct check_transfer {
	static_assert(std::is_move_constructible_v<T>,
		"bufmgr: a Transfer policy must be MoveConstructible (hold threads and handles through "
		"std::unique_ptr); see the Transfer concept in bufmgr/concepts.hpp");
	static_assert(detail::is_detected<detail::t_can_c2h, T> && detail::is_detected<detail::t_can_h2c, T>,
		"bufmgr: a Transfer policy needs `static constexpr bool can_c2h` and `can_h2c` naming the "
		"directions it supports; see bufmgr/concepts.hpp");
	static_assert(detail::is_detected<detail::t_granule, T>,
		"bufmgr: a Transfer policy needs `std::size_t granule() const` (length granule, a power of two)");
	static_assert(detail::is_detected<detail::t_allocate, T>,
		"bufmgr: a Transfer policy needs `void allocate(std::size_t count, std::size_t size)`");
	static_assert(detail::is_detected<detail::t_count, T> && detail::is_detected<detail::t_size, T>,
		"bufmgr: a Transfer policy needs `std::size_t buffer_count() const` and `buffer_size() const`");
	static_assert(detail::is_detected<detail::t_view, T>,
		"bufmgr: a Transfer policy needs `bufmgr::BufferView view(std::size_t i) const`");
	static_assert(detail::is_detected<detail::t_start, T>,
		"bufmgr: a Transfer policy needs `void start(bufmgr::Direction, std::size_t buffer, std::size_t bytes)`");
	static_assert(detail::is_detected<detail::t_wait, T>,
		"bufmgr: a Transfer policy needs `std::size_t wait(bufmgr::Direction, std::size_t buffer)` "
		"returning the bytes moved");
	static_assert(detail::is_detected<detail::t_abort, T>,
		"bufmgr: a Transfer policy needs `void abort(bufmgr::Direction) noexcept`, callable from any "
		"thread (it is how a blocked stream is stopped)");
	static_assert(detail::is_detected<detail::t_reset, T>,
		"bufmgr: a Transfer policy needs `void reset(bufmgr::Direction) noexcept` (called on error "
		"paths and from destructors, so it must not throw)");
	static constexpr bool value = is_transfer_v<T>;
};

template <class X, bool HasTypes>
struct check_transform_members {
	static constexpr bool value = false;
};
template <class X>
struct check_transform_members<X, true> {
	static_assert(std::is_trivially_copyable_v<typename X::in_type> &&
		      std::is_trivially_copyable_v<typename X::out_type>,
		"bufmgr: a Transform's in_type and out_type must be trivially copyable (they are bytes in "
		"a DMA buffer)");
	static_assert(std::is_copy_constructible_v<X>, "bufmgr: a Transform policy must be CopyConstructible");
	static_assert(!detail::is_detected<detail::x_partial, X> ||
		      (detail::is_detected<detail::x_reduce, X> && detail::is_detected<detail::x_combine, X>),
		"bufmgr: a reducing Transform (one with partial_type) needs `void operator()(const in_type *, "
		"out_type *, std::size_t, partial_type &) const` and `void combine(const partial_type &)`");
	static_assert(is_block_transform_v<X> || is_element_transform_v<X> || is_reducing_transform_v<X>,
		"bufmgr: a Transform policy needs `out_type operator()(in_type) const` (element form) or "
		"`void operator()(const in_type *, out_type *, std::size_t) const` (block form); note the const: "
		"a transform that keeps state between calls is a reducing one (partial_type and combine(), "
		"see bufmgr/concepts.hpp) or declares `static constexpr bool sequential = true`");
	static constexpr bool value = is_transform_v<X>;
};

template <class X>
struct check_transform {
	static constexpr bool has_types =
		detail::is_detected<detail::x_in, X> && detail::is_detected<detail::x_out, X>;
	static_assert(has_types,
		"bufmgr: a Transform policy needs member types `in_type` and `out_type`; wrap a lambda with "
		"bufmgr::make_transform<In, Out>(f); see the Transform concept in bufmgr/concepts.hpp");
	static constexpr bool value = check_transform_members<X, has_types>::value;
};

// Both, for an algorithm: instantiating this is the algorithm's first line.
template <class Transfer, class Transform>
struct check_policies {
	static constexpr bool transfer_ok = check_transfer<Transfer>::value;
	static constexpr bool transform_ok = check_transform<Transform>::value;
};

} // namespace bufmgr

#endif // BUFMGR_CONCEPTS_HPP
