/*
 * The engine's functions: (process, qualname, filename) -> a small id, met once per code object
 * and once per stack kind's row. The stack tree marks, per node, whether its function (and its
 * line) already occurs further out on its path, so that a table counts recursion once; that
 * takes one identity per function, not per code object (two code objects of one function, from
 * a module executed twice, are one row in the table).
 */
#include <string.h>

#include "functions.h"

int functions_init(function_table *f) {
    memset(f, 0, sizeof *f);
    f->slot_mask = 1023;
    f->slots = calloc(f->slot_mask + 1, sizeof *f->slots);
    return f->slots ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

void functions_free(function_table *f) {
    for (uint32_t i = 0; i < f->count; i++) {
        free(f->entries[i].qualname);
        free(f->entries[i].filename);
    }
    for (uint32_t p = 0; p < f->process_cap; p++) free(f->processes[p].of_code);
    free(f->entries);
    free(f->slots);
    free(f->processes);
    free(f->free_ids);
    free(f->fresh);
    free(f->retired);
    memset(f, 0, sizeof *f);
}

const function_entry *functions_get(const function_table *f, uint32_t id) {
    return id >= 1 && id <= f->count && !f->entries[id - 1].free ? &f->entries[id - 1] : NULL;
}

static uint64_t hash_text(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_function(uint32_t process, uint32_t kind, const char *qualname, const char *filename) {
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)process << 8 | kind);
    h = hash_text(h * 0x100000001b3ull, qualname);
    h = hash_text(h ^ 0xff, filename);
    return h ? h : 1;
}

static bool same(const function_entry *e, uint64_t hash, uint32_t process, uint32_t kind, const char *qualname,
                 const char *filename) {
    return e->hash == hash && e->process == process && e->kind == kind && strcmp(e->qualname, qualname) == 0 &&
           strcmp(e->filename, filename) == 0;
}

static int grow_slots(function_table *f) {
    uint32_t mask = f->slot_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    for (uint32_t id = 1; id <= f->count; id++) {
        if (f->entries[id - 1].free) continue;
        uint32_t i = (uint32_t)(f->entries[id - 1].hash >> 32) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id;
    }
    free(f->slots);
    f->slots = slots;
    f->slot_mask = mask;
    return PYTOP_OK;
}

static bool room(uint32_t **items, uint32_t *cap, uint32_t count) {
    uint32_t *grown = grow_array(*items, cap, count + 1ull, sizeof *grown, 64);
    if (grown) *items = grown;
    return grown != NULL;
}

static uint32_t intern(function_table *f, uint32_t process, uint32_t kind, const char *qualname, const char *filename,
                       bool task, bool native) {
    if ((f->count + 1) * 2 > f->slot_mask && grow_slots(f) != PYTOP_OK) return 0;
    uint64_t hash = hash_function(process, kind, qualname, filename);
    uint32_t i = (uint32_t)(hash >> 32) & f->slot_mask;
    for (; f->slots[i]; i = (i + 1) & f->slot_mask)
        if (same(&f->entries[f->slots[i] - 1], hash, process, kind, qualname, filename)) return f->slots[i];
    function_entry *entries = grow_array(f->entries, &f->cap, f->count + 1ull, sizeof *entries, 256);
    if (!entries) return 0;
    f->entries = entries;
    if (!room(&f->fresh, &f->fresh_cap, f->fresh_count)) return 0;
    char *q = strdup(qualname), *file = strdup(filename);
    if (!q || !file) {
        free(q);
        free(file);
        return 0;
    }
    uint32_t id = f->free_count ? f->free_ids[--f->free_count] : ++f->count;
    f->entries[id - 1] = (function_entry){hash, process, kind, q, file, task, native, false, kind ? 1 : 0};
    f->slots[i] = id;
    f->fresh[f->fresh_count++] = id;
    return id;
}

/* Take `id` out of the index (backward-shift deletion keeps probe chains whole). */
static void unindex(function_table *f, uint32_t id) {
    uint32_t i = (uint32_t)(f->entries[id - 1].hash >> 32) & f->slot_mask;
    while (f->slots[i] && f->slots[i] != id) i = (i + 1) & f->slot_mask;
    if (!f->slots[i]) return;
    f->slots[i] = 0;
    for (uint32_t j = (i + 1) & f->slot_mask; f->slots[j]; j = (j + 1) & f->slot_mask) {
        uint32_t moved = f->slots[j];
        f->slots[j] = 0;
        uint32_t at = (uint32_t)(f->entries[moved - 1].hash >> 32) & f->slot_mask;
        while (f->slots[at]) at = (at + 1) & f->slot_mask;
        f->slots[at] = moved;
    }
}

static void retire(function_table *f, uint32_t id) {
    if (!room(&f->free_ids, &f->free_cap, f->free_count) || !room(&f->retired, &f->retired_cap, f->retired_count))
        return; /* kept: a function too many, not a wrong one */
    function_entry *e = &f->entries[id - 1];
    unindex(f, id);
    /* Made since the previous drain: never handed out, so never told gone. */
    bool told = true;
    for (uint32_t k = 0; k < f->fresh_count && told; k++)
        if (f->fresh[k] == id) {
            f->fresh[k] = f->fresh[--f->fresh_count];
            told = false;
        }
    free(e->qualname);
    free(e->filename);
    e->qualname = e->filename = NULL;
    e->free = true;
    f->free_ids[f->free_count++] = id;
    if (told) f->retired[f->retired_count++] = id;
}

static process_functions *process_of(function_table *f, uint32_t process) {
    if (process >= f->process_cap) {
        uint32_t cap = f->process_cap;
        process_functions *grown = grow_array(f->processes, &cap, process + 1ull, sizeof *grown, 4);
        if (!grown) return NULL;
        memset(grown + f->process_cap, 0, (cap - f->process_cap) * sizeof *grown);
        f->processes = grown;
        f->process_cap = cap;
    }
    return &f->processes[process];
}

uint32_t functions_add_code(function_table *f, uint32_t process, uint32_t code_id, const char *qualname,
                            const char *filename, bool task, bool native) {
    process_functions *p = process_of(f, process);
    if (!p) return 0;
    if (code_id >= p->code_count) {
        uint32_t cap = p->code_cap;
        uint32_t *grown = grow_array(p->of_code, &cap, code_id + 1ull, sizeof *grown, 256);
        if (!grown) return 0;
        memset(grown + p->code_count, 0, (code_id + 1 - p->code_count) * sizeof *grown);
        p->of_code = grown;
        p->code_cap = cap;
        p->code_count = code_id + 1;
    }
    if (p->of_code[code_id]) functions_release_code(f, process, code_id); /* a recycled code id */
    uint32_t id = intern(f, process, 0, qualname, filename, task, native);
    if (id) f->entries[id - 1].refs++;
    p->of_code[code_id] = id;
    return id;
}

void functions_release_code(function_table *f, uint32_t process, uint32_t code_id) {
    process_functions *p = process < f->process_cap ? &f->processes[process] : NULL;
    if (!p || code_id >= p->code_count || !p->of_code[code_id]) return;
    uint32_t id = p->of_code[code_id];
    p->of_code[code_id] = 0;
    function_entry *e = &f->entries[id - 1];
    if (e->kind || e->free || !e->refs) return;
    if (--e->refs == 0) retire(f, id);
}

uint32_t functions_of_kind(function_table *f, uint32_t process, uint32_t kind) {
    kind &= ~(uint32_t)PYTOP_STACK_INCOMPLETE;
    process_functions *p = process_of(f, process);
    if (!p || kind > PYTOP_STACK_UNPLACED) return 0;
    if (!p->kinds[kind]) p->kinds[kind] = intern(f, process, kind ? kind : PYTOP_STACK_EMPTY, "", "", false, false);
    return p->kinds[kind];
}
