/*
 * Status codes and the text that says why a call failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

int fail(char *error, int status, const char *fmt, ...) {
    if (error[0] == '\0') { /* keep the innermost cause */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error, ERROR_TEXT_BYTES, fmt, ap);
        va_end(ap);
    }
    return status;
}

int status_from_errno(int err) {
    switch (err) {
    case ESRCH: return PYTOP_ERR_GONE;
    case EPERM:
    case EACCES: return PYTOP_ERR_PERMISSION;
    case ENOMEM: return PYTOP_ERR_NOMEM;
    default: return PYTOP_ERR_READ;
    }
}

uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
