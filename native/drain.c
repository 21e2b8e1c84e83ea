/*
 * Handing out what is new: the drain copies, under the lock, everything accumulated since the
 * previous drain into arrays the engine keeps until the next one, then clears it. What Python
 * holds on to (totals since a reset, names) it keeps itself; the engine keeps only live state.
 */
#include <string.h>

#include "engine.h"

/* Room for `need` items in the output array whose pointer is at `field`; false (and the array
 * as it was) when memory runs out. */
static bool room_for(void *field, uint32_t *cap, uint64_t need, size_t size) {
    void *items;
    memcpy(&items, field, sizeof items);
    void *grown = grow_array(items, cap, need ? need : 1, size, 16);
    if (!grown) return false;
    memcpy(field, &grown, sizeof grown);
    return true;
}
#define ROOM(e, field, capfield, count) room_for(&(e)->field, &(e)->capfield, (count), sizeof *(e)->field)

static void drain_processes(pytop_engine *e, pytop_drain *out) {
    for (uint32_t i = 0; i < e->process_count; i++) {
        engine_process *P = &e->processes[i];
        pytop_drain_process *o = &e->out_processes[i];
        *o = (pytop_drain_process){
            .process = i, .pid = P->pid, .status = P->status, .threads = P->threads_now,
            .samples = P->d_samples, .failed = P->d_failed, .gil_samples = P->d_gil, .gc_samples = P->d_gc,
            .gc_known = P->d_gc_known, .torn = P->d_torn, .cpu_ns = P->d_cpu, .unseen_cpu_ns = P->d_unseen,
            .error_at = UINT32_MAX};
        if (P->error_new) {
            o->error_at = text_add(&e->out_text, P->error, ERROR_TEXT_BYTES);
            P->error_new = false;
        }
        P->d_samples = P->d_failed = P->d_gil = P->d_gc = P->d_gc_known = P->d_torn = 0;
        P->d_cpu = P->d_unseen = 0;
    }
    out->processes = e->out_processes;
    out->process_count = e->process_count;
}

static uint32_t count_dirty(const pytop_engine *e) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->thread_count; i++) n += e->threads[i].dirty;
    return n;
}

static void drain_threads(pytop_engine *e, pytop_drain *out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        account_flush(e, t);
        if (!t->dirty) continue;
        pytop_drain_thread *o = &e->out_threads[n++];
        *o = (pytop_drain_thread){
            .thread_id = t->thread_id, .cpu_ns = t->d_cpu, .wall_ns = t->d_wall, .wait_ns = t->d_wait,
            .thread = t->key, .process = t->process, .native_id = t->native_id,
            .flags = (t->alive ? PYTOP_DRAIN_ALIVE : 0u) | (t->native ? PYTOP_DRAIN_NATIVE : 0u) |
                     (t->gil ? PYTOP_DRAIN_GIL : 0u),
            .samples = t->d_samples, .gil_samples = t->d_gil, .errors = t->d_errors, .last_error = t->last_error,
            .stack = t->stack, .name_at = UINT32_MAX, .os_state = t->os_state};
        if (t->name && !t->name_sent) {
            o->name_at = text_add(&e->out_text, t->name, MAX_THREAD_NAME_CHARS * 4);
            o->flags |= PYTOP_DRAIN_NAMED;
            t->name_sent = o->name_at != UINT32_MAX;
        }
        t->d_cpu = t->d_wall = t->d_wait = 0;
        t->d_samples = t->d_gil = t->d_errors = 0;
        t->dirty = false;
    }
    out->threads = e->out_threads;
    out->thread_count = n;
}

static int drain_stacks(pytop_engine *e, pytop_drain *out) {
    stack_table *s = &e->stacks;
    uint32_t count = s->count - s->drained, frames = 0;
    for (uint32_t id = s->drained + 1; id <= s->count; id++) frames += s->stacks[id - 1].count;
    if (!ROOM(e, out_stacks, out_stack_cap, count) || !ROOM(e, out_frames, out_frame_cap, frames))
        return PYTOP_ERR_NOMEM;
    uint32_t at = 0;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t id = s->drained + 1 + k;
        const stack_record *r = &s->stacks[id - 1];
        e->out_stacks[k] = (pytop_drain_stack){id, r->process, at, r->count, r->kind, 0};
        if (r->count) memcpy(e->out_frames + at, s->frames + r->first, r->count * sizeof *s->frames);
        at += r->count;
    }
    s->drained = s->count;
    out->stacks = e->out_stacks;
    out->stack_count = count;
    out->frames = e->out_frames;
    out->frame_count = frames;
    return PYTOP_OK;
}

static int drain_weights(pytop_engine *e, pytop_drain *out) {
    weight_map *m = &e->weights;
    if (!ROOM(e, out_weights, out_weight_cap, m->count)) return PYTOP_ERR_NOMEM;
    for (uint32_t i = 0; i < m->count; i++) {
        const weight *w = &m->items[i];
        e->out_weights[i] = (pytop_drain_weight){w->cpu_ns, w->wall_ns, w->gil_ns, w->stack, w->thread,
                                                 w->samples, w->running};
    }
    out->weights = e->out_weights;
    out->weight_count = m->count;
    weights_clear(m);
    return PYTOP_OK;
}

int pytop_engine_pending_ticks(pytop_engine *e, uint32_t *ticks) {
    if (!e || !ticks) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    *ticks = e->ticks;
    pthread_mutex_unlock(&e->lock);
    return PYTOP_OK;
}

int pytop_engine_drain(pytop_engine *e, pytop_drain *out) {
    if (!e || !out) return PYTOP_ERR_ARGS;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->lock);
    /* The text that records already point into (code names) goes out; names and errors of this
     * drain are added to it. */
    growing_text sent = e->text;
    e->text = e->out_text;
    e->text.size = 0;
    e->out_text = sent;
    pytop_drain_code *codes = e->out_codes;
    uint32_t code_cap = e->out_code_cap;
    e->out_codes = e->codes;
    e->out_code_cap = e->code_cap;
    out->codes = e->out_codes;
    out->code_count = e->code_count;
    e->codes = codes;
    e->code_cap = code_cap;
    e->code_count = 0;
    int status = PYTOP_OK;
    if (!ROOM(e, out_processes, out_process_cap, e->process_count) ||
        !ROOM(e, out_threads, out_thread_cap, count_dirty(e)))
        status = PYTOP_ERR_NOMEM;
    if (status == PYTOP_OK) {
        drain_processes(e, out);
        drain_threads(e, out);
        status = drain_stacks(e, out);
    }
    if (status == PYTOP_OK) status = drain_weights(e, out);
    out->ticks = e->ticks;
    out->late = e->late;
    out->skipped = e->skipped;
    out->slot_seconds = (double)e->slot_ns / 1e9;
    out->rate_now = e->rate_now;
    out->budget_limited = e->rate_now < e->cfg.rate;
    out->first_at = e->first_at;
    out->last_at = e->last_at;
    out->lag = e->lag;
    out->longest_gap = (double)e->longest_gap_ns / 1e9;
    out->cpu_seconds = e->cpu_seconds;
    out->running = e->started && !e->finished;
    out->realtime = e->realtime;
    out->stacks_dropped = e->stacks.dropped;
    out->end_at = e->end[0] ? text_add(&e->out_text, e->end, ERROR_TEXT_BYTES) : UINT32_MAX;
    e->ticks = e->late = e->skipped = 0;
    e->slot_ns = 0;
    e->longest_gap_ns = 0;
    e->first_at = 0;
    account_forget_ended(e);
    out->text = e->out_text.bytes;
    out->text_size = e->out_text.size;
    pthread_mutex_unlock(&e->lock);
    return status;
}
