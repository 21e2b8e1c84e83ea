/*
 * Sparse walks of a process's thread list.
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
#include <stdlib.h>

#include "internal.h"

#define FULL_WALK_CHECKS 10 /* a full walk at least every this many rounds of counts */
#define MAX_REREADS 16      /* stacks of known threads that moved read again per sample (defer_rereads) */

static bool known(const known_threads *k, uint64_t tstate) {
    for (uint32_t i = 0; i < k->count; i++)
        if (k->tstates[i] == tstate) return true;
    return false;
}

/* Do the settings let samples walk sparse? Not when every thread is due every sample: at a
 * low rate with few threads. With many, a round spans samples whatever the rate: a sample
 * that walked all 2,000 threads of a pool because the rate was low cost ~10 ms, and a CPU
 * budget that lowered the rate to pay for it made the next samples cost as much (1-3/s). */
bool sparse_allowed(const pytop_unwinder *u) {
    return u->reuse_stacks && u->os.mode == 1 && !u->stop.enabled && kthreads_round_length(&u->os) > 1;
}

/* Whether the settings and the last full walk let this sample walk sparse (the list itself is
 * checked as the walk reads it: can_walk_sparse). */
static bool known_usable(const pytop_unwinder *u) {
    const known_threads *k = &u->known;
    return k->valid && sparse_allowed(u) &&
           u->os.sample_no - k->walked_at < FULL_WALK_CHECKS * kthreads_round_length(&u->os);
}

bool sparse_can_walk(const walk_ctx *w, uint64_t head) {
    const known_threads *k = &w->u->known;
    if (!known_usable(w->u) || k->interp != w->interp || k->head != head) return false;
    for (int i = 0; i < w->g->count; i++)
        if (!known(k, w->g->tstate[i])) return false;
    return true;
}

void sparse_remember_walk(pytop_unwinder *u, uint64_t interp, uint64_t head, uint32_t first_thread) {
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
                    (r->on_cpu ? PYTOP_THREAD_ON_CPU : 0u) | (gil_waited_on(u, r->futex) ? PYTOP_THREAD_GIL_WAIT : 0u);
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
 * sparse_plan_reads() had them read with the prefetch, the _PyCFrame where it was last time.
 * What is not (a _PyCFrame that moved) is read in one syscall per kind. */
static void read_states(pytop_unwinder *u, const uint32_t *which, size_t count, uint64_t *scratch) {
    known_threads *k = &u->known;
    for (size_t j = 0; j < count; j++) scratch[j] = k->tstates[which[j]];
    remote_keep_many(&u->mem, scratch, count, thread_state_span(u));
    if (u->L.ts_cframe < 0) return;
    size_t m = 0;
    for (size_t j = 0; j < count; j++) {
        uint64_t cframe = 0;
        if (unwinder_read_u64(u, k->tstates[which[j]] + (uint64_t)u->L.ts_cframe, &cframe) == PYTOP_OK && cframe) {
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
        bool must = gil_held_last(g, k->tstates[i]) || !old; /* it ran Python: never deferred */
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
void sparse_plan_reads(pytop_unwinder *u) {
    known_threads *k = &u->known;
    k->checks_at = 0;
    if (!known_usable(u)) return;
    size_t span = thread_state_span(u);
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
int sparse_walk_known(const walk_ctx *w) {
    pytop_unwinder *u = w->u;
    const gil_holders *g = w->g;
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
    uint64_t holder = thread_walk_holder_first(w, &holder_next);
    int64_t position = -1;
    for (uint32_t i = 0; i < k->count && status == PYTOP_OK; i++) {
        if (gil_holds(g, k->tstates[i])) continue; /* read with its stack */
        /* The plan came before the GIL was read: its last holder, if not asked then, now. */
        bool held_last = gil_held_last(g, k->tstates[i]);
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
        bool holder = gil_holds(g, ts);
        const known_check *c = &k->checks[i];
        bool read = c->asked && !holder;
        /* A thread whose counts moved has run: perhaps only to wait for the GIL, perhaps one line
         * on in the same frame, or returned and called again into a frame at the same address.
         * Only its stack, read again, tells. */
        if (old && !holder && !(read && c->moved) && as_before(u, ts, old, read ? &c->counts : NULL))
            continue;
        u->mem.untracked = !holder; /* the GIL holder's stack is read again next sample */
        status = thread_walk(w, ts, &next); /* its counts, if read above, come again */
        u->mem.untracked = true;
        if (status == PYTOP_ERR_READ || status == PYTOP_ERR_CORRUPT) status = WALK_AGAIN; /* it ended */
    }
    u->mem.untracked = false;
    free(scratch);
    if (status == PYTOP_OK && holder) {
        if (position < 0) status = WALK_AGAIN; /* the holder is not a known thread: the list changed */
        else thread_place_holder(u->samples.cur, first, position);
    }
    return status;
}
