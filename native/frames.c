/*
 * One thread's frames, innermost first, collected raw as (code object address, instruction
 * byte offset); codes.c turns them into ids and lines afterwards.
 *
 * 3.8-3.10: a chain of heap PyFrameObjects linked by f_back; the offset is f_lasti in bytes.
 * 3.11+: _PyInterpreterFrames linked by `previous`, most of them packed in the thread's
 * data-stack chunks: a frame missing from the prefetch is read together with the memory below
 * it, down to the start of the current chunk (or of its page, for older chunks, generators
 * and shims on the C stack).
 * Frames owned by the C stack or the interpreter itself (3.12+ shims) are not Python code and
 * are skipped; from 3.14 the executable pointer carries tag bits that are masked off.
 *
 * A thread may change its frames while they are read, and then the walk follows garbage: every
 * frame and code pointer must look like one, an owner must be in range, and a chain that comes
 * back on itself is caught (Brent's cycle detection: one saved address, no allocation). Any of
 * these ends the walk as PYTOP_ERR_CORRUPT, which the caller treats as a torn stack.
 */
#include "internal.h"

static int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

/* Brent: remember the frame at steps 1, 2, 4, 8, ...; meeting it again means a cycle. */
typedef struct cycle_check {
    uint64_t saved;
    uint32_t power, steps;
} cycle_check;

static bool comes_back(cycle_check *c, uint64_t frame) {
    if (frame == c->saved) return true;
    if (++c->steps == c->power) {
        c->saved = frame;
        c->power *= 2;
        c->steps = 0;
    }
    return false;
}

/* Reading ahead. Between two reads of a thread's stack only its innermost frames change: the
 * frames outwards of the first one a walk finds where the last read had one are most likely
 * still there. A walk that misses the prefetch (a thread that did not hold the GIL at the last
 * sample, whose stack was not remembered for this one; any walk reading afresh after a torn
 * read) would read them a window or a page at a time, or before 3.11 a frame object at a time,
 * a syscall each: 1,000 for a stack 2,000 frames deep on 3.8, 20 on 3.12. So at a miss, a frame
 * the last read also found has the pages of its frames from there outwards read in one syscall
 * (afresh too while the walk reads afresh: what it holds is then as new as the walk). Only a few
 * misses a walk look for theirs (each looks through the old stack). */
#define AHEAD_MIN_FRAMES 16 /* shorter stacks cost a read or two anyway */
#define AHEAD_TRIES 4
#define AHEAD_MAX_RANGES 1024u

typedef struct read_ahead {
    const pytop_thread *old; /* the thread's record in the previous sample, NULL when none fits */
    int tries;
} read_ahead;

static read_ahead ahead_start(const sample_pair *s, const pytop_thread *t) {
    const pytop_thread *old = samples_previous(s, t);
    bool fits = old && old->serial == t->serial && old->status == PYTOP_OK && old->frame_count >= AHEAD_MIN_FRAMES;
    return (read_ahead){fits ? old : NULL, 0};
}

/* The walk found `need` bytes of the frame at `frame` in none of what the sample holds. */
static int ahead_at_miss(read_ahead *a, remote *mem, const sample_pair *s, uint64_t frame, size_t need) {
    if (!a->old) return PYTOP_OK;
    if (++a->tries > AHEAD_TRIES) {
        a->old = NULL;
        return PYTOP_OK;
    }
    const raw_frame *raw = s->raw + a->old->first_frame;
    uint32_t count = a->old->frame_count, at = 0;
    while (at < count && raw[at].frame != frame) at++;
    if (at == count) return PYTOP_OK;
    a->old = NULL; /* once: what it did not bring changed since, and is read as the walk goes */
    range want[AHEAD_MAX_RANGES];
    size_t n = 0;
    for (; at < count; at++) {
        if (!raw[at].frame) continue; /* a pseudo-frame */
        uint64_t lo = raw[at].frame & ~(uint64_t)(PAGE_SIZE_BYTES - 1);
        uint64_t hi = (raw[at].frame + need + PAGE_SIZE_BYTES - 1) & ~(uint64_t)(PAGE_SIZE_BYTES - 1);
        if (hi <= lo) continue;
        if (n && lo <= want[n - 1].addr + want[n - 1].len && hi >= want[n - 1].addr) { /* frames in a row */
            uint64_t start = lo < want[n - 1].addr ? lo : want[n - 1].addr;
            uint64_t end = hi > want[n - 1].addr + want[n - 1].len ? hi : want[n - 1].addr + want[n - 1].len;
            if (end - start <= MAX_READ_BYTES) {
                want[n - 1].addr = start;
                want[n - 1].len = end - start;
                continue;
            }
        }
        if (n == AHEAD_MAX_RANGES) break;
        want[n++] = (range){lo, hi - lo, NULL, false, 0};
    }
    int status = remote_read_ahead(mem, want, n);
    return status == PYTOP_ERR_NOMEM ? status : PYTOP_OK; /* what failed is read as the walk goes */
}

static int walk_objects(remote *mem, const pytop_layout *L, sample_pair *s, int max_depth, uint64_t frame,
                        pytop_thread *t) {
    size_t need = (size_t)max_i32(max_i32(L->fr_previous, L->fr_code) + 8, L->fr_lasti + 4);
    cycle_check cycle = {0, 1, 0};
    read_ahead ahead = ahead_start(s, t);
    for (int depth = 0; frame; depth++) {
        if (depth >= max_depth) {
            t->flags |= PYTOP_THREAD_TRUNCATED;
            break;
        }
        if (!plausible_pointer(frame) || comes_back(&cycle, frame)) return PYTOP_ERR_CORRUPT;
        int status = PYTOP_OK;
        const uint8_t *h = remote_view_if_held(mem, frame, need, VIEW_TRACK | VIEW_FRAME);
        if (!h && (status = ahead_at_miss(&ahead, mem, s, frame, need)) != PYTOP_OK) return status;
        if (!h) h = remote_view(mem, frame, need, VIEW_TRACK | VIEW_FRAME, &status);
        if (!h) return status;
        /* A frame object no reference holds is off every stack: its code's spare ("zombie")
         * frame, or on the free list, whose links f_back follows into other dead frames. */
        if (load_i64(h, L->ob_refcnt) <= 0) return PYTOP_ERR_CORRUPT;
        uint64_t code = load_u64(h, L->fr_code);
        if (!plausible_pointer(code)) return PYTOP_ERR_CORRUPT;
        int32_t lasti = load_i32(h, L->fr_lasti);
        status = samples_push_frame(s, frame, code, (int64_t)lasti * L->lasti_scale);
        if (status != PYTOP_OK) return status;
        s->cur->raw[s->cur->frame_count - 1].entry = true; /* a call of the eval loop per frame object */
        t->outer_frame = frame;
        frame = load_u64(h, L->fr_previous);
    }
    return PYTOP_OK;
}

static int walk_interpreter(remote *mem, const pytop_layout *L, sample_pair *s, int max_depth,
                            const thread_frames *tf, pytop_thread *t, uint64_t mark, int32_t *marked) {
    uint64_t frame = tf->top_frame;
    size_t need = (size_t)L->fr_header_size;
    /* Frames of the current data-stack chunk lie between its first slot and the stack top. */
    uint64_t first_slot = tf->chunk ? tf->chunk + (uint64_t)L->chunk_data : 0;
    uint64_t tag_mask = L->fr_executable_tag_bits > 0 ? (uint64_t)L->fr_executable_tag_bits : 0;
    /* Skipped frames count towards the bound too, so a run of them cannot spin. */
    int steps = 0, depth = 0;
    cycle_check cycle = {0, 1, 0};
    read_ahead ahead = ahead_start(s, t);
    for (; frame; steps++) {
        if (depth >= max_depth || steps >= 2 * max_depth) {
            t->flags |= PYTOP_THREAD_TRUNCATED;
            break;
        }
        if (!plausible_pointer(frame) || comes_back(&cycle, frame)) return PYTOP_ERR_CORRUPT;
        int status = PYTOP_OK;
        uint64_t floor = frame >= first_slot && frame < tf->stack_top ? first_slot : 0;
        const uint8_t *h = remote_view_if_held(mem, frame, need, VIEW_TRACK | VIEW_FRAME);
        if (!h && (status = ahead_at_miss(&ahead, mem, s, frame, need)) != PYTOP_OK) return status;
        if (!h) h = remote_view_window(mem, frame, need, floor, &status);
        if (!h) return status;
        uint8_t owner = h[L->fr_owner];
        uint64_t next = load_u64(h, L->fr_previous);
        if (L->fr_owner_max >= 0 && owner > L->fr_owner_max) return PYTOP_ERR_CORRUPT;
        /* In the live part of the current chunk a caller's frame lies below its callee's: a
         * link that goes up (or stays) was read from a frame popped and pushed over meanwhile. */
        if (floor && next >= first_slot && next < tf->stack_top && next >= frame) return PYTOP_ERR_CORRUPT;
        if (L->fr_owner_native >= 0 && owner >= L->fr_owner_native && depth > 0)
            s->cur->raw[s->cur->frame_count - 1].entry = true; /* its caller is the eval loop's entry shim */
        if (L->fr_owner_native < 0 || owner < L->fr_owner_native) {
            uint64_t code = load_u64(h, L->fr_code) & ~tag_mask;
            if (!plausible_pointer(code)) return PYTOP_ERR_CORRUPT;
            uint64_t instr = load_u64(h, L->fr_instr_ptr);
            uint64_t first = code + (uint64_t)L->co_code_adaptive;
            status = samples_push_frame(s, frame, code, (int64_t)(instr - first));
            if (status != PYTOP_OK) return status;
            if (frame == mark) *marked = depth;
            if (L->fr_is_entry >= 0 && h[L->fr_is_entry]) s->cur->raw[s->cur->frame_count - 1].entry = true; /* 3.11 */
            t->outer_frame = frame;
            depth++;
        }
        frame = next;
    }
    return PYTOP_OK;
}

int frames_walk(remote *mem, const pytop_layout *L, sample_pair *s, int max_depth,
                const thread_frames *tf, pytop_thread *t, uint64_t mark, int32_t *marked) {
    *marked = -1;
    if (L->frame_model == PYTOP_FRAMES_OBJECTS) return walk_objects(mem, L, s, max_depth, tf->top_frame, t);
    return walk_interpreter(mem, L, s, max_depth, tf, t, mark, marked);
}
