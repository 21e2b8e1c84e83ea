/*
 * One sample: every interpreter (runtime->interpreters.head, then ->next) and every thread state
 * of each (threads.head, then ->next), with the GIL holder, the GC flag, each thread's kernel
 * figures and its frames, resolved to code ids and lines.
 *
 * The GIL: up to 3.11 one lives in _PyRuntime (ceval.gil); from 3.12 each interpreter has its
 * own (_gil), unused by interpreters that share the main one. A thread holds the GIL when a
 * locked GIL names its thread state as last holder. 2.7's GIL is a plain lock that names no
 * holder: _PyThreadState_Current, set only while a thread holds it, stands for the holder.
 *
 * A thread's stack is read again only if the kernel says it may have run since the previous
 * sample (kthreads.c); the GIL holder's figures are read every sample, and its last holder's.
 *
 * A process with a hundred threads would cost a hundred thread-state reads per sample, yet
 * only the GIL holder can have a new stack. So the walk is sparse between full walks: the
 * thread states of the last full walk are kept (known_threads); a sample reads the
 * interpreter's header and the GIL holder's state and stack. A thread due for a read of its
 * counts has them read by the TID it had, and only if they moved are its state and stack
 * read again; the others are taken as they were. Those counts are read before the sample's
 * prefetch (threads_plan_reads), so that the states to read again come with it. A full walk
 * comes every FULL_WALK_CHECKS rounds of counts, and at once when the list's head moved
 * (threads are added at the head), when the GIL holder is not a known thread, or when a known
 * thread's task or state is gone.
 */
#include <string.h>

#include "internal.h"

#define STACK_RETRIES 2 /* a stack torn twice in a row is reported as such */
#define WALK_AGAIN 100  /* internal: a sparse walk found the list changed */
#define FULL_WALK_CHECKS 10 /* a full walk at least every this many rounds of counts */
#define MAX_REREADS 16      /* stacks of known threads that moved read again per sample (defer_rereads) */
#define LIST_RETRIES 2  /* so is a thread list that changed under us three times */

typedef struct gil_holders {
    uint64_t tstate[MAX_GILS]; /* the thread holding each GIL that is held */
    int count;
    uint64_t last[MAX_GILS];   /* each GIL's last holder, whether it still holds it or not */
    int reads;
} gil_holders;

static bool holds_gil(const gil_holders *g, uint64_t tstate) {
    for (int k = 0; k < g->count; k++)
        if (g->tstate[k] == tstate) return true;
    return false;
}

/* Did `tstate` hold a GIL last, even if none holds it now? It ran Python since it took it. */
static bool held_gil_last(const gil_holders *g, uint64_t tstate) {
    for (int k = 0; k < g->reads; k++)
        if (g->last[k] == tstate) return true;
    return false;
}

static int read_u64(pytop_unwinder *u, uint64_t addr, uint64_t *out) {
    int status;
    const uint8_t *p = remote_view(&u->mem, addr, 8, VIEW_TRACK, &status);
    if (p) *out = load_u64(p, 0);
    return status;
}

static int read_i32(pytop_unwinder *u, uint64_t addr, int32_t *out) {
    int status;
    const uint8_t *p = remote_view(&u->mem, addr, 4, VIEW_TRACK, &status);
    if (p) *out = load_i32(p, 0);
    return status;
}

/* The GIL's hand-overs since the previous sample read it (see gil_watch): one is explained when
 * its last holder changed (to the thread this sample sees), none otherwise; any more, and some
 * thread held it in between that no sample saw. */
static void watch_switches(pytop_unwinder *u, int k, uint64_t at, uint64_t switches, uint64_t holder) {
    gil_watch *w = &u->gils[k];
    uint64_t explained = holder != w->holder ? 1 : 0;
    if (w->at == at && switches - w->switches > explained) u->os.ran_unseen = true;
    *w = (gil_watch){.at = at, .switches = switches, .holder = holder};
}

static int read_gil(pytop_unwinder *u, uint64_t base, int32_t locked_off, int32_t holder_off,
                    int32_t switches_off, gil_holders *g) {
    if (holder_off < 0) return PYTOP_OK;
    int32_t locked = 1; /* 2.7: no flag; the current thread state is set only while its thread holds the lock */
    uint64_t holder = 0, switches = 0;
    int status = locked_off >= 0 ? read_i32(u, base + (uint64_t)locked_off, &locked) : PYTOP_OK;
    if (status == PYTOP_OK) status = read_u64(u, base + (uint64_t)holder_off, &holder);
    if (status == PYTOP_OK && switches_off >= 0) status = read_u64(u, base + (uint64_t)switches_off, &switches);
    if (status != PYTOP_OK) return status;
    if (locked && holder && g->count < MAX_GILS) g->tstate[g->count++] = holder;
    if (g->reads < MAX_GILS) {
        if (switches_off >= 0) watch_switches(u, g->reads, base + (uint64_t)holder_off, switches, holder);
        g->last[g->reads++] = holder;
    }
    return status;
}

static int read_gc_flag(pytop_unwinder *u, uint64_t addr) {
    int32_t collecting = 0;
    int status = read_i32(u, addr, &collecting);
    if (status != PYTOP_OK) return status;
    if (u->gc_collecting < 0) u->gc_collecting = 0;
    if (collecting) u->gc_collecting = 1;
    return PYTOP_OK;
}

/* Where the thread's frames start, from its PyThreadState at `ts`. */
static int thread_frames_of(pytop_unwinder *u, uint64_t ts, thread_frames *tf) {
    const pytop_layout *L = &u->L;
    int status = PYTOP_OK;
    *tf = (thread_frames){0, 0, 0};
    if (L->ts_cframe >= 0) { /* 3.11-3.12: tstate->cframe->current_frame */
        uint64_t cframe = 0;
        status = read_u64(u, ts + (uint64_t)L->ts_cframe, &cframe);
        if (status == PYTOP_OK && cframe)
            status = read_u64(u, cframe + (uint64_t)L->cf_current_frame, &tf->top_frame);
    } else {
        status = read_u64(u, ts + (uint64_t)L->ts_frame, &tf->top_frame);
    }
    if (status == PYTOP_OK && L->ts_datastack_chunk >= 0 && L->ts_datastack_top >= 0) {
        status = read_u64(u, ts + (uint64_t)L->ts_datastack_chunk, &tf->chunk);
        if (status == PYTOP_OK) status = read_u64(u, ts + (uint64_t)L->ts_datastack_top, &tf->stack_top);
    }
    return status;
}

static int native_id_of(pytop_unwinder *u, pytop_thread *t) {
    const pytop_layout *L = &u->L;
    t->native_id = 0;
    if (L->ts_native_thread_id >= 0) {
        uint64_t v = 0;
        int status = read_u64(u, t->tstate + (uint64_t)L->ts_native_thread_id, &v);
        if (status == PYTOP_OK && v <= INT32_MAX) t->native_id = pidns_host_tid(&u->pidns, (int)v, u->os.sample_no);
        return status;
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
        if (read_i32(u, t->thread_id + (uint64_t)L->pthread_tid, &v) == PYTOP_OK && v > 0)
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
static int resolve_ids(pytop_unwinder *u, pytop_thread *t) {
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

static int read_stack(pytop_unwinder *u, pytop_thread *t) {
    thread_frames tf;
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
    status = thread_frames_of(u, t->tstate, &tf);
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
        status = resolve_ids(u, t);
        if (status == PYTOP_OK) status = t->status;
    }
    if (status == PYTOP_OK && cut_short(u, t)) status = PYTOP_ERR_CORRUPT; /* torn: read again */
    if (status == PYTOP_OK && marked >= 0 && task_id) status = insert_pseudo_frame(u, t, (uint32_t)marked + 1, task_id);
    t->status = status;
    return status;
}

/* How many bytes of a PyThreadState the walk reads: its fields come in one read. (The asyncio
 * fields, ~1 KB in, are read apart, and only for threads whose stack is read again.) */
static size_t tstate_span(const pytop_unwinder *u) {
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

/* A thread state read while its thread ends may already be freed memory: it must point back
 * at its interpreter, and its link must look like a pointer. */
static int walk_thread(pytop_unwinder *u, uint64_t ts, uint64_t interp, int64_t interp_id,
                       const gil_holders *g, uint64_t *next) {
    const pytop_layout *L = &u->L;
    uint64_t thread_id = 0, owner = 0, unique_id = 0;
    if (!plausible_pointer(ts)) return PYTOP_ERR_CORRUPT;
    int status;
    if (!remote_view_kept(&u->mem, ts, tstate_span(u), &status)) return status;
    status = read_u64(u, ts + (uint64_t)L->ts_next, next);
    if (status == PYTOP_OK) status = read_u64(u, ts + (uint64_t)L->ts_thread_id, &thread_id);
    if (status == PYTOP_OK) status = read_u64(u, ts + (uint64_t)L->ts_interp, &owner);
    if (status == PYTOP_OK && L->ts_unique_id >= 0) status = read_u64(u, ts + (uint64_t)L->ts_unique_id, &unique_id);
    if (status == PYTOP_OK && (owner != interp || (*next && !plausible_pointer(*next)))) status = PYTOP_ERR_CORRUPT;
    if (status != PYTOP_OK) return status;
    pytop_thread *t = samples_push_thread(&u->samples);
    if (!t) return fail(u->error, PYTOP_ERR_NOMEM, "out of memory for threads");
    t->thread_id = thread_id;
    t->state_serial = (uint32_t)unique_id;
    t->tstate = ts;
    t->interp_id = interp_id;
    t->first_frame = u->samples.cur->frame_count;
    if ((status = native_id_of(u, t)) != PYTOP_OK) return status;
    tracking_assign(&u->track, &u->samples, t);
    if (holds_gil(g, ts)) t->flags |= PYTOP_THREAD_GIL;
    /* A thread not in the previous sample is named first, then its stack is read, then its
     * counts, whose first read opens its files (~40 us): a thread per request may live a
     * millisecond and be seen once, near its end, and its Thread is freed when it returns.
     * Threading's registry has it once it runs; before that, its bootstrap frame does. */
    const pytop_thread *old = samples_previous(&u->samples, t);
    bool seen_before = old && old->serial == t->serial;
    bool named = false;
    if (!seen_before && thread_id) {
        named = names_read_new_by_id(&u->thread_names, t->serial, thread_id); /* bounds its own failed reads */
        remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE);
    }
    /* Only the thread itself changes its frames: one that has not been on a CPU since the last
     * sample has the same stack, and reading it again would only cost time. */
    bool gil = t->flags & PYTOP_THREAD_GIL;
    kthread_report kernel;
    bool unchanged = false;
    if (seen_before) {
        read_kernel_figures(u, t, gil, held_gil_last(g, ts), &kernel);
        unchanged = stack_unchanged(gil, &kernel);
    }
    if (!unchanged || !u->reuse_stacks || u->depth_changed || !samples_reuse_stack(&u->samples, t)) {
        remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_THREAD); /* retries included */
        status = read_stack(u, t);
        /* The thread changed its stack while we read it: again, from fresh memory. */
        for (int retry = 0; retry < STACK_RETRIES && (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT); retry++) {
            fresh_mark mark = remote_begin_fresh(&u->mem);
            status = read_stack(u, t);
            remote_end_fresh(&u->mem, mark);
        }
        remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE); /* back to the sample's bound */
        t->frame_count = u->samples.cur->frame_count - t->first_frame;
    }
    if (fatal_status(status))
        return fail(u->error, status, "reading the stack of thread %llu", (unsigned long long)thread_id);
    if (status == PYTOP_OK && !named && first_full_stack(u, t) &&
        codes_is_thread_bootstrap(&u->codes, u->samples.cur->frames[t->first_frame + t->frame_count - 1].code_id))
    {
        names_read_new(&u->thread_names, t->serial, t->outer_frame, thread_id); /* bounds its own failed reads */
        remote_allow_failures(&u->mem, MAX_FAILED_READS_PER_SAMPLE);
    }
    if (!seen_before) read_kernel_figures(u, t, gil, false, &kernel);
    /* --native: the C frames around the Python ones, while the thread is stopped */
    if (status == PYTOP_OK && u->native_frames.dwfl && u->stop.stopped &&
        (status = natives_merge(&u->native_frames, &u->stop, &u->samples, &u->codes, t, monotonic_ns())) != PYTOP_OK &&
        fatal_status(status))
        return fail(u->error, status, "merging the native frames of thread %llu", (unsigned long long)thread_id);
    return PYTOP_OK;
}

/* The GIL's holder is read first, as soon after the GIL as can be: read in its turn, after the
 * counts and stacks of the threads before it, it had often let the GIL go and slept again (a
 * pool's 1 ms bursts, read a millisecond late, put the holder at the call it naps in). Its
 * record goes back to its place in the list afterwards (place_holder). The holder of
 * `interp`'s GIL, walked; 0 if none is known here (or its state is another interpreter's). */
static uint64_t walk_holder_first(pytop_unwinder *u, uint64_t interp, int64_t id, const gil_holders *g,
                                  uint64_t *next) {
    sample_buf *b = u->samples.cur;
    for (int k = 0; k < g->count; k++) {
        uint32_t threads = b->thread_count, frames = b->frame_count;
        bool untracked = u->mem.untracked;
        u->mem.untracked = false; /* its stack is read again next sample */
        int status = walk_thread(u, g->tstate[k], interp, id, g, next);
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
static void place_holder(sample_buf *b, uint32_t first, int64_t position) {
    pytop_thread holder = b->threads[first];
    uint32_t after = position < 0 ? b->thread_count - first - 1 : (uint32_t)position;
    memmove(&b->threads[first], &b->threads[first + 1], after * sizeof *b->threads);
    if (position < 0) b->thread_count--;
    else b->threads[first + after] = holder;
}

/* The thread states of one interpreter, from `head`. With `only_holder_tracked`, what is read
 * of threads other than the GIL holder is not remembered for the next prefetch. */
static int walk_thread_list(pytop_unwinder *u, uint64_t interp, int64_t id, const gil_holders *g, uint64_t head,
                            bool only_holder_tracked) {
    uint32_t first = u->samples.cur->thread_count;
    uint64_t holder_next = 0;
    uint64_t holder = walk_holder_first(u, interp, id, g, &holder_next);
    int64_t position = -1;
    uint64_t ts = head;
    for (int n = 0; ts; n++) {
        if (u->samples.cur->thread_count >= MAX_THREADS || n >= MAX_THREADS)
            return fail(u->error, PYTOP_ERR_LIMIT, "more than %d threads (or a cycle in the thread list)", MAX_THREADS);
        uint64_t next_ts = 0;
        if (ts == holder && position < 0) {
            position = n;
            ts = holder_next;
            continue;
        }
        bool untracked = u->mem.untracked;
        if (only_holder_tracked) u->mem.untracked = !holds_gil(g, ts);
        int status = walk_thread(u, ts, interp, id, g, &next_ts);
        u->mem.untracked = untracked;
        if (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT)
            return fail(u->error, status, "cannot read thread state at 0x%llx", (unsigned long long)ts);
        if (status != PYTOP_OK) return status;
        ts = next_ts;
    }
    if (holder) place_holder(u->samples.cur, first, position);
    return PYTOP_OK;
}

/* A thread that ends while the list is walked can leave it pointing at freed memory: the walk
 * starts again from the head, read anew, dropping what the broken walk collected. */
static int walk_threads_of(pytop_unwinder *u, uint64_t interp, int64_t id, const gil_holders *g, uint64_t head,
                           bool only_holder_tracked) {
    uint32_t first_thread = u->samples.cur->thread_count, first_frame = u->samples.cur->frame_count;
    int status = walk_thread_list(u, interp, id, g, head, only_holder_tracked);
    for (int retry = 0; retry < LIST_RETRIES && (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT); retry++) {
        u->samples.cur->thread_count = first_thread;
        u->samples.cur->frame_count = first_frame;
        u->error[0] = '\0';
        fresh_mark mark = remote_begin_fresh(&u->mem);
        status = read_u64(u, interp + (uint64_t)u->L.is_threads_head, &head);
        if (status == PYTOP_OK) status = walk_thread_list(u, interp, id, g, head, only_holder_tracked);
        remote_end_fresh(&u->mem, mark);
    }
    return status;
}

/* ---- sparse walks ---------------------------------------------------------------------- */

static bool known(const known_threads *k, uint64_t tstate) {
    for (uint32_t i = 0; i < k->count; i++)
        if (k->tstates[i] == tstate) return true;
    return false;
}

/* Do the settings let samples walk sparse? Not when every thread is due every sample: at a
 * low rate with few threads. With many, a round spans samples whatever the rate: a sample
 * that walked all 2,000 threads of a pool because the rate was low cost ~10 ms, and a CPU
 * budget that lowered the rate to pay for it made the next samples cost as much (1-3/s). */
static bool sparse_settings(const pytop_unwinder *u) {
    return u->reuse_stacks && u->os.mode == 1 && !u->stop.enabled && kthreads_round_length(&u->os) > 1;
}

/* Whether the settings and the last full walk let this sample walk sparse (the list itself is
 * checked as the walk reads it: can_walk_sparse). */
static bool known_usable(const pytop_unwinder *u) {
    const known_threads *k = &u->known;
    return k->valid && sparse_settings(u) &&
           u->os.sample_no - k->walked_at < FULL_WALK_CHECKS * kthreads_round_length(&u->os);
}

static bool can_walk_sparse(const pytop_unwinder *u, uint64_t interp, uint64_t head, const gil_holders *g) {
    const known_threads *k = &u->known;
    if (!known_usable(u) || k->interp != interp || k->head != head) return false;
    for (int i = 0; i < g->count; i++)
        if (!known(k, g->tstate[i])) return false;
    return true;
}

static void remember_walk(pytop_unwinder *u, uint64_t interp, uint64_t head, uint32_t first_thread) {
    known_threads *k = &u->known;
    const sample_buf *b = u->samples.cur;
    uint32_t n = b->thread_count - first_thread, need = n ? n : 1;
    uint64_t *tstates = grow_array(k->tstates, &k->cap, need, sizeof *tstates, 64);
    if (tstates) k->tstates = tstates;
    uint64_t *cframes = tstates ? grow_array(k->cframes, &k->cframe_cap, need, sizeof *cframes, 64) : NULL;
    if (cframes) k->cframes = cframes;
    known_check *checks = cframes ? grow_array(k->checks, &k->check_cap, need, sizeof *checks, 64) : NULL;
    if (checks) k->checks = checks;
    k->valid = false;
    k->checks_at = 0;
    if (!checks) {
        k->count = 0;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ts = b->threads[first_thread + i].tstate;
        /* A list that did not change keeps where each thread's _PyCFrame was. */
        k->cframes[i] = i < k->count && k->tstates[i] == ts ? k->cframes[i] : 0;
        k->tstates[i] = ts;
    }
    k->interp = interp;
    k->head = head;
    k->count = n;
    k->walked_at = u->os.sample_no;
    k->valid = true;
}

/* A known thread whose stack is not read now: as it was in the previous sample, with its counts
 * if they were read (`r`). False if it cannot be (it was not there, or not in full). */
static bool as_before(pytop_unwinder *u, uint64_t ts, const pytop_thread *old, const kthread_report *r) {
    pytop_thread *t = samples_push_thread(&u->samples);
    if (!t) return false;
    *t = (pytop_thread){.thread_id = old->thread_id, .tstate = ts, .interp_id = old->interp_id, .cpu_ns = old->cpu_ns,
                        .outer_frame = old->outer_frame, .top_frame = old->top_frame, .native_id = old->native_id,
                        .flags = old->flags & PYTOP_THREAD_OS_KNOWN, .first_frame = u->samples.cur->frame_count,
                        .serial = old->serial, .os_state = old->os_state, .state_serial = old->state_serial};
    if (!samples_reuse_stack(&u->samples, t)) {
        u->samples.cur->thread_count--;
        return false;
    }
    if (r && r->checked) {
        t->flags |= PYTOP_THREAD_CHECKED | PYTOP_THREAD_OS_KNOWN | (r->running ? PYTOP_THREAD_ACTIVE : 0u) |
                    (r->on_cpu ? PYTOP_THREAD_ON_CPU : 0u);
        t->cpu_ns = r->cpu_ns;
        t->cpu_delta_ns = r->cpu_delta_ns;
        t->wait_delta_ns = r->wait_delta_ns;
        t->os_state = r->state;
    }
    return true;
}

/* The previous sample's record of the i-th known thread, if it is that thread and complete. */
static const pytop_thread *known_before(const pytop_unwinder *u, uint32_t i) {
    const sample_buf *p = u->samples.prev;
    const pytop_thread *old = i < p->thread_count ? &p->threads[i] : NULL;
    if (!old || old->tstate != u->known.tstates[i] || old->status != PYTOP_OK || !old->native_id ||
        (old->flags & PYTOP_THREAD_UNCLAIMED))
        return NULL;
    return old;
}

/* The states of the known threads listed in `which`, and on 3.11-3.12 the innermost frame
 * pointer of each one's _PyCFrame (a struct on its C stack). Both are usually in hand already:
 * threads_plan_reads() had them read with the prefetch, the _PyCFrame where it was last time.
 * What is not (a _PyCFrame that moved) is read in one syscall per kind. */
static void read_states(pytop_unwinder *u, const uint32_t *which, size_t count, uint64_t *scratch) {
    known_threads *k = &u->known;
    for (size_t j = 0; j < count; j++) scratch[j] = k->tstates[which[j]];
    remote_keep_many(&u->mem, scratch, count, tstate_span(u));
    if (u->L.ts_cframe < 0) return;
    size_t m = 0;
    for (size_t j = 0; j < count; j++) {
        uint64_t cframe = 0;
        if (read_u64(u, k->tstates[which[j]] + (uint64_t)u->L.ts_cframe, &cframe) == PYTOP_OK && cframe) {
            k->cframes[which[j]] = cframe;
            scratch[m++] = cframe + (uint64_t)u->L.cf_current_frame;
        }
    }
    remote_keep_many(&u->mem, scratch, m, 8);
}

/* Known thread i, if it does not hold the GIL now: its counts when due (or when the period asks
 * for every thread's), and whether its stack may have changed (they moved). */
static void check_known(pytop_unwinder *u, uint32_t i, bool held_last, known_check *c) {
    *c = (known_check){.asked = false};
    const pytop_thread *old = known_before(u, i);
    if (!old) return;
    bool last_holder = held_last || (old->flags & PYTOP_THREAD_GIL);
    bool due = kthreads_due(&u->os, old->native_id) || last_holder || kthreads_watched(&u->os, old->native_id);
    if (!due && !u->os.check_all) return;
    kthreads_report(&u->os, old->native_id, last_holder ? KTHREAD_AFTER_GIL : KTHREAD_WHEN_DUE, &c->counts);
    c->asked = true;
    c->moved = c->counts.ran || c->counts.first; /* read for the period too: a move is a move */
}

/* Known threads whose counts moved have their stacks read again: at most MAX_REREADS a sample,
 * taken in turn from where the last sample's stopped. The others hand their counts back
 * (kthreads_defer): their CPU time is told, with their stack, when a later sample reads them. A
 * pool of 2,000 threads wakes ~730 times a second: read again in the sample that saw each move,
 * that cost ~2% of a core whatever the rate, more than the CPU budget left the sampler, so the
 * budget lowered the rate to the floor. With the cap, a sample's cost follows the rate. Returns
 * how many of `moved` are left (in list order). */
static size_t defer_rereads(pytop_unwinder *u, const gil_holders *g, uint32_t *moved, size_t count) {
    known_threads *k = &u->known;
    if (count <= MAX_REREADS || u->os.last) return count;
    size_t start = 0; /* the first moved thread at or after the rotor */
    while (start < count && moved[start] < k->reread_from) start++;
    size_t kept = 0, out = 0;
    uint32_t last_kept = k->reread_from;
    for (size_t n = 0; n < count; n++) {
        size_t j = (start + n) % count;
        uint32_t i = moved[j];
        const pytop_thread *old = known_before(u, i);
        bool must = held_gil_last(g, k->tstates[i]) || !old; /* it ran Python: never deferred */
        if (kept < MAX_REREADS || must) {
            kept++;
            last_kept = i;
            continue;
        }
        kthreads_defer(&u->os, old->native_id);
        k->checks[i].moved = false;
        k->checks[i].asked = false;
        moved[j] = UINT32_MAX;
    }
    k->reread_from = last_kept + 1 < k->count ? last_kept + 1 : 0;
    for (size_t j = 0; j < count; j++)
        if (moved[j] != UINT32_MAX) moved[out++] = moved[j];
    return out;
}

/* Before the prefetch, the counts of the known threads that are due: those that moved have
 * their states (and where their _PyCFrame was) read with the prefetch, not in calls of their
 * own after it, one syscall or two a sample. The counts come first, as they would in
 * walk_known: a state read before them could miss a stack the thread moved to in between.
 * (Which thread holds the GIL is not known yet; its counts, if read here, are the ones the
 * walk gets again: a task asked twice in one sample gets one answer.) */
void threads_plan_reads(pytop_unwinder *u) {
    known_threads *k = &u->known;
    k->checks_at = 0;
    if (!known_usable(u)) return;
    size_t span = tstate_span(u);
    for (uint32_t i = 0; i < k->count; i++) {
        check_known(u, i, false, &k->checks[i]);
        if (!k->checks[i].moved) continue;
        remote_prefetch_also(&u->mem, k->tstates[i], span);
        if (u->L.ts_cframe >= 0 && k->cframes[i])
            remote_prefetch_also(&u->mem, k->cframes[i] + (uint64_t)u->L.cf_current_frame, 8);
    }
    k->checks_at = u->os.sample_no + 1;
}

/* The known threads of `interp` (see the top of the file). Their reads are not remembered for
 * the next prefetch: other threads will be due then. */
static int walk_known(pytop_unwinder *u, uint64_t interp, int64_t id, const gil_holders *g) {
    known_threads *k = &u->known;
    size_t room = k->count ? k->count : 1;
    /* One block: the addresses first, so that they are 8-byte aligned whatever the count. */
    uint64_t *scratch = malloc(room * (sizeof *scratch + sizeof(uint32_t)));
    if (!scratch) return fail(u->error, PYTOP_ERR_NOMEM, "out of memory for threads");
    uint32_t *moved = (uint32_t *)(scratch + room);
    bool planned = k->checks_at == u->os.sample_no + 1;
    int status = PYTOP_OK;
    size_t moved_count = 0;
    /* The holder first (see walk_holder_first); then the counts: they are cheap. */
    uint32_t first = u->samples.cur->thread_count;
    uint64_t holder_next = 0;
    uint64_t holder = walk_holder_first(u, interp, id, g, &holder_next);
    int64_t position = -1;
    for (uint32_t i = 0; i < k->count && status == PYTOP_OK; i++) {
        if (holds_gil(g, k->tstates[i])) continue; /* read with its stack */
        /* The plan came before the GIL was read: its last holder, if not asked then, now. */
        bool held_last = held_gil_last(g, k->tstates[i]);
        if (!planned || (held_last && !k->checks[i].asked)) check_known(u, i, held_last, &k->checks[i]);
        const known_check *c = &k->checks[i];
        if (!c->asked) continue;
        if (!c->counts.checked) status = WALK_AGAIN; /* its task is gone: the list has changed */
        if (c->moved) moved[moved_count++] = i;
    }
    if (status == PYTOP_OK) moved_count = defer_rereads(u, g, moved, moved_count);
    u->mem.untracked = true;
    if (status == PYTOP_OK) read_states(u, moved, moved_count, scratch);
    for (uint32_t i = 0; i < k->count && status == PYTOP_OK; i++) {
        uint64_t ts = k->tstates[i], next;
        if (ts == holder && position < 0) {
            position = i;
            continue;
        }
        const pytop_thread *old = known_before(u, i);
        bool holder = holds_gil(g, ts);
        const known_check *c = &k->checks[i];
        bool read = c->asked && !holder;
        /* A thread whose counts moved has run: perhaps only to wait for the GIL, perhaps one line
         * on in the same frame, or returned and called again into a frame at the same address.
         * Only its stack, read again, tells. */
        if (old && !holder && !(read && c->moved) && as_before(u, ts, old, read ? &c->counts : NULL))
            continue;
        u->mem.untracked = !holder; /* the GIL holder's stack is read again next sample */
        status = walk_thread(u, ts, interp, id, g, &next); /* its counts, if read above, come again */
        u->mem.untracked = true;
        if (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT) status = WALK_AGAIN; /* it ended */
    }
    u->mem.untracked = false;
    free(scratch);
    if (status == PYTOP_OK && holder) {
        if (position < 0) status = WALK_AGAIN; /* the holder is not a known thread: the list changed */
        else place_holder(u->samples.cur, first, position);
    }
    return status;
}

/* The thread states of `interp`, sparse when it can be (see the top of the file). */
static int walk_threads(pytop_unwinder *u, uint64_t interp, int64_t id, const gil_holders *g, uint64_t head,
                        bool only_interpreter) {
    uint32_t first_thread = u->samples.cur->thread_count, first_frame = u->samples.cur->frame_count;
    if (only_interpreter && can_walk_sparse(u, interp, head, g)) {
        int status = walk_known(u, interp, id, g);
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
    bool sparse_next = only_interpreter && sparse_settings(u);
    if (sparse_next && u->known.valid && u->known.interp == interp)
        remote_keep_many(&u->mem, u->known.tstates, u->known.count, tstate_span(u));
    int status = walk_threads_of(u, interp, id, g, head, sparse_next);
    if (status == PYTOP_OK && only_interpreter) remember_walk(u, interp, head, first_thread);
    else u->known.valid = false;
    return status;
}

static int walk_interpreter_state(pytop_unwinder *u, uint64_t interp, gil_holders *g,
                                  uint64_t *generation_sum, uint64_t *next, bool first) {
    const pytop_layout *L = &u->L;
    uint64_t head = 0, id = 0;
    int status = read_u64(u, interp + (uint64_t)L->is_next, next);
    if (status == PYTOP_OK && L->is_id >= 0) status = read_u64(u, interp + (uint64_t)L->is_id, &id); /* 2.7, 3.6: 0 */
    if (status == PYTOP_OK) status = read_u64(u, interp + (uint64_t)L->is_threads_head, &head);
    if (status == PYTOP_OK) status = read_gil(u, interp, L->is_gil_locked, L->is_gil_holder, L->is_gil_switches, g);
    if (status == PYTOP_OK && L->is_gc_collecting >= 0)
        status = read_gc_flag(u, interp + (uint64_t)L->is_gc_collecting);
    if (status == PYTOP_OK && L->is_code_generation >= 0) {
        uint64_t generation = 0;
        status = read_u64(u, interp + (uint64_t)L->is_code_generation, &generation);
        *generation_sum += generation;
    }
    if (status != PYTOP_OK)
        return fail(u->error, status, "cannot read interpreter state at 0x%llx", (unsigned long long)interp);
    return walk_threads(u, interp, (int64_t)id, g, head, first && *next == 0);
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
            int status = resolve_ids(u, t);
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
    int status = read_gil(u, u->runtime, L->rt_gil_locked, L->rt_gil_holder, L->rt_gil_switches, &g);
    if (status == PYTOP_OK && L->rt_gc_collecting >= 0)
        status = read_gc_flag(u, u->runtime + (uint64_t)L->rt_gc_collecting);
    if (status == PYTOP_OK)
        status = read_u64(u, u->runtime + (uint64_t)L->rt_interpreters_head, &interp);
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
    tracking_mark_unclaimed(u->samples.cur, u->L.ts_native_thread_id >= 0 || u->L.pthread_tid >= 0);
    if (u->native_frames.dwfl && u->stop.stopped) { /* --native: the threads that run no Python too */
        status = natives_read_others(&u->native_frames, &u->codes, &u->stop, u->samples.cur, monotonic_ns());
        if (fatal_status(status)) return fail(u->error, status, "reading the native stacks of other threads");
    }
    return resolve_all(u);
}
