/*
 * Which thread is which from sample to sample.
 *
 * A thread keeps its serial while it is in every sample under the same thread state and ids;
 * one that was not in the previous sample gets a new serial even if its ids were used before
 * (glibc reuses pthread structures, so Python thread ids come back often).
 *
 * A sample can miss a thread (a thread list read while it changed, walked around a thread
 * that was ending): a thread seen within TRACKING_RECENT_SAMPLES samples under the same thread
 * state and ids is the same thread when it comes back.
 *
 * A thread state that its creator has made but the new thread has not yet taken up carries no
 * thread id (3.12+) or its creator's (before), and no frames: it is "unclaimed". It is not a
 * thread of its own yet (counting it would count its creator twice, on 3.8-3.10 down to the
 * creator's TID); when its thread takes it up, it keeps its serial.
 */
#include <string.h>

#include "internal.h"

static bool was_unclaimed(const pytop_thread *old) { return old->flags & PYTOP_THREAD_UNCLAIMED; }

static const recent_thread *lately(const tracking *k, const pytop_thread *t) {
    for (uint32_t i = 0; i < k->recent_count; i++) {
        const recent_thread *r = &k->recent[i];
        if (r->tstate == t->tstate && r->thread_id == t->thread_id && r->native_id == t->native_id &&
            r->state_serial == t->state_serial && t->thread_id)
            return r;
    }
    return NULL;
}

void tracking_assign(tracking *k, const sample_pair *s, pytop_thread *t) {
    const pytop_thread *old = samples_previous(s, t);
    bool same_ids = old && old->thread_id == t->thread_id && old->native_id == t->native_id &&
                    old->state_serial == t->state_serial;
    const recent_thread *before;
    if (same_ids || (old && was_unclaimed(old))) t->serial = old->serial;
    else if ((before = lately(k, t)) != NULL) t->serial = before->serial;
    else t->serial = ++k->next_serial;
}

/* Is the thread with `serial` in `b`? Threads come in the same order: try `at` first. */
static bool in_sample(const sample_buf *b, uint32_t at, uint32_t serial) {
    if (at < b->thread_count && b->threads[at].serial == serial) return true;
    for (uint32_t i = 0; i < b->thread_count; i++)
        if (b->threads[i].serial == serial) return true;
    return false;
}

/* Threads of the previous sample missing from this one are remembered for
 * TRACKING_RECENT_SAMPLES samples; the others are found through the previous sample. */
void tracking_end_sample(tracking *k, const sample_buf *cur, const sample_buf *prev) {
    k->sample_no++;
    for (uint32_t i = 0; i < prev->thread_count; i++) {
        const pytop_thread *t = &prev->threads[i];
        if (!t->thread_id || (t->flags & PYTOP_THREAD_UNCLAIMED) || in_sample(cur, i, t->serial)) continue;
        recent_thread *grown = grow_array(k->recent, &k->recent_cap, k->recent_count + 1ull, sizeof *grown, 16);
        if (!grown) break;
        k->recent = grown;
        k->recent[k->recent_count++] = (recent_thread){t->tstate, t->thread_id, t->native_id, t->state_serial, t->serial,
                                                       k->sample_no};
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < k->recent_count; i++)
        if (k->sample_no - k->recent[i].seen <= TRACKING_RECENT_SAMPLES) k->recent[kept++] = k->recent[i];
    k->recent_count = kept;
}

void tracking_free(tracking *k) {
    free(k->recent);
    memset(k, 0, sizeof *k);
}

/* Was a live thread with `t`'s ids seen lately under another thread state (in the previous
 * sample, or missed since)? Then `t` is a state its creator made and no thread has taken up. */
static bool creator_seen_lately(const tracking *k, const sample_buf *prev, const pytop_thread *t) {
    for (uint32_t i = 0; i < prev->thread_count; i++) {
        const pytop_thread *old = &prev->threads[i];
        if (old->tstate != t->tstate && old->thread_id == t->thread_id && old->native_id == t->native_id &&
            !(old->flags & PYTOP_THREAD_UNCLAIMED))
            return true;
    }
    for (uint32_t i = 0; i < k->recent_count; i++) {
        const recent_thread *r = &k->recent[i];
        if (r->tstate != t->tstate && r->thread_id == t->thread_id && r->native_id == t->native_id) return true;
    }
    return false;
}

/* Was `t`'s state, in the previous sample, a claimed thread's with the same ids and another
 * number? */
static bool ending_in_place(const sample_buf *prev, const pytop_thread *t) {
    for (uint32_t i = 0; i < prev->thread_count; i++) {
        const pytop_thread *old = &prev->threads[i];
        if (old->tstate == t->tstate)
            return old->thread_id == t->thread_id && old->native_id == t->native_id &&
                   old->state_serial != t->state_serial && !(old->flags & PYTOP_THREAD_UNCLAIMED);
    }
    return false;
}

void tracking_mark_unclaimed(const tracking *k, sample_buf *b, const sample_buf *prev, bool has_tids) {
    for (uint32_t i = 0; i < b->thread_count; i++) {
        pytop_thread *t = &b->threads[i];
        /* A thread binds its state by writing its id, then its TID, and unbinds it the same way
         * when it ends: a sample between the two writes sees one without the other. */
        if (t->thread_id == 0 || (has_tids && t->native_id == 0)) {
            t->flags |= PYTOP_THREAD_UNCLAIMED;
            continue;
        }
        if (t->frame_count) continue;
        /* Its state read as its thread frees it (3.8-3.10): the ids of the thread ending in it,
         * its number already garbage. One more sighting of that thread, not a new one: taken for
         * one, each was a thread of its own for three samples, on its TID. */
        if (has_tids && ending_in_place(prev, t)) {
            t->flags |= PYTOP_THREAD_UNCLAIMED;
            continue;
        }
        for (uint32_t j = 0; j < b->thread_count; j++) {
            const pytop_thread *other = &b->threads[j];
            /* One kernel thread is one live thread: a state that says another's TID is being
             * taken up (3.11: the thread writes its id, then its TID, over its creator's; a
             * sample between the two saw a new thread on the acceptor's TID). */
            bool twin = other->thread_id == t->thread_id || (has_tids && other->native_id == t->native_id);
            if (j == i || !twin) continue;
            /* Two states with one id: the one without frames is the new one, or if neither
             * has frames, the one first seen later. */
            if (other->frame_count || other->serial < t->serial) t->flags |= PYTOP_THREAD_UNCLAIMED;
        }
        /* Its creator may be missing from this sample (a list read while it changed): a state
         * with the ids, TID included, of a thread seen lately under another state is its twin
         * still (3.8-3.10). Taken for a thread, it became a second row of its creator's name
         * (the thread-per-request server's "acceptor"), and could take its CPU. */
        if (has_tids && !(t->flags & PYTOP_THREAD_UNCLAIMED) && creator_seen_lately(k, prev, t))
            t->flags |= PYTOP_THREAD_UNCLAIMED;
    }
}
