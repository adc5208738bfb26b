#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The include graph and the simulator-free libraries of docs/architecture.md (layering.py).
exec "${PYTHON:-python3}" "$top_srcdir/tests/pcidriver/layering.py" "$top_srcdir" "$top_builddir"
