/*
 * The public API of pytop.h: open, sample, resolve code ids, close.
 *
 * A sample is built in three steps: walk interpreters, threads and frames (threads.c,
 * frames.c) collecting raw frames; resolve every raw frame's code address through the code
 * cache, confirming due entries in one batch; then compute lines. Nothing here allocates per
 * frame: the arrays grow to the largest sample seen and are reused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "internal.h"

int fail(pytop_unwinder *u, int status, const char *fmt, ...) {
    if (u->error[0] == '\0') { /* keep the innermost cause */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(u->error, sizeof u->error, fmt, ap);
        va_end(ap);
    }
    return status;
}

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

pytop_thread *push_thread(pytop_unwinder *u) {
    if (u->thread_count == u->thread_cap) {
        uint32_t cap = u->thread_cap ? u->thread_cap * 2 : 16;
        pytop_thread *grown = realloc(u->threads, cap * sizeof *grown);
        if (!grown) return NULL;
        u->threads = grown;
        u->thread_cap = cap;
    }
    pytop_thread *t = &u->threads[u->thread_count++];
    memset(t, 0, sizeof *t);
    return t;
}

int push_raw_frame(pytop_unwinder *u, uint64_t code, int64_t offset) {
    if (u->frame_count == u->frame_cap) {
        uint32_t cap = u->frame_cap ? u->frame_cap * 2 : 256;
        raw_frame *raw = realloc(u->raw, cap * sizeof *raw);
        if (!raw) return PYTOP_ERR_NOMEM;
        u->raw = raw;
        pytop_frame *frames = realloc(u->frames, cap * sizeof *frames);
        if (!frames) return PYTOP_ERR_NOMEM;
        u->frames = frames;
        u->frame_cap = cap;
    }
    /* An offset that cannot be right is kept as "unknown" and makes its code entry suspect. */
    if (offset < -2 || offset > INT32_MAX) offset = INT32_MAX;
    u->raw[u->frame_count++] = (raw_frame){code, (int32_t)offset};
    return PYTOP_OK;
}

pytop_unwinder *pytop_open(int pid, const pytop_layout *layout, uint64_t runtime_address,
                           int *status) {
    if (pid <= 0 || !layout || !runtime_address ||
        (layout->frame_model != PYTOP_FRAMES_OBJECTS && layout->frame_model != PYTOP_FRAMES_INTERPRETER)) {
        *status = PYTOP_ERR_ARGS;
        return NULL;
    }
    pytop_unwinder *u = calloc(1, sizeof *u);
    if (!u || codes_init(&u->codes) != PYTOP_OK) {
        free(u);
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    u->pid = pid;
    u->L = *layout;
    u->runtime = runtime_address;
    u->max_depth = DEFAULT_MAX_DEPTH;
    remote_init(&u->mem, pid);
    os_state_init(&u->os, pid);
    *status = PYTOP_OK;
    return u;
}

int pytop_set_option(pytop_unwinder *u, int option, int64_t value) {
    switch (option) {
    case PYTOP_OPT_MAX_DEPTH:
        if (value < 1 || value > (1 << 24)) return PYTOP_ERR_ARGS;
        u->max_depth = (int)value;
        return PYTOP_OK;
    case PYTOP_OPT_OS_STATE:
        if (value < 0 || value > 2) return PYTOP_ERR_ARGS;
        u->os.mode = (int)value;
        return PYTOP_OK;
    case PYTOP_OPT_CODE_RECHECK_MS:
        if (value < 0) return PYTOP_ERR_ARGS;
        u->codes.recheck_ms = (uint64_t)value;
        return PYTOP_OK;
    default: return PYTOP_ERR_ARGS;
    }
}

/* Map every raw frame of `t` to a code id. A code object that cannot be read marks the
 * thread (a frame torn by the running target), not the whole sample. */
static int resolve_ids(pytop_unwinder *u, pytop_thread *t) {
    for (uint32_t i = t->first_frame; i < t->first_frame + t->frame_count; i++) {
        uint32_t id = 0;
        int status = codes_lookup(u, u->raw[i].code, &id);
        if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION || status == PYTOP_ERR_NOMEM)
            return fail(u, status, "reading a code object at 0x%llx", (unsigned long long)u->raw[i].code);
        if (status != PYTOP_OK && t->status == PYTOP_OK) t->status = status;
        const code_entry *e = codes_get(&u->codes, id);
        if (e && u->raw[i].offset >= e->code_bytes) codes_force_check(u, id);
        u->frames[i].code_id = id;
    }
    return PYTOP_OK;
}

static int resolve_all(pytop_unwinder *u) {
    for (int round = 0; round < 2; round++) {
        for (uint32_t k = 0; k < u->thread_count; k++) {
            int status = resolve_ids(u, &u->threads[k]);
            if (status != PYTOP_OK) return status;
        }
        /* Replaced entries lose their address: the second round loads the new objects. */
        if (codes_confirm_due(u) == 0) break;
    }
    for (uint32_t i = 0; i < u->frame_count; i++) {
        int32_t offset = u->raw[i].offset;
        u->frames[i].line = offset == INT32_MAX ? -1 : codes_line(&u->codes, u->frames[i].code_id, offset);
    }
    return PYTOP_OK;
}

int pytop_collect(pytop_unwinder *u, pytop_sample *out) {
    memset(out, 0, sizeof *out);
    u->thread_count = 0;
    u->frame_count = 0;
    u->gc_collecting = -1;
    u->error[0] = '\0';
    u->now_ms = monotonic_ms();
    u->codes.due_count = 0;
    int status = remote_begin_sample(&u->mem);
    if (status == PYTOP_OK) status = threads_walk(u);
    if (status == PYTOP_OK) status = resolve_all(u);
    os_state_end_sample(&u->os);
    if (status != PYTOP_OK) {
        if (status == PYTOP_ERR_GONE) fail(u, status, "the process has exited");
        else if (status == PYTOP_ERR_PERMISSION) fail(u, status, "permission denied reading the process");
        else fail(u, status, "sample failed");
        return status;
    }
    out->threads = u->threads;
    out->frames = u->frames;
    out->thread_count = u->thread_count;
    out->frame_count = u->frame_count;
    out->gc_collecting = u->gc_collecting;
    out->syscalls = u->mem.syscalls;
    return PYTOP_OK;
}

int pytop_describe_code(pytop_unwinder *u, uint32_t code_id, pytop_code_info *out) {
    const code_entry *e = codes_get(&u->codes, code_id);
    if (!e) return PYTOP_ERR_ARGS;
    out->name = e->name;
    out->qualname = e->qualname;
    out->filename = e->filename;
    out->firstlineno = e->firstlineno;
    out->address = e->addr;
    return PYTOP_OK;
}

const char *pytop_last_error(pytop_unwinder *u) { return u->error; }

void pytop_close(pytop_unwinder *u) {
    if (!u) return;
    codes_free(&u->codes);
    remote_free(&u->mem);
    os_state_free(&u->os);
    free(u->threads);
    free(u->raw);
    free(u->frames);
    free(u);
}

int pytop_read_memory(int pid, uint64_t address, void *buffer, size_t length) {
    remote r;
    remote_init(&r, pid);
    return remote_read(&r, address, buffer, length);
}
