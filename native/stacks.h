/* stacks.c: the engine's stack tree: a node per frame of each distinct path, evicted when old.
 * The engine's alone: the unwinder's files know nothing of it. */
#ifndef PYTOP_STACKS_H
#define PYTOP_STACKS_H

#include "functions.h"

/* Every stack is a path in one tree per (process, stack kind): a node per frame, keyed by its
 * parent and its (code, line), so stacks that share their outer frames share those nodes, and a
 * stack is known by its innermost node (its leaf). Nodes of stacks not seen for a while are
 * evicted, least recently seen first, once the tree passes its bound. */
enum stack_node_flags {
    NODE_LIVE = 1,
    NODE_FIRST_FUNCTION = 2, /* its function is not on its path further out: it counts once */
    NODE_FIRST_LINE = 4,     /* ... nor its (function, line) */
    NODE_PINNED = 8,         /* in use by the engine's threads: not to be evicted now */
};

typedef struct stack_node {
    uint32_t parent;        /* 0 for a root */
    uint32_t code_id;       /* a root: its kind (pytop_stack_kind, flags included) */
    int32_t line;
    uint32_t process;
    uint32_t function;      /* the engine's function (a root: its kind's row, or 0 for frames) */
    uint32_t children;      /* live nodes whose parent it is */
    uint32_t last_seen;     /* the tree's clock when a sample last ended at it or made it */
    uint32_t depth;         /* frames between it and its root (0: a root) */
    /* The nearest node further out where a function (a line) first occurs on the path: from a
     * leaf, these links visit each distinct function (line) of its stack once, however deep. */
    uint32_t up_function, up_line;
    uint8_t flags;          /* stack_node_flags */
    uint8_t kind;           /* its root's kind */
} stack_node;

/* A thread's latest stack, so that the next one is interned from where they differ: a deep
 * stack whose innermost frames change costs lookups for those frames only. */
typedef struct stack_path {
    pytop_frame *frames;    /* outermost first */
    uint32_t *nodes;
    uint32_t count, cap;
    uint32_t root;
    uint32_t epoch;         /* the tree's eviction epoch when it was recorded */
} stack_path;

typedef struct stack_table {
    stack_node *nodes;      /* id = index + 1; freed ids are reused */
    uint32_t count, cap;    /* nodes[0, count) have been used */
    uint32_t live;
    uint32_t *free_ids;
    uint32_t free_count, free_cap;
    uint32_t *slots;        /* open addressing: (parent, code, line, process) -> id, 0 = empty */
    uint32_t slot_mask;
    uint32_t max_nodes;     /* evictions bring the tree back under this */
    uint32_t room;          /* ... and between them it may grow this far past it, no further */
    uint32_t clock;         /* moved on by the engine at each sample */
    uint32_t epoch;         /* evictions so far: stack_paths of an older epoch are not trusted */
    uint32_t reserve;       /* past max_nodes + room, nodes for coarse stacks only */
    uint32_t coarsened;     /* stacks that found no room whole: kept coarse (PYTOP_STACK_COARSE) */
    uint32_t dropped;       /* stacks that found no room even coarse: overflow rows */
    /* For the next drain: nodes made since the previous one (in the order made, parents first)
     * and nodes evicted since then (all handed out before: only nodes not seen since the
     * previous drain are evicted). */
    uint32_t *fresh, fresh_count, fresh_cap;
    uint32_t *evicted, evicted_count, evicted_cap;
    /* Scratch for the flags of new nodes: the functions and lines on a path, by stamp. */
    uint64_t *seen_keys;
    uint32_t *seen_stamps;
    uint32_t seen_mask, seen_stamp;
} stack_table;

/* max_nodes, room: 0 for the defaults (32,768 nodes; room for the deepest stack read). Coarse
 * stacks have a reserve of their own past both (a quarter of the room, at most 4,096 nodes). */
int stacks_init(stack_table *t, uint32_t max_nodes, uint32_t room);
void stacks_free(stack_table *t);
void stack_path_free(stack_path *p);
/* The leaf of this stack (frames innermost first) of `process`, its nodes made the first time;
 * `path` (may be NULL) is the thread's previous stack and becomes this one. 0 only when memory
 * runs out. A stack that finds no room whole is kept coarse: the set of its (function, line)
 * frames and its innermost frame, under its kind's coarse root (PYTOP_STACK_COARSE), which is
 * all the function table needs; only one that finds no room even so gets its process's
 * overflow row. */
uint32_t stacks_intern(stack_table *t, function_table *f, uint32_t process, uint32_t kind,
                       const pytop_frame *frames, uint32_t count, stack_path *path);
static inline const stack_node *stacks_get(const stack_table *t, uint32_t id) {
    return id >= 1 && id <= t->count && (t->nodes[id - 1].flags & NODE_LIVE) ? &t->nodes[id - 1] : NULL;
}
/* The stack ending at `id` was seen again (a thread whose stack did not change). */
static inline void stacks_touch(stack_table *t, uint32_t id) {
    if (id >= 1 && id <= t->count) t->nodes[id - 1].last_seen = t->clock;
}
static inline void stacks_pin(stack_table *t, uint32_t id) {
    if (id >= 1 && id <= t->count) t->nodes[id - 1].flags |= NODE_PINNED;
}
/* The child of node `parent` that stands for CPU time a thread used inside its frames where no
 * sample saw it (PYTOP_STACK_UNPLACED's row), made the first time; 0 when there is no room. */
uint32_t stacks_unplaced(stack_table *t, function_table *f, uint32_t parent);
/* Past the bound: evict nodes without children, unpinned and not seen since `since` (a clock
 * value), least recently seen first, until the tree is back to `keep_share` of its bound. Pins
 * are cleared. Returns how many were evicted. */
uint32_t stacks_evict(stack_table *t, uint32_t since, double keep_share);

#endif
