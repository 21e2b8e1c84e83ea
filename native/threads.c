/*
 * One sample: every interpreter (runtime->interpreters.head, then ->next) and every thread state
 * of each (threads.head, then ->next), with the GIL holder (gil.c), the GC flag, and each thread
 * (thread.c): sparse between full walks when it can be (sparse.c). Then the code ids found
 * are confirmed in one batch, and their lines looked up.
 */
#include <string.h>

#include "internal.h"

#define LIST_RETRIES 2 /* a thread list that changed under us three times is reported as such */

static int read_gc_flag(pytop_unwinder *u, uint64_t addr) {
    int32_t collecting = 0;
    int status = unwinder_read_i32(u, addr, &collecting);
    if (status != PYTOP_OK) return status;
    if (u->gc_collecting < 0) u->gc_collecting = 0;
    if (collecting) u->gc_collecting = 1;
    return PYTOP_OK;
}

/* Thread states met in one walk of a list. A state met twice means the walk followed a link
 * read before the list changed back into it: a state freed while the list was read and made
 * anew at the same address (3.13+ reuse a freed state's memory for the next thread) reads as
 * the new one, linked to what follows it. The threads after it came twice in one sample, a new
 * request thread on two rows (CI, 3.15), or round and round, 8,192 thread reads before the walk
 * gave up. Each walk starts the set empty; it grows with the list. */
static void walked_clear(pytop_unwinder *u) {
    if (u->walked && u->walked_count) memset(u->walked, 0, ((size_t)u->walked_mask + 1) * sizeof *u->walked);
    u->walked_count = 0;
}

/* Adds `ts`; false if it was met before in this walk (or no memory is left for the set, when
 * the walk goes on unchecked, bounded by MAX_THREADS as before). */
static bool walked_first_time(pytop_unwinder *u, uint64_t ts) {
    if ((u->walked_count + 1) * 2 > (u->walked ? u->walked_mask + 1 : 0)) {
        uint32_t old_slots = u->walked ? u->walked_mask + 1 : 0, slots = old_slots ? old_slots * 2 : 256;
        uint64_t *grown = calloc(slots, sizeof *grown);
        if (!grown) return true;
        for (uint32_t i = 0; i < old_slots; i++) {
            uint64_t a = u->walked[i];
            if (!a) continue;
            uint32_t s = hash_slot(a >> 4, slots - 1);
            while (grown[s]) s = (s + 1) & (slots - 1);
            grown[s] = a;
        }
        free(u->walked);
        u->walked = grown;
        u->walked_mask = slots - 1;
    }
    uint32_t s = hash_slot(ts >> 4, u->walked_mask);
    for (; u->walked[s]; s = (s + 1) & u->walked_mask)
        if (u->walked[s] == ts) return false;
    u->walked[s] = ts;
    u->walked_count++;
    return true;
}

/* The thread states of one interpreter, from `head`. With `only_holder_tracked`, what is read
 * of threads other than the GIL holder is not remembered for the next prefetch. */
static int walk_thread_list(const walk_ctx *w, uint64_t head, bool only_holder_tracked) {
    pytop_unwinder *u = w->u;
    const gil_holders *g = w->g;
    uint32_t first = u->samples.cur->thread_count;
    uint64_t holder_next = 0;
    uint64_t holder = thread_walk_holder_first(w, &holder_next);
    int64_t position = -1;
    uint64_t ts = head;
    walked_clear(u);
    for (int n = 0; ts; n++) {
        if (u->samples.cur->thread_count >= MAX_THREADS || n >= MAX_THREADS)
            return fail(u->error, PYTOP_ERR_LIMIT, "more than %d threads (or a cycle in the thread list)", MAX_THREADS);
        if (!walked_first_time(u, ts))
            return fail(u->error, PYTOP_ERR_CORRUPT, "thread state 0x%llx met twice: the list changed while it was read",
                        (unsigned long long)ts);
        uint64_t next_ts = 0;
        if (ts == holder && position < 0) {
            position = n;
            ts = holder_next;
            continue;
        }
        bool untracked = u->mem.untracked;
        if (only_holder_tracked) u->mem.untracked = !gil_holds(g, ts);
        int status = thread_walk(w, ts, &next_ts);
        u->mem.untracked = untracked;
        if (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT)
            return fail(u->error, status, "cannot read thread state at 0x%llx", (unsigned long long)ts);
        if (status != PYTOP_OK) return status;
        ts = next_ts;
    }
    if (holder) thread_place_holder(u->samples.cur, first, position);
    return PYTOP_OK;
}

/* A thread that ends while the list is walked can leave it pointing at freed memory: the walk
 * starts again from the head, read anew, dropping what the broken walk collected. */
static int walk_threads_of(const walk_ctx *w, uint64_t head, bool only_holder_tracked) {
    pytop_unwinder *u = w->u;
    uint32_t first_thread = u->samples.cur->thread_count, first_frame = u->samples.cur->frame_count;
    int status = walk_thread_list(w, head, only_holder_tracked);
    for (int retry = 0; retry < LIST_RETRIES && (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT); retry++) {
        u->samples.cur->thread_count = first_thread;
        u->samples.cur->frame_count = first_frame;
        u->error[0] = '\0';
        fresh_mark mark = remote_begin_fresh(&u->mem);
        status = unwinder_read_u64(u, w->interp + (uint64_t)u->L.is_threads_head, &head);
        if (status == PYTOP_OK) status = walk_thread_list(w, head, only_holder_tracked);
        remote_end_fresh(&u->mem, mark);
    }
    return status;
}

/* The thread states of `interp`, sparse when it can be (see the top of the file). */
static int walk_threads(const walk_ctx *w, uint64_t head, bool only_interpreter) {
    pytop_unwinder *u = w->u;
    uint64_t interp = w->interp;
    uint32_t first_thread = u->samples.cur->thread_count, first_frame = u->samples.cur->frame_count;
    if (only_interpreter && sparse_can_walk(w, head)) {
        int status = sparse_walk_known(w);
        if (status != WALK_AGAIN) {
            u->os.partial = true; /* the threads not looked at keep their files */
            return status;
        }
        u->samples.cur->thread_count = first_thread; /* the list changed: walk it all */
        u->samples.cur->frame_count = first_frame;
        u->error[0] = '\0';
    }
    /* Sparse walks follow: they need only the holder's memory in the next prefetch, and the
     * next full walk reads the states this one finds in one go, before it follows the links. */
    bool sparse_next = only_interpreter && sparse_allowed(u);
    if (sparse_next && u->known.valid && u->known.interp == interp)
        remote_keep_many(&u->mem, u->known.tstates, u->known.count, thread_state_span(u));
    int status = walk_threads_of(w, head, sparse_next);
    if (status == PYTOP_OK && only_interpreter) sparse_remember_walk(u, interp, head, first_thread);
    else u->known.valid = false;
    return status;
}

static int walk_interpreter_state(pytop_unwinder *u, uint64_t interp, gil_holders *g,
                                  uint64_t *generation_sum, uint64_t *next, bool first) {
    const pytop_layout *L = &u->L;
    uint64_t head = 0, id = 0;
    int status = unwinder_read_u64(u, interp + (uint64_t)L->is_next, next);
    if (status == PYTOP_OK && L->is_id >= 0) status = unwinder_read_u64(u, interp + (uint64_t)L->is_id, &id); /* 2.7, 3.6: 0 */
    if (status == PYTOP_OK) status = unwinder_read_u64(u, interp + (uint64_t)L->is_threads_head, &head);
    if (status == PYTOP_OK) status = gil_read(u, interp, L->is_gil_locked, L->is_gil_holder, L->is_gil_switches, g);
    if (status == PYTOP_OK) status = gil_note_waits(u, interp, true);
    if (status == PYTOP_OK && L->is_gc_collecting >= 0)
        status = read_gc_flag(u, interp + (uint64_t)L->is_gc_collecting);
    if (status == PYTOP_OK && L->is_code_generation >= 0) {
        uint64_t generation = 0;
        status = unwinder_read_u64(u, interp + (uint64_t)L->is_code_generation, &generation);
        *generation_sum += generation;
    }
    if (status != PYTOP_OK)
        return fail(u->error, status, "cannot read interpreter state at 0x%llx", (unsigned long long)interp);
    const walk_ctx w = {u, interp, (int64_t)id, g};
    return walk_threads(&w, head, first && *next == 0);
}

/* Code ids were found thread by thread during the walk; confirm the cache entries that are due
 * in one batch, and if some turned out replaced, look everything up again (their addresses now
 * load the new objects). Then the lines. */
static int resolve_all(pytop_unwinder *u) {
    sample_buf *b = u->samples.cur;
    if (codes_confirm_due(&u->codes) > 0) {
        for (uint32_t k = 0; k < b->thread_count; k++) {
            pytop_thread *t = &b->threads[k];
            if ((t->flags & PYTOP_THREAD_UNCHANGED) || t->status != PYTOP_OK) continue; /* objects live; torn */
            int status = thread_resolve_ids(u, t);
            if (status != PYTOP_OK) return status;
        }
        codes_confirm_due(&u->codes);
    }
    for (uint32_t k = 0; k < b->thread_count; k++) {
        const pytop_thread *t = &b->threads[k];
        if (t->flags & PYTOP_THREAD_UNCHANGED) continue;
        for (uint32_t i = t->first_frame; i < t->first_frame + t->frame_count; i++) {
            int32_t offset = b->raw[i].offset;
            if (offset == PSEUDO_FRAME_OFFSET) b->frames[i].line = 0;
            else b->frames[i].line = offset == INT32_MAX ? -1 : codes_line(&u->codes, b->frames[i].code_id, offset);
        }
    }
    return PYTOP_OK;
}

int threads_walk(pytop_unwinder *u) {
    const pytop_layout *L = &u->L;
    gil_holders g = {.count = 0, .reads = 0};
    uint64_t interp = 0, generation_sum = 0;
    int status = gil_read(u, u->runtime, L->rt_gil_locked, L->rt_gil_holder, L->rt_gil_switches, &g);
    if (status == PYTOP_OK) status = gil_note_waits(u, u->runtime, false);
    if (status == PYTOP_OK) status = gil_count_waiters_27(u, &g);
    if (status == PYTOP_OK && L->rt_gc_collecting >= 0)
        status = read_gc_flag(u, u->runtime + (uint64_t)L->rt_gc_collecting);
    if (status == PYTOP_OK)
        status = unwinder_read_u64(u, u->runtime + (uint64_t)L->rt_interpreters_head, &interp);
    if (status != PYTOP_OK) return fail(u->error, status, "cannot read the Python runtime state");
    if (!interp) return fail(u->error, PYTOP_ERR_CORRUPT, "the Python runtime has no interpreter (starting up or shutting down)");
    /* 3.12+: each interpreter's GIL is read before its threads, so the holder is known as they
     * are walked; up to 3.11 the one GIL was read above. */
    for (int n = 0; interp; n++) {
        if (n >= MAX_INTERPRETERS)
            return fail(u->error, PYTOP_ERR_LIMIT, "more than %d interpreters (or a cycle in their list)", MAX_INTERPRETERS);
        uint64_t next = 0;
        if ((status = walk_interpreter_state(u, interp, &g, &generation_sum, &next, n == 0)) != PYTOP_OK)
            return status;
        interp = next;
    }
    if (L->is_code_generation >= 0) {
        u->codes.generation = generation_sum;
        u->codes.generation_known = true;
    }
    /* TIDs are known from thread states (3.11+) or from struct pthread, which the kernel zeroes
     * when the thread exits: either way, a state without one has no live thread. */
    tracking_mark_unclaimed(&u->track, u->samples.cur, u->samples.prev, u->L.ts_native_thread_id >= 0 || u->L.pthread_tid >= 0);
    gil_mark_racing_waiters_27(u);
    if ((status = threads_part_shared_stacks(u)) != PYTOP_OK) return status;
    if (u->native_frames.dwfl && u->stop.stopped) { /* --native: the threads that run no Python too */
        status = natives_read_others(&u->native_frames, &u->codes, &u->stop, u->samples.cur, monotonic_ns());
        if (fatal_status(status)) return fail(u->error, status, "reading the native stacks of other threads");
    }
    return resolve_all(u);
}
