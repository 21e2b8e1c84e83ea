/*
 * The engine's threads, found by (process, native, ident): open addressing over the array of
 * engine_thread records, rebuilt when it grows or when ended threads leave. On the sampling
 * thread, under the engine's lock.
 */
#include <string.h>

#include "engine.h"

static uint64_t ident_key(uint32_t p, bool native, uint32_t ident) {
    return (uint64_t)p << 33 | (uint64_t)native << 32 | ident;
}

static int rebuild_slots(pytop_engine *e, uint32_t mask) {
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    for (uint32_t i = 0; i < e->thread_count; i++) {
        const engine_thread *t = &e->threads[i];
        uint32_t s = hash_slot(ident_key(t->process, t->native, t->ident), mask);
        while (slots[s]) s = (s + 1) & mask;
        slots[s] = i + 1;
    }
    free(e->thread_slots);
    e->thread_slots = slots;
    e->thread_slot_mask = mask;
    return PYTOP_OK;
}

engine_thread *thread_table_find(pytop_engine *e, uint32_t p, bool native, uint32_t ident) {
    uint64_t key = ident_key(p, native, ident);
    if (!e->thread_slots) return NULL;
    for (uint32_t s = hash_slot(key, e->thread_slot_mask); e->thread_slots[s]; s = (s + 1) & e->thread_slot_mask) {
        engine_thread *t = &e->threads[e->thread_slots[s] - 1];
        if (ident_key(t->process, t->native, t->ident) == key) return t;
    }
    return NULL;
}

/* Pointers into the table are good until the next call that may add a thread. */
engine_thread *thread_table_get(pytop_engine *e, uint32_t p, bool native, uint32_t ident, bool *created) {
    *created = false;
    engine_thread *found = thread_table_find(e, p, native, ident);
    if (found) return found;
    uint32_t mask = e->thread_slots ? e->thread_slot_mask : 255;
    while ((e->thread_count + 1) * 2 > mask) mask = mask * 2 + 1;
    engine_thread *threads = grow_array(e->threads, &e->thread_cap, e->thread_count + 1ull, sizeof *threads, 64);
    if (!threads) return NULL;
    e->threads = threads;
    engine_thread *t = &e->threads[e->thread_count++];
    memset(t, 0, sizeof *t);
    t->key = ++e->next_key;
    t->process = p;
    t->native = native;
    t->ident = ident;
    t->alive = true;
    t->dirty = true;
    t->os_state = '?';
    if (rebuild_slots(e, mask) != PYTOP_OK) {
        e->thread_count--;
        return NULL;
    }
    *created = true;
    return t;
}

static void remember_forgotten(pytop_engine *e, const engine_thread *t) {
    if (t->native || t->process >= e->process_count) return;
    engine_process *P = &e->processes[t->process];
    P->forgotten[P->forgotten_next++ % FORGOTTEN_KEYS] = (forgotten_key){t->ident, t->key, P->sample_no};
}

forgotten_key *thread_table_forgotten(pytop_engine *e, uint32_t p, uint32_t ident) {
    engine_process *P = &e->processes[p];
    for (uint32_t i = 0; i < FORGOTTEN_KEYS; i++) {
        forgotten_key *f = &P->forgotten[i];
        if (f->key && f->ident == ident && P->sample_no - f->sample_no <= TRACKING_RECENT_SAMPLES) return f;
    }
    return NULL;
}

void thread_table_forget_ended(pytop_engine *e) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < e->thread_count; i++) {
        engine_thread *t = &e->threads[i];
        if (t->ended && !t->dirty && !t->closing) {
            remember_forgotten(e, t);
            free(t->name);
            stack_path_free(&t->path);
            continue;
        }
        e->threads[kept++] = *t;
    }
    if (kept != e->thread_count) {
        e->thread_count = kept;
        rebuild_slots(e, e->thread_slot_mask);
    }
}
