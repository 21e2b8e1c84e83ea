/*
 * One thread of one sample: its thread state, its TID, its kernel figures, its frames resolved
 * to code ids (read again only if the kernel says it may have run since the previous sample,
 * kthreads.c), its name when it is new, and with --native its C frames. The GIL's holder is
 * walked first (thread_walk_holder_first), as soon after the GIL as can be.
 */
#include <string.h>

#include "internal.h"

#define STACK_RETRIES 2 /* a stack torn twice in a row is reported as such */

/* The fields of the PyThreadState at `ts` that a record is made of, as one copy of them. Each
 * field is taken from this copy, never read on its own: a read of one field looks for it in
 * whatever the sample holds, and under churn a state's bytes can be held twice, at two times
 * (a region read ahead for an object that was at that address before, and the state itself).
 * Taken from both, a record had its creator's ids and its new thread's frames (3.9's
 * thread-per-request server: a second "acceptor" with a handler's stack). */
static const uint8_t *state_view(pytop_unwinder *u, uint64_t ts, int *status) {
    return remote_view_kept(&u->mem, ts, thread_state_span(u), status);
}

/* Where the thread's frames start, from the copy `state` of its PyThreadState. */
static int thread_frames_of(pytop_unwinder *u, const uint8_t *state, thread_frames *tf) {
    const pytop_layout *L = &u->L;
    int status = PYTOP_OK;
    *tf = (thread_frames){0, 0, 0};
    if (L->ts_cframe >= 0) { /* 3.11-3.12: tstate->cframe->current_frame */
        uint64_t cframe = load_u64(state, L->ts_cframe);
        if (cframe) status = unwinder_read_u64(u, cframe + (uint64_t)L->cf_current_frame, &tf->top_frame);
    } else {
        tf->top_frame = load_u64(state, L->ts_frame);
    }
    if (L->ts_datastack_chunk >= 0 && L->ts_datastack_top >= 0) {
        tf->chunk = load_u64(state, L->ts_datastack_chunk);
        tf->stack_top = load_u64(state, L->ts_datastack_top);
    }
    return status;
}

static int native_id_of(pytop_unwinder *u, pytop_thread *t, const uint8_t *state) {
    const pytop_layout *L = &u->L;
    t->native_id = 0;
    if (L->ts_native_thread_id >= 0) {
        uint64_t v = load_u64(state, L->ts_native_thread_id);
        if (v <= INT32_MAX) t->native_id = pidns_host_tid(&u->pidns, (int)v, u->os.sample_no);
        return PYTOP_OK;
    }
    /* Before 3.11 only the pthread_t is known; the libc keeps the TID inside struct pthread,
     * on a page of its own. A thread keeps its TID: take last sample's while /proc still knew
     * it (a reused pthread_t then belongs to a thread whose old TID is gone). */
    const pytop_thread *old = samples_previous(&u->samples, t);
    if (old && old->thread_id == t->thread_id && old->state_serial == t->state_serial && old->native_id > 0 &&
        old->os_state != '?') {
        t->native_id = old->native_id;
        return PYTOP_OK;
    }
    if (L->pthread_tid >= 0 && t->thread_id) {
        int32_t v = 0;
        if (unwinder_read_i32(u, t->thread_id + (uint64_t)L->pthread_tid, &v) == PYTOP_OK && v > 0)
            t->native_id = pidns_host_tid(&u->pidns, v, u->os.sample_no);
    }
    return PYTOP_OK;
}

/* The kernel's figures for `t` (its state, CPU and the flags they give), into `t` and `r`. */
static void read_kernel_figures(pytop_unwinder *u, pytop_thread *t, bool gil, bool held_last, kthread_report *r) {
    const pytop_thread *old = samples_previous(&u->samples, t); /* the GIL's last holder ran since */
    bool now = gil || held_last || (old && old->serial == t->serial && (old->flags & PYTOP_THREAD_GIL));
    /* The holder of a moment ago without the GIL now: in C code that let it go (on a CPU), or
     * waiting, or asleep? Its letter says. */
    kthreads_report(&u->os, t->native_id, gil ? KTHREAD_NOW : now ? KTHREAD_AFTER_GIL : KTHREAD_WHEN_DUE, r);
    t->os_state = r->state;
    t->cpu_ns = r->cpu_ns;
    if (r->state != '?') t->flags |= PYTOP_THREAD_OS_KNOWN;
    if (r->running) t->flags |= PYTOP_THREAD_ACTIVE;
    if (r->on_cpu) t->flags |= PYTOP_THREAD_ON_CPU;
    if (!gil && gil_waited_on(u, r->futex)) t->flags |= PYTOP_THREAD_GIL_WAIT;
    if (gil && r->asleep) t->flags |= PYTOP_THREAD_GIL_ASLEEP;
    if (r->ran) t->flags |= PYTOP_THREAD_RAN;
    if (r->first) t->flags |= PYTOP_THREAD_NEW_TASK;
    if (r->checked) {
        t->flags |= PYTOP_THREAD_CHECKED;
        t->cpu_delta_ns = r->cpu_delta_ns;
        t->wait_delta_ns = r->wait_delta_ns;
    }
}

/* Whether a thread's stack is known not to have changed since the previous sample, by what the
 * kernel said of it: it does not hold the GIL (a stack only changes under it) and its counts
 * were not read, or did not move. */
static bool stack_unchanged(bool gil, const kthread_report *r) {
    return !gil && r->state != '?' && !r->ran && !r->first;
}

/* Map every raw frame of `t` to a code id. A code object that cannot be read means the frame
 * was torn by the running target: the thread's stack is given up at once (its walk is retried
 * from fresh memory), not the whole sample, and the address is remembered for the rest of the
 * sample so that no other frame tries it again. */
int thread_resolve_ids(pytop_unwinder *u, pytop_thread *t) {
    sample_buf *b = u->samples.cur;
    code_cache *c = &u->codes;
    uint64_t last_code = 0;
    uint32_t last_id = 0;
    for (uint32_t i = t->first_frame; i < t->first_frame + t->frame_count; i++) {
        const raw_frame *raw = &b->raw[i];
        if (raw->offset == PSEUDO_FRAME_OFFSET) continue; /* its id is set already */
        if (raw->code != last_code) { /* recursion repeats one code object */
            int status = PYTOP_OK;
            for (uint32_t k = 0; k < c->bad_count; k++)
                if (c->bad[k] == raw->code) status = c->bad_status[k];
            if (status == PYTOP_OK) status = codes_lookup(c, raw->code, &last_id);
            if (fatal_status(status))
                return fail(u->error, status, "reading a code object at 0x%llx", (unsigned long long)raw->code);
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
        if (e && raw->offset >= e->code_bytes) codes_force_check(c, last_id);
        b->frames[i].code_id = last_id;
    }
    return PYTOP_OK;
}

/* Put pseudo-frame `id` among t's frames at `index` (innermost first), moving the outer ones. */
static int insert_pseudo_frame(pytop_unwinder *u, pytop_thread *t, uint32_t index, uint32_t id) {
    sample_pair *s = &u->samples;
    int status = samples_push_frame(s, 0, 0, 0); /* room for one more */
    if (status != PYTOP_OK) return status;
    sample_buf *b = s->cur;
    uint32_t at = t->first_frame + index, end = b->frame_count - 1;
    memmove(b->raw + at + 1, b->raw + at, (end - at) * sizeof *b->raw);
    memmove(b->frames + at + 1, b->frames + at, (end - at) * sizeof *b->frames);
    b->raw[at] = (raw_frame){0, 0, PSEUDO_FRAME_OFFSET, false};
    b->frames[at] = (pytop_frame){id, 0};
    t->frame_count++;
    return PYTOP_OK;
}

/* Walk the frames of `t` and map them to code ids; on failure t->status says why. With tasks
 * on, the asyncio task it is running goes in as a pseudo-frame outside the task's coroutine. */
/* Does the walk end short of the thread's first frame? A generator or coroutine runs only when
 * resumed, so its frame links to its caller's while it runs and to nothing once it yields: a
 * walk that read the link after the yield ends at it, every caller missing. Such a stack is
 * one the thread never had. (A thread whose very first Python code is a generator resumed
 * from C, a rare embedding, has its stacks counted as torn.) */
static bool cut_short(const pytop_unwinder *u, const pytop_thread *t) {
    if (!t->frame_count || (t->flags & PYTOP_THREAD_TRUNCATED)) return false;
    return codes_is_resumable(&u->codes, u->samples.cur->frames[t->first_frame + t->frame_count - 1].code_id);
}

/* Did the walk of `t` end at another thread's outermost frame? A thread's outermost frame
 * (threading's bootstrap, the main module) stays its own while it lives, and a frame runs in one
 * thread only. Before 3.11 a function's frame object is handed from call to call, by whichever
 * thread calls it next (each code's one spare frame, and the free list): a read of `t`'s
 * innermost frame made after `t` returned from it, and another thread called the same function,
 * follows that other thread's callers. Reported, `t` would have that thread's stack, and its time
 * on functions it never ran. Judged against the previous sample: `t`'s outermost frame moved
 * there from the one it had, and another thread had it. (Two threads of this sample that end at
 * one frame are parted once all are walked: threads_part_shared_stacks.) */
static bool ends_in_another_thread(const pytop_unwinder *u, const pytop_thread *t) {
    const pytop_thread *old = samples_previous(&u->samples, t);
    if (!t->outer_frame || !old || old->serial != t->serial || old->status != PYTOP_OK || !old->outer_frame ||
        old->outer_frame == t->outer_frame)
        return false;
    const sample_buf *prev = u->samples.prev;
    for (uint32_t i = 0; i < prev->thread_count; i++) {
        const pytop_thread *o = &prev->threads[i];
        if (o->outer_frame == t->outer_frame && o->serial != t->serial && o->status == PYTOP_OK) return true;
    }
    return false;
}

/* Does the copy `state` of the thread state say the ids of `t`'s record? The record is made
 * from the sample's kept copy; a stack read again afresh (it tore) reads the state anew. Between
 * the two, a state its creator made can be taken up by its thread (3.8-3.10: the creator's ids,
 * then the thread's own), or an ended thread's freed state made anew: the fresh frames are then
 * another thread's than the record's ids say. Taken together, a request thread's handler frames
 * were counted under its creator's ids, as a second row of the thread-per-request server's
 * "acceptor". */
static bool same_owner(const pytop_unwinder *u, const pytop_thread *t, const uint8_t *state) {
    const pytop_layout *L = &u->L;
    uint64_t unique_id = L->ts_unique_id >= 0 ? load_u64(state, L->ts_unique_id) : 0;
    return load_u64(state, L->ts_thread_id) == t->thread_id && (uint32_t)unique_id == t->state_serial;
}

static int read_stack(pytop_unwinder *u, pytop_thread *t) {
    thread_frames tf = {0, 0, 0};
    u->samples.cur->frame_count = t->first_frame; /* drop what an earlier attempt left */
    t->status = PYTOP_OK;
    t->outer_frame = 0;
    /* The running task and the innermost frame come from one read: when the task's fields are
     * not in hand with the rest of the thread state, both are read anew, together. */
    bool together = u->asyncio_tasks && !asyncio_fields_held(&u->mem, &u->L, t->tstate);
    fresh_mark mark = {0};
    int status;
    if (together) {
        mark = remote_begin_fresh(&u->mem);
        (void)remote_view_kept(&u->mem, t->tstate, asyncio_state_span(&u->L), &status); /* else read apart */
    }
    const uint8_t *state = state_view(u, t->tstate, &status);
    status = state ? thread_frames_of(u, state, &tf) : status;
    /* Another owner's frames: the record stands as read, a state without frames of its own yet
     * (unclaimed, tracking.c) or no more (ending). */
    if (status == PYTOP_OK && !same_owner(u, t, state)) tf = (thread_frames){0, 0, 0};
    t->top_frame = tf.top_frame;
    uint64_t loop = 0, task = 0, task_frame = 0;
    uint32_t task_id = 0;
    int32_t marked = -1;
    if (status == PYTOP_OK && u->asyncio_tasks) asyncio_running(&u->mem, &u->L, t->tstate, &loop, &task);
    if (together) remote_end_fresh(&u->mem, mark);
    if (status == PYTOP_OK && u->asyncio_tasks)
        asyncio_task_frame(&u->mem, &u->codes, &u->L, &u->asyncio_names, loop, task, &task_frame, &task_id);
    if (status == PYTOP_OK)
        status = frames_walk(&u->mem, &u->L, &u->samples, u->max_depth, &tf, t, task_frame, &marked);
    t->frame_count = u->samples.cur->frame_count - t->first_frame;
    if (status == PYTOP_OK) {
        status = thread_resolve_ids(u, t);
        if (status == PYTOP_OK) status = t->status;
    }
    if (status == PYTOP_OK && (cut_short(u, t) || ends_in_another_thread(u, t)))
        status = PYTOP_ERR_CORRUPT; /* torn: read again */
    if (status == PYTOP_OK && marked >= 0 && task_id) status = insert_pseudo_frame(u, t, (uint32_t)marked + 1, task_id);
    t->status = status;
    return status;
}

/* How many bytes of a PyThreadState the walk reads: its fields come in one read. (The asyncio
 * fields, ~1 KB in, are read apart, and only for threads whose stack is read again.) */
size_t thread_state_span(const pytop_unwinder *u) {
    const pytop_layout *L = &u->L;
    int32_t fields[] = {L->ts_next, L->ts_interp, L->ts_thread_id, L->ts_native_thread_id, L->ts_unique_id,
                        L->ts_frame, L->ts_cframe, L->ts_datastack_chunk, L->ts_datastack_top};
    int32_t end = 0;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i] >= 0 && fields[i] + 8 > end) end = fields[i] + 8;
    return (size_t)end;
}

/* Is this the first sample with the whole stack of thread `t`, down to its outermost frame? */
static bool first_full_stack(const pytop_unwinder *u, const pytop_thread *t) {
    if (!t->frame_count || !t->outer_frame) return false;
    const pytop_thread *old = samples_previous(&u->samples, t);
    return !old || old->serial != t->serial || !old->frame_count || !old->outer_frame || old->status != PYTOP_OK;
}

/* The thread state at `ts` into a new record of the sample. A thread state read while its
 * thread ends may already be freed memory: it must point back at its interpreter, and its link
 * must look like a pointer. */
static int new_record(const walk_ctx *w, uint64_t ts, uint64_t *next, pytop_thread **out) {
    pytop_unwinder *u = w->u;
    const pytop_layout *L = &u->L;
    uint64_t thread_id = 0, owner = 0, unique_id = 0;
    if (!plausible_pointer(ts)) return PYTOP_ERR_CORRUPT;
    int status;
    const uint8_t *state = state_view(u, ts, &status);
    if (!state) return status;
    *next = load_u64(state, L->ts_next);
    thread_id = load_u64(state, L->ts_thread_id);
    owner = load_u64(state, L->ts_interp);
    if (L->ts_unique_id >= 0) unique_id = load_u64(state, L->ts_unique_id);
    if (owner != w->interp || (*next && !plausible_pointer(*next))) return PYTOP_ERR_CORRUPT;
    pytop_thread *t = samples_push_thread(&u->samples);
    if (!t) return fail(u->error, PYTOP_ERR_NOMEM, "out of memory for threads");
    t->thread_id = thread_id;
    t->state_serial = (uint32_t)unique_id;
    t->tstate = ts;
    t->interp_id = w->id;
    t->first_frame = u->samples.cur->frame_count;
    if ((status = native_id_of(u, t, state)) != PYTOP_OK) return status;
    tracking_assign(&u->track, &u->samples, t);
    if (gil_holds(w->g, ts)) t->flags |= PYTOP_THREAD_GIL;
    *out = t;
    return PYTOP_OK;
}

/* The stack of `t`, read again from fresh memory when the thread changed it while it was read
 * (up to STACK_RETRIES times). */
static int read_stack_again_if_torn(pytop_unwinder *u, pytop_thread *t) {
    remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_THREAD); /* retries included */
    int status = read_stack(u, t);
    for (int retry = 0; retry < STACK_RETRIES && (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT); retry++) {
        fresh_mark mark = remote_begin_fresh(&u->mem);
        status = read_stack(u, t);
        remote_end_fresh(&u->mem, mark);
    }
    remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE); /* back to the sample's bound */
    t->frame_count = u->samples.cur->frame_count - t->first_frame;
    return status;
}

/* After every thread of the sample was walked: two threads whose walks end at the same
 * outermost frame cannot both be right (see ends_in_another_thread, which catches it while the
 * other thread's frame is known; not in a first sample, nor after that thread's own read tore).
 * Both stacks are read again, afresh; a pair still found together is counted torn. */
/* An outermost frame of a thread whose stack was read now, and that thread. */
typedef struct read_end {
    uint64_t frame;
    uint32_t thread;
} read_end;

static int by_frame(const void *a, const void *b) {
    uint64_t x = ((const read_end *)a)->frame, y = ((const read_end *)b)->frame;
    return x < y ? -1 : x > y;
}

/* Whether any thread of the sample ends at the outermost frame of another (of another serial)
 * whose stack was read now: the stacks read now, sorted by that frame, and one pass over every
 * thread. Looking for pairs thread by thread scanned all of a pool's 2,000 threads for each
 * stack read (16 a sample): 3.6% of the sampling thread, where a pair is rare. */
static bool any_shared_end(const sample_buf *b) {
    read_end some[64], *ends = some;
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        const pytop_thread *x = &b->threads[i];
        if (!(x->flags & PYTOP_THREAD_UNCHANGED) && x->outer_frame && x->status == PYTOP_OK) n++;
    }
    if (n == 0) return false;
    if (n > sizeof some / sizeof *some && !(ends = malloc(n * sizeof *ends))) return true; /* look the long way */
    n = 0;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        const pytop_thread *x = &b->threads[i];
        if (!(x->flags & PYTOP_THREAD_UNCHANGED) && x->outer_frame && x->status == PYTOP_OK)
            ends[n++] = (read_end){x->outer_frame, i};
    }
    qsort(ends, n, sizeof *ends, by_frame);
    bool shared = false;
    for (uint32_t j = 0; j < b->thread_count && !shared; j++) {
        const pytop_thread *y = &b->threads[j];
        if (!y->outer_frame || y->status != PYTOP_OK) continue;
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (ends[mid].frame < y->outer_frame) lo = mid + 1;
            else hi = mid;
        }
        for (uint32_t k = lo; k < n && ends[k].frame == y->outer_frame && !shared; k++)
            shared = ends[k].thread != j && b->threads[ends[k].thread].serial != y->serial;
    }
    if (ends != some) free(ends);
    return shared;
}

int threads_part_shared_stacks(pytop_unwinder *u) {
    sample_buf *b = u->samples.cur;
    if (u->stop.stopped) return PYTOP_OK; /* read with the threads stopped: none moved meanwhile */
    if (!any_shared_end(b)) return PYTOP_OK;
    /* A stack kept from the previous sample was checked then: a pair has one read now. */
    for (uint32_t i = 0; i < b->thread_count; i++) {
        if (b->threads[i].flags & PYTOP_THREAD_UNCHANGED) continue;
        for (uint32_t j = 0; j < b->thread_count; j++) {
            pytop_thread *x = &b->threads[i], *y = &b->threads[j];
            if (j == i || (j < i && !(y->flags & PYTOP_THREAD_UNCHANGED)) || !x->outer_frame ||
                x->outer_frame != y->outer_frame || x->serial == y->serial || x->status != PYTOP_OK ||
                y->status != PYTOP_OK)
                continue; /* (a pair of two read now is looked at once, from its first) */
            pytop_thread *pair[2] = {x, y};
            for (int k = 0; k < 2; k++) {
                pair[k]->flags &= ~(uint32_t)PYTOP_THREAD_UNCHANGED; /* its frames go at the arena's end */
                pair[k]->first_frame = b->frame_count;
                pair[k]->frame_count = 0;
                fresh_mark mark = remote_begin_fresh(&u->mem);
                int status = read_stack_again_if_torn(u, pair[k]);
                remote_end_fresh(&u->mem, mark);
                if (fatal_status(status))
                    return fail(u->error, status, "reading the stack of thread %llu", (unsigned long long)pair[k]->thread_id);
            }
            if (x->status == PYTOP_OK && y->status == PYTOP_OK && x->outer_frame == y->outer_frame)
                x->status = y->status = PYTOP_ERR_CORRUPT;
        }
    }
    return PYTOP_OK;
}

/* A new thread whose name threading's registry did not have yet: from its bootstrap frame
 * (Thread._bootstrap's self), once its whole stack is read. */
static void name_from_bootstrap(pytop_unwinder *u, pytop_thread *t) {
    if (!first_full_stack(u, t) ||
        !codes_is_thread_bootstrap(&u->codes, u->samples.cur->frames[t->first_frame + t->frame_count - 1].code_id))
        return;
    names_read_new(&u->thread_names, t->serial, t->outer_frame, t->thread_id, pidns_inner_tid(&u->pidns, t->native_id)); /* bounds its own failed reads */
    remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE);
}

/* One thread of the sample, from its thread state at `ts` (its successor in the list into
 * *next): the record, its name if it is new, its kernel figures, its stack (read again only if
 * it may have moved), and with --native its C frames. */
int thread_walk(const walk_ctx *w, uint64_t ts, uint64_t *next) {
    pytop_unwinder *u = w->u;
    pytop_thread *t = NULL;
    int status = new_record(w, ts, next, &t);
    if (status != PYTOP_OK) return status;
    /* A thread not in the previous sample is named first, then its stack is read, then its
     * counts, whose first read opens its files (~40 us): a thread per request may live a
     * millisecond and be seen once, near its end, and its Thread is freed when it returns.
     * Threading's registry has it once it runs; before that, its bootstrap frame does. */
    const pytop_thread *old = samples_previous(&u->samples, t);
    bool seen_before = old && old->serial == t->serial;
    bool named = false;
    if (!seen_before && t->thread_id) {
        named = names_read_new_by_id(&u->thread_names, t->serial, t->thread_id,
                                     pidns_inner_tid(&u->pidns, t->native_id)); /* bounds its own failed reads */
        remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE);
    }
    /* Only the thread itself changes its frames: one that has not been on a CPU since the last
     * sample has the same stack, and reading it again would only cost time. */
    bool gil = t->flags & PYTOP_THREAD_GIL;
    kthread_report kernel;
    bool unchanged = false;
    if (seen_before) {
        read_kernel_figures(u, t, gil, gil_held_last(w->g, ts), &kernel);
        unchanged = stack_unchanged(gil, &kernel);
    }
    if (!unchanged || !u->reuse_stacks || u->depth_changed || !samples_reuse_stack(&u->samples, t))
        status = read_stack_again_if_torn(u, t);
    if (fatal_status(status))
        return fail(u->error, status, "reading the stack of thread %llu", (unsigned long long)t->thread_id);
    if (status == PYTOP_OK && !named) name_from_bootstrap(u, t);
    if (!seen_before) read_kernel_figures(u, t, gil, false, &kernel);
    /* --native: the C frames around the Python ones, while the thread is stopped */
    if (status == PYTOP_OK && u->native_frames.dwfl && u->stop.stopped &&
        (status = natives_merge(&u->native_frames, &u->stop, &u->samples, &u->codes, t, monotonic_ns())) != PYTOP_OK &&
        fatal_status(status))
        return fail(u->error, status, "merging the native frames of thread %llu", (unsigned long long)t->thread_id);
    return PYTOP_OK;
}

/* The GIL's holder is read first, as soon after the GIL as can be: read in its turn, after the
 * counts and stacks of the threads before it, it had often let the GIL go and slept again (a
 * pool's 1 ms bursts, read a millisecond late, put the holder at the call it naps in). Its
 * record goes back to its place in the list afterwards (place_holder). The holder of
 * `interp`'s GIL, walked; 0 if none is known here (or its state is another interpreter's). */
uint64_t thread_walk_holder_first(const walk_ctx *w, uint64_t *next) {
    pytop_unwinder *u = w->u;
    const gil_holders *g = w->g;
    sample_buf *b = u->samples.cur;
    for (int k = 0; k < g->count; k++) {
        uint32_t threads = b->thread_count, frames = b->frame_count;
        bool untracked = u->mem.untracked;
        u->mem.untracked = false; /* its stack is read again next sample */
        int status = thread_walk(w, g->tstate[k], next);
        u->mem.untracked = untracked;
        if (status == PYTOP_OK) return g->tstate[k];
        if (fatal_status(status)) return 0;
        b->thread_count = threads; /* another interpreter's, or gone: walked in turn, if at all */
        b->frame_count = frames;
        u->error[0] = '\0';
    }
    return 0;
}

/* The holder's record, walked first at `first`, goes to `first + position`, its place in the
 * list; or away, if the list no longer had it (position < 0). */
void thread_place_holder(sample_buf *b, uint32_t first, int64_t position) {
    pytop_thread holder = b->threads[first];
    uint32_t after = position < 0 ? b->thread_count - first - 1 : (uint32_t)position;
    memmove(&b->threads[first], &b->threads[first + 1], after * sizeof *b->threads);
    if (position < 0) b->thread_count--;
    else b->threads[first + after] = holder;
}
