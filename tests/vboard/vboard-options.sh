#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The options tables of docs/virtual-board.md (emu:) and docs/cosim.md (sim:) are generated
# from the one table both backends' parser uses (vboard/src/options.c): this test fails when
# they differ (TAP).
#   tests/vboard/vboard-options.sh --update   rewrites the docs' tables (from the build tree)
docs="${top_srcdir:-../..}/docs"
gen=./vboard_options_table
want=$(mktemp)
have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
echo "1..2"
n=0
for pair in emu:virtual-board.md sim:cosim.md; do
	n=$((n + 1))
	kind=${pair%%:*}
	doc="$docs/${pair#*:}"
	if ! "$gen" "$kind" >"$want"; then
		echo "not ok $n - vboard_options_table $kind failed"
		continue
	fi
	# the table: from its header line to the first line that is not a table row
	awk '/^\| option \| default \| meaning \|$/ { on = 1 } on && !/^\|/ { exit } on' "$doc" >"$have"
	if [ "${1:-}" = --update ]; then
		awk -v table="$want" '
			/^\| option \| default \| meaning \|$/ { while ((getline l < table) > 0) print l; skip = 1; next }
			skip && /^\|/ { next }
			{ skip = 0; print }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
		echo "ok $n - $doc: updated"
	elif cmp -s "$want" "$have"; then
		echo "ok $n - $doc: the $kind: options table is the parser's"
	else
		echo "not ok $n - $doc: the $kind: options table differs from the parser's (run tests/vboard/vboard-options.sh --update in build/tests/vboard)"
		diff "$have" "$want" | sed 's/^/# /' | head -n 20
	fi
done
