/*
 * Handing out what is new: the drain copies, under the lock, everything accumulated since the
 * previous drain into arrays the engine keeps until the next one, then clears it. What Python
 * holds on to (totals since a reset, names) it keeps itself; the engine keeps only live state.
 */
#include <string.h>

#include "engine.h"

/* `s` (cut at `max` bytes) appended to the drain's text; its offset, UINT32_MAX if no memory. */
static uint32_t text_add(growing_text *t, const char *s, size_t max) {
    size_t n = strnlen(s, max);
    char *bytes = grow_array(t->bytes, &t->cap, (uint64_t)t->size + n + 1, 1, 4096);
    if (!bytes) return UINT32_MAX;
    t->bytes = bytes;
    memcpy(t->bytes + t->size, s, n);
    t->bytes[t->size + n] = '\0';
    uint32_t at = t->size;
    t->size += (uint32_t)n + 1;
    return at;
}

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

/* Anything but more wall time and samples on the same stack since it was last handed over (a
 * new state letter is news for the threads panel only, which shows whole drains). */
static bool has_news(const engine_thread *t) {
    return t->d_cpu || t->d_wait || t->d_unplaced || t->d_gil || t->d_errors || !t->alive || t->stack != t->sent_stack ||
           t->gil != t->sent_gil || (t->name && !t->name_sent);
}

/* A whole drain leaves out a thread whose only news is time on the stack it was last handed
 * over with, all of that time in its one weight of this drain, with no CPU, GIL or running
 * samples there, and its state letter as it was: its update is that weight, handed over apart
 * (`standing`). A pool of 2,000 napping threads handed all of them over every window, each
 * decoded, taken in and recorded in Python: most of the live view's own CPU. */
static bool stands(pytop_engine *e, const engine_thread *t) {
    if (!t->alive || has_news(t) || t->os_state != t->sent_os_state) return false;
    weight *w = weights_find(&e->weights, t->stack, t->key);
    if (!w || w->samples != t->d_samples || w->wall_ns != t->d_wall || w->cpu_ns || w->gil_ns || w->running)
        return false;
    w->standing = true;
    return true;
}

static void drain_threads(pytop_engine *e, pytop_drain *out, bool whole) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        if (!whole && t->dirty && !has_news(t)) continue; /* its time waits in acc_* and d_* */
        account_flush(e, t);
        if (!t->dirty) continue;
        if (whole && stands(e, t)) {
            t->d_wall = 0;
            t->d_samples = 0;
            t->dirty = false;
            continue;
        }
        pytop_drain_thread *o = &e->out_threads[n++];
        *o = (pytop_drain_thread){
            .thread_id = t->thread_id, .cpu_ns = t->d_cpu, .wall_ns = t->d_wall, .wait_ns = t->d_wait,
            .unplaced_ns = t->d_unplaced,
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
        t->d_cpu = t->d_wall = t->d_wait = t->d_unplaced = 0;
        t->d_samples = t->d_gil = t->d_errors = 0;
        t->dirty = false;
        t->sent_stack = t->stack;
        t->sent_gil = t->gil;
        t->sent_os_state = t->os_state;
    }
    out->threads = e->out_threads;
    out->thread_count = n;
}

/* Functions first met since the previous drain, with their names. */
static int drain_functions(pytop_engine *e, pytop_drain *out) {
    function_table *f = &e->functions;
    uint32_t count = f->fresh_count;
    if (!ROOM(e, out_functions, out_function_cap, count)) return PYTOP_ERR_NOMEM;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t id = f->fresh[k];
        const function_entry *x = &f->entries[id - 1];
        e->out_functions[k] = (pytop_drain_function){id, x->process, x->kind, x->task, x->native, UINT32_MAX, UINT32_MAX};
        if (!x->kind) {
            e->out_functions[k].qualname_at = text_add(&e->out_text, x->qualname, MAX_NAME_CHARS * 4);
            e->out_functions[k].filename_at = text_add(&e->out_text, x->filename, MAX_FILENAME_CHARS * 4);
        }
    }
    f->fresh_count = 0;
    out->functions = e->out_functions;
    out->function_count = count;
    return PYTOP_OK;
}

/* The nodes made since the previous drain, and those evicted and the functions retired since
 * (on the sampling thread: see upkeep_tree). */
static int drain_nodes(pytop_engine *e, pytop_drain *out) {
    stack_table *s = &e->stacks;
    if (!ROOM(e, out_nodes, out_node_cap, s->fresh_count)) return PYTOP_ERR_NOMEM;
    for (uint32_t k = 0; k < s->fresh_count; k++) {
        uint32_t id = s->fresh[k];
        const stack_node *n = &s->nodes[id - 1];
        e->out_nodes[k] = (pytop_drain_node){id, n->parent, n->code_id, n->line, n->process, n->function, n->depth,
                                             (uint8_t)(n->flags & (NODE_FIRST_FUNCTION | NODE_FIRST_LINE)), n->kind,
                                             {0, 0}};
    }
    out->nodes = e->out_nodes;
    out->node_count = s->fresh_count;
    s->fresh_count = e->fresh_counted = 0;
    /* Copied out: the sampling thread adds to the lists as soon as the lock is free. */
    function_table *f = &e->functions;
    if (!ROOM(e, out_evicted, out_evicted_cap, s->evicted_count) || !ROOM(e, out_retired, out_retired_cap, f->retired_count))
        return PYTOP_ERR_NOMEM;
    if (s->evicted_count) memcpy(e->out_evicted, s->evicted, s->evicted_count * sizeof *s->evicted);
    if (f->retired_count) memcpy(e->out_retired, f->retired, f->retired_count * sizeof *f->retired);
    out->evicted = e->out_evicted;
    out->evicted_count = s->evicted_count;
    out->retired = e->out_retired;
    out->retired_count = f->retired_count;
    s->evicted_count = f->retired_count = 0;
    e->drained_clock = s->clock;
    return PYTOP_OK;
}

/* The weights summed per function and per line, before they are cleared. */
static int drain_rows(pytop_engine *e, pytop_drain *out) {
    weight_map *m = &e->weights;
    pytop_leaf_tally *tallies = grow_array(e->drain_tallies, &e->drain_tally_cap, m->count + 1ull, sizeof *tallies, 256);
    if (!tallies) return PYTOP_ERR_NOMEM;
    e->drain_tallies = tallies;
    for (uint32_t i = 0; i < m->count; i++) {
        const weight *w = &m->items[i];
        tallies[i] = (pytop_leaf_tally){w->cpu_ns, w->wall_ns, w->gil_ns, w->stack, w->samples};
    }
    pytop_aggregate sums;
    int status = aggregate_tallies(e->drain_sums, &e->stacks, &e->functions, tallies, m->count,
                                   PYTOP_AGGREGATE_TABLES, &sums);
    if (status != PYTOP_OK) return status;
    out->function_rows = sums.functions;
    out->function_row_count = sums.function_count;
    out->line_rows = sums.lines;
    out->line_row_count = sums.line_count;
    return PYTOP_OK;
}

static int drain_weights(pytop_engine *e, pytop_drain *out) {
    weight_map *m = &e->weights;
    if (!ROOM(e, out_weights, out_weight_cap, m->count) || !ROOM(e, out_standing, out_standing_cap, m->count))
        return PYTOP_ERR_NOMEM;
    uint32_t n = 0, standing = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const weight *w = &m->items[i];
        pytop_drain_weight *o = w->standing ? &e->out_standing[standing++] : &e->out_weights[n++];
        *o = (pytop_drain_weight){w->cpu_ns, w->wall_ns, w->gil_ns, w->stack, w->thread, w->samples, w->running};
    }
    out->weights = e->out_weights;
    out->weight_count = n;
    out->standing = e->out_standing;
    out->standing_count = standing;
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

int pytop_engine_drain(pytop_engine *e, pytop_drain *out, int whole) {
    if (!e || !out) return PYTOP_ERR_ARGS;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->lock);
    e->out_text.size = 0; /* the previous drain's names and errors were handed out */
    int status = PYTOP_OK;
    if (!ROOM(e, out_processes, out_process_cap, e->process_count) ||
        !ROOM(e, out_threads, out_thread_cap, count_dirty(e)))
        status = PYTOP_ERR_NOMEM;
    if (status == PYTOP_OK) {
        drain_processes(e, out);
        drain_threads(e, out, whole != 0); /* first: it adds what the threads hold to the weights */
        status = drain_functions(e, out);
    }
    if (status == PYTOP_OK) status = drain_rows(e, out);
    if (status == PYTOP_OK) status = drain_weights(e, out);
    if (status == PYTOP_OK) status = drain_nodes(e, out);
    out->ticks = e->ticks;
    out->late = e->late;
    out->skipped = e->skipped;
    out->slot_seconds = (double)e->slot_ns / 1e9;
    out->rate_now = e->rate_now;
    out->budget_limited = e->rate_now < e->cfg.rate;
    out->first_at = e->first_at;
    out->last_at = e->last_at;
    out->lag = e->lag;
    out->longest_delay = (double)e->longest_delay_ns / 1e9;
    out->cpu_seconds = e->cpu_seconds;
    out->start_up_cpu = e->start_up_cpu;
    out->running = e->started && !e->finished;
    out->realtime = e->realtime;
    out->stacks_dropped = e->stacks.dropped;
    out->stacks_coarsened = e->stacks.coarsened;
    out->stack_nodes = e->stacks.live;
    out->end_at = e->end[0] ? text_add(&e->out_text, e->end, ERROR_TEXT_BYTES) : UINT32_MAX;
    e->ticks = e->late = e->skipped = 0;
    e->slot_ns = 0;
    e->longest_delay_ns = 0;
    e->first_at = 0;
    thread_table_forget_ended(e);
    out->text = e->out_text.bytes;
    out->text_size = e->out_text.size;
    pthread_mutex_unlock(&e->lock);
    return status;
}
