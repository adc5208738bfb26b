#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Sums the results of every test that automake's drivers recorded (*.trs files) under the
# given build directories and prints "N passed, M failed[, K skipped]". With the TAP driver
# each TAP line is one result, so a suite counts its real test cases, not its programs.
# PASS and XFAIL count as passed; FAIL, ERROR and XPASS as failed; SKIP separately.
# (a failed `make distcheck` leaves its tree, DISTDIR/_build/sub, in the build directory: its
# results are not counted again)
find "$@" -path '*/_build/sub' -prune -o -name '*.trs' -exec cat {} + 2>/dev/null | awk '
	/^:test-result: (PASS|XFAIL)/ { p++ }
	/^:test-result: (FAIL|ERROR|XPASS)/ { f++ }
	/^:test-result: SKIP/ { s++ }
	END { printf "%d passed, %d failed%s\n", p, f, s ? ", " s " skipped" : "" }'
