#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Every C/C++ code block of README.md and docs/*.md compiles, and every program among them
# runs on the virtual board (docs-examples.py).
exec "${PYTHON:-python3}" "$top_srcdir/tests/spec/docs-examples.py" "$top_srcdir" "$top_builddir"
