/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the Check suites: each suite file implements test_suite(). */
#ifndef TESTS_UNIT_CHECK_MAIN_H
#define TESTS_UNIT_CHECK_MAIN_H

#include <check.h>

#ifdef __cplusplus
extern "C" {
#endif

Suite *test_suite(void);

#ifdef __cplusplus
}
#endif

#endif
