#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The HDL test suite (tests/hdl: GHDL + cocotb + cocotbext-pcie through pytest), reported as
# TAP on stdout: one test point per pytest test case. Everything else goes to stderr.
#
# Environment (set by `make check`, see Makefile.am; defaults for running it by hand):
#   top_srcdir, top_builddir  absolute paths of the source and build trees
#   PYTHON                    Python 3.9+ with the venv module (creates the test venv)
#   GHDL                      the ghdl executable (its directory is put first on PATH)
#   HDL_SOAK=1                run the long soak variant
#   HDL_JOBS=N                pytest-xdist workers (default: 2 when there are 2+ CPUs)
#   HDL_PYTEST_ARGS           extra pytest arguments, e.g. "-k 'c2h or h2c'" for a subset
# The venv lives in $top_builddir/tests/hdl/.venv and is rebuilt when
# tests/hdl/requirements.txt changes; simulation products go to
# $top_builddir/tests/hdl/sim_build. Nothing is written to the source tree.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
PYTHON=${PYTHON:-python3}
GHDL=${GHDL:-ghdl}

work="$top_builddir/tests/hdl"
venv="$work/.venv"
req="$top_srcdir/tests/hdl/requirements.txt"
junit="$work/hdl-tests.xml"
mkdir -p "$work" || exit 1

bail() {
    echo "Bail out! $*"
    exit 1
}

case $GHDL in
    */*) PATH=$(dirname "$GHDL"):$PATH; export PATH ;;
esac
command -v ghdl >/dev/null 2>&1 || bail "ghdl not found"

if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/requirements.txt"; then
    echo "# creating $venv from tests/hdl/requirements.txt" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv" >&2 || bail "cannot create a Python venv with $PYTHON"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2 \
        || bail "pip install -r tests/hdl/requirements.txt failed"
    cp "$req" "$venv/requirements.txt"
fi

jobs=${HDL_JOBS:-}
if [ -z "$jobs" ]; then
    ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
    if [ "$ncpu" -ge 2 ]; then jobs=2; else jobs=1; fi
fi
xdist=
if [ "$jobs" -gt 1 ]; then
    xdist="-n $jobs"
fi

MPRACE_HDL_BUILD="$work/sim_build"
PYTHONDONTWRITEBYTECODE=1
export MPRACE_HDL_BUILD PYTHONDONTWRITEBYTECODE

rm -f "$junit"
cd "$work" || exit 1
# HDL_PYTEST_ARGS is split like a shell command line: HDL_PYTEST_ARGS="-k 'c2h or h2c'"
eval "set -- ${HDL_PYTEST_ARGS:-}"
# shellcheck disable=SC2086
"$venv/bin/python" -m pytest -p no:cacheprovider -q -rfE --junitxml="$junit" $xdist \
    "$@" "$top_srcdir/tests/hdl" >&2
status=$?

[ -f "$junit" ] || bail "pytest wrote no results (exit status $status)"
"$venv/bin/python" "$top_srcdir/tests/common/junit-tap.py" "$junit" || bail "cannot read $junit"
exit $status
