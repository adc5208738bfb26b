// SPDX-License-Identifier: GPL-2.0
/*
 * The main() of every Check suite: a suite file defines only `Suite *test_suite(void)`.
 * Results go to stdout as TAP (one line per test case) for automake's TAP driver, which is
 * how `make check` and .ci/run count real tests; failures are also explained on stderr.
 */
#include <stdlib.h>

#include "check_main.h"

int main(void)
{
	SRunner *sr = srunner_create(test_suite());
	int failed;

	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
