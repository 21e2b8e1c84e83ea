/*
 * The engine's stack tree: every stack a sample finds is a path from its process's root for its
 * kind to its innermost frame, a node per frame keyed by (parent, code, line). Stacks that share
 * their outer frames share those nodes, so a deep recursion whose depth keeps changing costs one
 * node per depth ever reached, not a copy of the whole stack per depth; and a stack is known by
 * its innermost node, its leaf. Python learns each node once, from the drain after it was made.
 *
 * Memory is bounded: past `max_nodes`, nodes without children that no sample has ended at since
 * the previous drain (and that no thread of the engine still holds) are evicted, least recently
 * seen first, and their parents with them once childless, until the tree is back under its bound.
 * Python is told which ids went (they are reused): the detail of old stacks ages out, while the
 * per-function totals, counted as each drain came, stay whole.
 */
#include <string.h>

#include "stacks.h"

/* 32,768 nodes: ~5 MiB here, a little less in Python. At 65,536, a program that keeps making new
 * code had not filled the tree after an hour, and pytop's memory grew all that time. */
#define DEFAULT_MAX_NODES (1u << 15)
/* Between evictions the tree may grow past its bound by the deepest stack read (and a root): a
 * thread 50,000 frames deep is interned whole whatever the bound. */
#define DEFAULT_ROOM ((uint32_t)DEFAULT_MAX_DEPTH + 2)
/* Coarse stacks (a set of (function, line) frames each) need few nodes: a program's lines. */
#define MAX_COARSE_RESERVE 4096u

static uint64_t hash_key(uint32_t parent, uint32_t code_id, int32_t line, uint32_t process) {
    uint64_t h = ((uint64_t)parent << 32 | code_id) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uint32_t)line << 32 | process) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

static uint64_t hash_node(const stack_node *n) { return hash_key(n->parent, n->code_id, n->line, n->process); }

int stacks_init(stack_table *t, uint32_t max_nodes, uint32_t room) {
    memset(t, 0, sizeof *t);
    t->max_nodes = max_nodes ? max_nodes : DEFAULT_MAX_NODES;
    t->room = room ? room : DEFAULT_ROOM;
    t->reserve = t->room / 4 < MAX_COARSE_RESERVE ? t->room / 4 : MAX_COARSE_RESERVE;
    t->slot_mask = 4095;
    t->slots = calloc(t->slot_mask + 1, sizeof *t->slots);
    t->clock = 1;
    return t->slots ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

void stacks_free(stack_table *t) {
    free(t->nodes);
    free(t->slots);
    free(t->free_ids);
    free(t->fresh);
    free(t->evicted);
    free(t->seen_keys);
    free(t->seen_stamps);
    memset(t, 0, sizeof *t);
}

void stack_path_free(stack_path *p) {
    free(p->frames);
    free(p->nodes);
    memset(p, 0, sizeof *p);
}

/* ---- the hash index ----------------------------------------------------------------------- */

static uint32_t find(const stack_table *t, uint32_t parent, uint32_t code_id, int32_t line, uint32_t process,
                     uint32_t *slot) {
    uint32_t i = (uint32_t)(hash_key(parent, code_id, line, process) >> 32) & t->slot_mask;
    for (; t->slots[i]; i = (i + 1) & t->slot_mask) {
        const stack_node *n = &t->nodes[t->slots[i] - 1];
        if (n->parent == parent && n->code_id == code_id && n->line == line && n->process == process) {
            *slot = i;
            return t->slots[i];
        }
    }
    *slot = i;
    return 0;
}

static int grow_slots(stack_table *t) {
    uint32_t mask = t->slot_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    for (uint32_t id = 1; id <= t->count; id++) {
        if (!(t->nodes[id - 1].flags & NODE_LIVE)) continue;
        uint32_t i = (uint32_t)(hash_node(&t->nodes[id - 1]) >> 32) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->slot_mask = mask;
    return PYTOP_OK;
}

/* Take `id` out of the index (backward-shift deletion keeps probe chains whole). */
static void unindex(stack_table *t, uint32_t id) {
    uint32_t i;
    const stack_node *n = &t->nodes[id - 1];
    if (find(t, n->parent, n->code_id, n->line, n->process, &i) != id) return;
    t->slots[i] = 0;
    for (uint32_t j = (i + 1) & t->slot_mask; t->slots[j]; j = (j + 1) & t->slot_mask) {
        uint32_t moved = t->slots[j], at;
        t->slots[j] = 0;
        const stack_node *m = &t->nodes[moved - 1];
        find(t, m->parent, m->code_id, m->line, m->process, &at);
        t->slots[at] = moved;
    }
}

/* ---- making nodes ------------------------------------------------------------------------- */

static uint32_t make(stack_table *t, uint32_t parent, uint32_t code_id, int32_t line, uint32_t process,
                     uint32_t function, uint8_t flags, uint8_t kind) {
    /* Roots are few (a process's kinds of stack): always room for them, the overflow one first. */
    uint64_t limit = (uint64_t)t->max_nodes + t->room + ((kind & PYTOP_STACK_COARSE) ? t->reserve : 0);
    if (parent && t->live >= limit) return 0;
    if ((t->live + 1) * 2 > t->slot_mask && grow_slots(t) != PYTOP_OK) return 0;
    /* Room in the list for the next drain, before the node exists. */
    uint32_t *fresh = grow_array(t->fresh, &t->fresh_cap, t->fresh_count + 1ull, sizeof *fresh, 256);
    if (!fresh) return 0;
    t->fresh = fresh;
    uint32_t id;
    if (t->free_count) {
        id = t->free_ids[--t->free_count];
    } else {
        stack_node *nodes = grow_array(t->nodes, &t->cap, t->count + 1ull, sizeof *nodes, 1024);
        if (!nodes) return 0;
        t->nodes = nodes;
        id = ++t->count;
    }
    const stack_node *up = parent ? &t->nodes[parent - 1] : NULL;
    uint32_t up_function = !up ? 0 : (up->flags & NODE_FIRST_FUNCTION) ? parent : up->up_function;
    uint32_t up_line = !up ? 0 : (up->flags & NODE_FIRST_LINE) ? parent : up->up_line;
    t->nodes[id - 1] = (stack_node){parent, code_id, line, process, function, 0, t->clock, up ? up->depth + 1 : 0,
                                    up_function, up_line, (uint8_t)(flags | NODE_LIVE), kind};
    if (up) t->nodes[parent - 1].children++;
    uint32_t slot;
    find(t, parent, code_id, line, process, &slot);
    t->slots[slot] = id;
    t->live++;
    t->fresh[t->fresh_count++] = id;
    return id;
}

static uint32_t root_of(stack_table *t, function_table *f, uint32_t process, uint32_t kind) {
    uint32_t slot, id = find(t, 0, kind, 0, process, &slot);
    if (id) return id;
    uint32_t base = kind & ~(uint32_t)(PYTOP_STACK_INCOMPLETE | PYTOP_STACK_COARSE);
    uint32_t function = base == PYTOP_STACK_FRAMES ? 0 : functions_of_kind(f, process, base);
    return make(t, 0, kind, 0, process, function, NODE_FIRST_FUNCTION | NODE_FIRST_LINE, (uint8_t)kind);
}

/* ---- which functions a path holds (for the flags of new nodes) ------------------------------ */

static uint64_t function_key(uint32_t function) { return 1ull << 63 | function; }
static uint64_t line_key(uint32_t function, int32_t line) { return (uint64_t)function << 32 | (uint32_t)line; }

static bool seen_ready(stack_table *t, uint32_t depth) {
    uint64_t need = 4ull * (depth + 2);
    if (t->seen_mask + 1ull < need) {
        uint64_t size = 64;
        while (size < need) size *= 2;
        uint64_t *keys = malloc(size * sizeof *keys);
        uint32_t *stamps = calloc(size, sizeof *stamps);
        if (!keys || !stamps) {
            free(keys);
            free(stamps);
            return false;
        }
        free(t->seen_keys);
        free(t->seen_stamps);
        t->seen_keys = keys;
        t->seen_stamps = stamps;
        t->seen_mask = (uint32_t)(size - 1);
        t->seen_stamp = 0;
    }
    if (++t->seen_stamp == 0) { /* wrapped: every old stamp must read as empty */
        memset(t->seen_stamps, 0, (t->seen_mask + 1ull) * sizeof *t->seen_stamps);
        t->seen_stamp = 1;
    }
    return true;
}

/* Adds `key`; true if it was not there. */
static bool seen_add(stack_table *t, uint64_t key) {
    uint32_t i = hash_slot(key, t->seen_mask);
    for (; t->seen_stamps[i] == t->seen_stamp; i = (i + 1) & t->seen_mask)
        if (t->seen_keys[i] == key) return false;
    t->seen_stamps[i] = t->seen_stamp;
    t->seen_keys[i] = key;
    return true;
}

/* The functions and lines on the path from the root to `id` (inclusive). */
static void seen_path(stack_table *t, uint32_t id) {
    for (uint32_t guard = 0; id && guard <= DEFAULT_MAX_DEPTH + 1; guard++) {
        const stack_node *n = &t->nodes[id - 1];
        if (n->parent) { /* a root's row is never one of a frame's */
            seen_add(t, function_key(n->function));
            seen_add(t, line_key(n->function, n->line));
        }
        id = n->parent;
    }
}

/* ---- interning ---------------------------------------------------------------------------- */

static bool path_room(stack_path *p, uint32_t count) {
    if (count <= p->cap) return true;
    uint32_t cap = p->cap;
    pytop_frame *frames = grow_array(p->frames, &cap, count, sizeof *frames, 64);
    if (!frames) return false;
    p->frames = frames;
    cap = p->cap;
    uint32_t *nodes = grow_array(p->nodes, &cap, count, sizeof *nodes, 64);
    if (!nodes) return false;
    p->nodes = nodes;
    p->cap = cap;
    return true;
}

static uint32_t overflow(stack_table *t, function_table *f, uint32_t process, stack_path *path) {
    t->dropped++;
    if (path) path->count = 0;
    uint32_t id = root_of(t, f, process, PYTOP_STACK_OVERFLOW);
    stacks_touch(t, id);
    return id;
}

/* One (function, line) frame of a coarse stack. */
typedef struct coarse_frame {
    uint32_t function;
    pytop_frame frame;
} coarse_frame;

static int by_function_and_line(const void *a, const void *b) {
    const coarse_frame *x = a, *y = b;
    if (x->function != y->function) return x->function < y->function ? -1 : 1;
    return x->frame.line < y->frame.line ? -1 : x->frame.line > y->frame.line;
}

/* A stack that found no room whole, kept as what the function table counts: each (function,
 * line) of its outer frames once, in the order of function ids (so that stacks of the same
 * frames share one path, however their calls nest and recurse), then its innermost frame. Its
 * own and total times are whole; its callers are not known (the flag says so). */
static uint32_t coarse(stack_table *t, function_table *f, uint32_t process, uint32_t kind, const pytop_frame *frames,
                       uint32_t count, stack_path *path) {
    if (path) path->count = 0;
    if ((kind & PYTOP_STACK_COARSE) || count == 0) return overflow(t, f, process, NULL);
    coarse_frame *set = malloc((size_t)count * sizeof *set);
    pytop_frame *kept = malloc((size_t)count * sizeof *kept);
    uint32_t n = 0, leaf = 0;
    if (set && kept && seen_ready(t, count)) {
        for (uint32_t i = 1; i < count; i++) { /* frames[0] is the innermost */
            uint32_t function = functions_of_code(f, process, frames[i].code_id);
            if (seen_add(t, line_key(function, frames[i].line))) set[n++] = (coarse_frame){function, frames[i]};
        }
        qsort(set, n, sizeof *set, by_function_and_line);
        kept[0] = frames[0];
        for (uint32_t j = 0; j < n; j++) kept[1 + j] = set[n - 1 - j].frame; /* innermost first */
        uint32_t dropped = t->dropped;
        leaf = stacks_intern(t, f, process, kind | PYTOP_STACK_COARSE, kept, n + 1, NULL);
        if (leaf && t->dropped == dropped) t->coarsened++;
    }
    free(set);
    free(kept);
    return leaf ? leaf : overflow(t, f, process, NULL);
}

uint32_t stacks_intern(stack_table *t, function_table *f, uint32_t process, uint32_t kind,
                       const pytop_frame *frames, uint32_t count, stack_path *path) {
    uint32_t root = root_of(t, f, process, kind);
    if (!root) return kind == PYTOP_STACK_OVERFLOW ? 0 : coarse(t, f, process, kind, frames, count, path);
    if (path && !path_room(path, count)) path = NULL;
    /* The outer frames it shares with the thread's previous stack need no look-up. */
    uint32_t same = 0;
    if (path && path->root == root && path->epoch == t->epoch) {
        uint32_t n = count < path->count ? count : path->count;
        while (same < n && frames[count - 1 - same].code_id == path->frames[same].code_id &&
               frames[count - 1 - same].line == path->frames[same].line)
            same++;
    }
    uint32_t node = same ? path->nodes[same - 1] : root;
    bool making = false;
    for (uint32_t i = same; i < count; i++) {
        const pytop_frame *fr = &frames[count - 1 - i];
        uint32_t slot, id = making ? 0 : find(t, node, fr->code_id, fr->line, process, &slot);
        if (!id) {
            uint32_t function = functions_of_code(f, process, fr->code_id);
            if (!making) { /* the first new node: which functions and lines are further out? */
                if (!seen_ready(t, t->nodes[node - 1].depth + count)) return coarse(t, f, process, kind, frames, count, path);
                seen_path(t, node);
                making = true;
            }
            uint8_t flags = 0;
            if (seen_add(t, function_key(function))) flags |= NODE_FIRST_FUNCTION;
            if (seen_add(t, line_key(function, fr->line))) flags |= NODE_FIRST_LINE;
            id = make(t, node, fr->code_id, fr->line, process, function, flags, (uint8_t)kind);
            if (!id) return coarse(t, f, process, kind, frames, count, path);
        }
        node = id;
        if (path) {
            path->frames[i] = *fr;
            path->nodes[i] = id;
        }
    }
    if (path) {
        path->count = count;
        path->root = root;
        path->epoch = t->epoch;
    }
    t->nodes[node - 1].last_seen = t->clock;
    return node;
}

/* Not a code object's id: the code cache's ids are small and dense. */
#define UNPLACED_CODE UINT32_MAX

uint32_t stacks_unplaced(stack_table *t, function_table *f, uint32_t parent) {
    const stack_node *up = stacks_get(t, parent);
    if (!up) return 0;
    uint32_t slot, process = up->process, id = find(t, parent, UNPLACED_CODE, 0, process, &slot);
    if (!id) {
        uint32_t function = functions_of_kind(f, process, PYTOP_STACK_UNPLACED);
        id = make(t, parent, UNPLACED_CODE, 0, process, function, NODE_FIRST_FUNCTION | NODE_FIRST_LINE, up->kind);
    }
    stacks_touch(t, id);
    return id;
}

/* ---- eviction ----------------------------------------------------------------------------- */

static bool evictable(const stack_node *n, uint32_t since) {
    return (n->flags & NODE_LIVE) && !(n->flags & NODE_PINNED) && n->children == 0 && n->last_seen < since;
}

static void evict_one(stack_table *t, uint32_t id) {
    stack_node *n = &t->nodes[id - 1];
    unindex(t, id);
    if (n->parent) t->nodes[n->parent - 1].children--;
    n->flags = 0;
    t->live--;
    t->free_ids[t->free_count++] = id;          /* room was made by the caller */
    t->evicted[t->evicted_count++] = id;
}

uint32_t stacks_evict(stack_table *t, uint32_t since, double keep_share) {
    uint32_t target = (uint32_t)((double)t->max_nodes * keep_share), evicted = 0;
    if (t->live <= t->max_nodes) goto unpin;
    /* Room for every node in the free list and the drain's list, so eviction cannot fail midway. */
    uint32_t *ids = grow_array(t->free_ids, &t->free_cap, (uint64_t)t->free_count + t->live, sizeof *ids, 256);
    if (!ids) goto unpin;
    t->free_ids = ids;
    uint32_t *ev = grow_array(t->evicted, &t->evicted_cap, (uint64_t)t->evicted_count + t->live, sizeof *ev, 256);
    if (!ev) goto unpin;
    t->evicted = ev;
    /* Least recently seen first, roughly: candidates by age in 64 buckets between the oldest and
     * `since`, whole buckets at a time from the oldest, until enough would go. */
    uint32_t oldest = since, counts[64] = {0};
    for (uint32_t i = 0; i < t->count; i++)
        if (evictable(&t->nodes[i], since) && t->nodes[i].last_seen < oldest) oldest = t->nodes[i].last_seen;
    uint32_t width = (since - oldest) / 64 + 1;
    for (uint32_t i = 0; i < t->count; i++)
        if (evictable(&t->nodes[i], since)) counts[(t->nodes[i].last_seen - oldest) / width]++;
    uint32_t excess = t->live > target ? t->live - target : 0, upto = 0, sum = 0;
    while (upto < 64 && sum < excess) sum += counts[upto++];
    uint32_t cutoff = oldest + upto * width; /* evict what was last seen before this */
    if (cutoff > since) cutoff = since;
    for (uint32_t i = 0; i < t->count && t->live > target; i++) {
        uint32_t id = i + 1;
        /* A leaf old enough goes, and so does each parent it leaves childless that is old too. */
        while (id && t->live > target && evictable(&t->nodes[id - 1], cutoff)) {
            uint32_t parent = t->nodes[id - 1].parent;
            evict_one(t, id);
            evicted++;
            id = parent;
        }
    }
    if (evicted) t->epoch++;
unpin:
    for (uint32_t i = 0; i < t->count; i++) t->nodes[i].flags &= (uint8_t)~NODE_PINNED;
    return evicted;
}
