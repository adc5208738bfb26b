#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Fails when a file generated from spec/dma-engine.toml (C header, VHDL package,
# Python module, kernel ID table, doc tables)
# differs from what the TOML generates: the register map exists in exactly one place.
exec "${PYTHON:-python3}" "$top_srcdir/spec/gen-spec.py" --top "$top_srcdir" --check --tap
