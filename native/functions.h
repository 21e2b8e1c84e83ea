/* functions.c: the engine's functions: (process, qualname, filename) -> id.
 * The engine's alone: the unwinder's files know nothing of it. */
#ifndef PYTOP_FUNCTIONS_H
#define PYTOP_FUNCTIONS_H

#include "internal.h"

/* The engine's functions: one id per (process, qualname, filename), so that recursion through
 * two code objects of one function (an exec'd module run twice) is one function, as the table
 * shows it; pseudo-functions (a stack kind's row, an asyncio task) are functions too. */
typedef struct function_entry {
    uint64_t hash;
    uint32_t process;
    uint32_t kind;          /* pytop_stack_kind of a stack kind's row; 0 for code */
    char *qualname, *filename;
    bool task;              /* an asyncio task's pseudo-frame */
    bool native;            /* a native (C) function (--native) */
    bool free;              /* retired: its id waits for the next new function */
    uint32_t refs;          /* code ids that are this function (a kind's row: never released) */
} function_entry;

typedef struct process_functions {
    uint32_t *of_code;      /* code id -> function id (0: not yet known) */
    uint32_t code_count, code_cap;
    uint32_t kinds[PYTOP_STACK_UNPLACED + 1]; /* a stack kind's function, 0 until first needed */
} process_functions;

typedef struct function_table {
    function_entry *entries; /* id = index + 1 */
    uint32_t count, cap;
    uint32_t *slots;
    uint32_t slot_mask;
    process_functions *processes;
    uint32_t process_cap;
    uint32_t *free_ids;
    uint32_t free_count, free_cap;
    /* For the next drain: functions made since the previous one, and those retired (their
     * last code object gone from the cache; their ids may be reused after the drain). */
    uint32_t *fresh, fresh_count, fresh_cap;
    uint32_t *retired, retired_count, retired_cap;
} function_table;

int functions_init(function_table *f);
void functions_free(function_table *f);
/* The function of code `code_id` of `process`, named `qualname` in `filename`: a new id the
 * first time that (process, qualname, filename) is met. 0 when memory runs out. */
uint32_t functions_add_code(function_table *f, uint32_t process, uint32_t code_id, const char *qualname,
                            const char *filename, bool task, bool native);
/* What code `code_id` of `process` was given (0: none). */
static inline uint32_t functions_of_code(const function_table *f, uint32_t process, uint32_t code_id) {
    const process_functions *p = process < f->process_cap ? &f->processes[process] : NULL;
    return p && code_id < p->code_count ? p->of_code[code_id] : 0;
}
/* Code `code_id` of `process` was recycled (codes_recycle): its function loses it, and is retired
 * when it was its last. */
void functions_release_code(function_table *f, uint32_t process, uint32_t code_id);
/* The row of stack kind `kind` (without its INCOMPLETE flag) of `process`. */
uint32_t functions_of_kind(function_table *f, uint32_t process, uint32_t kind);
const function_entry *functions_get(const function_table *f, uint32_t id);

#endif
