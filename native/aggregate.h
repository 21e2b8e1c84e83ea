/* aggregate.c: summing stacks' time over the tree: per function, per line, per node.
 * The engine's alone: the unwinder's files know nothing of it. */
#ifndef PYTOP_AGGREGATE_H
#define PYTOP_AGGREGATE_H

#include "stacks.h"

/* Scratch for summing stacks over the tree, kept between calls (its arrays only grow). */
typedef struct aggregator aggregator;
aggregator *aggregator_new(void);
void aggregator_free(aggregator *a);
/* See pytop_engine_aggregate; `out` points into `a` until its next use. */
int aggregate_tallies(aggregator *a, const stack_table *t, function_table *f, const pytop_leaf_tally *tallies,
                      uint32_t count, uint32_t flags, pytop_aggregate *out);

#endif
