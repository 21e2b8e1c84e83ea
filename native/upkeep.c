/*
 * The stack tree's upkeep, after a tick's samples: which code objects its nodes name (the code
 * cache keeps those), eviction of old nodes past its bound (never the stacks a thread may still
 * need), and code objects that died leaving the cache and their functions.
 */
#include "engine.h"

/* A node names a code object: the code cache keeps its entry until no node does. */
static void count_code_ref(pytop_engine *e, const stack_node *n, bool named) {
    if (!n->parent || n->process >= e->process_count || !e->processes[n->process].u) return;
    code_cache *c = &e->processes[n->process].u->codes;
    if (n->code_id < 1 || n->code_id > c->count) return;
    code_entry *entry = &c->entries[n->code_id - 1];
    entry->refs = named ? entry->refs + 1 : entry->refs ? entry->refs - 1 : 0;
}

/* What no thread of the engine may lose: each one's stack, the stacks its CPU may still go to. */
static void pin_stacks(pytop_engine *e) {
    for (uint32_t i = 0; i < e->thread_count; i++) {
        const engine_thread *t = &e->threads[i];
        stacks_pin(&e->stacks, t->stack);
        stacks_pin(&e->stacks, t->read_stack);
        stacks_pin(&e->stacks, t->unseen_anchor);
        for (uint32_t k = 0; k < t->pending_count; k++) stacks_pin(&e->stacks, t->pending[k].stack);
    }
    for (uint32_t p = 0; p < e->process_count; p++) {
        const engine_process *P = &e->processes[p];
        for (uint32_t i = 0; i < P->ended_count; i++) {
            stacks_pin(&e->stacks, P->ended[i].stack);
            for (uint32_t k = 0; k < P->ended[i].pending_count; k++) stacks_pin(&e->stacks, P->ended[i].pending[k].stack);
        }
    }
}

typedef struct recycling {
    pytop_engine *e;
    uint32_t process;
} recycling;

static void code_recycled(void *ctx, uint32_t id) {
    recycling *r = ctx;
    functions_release_code(&r->e->functions, r->process, id);
}

void upkeep_tree(pytop_engine *e, bool full) {
    stack_table *s = &e->stacks;
    for (; e->fresh_counted < s->fresh_count; e->fresh_counted++)
        count_code_ref(e, &s->nodes[s->fresh[e->fresh_counted] - 1], true);
    bool evicted = false;
    if (s->live > s->max_nodes) {
        uint32_t before = s->evicted_count;
        pin_stacks(e);
        evicted = stacks_evict(s, e->drained_clock, 0.75) > 0;
        for (uint32_t k = before; k < s->evicted_count; k++) count_code_ref(e, &s->nodes[s->evicted[k] - 1], false);
    }
    if (!full && !evicted) return;
    uint32_t recycled = 0;
    for (uint32_t p = 0; p < e->process_count; p++) {
        if (!e->processes[p].u) continue;
        recycling r = {e, p};
        recycled += codes_recycle(&e->processes[p].u->codes, code_recycled, &r);
    }
    if (recycled) s->epoch++; /* a thread's path may hold a recycled code id: look its nodes up again */
}
