/*
 * The C property checks' one assertion (schedule_check.c, budget_check.c, stacks_check.c): a
 * broken property prints what broke and counts; main returns 1 if any did.
 */
#ifndef PYTOP_TESTS_CHECK_H
#define PYTOP_TESTS_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                           \
    do {                                           \
        if (!(cond)) {                             \
            fprintf(stderr, "FAILED %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);          \
            fprintf(stderr, "\n");                 \
            failures++;                            \
        }                                          \
    } while (0)

#endif
