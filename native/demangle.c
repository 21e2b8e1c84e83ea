/*
 * C++ symbols as people read them (--native): `_Z11svd_wrapperIdEvcPPcPKlS3_.constprop.1` is
 * `void svd_wrapper<double>(char, char**, long const*, long const*) [clone .constprop.1]`. The
 * C++ runtime's own demangler (__cxa_demangle, in libstdc++) is loaded at run time when the
 * first mangled name is met: pytop builds and runs without it, and names stay as they are.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef char *(*demangler)(const char *mangled, char *buffer, size_t *length, int *status);

static demangler found;
static pthread_once_t looked = PTHREAD_ONCE_INIT;

static void look_for_demangler(void) {
    void *handle = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (handle) found = (demangler)dlsym(handle, "__cxa_demangle"); /* kept loaded: names keep coming */
}

int pytop_demangle(const char *symbol, char *out, size_t capacity) {
    if (!symbol || !out || !capacity) return PYTOP_ERR_ARGS;
    if (strncmp(symbol, "_Z", 2) != 0) return PYTOP_ERR_ARGS; /* not a C++ name */
    pthread_once(&looked, look_for_demangler);
    if (!found) return PYTOP_ERR_ARGS;
    /* A GCC clone's suffix (.constprop.1, .isra.0, .cold) is not part of the mangled name. */
    size_t length = strcspn(symbol, ".");
    char *mangled = strndup(symbol, length);
    if (!mangled) return PYTOP_ERR_NOMEM;
    int status = -1;
    char *name = found(mangled, NULL, NULL, &status);
    free(mangled);
    if (status != 0 || !name) {
        free(name);
        return PYTOP_ERR_ARGS;
    }
    const char *clone = symbol[length] ? symbol + length : NULL;
    size_t written = (size_t)snprintf(out, capacity, clone ? "%s [clone %s]" : "%s", name, clone);
    free(name);
    (void)written; /* cut at `capacity`, as every name is */
    return PYTOP_OK;
}
