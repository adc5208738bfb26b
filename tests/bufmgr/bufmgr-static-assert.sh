#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bufmgr's policy checks: programs that misuse the templates must fail to compile with the
# static_assert message that says what to do (and a correct custom policy must compile).
# TAP output. Environment: BUFMGR_CXX (default c++), top_srcdir.
set -u
cxx=${BUFMGR_CXX:-c++}
inc="-I${top_srcdir:-../..}/libbufmgr/include -I${top_srcdir:-../..}/spec/include -I${top_srcdir:-../..}/pcidriver/lib"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0

# expect NAME "message fragment" <<program   (fragment empty: must compile)
expect() {
	name=$1 want=$2
	n=$((n + 1))
	cat >"$tmp/t.cpp"
	if $cxx -std=c++17 -fsyntax-only $inc "$tmp/t.cpp" >"$tmp/out" 2>&1; then
		if [ -z "$want" ]; then echo "ok $n - $name"; return; fi
		echo "not ok $n - $name: compiled, expected an error containing: $want"
	else
		if [ -n "$want" ] && grep -qF -- "$want" "$tmp/out"; then echo "ok $n - $name"; return; fi
		echo "not ok $n - $name: expected '${want:-success}', got:"
		sed -n '1,15s/^/# /p' "$tmp/out"
	fi
	fails=$((fails + 1))
}

prelude='#include "bufmgr/bufmgr.hpp"
using namespace bufmgr;
'

expect "a correct custom Transfer and Transform compile" "" <<PROG
$prelude
struct MyTransfer : MemcpyTransfer {
	using MemcpyTransfer::MemcpyTransfer;
};
struct Scale {
	using in_type = short;
	using out_type = double;
	double k;
	double operator()(short v) const { return v * k; }
};
static_assert(check_transfer<MyTransfer>::value && is_transform_v<Scale>);
int main() { DoubleBuffer<MyTransfer, Scale> d(MyTransfer(), 4096, Scale{2}); double x[2]; d.read(x, 2); }
PROG

expect "Transfer without wait()" "needs \`std::size_t wait(bufmgr::Direction, std::size_t buffer)\`" <<PROG
$prelude
struct T {
	static constexpr bool can_c2h = true, can_h2c = true;
	std::size_t granule() const { return 4; }
	void allocate(std::size_t, std::size_t) {}
	std::size_t buffer_count() const { return 0; }
	std::size_t buffer_size() const { return 0; }
	BufferView view(std::size_t) const { return {}; }
	void start(Direction, std::size_t, std::size_t) {}
	void abort(Direction) noexcept {}
	void reset(Direction) noexcept {}
};
int main() { ChunkBuffer<T> c(T(), 4096); }
PROG

expect "Transfer whose reset() may throw" "needs \`void reset(bufmgr::Direction) noexcept\`" <<PROG
$prelude
struct T : MemcpyTransfer {
	void reset(Direction) {}
};
int main() { DoubleBuffer<T> c(T(), 4096); }
PROG

expect "a lambda used directly as Transform" "needs member types \`in_type\` and \`out_type\`" <<PROG
$prelude
int main() {
	auto f = [](int v) { return v; };
	DoubleBuffer<MemcpyTransfer, decltype(f)> d(MemcpyTransfer(), 4096, f);
}
PROG

expect "Transform with a non-const call operator" "note the const" <<PROG
$prelude
struct X {
	using in_type = int;
	using out_type = int;
	int operator()(int v) { return v; }
};
int main() { DoubleBuffer<MemcpyTransfer, X> d(MemcpyTransfer(), 4096); }
PROG

expect "read() on a Transfer that can only drain" "read() moves data board -> user and needs a Transfer with can_c2h = true" <<PROG
$prelude
struct DrainOnly : MemcpyTransfer {
	static constexpr bool can_c2h = false;
};
int main() { DoubleBuffer<DrainOnly> d(DrainOnly(), 4096); std::byte b[4]; d.write(b, 4); d.read(b, 4); }
PROG

expect "Relay of two transfers that cannot share buffers" "one of them must provide" <<PROG
$prelude
struct NoAdopt {
	static constexpr bool can_c2h = true, can_h2c = true;
	std::size_t granule() const { return 4; }
	void allocate(std::size_t, std::size_t) {}
	std::size_t buffer_count() const { return 0; }
	std::size_t buffer_size() const { return 0; }
	BufferView view(std::size_t) const { return {}; }
	void start(Direction, std::size_t, std::size_t) {}
	std::size_t wait(Direction, std::size_t) { return 0; }
	void abort(Direction) noexcept {}
	void reset(Direction) noexcept {}
};
int main() { Relay<NoAdopt, NoAdopt> r(NoAdopt(), NoAdopt(), 2, 4096); }
PROG

expect "ByteSwap of a type that is not a 16/32/64-bit integer" "ByteSwap16/32/64" <<PROG
$prelude
int main() { ByteSwap<float> b; (void)b; }
PROG

expect "a running checksum with a non-const operator()" "a transform that keeps state between calls is a reducing one" <<PROG
$prelude
struct Sum {
	using in_type = int;
	using out_type = int;
	long sum = 0;
	int operator()(int v) { sum += v; return v; }
};
int main() { DoubleBuffer<MemcpyTransfer, Sum> d(MemcpyTransfer(), 4096); }
PROG

expect "a reducing transform without combine()" "a reducing Transform (one with partial_type) needs" <<PROG
$prelude
struct Sum {
	using in_type = int;
	using out_type = int;
	using partial_type = long;
	void operator()(const int *s, int *d, std::size_t n, long &p) const { for (std::size_t k = 0; k < n; ++k) p += d[k] = s[k]; }
};
int main() { DoubleBuffer<MemcpyTransfer, Sum> d(MemcpyTransfer(), 4096); }
PROG

expect "a reducing transform compiles and may use copy threads" "" <<PROG
$prelude
struct Sum {
	using in_type = int;
	using out_type = int;
	using partial_type = long;
	long sum = 0;
	void operator()(const int *s, int *d, std::size_t n, long &p) const { for (std::size_t k = 0; k < n; ++k) p += d[k] = s[k]; }
	void combine(const long &p) { sum += p; }
};
int main() { DoubleBuffer<MemcpyTransfer, Sum> d(MemcpyTransfer(), 4096); d.set_copy_threads(4); }
PROG

expect "more copy threads for a sequential transform" "declares \`sequential = true\`" <<PROG
$prelude
struct Delta {
	using in_type = int;
	using out_type = int;
	static constexpr bool sequential = true;
	mutable int last = 0;
	int operator()(int v) const { return last += v; }
};
int main() { DoubleBuffer<MemcpyTransfer, Delta> d(MemcpyTransfer(), 4096); d.set_copy_threads(4); }
PROG

# Every header compiles on its own (what it uses, it includes): the CUDA ones where the CUDA
# headers are found, mprace_transfer.hpp with libmprace's.
for h in "${top_srcdir:-../..}"/libbufmgr/include/bufmgr/*.hpp "${top_srcdir:-../..}"/libbufmgr/include/bufmgr/detail/*.hpp; do
	rel=${h#*/libbufmgr/include/}
	extra="-I${top_srcdir:-../..}/libmprace/include"
	case $rel in
	bufmgr/cuda.hpp)
		cuda_inc=
		for d in ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/include; do
			[ -f "$d/cuda_runtime_api.h" ] && { cuda_inc=$d; break; }
		done
		[ -n "$cuda_inc" ] || continue
		extra="$extra -I$cuda_inc" ;;
	esac
	n=$((n + 1))
	printf '#include "%s"\n' "$rel" >"$tmp/h.cpp"
	if $cxx -std=c++17 -fsyntax-only $inc $extra "$tmp/h.cpp" >"$tmp/out" 2>&1; then
		echo "ok $n - $rel compiles on its own"
	else
		echo "not ok $n - $rel compiles on its own"
		sed -n '1,10s/^/# /p' "$tmp/out"
		fails=$((fails + 1))
	fi
done

echo "1..$n"
[ "$fails" -eq 0 ]
