# SPDX-License-Identifier: GPL-2.0
# Shared by the tools' shell suites (sourced): TAP output and the programs under test.
# top_builddir/top_srcdir come from the test environment (Makefile.am); the defaults let a
# suite run by hand from tests/tools of the build tree.
: "${top_builddir:=$(cd ../.. && pwd)}"
: "${top_srcdir:=$top_builddir}"
DMABENCH=$top_builddir/tools/dmabench
MPRACE=$top_builddir/tools/mprace
PYTHON=${PYTHON:-python3}
case $PYTHON in :|"") PYTHON=python3 ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tools-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

tap_n=0
tap_failed=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds; its output on failure as diagnostics.
check() {
	local d=$1; shift
	if "$@" >"$WORK/check.out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/# /' "$WORK/check.out"; fi
}
# run CMD...: runs it with stdout/stderr in $WORK/out, $WORK/err and its status in $rc.
run() { "$@" >"$WORK/out" 2>"$WORK/err"; rc=$?; }
diag() { sed 's/^/# /' "$@"; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
# Sanitizer builds are several times slower: figures that depend on speed are not checked there.
sanitized() { grep -Eq '^SAN_FLAGS = .*-fsanitize' "$top_builddir/Makefile" 2>/dev/null; }
have_python() { "$PYTHON" -c 'import json' 2>/dev/null; }
