/*
 * The public API of pytop.h: open, collect, describe code, close.
 *
 * A sample is built in three steps: walk interpreters, threads and frames (threads.c,
 * frames.c) collecting raw frames; resolve every raw frame's code address through the code
 * cache, confirming due entries in one batch; then compute lines. Nothing here allocates per
 * frame: two sample buffers (this sample, the previous one) grow to the largest sample seen and
 * are reused. The previous one also serves threads that have not run since: their stacks are
 * copied instead of read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    sample_buf *b = u->cur;
    pytop_thread *threads = grow_array(b->threads, &b->thread_cap, b->thread_count + 1ull, sizeof *threads, 16);
    if (!threads) return NULL;
    b->threads = threads;
    pytop_thread *t = &b->threads[b->thread_count++];
    memset(t, 0, sizeof *t);
    return t;
}

static int reserve_frames(sample_buf *b, uint32_t more) {
    if (b->frame_count + more <= b->frame_cap) return PYTOP_OK;
    if (more > UINT32_MAX / 4 - b->frame_count) return PYTOP_ERR_LIMIT;
    uint32_t cap = b->frame_cap ? b->frame_cap : 256;
    while (cap < b->frame_count + more) cap *= 2;
    raw_frame *raw = realloc(b->raw, cap * sizeof *raw);
    if (!raw) return PYTOP_ERR_NOMEM;
    b->raw = raw;
    pytop_frame *frames = realloc(b->frames, cap * sizeof *frames);
    if (!frames) return PYTOP_ERR_NOMEM;
    b->frames = frames;
    b->frame_cap = cap;
    return PYTOP_OK;
}

int push_raw_frame(pytop_unwinder *u, uint64_t code, int64_t offset) {
    int status = reserve_frames(u->cur, 1);
    if (status != PYTOP_OK) return status;
    /* An offset that cannot be right is kept as "unknown" and makes its code entry suspect. */
    if (offset < -2 || offset > INT32_MAX) offset = INT32_MAX;
    u->cur->raw[u->cur->frame_count++] = (raw_frame){code, (int32_t)offset};
    return PYTOP_OK;
}

const pytop_thread *previous_thread(const pytop_unwinder *u, const pytop_thread *t) {
    const sample_buf *p = u->prev;
    uint32_t guess = u->cur->thread_count - 1; /* threads usually come in the same order */
    if (guess < p->thread_count && p->threads[guess].tstate == t->tstate) return &p->threads[guess];
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].tstate == t->tstate) return &p->threads[i];
    return NULL;
}

bool reuse_previous_stack(pytop_unwinder *u, pytop_thread *t) {
    if (!u->reuse_stacks) return false;
    const pytop_thread *old = previous_thread(u, t);
    if (!old || old->thread_id != t->thread_id || old->native_id != t->native_id || old->status != PYTOP_OK)
        return false;
    if (reserve_frames(u->cur, old->frame_count) != PYTOP_OK) return false;
    sample_buf *b = u->cur;
    memcpy(b->raw + b->frame_count, u->prev->raw + old->first_frame, old->frame_count * sizeof *b->raw);
    memcpy(b->frames + b->frame_count, u->prev->frames + old->first_frame,
           old->frame_count * sizeof *b->frames);
    b->frame_count += old->frame_count;
    t->flags |= PYTOP_THREAD_UNCHANGED | (old->flags & PYTOP_THREAD_TRUNCATED);
    return true;
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
    pthread_mutex_init(&u->lock, NULL);
    u->pid = pid;
    u->stop.pid = pid;
    u->L = *layout;
    u->runtime = runtime_address;
    u->max_depth = DEFAULT_MAX_DEPTH;
    u->reuse_stacks = true;
    u->select = PYTOP_SELECT_BUSY;
    u->cur = &u->bufs[0];
    u->prev = &u->bufs[1];
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
    case PYTOP_OPT_REUSE_STACKS:
        if (value < 0 || value > 1) return PYTOP_ERR_ARGS;
        u->reuse_stacks = value == 1;
        return PYTOP_OK;
    case PYTOP_OPT_BLOCKING:
        if (value < 0 || value > 1) return PYTOP_ERR_ARGS;
        if (!value && u->stop.enabled) blocking_detach_all(&u->stop);
        u->stop.enabled = value == 1;
        return PYTOP_OK;
    case PYTOP_OPT_SELECT:
        if (value < PYTOP_SELECT_ALL || value > PYTOP_SELECT_GIL) return PYTOP_ERR_ARGS;
        u->select = (int)value;
        return PYTOP_OK;
    case PYTOP_OPT_CODE_RECHECK_MS:
        if (value < 0) return PYTOP_ERR_ARGS;
        u->codes.recheck_ms = (uint64_t)value;
        return PYTOP_OK;
    default: return PYTOP_ERR_ARGS;
    }
}

/* Map every raw frame of `t` to a code id. A code object that cannot be read means the frame
 * was torn by the running target: the thread's stack is given up at once (its walk is retried
 * from fresh memory), not the whole sample, and the address is remembered for the rest of the
 * sample so that no other frame tries it again. */
int resolve_ids(pytop_unwinder *u, pytop_thread *t) {
    const sample_buf *b = u->cur;
    code_cache *c = &u->codes;
    uint64_t last_code = 0;
    uint32_t last_id = 0;
    for (uint32_t i = t->first_frame; i < t->first_frame + t->frame_count; i++) {
        const raw_frame *raw = &b->raw[i];
        if (raw->code != last_code) { /* recursion repeats one code object */
            int status = PYTOP_OK;
            for (uint32_t k = 0; k < c->bad_count; k++)
                if (c->bad[k] == raw->code) status = c->bad_status[k];
            if (status == PYTOP_OK) status = codes_lookup(u, raw->code, &last_id);
            if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION || status == PYTOP_ERR_NOMEM)
                return fail(u, status, "reading a code object at 0x%llx", (unsigned long long)raw->code);
            if (status != PYTOP_OK) {
                if (c->bad_count < MAX_BAD_CODES) {
                    c->bad[c->bad_count] = raw->code;
                    c->bad_status[c->bad_count++] = status;
                }
                t->status = status;
                for (; i < t->first_frame + t->frame_count; i++) b->frames[i].code_id = 0;
                return PYTOP_OK;
            }
            last_code = raw->code;
        }
        const code_entry *e = codes_get(c, last_id);
        if (e && raw->offset >= e->code_bytes) codes_force_check(u, last_id);
        b->frames[i].code_id = last_id;
    }
    return PYTOP_OK;
}

/* Code ids were found thread by thread during the walk; confirm the cache entries that are due
 * in one batch, and if some turned out replaced, look everything up again (their addresses now
 * load the new objects). Then the lines. */
static int resolve_all(pytop_unwinder *u) {
    sample_buf *b = u->cur;
    if (codes_confirm_due(u) > 0) {
        for (uint32_t k = 0; k < b->thread_count; k++) {
            const pytop_thread *t = &b->threads[k];
            if ((t->flags & PYTOP_THREAD_UNCHANGED) || t->status != PYTOP_OK) continue; /* objects live; torn */
            int status = resolve_ids(u, &b->threads[k]);
            if (status != PYTOP_OK) return status;
        }
        codes_confirm_due(u);
    }
    for (uint32_t k = 0; k < b->thread_count; k++) {
        const pytop_thread *t = &b->threads[k];
        if (t->flags & PYTOP_THREAD_UNCHANGED) continue;
        for (uint32_t i = t->first_frame; i < t->first_frame + t->frame_count; i++) {
            int32_t offset = b->raw[i].offset;
            b->frames[i].line = offset == INT32_MAX ? -1 : codes_line(&u->codes, b->frames[i].code_id, offset);
        }
    }
    return PYTOP_OK;
}

/* Blocking mode: OS states are read first (a stopped thread reads 't'), then every thread is
 * stopped until the walk is done. */
static int stop_the_world(pytop_unwinder *u) {
    int status = blocking_seize_new(&u->stop);
    if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION || status == PYTOP_ERR_NOMEM)
        return fail(u, status, "cannot attach with ptrace for --blocking");
    if (u->os.mode)
        for (uint32_t i = 0; i < u->stop.count; i++) os_state_read_ahead(&u->os, u->stop.tracees[i].tid);
    return blocking_stop_all(&u->stop);
}

/* The sample's summary, and the threads whose stacks it selects. */
static int summarise(pytop_unwinder *u, pytop_sample *out) {
    const sample_buf *b = u->cur;
    uint32_t *selected = grow_array(u->selected, &u->selected_cap, b->thread_count, sizeof *selected, 16);
    if (!selected) return PYTOP_ERR_NOMEM;
    u->selected = selected;
    uint32_t n = 0, active = 0, torn = 0;
    bool gil = false;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        uint32_t flags = b->threads[i].flags;
        bool running = flags & PYTOP_THREAD_ACTIVE, holds = flags & PYTOP_THREAD_GIL;
        active += running;
        gil |= holds;
        if (b->threads[i].status != PYTOP_OK) {
            torn++;
            continue;
        }
        if (u->select == PYTOP_SELECT_ALL || holds || (u->select == PYTOP_SELECT_BUSY && running))
            u->selected[n++] = i;
    }
    out->selected = u->selected;
    out->selected_count = n;
    out->active_count = active;
    out->torn_count = torn;
    out->gil_held = gil;
    return PYTOP_OK;
}

static void swap_buffers(pytop_unwinder *u) {
    sample_buf *older = u->prev;
    u->prev = u->cur;
    u->cur = older;
}

static int collect(pytop_unwinder *u, pytop_sample *out) {
    memset(out, 0, sizeof *out);
    swap_buffers(u);
    u->cur->thread_count = 0;
    u->cur->frame_count = 0;
    u->gc_collecting = -1;
    u->error[0] = '\0';
    u->now_ms = monotonic_ms();
    u->codes.due_count = 0;
    u->codes.bad_count = 0;
    int status = u->stop.enabled ? stop_the_world(u) : PYTOP_OK;
    if (status == PYTOP_OK) status = remote_begin_sample(&u->mem);
    if (status == PYTOP_OK) status = threads_walk(u);
    blocking_resume_all(&u->stop); /* resolving names needs no stopped target */
    if (status == PYTOP_OK) status = resolve_all(u);
    if (status == PYTOP_OK) status = summarise(u, out);
    uint32_t os_syscalls = u->os.syscalls;
    os_state_end_sample(&u->os);
    if (status != PYTOP_OK) {
        /* Nothing of a failed sample is kept: the next one compares with the last good one. */
        swap_buffers(u);
        if (status == PYTOP_ERR_GONE) snprintf(u->error, sizeof u->error, "the process has exited");
        else fail(u, status, "sample failed");
        return status;
    }
    tracking_count(u);
    out->threads = u->cur->threads;
    out->frames = u->cur->frames;
    out->thread_count = u->cur->thread_count;
    out->frame_count = u->cur->frame_count;
    out->gc_collecting = u->gc_collecting;
    out->syscalls = u->mem.syscalls + os_syscalls;
    return PYTOP_OK;
}

int pytop_collect(pytop_unwinder *u, pytop_sample *out) {
    pthread_mutex_lock(&u->lock);
    int status = collect(u, out);
    pthread_mutex_unlock(&u->lock);
    return status;
}

int pytop_collect_at(pytop_unwinder *u, double due, pytop_sample *out, double *started) {
    if (due > 0) {
        struct timespec when = {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, NULL) == EINTR) {
        }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    *started = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    return pytop_collect(u, out);
}

int pytop_bench_collect(pytop_unwinder *u, uint32_t count, uint64_t *good, uint64_t *threads,
                        uint64_t *syscalls) {
    pytop_sample out;
    for (uint32_t i = 0; i < count; i++) {
        int status = pytop_collect(u, &out);
        *syscalls += u->mem.syscalls;
        if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION) return status;
        if (status != PYTOP_OK) continue;
        *good += 1;
        *threads += out.thread_count;
        *syscalls += out.syscalls - u->mem.syscalls;
    }
    return PYTOP_OK;
}

int pytop_describe_code(pytop_unwinder *u, uint32_t code_id, pytop_code_info *out) {
    pthread_mutex_lock(&u->lock); /* a collection may be growing the entries meanwhile */
    const code_entry *e = codes_get(&u->codes, code_id);
    if (e) {
        out->name = e->name; /* the strings themselves never move */
        out->qualname = e->qualname;
        out->filename = e->filename;
        out->firstlineno = e->firstlineno;
        out->address = e->addr;
    }
    pthread_mutex_unlock(&u->lock);
    return e ? PYTOP_OK : PYTOP_ERR_ARGS;
}

const char *pytop_last_error(pytop_unwinder *u) { return u->error; }

void pytop_close(pytop_unwinder *u) {
    if (!u) return;
    if (u->stop.count) blocking_detach_all(&u->stop); /* if closed on another thread, the kernel does it */
    pthread_mutex_destroy(&u->lock);
    codes_free(&u->codes);
    remote_free(&u->mem);
    os_state_free(&u->os);
    free(u->selected);
    free(u->track.entries);
    for (int i = 0; i < 2; i++) {
        free(u->bufs[i].threads);
        free(u->bufs[i].raw);
        free(u->bufs[i].frames);
    }
    free(u);
}

int pytop_read_memory(int pid, uint64_t address, void *buffer, size_t length) {
    remote r;
    remote_init(&r, pid);
    return remote_read(&r, address, buffer, length);
}
