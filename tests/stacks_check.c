/*
 * The engine's stack tree (native/stacks.c), its functions (functions.c) and its sums
 * (aggregate.c), on stacks made by hand: shared outer frames, recursion counted once, lines,
 * asyncio task frames hidden, eviction of old stacks with reuse of their ids, the path cache of
 * a thread, a 50,000-frame stack. test_stack_tree.py builds and runs it; a broken property prints
 * what broke and exits 1.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "aggregate.h"


enum { MAIN = 1, WORK, HELPER, OTHER, FIB, TASK, RUN, COPY_OF_WORK };
static uint32_t fn[16]; /* code id -> function id */

static void add_codes(function_table *f) {
    const char *names[] = {"", "main", "work", "helper", "other", "fib", "crunch", "run", "work"};
    const char *files[] = {"", "app.py", "app.py", "lib.py", "lib.py", "app.py", "<asyncio task>", "loop.py", "app.py"};
    for (uint32_t code = MAIN; code <= COPY_OF_WORK; code++)
        fn[code] = functions_add_code(f, 0, code, names[code], files[code], code == TASK, false);
}

/* A stack from its frames given outermost first (the engine's are innermost first). */
static uint32_t intern(stack_table *t, function_table *f, stack_path *path, uint32_t kind, uint32_t count, ...) {
    pytop_frame frames[64];
    va_list args;
    va_start(args, count);
    for (uint32_t i = 0; i < count; i++) {
        frames[count - 1 - i].code_id = va_arg(args, uint32_t);
        frames[count - 1 - i].line = va_arg(args, int32_t);
    }
    va_end(args);
    t->clock++;
    return stacks_intern(t, f, 0, kind, frames, count, path);
}

static const pytop_function_row *row(const pytop_function_row *rows, uint32_t n, uint32_t function, int32_t line) {
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].function == function && rows[i].line == line) return &rows[i];
    return NULL;
}

static uint64_t own_of(const pytop_aggregate *a, uint32_t code) {
    const pytop_function_row *r = row(a->functions, a->function_count, fn[code], 0);
    return r ? r->own[1] : 0;
}
static uint64_t total_of(const pytop_aggregate *a, uint32_t code) {
    const pytop_function_row *r = row(a->functions, a->function_count, fn[code], 0);
    return r ? r->total[1] : 0;
}
static uint64_t hidden_of(const pytop_aggregate *a, uint32_t code) {
    const pytop_function_row *r = row(a->functions, a->function_count, fn[code], 0);
    return r ? r->own_hidden[1] : 0;
}

static pytop_leaf_tally tally(uint32_t leaf, uint64_t cpu) { return (pytop_leaf_tally){cpu, cpu, 0, leaf, 1}; }

int main(void) {
    function_table f;
    stack_table t;
    aggregator *a = aggregator_new();
    functions_init(&f);
    stacks_init(&t, 0, 0);
    add_codes(&f);
    CHECK(fn[COPY_OF_WORK] == fn[WORK], "two code objects of one function are one function: %u %u", fn[WORK],
          fn[COPY_OF_WORK]);

    /* Shared outer frames are shared nodes. */
    uint32_t s1 = intern(&t, &f, NULL, 0, 3, MAIN, 10, WORK, 20, HELPER, 30);
    uint32_t s2 = intern(&t, &f, NULL, 0, 3, MAIN, 10, WORK, 20, OTHER, 40);
    uint32_t s3 = intern(&t, &f, NULL, 0, 2, MAIN, 10, WORK, 20);
    CHECK(s1 && s2 && s1 != s2 && t.live == 5, "shared prefix: %u nodes", t.live);
    CHECK(stacks_get(&t, s1)->parent == s3 && stacks_get(&t, s2)->parent == s3, "leaves hang off work");
    CHECK(intern(&t, &f, NULL, 0, 3, MAIN, 10, WORK, 20, HELPER, 30) == s1, "the same stack, the same leaf");
    CHECK(stacks_get(&t, s1)->depth == 3, "depth %u", stacks_get(&t, s1)->depth);

    /* Sums: own where it ends, total once per stack. */
    pytop_leaf_tally in[] = {tally(s1, 3), tally(s2, 1), tally(s3, 1), tally(s1, 2)};
    pytop_aggregate out;
    CHECK(aggregate_tallies(a, &t, &f, in, 4, PYTOP_AGGREGATE_TABLES | PYTOP_AGGREGATE_NODES, &out) == PYTOP_OK, "aggregate failed");
    CHECK(own_of(&out, HELPER) == 5 && total_of(&out, HELPER) == 5, "helper %" PRIu64, own_of(&out, HELPER));
    CHECK(own_of(&out, WORK) == 1 && total_of(&out, WORK) == 7, "work %" PRIu64 "/%" PRIu64, own_of(&out, WORK),
          total_of(&out, WORK));
    CHECK(own_of(&out, MAIN) == 0 && total_of(&out, MAIN) == 7, "main");
    const pytop_function_row *r = row(out.functions, out.function_count, fn[HELPER], 0);
    CHECK(r && r->own[0] == 2 && r->total[0] == 2, "samples add up: %" PRIu64, r ? r->own[0] : 0);
    CHECK(out.node_count == 5, "nodes: %u", out.node_count);

    /* Recursion counts once for total, by function and by line. */
    uint32_t rec = intern(&t, &f, NULL, 0, 4, MAIN, 11, FIB, 7, FIB, 8, FIB, 8);
    const stack_node *inner = stacks_get(&t, rec), *middle = stacks_get(&t, inner->parent);
    const stack_node *outer = stacks_get(&t, middle->parent);
    CHECK((outer->flags & NODE_FIRST_FUNCTION) && !(middle->flags & NODE_FIRST_FUNCTION) &&
              !(inner->flags & NODE_FIRST_FUNCTION), "function flags %x %x %x", outer->flags, middle->flags, inner->flags);
    CHECK((middle->flags & NODE_FIRST_LINE) && !(inner->flags & NODE_FIRST_LINE), "line flags");
    pytop_leaf_tally once = tally(rec, 10);
    aggregate_tallies(a, &t, &f, &once, 1, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(own_of(&out, FIB) == 10 && total_of(&out, FIB) == 10, "fib %" PRIu64, total_of(&out, FIB));
    const pytop_function_row *l8 = row(out.lines, out.line_count, fn[FIB], 8);
    const pytop_function_row *l7 = row(out.lines, out.line_count, fn[FIB], 7);
    CHECK(l8 && l8->total[1] == 10 && l8->own[1] == 10 && l7 && l7->total[1] == 10 && l7->own[1] == 0, "fib lines");
    /* ... also when the recursion is known only from a stack interned before (its flags are the
     * outer stack's, computed when the deeper nodes are made). */
    uint32_t deeper = intern(&t, &f, NULL, 0, 5, MAIN, 11, FIB, 7, FIB, 8, FIB, 8, FIB, 8);
    CHECK(!(stacks_get(&t, deeper)->flags & (NODE_FIRST_FUNCTION | NODE_FIRST_LINE)), "deeper fib flags");

    /* A task's pseudo-frame: hidden, its own time goes out to the nearest real frame. */
    uint32_t in_task = intern(&t, &f, NULL, 0, 3, RUN, 5, TASK, 0, WORK, 21);
    uint32_t on_task = intern(&t, &f, NULL, 0, 2, RUN, 5, TASK, 0);
    pytop_leaf_tally tasks[] = {tally(in_task, 4), tally(on_task, 6)};
    aggregate_tallies(a, &t, &f, tasks, 2, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(own_of(&out, TASK) == 6 && total_of(&out, TASK) == 10 && hidden_of(&out, TASK) == 0, "task");
    CHECK(own_of(&out, RUN) == 0 && hidden_of(&out, RUN) == 6 && total_of(&out, RUN) == 10, "run takes the task's own");
    CHECK(hidden_of(&out, WORK) == 4, "a real leaf keeps its own");

    /* Stack kinds without frames are rows of their own. */
    uint32_t native = stacks_intern(&t, &f, 0, PYTOP_STACK_NATIVE, NULL, 0, NULL);
    pytop_leaf_tally n1 = tally(native, 9);
    aggregate_tallies(a, &t, &f, &n1, 1, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(out.function_count == 1 && out.functions[0].own[1] == 9 && out.functions[0].total[1] == 9 &&
              functions_get(&f, out.functions[0].function)->kind == PYTOP_STACK_NATIVE, "native row");

    /* A thread's path: the next stack is interned from where they differ, and the same. */
    stack_path path = {0};
    uint32_t p1 = intern(&t, &f, &path, 0, 3, MAIN, 10, WORK, 20, HELPER, 30);
    uint32_t p2 = intern(&t, &f, &path, 0, 3, MAIN, 10, WORK, 20, OTHER, 40);
    uint32_t p3 = intern(&t, &f, &path, 0, 3, MAIN, 10, WORK, 20, OTHER, 41);
    CHECK(p1 == s1 && p2 == s2 && p3 && stacks_get(&t, p3)->parent == s3, "paths");
    CHECK(intern(&t, &f, &path, 0, 1, MAIN, 10) == stacks_get(&t, s3)->parent, "a shorter stack");

    /* A 50,000-frame recursion: interned, flagged and summed without recursion. */
    uint32_t deep_count = 50000;
    pytop_frame *deep = malloc(deep_count * sizeof *deep);
    for (uint32_t i = 0; i < deep_count; i++) deep[i] = (pytop_frame){FIB, i == deep_count - 1 ? 3 : 8};
    t.clock++;
    uint32_t deep_leaf = stacks_intern(&t, &f, 0, 0, deep, deep_count, &path);
    CHECK(deep_leaf && stacks_get(&t, deep_leaf)->depth == deep_count, "deep: %u", deep_leaf);
    pytop_leaf_tally d1 = tally(deep_leaf, 5);
    aggregate_tallies(a, &t, &f, &d1, 1, PYTOP_AGGREGATE_TABLES | PYTOP_AGGREGATE_NODES, &out);
    CHECK(total_of(&out, FIB) == 5 && own_of(&out, FIB) == 5 && out.node_count == deep_count + 1, "deep sums");
    deep[0].line = 9; /* the innermost frame moved: one new node */
    uint32_t before = t.live;
    t.clock++;
    uint32_t moved = stacks_intern(&t, &f, 0, 0, deep, deep_count, &path);
    CHECK(moved != deep_leaf && t.live == before + 1, "deep, moved: %u new nodes", t.live - before);
    free(deep);
    stack_path_free(&path);

    /* Eviction: past the bound, old leaves go (and parents they leave childless), pinned ones stay. */
    stack_table small;
    stacks_init(&small, 64, 64); /* room: as far again as its bound */
    uint32_t keep = intern(&small, &f, NULL, 0, 2, MAIN, 1, WORK, 1);
    stacks_pin(&small, keep);
    uint32_t old[60]; /* 122 nodes: under the hard limit (bound + room) between evictions */
    for (int i = 0; i < 60; i++) old[i] = intern(&small, &f, NULL, 0, 3, MAIN, 1, HELPER, i, OTHER, i);
    uint32_t since = small.clock;
    uint32_t fresh = intern(&small, &f, NULL, 0, 3, MAIN, 2, HELPER, 7, OTHER, 7);
    uint32_t live_before = small.live;
    uint32_t gone = stacks_evict(&small, since, 0.75);
    CHECK(gone > 0 && small.live <= 48 && small.live + gone == live_before, "evicted %u, %u live", gone, small.live);
    CHECK(stacks_get(&small, keep) && stacks_get(&small, fresh), "pinned and recent stay");
    CHECK(!stacks_get(&small, old[0]) && stacks_get(&small, old[59]), "the oldest go first");
    CHECK(small.evicted_count == gone, "told: %u of %u", small.evicted_count, gone);
    for (uint32_t i = 0; i < small.count; i++) {
        const stack_node *n = &small.nodes[i];
        if (!(n->flags & NODE_LIVE)) continue;
        uint32_t children = 0;
        for (uint32_t k = 0; k < small.count; k++)
            children += (small.nodes[k].flags & NODE_LIVE) && small.nodes[k].parent == i + 1;
        CHECK(children == n->children, "node %u: %u children, counted %u", i + 1, children, n->children);
        CHECK(!n->parent || stacks_get(&small, n->parent), "node %u's parent is gone", i + 1);
    }
    CHECK(intern(&small, &f, NULL, 0, 3, MAIN, 1, HELPER, 59, OTHER, 59) == old[59], "found again after evictions");
    uint32_t again = intern(&small, &f, NULL, 0, 3, MAIN, 1, HELPER, 0, OTHER, 0);
    CHECK(again && stacks_get(&small, again), "an evicted stack comes back (an id reused)");
    pytop_leaf_tally stale = tally(old[1], 1);
    aggregate_tallies(a, &small, &f, &stale, 1, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(out.skipped == 1 || stacks_get(&small, old[1]), "an evicted leaf is skipped");
    /* Between evictions the tree may grow by its room; past that a stack is kept coarse, in a
     * reserve of its own (a quarter of the room); past that too it is counted and given its
     * process's overflow row (a root: always room for one), never unbounded memory. */
    uint32_t dropped = small.dropped, last = 0;
    for (int i = 0; i < 200; i++) last = intern(&small, &f, NULL, 0, 2, OTHER, 1000 + i, HELPER, 1);
    CHECK(small.reserve == 16 && small.coarsened > 0, "coarse first: reserve %u, %u coarse", small.reserve,
          small.coarsened);
    CHECK(small.live <= 128 + 16 + 2 && small.dropped > dropped && stacks_get(&small, last) &&
              stacks_get(&small, last)->code_id == PYTOP_STACK_OVERFLOW, "overflow: %u live, %u dropped", small.live,
          small.dropped);
    stacks_free(&small);

    /* Coarse stacks: a full tree keeps a new stack as the set of its (function, line) frames,
     * in the order of function ids, and its innermost frame: the same set and innermost frame,
     * however nested, is the same leaf, and its sums are the whole stack's. */
    stack_table full;
    stacks_init(&full, 8, 40); /* room 40: 48 nodes, then a reserve of 10 for coarse stacks */
    for (int i = 0; full.live < 48 && i < 100; i++) intern(&full, &f, NULL, 0, 2, OTHER, 3000 + i, OTHER, 1);
    uint32_t coarse_before = full.coarsened;
    uint32_t c1 = intern(&full, &f, NULL, 0, 7, MAIN, 1, FIB, 7, WORK, 20, FIB, 8, WORK, 20, FIB, 8, HELPER, 30);
    uint32_t c2 = intern(&full, &f, NULL, 0, 5, MAIN, 1, WORK, 20, FIB, 8, FIB, 7, HELPER, 30);
    const stack_node *cl = stacks_get(&full, c1);
    CHECK(cl && (cl->kind & PYTOP_STACK_COARSE) && cl->code_id == HELPER && cl->line == 30 && cl->depth == 5,
          "coarse leaf: kind %u, code %u, depth %u", cl ? cl->kind : 0, cl ? cl->code_id : 0, cl ? cl->depth : 0);
    CHECK(c2 == c1 && full.coarsened == coarse_before + 2,
          "the same frames, nested otherwise: the same leaf (%u, %u; %u coarse)", c1, c2, full.coarsened - coarse_before);
    uint32_t order[4], at = cl ? cl->parent : 0;
    for (int i = 3; i >= 0 && at; i--, at = stacks_get(&full, at)->parent) order[i] = stacks_get(&full, at)->function;
    CHECK(order[0] < order[1] && order[1] < order[2] && order[2] <= order[3], "by function id: %u %u %u %u", order[0],
          order[1], order[2], order[3]);
    pytop_leaf_tally c10 = tally(c1, 10);
    aggregate_tallies(a, &full, &f, &c10, 1, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(own_of(&out, HELPER) == 10 && total_of(&out, HELPER) == 10 && total_of(&out, FIB) == 10 &&
              total_of(&out, WORK) == 10 && total_of(&out, MAIN) == 10 && own_of(&out, FIB) == 0,
          "coarse sums: fib %" PRIu64 ", work %" PRIu64, total_of(&out, FIB), total_of(&out, WORK));
    const pytop_function_row *f7 = row(out.lines, out.line_count, fn[FIB], 7), *f8 = row(out.lines, out.line_count, fn[FIB], 8);
    CHECK(f7 && f7->total[1] == 10 && f8 && f8->total[1] == 10, "coarse lines");
    /* Its innermost frame further out too (recursion): counted once, own where it ends. */
    uint32_t c3 = intern(&full, &f, NULL, 0, 4, MAIN, 1, FIB, 8, WORK, 20, FIB, 8);
    pytop_leaf_tally c5 = tally(c3, 5);
    aggregate_tallies(a, &full, &f, &c5, 1, PYTOP_AGGREGATE_TABLES, &out);
    CHECK(c3 && (stacks_get(&full, c3)->kind & PYTOP_STACK_COARSE) && own_of(&out, FIB) == 5 && total_of(&out, FIB) == 5 &&
              total_of(&out, WORK) == 5, "coarse recursion: fib %" PRIu64 "/%" PRIu64, own_of(&out, FIB),
          total_of(&out, FIB));
    stacks_free(&full);

    /* Functions: retired with their last code object; one never handed out is never told gone. */
    f.fresh_count = 0; /* as after a drain */
    uint32_t told = functions_add_code(&f, 1, 1, "gone_soon", "gen.py", false, false);
    functions_add_code(&f, 1, 2, "gone_soon", "gen.py", false, false); /* a second code object of it */
    f.fresh_count = 0;
    uint32_t untold = functions_add_code(&f, 1, 3, "made_and_gone", "gen.py", false, false);
    functions_release_code(&f, 1, 1);
    CHECK(functions_get(&f, told) && f.retired_count == 0, "one code object of two gone: kept");
    functions_release_code(&f, 1, 2);
    functions_release_code(&f, 1, 3);
    CHECK(!functions_get(&f, told) && !functions_get(&f, untold), "retired");
    CHECK(f.retired_count == 1 && f.retired[0] == told && f.fresh_count == 0, "told: %u, fresh %u", f.retired_count,
          f.fresh_count);
    uint32_t reused = functions_add_code(&f, 1, 4, "new_one", "gen.py", false, false);
    CHECK(reused == told || reused == untold, "ids are reused: %u", reused);
    CHECK(functions_add_code(&f, 1, 5, "new_one", "gen.py", false, false) == reused, "found by name again");

    stacks_free(&t);
    functions_free(&f);
    aggregator_free(a);
    if (failures) return 1;
    printf("stack tree: all properties hold\n");
    return 0;
}
