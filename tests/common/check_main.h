/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the Check suites: each suite file implements test_suite(). */
#ifndef TESTS_UNIT_CHECK_MAIN_H
#define TESTS_UNIT_CHECK_MAIN_H

#include <check.h>

#ifdef __cplusplus
extern "C" {
#endif

Suite *test_suite(void);

/*
 * Under ASan or TSan every byte a test moves costs 5-20 times as much, and the sanitizers look
 * for bad accesses and races, not for volume: the tests that move the most data move less
 * there (fewer rounds, smaller largest sizes). The plain build runs them in full.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#else
#define TEST_SANITIZED 0
#endif

#ifdef __cplusplus
}
#endif

#endif
