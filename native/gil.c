/*
 * The GIL's holder, for one sample. Up to 3.11 one GIL lives in _PyRuntime (ceval.gil); from
 * 3.12 each interpreter has its own (_gil), unused by interpreters that share the main one. A
 * thread holds the GIL when a locked GIL names its thread state as last holder. 2.7's GIL is a
 * plain lock that names no holder: _PyThreadState_Current, set only while a thread holds it,
 * stands for the holder. Each GIL's count of hand-overs tells whether some thread held it
 * unseen between two samples.
 */
#include "internal.h"

bool gil_holds(const gil_holders *g, uint64_t tstate) {
    for (int k = 0; k < g->count; k++)
        if (g->tstate[k] == tstate) return true;
    return false;
}

/* Did `tstate` hold a GIL last, even if none holds it now? It ran Python since it took it. */
bool gil_held_last(const gil_holders *g, uint64_t tstate) {
    for (int k = 0; k < g->reads; k++)
        if (g->last[k] == tstate) return true;
    return false;
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

int gil_read(pytop_unwinder *u, uint64_t base, int32_t locked_off, int32_t holder_off, int32_t switches_off,
             gil_holders *g) {
    if (holder_off < 0) return PYTOP_OK;
    int32_t locked = 1; /* 2.7: no flag; the current thread state is set only while its thread holds the lock */
    uint64_t holder = 0, switches = 0;
    int status = locked_off >= 0 ? unwinder_read_i32(u, base + (uint64_t)locked_off, &locked) : PYTOP_OK;
    if (status == PYTOP_OK) status = unwinder_read_u64(u, base + (uint64_t)holder_off, &holder);
    if (status == PYTOP_OK && switches_off >= 0) status = unwinder_read_u64(u, base + (uint64_t)switches_off, &switches);
    if (status != PYTOP_OK) return status;
    if (locked && holder && g->count < MAX_GILS) g->tstate[g->count++] = holder;
    if (g->reads < MAX_GILS) {
        if (switches_off >= 0) watch_switches(u, g->reads, base + (uint64_t)holder_off, switches, holder);
        g->last[g->reads++] = holder;
    }
    return status;
}

/* A thread blocked in the kernel on one of these words is waiting to take the GIL (in
 * take_gil, or in drop_gil for a taker to come: 3.x; 2.7: on its lock). Found there at both
 * ends of a stretch at one line, it stayed in that call: what CPU it used meanwhile (2.7's
 * waiters wake at each hand-over and race for the lock) was used there, not in whole requests
 * run in between, as a thread found napping twice at one line may have done. */
static void note_range(gil_waits *w, uint64_t start, uint64_t size) {
    if (!start || !size) return;
    for (int k = 0; k < w->count; k++)
        if (w->start[k] == start) return;
    int k = w->count < MAX_GILS ? w->count++ : (int)(start % MAX_GILS); /* full: an old one makes room */
    w->start[k] = start;
    w->end[k] = start + size;
}

int gil_note_waits(pytop_unwinder *u, uint64_t base, bool interpreter) {
    const pytop_layout *L = &u->L;
    if (L->gil_waits_size <= 0) return PYTOP_OK;
    int32_t at = interpreter ? L->is_gil_waits : L->rt_gil_waits;
    if (at >= 0) note_range(&u->waits, base + (uint64_t)at, (uint64_t)L->gil_waits_size);
    if (!interpreter && L->rt_gil_lock >= 0 && !u->waits.lock_27) { /* made once, with the first thread */
        int status = unwinder_read_u64(u, base + (uint64_t)L->rt_gil_lock, &u->waits.lock_27);
        if (status != PYTOP_OK) return status;
        note_range(&u->waits, u->waits.lock_27, (uint64_t)L->gil_waits_size);
    }
    return PYTOP_OK;
}

bool gil_waited_on(const pytop_unwinder *u, uint64_t futex) {
    for (int k = 0; futex && k < u->waits.count; k++)
        if (futex >= u->waits.start[k] && futex < u->waits.end[k]) return true;
    return false;
}

/* 2.7's lock is a POSIX semaphore: one 64-bit word, its count in the low half and in the high
 * half the threads inside its wait (glibc's 64-bit sem_t; musl keeps its waiters there too). A
 * thread stays counted from its first failed try until it takes the lock, through every
 * wake-up in between. An impossible count (another layout) counts none. */
int gil_count_waiters_27(pytop_unwinder *u, const gil_holders *g) {
    u->waits.waiters_27 = 0;
    u->waits.holder_27 = g->reads ? g->last[0] : 0;
    if (!u->waits.lock_27) return PYTOP_OK;
    uint64_t word = 0;
    int status = unwinder_read_u64(u, u->waits.lock_27, &word);
    if (status == PYTOP_OK && (word >> 32) <= MAX_THREADS) u->waits.waiters_27 = (uint32_t)(word >> 32);
    return status;
}

/* Is `t` on a CPU without the GIL? Without it a thread runs no bytecode: it is in C code that
 * let it go, or racing to take it back. */
static bool on_cpu_without_gil(const pytop_thread *t) {
    return (t->flags & PYTOP_THREAD_ON_CPU) && !(t->flags & (PYTOP_THREAD_GIL | PYTOP_THREAD_GIL_WAIT)) &&
           t->status == PYTOP_OK && t->frame_count;
}

/* 2.7's waiters are woken at each hand-over (every 100 instructions of the holder) and race for
 * the lock, mostly without sleeping: found on a CPU far more often than blocked on it, they were
 * not told from nappers and C code (4 to 14 of 350 sightings of a spinner waiting). The lock
 * counts its waiters. When every thread found on a CPU without the GIL can be one of them
 * (beside those found blocked on it), all are; when there are more such threads than waiters,
 * C code is among them, and none is marked. The GIL must have stayed with the holder the
 * sample began with: one that took it since runs Python, not found holding it. */
void gil_mark_racing_waiters_27(pytop_unwinder *u) {
    const pytop_layout *L = &u->L;
    if (!u->waits.lock_27 || !u->waits.waiters_27 || L->rt_gil_holder < 0) return;
    sample_buf *b = u->samples.cur;
    uint32_t blocked = 0, racing = 0;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        if (b->threads[i].flags & PYTOP_THREAD_GIL_WAIT) blocked++;
        else if (on_cpu_without_gil(&b->threads[i])) racing++;
    }
    if (!racing || blocked + racing > u->waits.waiters_27) return;
    uint64_t holder = 0;
    if (remote_read(&u->mem, u->runtime + (uint64_t)L->rt_gil_holder, &holder, sizeof holder) != PYTOP_OK ||
        holder != u->waits.holder_27)
        return;
    for (uint32_t i = 0; i < b->thread_count; i++)
        if (on_cpu_without_gil(&b->threads[i])) b->threads[i].flags |= PYTOP_THREAD_GIL_WAIT;
}
