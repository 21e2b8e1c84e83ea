/*
 * What each sample's time goes to, per thread. Runs on the sampling thread, under the engine's
 * lock.
 *
 * Per thread and sample:
 *   wall  the time since the process's previous sample (skipped slots included, never more than
 *         `cap`), to the stack the thread has now;
 *   gil   the same, when it holds the GIL;
 *   cpu   the kernel's count of the thread's CPU time, each time it moves, to that thread's
 *         own stacks as the samples that found it running saw them (attribute.c). The count
 *         moves only at the scheduler's ticks and at switches, so samples in between wait for it.
 *
 * Per period (every `period` seconds, on a sample that read every thread's figures): the
 * process's own CPU clock counts ended threads too. Its growth, less what was attributed and
 * what non-Python threads used, is CPU of threads that ended before their count was read again,
 * or that no sample saw at all: it goes to the stacks the threads that ended in the period were
 * last seen running with (their tails, by their weights: which of them used it is not known),
 * else is unplaced under theirs, else goes to a row of its own ("threads that ended between
 * samples"). Small remainders (tick noise) are carried to the next period.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

#define REMAINDER_MIN_NS 5000000ll   /* smaller remainders are carried: ticks make a few ms of noise */
/* A running thread's schedstat lags the process clock by up to a scheduler tick (10 ms at the
 * lowest HZ): as many such lags as threads that can be on a CPU at once are not a remainder. */
#define TICK_MAX_NS 10000000ll
#define CARRY_MAX_NS 1000000000ll
/* A thread is often first seen before it has registered itself with threading (it sets
 * Thread._ident a few microseconds after it starts): it is asked again at each of the next
 * samples, then less and less often. Request threads may live only a few milliseconds. */
#define NAME_EAGER_TRIES 16
#define NAME_RETRY_NS 2000000ull
#define NAME_RETRY_MAX_NS 200000000ull
#define NAME_TRIES 48
#define UNSEEN_NAME "threads that ended between samples"
#define BUSY_PARTS 10 /* a thread that used a tenth of an interval computed in it (not a wake-up) */
#define ASLEEP_LATELY 16 /* samples: a thread found asleep holding the GIL this recently (see account_sample) */

/* ---- time (where it goes: attribute.c) ----------------------------------------------------- */

void account_flush(pytop_engine *e, engine_thread *t) {
    if (!t->acc_samples || !t->stack) return;
    weight *w = weights_at(&e->weights, t->stack, t->key);
    if (w) {
        w->samples += t->acc_samples;
        w->running += t->acc_running;
        w->wall_ns += t->acc_wall;
        w->gil_ns += t->acc_gil;
    }
    t->acc_samples = t->acc_running = 0;
    t->acc_wall = t->acc_gil = 0;
}

/* The CPU a thread born since the previous sample used before it was first read: its whole
 * life, less what it was counted for as a non-Python task before it became a Python thread. */
static uint64_t born_cpu(engine_process *P, const pytop_thread *pt) {
    uint64_t before = 0;
    for (uint32_t i = 0; i < P->others.count; i++)
        if (P->others.items[i].tid == pt->native_id) {
            before = P->others.items[i].cpu_ns - P->others.items[i].unlisted_ns;
            P->others.items[i].tid = -pt->native_id; /* counted: not again */
        }
    return pt->cpu_ns > before ? pt->cpu_ns - before : 0;
}

static uint32_t stack_of(pytop_engine *e, uint32_t p, engine_thread *t, const pytop_thread *pt,
                         const pytop_frame *frames) {
    engine_process *P = &e->processes[p];
    if (pt->status != PYTOP_OK) { /* torn: the time goes to the latest stack it had */
        P->d_torn++;
        if (t->stack) {
            stacks_touch(&e->stacks, t->stack);
            return t->stack;
        }
        /* never read whole yet: not "no Python frame", which it had */
        return stacks_intern(&e->stacks, &e->functions, p, PYTOP_STACK_TORN, frames, 0, NULL);
    }
    if ((pt->flags & PYTOP_THREAD_UNCHANGED) && t->stack) {
        stacks_touch(&e->stacks, t->stack);
        return t->stack;
    }
    uint32_t kind = pt->frame_count ? PYTOP_STACK_FRAMES : PYTOP_STACK_EMPTY;
    if (pt->flags & PYTOP_THREAD_TRUNCATED) kind |= PYTOP_STACK_INCOMPLETE;
    return stacks_intern(&e->stacks, &e->functions, p, kind, frames + pt->first_frame, pt->frame_count, &t->path);
}

static uint64_t at_most(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* An interval with the thread running at both ends, holding the GIL at one and on a CPU
 * without it at the other, in another call. Without the GIL it runs C code that let the GIL
 * go (compressing: it uses the interval's CPU), or it only waits, for the GIL or a CPU, in a
 * call that napped (a request handler's `time.sleep`, just over: it uses next to nothing
 * there). The kernel's count of the interval tells which, when it was read at both ends: the
 * GIL's end stands for up to its half of the interval, the other end only for CPU beyond that.
 * (Half of each such interval drew the handlers' requests' CPU to their nap.) */
static void split_by_use(uint64_t used, bool gil_before, uint64_t *before_ns, uint64_t *now_ns) {
    uint64_t *gil_end = gil_before ? before_ns : now_ns, *other_end = gil_before ? now_ns : before_ns;
    uint64_t beyond = used > *gil_end ? used - *gil_end : 0;
    if (beyond < *other_end) *other_end = beyond;
}

void account_sample(pytop_engine *e, uint32_t p, const pytop_sample *s, uint64_t now, uint64_t interval_ns,
                    uint64_t cap_ns) {
    engine_process *P = &e->processes[p];
    uint64_t span = P->last_ns && now > P->last_ns ? now - P->last_ns : interval_ns; /* since the previous sample */
    /* A stall of pytop itself is not all the stack's; an interval the budget stretched is. */
    uint64_t cap = cap_ns > 2 * interval_ns ? cap_ns : 2 * interval_ns;
    uint64_t dt = span < cap ? span : cap;
    bool first_sample = P->sample_no == 0;
    P->sample_no++;
    P->last_ns = now;
    P->d_samples++;
    P->threads_now = 0;
    P->starting_now = 0;
    P->d_gil += s->gil_held != 0;
    P->d_gc_known += s->gc_collecting >= 0;
    P->d_gc += s->gc_collecting == 1;
    if (first_sample) P->cpu_known = kthreads_process_cpu(&P->u->os, &P->cpu_clock) == PYTOP_OK;
    if (first_sample && P->whole_life) P->cpu_clock = 0; /* all it used is the run's */
    for (uint32_t i = 0; i < s->thread_count; i++) {
        const pytop_thread *pt = &s->threads[i];
        if (pt->flags & PYTOP_THREAD_UNCLAIMED) {
            P->starting_now++;
            continue;
        }
        /* Met again after a sample or more without it (the unwinder keeps a missed thread's
         * serial), it is the same thread, on the same row, unless its task has gone: then this
         * is its thread state read from freed memory, reached through a stale link of a list
         * read while it changed. (Taken for the thread, it was a second row of an ended
         * request thread's name, with the same ids and a garbled stack.) */
        engine_thread *t = thread_table_find(e, p, false, pt->serial);
        forgotten_key *forgotten = t ? NULL : thread_table_forgotten(e, p, pt->serial);
        bool back = t ? t->seen + 1 != P->sample_no : forgotten != NULL;
        if (back && kthreads_task_gone(&P->u->os, pt->native_id)) continue;
        P->threads_now++;
        bool created = false;
        if (!t && (t = thread_table_get(e, p, false, pt->serial, &created)) == NULL) continue;
        uint32_t revived = forgotten ? forgotten->key : 0;
        if (revived) {
            t->key = revived;
            forgotten->key = 0;
        }
        bool seen_before = !created && t->seen + 1 == P->sample_no; /* in the previous sample */
        /* (running with the GIL: held, not asleep; see `gil` below) */
        bool ran_before = seen_before && t->running, gil_before = seen_before && t->gil && t->running;
        uint32_t stack_before = t->stack;
        t->thread_id = pt->thread_id;
        t->native_id = pt->native_id;
        t->alive = true;
        t->ended = false;
        t->seen = P->sample_no;
        t->os_state = pt->os_state;
        t->gil = pt->flags & PYTOP_THREAD_GIL;
        t->dirty = true;
        if (pt->status != PYTOP_OK) {
            t->d_errors++;
            t->last_error = pt->status;
        }
        uint32_t stack = stack_of(e, p, t, pt, s->frames);
        if (stack != t->stack) {
            account_flush(e, t);
            t->stack = stack;
        }
        t->acc_wall += dt;
        t->acc_samples++;
        t->d_wall += dt;
        t->d_samples++;
        /* Between two samples the stack changed at an unknown moment: each end's stack that
         * found the thread running gets half of the interval (a late sample, 17 ms after the
         * one before, split a function's last 7 ms and the next one's first 10 ms 17 to 0 when
         * the later stack took it all). Running: it holds the GIL (it runs Python), or its
         * letter says it is on a CPU (C code that let the GIL go); the letter only for an
         * interval with the thread running at both ends: a thread found R once, between two
         * samples that found it asleep, has just woken in the call it slept in, and its CPU
         * goes to what it runs next (a pool's worker, woken from its nap to compute 1 ms).
         * An end that found the GIL held in the very call (the same line) the other end found
         * the thread not running in is a glimpse: waking from a nap there, or about to nap, or
         * taking the GIL back to compute on at that line. It takes the interval's CPU when the
         * count says exactly what that was, never CPU used unseen before. (As full runs, each
         * glimpse of a pool's worker at its `time.sleep` line, 10 ms of weight for microseconds
         * of use, drew the held CPU of its bursts with it: 4-18% of the pool's CPU shown on the
         * nap, where 5% is spent. Dropped, a Python loop that shares the GIL at 100/s, seen in
         * turn waiting and computing at one line, lost its runs.) */
        /* A holder asleep (C code that blocks without letting the GIL go: a C extension waiting on
         * a socket, ctypes.PyDLL) does not run where it is found: as runs, its samples took the
         * CPU of the Python around them (a loop that computes 2 ms and sleeps 2 ms holding the
         * GIL showed 0.43 s of its 0.7 s on the sleep, whose clock said 0.015). */
        bool holds = pt->flags & PYTOP_THREAD_GIL;
        bool gil = holds && !(pt->flags & PYTOP_THREAD_GIL_ASLEEP);
        /* Found holding it awake at the stack where it was found asleep holding it lately, it is
         * waking there or about to sleep again: not running there either. As a run (or a
         * glimpse, taking its interval's CPU), each such sample drew the loop's CPU between two
         * sleeps to the sleep: 20% of it at 1 kHz on 3.15. (A C call that both computes and
         * blocks holding the GIL has its computing go like the thread's runs around it.) */
        bool waking = gil && stack == t->asleep_stack && t->asleep_epoch == e->stacks.epoch &&
                      P->sample_no - t->asleep_seen <= ASLEEP_LATELY;
        if (holds && !gil) {
            t->asleep_stack = stack;
            t->asleep_seen = P->sample_no;
            t->asleep_epoch = e->stacks.epoch; /* (an eviction may give the id to another stack) */
        }
        gil = gil && !waking;
        t->running = !waking && (gil || (pt->flags & PYTOP_THREAD_ON_CPU));
        /* Napping (attribute.c): asleep, and not waiting for the GIL, which only a sample that
         * read its counts can say (on the others a GIL waiter looked napping at the line it
         * waited at, and its waits there were taken for wake-ups from naps: 2.7's request
         * handlers had 27% of query_orders's CPU go to encode_orders beside it, 1 run in 5).
         * Not runnable: 2.7's GIL waiters are woken at each hand-over (every 100 bytecodes) and
         * are found runnable far more often than in the GIL's futex (4-14 of 350 sightings). */
        if (!holds && !t->running && (pt->flags & PYTOP_THREAD_CHECKED) && !(pt->flags & PYTOP_THREAD_GIL_WAIT) &&
            (pt->os_state == 'S' || pt->os_state == 'D')) {
            t->napped_stack = stack;
            t->napped_seen = P->sample_no;
            t->napped_epoch = e->stacks.epoch;
        }
        /* exact: the count's last read was at the previous sample; counted: and it is read again now
         * (not a first read), so the interval's CPU is known. */
        bool exact = t->checked_at + 1 == P->sample_no && !created;
        bool counted = exact && (pt->flags & PYTOP_THREAD_CHECKED) && !(pt->flags & PYTOP_THREAD_NEW_TASK);
        uint64_t before_ns = span / 2, now_ns = span - span / 2;
        if (counted && ran_before && t->running && gil != gil_before && stack != stack_before)
            split_by_use(pt->cpu_delta_ns, gil_before, &before_ns, &now_ns);
        /* On a CPU without the GIL, in the very call the previous sample found it blocked taking
         * the GIL in: it took the GIL, went on, and let it go again in C code that it computes in
         * now (a signer between two hashes, which waits for the GIL far longer than it hashes).
         * Not a wake-up: a thread woken from a nap was asleep, not waiting for the GIL; nor one
         * still in the GIL's futex, or that used less than a tenth of the interval (woken by a
         * hand-over, waiting for a core or taking the GIL: a pool's worker at its nap's line,
         * whose bursts such sightings drew to the nap, 16-23% of a pool's CPU on a loaded
         * machine). It is a lone sighting at both of its intervals, not a glimpse (which is not
         * remembered for CPU used unseen), weighing no more than the CPU each used: the signer
         * hashes 2.5 ms between waits of 20-80 ms for the GIL, so most of its hashing is unseen,
         * and without these sightings it went like its other runs, the calls it makes holding
         * the GIL between two hashes (`leave`, microseconds a call): 0.06-0.2 s of
         * sign_payload's 0.25 s at 100/s, 1 run in 3 on 3.15. Blocked taking the GIL in that call
         * at the two samples before, not one: a handler woken from a nap waits for the GIL there
         * once, then runs the rest of its request and the next ones, and may be found just woken
         * from its next nap at the same line, on a CPU without the GIL, having used milliseconds
         * on the requests. Taken for a hasher, those sightings drew the handlers' unseen CPU to
         * the nap: up to +4.0% of a service's CPU on 3.15 (2 runs in 10 over the +2.5% bound;
         * none such sighting in 35 runs now). The signer waits 20-80 ms for the GIL between two
         * hashes: two samples or more at 100/s, its figures unchanged. */
        bool was_gil_wait = seen_before && exact && t->gil_waits_here >= 2;
        bool computing = !gil && t->running && !ran_before && was_gil_wait && stack == stack_before &&
                         !(pt->flags & PYTOP_THREAD_GIL_WAIT) && counted &&
                         pt->cpu_delta_ns * BUSY_PARTS >= span;
        bool glimpse = seen_before && stack == stack_before && !(ran_before && t->running) && !computing &&
                       !t->computing_sighted;
        /* Running at one end only (holding the GIL there): a lone sighting (attribute.c),
         * remembered by no more than the CPU the interval used, when the count says it. By its
         * half of the interval's time, a signer's sighting in `leave` (held there, preempted in
         * its clock read, while three loops wanted the GIL) weighed 5 ms where one of its
         * hashing weighed the 2.5 ms it used, and its unseen hashing went like them: 30-40% of
         * sign_payload's CPU to `leave` in 1 run in 8 on 3.15 (CI's flake); 0-1% in 10 now.
         * Not free: weighed by half their time, lone sightings of a service's handlers also
         * outweighed the runs of those woken at the nap's line, whose CPU shares are too large
         * when cores are short. With four busy loops beside (twice the test's load), the nap
         * service's nap drew +1.3% of its CPU on the mean on 3.8 (12 runs; 2 over the 2.5%
         * bound), +0.6% with the old weights (1 over); with the test's own load, -0.9% to +0.5%. */
        bool owns = (ran_before && t->running) || glimpse;
        uint64_t used = counted ? pt->cpu_delta_ns : 0;
        if (ran_before && (t->running || gil_before || t->computing_sighted) && before_ns) {
            if (owns) attribute_running(t, stack_before, before_ns, glimpse);
            else if (counted || (t->computing_sighted && !gil_before))
                attribute_lone_sighting(e, t, stack_before, at_most(before_ns, used));
            else attribute_lone_sighting(e, t, stack_before, before_ns);
        }
        if (t->running && (ran_before || gil || computing) && now_ns) {
            if (owns) attribute_running(t, t->stack, now_ns, glimpse);
            else attribute_lone_sighting(e, t, t->stack, counted ? at_most(now_ns, used) : now_ns);
        }
        t->computing_sighted = computing;
        if (holds) { /* (GIL time: holding it, asleep or not, keeps every other thread out) */
            t->acc_gil += dt;
            t->d_gil++;
        }
        if (pt->flags & PYTOP_THREAD_ACTIVE) t->acc_running++;
        if (!(pt->flags & PYTOP_THREAD_CHECKED)) continue;
        uint64_t cpu = pt->cpu_delta_ns;
        /* Read for the first time: a thread born since the previous sample brings its whole
         * life; one known before (its files were reopened) brings nothing new. */
        if (pt->flags & PYTOP_THREAD_NEW_TASK)
            cpu = created && !revived && (!first_sample || P->whole_life) ? born_cpu(P, pt) : 0;
        if (first_sample && (pt->flags & PYTOP_THREAD_NEW_TASK)) P->first_counts_ns += pt->cpu_ns;
        bool gil_wait = pt->flags & PYTOP_THREAD_GIL_WAIT;
        t->gil_waits_here = !gil_wait                                        ? 0
                            : t->gil_wait && exact && stack == stack_before ? t->gil_waits_here + 1
                                                                             : 1;
        t->gil_wait = gil_wait;
        t->d_wait += pt->wait_delta_ns;
        t->pending_wait += pt->wait_delta_ns;
        t->checked_at = P->sample_no;
        if (cpu || (t->unseen_ns && P->u->os.last)) {
            attribute_cpu(e, t, cpu, now, P->u->os.last, exact);
            t->d_cpu += cpu;
            t->period_cpu += cpu;
            P->period_attributed += cpu;
        }
    }
}

static void remember_ended(engine_process *P, const engine_thread *t, uint32_t stacks_epoch) {
    if (P->ended_count >= MAX_ENDED) return;
    ended_thread *ended = grow_array(P->ended, &P->ended_cap, P->ended_count + 1ull, sizeof *ended, 16);
    if (!ended) return;
    P->ended = ended;
    ended_thread *x = &P->ended[P->ended_count++];
    x->key = t->key;
    x->stack = t->stack;
    x->cpu = t->period_cpu;
    x->pending_count = t->pending_count;
    memcpy(x->pending, t->pending, t->pending_count * sizeof *t->pending);
    /* Not seen running since its count last moved: its tail was like its recent runs (a request
     * thread seen once holding the GIL, a lone sighting, then ended). */
    if (!x->pending_count && t->runs_epoch == stacks_epoch) {
        x->pending_count = t->runs_count;
        memcpy(x->pending, t->runs, t->runs_count * sizeof *t->runs);
    }
}

/* A thread missing from this many samples in a row has ended (one sample may miss a live one;
 * and its name may still be taken in them: ending a short request thread at once when its task
 * had gone left 4 of 53 unnamed). At a run's last sample there are no more to wait for: a
 * thread missing from it whose task the kernel no longer has has ended (a thread that ended in
 * the run's last two samples was reported alive beside the one that replaced it). */
#define ENDED_AFTER_SAMPLES 3

static bool has_ended(const engine_process *P, const engine_thread *t) {
    if (!P->active || P->sample_no - t->seen >= ENDED_AFTER_SAMPLES) return true;
    return P->u && P->u->os.last && t->seen != P->sample_no && kthreads_task_gone(&P->u->os, t->native_id);
}

void account_ends(pytop_engine *e, uint32_t p) {
    engine_process *P = &e->processes[p];
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        if (t->process != p || t->native || !t->alive || !has_ended(P, t)) continue;
        t->alive = false;
        t->ended = true;
        t->dirty = true;
        t->closing = P->active; /* a gone process closes no more periods */
        account_flush(e, t);
        attribute_held(e, t); /* it ran between two samples, none with a frame of its */
        remember_ended(P, t, e->stacks.epoch);
        attribute_pending_clear(t);
    }
}

/* The thread's outermost frame, when it is threading's Thread._bootstrap(self). */
static uint64_t bootstrap_frame(const pytop_unwinder *u, const pytop_sample *s, uint32_t serial) {
    for (uint32_t i = 0; i < s->thread_count; i++) {
        const pytop_thread *pt = &s->threads[i];
        if (pt->serial != serial || pt->status != PYTOP_OK || !pt->frame_count || !pt->outer_frame) continue;
        if (codes_is_thread_bootstrap(&u->codes, s->frames[pt->first_frame + pt->frame_count - 1].code_id))
            return pt->outer_frame;
    }
    return 0;
}

void account_names(pytop_engine *e, uint32_t p, const pytop_sample *s, uint64_t now) {
    engine_process *P = &e->processes[p];
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        /* (only by the ids this sample found it under: a thread missing from it may have ended,
         * and its ids be another's by now) */
        if (t->process != p || t->native || t->name || !t->alive || t->seen != P->sample_no ||
            t->name_tries >= NAME_TRIES || now < t->name_retry_at || !t->thread_id)
            continue;
        int status = PYTOP_OK;
        t->name = names_take(&P->u->thread_names, t->ident, t->thread_id);
        if (t->name) {
            t->dirty = true;
            continue;
        }
        uint64_t frame = bootstrap_frame(P->u, s, t->ident);
        int tid = pidns_inner_tid(&P->u->pidns, t->native_id);
        t->name = frame ? names_from_bootstrap(&P->u->thread_names, frame, t->thread_id, tid, &status) : NULL;
        if (!t->name) t->name = names_lookup(&P->u->thread_names, t->thread_id, tid, &status);
        if (t->name && kthreads_task_gone(&P->u->os, t->native_id)) {
            /* It ended since the sample: its ids may be its successor's already (glibc gives the
             * next thread an ended one's pthread_t, the Python thread id, and before 3.8 a Thread
             * says no TID), and the name read may be that successor's. While the task lives,
             * nothing else can have its pthread_t. */
            free(t->name);
            t->name = NULL;
            continue;
        }
        if (t->name) {
            t->dirty = true;
            continue;
        }
        if (fatal_status(status)) return;
        if (++t->name_tries < NAME_EAGER_TRIES) continue;
        uint32_t doubling = t->name_tries - NAME_EAGER_TRIES;
        uint64_t wait = NAME_RETRY_NS << (doubling < 7 ? doubling : 7);
        t->name_retry_at = now + (wait < NAME_RETRY_MAX_NS ? wait : NAME_RETRY_MAX_NS);
    }
}

void account_codes(pytop_engine *e, uint32_t p) {
    code_cache *c = &e->processes[p].u->codes;
    uint32_t count;
    const uint32_t *fresh = codes_take_fresh(c, &count);
    for (uint32_t k = 0; k < count; k++) {
        const code_entry *entry = codes_get(c, fresh[k]);
        /* pseudo-frames are asyncio tasks' (asyncio.c) or native functions' (natives.c). Out of
         * memory: the code has no function (its frames count for no row) rather than a wrong one. */
        if (entry) functions_add_code(&e->functions, p, fresh[k], entry->qualname, entry->filename,
                                      entry->pseudo && !entry->native, entry->native);
    }
}

/* ---- periods ------------------------------------------------------------------------------ */

typedef struct scan_ctx {
    pytop_engine *e;
    uint32_t p;
    uint32_t scan;
} scan_ctx;

/* A task that is not a Python thread: listed from its second scan on, counting from the first
 * in which no thread state waited for its thread (until then it may be a Python thread that has
 * not taken up its state yet; it has no time to show then). */
static void visit_other(void *ctx, const other_kthread *o, uint64_t delta, bool first) {
    scan_ctx *c = ctx;
    pytop_engine *e = c->e;
    if (o->tid <= 0 || first) return;
    bool created;
    engine_thread *t = thread_table_get(e, c->p, true, (uint32_t)o->tid, &created);
    if (!t) return;
    if (created) {
        t->native_id = o->tid;
        t->name = strdup(o->comm);
        t->stack = stacks_intern(&e->stacks, &e->functions, c->p, PYTOP_STACK_NATIVE, NULL, 0, NULL);
    }
    t->alive = true;
    t->seen = c->scan;
    if (!delta) return;
    /* --native: its latest native stack, rather than one row for all such threads */
    uint32_t count = 0;
    const pytop_frame *frames = natives_other_stack(&e->processes[c->p].u->native_frames, o->tid, &count);
    uint32_t stack = frames ? stacks_intern(&e->stacks, &e->functions, c->p, PYTOP_STACK_FRAMES, frames, count, NULL)
                            : 0;
    if (stack) t->stack = stack;
    attribute_add(e, t->key, t->stack, delta);
    t->d_cpu += delta;
    t->dirty = true;
    e->processes[c->p].period_attributed += delta;
}

static int by_value(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static void scan_native_threads(pytop_engine *e, uint32_t p) {
    engine_process *P = &e->processes[p];
    int *tids = malloc((e->thread_count + 1) * sizeof *tids);
    if (!tids) return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->thread_count; i++) {
        const engine_thread *t = &e->threads[i];
        /* Ended ones too: an ending thread's task outlives its thread state a little. */
        if (t->process == p && !t->native && t->native_id > 0) tids[n++] = t->native_id;
    }
    qsort(tids, n, sizeof *tids, by_value);
    scan_ctx ctx = {e, p, P->others.scan + 1};
    /* While a thread state waits for its thread, the new thread's task is not yet known for what
     * it is: new tasks are not listed until no state waits. */
    kthreads_scan_others(&P->u->os, &P->others, tids, n, P->starting_now > 0, visit_other, &ctx);
    free(tids);
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        if (t->process == p && t->native && t->ident && t->alive && t->seen != ctx.scan) {
            t->alive = false;
            t->ended = true;
            t->dirty = true;
        }
    }
}

static engine_thread *unseen_thread(pytop_engine *e, uint32_t p) {
    bool created;
    engine_thread *t = thread_table_get(e, p, true, 0, &created);
    if (t && created) {
        t->name = strdup(UNSEEN_NAME);
        t->stack = stacks_intern(&e->stacks, &e->functions, p, PYTOP_STACK_UNSEEN, NULL, 0, NULL);
    }
    return t;
}

/* How long an ended thread was seen running since its count last moved. */
static uint64_t ended_weight(const ended_thread *x) {
    uint64_t weight = 0;
    for (uint32_t k = 0; k < x->pending_count; k++) weight += x->pending[k].weight_ns;
    return weight;
}

/* An ended thread still in the table (until a drain hands its end over and its period has
 * closed), by its key. */
static engine_thread *thread_by_key(pytop_engine *e, uint32_t key) {
    for (uint32_t i = 0; i < e->thread_count; i++)
        if (e->threads[i].key == key) return &e->threads[i];
    return NULL;
}

/* The CPU an ended thread used after its last count read, estimated: its figures count it. */
static void count_ended(pytop_engine *e, uint32_t key, uint64_t ns, bool unplaced) {
    engine_thread *t = thread_by_key(e, key);
    if (!t) return;
    t->d_cpu += ns;
    if (unplaced) t->d_unplaced += ns;
    t->dirty = true;
}

/* Where the CPU of threads that ended between samples goes (see the top of the file). */
static void place_rest(pytop_engine *e, uint32_t p, uint64_t rest) {
    engine_process *P = &e->processes[p];
    uint64_t runs = 0, cpu = 0;
    for (uint32_t i = 0; i < P->ended_count; i++) {
        runs += ended_weight(&P->ended[i]);
        cpu += P->ended[i].cpu;
    }
    if (runs) { /* the tails: where they were last seen running */
        uint64_t left = rest;
        for (uint32_t i = 0; i < P->ended_count; i++) {
            uint64_t mine = ended_weight(&P->ended[i]);
            if (!mine) continue;
            uint64_t share = (uint64_t)((double)rest * (double)mine / (double)runs);
            if (share > left) share = left;
            attribute_split(e, P->ended[i].key, P->ended[i].pending, P->ended[i].pending_count, mine, share);
            count_ended(e, P->ended[i].key, share, false);
            left -= share;
        }
        rest = left;
    } else if (P->ended_count) { /* like what the ended threads did in the period */
        uint64_t left = rest;
        for (uint32_t i = 0; i < P->ended_count; i++) {
            double part = cpu ? (double)P->ended[i].cpu / (double)cpu : 1.0 / P->ended_count;
            uint64_t share = i + 1 == P->ended_count ? left : (uint64_t)((double)rest * part);
            if (share > left) share = left;
            if (P->ended[i].stack) {
                attribute_unplaced(e, P->ended[i].key, P->ended[i].stack, share);
                count_ended(e, P->ended[i].key, share, true);
            }
            left -= share;
        }
        rest = left;
    }
    if (rest) { /* threads no sample saw at all */
        engine_thread *t = unseen_thread(e, p);
        if (!t) return;
        attribute_add(e, t->key, t->stack, rest);
        t->d_cpu += rest;
        t->dirty = true;
        P->d_unseen += rest;
    }
}

/* How much of a period's remainder the lag of running threads' counts can make. */
static int64_t lag_allowance(const pytop_engine *e, uint32_t p) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN); /* once a period: cheap */
    int64_t ran = 0;
    for (uint32_t i = 0; i < e->thread_count; i++)
        if (e->threads[i].process == p && e->threads[i].period_cpu) ran++;
    if (cpus > 0 && ran > cpus) ran = cpus;
    return REMAINDER_MIN_NS + TICK_MAX_NS * ran;
}

void account_period(pytop_engine *e, uint32_t p) {
    engine_process *P = &e->processes[p];
    scan_native_threads(e, p);
    uint64_t clock = P->u->os.start_clock;
    if (P->u->os.start_clock_known || kthreads_process_cpu(&P->u->os, &clock) == PYTOP_OK) {
        /* The counts were read after `clock`: with a thousand threads on a saturated machine the
         * read lasts a second or more, and what the threads read last used meanwhile is in their
         * counts and not in the clock. The clock's growth over the read bounds it. */
        uint64_t after = 0, read_ns = 0;
        if (P->u->os.start_clock_known && kthreads_process_cpu(&P->u->os, &after) == PYTOP_OK && after > clock)
            read_ns = after - clock;
        /* CPU read and handed back at this close is not yet attributed, but it is not unseen:
         * a later sample gives it with the thread's stack (as the one handed back at the last
         * close came in this period). */
        uint64_t deferred = P->u->os.deferred_ns;
        /* A first read takes long (naming a pool's 1,000 threads: 0.3 s of pytop's CPU, more
         * on a busy machine), and each thread's count is first read somewhere inside it, while
         * the period starts at the clock read before it: what the threads used before their
         * own first reads is in the clock and in no thread's count. At the next close, a rest
         * up to the CPU the process used during the first read is that: before the threads'
         * windows, the process's too (it showed as "threads that ended between samples", 2.4%
         * of a pool in which no thread ended). */
        if (P->cpu_known && P->sample_no == 1 && !P->whole_life && P->cpu_clock > clock) {
            P->first_read_ns = P->cpu_clock - clock; /* this close is in the first sample */
            /* How much of it is known: the counts the first read found, beyond the clock before
             * it, were used before they were read (all of it when no thread ended before; less
             * when some did, whose CPU is in the clock and in no count). */
            uint64_t known_before = P->first_counts_ns > clock ? P->first_counts_ns - clock : 0;
            P->first_before_ns = known_before < P->first_read_ns ? known_before : P->first_read_ns;
        } else if (P->cpu_known) {
            uint64_t used = clock > P->cpu_clock ? clock - P->cpu_clock : 0;
            int64_t rest = (int64_t)used - (int64_t)P->period_attributed + P->carry_ns - (int64_t)deferred +
                           (int64_t)P->deferred_ns;
            /* The part the counts show is taken out whatever the rest: the counts may also lead
             * the clock at this close (its own read lasted long), and that lead is carried as a
             * negative rest. Taken out only up to a positive rest, it met that lead and was lost
             * in it, and came back at the next close as CPU no count saw (25-90 ms of "threads
             * that ended between samples" in a pool of 1,000 where none ended, on a machine busy
             * in bursts). The rest of the first read's CPU is only an upper bound: taken out up
             * to what remains positive. */
            uint64_t known_before = P->first_before_ns < used ? P->first_before_ns : used;
            used -= known_before;
            rest -= (int64_t)known_before;
            uint64_t maybe_before = P->first_read_ns - P->first_before_ns;
            if (maybe_before && rest > 0) {
                uint64_t before = (uint64_t)rest < maybe_before ? (uint64_t)rest : maybe_before;
                before = before < used ? before : used;
                used -= before;
                rest -= (int64_t)before;
            }
            P->first_read_ns = P->first_before_ns = 0;
            /* The run's last close has no next period to take the counts' lead back from: the
             * process used it during this read, so the run's CPU includes it (attributed beyond
             * the clock, it made the figures' sum 1.1 s above the process's CPU of 4.6 s). */
            if (P->u->os.last && rest < 0) {
                uint64_t lead = (uint64_t)-rest < read_ns ? (uint64_t)-rest : read_ns;
                used += lead;
                rest += (int64_t)lead;
            }
            P->d_cpu += used;
            if (rest >= lag_allowance(e, p)) {
                place_rest(e, p, (uint64_t)rest);
                P->carry_ns = 0;
            } else {
                /* A lead is carried whole, or the next period's clock catching up with it would
                 * seem CPU that no count saw (0.3-0.5 s of "threads that ended between samples"
                 * in a pool where none ended); beyond a read's own growth, it is bounded lest it
                 * hide CPU used later. */
                int64_t floor = -CARRY_MAX_NS - (int64_t)read_ns;
                P->carry_ns = rest < floor ? floor : rest;
            }
        }
        P->cpu_clock = clock;
        P->cpu_known = true;
        P->deferred_ns = deferred;
    }
    P->period_attributed = 0;
    P->ended_count = 0;
    for (uint32_t i = 0; i < e->thread_count; i++)
        if (e->threads[i].process == p) {
            e->threads[i].period_cpu = 0;
            e->threads[i].closing = false; /* its share of the remainder is in its figures */
        }
}
