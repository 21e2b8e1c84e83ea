/*
 * The unwinder's API in pytop.h: open, options, collect, names, close.
 *
 * A sample is built in threads.c; this file starts and ends it (the prefetch, the kernel's
 * per-sample state, --blocking's stops) and keeps nothing of a failed one. An unwinder is used
 * by one thread at a time: the engine's, or the caller's for --dump and benchmarks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static bool layout_usable(const pytop_layout *layout, uint64_t runtime_address) {
    return layout && runtime_address &&
           (layout->frame_model == PYTOP_FRAMES_OBJECTS || layout->frame_model == PYTOP_FRAMES_INTERPRETER);
}

/* The parts every unwinder has, once u->mem reads from the right place. */
static pytop_unwinder *finish_open(pytop_unwinder *u, const pytop_layout *layout, uint64_t runtime_address,
                                   int *status) {
    u->L = *layout;
    u->runtime = runtime_address;
    u->max_depth = DEFAULT_MAX_DEPTH;
    u->reuse_stacks = true;
    u->stop.pid = u->pid;
    if (codes_init(&u->codes, &u->mem, &u->L) != PYTOP_OK) {
        image_free(&u->image);
        free(u);
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    kthreads_init(&u->os, u->pid);
    pidns_init(&u->pidns, u->pid);
    if (!u->pid) u->os.mode = 0; /* an image has no kernel to ask */
    names_init(&u->thread_names, &u->mem, &u->L, runtime_address);
    samples_init(&u->samples);
    *status = PYTOP_OK;
    return u;
}

pytop_unwinder *pytop_open(int pid, const pytop_layout *layout, uint64_t runtime_address,
                           int *status) {
    if (pid <= 0 || !layout_usable(layout, runtime_address)) {
        *status = PYTOP_ERR_ARGS;
        return NULL;
    }
    pytop_unwinder *u = calloc(1, sizeof *u);
    if (!u) {
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    u->pid = pid;
    u->image_known = image_digest(pid, &u->image_id);
    remote_init(&u->mem, pid);
    return finish_open(u, layout, runtime_address, status);
}

pytop_unwinder *pytop_open_image(const pytop_region *regions, uint32_t count, const pytop_layout *layout,
                                 uint64_t runtime_address, int *status) {
    if (!layout_usable(layout, runtime_address)) {
        *status = PYTOP_ERR_ARGS;
        return NULL;
    }
    pytop_unwinder *u = calloc(1, sizeof *u);
    if (!u) {
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    *status = image_init(&u->image, regions, count);
    if (*status != PYTOP_OK) {
        free(u);
        return NULL;
    }
    remote_init_image(&u->mem, &u->image);
    return finish_open(u, layout, runtime_address, status);
}

uint32_t pytop_image_reads(pytop_unwinder *u, uint64_t *pairs, uint32_t capacity) {
    return u && pairs ? image_reads(&u->image, pairs, capacity) : 0;
}

int pytop_native_available(char *why, size_t why_len) {
    return natives_available(why, why_len) ? 1 : 0;
}

int pytop_set_option(pytop_unwinder *u, int option, int64_t value) {
    switch (option) {
    case PYTOP_OPT_MAX_DEPTH:
        if (value < 1 || value > (1 << 24)) return PYTOP_ERR_ARGS;
        u->depth_changed |= u->max_depth != (int)value;
        u->max_depth = (int)value;
        return PYTOP_OK;
    case PYTOP_OPT_OS_STATE:
        if (value < 0 || value > 2 || (value && !u->pid)) return PYTOP_ERR_ARGS;
        u->os.mode = (int)value;
        return PYTOP_OK;
    case PYTOP_OPT_REUSE_STACKS:
        if (value < 0 || value > 1) return PYTOP_ERR_ARGS;
        u->reuse_stacks = value == 1;
        return PYTOP_OK;
    case PYTOP_OPT_BLOCKING:
        if (value < 0 || value > 1 || (value && !u->pid)) return PYTOP_ERR_ARGS;
        if (!value && u->stop.enabled) blocking_detach_all(&u->stop);
        u->stop.enabled = value == 1;
        return PYTOP_OK;
    case PYTOP_OPT_HOLD_STOPPED:
        if (value < 0 || value > 1) return PYTOP_ERR_ARGS;
        u->hold_stopped = value == 1;
        if (!u->hold_stopped) blocking_resume_all(&u->stop);
        return PYTOP_OK;
    case PYTOP_OPT_IDLE_CHECK:
        if (value < 1 || value > 1000000) return PYTOP_ERR_ARGS;
        u->os.idle_check = (uint32_t)value;
        return PYTOP_OK;
    case PYTOP_OPT_NATIVE:
        if (value < 0 || value > 1 || (value && !u->pid)) return PYTOP_ERR_ARGS;
        if (!value || u->native_frames.dwfl) {
            if (!value) natives_close(&u->native_frames);
            return PYTOP_OK;
        }
        return natives_open(&u->native_frames, u->pid, u->error, sizeof u->error);
    case PYTOP_OPT_TASKS:
        if (value < 0 || value > 1) return PYTOP_ERR_ARGS;
        if (value && (u->L.frame_model != PYTOP_FRAMES_INTERPRETER || u->L.ts_asyncio_running_loop < 0 ||
                      u->L.ts_asyncio_running_task < 0 || u->L.task_coro < 0 || u->L.task_name < 0 ||
                      u->L.gen_iframe < 0))
            return PYTOP_ERR_ARGS; /* before 3.14 a thread state does not say which task runs */
        u->asyncio_tasks = value == 1;
        return PYTOP_OK;
    default: return PYTOP_ERR_ARGS;
    }
}

/* Blocking mode: the kernel's figures are read first (a stopped thread reads 't'), then every
 * thread is stopped until the walk is done. */
static int stop_the_world(pytop_unwinder *u) {
    int status = blocking_seize_new(&u->stop);
    if (fatal_status(status)) return fail(u->error, status, "cannot attach with ptrace for --blocking");
    if (u->os.mode)
        for (uint32_t i = 0; i < u->stop.count; i++) kthreads_read_ahead(&u->os, u->stop.tracees[i].tid);
    status = blocking_stop_all(&u->stop);
    if (status == PYTOP_ERR_LIMIT) return fail(u->error, status, "the target's threads did not stop in time");
    return status;
}

static void summarise(const sample_buf *b, pytop_sample *out) {
    for (uint32_t i = 0; i < b->thread_count; i++) {
        uint32_t flags = b->threads[i].flags;
        out->active_count += (flags & PYTOP_THREAD_ACTIVE) != 0;
        out->gil_held |= (flags & PYTOP_THREAD_GIL) != 0;
        out->torn_count += b->threads[i].status != PYTOP_OK;
    }
}

static int collect(pytop_unwinder *u, pytop_sample *out) {
    memset(out, 0, sizeof *out);
    uint64_t now = monotonic_ns();
    u->taken_at = (double)now / 1e9;
    samples_next(&u->samples);
    u->gc_collecting = -1;
    u->error[0] = '\0';
    codes_begin_sample(&u->codes);
    kthreads_begin_sample(&u->os, now, u->samples.prev->thread_count);
    /* The counts this sample reads grow while it reads them (a deep stack takes milliseconds):
     * the process clock a period closes with is read first, so that it never runs ahead of
     * them and their lag is not taken for CPU of threads that ended unseen. */
    u->os.start_clock_known = u->os.check_all && kthreads_process_cpu(&u->os, &u->os.start_clock) == PYTOP_OK;
    int status = u->stop.enabled ? stop_the_world(u) : PYTOP_OK;
    if (status == PYTOP_OK) sparse_plan_reads(u);
    if (status == PYTOP_OK) status = remote_begin_sample(&u->mem);
    if (status == PYTOP_OK) status = threads_walk(u);
    if (!u->hold_stopped || status != PYTOP_OK) blocking_resume_all(&u->stop);
    kthreads_end_sample(&u->os, status == PYTOP_OK);
    out->taken_at = u->taken_at;
    out->syscalls = u->mem.syscalls + u->os.syscalls;
    out->failed_reads = u->mem.failed_reads;
    if (status != PYTOP_OK) {
        /* Nothing of a failed sample is kept: the next one compares with the last good one. */
        samples_drop(&u->samples);
        if (status == PYTOP_ERR_GONE) snprintf(u->error, sizeof u->error, "the process has exited");
        else fail(u->error, status, "sample failed");
        return status;
    }
    u->depth_changed = false;
    const sample_buf *b = u->samples.cur;
    tracking_end_sample(&u->track, b, u->samples.prev);
    summarise(b, out);
    out->threads = b->threads;
    out->frames = b->frames;
    out->thread_count = b->thread_count;
    out->frame_count = b->frame_count;
    out->gc_collecting = u->gc_collecting;
    return PYTOP_OK;
}

int pytop_collect(pytop_unwinder *u, pytop_sample *out) {
    if (!u || !out) return PYTOP_ERR_ARGS;
    return collect(u, out);
}

int pytop_bench_collect(pytop_unwinder *u, uint32_t count, uint64_t *good, uint64_t *threads,
                        uint64_t *syscalls) {
    pytop_sample out;
    for (uint32_t i = 0; i < count; i++) {
        int status = collect(u, &out);
        *syscalls += out.syscalls;
        if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION) return status;
        if (status != PYTOP_OK) continue;
        *good += 1;
        *threads += out.thread_count;
    }
    return PYTOP_OK;
}

int pytop_describe_code(pytop_unwinder *u, uint32_t code_id, pytop_code_info *out) {
    const code_entry *e = codes_get(&u->codes, code_id);
    if (!e) return PYTOP_ERR_ARGS;
    out->name = e->name; /* the strings themselves never move */
    out->qualname = e->qualname;
    out->filename = e->filename;
    out->firstlineno = e->firstlineno;
    out->address = e->addr;
    return PYTOP_OK;
}

int pytop_code_at(pytop_unwinder *u, uint64_t address, int32_t offset, uint32_t *code_id, int32_t *line) {
    if (!u || !code_id || !line) return PYTOP_ERR_ARGS;
    if (!plausible_pointer(address)) return PYTOP_ERR_CORRUPT;
    int status = codes_lookup(&u->codes, address, code_id);
    if (status != PYTOP_OK) return status;
    *line = codes_line(&u->codes, *code_id, offset);
    return PYTOP_OK;
}

int pytop_thread_name(pytop_unwinder *u, uint64_t thread_id, char *out, size_t capacity) {
    if (!u || !out || capacity == 0) return PYTOP_ERR_ARGS;
    int status;
    char *name = names_lookup(&u->thread_names, thread_id, 0, &status);
    if (!name) return status;
    snprintf(out, capacity, "%s", name);
    free(name);
    return PYTOP_OK;
}

int pytop_frame_addresses(pytop_unwinder *u, uint32_t first_frame, uint32_t count, uint64_t *out,
                          uint8_t *entry) {
    const sample_buf *b = u ? u->samples.cur : NULL;
    if (!b || !out || first_frame > b->frame_count || count > b->frame_count - first_frame) return PYTOP_ERR_ARGS;
    for (uint32_t i = 0; i < count; i++) {
        out[i] = b->raw[first_frame + i].frame;
        if (entry) entry[i] = b->raw[first_frame + i].entry;
    }
    return PYTOP_OK;
}

int pytop_process_cpu(pytop_unwinder *u, uint64_t *cpu_ns) {
    return u->pid ? kthreads_process_cpu(&u->os, cpu_ns) : PYTOP_ERR_STATE;
}

const char *pytop_last_error(pytop_unwinder *u) { return u->error; }

void pytop_close(pytop_unwinder *u) {
    if (!u) return;
    if (u->stop.count) blocking_detach_all(&u->stop);
    natives_close(&u->native_frames);
    codes_free(&u->codes);
    remote_free(&u->mem);
    kthreads_free(&u->os);
    pidns_free(&u->pidns);
    samples_free(&u->samples);
    tracking_free(&u->track);
    names_free(&u->thread_names);
    asyncio_book_free(&u->asyncio_names);
    image_free(&u->image);
    free(u->known.tstates);
    free(u->known.cframes);
    free(u->walked);
    free(u->known.checks);
    free(u->stop.tracees);
    free(u);
}

int pytop_read_memory(int pid, uint64_t address, void *buffer, size_t length) {
    remote r;
    remote_init(&r, pid);
    return remote_read(&r, address, buffer, length);
}
