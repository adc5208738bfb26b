#!/bin/sh
# Fails when a file generated from docs/dma-engine.toml (C header, VHDL package, doc tables)
# differs from what the TOML generates: the register map exists in exactly one place.
exec "${PYTHON:-python3}" "$top_srcdir/scripts/gen-spec.py" --top "$top_srcdir" --check --tap
