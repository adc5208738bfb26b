#!/bin/sh
# The options table of docs/virtual-board.md is generated from the one table the virtual
# board's parser uses (vboard/src/emu_options.c): this test fails when they differ (TAP).
#   tests/vboard/vboard-options.sh --update   rewrites the docs' table (from the build tree)
doc="${top_srcdir:-../..}/docs/virtual-board.md"
gen=./vboard_options_table
want=$(mktemp)
have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
"$gen" >"$want" || { echo "1..1"; echo "not ok 1 - vboard_options_table failed"; exit 0; }
# the table: from its header line to the first line that is not a table row
awk '/^\| option \| default \| meaning \|$/ { on = 1 } on && !/^\|/ { exit } on' "$doc" >"$have"
if [ "${1:-}" = --update ]; then
	awk -v table="$want" '
		/^\| option \| default \| meaning \|$/ { while ((getline l < table) > 0) print l; skip = 1; next }
		skip && /^\|/ { next }
		{ skip = 0; print }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
	exit 0
fi
echo "1..1"
if cmp -s "$want" "$have"; then
	echo "ok 1 - docs/virtual-board.md: the options table is the parser's"
else
	echo "not ok 1 - docs/virtual-board.md: the options table differs from the parser's (run tests/vboard/vboard-options.sh --update in build/tests/vboard)"
	diff "$have" "$want" | sed 's/^/# /' | head -n 20
fi
