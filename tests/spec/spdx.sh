#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Every source file of the project says its license in an SPDX line (README.md, "License"):
# C, C++, CUDA, Python, shell and VHDL, in the first three lines. TAP, one test per folder.
# build-aux/ and m4/ hold the autotools' own files; build trees and venvs are skipped.
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top" || exit 1
list=$(find . \( -name '.git' -o -name 'build' -o -name 'build-*' -o -name '_build' -o -name '.venv' \
	-o -name 'autom4te.cache' -o -name 'sim_build' -o -name '__pycache__' -o -path './build-aux' \
	-o -path './m4' -o -name 'mprace-ng-*' \) -prune -o -type f \
	\( -name '*.[ch]' -o -name '*.[ch]pp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' -o -name '*.sh' \
	-o -name '*.vhd' -o -path './.ci/run' \) -print | sed 's|^\./||' | sort)
dirs=$(printf '%s\n' "$list" | sed 's|/[^/]*$||; s|^[^/]*$|.|' | sort -u)
echo "1..$(printf '%s\n' "$dirs" | grep -c .)"
n=0
status=0
for d in $dirs; do
	n=$((n + 1))
	missing=
	for f in $(printf '%s\n' "$list" | awk -F/ -v d="$d" '{f=$0; sub("/[^/]*$", "", f); if ($0 !~ "/") f="."; if (f == d) print $0}'); do
		head -n 3 "$f" | grep -q 'SPDX-License-Identifier: ' || missing="$missing $f"
	done
	if [ -z "$missing" ]; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d: no SPDX line in$missing"
		status=1
	fi
done
exit $status
