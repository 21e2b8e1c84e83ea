/*
 * Which asyncio task a thread is running (CPython 3.14+), for `--async`: the task's name as a
 * pseudo-frame just outside its coroutine's frame, so a stack reads
 *     ... loop frames > task "fetch-users" > fetch_users > query > ...
 *
 * 3.14 keeps, per thread state, the running loop and the running task (set by the loop around
 * each step of a task). A task's coroutine embeds its frame (gi_iframe): the walk of the thread's
 * frames passes that address, and the pseudo-frame goes right after it.
 *
 * Names cost nothing per sample once known: a (task, name object) pair maps to its pseudo-frame
 * id through a small table, and ids are shared by name text, up to MAX_TASK_NAMES distinct names
 * (a task per request must not grow the table without end: later names share "(other tasks)").
 * Tasks asyncio named itself (an int counter, shown as Task-N) share one "(unnamed task)": each
 * is a different task, and what it runs is in the frames under it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TASK_FILENAME "<asyncio task>"
#define TASK_NAME_CHARS 255 /* as CPython's own reader keeps them */

static const uint8_t *view(remote *mem, uint64_t addr, size_t len) {
    int status;
    return plausible_pointer(addr) ? remote_view(mem, addr, len, VIEW_TRACK, &status) : NULL;
}

static bool read_ptr(remote *mem, uint64_t addr, uint64_t *out) {
    const uint8_t *p = view(mem, addr, 8);
    if (p) *out = load_u64(p, 0);
    return p != NULL;
}

void asyncio_book_free(asyncio_book *b) {
    free(b->by_text);
    memset(b, 0, sizeof *b);
}

static uint64_t text_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* A pseudo-frame id for `name` (taken over): the one this text has, or a new one. */
static uint32_t id_for_text(code_cache *codes, asyncio_book *b, char *name) {
    if (!b->by_text) {
        b->text_mask = 2 * MAX_TASK_NAMES - 1;
        b->by_text = calloc(b->text_mask + 1, sizeof *b->by_text);
        if (!b->by_text) {
            free(name);
            return 0;
        }
    }
    uint32_t slot = (uint32_t)text_hash(name) & b->text_mask;
    for (uint32_t probes = 0; probes <= b->text_mask; probes++, slot = (slot + 1) & b->text_mask) {
        uint32_t id = b->by_text[slot];
        if (!id) break;
        const code_entry *e = codes_get(codes, id);
        if (e && strcmp(e->name, name) == 0) {
            free(name);
            return id;
        }
    }
    if (b->text_count >= MAX_TASK_NAMES) {
        free(name);
        if (!b->other_id && codes_add_pseudo(codes, strdup("(other tasks)"), TASK_FILENAME, &b->other_id) != PYTOP_OK)
            b->other_id = 0;
        return b->other_id;
    }
    uint32_t id = 0;
    if (codes_add_pseudo(codes, name, TASK_FILENAME, &id) != PYTOP_OK) return 0;
    b->by_text[slot] = id;
    b->text_count++;
    return id;
}

/* 1: the object at `obj` is a str, 0: something else, -1: unreadable. Types are remembered. */
static int is_str(remote *mem, const pytop_layout *L, asyncio_book *b, uint64_t obj) {
    uint64_t type = 0;
    if (!read_ptr(mem, obj + (uint64_t)L->ob_type, &type) || !plausible_pointer(type)) return -1;
    for (int i = 0; i < 4; i++) {
        if (b->str_types[i] == type) return 1;
        if (b->other_types[i] == type) return 0;
    }
    const uint8_t *flags = view(mem, type + (uint64_t)L->tp_flags, 8);
    if (!flags) return -1;
    bool str = (load_u64(flags, 0) & (uint64_t)L->tpflags_unicode_subclass) != 0;
    uint64_t *set = str ? b->str_types : b->other_types;
    memmove(set + 1, set, 3 * sizeof *set);
    set[0] = type;
    return str;
}

/* A task nobody named (asyncio makes its "Task-N" only when asked): named by the coroutine it
 * was started with, the one thing that tells a server's tasks apart (uvicorn and aiohttp name
 * none). All of one coroutine's tasks share the name, as they share the work. */
static uint32_t unnamed_id(remote *mem, code_cache *codes, const pytop_layout *L, asyncio_book *b, uint64_t coro) {
    uint64_t code = 0;
    uint32_t code_id = 0;
    const code_entry *e = NULL;
    if (read_ptr(mem, coro + (uint64_t)L->gen_iframe + (uint64_t)L->fr_code, &code)) {
        code &= ~(uint64_t)(L->fr_executable_tag_bits > 0 ? L->fr_executable_tag_bits : 0);
        if (plausible_pointer(code) && codes_lookup(codes, code, &code_id) == PYTOP_OK) e = codes_get(codes, code_id);
    }
    if (e && !e->pseudo && e->qualname) {
        char text[TASK_NAME_CHARS * 4 + 16];
        snprintf(text, sizeof text, "(unnamed) %s", e->qualname);
        char *copy = strdup(text);
        if (copy) return id_for_text(codes, b, copy);
    }
    if (!b->unnamed_id && codes_add_pseudo(codes, strdup("(unnamed task)"), TASK_FILENAME, &b->unnamed_id) != PYTOP_OK)
        b->unnamed_id = 0;
    return b->unnamed_id;
}

static uint32_t name_id(remote *mem, code_cache *codes, const pytop_layout *L, asyncio_book *b, uint64_t task,
                        uint64_t name, uint64_t coro) {
    task_recent *r = &b->recent[((task >> 4) ^ (name >> 4)) % TASK_RECENT];
    if (r->task == task && r->name == name && r->id) return r->id;
    uint32_t id = 0;
    int str = plausible_pointer(name) ? is_str(mem, L, b, name) : -1;
    if (str == 1) {
        int status;
        char *text = text_read(mem, L, name, TASK_NAME_CHARS, &status);
        if (!text) return 0;
        id = id_for_text(codes, b, text);
    } else if (str == 0) {
        id = unnamed_id(mem, codes, L, b, coro);
    }
    if (id) *r = (task_recent){task, name, id};
    return id;
}

/* Where the fields that say which task runs lie in a thread state: [*first, *first + *span). */
static void running_fields(const pytop_layout *L, int32_t *first, int32_t *span) {
    *first = L->ts_asyncio_running_loop < L->ts_asyncio_running_task ? L->ts_asyncio_running_loop
                                                                    : L->ts_asyncio_running_task;
    *span = abs(L->ts_asyncio_running_task - L->ts_asyncio_running_loop) + 8;
}

size_t asyncio_state_span(const pytop_layout *L) {
    int32_t first, span;
    running_fields(L, &first, &span);
    return (size_t)(first + span);
}

bool asyncio_fields_held(remote *mem, const pytop_layout *L, uint64_t ts) {
    int32_t first, span;
    running_fields(L, &first, &span);
    return remote_holds(mem, ts + (uint64_t)first, (size_t)span);
}

void asyncio_running(remote *mem, const pytop_layout *L, uint64_t ts, uint64_t *loop, uint64_t *task) {
    *loop = *task = 0;
    int32_t first, span;
    running_fields(L, &first, &span); /* neighbours: one view */
    const uint8_t *fields = span <= 64 ? view(mem, ts + (uint64_t)first, (size_t)span) : NULL;
    if (fields) {
        *loop = load_u64(fields, L->ts_asyncio_running_loop - first);
        *task = load_u64(fields, L->ts_asyncio_running_task - first);
    } else if (!read_ptr(mem, ts + (uint64_t)L->ts_asyncio_running_loop, loop) ||
               !read_ptr(mem, ts + (uint64_t)L->ts_asyncio_running_task, task)) {
        *loop = *task = 0;
    }
}

void asyncio_task_frame(remote *mem, code_cache *codes, const pytop_layout *L, asyncio_book *b, uint64_t loop,
                        uint64_t task, uint64_t *frame, uint32_t *id) {
    *frame = 0;
    *id = 0;
    if (!loop || !plausible_pointer(task)) return;
    const uint8_t *t = view(mem, task, (size_t)(L->task_coro > L->task_name ? L->task_coro : L->task_name) + 8);
    if (!t) return;
    uint64_t coro = load_u64(t, L->task_coro), name = load_u64(t, L->task_name);
    if (!plausible_pointer(coro)) return;
    *id = name_id(mem, codes, L, b, task, name, coro);
    if (*id) *frame = coro + (uint64_t)L->gen_iframe;
}
