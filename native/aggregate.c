/*
 * Summing stacks' time over the stack tree: per function and per (function, line), own and
 * total (recursion once per stack), and per node. This is what the table and the call tree are
 * made of; done here so that a deep stack costs a walk over its nodes in C, not one over its
 * frames in Python, and each node of many stacks' shared outer frames is visited once.
 *
 * Per function (per line): each stack's time is own at its leaf's function, and total at each
 * distinct function on its path, found by following the nodes' up links from one first
 * occurrence (NODE_FIRST_FUNCTION) to the next: a stack 50,000 frames deep in one recursion costs
 * a handful of steps. Per node: the stacks' leaves and all their ancestors are gathered (each
 * node once), ordered by depth, and each node's time is added into its parent's from the deepest
 * up: a node's total is then its whole subtree's.
 */
#include <string.h>

#include "aggregate.h"

/* uint64 key -> index, open addressing, cleared by stamp. */
typedef struct index_map {
    uint64_t *keys;
    uint32_t *values, *stamps;
    uint32_t mask, stamp;
} index_map;

static void map_free(index_map *m) {
    free(m->keys);
    free(m->values);
    free(m->stamps);
    memset(m, 0, sizeof *m);
}

/* Ready for `need` entries (fewer than half of its slots). */
static bool map_ready(index_map *m, uint64_t need) {
    uint64_t size = m->mask + 1ull;
    if (!m->keys || size < 2 * need + 2) {
        size = 1024;
        while (size < 2 * need + 2) size *= 2;
        if (size > (1ull << 31)) return false;
        map_free(m);
        m->keys = malloc(size * sizeof *m->keys);
        m->values = malloc(size * sizeof *m->values);
        m->stamps = calloc(size, sizeof *m->stamps);
        if (!m->keys || !m->values || !m->stamps) {
            map_free(m);
            return false;
        }
        m->mask = (uint32_t)(size - 1);
    }
    if (++m->stamp == 0) {
        memset(m->stamps, 0, (m->mask + 1ull) * sizeof *m->stamps);
        m->stamp = 1;
    }
    return true;
}

/* The value of `key`, or `fresh` stored for it; *added says which. */
static uint32_t map_get(index_map *m, uint64_t key, uint32_t fresh, bool *added) {
    uint32_t i = hash_slot(key, m->mask);
    for (; m->stamps[i] == m->stamp; i = (i + 1) & m->mask)
        if (m->keys[i] == key) {
            *added = false;
            return m->values[i];
        }
    m->stamps[i] = m->stamp;
    m->keys[i] = key;
    m->values[i] = fresh;
    *added = true;
    return fresh;
}

/* One node being summed. */
typedef struct summing {
    uint64_t own[4], total[4];
    uint32_t node, depth;
} summing;

struct aggregator {
    index_map nodes, rows;
    summing *items;
    uint32_t item_count, item_cap;
    uint32_t *order, order_cap;
    uint32_t *by_depth, by_depth_cap;
    pytop_function_row *functions, *lines;
    uint32_t function_count, function_cap, line_count, line_cap;
    pytop_node_row *node_rows;
    uint32_t node_row_cap;
};

aggregator *aggregator_new(void) { return calloc(1, sizeof(aggregator)); }

void aggregator_free(aggregator *a) {
    if (!a) return;
    map_free(&a->nodes);
    map_free(&a->rows);
    free(a->items);
    free(a->order);
    free(a->by_depth);
    free(a->functions);
    free(a->lines);
    free(a->node_rows);
    free(a);
}

static void add4(uint64_t *into, const uint64_t *more) {
    for (int i = 0; i < 4; i++) into[i] += more[i];
}

/* The item of `node`, added (with nothing in it) the first time; UINT32_MAX when out of memory. */
static uint32_t item_of(aggregator *a, const stack_table *t, uint32_t node) {
    bool added;
    uint32_t at = map_get(&a->nodes, node, a->item_count, &added);
    if (!added) return at;
    summing *items = grow_array(a->items, &a->item_cap, a->item_count + 1ull, sizeof *items, 256);
    if (!items) return UINT32_MAX;
    a->items = items;
    a->items[a->item_count] = (summing){{0}, {0}, node, t->nodes[node - 1].depth};
    return a->item_count++;
}

/* Items in order of depth, deepest first (a counting sort: depths are bounded). */
static bool order_by_depth(aggregator *a) {
    uint32_t deepest = 0;
    for (uint32_t i = 0; i < a->item_count; i++) deepest = a->items[i].depth > deepest ? a->items[i].depth : deepest;
    uint32_t *counts = grow_array(a->by_depth, &a->by_depth_cap, deepest + 2ull, sizeof *counts, 64);
    uint32_t *order = grow_array(a->order, &a->order_cap, a->item_count + 1ull, sizeof *order, 256);
    if (counts) a->by_depth = counts;
    if (order) a->order = order;
    if (!counts || !order) return false;
    memset(counts, 0, (deepest + 2ull) * sizeof *counts);
    for (uint32_t i = 0; i < a->item_count; i++) counts[deepest - a->items[i].depth + 1]++;
    for (uint32_t d = 1; d <= deepest + 1; d++) counts[d] += counts[d - 1];
    for (uint32_t i = 0; i < a->item_count; i++) order[counts[deepest - a->items[i].depth]++] = i;
    return true;
}

static pytop_function_row *row_of(aggregator *a, bool line_row, uint32_t function, int32_t line) {
    pytop_function_row **rows = line_row ? &a->lines : &a->functions;
    uint32_t *count = line_row ? &a->line_count : &a->function_count;
    uint32_t *cap = line_row ? &a->line_cap : &a->function_cap;
    pytop_function_row *grown = grow_array(*rows, cap, *count + 1ull, sizeof *grown, 64);
    if (!grown) return NULL; /* before the key is mapped, so that it is never mapped to nothing */
    *rows = grown;
    bool added;
    uint64_t key = (uint64_t)line_row << 63 | (uint64_t)function << 32 | (uint32_t)line;
    uint32_t at = map_get(&a->rows, key, *count, &added);
    if (!added) return &grown[at];
    memset(&grown[*count], 0, sizeof *grown);
    grown[*count].function = function;
    grown[*count].line = line;
    return &grown[(*count)++];
}

static void add_row(aggregator *a, bool line_row, uint32_t function, int32_t line, const uint64_t *own,
                    const uint64_t *total, const uint64_t *own_hidden) {
    pytop_function_row *row = row_of(a, line_row, function, line);
    if (!row) return;
    if (own) add4(row->own, own);
    if (total) add4(row->total, total);
    if (own_hidden) add4(row->own_hidden, own_hidden);
}

/* Where a stack ending at `n`, a task's pseudo-frame, has its own time when tasks are hidden:
 * the nearest frame further out that is not a task's, else its process's empty-stack row. */
static const stack_node *outside_tasks(const stack_table *t, const function_table *f, const stack_node *n) {
    for (uint32_t guard = 0; n && guard <= DEFAULT_MAX_DEPTH + 1; guard++) {
        const function_entry *fn = functions_get(f, n->function);
        if (!n->parent || !fn || !fn->task) return n;
        n = &t->nodes[n->parent - 1];
    }
    return n;
}

/* Per function and per line, straight from the tallies: own at each stack's leaf; total at each
 * distinct function (line) of its stack, reached by the up links (see stack_node), so that a deep
 * stack costs its distinct functions, not its depth. */
static int table_rows(aggregator *a, const stack_table *t, function_table *f, const pytop_leaf_tally *tallies,
                      uint32_t count, pytop_aggregate *out) {
    a->function_count = a->line_count = 0;
    if (!map_ready(&a->rows, 4ull * count + 1024)) return PYTOP_ERR_NOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const pytop_leaf_tally *l = &tallies[i];
        const stack_node *n = stacks_get(t, l->leaf);
        if (!n) continue;
        uint64_t figures[4] = {l->samples, l->cpu_ns, l->wall_ns, l->gil_ns};
        if ((a->function_count + a->line_count + 2ull) * 2 > a->rows.mask) { /* keep the map under half full */
            uint32_t functions = a->function_count, lines = a->line_count;
            if (!map_ready(&a->rows, 2ull * (functions + lines) + 1024)) return PYTOP_ERR_NOMEM;
            bool added;
            for (uint32_t k = 0; k < functions; k++)
                map_get(&a->rows, (uint64_t)a->functions[k].function << 32 | (uint32_t)a->functions[k].line, k,
                        &added);
            for (uint32_t k = 0; k < lines; k++)
                map_get(&a->rows, 1ull << 63 | (uint64_t)a->lines[k].function << 32 | (uint32_t)a->lines[k].line, k,
                        &added);
        }
        for (uint32_t id = (n->flags & NODE_FIRST_FUNCTION) ? l->leaf : n->up_function; id; id = t->nodes[id - 1].up_function)
            if (t->nodes[id - 1].function) add_row(a, false, t->nodes[id - 1].function, 0, NULL, figures, NULL);
        for (uint32_t id = (n->flags & NODE_FIRST_LINE) ? l->leaf : n->up_line; id; id = t->nodes[id - 1].up_line)
            if (t->nodes[id - 1].function) add_row(a, true, t->nodes[id - 1].function, t->nodes[id - 1].line, NULL, figures, NULL);
        uint32_t function = n->function ? n->function : functions_of_kind(f, n->process, PYTOP_STACK_EMPTY);
        add_row(a, false, function, 0, figures, NULL, NULL);
        add_row(a, true, function, n->line, figures, NULL, NULL);
        const stack_node *out_of_tasks = outside_tasks(t, f, n);
        uint32_t hidden = out_of_tasks->function ? out_of_tasks->function
                                                 : functions_of_kind(f, n->process, PYTOP_STACK_EMPTY);
        add_row(a, false, hidden, 0, NULL, NULL, figures);
        add_row(a, true, hidden, out_of_tasks->parent ? out_of_tasks->line : 0, NULL, NULL, figures);
    }
    out->functions = a->functions;
    out->function_count = a->function_count;
    out->lines = a->lines;
    out->line_count = a->line_count;
    return PYTOP_OK;
}

/* Per node: every node on the stacks' paths, each once, its own time and its subtree's. */
static int node_rows(aggregator *a, const stack_table *t, const pytop_leaf_tally *tallies, uint32_t count,
                     pytop_aggregate *out) {
    a->item_count = 0;
    if (!map_ready(&a->nodes, count + 1ull)) return PYTOP_ERR_NOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const pytop_leaf_tally *l = &tallies[i];
        if (!stacks_get(t, l->leaf)) continue;
        uint32_t at = item_of(a, t, l->leaf);
        if (at == UINT32_MAX) return PYTOP_ERR_NOMEM;
        uint64_t own[4] = {l->samples, l->cpu_ns, l->wall_ns, l->gil_ns};
        add4(a->items[at].own, own);
    }
    /* Every ancestor, once: the list grows as it is gone through (a live node's parent is live). */
    for (uint32_t i = 0; i < a->item_count; i++) {
        if ((a->item_count + 2ull) * 2 > a->nodes.mask) { /* keep the map under half full */
            if (!map_ready(&a->nodes, 2ull * a->item_count + 64)) return PYTOP_ERR_NOMEM;
            for (uint32_t k = 0; k < a->item_count; k++) {
                bool added;
                map_get(&a->nodes, a->items[k].node, k, &added);
            }
        }
        uint32_t parent = t->nodes[a->items[i].node - 1].parent;
        if (parent && item_of(a, t, parent) == UINT32_MAX) return PYTOP_ERR_NOMEM;
    }
    if (!order_by_depth(a)) return PYTOP_ERR_NOMEM;
    for (uint32_t k = 0; k < a->item_count; k++) {
        summing *s = &a->items[a->order[k]];
        add4(s->total, s->own);
        uint32_t parent = t->nodes[s->node - 1].parent;
        if (!parent) continue;
        bool added;
        uint32_t up = map_get(&a->nodes, parent, UINT32_MAX, &added);
        if (!added && up < a->item_count) add4(a->items[up].total, s->total);
    }
    pytop_node_row *rows = grow_array(a->node_rows, &a->node_row_cap, a->item_count + 1ull, sizeof *rows, 256);
    if (!rows) return PYTOP_ERR_NOMEM;
    a->node_rows = rows;
    for (uint32_t i = 0; i < a->item_count; i++) {
        rows[i] = (pytop_node_row){{0}, {0}, a->items[i].node, 0};
        memcpy(rows[i].own, a->items[i].own, sizeof rows[i].own);
        memcpy(rows[i].total, a->items[i].total, sizeof rows[i].total);
    }
    out->nodes = rows;
    out->node_count = a->item_count;
    return PYTOP_OK;
}

int aggregate_tallies(aggregator *a, const stack_table *t, function_table *f, const pytop_leaf_tally *tallies,
                      uint32_t count, uint32_t flags, pytop_aggregate *out) {
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < count; i++) out->skipped += !stacks_get(t, tallies[i].leaf);
    int status = PYTOP_OK;
    if (flags & PYTOP_AGGREGATE_TABLES) status = table_rows(a, t, f, tallies, count, out);
    if (status == PYTOP_OK && (flags & PYTOP_AGGREGATE_NODES)) status = node_rows(a, t, tallies, count, out);
    return status;
}
