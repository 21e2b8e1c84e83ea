/*
 * The engine's time per (stack, thread) since the last drain: an open-addressing map that the
 * drain copies out and clears. Its size follows what happened between two drains (a few
 * hundred milliseconds), not the length of the run.
 */
#include <string.h>

#include "weights.h"

int weights_init(weight_map *m) {
    memset(m, 0, sizeof *m);
    m->slot_mask = 1023;
    m->slots = calloc(m->slot_mask + 1, sizeof *m->slots);
    return m->slots ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

void weights_free(weight_map *m) {
    free(m->items);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint32_t slot_of(uint32_t stack, uint32_t thread, uint32_t mask) {
    return hash_slot((uint64_t)stack << 32 | thread, mask);
}

static int grow(weight_map *m) {
    uint32_t mask = m->slot_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t s = slot_of(m->items[i].stack, m->items[i].thread, mask);
        while (slots[s]) s = (s + 1) & mask;
        slots[s] = i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->slot_mask = mask;
    return PYTOP_OK;
}

weight *weights_find(const weight_map *m, uint32_t stack, uint32_t thread) {
    for (uint32_t s = slot_of(stack, thread, m->slot_mask); m->slots[s]; s = (s + 1) & m->slot_mask) {
        weight *w = &m->items[m->slots[s] - 1];
        if (w->stack == stack && w->thread == thread) return w;
    }
    return NULL;
}

weight *weights_at(weight_map *m, uint32_t stack, uint32_t thread) {
    if ((m->count + 1) * 2 > m->slot_mask && grow(m) != PYTOP_OK) return NULL;
    uint32_t s = slot_of(stack, thread, m->slot_mask);
    for (; m->slots[s]; s = (s + 1) & m->slot_mask) {
        weight *w = &m->items[m->slots[s] - 1];
        if (w->stack == stack && w->thread == thread) return w;
    }
    weight *items = grow_array(m->items, &m->cap, m->count + 1ull, sizeof *items, 256);
    if (!items) return NULL;
    m->items = items;
    weight *w = &m->items[m->count];
    memset(w, 0, sizeof *w);
    w->stack = stack;
    w->thread = thread;
    m->slots[s] = ++m->count;
    return w;
}

void weights_clear(weight_map *m) {
    if (m->count) memset(m->slots, 0, ((size_t)m->slot_mask + 1) * sizeof *m->slots);
    m->count = 0;
}
