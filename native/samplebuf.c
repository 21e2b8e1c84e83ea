/*
 * One sample's threads and frames, and the sample before it.
 *
 * Nothing here allocates per frame: the two buffers grow to the largest sample seen and are
 * reused, swapping roles each sample. The previous one serves threads that have not run since:
 * their stacks are copied instead of read.
 */
#include <string.h>

#include "internal.h"

void samples_init(sample_pair *s) {
    memset(s, 0, sizeof *s);
    s->cur = &s->bufs[0];
    s->prev = &s->bufs[1];
}

void samples_free(sample_pair *s) {
    for (int i = 0; i < 2; i++) {
        free(s->bufs[i].threads);
        free(s->bufs[i].raw);
        free(s->bufs[i].frames);
    }
    memset(s, 0, sizeof *s);
}

void samples_next(sample_pair *s) {
    sample_buf *older = s->prev;
    s->prev = s->cur;
    s->cur = older;
    s->cur->thread_count = 0;
    s->cur->frame_count = 0;
}

void samples_drop(sample_pair *s) {
    sample_buf *failed = s->cur;
    s->cur = s->prev;
    s->prev = failed;
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

static int reserve_frames(sample_buf *b, uint32_t more) {
    if (b->frame_count + more <= b->frame_cap) return PYTOP_OK;
    if (more > UINT32_MAX / 4 - b->frame_count) return PYTOP_ERR_LIMIT;
    uint32_t cap = b->frame_cap ? b->frame_cap : 256;
    while (cap < b->frame_count + more) cap *= 2;
    raw_frame *raw = realloc(b->raw, cap * sizeof *raw);
    if (!raw) return PYTOP_ERR_NOMEM;
    b->raw = raw;
    pytop_frame *frames = realloc(b->frames, cap * sizeof *frames);
    if (!frames) return PYTOP_ERR_NOMEM;
    b->frames = frames;
    b->frame_cap = cap;
    return PYTOP_OK;
}

int samples_push_frame(sample_pair *s, uint64_t code, int64_t offset) {
    int status = reserve_frames(s->cur, 1);
    if (status != PYTOP_OK) return status;
    /* An offset that cannot be right is kept as "unknown" and makes its code entry suspect. */
    if (offset < -2 || offset > INT32_MAX) offset = INT32_MAX;
    s->cur->raw[s->cur->frame_count++] = (raw_frame){code, (int32_t)offset};
    return PYTOP_OK;
}

const pytop_thread *samples_previous(const sample_pair *s, const pytop_thread *t) {
    const sample_buf *p = s->prev;
    uint32_t guess = s->cur->thread_count - 1; /* threads usually come in the same order */
    if (guess < p->thread_count && p->threads[guess].tstate == t->tstate) return &p->threads[guess];
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].tstate == t->tstate) return &p->threads[i];
    return NULL;
}

bool samples_reuse_stack(sample_pair *s, pytop_thread *t) {
    const pytop_thread *old = samples_previous(s, t);
    if (!old || old->thread_id != t->thread_id || old->native_id != t->native_id ||
        old->state_serial != t->state_serial || old->status != PYTOP_OK)
        return false;
    if (reserve_frames(s->cur, old->frame_count) != PYTOP_OK) return false;
    sample_buf *b = s->cur;
    memcpy(b->raw + b->frame_count, s->prev->raw + old->first_frame, old->frame_count * sizeof *b->raw);
    memcpy(b->frames + b->frame_count, s->prev->frames + old->first_frame, old->frame_count * sizeof *b->frames);
    b->frame_count += old->frame_count;
    t->flags |= PYTOP_THREAD_UNCHANGED | (old->flags & PYTOP_THREAD_TRUNCATED);
    t->outer_frame = old->outer_frame;
    t->top_frame = old->top_frame;
    return true;
}
