#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The two-command quick start (README.md):
#   ./bootstrap.sh bench   set up, build, run dmabench on the default board, name the files written
#   ./bootstrap.sh check   set up, build, run every test suite (and the sanitizer builds)
# and the steps they share:
#   ./bootstrap.sh deps    install the missing system packages listed in scripts/deps.txt
#                          (`deps debug-kernel`: and those of scripts/deps-debug-kernel.txt)
#   ./bootstrap.sh build   autoreconf + configure + make in ./build (CONFIGURE_FLAGS are passed on)
#   ./bootstrap.sh debug-kernel   also build Linux 6.1 with KASAN, lockdep and DMA-API debugging
#                          and run the QEMU suite on it (first run: about 10 minutes)
# Environment: BUILD_DIR (default: build), CONFIGURE_FLAGS, JOBS (default: nproc),
# SKIP_DEPS=1 (do not touch system packages), SANITIZERS=0 (check: skip the sanitizer builds).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$top"
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CONFIGURE_FLAGS=${CONFIGURE_FLAGS:-}

say() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- system packages
# scripts/deps.txt: one package per line; "a|b" means the first of a, b that apt knows
# (Debian and Ubuntu name some packages differently).
wanted_packages() {
	local line alt
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' "${1:-scripts/deps.txt}" | grep -v '^$' |
	while read -r line; do
		if [[ $line != *"|"* ]]; then echo "$line"; continue; fi
		for alt in ${line//|/ }; do
			if apt-cache show "$alt" >/dev/null 2>&1; then echo "$alt"; continue 2; fi
		done
		echo "${line%%|*}"
	done
}

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

install_deps() {
	[[ ${SKIP_DEPS:-0} = 1 ]] && { say "SKIP_DEPS=1: not checking system packages"; return; }
	command -v dpkg-query >/dev/null || { say "not a Debian/Ubuntu system: install the packages in scripts/deps.txt yourself"; return; }
	local missing=() p
	for p in $(wanted_packages "${1:-}"); do is_installed "$p" || missing+=("$p"); done
	if [[ ${#missing[@]} -eq 0 ]]; then say "system packages: all present"; return; fi
	local sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n)
		else die "missing packages: ${missing[*]}
  run as root or with password-less sudo, or install them:  sudo apt-get install ${missing[*]}"
		fi
	fi
	say "installing ${#missing[@]} system packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# ---------------------------------------------------------------- build
build() {
	if [[ ! -x configure || configure.ac -nt configure || $(find . -name Makefile.am -newer configure -not -path './build*' | head -1) ]]; then
		say "autoreconf"
		autoreconf -fi
	fi
	mkdir -p "$BUILD_DIR"
	if [[ ! -f $BUILD_DIR/config.status || configure -nt $BUILD_DIR/config.status ||
	      $(cat "$BUILD_DIR/.configure-flags" 2>/dev/null) != "$CONFIGURE_FLAGS" ]]; then
		say "configure $CONFIGURE_FLAGS"
		# shellcheck disable=SC2086  # CONFIGURE_FLAGS is a list of words
		(cd "$BUILD_DIR" && "$top/configure" $CONFIGURE_FLAGS)
		echo "$CONFIGURE_FLAGS" >"$BUILD_DIR/.configure-flags"
	fi
	say "make -j$JOBS"
	make -C "$BUILD_DIR" -j"$JOBS" >&2
}

# ---------------------------------------------------------------- bench
bench() {
	local dmabench=$BUILD_DIR/tools/dmabench out=$top/results
	if [[ -x $dmabench ]]; then
		mkdir -p "$out"
		say "dmabench (default sweep on the default board) -> $out"
		"$dmabench" --out "$out/dmabench"
	else
		say "tools/dmabench is not built: running the user-space suites instead"
		local s
		for s in "${user_suites[@]}"; do make -C "$BUILD_DIR/$s" check; done
	fi
}

# ---------------------------------------------------------------- check
# Each suite runs on its own (make -k style: a failing suite does not stop the others) and is
# timed; results are counted from automake's .trs files by scripts/count-tests.sh.
# The user-space suites, one folder per layer (they also run under the sanitizers).
user_suites=(tests/spec tests/pcidriver tests/vboard tests/mprace tests/bufmgr tests/tools)
all_suites=("${user_suites[@]}" tests/kernel tests/hdl tests/python tests/gpu)

# run_suites BUILD_DIR LABEL SUITE...
run_suites() {
	local dir=$1 label=$2 failed=0 s t0
	shift 2
	for s in "$@"; do
		[[ -f $dir/$s/Makefile ]] || continue
		t0=$(date +%s)
		# the test programs build on every core, the tests then run one at a time (some
		# measure time or load the machine themselves)
		if make -C "$dir/$s" -j"$JOBS" check TESTS= >"$dir/$s/check.out" 2>&1 &&
		   make -C "$dir/$s" check >>"$dir/$s/check.out" 2>&1; then :; else failed=1; fi
		printf '%-28s %4ds  %s\n' "$label $s" $(( $(date +%s) - t0 )) \
			"$(scripts/count-tests.sh "$dir/$s")" >&2
		grep -hE '^(FAIL|ERROR|XPASS):' "$dir/$s/check.out" >&2 || true
	done
	return $failed
}

# sanitizer_build FLAVOUR SANITIZERS [OPTIMIZATION]
sanitizer_build() {
	local flavour=$1 dir=$BUILD_DIR-$1 san=$2 opt=${3:--O2}
	mkdir -p "$dir"
	if [[ ! -f $dir/config.status || configure -nt $dir/config.status ]]; then
		(cd "$dir" && "$top/configure" -q --enable-sanitizers="$san" \
			--disable-kernel-module --disable-hdl --without-cuda \
			CFLAGS="-g $opt" CXXFLAGS="-g $opt") >&2
	fi
	make -C "$dir" -j"$JOBS" >&2
}

check() {
	local failed=0
	say "test suites (per-suite time and counts below; logs in $BUILD_DIR/tests/*/test-suite.log)"
	run_suites "$BUILD_DIR" build "${all_suites[@]}" || failed=1
	if [[ ${SANITIZERS:-1} = 1 ]]; then
		say "unit suites under ASan+UBSan and TSan"
		export UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
		# -O1, as ASan's documentation suggests: the header-only bufmgr tests compile in two
		# thirds of the time of -O2
		{ sanitizer_build asan address,undefined -O1 && run_suites "$BUILD_DIR-asan" asan "${user_suites[@]}"; } || failed=1
		{ sanitizer_build tsan thread && run_suites "$BUILD_DIR-tsan" tsan "${user_suites[@]}"; } || failed=1
	fi
	say "total: $(scripts/count-tests.sh "$BUILD_DIR" "$BUILD_DIR-asan" "$BUILD_DIR-tsan")"
	return $failed
}

cmd=${1:-}
case $cmd in
deps) [[ -z ${2:-} || $2 = debug-kernel ]] || die "deps: unknown list '$2' (only debug-kernel)"
	install_deps
	if [[ -n ${2:-} ]]; then install_deps scripts/deps-debug-kernel.txt; fi ;;
build) install_deps; build ;;
bench) install_deps; build; bench ;;
check) install_deps; build; check ;;
debug-kernel) install_deps; install_deps scripts/deps-debug-kernel.txt; build
	make -C "$BUILD_DIR/tests/kernel" check-debug-kernel ;;
*) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; [[ -z $cmd ]] && exit 2; die "unknown command '$cmd'" ;;
esac
