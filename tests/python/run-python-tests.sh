#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The Python package (python/, docs/python.md): built against this build tree into a venv and
# tested with pytest (tests/python), reported as TAP on stdout, one test point per test case.
#
# Environment (set by `make check`; defaults for running it by hand from tests/python of the
# build tree): top_srcdir, top_builddir; PYTHON (3.9+ with venv); CUDA_HOME (the toolkit configure
# found; empty: the package is built without CUDA, as the project is); MPRACE_UCX (ON/OFF: with
# the network stage, as the project; default AUTO); PY_PYTEST_ARGS (extra pytest arguments,
# e.g. "-k lifetime"). The venv is $top_builddir/tests/python/.venv, rebuilt when
# requirements.txt changes; CMake builds in $top_builddir/tests/python/build. Nothing is
# written to the source tree.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$(cd ../.. && pwd)}
PYTHON=${PYTHON:-python3}
work=$top_builddir/tests/python
venv=$work/.venv
req=$top_srcdir/tests/python/requirements.txt
junit=$work/python-tests.xml
mkdir -p "$work" || exit 1
bail() {
	echo "Bail out! $*"
	exit 1
}
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/requirements.txt"; then
	echo "# creating $venv from tests/python/requirements.txt" >&2
	rm -rf "$venv"
	"$PYTHON" -m venv "$venv" >&2 || bail "cannot create a Python venv with $PYTHON"
	"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2 ||
		bail "pip install -r tests/python/requirements.txt failed"
	cp "$req" "$venv/requirements.txt"
fi
# the package against this build tree (its libraries found through the extension's RUNPATH)
if [ -n "${CUDA_HOME:-}" ]; then
	features="-C cmake.define.MPRACE_CUDA=ON -C cmake.define.CUDAToolkit_ROOT=$CUDA_HOME"
else
	features="-C cmake.define.MPRACE_CUDA=OFF"
fi
features="$features -C cmake.define.MPRACE_UCX=${MPRACE_UCX:-AUTO}"
# shellcheck disable=SC2086 # $features: several words
"$venv/bin/python" -m pip install --disable-pip-version-check -q --no-build-isolation --no-deps $features \
	-C cmake.define.MPRACE_BUILD_DIR="$top_builddir" -C build-dir="$work/build" \
	"$top_srcdir/python" >"$work/pip-install.log" 2>&1 ||
	{ tail -n 30 "$work/pip-install.log" >&2; bail "building the package failed (see $work/pip-install.log)"; }
PYTHONDONTWRITEBYTECODE=1
# sim: for its one test, where tests/hdl (which runs before) has built the simulator's venv;
# else it skips
MPRACE_SIM_DIR=${MPRACE_SIM_DIR:-$top_srcdir/hdl/cosim}
MPRACE_SIM_PYTHON=${MPRACE_SIM_PYTHON:-$top_builddir/tests/hdl/.venv/bin/python}
MPRACE_SIM_BUILD=${MPRACE_SIM_BUILD:-$top_builddir/tests/hdl/sim_build/cosim}
# the C++ reference of python -m mprace.bench
DMABENCH=$top_builddir/tools/dmabench
export PYTHONDONTWRITEBYTECODE MPRACE_SIM_DIR MPRACE_SIM_PYTHON MPRACE_SIM_BUILD DMABENCH
rm -f "$junit"
cd "$work" || exit 1
eval "set -- ${PY_PYTEST_ARGS:-}"
"$venv/bin/python" -m pytest -p no:cacheprovider -q -rfEs --junitxml="$junit" "$@" \
	"$top_srcdir/tests/python" >&2
status=$?
[ -f "$junit" ] || bail "pytest wrote no results (exit status $status)"
"$venv/bin/python" "$top_srcdir/tests/common/junit-tap.py" "$junit" || bail "cannot read $junit"
exit $status
