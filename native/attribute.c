/*
 * Where a thread's CPU time goes: only ever to that thread's own stacks. Runs on the sampling
 * thread, under the engine's lock (account.c calls it).
 *
 * The kernel counts each thread's CPU time; the samples only say how it splits over the
 * thread's stacks. A sample is evidence of where the thread spends CPU only if it finds the
 * thread running: holding the GIL (it runs Python, or is about to), or on a CPU by its state
 * letter (C code that let the GIL go: compressing, hashing). A thread waiting for the GIL, or
 * asleep, is where it will run next, not where it ran. So:
 *
 *   - each interval between two samples counts half for the stack at either end that found the
 *     thread running (the trapezoid rule: a late sample no longer hands the whole gap to the
 *     stack it found); these runs wait (`pending`) until the thread's count moves, and its
 *     CPU since the last move is split over them by time;
 *   - CPU that no sample saw the thread use (it ran between two samples and slept again) was
 *     used inside the frames its stacks had in common before and after (their deepest common
 *     node, the anchor): it goes to the stacks the thread itself was lately seen running with
 *     through that same function, else (see below) to a pseudo-frame "(ran between samples,
 *     not seen)" under the anchor: shown, with the thread, never given to another thread's
 *     function;
 *   - a lone sighting (the GIL held at one end, the thread not running at the other, in
 *     another call) is one of the thread's runs, not the owner of its interval's CPU: that CPU
 *     goes like the thread's runs through the two stacks' common frames, this one among them.
 *     A thread that takes the GIL for microseconds (the calls around a C function that lets
 *     it go: a compressor's, a signer's) is seen holding it now and then; as the owner of its
 *     intervals, each such sighting took the next interval's whole C call (8.5 ms of zlib on
 *     the timing call after it), and the signer's own CPU went 80% to that call. It weighs
 *     among the runs no more than the CPU its interval used (account.c);
 *   - a glimpse (the GIL held at the very line the other end found the thread not running at:
 *     waking from a nap, about to nap, or taking the GIL back at a line it computes on) is a
 *     run for its interval's CPU only, when the count was read at both ends; it is not where
 *     CPU used unseen before goes, nor remembered for it;
 *   - when the thread has no such runs yet (a pool's worker that naps and computes a
 *     millisecond, at a low rate; a thread-per-request server's thread, read before its first
 *     frame and after its last), the CPU is held until a sample sees the thread run, and goes
 *     with that; unplaced if none does within HOLD_MAX_NS or before the thread ends. A thread
 *     with no Python frame all that while runs C code: its CPU goes to its own frameless stack.
 *
 * (An earlier rule gave unseen CPU to stacks any thread of the process was seen running under
 * the same caller: for threads started by threading that caller is Thread.run, so a thread
 * compressing in C had its CPU shown on another thread's Python loop.)
 */
#include "engine.h"

/* Frames looked through between an anchor and the runs under it, and between two stacks and
 * their common node: deeper differences count as having nothing in common. */
#define MAX_DESCENT 4096
#define NAPPED_LATELY 100 /* samples since it was last found napping at a line, for anchor_of */

void attribute_add(pytop_engine *e, uint32_t key, uint32_t stack, uint64_t ns) {
    weight *w = weights_at(&e->weights, stack, key);
    if (w) w->cpu_ns += ns;
}

/* Runs are kept in time order, so that time the thread spent waiting for a CPU can be taken
 * off the oldest (see drop_waiting). */
static void pending_add(engine_thread *t, uint32_t stack, uint64_t ns, bool firm) {
    if (!ns) ns = 1; /* a sample with no time before it still says the stack ran */
    t->pending_total += ns;
    pending_run *last = t->pending_count ? &t->pending[t->pending_count - 1] : NULL;
    if (last && last->stack == stack && last->firm == firm) {
        last->weight_ns += ns;
        return;
    }
    if (t->pending_count < PENDING_RUNS) t->pending[t->pending_count++] = (pending_run){stack, firm, ns};
    else t->pending[PENDING_RUNS - 1].weight_ns += ns; /* full: the last one stands for the rest */
}

/* The thread's own recent runs, kept past its count's moves: where its unseen CPU likely went. */
static void remember_run(const stack_table *s, engine_thread *t, uint32_t stack, uint64_t ns) {
    if (t->runs_epoch != s->epoch) { /* evictions since: the ids may name other stacks now */
        t->runs_count = t->runs_next = 0;
        t->runs_epoch = s->epoch;
    }
    for (uint32_t i = 0; i < t->runs_count; i++)
        if (t->runs[i].stack == stack) {
            t->runs[i].weight_ns += ns ? ns : 1;
            return;
        }
    t->runs[t->runs_next] = (pending_run){stack, true, ns ? ns : 1};
    t->runs_next = (t->runs_next + 1) % THREAD_RUNS;
    if (t->runs_count < THREAD_RUNS) t->runs_count++;
}

void attribute_running(engine_thread *t, uint32_t stack, uint64_t ns, bool glimpse) {
    pending_add(t, stack, ns, !glimpse); /* a glimpse is not where its unseen CPU goes */
    if (!glimpse) t->pending_firm++;
}

/* The runs the count has just moved for, remembered by the CPU they are given (`ns`, the count's
 * move, split by their time net of run-queue wait): what the thread was seen using there. A
 * thread woken from a nap waits for a CPU, or holds the GIL preempted, at the nap's line, found
 * there by samples in a row while it uses microseconds. Remembered by their time (net of the
 * wait, which the kernel tells only in sum, taken off the oldest runs), those runs weighed 4 ms
 * for 10 us of use, and drew the request's CPU that no sample saw to the nap: 2.5-2.9% of a
 * service's CPU on a nap whose clock said 1%, with more threads than cores wanting a CPU. */
static void remember_pending(const stack_table *s, engine_thread *t, uint64_t ns) {
    if (!t->pending_total) return;
    for (uint32_t i = 0; i < t->pending_count; i++) {
        const pending_run *run = &t->pending[i];
        if (!run->firm || !run->weight_ns) continue;
        uint64_t used = (uint64_t)((double)ns * (double)run->weight_ns / (double)t->pending_total);
        if (used) remember_run(s, t, run->stack, used); /* none used: no evidence of where it runs */
    }
}

/* Split `ns` over runs by their weights (the last gets what rounding leaves). */
void attribute_split(pytop_engine *e, uint32_t key, const pending_run *runs, uint32_t count, uint64_t total,
                     uint64_t ns) {
    uint64_t left = ns;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t share = i + 1 == count ? left : (uint64_t)((double)ns * (double)runs[i].weight_ns / (double)total);
        if (share > left) share = left;
        attribute_add(e, key, runs[i].stack, share);
        left -= share;
    }
}

/* A thread that holds the GIL but was preempted keeps being seen with its stack while it does
 * not run. The kernel counts that time as run-queue wait, told when the thread gets a CPU
 * again; the wait came right after its count last moved (a switch moves it), so it is taken
 * off the oldest runs: else a function preempted 15 ms just before it returned got 15 ms of
 * weight against the next function's 1 ms, and most of the CPU that followed. */
static void drop_waiting(engine_thread *t) {
    uint64_t wait = t->pending_wait;
    for (uint32_t i = 0; i < t->pending_count && wait; i++) {
        uint64_t cut = t->pending[i].weight_ns < wait ? t->pending[i].weight_ns : wait;
        t->pending[i].weight_ns -= cut;
        t->pending_total -= cut;
        wait -= cut;
    }
}

void attribute_pending_clear(engine_thread *t) {
    t->pending_count = t->pending_firm = 0;
    t->pending_total = t->pending_wait = 0;
}

/* `stack`'s node at `depth` (its ancestor there, or itself), within MAX_DESCENT steps; 0 if
 * it is not that deep or too far down. */
static uint32_t ancestor_at(const stack_table *s, uint32_t stack, uint32_t depth) {
    for (uint32_t steps = 0; steps <= MAX_DESCENT; steps++) {
        const stack_node *n = stacks_get(s, stack);
        if (!n || n->depth < depth) return 0;
        if (n->depth == depth) return stack;
        stack = n->parent;
    }
    return 0;
}

/* The deepest node two stacks share (the frames a thread stayed in between them); 0 if none
 * within MAX_DESCENT steps. */
static uint32_t common_node(const stack_table *s, uint32_t a, uint32_t b) {
    const stack_node *na = stacks_get(s, a), *nb = stacks_get(s, b);
    if (!na || !nb) return 0;
    if (na->depth > nb->depth) a = ancestor_at(s, a, nb->depth);
    else if (nb->depth > na->depth) b = ancestor_at(s, b, na->depth);
    for (uint32_t steps = 0; a && b && a != b && steps <= MAX_DESCENT; steps++) {
        a = s->nodes[a - 1].parent;
        b = s->nodes[b - 1].parent;
    }
    return a == b ? a : 0;
}

/* Does `stack` run through the same call of the same function as `anchor`: the same caller
 * node, the same code, at any line (a thread naps at one line of a function and computes at
 * another)? Every stack does for anchor 0. */
static bool through(const stack_table *s, uint32_t stack, uint32_t anchor) {
    if (!anchor) return true;
    const stack_node *a = stacks_get(s, anchor);
    uint32_t at = a ? ancestor_at(s, stack, a->depth) : 0;
    if (!at) return false;
    const stack_node *n = &s->nodes[at - 1];
    return at == anchor || (n->parent == a->parent && n->code_id == a->code_id && n->process == a->process &&
                            n->kind == a->kind);
}

/* The root of `stack`'s tree (its kind's), 0 past any real depth. */
static uint32_t root_of_stack(const stack_table *s, uint32_t stack) {
    for (uint32_t steps = 0; steps <= DEFAULT_MAX_DEPTH + 1; steps++) {
        const stack_node *n = stacks_get(s, stack);
        if (!n) return 0;
        if (!n->parent) return stack;
        stack = n->parent;
    }
    return 0;
}

/* The thread's own recent runs through `anchor`, into `matching`; their total weight. */
static uint64_t runs_through(const stack_table *s, const engine_thread *t, uint32_t anchor, pending_run *matching,
                             uint32_t *count) {
    uint64_t total = 0;
    *count = 0;
    if (t->runs_epoch != s->epoch) return 0;
    for (uint32_t i = 0; i < t->runs_count; i++)
        if (through(s, t->runs[i].stack, anchor)) {
            matching[(*count)++] = t->runs[i];
            total += t->runs[i].weight_ns;
        }
    return total;
}

/* Split `ns` like the thread's own recent runs through `anchor` (0: any); false if it has none.
 *
 * `napped_in`: both ends found the thread not running in the anchor's very frame (the same
 * stack twice: napping, blocked, waiting for the GIL there). That frame may be a new call of
 * the same function from the same line: a request handler that naps in one request in ten,
 * found napping twice, ran whole requests between, a loop calling a C function that lets the
 * GIL go ran the next call. So the CPU goes like the runs through the caller's call (where the
 * call was made again; still inside it if it was not), else through its caller's, outwards.
 * (Through the nap's call alone, a few runs found there, waking, took the requests' CPU: on
 * the demo's shape at 100 samples a second, 2-9% of the process's CPU went to a nap whose
 * clock said 1%.) */
static bool give_like_runs(pytop_engine *e, engine_thread *t, uint32_t anchor, bool napped_in, uint64_t ns) {
    const stack_table *s = &e->stacks;
    pending_run matching[THREAD_RUNS];
    uint32_t count = 0;
    const stack_node *n = napped_in ? stacks_get(s, anchor) : NULL;
    if (n && n->parent) anchor = n->parent;
    uint64_t total = runs_through(s, t, anchor, matching, &count);
    for (uint32_t steps = 0; !total && napped_in && anchor && steps <= MAX_DESCENT; steps++) {
        n = stacks_get(s, anchor);
        if (!n || !n->parent) break; /* not past the thread's outermost frame */
        anchor = n->parent;
        total = runs_through(s, t, anchor, matching, &count);
    }
    if (total) attribute_split(e, t->key, matching, count, total, ns);
    return total != 0;
}

/* `ns` no sample of the thread can place: a pseudo-frame under `anchor` (0: the root of the
 * thread's stack), counted as the thread's unplaced time. */
static void give_unplaced(pytop_engine *e, engine_thread *t, uint32_t anchor, uint64_t ns) {
    uint32_t under = anchor ? anchor : root_of_stack(&e->stacks, t->stack);
    uint32_t unplaced = under ? stacks_unplaced(&e->stacks, &e->functions, under) : 0;
    attribute_add(e, t->key, unplaced ? unplaced : t->stack, ns);
    t->d_unplaced += ns;
}

/* Has the stack no Python frame (a thread state whose thread is in C: starting, ending)? */
static bool frameless(const stack_table *s, uint32_t stack) {
    const stack_node *n = stacks_get(s, stack);
    return n && (n->kind & 7) == PYTOP_STACK_EMPTY;
}

/* A thread blocked taking the GIL at its previous count read, and blocked on it or holding it
 * at this one, is in the call it waited in (at whatever line: a loop's), unless it went round
 * whole calls between, which the GIL makes slow: its CPU goes like its runs through that call,
 * callees included (a pool's worker found waiting at its nap's line at both ends may have run
 * a burst in a callee between: given to that line alone, in a trial, the bursts went to the
 * nap). 2.7's waiters race for the GIL's lock at each hand-over
 * and use CPU in the call they wait in: found waiting in a request's first step at both ends,
 * at two lines of its loop or at one, their CPU went like their runs through the caller's
 * call, and 0.06-0.07 s of the first step's 0.65 s to the request's next step. The two ends'
 * innermost common call: below `anchor` (their common node), a frame of the same function at
 * both ends, else `anchor`. */
static uint32_t same_call(const stack_table *s, uint32_t anchor, uint32_t before, uint32_t now) {
    const stack_node *a = stacks_get(s, anchor);
    uint32_t b = a ? ancestor_at(s, before, a->depth + 1) : 0, n = a ? ancestor_at(s, now, a->depth + 1) : 0;
    const stack_node *nb = stacks_get(s, b), *nn = stacks_get(s, n);
    if (!nb || !nn || nb->code_id != nn->code_id || nb->kind != nn->kind) return anchor;
    return n;
}

/* Found napping (asleep without the GIL, not waiting for it) by its latest count read. */
static bool napping_now(const stack_table *s, const engine_thread *t) {
    return t->napped_seen == t->checked_at && t->napped_stack == t->stack && t->napped_epoch == s->epoch;
}

/* The frames a thread stayed in between its previous count read and now: where CPU it used
 * unseen meanwhile was spent. 0: nothing known (no Python frame at either end, or only the
 * root in common). `napped_in`: the same stack at both ends, the anchor its innermost frame,
 * neither end waiting to take the GIL back (see same_call). */
static uint32_t anchor_of(const stack_table *s, const engine_thread *t, bool *napped_in) {
    *napped_in = false;
    if (frameless(s, t->stack)) return 0;
    uint32_t before = t->read_stack && !frameless(s, t->read_stack) ? t->read_stack : t->stack;
    uint32_t anchor = common_node(s, before, t->stack);
    const stack_node *n = stacks_get(s, anchor);
    if (!n || !n->parent) return 0;
    *napped_in = anchor == before && anchor == t->stack;
    /* Waiting for the GIL at the line it lately napped at, at both ends: woken from a nap each
     * time, not in one long wait. Between, it may have run whole calls and napped again (a
     * handler's requests of 0.3 ms, a nap in ten): napped in, not the call it waited in (there,
     * the requests' CPU went to the nap: +3.2% of a service's on an idle machine, CI, 3.13). */
    bool woken_twice = *napped_in && t->napped_stack == anchor && t->napped_epoch == s->epoch &&
                       t->napped_seen + NAPPED_LATELY >= t->checked_at;
    /* Napping at neither count read (waiting for the GIL or for a core, or running there): in
     * that call all along, not a nap left and made again. 2.7's GIL waiters, found runnable
     * more often than in the GIL's futex, were taken for nappers, and their CPU went like their
     * runs through the caller: query_orders's to encode_orders beside it, whose long marshal
     * calls weigh more (2.7 idle at 1 kHz: query_orders's mean error -0.105 s -> -0.086 s). */
    bool not_napping = *napped_in && !napping_now(s, t) && !t->read_napped;
    if (((t->read_gil_wait && (t->gil_wait || t->gil)) || not_napping) && !woken_twice) {
        *napped_in = false;
        return same_call(s, anchor, before, t->stack);
    }
    return anchor;
}

/* Held CPU (unseen, and none of the thread's own runs to place it by yet) waits this long for a
 * sample to see the thread run: a pool's worker that naps and computes for a millisecond is
 * seen computing a few times a minute at 50 samples/s. Past it, the CPU is unplaced; a thread
 * with no Python frame all that while (HOLD_FRAMELESS_NS) is running C code, on its own stack. */
#define HOLD_MAX_NS 2000000000ull
#define HOLD_FRAMELESS_NS 500000000ull

static void hold(engine_thread *t, uint32_t anchor, bool napped_in, uint64_t ns, uint64_t now) {
    if (!t->unseen_ns) t->unseen_since = now;
    t->unseen_ns += ns;
    t->unseen_anchor = anchor; /* the latest: a thread that moved on ran inside its new frames */
    t->unseen_napped_in = napped_in;
}

/* Held CPU, past its wait: like the thread's runs through its anchor, else unplaced there (in
 * the caller's call, for a thread found napping in the anchor's frame at both ends: that frame
 * may have been left and made again). */
static void release(pytop_engine *e, engine_thread *t) {
    if (!t->unseen_ns) return;
    if (!give_like_runs(e, t, t->unseen_anchor, t->unseen_napped_in, t->unseen_ns)) {
        const stack_node *n = t->unseen_napped_in ? stacks_get(&e->stacks, t->unseen_anchor) : NULL;
        give_unplaced(e, t, n && n->parent ? n->parent : t->unseen_anchor, t->unseen_ns);
    }
    t->unseen_ns = t->unseen_since = 0;
    t->unseen_anchor = 0;
}

void attribute_cpu(pytop_engine *e, engine_thread *t, uint64_t ns, uint64_t now, bool settle, bool exact) {
    const stack_table *s = &e->stacks;
    drop_waiting(t);
    remember_pending(s, t, ns);
    if (t->pending_total && t->pending_firm) { /* seen running: held CPU goes with it */
        attribute_split(e, t->key, t->pending, t->pending_count, t->pending_total, ns + t->unseen_ns);
        t->unseen_ns = t->unseen_since = 0;
        t->unseen_anchor = 0;
    } else if (t->pending_total && exact) { /* glimpses only: the interval's own CPU */
        attribute_split(e, t->key, t->pending, t->pending_count, t->pending_total, ns);
        if (t->unseen_ns && (settle || now - t->unseen_since >= HOLD_MAX_NS)) release(e, t);
    } else {
        /* It ran and slept again between samples: within the frames it kept meanwhile. */
        bool napped_in;
        uint32_t anchor = anchor_of(s, t, &napped_in);
        if (!give_like_runs(e, t, anchor, napped_in, ns)) hold(t, anchor, napped_in, ns, now);
        if (t->unseen_ns && frameless(s, t->stack) && !settle && now - t->unseen_since >= HOLD_FRAMELESS_NS) {
            attribute_add(e, t->key, t->stack, t->unseen_ns); /* no Python frame for that long: C code */
            t->unseen_ns = t->unseen_since = 0;
            t->unseen_anchor = 0;
        }
        if (settle || now - t->unseen_since >= HOLD_MAX_NS) release(e, t);
    }
    t->read_stack = t->stack;
    t->read_gil_wait = t->gil_wait;
    t->read_napped = napping_now(s, t);
    attribute_pending_clear(t);
}

void attribute_held(pytop_engine *e, engine_thread *t) { release(e, t); }

void attribute_lone_sighting(pytop_engine *e, engine_thread *t, uint32_t stack, uint64_t ns) {
    remember_run(&e->stacks, t, stack, ns);
    if (!t->unseen_ns) return;
    /* Seen running at last: held CPU goes like its runs through the held anchor, else here. */
    if (!give_like_runs(e, t, t->unseen_anchor, t->unseen_napped_in, t->unseen_ns))
        attribute_add(e, t->key, stack, t->unseen_ns);
    t->unseen_ns = t->unseen_since = 0;
    t->unseen_anchor = 0;
}

void attribute_unplaced(pytop_engine *e, uint32_t key, uint32_t stack, uint64_t ns) {
    uint32_t root = root_of_stack(&e->stacks, stack);
    uint32_t unplaced = root ? stacks_unplaced(&e->stacks, &e->functions, root) : 0;
    attribute_add(e, key, unplaced ? unplaced : stack, ns);
}
