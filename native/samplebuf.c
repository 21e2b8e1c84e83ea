/*
 * One sample's threads and frames, and the sample before it.
 *
 * Nothing here allocates per frame: the thread lists of the two samples swap roles each sample,
 * and their frames live in one arena that grows to what they need. A thread that has not run
 * since the previous sample keeps its stack where it is in the arena (its record points at it);
 * a stack read anew is appended. So a sample costs what changed, not the size of every stack:
 * copying the frames of threads that had not run was most of a sample's time with a 50,000-frame
 * stack asleep, or with 2,000 idle threads. What no thread of either sample points at any more is
 * garbage, compacted away once it outgrows the frames in use.
 */
#include <string.h>

#include "internal.h"

#define COMPACT_SLACK 65536u /* garbage tolerated before compacting, beside as much as is in use */

void samples_init(sample_pair *s) {
    memset(s, 0, sizeof *s);
    s->cur = &s->bufs[0];
    s->prev = &s->bufs[1];
}

void samples_free(sample_pair *s) {
    for (int i = 0; i < 2; i++) free(s->bufs[i].threads);
    free(s->raw);
    free(s->frames);
    memset(s, 0, sizeof *s);
}

static void alias_arena(sample_pair *s) {
    for (int i = 0; i < 2; i++) {
        s->bufs[i].raw = s->raw;
        s->bufs[i].frames = s->frames;
    }
}

/* Move the frames of `b`'s threads to the start of a fresh arena, in order; false (and nothing
 * changed) when memory runs out. */
static bool compact(sample_pair *s, sample_buf *b, uint32_t live) {
    uint32_t cap = 256;
    while (cap < live + 1) cap *= 2;
    raw_frame *raw = malloc(cap * sizeof *raw);
    pytop_frame *frames = malloc(cap * sizeof *frames);
    if (!raw || !frames) {
        free(raw);
        free(frames);
        return false;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < b->thread_count; i++) {
        pytop_thread *t = &b->threads[i];
        if (t->frame_count) {
            memcpy(raw + at, s->raw + t->first_frame, t->frame_count * sizeof *raw);
            memcpy(frames + at, s->frames + t->first_frame, t->frame_count * sizeof *frames);
        }
        t->first_frame = at;
        at += t->frame_count;
    }
    free(s->raw);
    free(s->frames);
    s->raw = raw;
    s->frames = frames;
    s->frame_cap = cap;
    b->frame_count = at;
    alias_arena(s);
    return true;
}

void samples_next(sample_pair *s) {
    sample_buf *older = s->prev;
    s->prev = s->cur;
    s->cur = older;
    s->cur->thread_count = 0;
    /* The previous sample's frames are all that the new one may point at. */
    uint32_t live = 0;
    for (uint32_t i = 0; i < s->prev->thread_count; i++) live += s->prev->threads[i].frame_count;
    if (s->prev->frame_count > 2u * live + COMPACT_SLACK) compact(s, s->prev, live);
    s->cur->frame_count = s->prev->frame_count;
}

void samples_drop(sample_pair *s) {
    sample_buf *failed = s->cur;
    s->cur = s->prev;
    s->prev = failed;
    failed->thread_count = 0;
    failed->frame_count = s->cur->frame_count; /* what the failed sample appended is garbage */
}

pytop_thread *samples_push_thread(sample_pair *s) {
    sample_buf *b = s->cur;
    pytop_thread *threads = grow_array(b->threads, &b->thread_cap, b->thread_count + 1ull, sizeof *threads, 16);
    if (!threads) return NULL;
    b->threads = threads;
    pytop_thread *t = &b->threads[b->thread_count++];
    memset(t, 0, sizeof *t);
    return t;
}

static int reserve_frames(sample_pair *s, uint32_t more) {
    sample_buf *b = s->cur;
    if (b->frame_count + more <= s->frame_cap) return PYTOP_OK;
    if (more > UINT32_MAX / 4 - b->frame_count) return PYTOP_ERR_LIMIT;
    uint32_t cap = s->frame_cap ? s->frame_cap : 256;
    while (cap < b->frame_count + more) cap *= 2;
    raw_frame *raw = realloc(s->raw, cap * sizeof *raw);
    if (!raw) return PYTOP_ERR_NOMEM;
    s->raw = raw;
    pytop_frame *frames = realloc(s->frames, cap * sizeof *frames);
    if (frames) {
        s->frames = frames;
        s->frame_cap = cap;
    }
    alias_arena(s);
    return frames ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

int samples_push_frame(sample_pair *s, uint64_t frame, uint64_t code, int64_t offset) {
    int status = reserve_frames(s, 1);
    if (status != PYTOP_OK) return status;
    /* An offset that cannot be right is kept as "unknown" and makes its code entry suspect. */
    if (offset < -2 || offset > INT32_MAX) offset = INT32_MAX;
    s->cur->raw[s->cur->frame_count++] = (raw_frame){code, frame, (int32_t)offset, false};
    return PYTOP_OK;
}

const pytop_thread *samples_previous(const sample_pair *s, const pytop_thread *t) {
    const sample_buf *p = s->prev;
    /* Threads usually come in the same order, or one place on: the GIL's holder is read first. */
    uint32_t guess = s->cur->thread_count - 1;
    if (guess < p->thread_count && p->threads[guess].tstate == t->tstate) return &p->threads[guess];
    if (guess && guess - 1 < p->thread_count && p->threads[guess - 1].tstate == t->tstate)
        return &p->threads[guess - 1];
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].tstate == t->tstate) return &p->threads[i];
    return NULL;
}

bool samples_reuse_stack(sample_pair *s, pytop_thread *t) {
    const pytop_thread *old = samples_previous(s, t);
    if (!old || old->thread_id != t->thread_id || old->native_id != t->native_id ||
        old->state_serial != t->state_serial || old->status != PYTOP_OK)
        return false;
    t->first_frame = old->first_frame;
    t->frame_count = old->frame_count;
    t->flags |= PYTOP_THREAD_UNCHANGED | (old->flags & PYTOP_THREAD_TRUNCATED);
    t->outer_frame = old->outer_frame;
    t->top_frame = old->top_frame;
    return true;
}
