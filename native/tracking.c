/*
 * Which thread is which from sample to sample, and each thread's figures since the last reset.
 *
 * A thread keeps its serial while it is in every sample under the same thread state and ids;
 * one that was not in the previous sample gets a new serial even if its ids were used before
 * (glibc reuses pthread structures, so Python thread ids come back often). Figures are kept
 * here, per serial, because at 1 kHz with a hundred threads doing it in Python would cost a
 * core; the sampler reads them once per refresh. Finished threads are kept up to a bound.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_FINISHED_THREADS 1000

/* A thread state that its creator has made but the new thread has not yet taken up carries no
 * thread id (3.12+) or its creator's (before): when it gets its own, it is the same thread. */
static bool unclaimed(const sample_buf *b, const pytop_thread *t) {
    if (t->thread_id == 0) return true;
    for (uint32_t i = 0; i < b->thread_count; i++)
        if (&b->threads[i] != t && b->threads[i].thread_id == t->thread_id) return true;
    return false;
}

void tracking_assign_serial(pytop_unwinder *u, pytop_thread *t) {
    const pytop_thread *old = previous_thread(u, t);
    bool same_ids = old && old->thread_id == t->thread_id && old->native_id == t->native_id;
    if (same_ids || (old && unclaimed(u->prev, old))) t->serial = old->serial;
    else t->serial = ++u->track.next_serial;
}

static thread_stat_entry *entry_for(thread_tracking *k, const pytop_thread *t) {
    /* Threads come in the same order sample after sample: try where this one was last time. */
    if (k->hint < k->count && k->entries[k->hint].stat.serial == t->serial) return &k->entries[k->hint++];
    for (uint32_t i = 0; i < k->count; i++)
        if (k->entries[i].stat.serial == t->serial) {
            k->hint = i + 1;
            return &k->entries[i];
        }
    thread_stat_entry *entries = grow_array(k->entries, &k->cap, k->count + 1ull, sizeof *entries, 64);
    if (!entries) return NULL;
    k->entries = entries;
    thread_stat_entry *e = &k->entries[k->count++];
    memset(e, 0, sizeof *e);
    e->stat.serial = t->serial;
    return e;
}

/* Forget the finished threads seen longest ago, beyond the bound. */
static void prune(thread_tracking *k) {
    uint32_t finished = 0;
    for (uint32_t i = 0; i < k->count; i++) finished += k->entries[i].last_seen != k->sample_no;
    while (finished > MAX_FINISHED_THREADS) {
        uint32_t oldest = UINT32_MAX, at = 0;
        for (uint32_t i = 0; i < k->count; i++)
            if (k->entries[i].last_seen != k->sample_no && k->entries[i].last_seen < oldest) {
                oldest = k->entries[i].last_seen;
                at = i;
            }
        k->entries[at] = k->entries[--k->count];
        finished--;
    }
}

void tracking_count(pytop_unwinder *u) {
    thread_tracking *k = &u->track;
    const sample_buf *b = u->cur;
    k->sample_no++;
    k->hint = 0;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        const pytop_thread *t = &b->threads[i];
        thread_stat_entry *e = entry_for(k, t);
        if (!e) continue;
        e->stat.thread_id = t->thread_id; /* the latest: a new thread's ids settle once it runs */
        e->stat.native_id = t->native_id;
        e->stat.samples++;
        e->stat.active += (t->flags & PYTOP_THREAD_ACTIVE) != 0;
        e->stat.gil += (t->flags & PYTOP_THREAD_GIL) != 0;
        e->stat.top_code = t->frame_count && t->status == PYTOP_OK ? b->frames[t->first_frame].code_id : 0;
        e->last_seen = k->sample_no;
    }
    if (k->count > b->thread_count + MAX_FINISHED_THREADS) prune(k);
}

int pytop_thread_stats(pytop_unwinder *u, pytop_thread_stat *out, uint32_t capacity, uint32_t *count) {
    pthread_mutex_lock(&u->lock);
    thread_tracking *k = &u->track;
    *count = k->count;
    for (uint32_t i = 0; i < k->count && i < capacity; i++) {
        out[i] = k->entries[i].stat;
        out[i].alive = k->entries[i].last_seen == k->sample_no;
    }
    pthread_mutex_unlock(&u->lock);
    return PYTOP_OK;
}

void pytop_reset_thread_stats(pytop_unwinder *u) {
    pthread_mutex_lock(&u->lock);
    thread_tracking *k = &u->track;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < k->count; i++) {
        thread_stat_entry *e = &k->entries[i];
        if (e->last_seen != k->sample_no) continue; /* finished: gone with its figures */
        e->stat.samples = e->stat.active = e->stat.gil = 0;
        k->entries[kept++] = *e;
    }
    k->count = kept;
    pthread_mutex_unlock(&u->lock);
}
