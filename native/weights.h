/* weights.c: the engine's time per (stack, thread) since the last drain.
 * The engine's alone: the unwinder's files know nothing of it. */
#ifndef PYTOP_WEIGHTS_H
#define PYTOP_WEIGHTS_H

#include "internal.h"

typedef struct weight {
    uint32_t stack, thread;
    uint32_t samples, running;
    uint64_t cpu_ns, wall_ns, gil_ns;
    bool standing;             /* a standing thread's time (drain.c): handed over apart */
} weight;

typedef struct weight_map {
    weight *items;
    uint32_t count, cap;
    uint32_t *slots;
    uint32_t slot_mask;
} weight_map;

int weights_init(weight_map *m);
void weights_free(weight_map *m);
/* The entry of (stack, thread), added at zero the first time; NULL when memory runs out. */
weight *weights_at(weight_map *m, uint32_t stack, uint32_t thread);
/* The entry of (stack, thread), or NULL if it has none. */
weight *weights_find(const weight_map *m, uint32_t stack, uint32_t thread);
void weights_clear(weight_map *m);

#endif
