/*
 * The code-object cache: remote address -> small integer id, with names and decoded line
 * ranges, read once per code object. A sample then costs no reads for code objects at all.
 *
 * An address can be reused after a code object dies, so an entry is confirmed whenever a frame
 * refers to it (the frame holds the object alive, so the object is the one at that address for
 * as long as the frame is). From 3.14 the target counts code-object deaths
 * (interp->_code_object_generation): an entry is re-read only when that count moved. Before,
 * its header is compared with the one this sample holds anyway (headers in use are prefetched
 * with the stacks), and only a header not prefetched costs a read, shared by all such entries
 * of the sample in one syscall; so does a frame whose instruction offset does not fit its
 * bytecode. An entry found replaced keeps its id and names (samples already handed out refer
 * to them) and the address gets a new entry.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TYPE_NAME_BYTES 16
#define LINETABLE_SPECULATIVE_BYTES 256

int codes_init(code_cache *c, remote *mem, const pytop_layout *L) {
    memset(c, 0, sizeof *c);
    c->mem = mem;
    c->L = L;
    c->slot_mask = 1023;
    c->slots = calloc(c->slot_mask + 1, sizeof *c->slots);
    return c->slots ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

void codes_free(code_cache *c) {
    for (uint32_t i = 0; i < c->count; i++) {
        code_entry *e = &c->entries[i];
        free(e->name);
        if (e->qualname != e->name) free(e->qualname);
        free(e->filename);
        line_ranges_free(&e->lines);
    }
    free(c->entries);
    free(c->slots);
    free(c->due);
    free(c->free_ids);
    free(c->fresh);
    memset(c, 0, sizeof *c);
}

const code_entry *codes_get(const code_cache *c, uint32_t id) {
    return id >= 1 && id <= c->count && !c->entries[id - 1].free ? &c->entries[id - 1] : NULL;
}

bool codes_is_resumable(const code_cache *c, uint32_t id) {
    const code_entry *code = codes_get(c, id);
    return code && code->resumable;
}

/* threading's Thread._bootstrap(self) (2.7: Thread.__bootstrap). */
bool codes_is_thread_bootstrap(const code_cache *c, uint32_t id) {
    const code_entry *code = codes_get(c, id);
    size_t n = code ? strlen(code->filename) : 0;
    return code && (strcmp(code->name, "_bootstrap") == 0 || strcmp(code->name, "__bootstrap") == 0) && n >= 12 &&
           strcmp(code->filename + n - 12, "threading.py") == 0;
}

static uint32_t slot_of(uint64_t addr, uint32_t mask) {
    return hash_slot(addr >> 4, mask); /* objects are 16-byte aligned */
}

/* The slot holding `addr`, or the empty slot where it would go. */
static uint32_t find_slot(const code_cache *c, uint64_t addr) {
    uint32_t i = slot_of(addr, c->slot_mask);
    while (c->slots[i] && c->entries[c->slots[i] - 1].addr != addr) i = (i + 1) & c->slot_mask;
    return i;
}

static int grow_slots(code_cache *c) {
    uint32_t old_mask = c->slot_mask, *old = c->slots;
    uint32_t mask = old_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    c->slots = slots;
    c->slot_mask = mask;
    for (uint32_t i = 0; i <= old_mask; i++)
        if (old[i]) c->slots[find_slot(c, c->entries[old[i] - 1].addr)] = old[i];
    free(old);
    return PYTOP_OK;
}

/* Remove `addr` from the table (backward-shift deletion keeps probe chains intact). */
static void unmap_address(code_cache *c, uint64_t addr) {
    uint32_t i = find_slot(c, addr);
    if (!c->slots[i]) return;
    c->slots[i] = 0;
    for (uint32_t j = (i + 1) & c->slot_mask; c->slots[j]; j = (j + 1) & c->slot_mask) {
        uint32_t id = c->slots[j];
        c->slots[j] = 0;
        c->slots[find_slot(c, c->entries[id - 1].addr)] = id;
    }
}

static bool type_known(const uint64_t *set, uint64_t type) {
    for (int i = 0; i < 8; i++)
        if (set[i] == type) return true;
    return false;
}

static void type_remember(uint64_t *set, uint64_t type) {
    memmove(set + 1, set, 7 * sizeof *set);
    set[0] = type;
}

void codes_begin_sample(code_cache *c) {
    c->due_count = 0;
    c->bad_count = 0;
}

/* Is `type` the target's code type? Answered from tp_name once per type object. */
static int check_code_type(code_cache *c, uint64_t type) {
    if (type_known(c->type_ok, type)) return PYTOP_OK;
    if (type == 0 || type_known(c->type_bad, type)) return PYTOP_ERR_CORRUPT;
    uint64_t name_ptr;
    char name[TYPE_NAME_BYTES];
    int status = remote_read(c->mem, type + (uint64_t)c->L->tp_name, &name_ptr, sizeof name_ptr);
    if (status == PYTOP_OK) status = remote_read(c->mem, name_ptr, name, sizeof name);
    if (status != PYTOP_OK) return status;
    bool is_code = memcmp(name, "code", 5) == 0;
    type_remember(is_code ? c->type_ok : c->type_bad, type);
    return is_code ? PYTOP_OK : PYTOP_ERR_CORRUPT;
}

/* The identity of the code object whose header is `h`. */
static void read_fingerprint(const pytop_layout *L, const uint8_t *h, code_entry *e) {
    e->type = load_u64(h, L->ob_type);
    e->name_ptr = load_u64(h, L->co_name);
    e->qualname_ptr = L->co_qualname >= 0 ? load_u64(h, L->co_qualname) : e->name_ptr;
    e->filename_ptr = load_u64(h, L->co_filename);
    e->linetable_ptr = load_u64(h, L->co_linetable);
    e->firstlineno = load_i32(h, L->co_firstlineno);
    e->resumable = L->co_flags >= 0 && L->co_flags_resumable > 0 &&
                   (load_i32(h, L->co_flags) & L->co_flags_resumable) != 0;
}

static bool same_object(const code_entry *a, const code_entry *b) {
    return a->type == b->type && a->name_ptr == b->name_ptr && a->qualname_ptr == b->qualname_ptr &&
           a->filename_ptr == b->filename_ptr && a->linetable_ptr == b->linetable_ptr &&
           a->firstlineno == b->firstlineno;
}

/* Length of a bytes object, and its data if asked. */
static const uint8_t *read_bytes(code_cache *c, uint64_t addr, size_t max, int64_t *length,
                                 int *status) {
    const pytop_layout *L = c->L;
    size_t header = (size_t)L->bytes_sval;
    const uint8_t *h = remote_view(c->mem, addr, header + LINETABLE_SPECULATIVE_BYTES, 0, status);
    size_t have = header + LINETABLE_SPECULATIVE_BYTES;
    if (!h) {
        have = header;
        h = remote_view(c->mem, addr, header, 0, status);
    }
    if (!h) return NULL;
    *length = load_i64(h, L->var_ob_size);
    if (*length < 0 || (uint64_t)*length > max) {
        *status = *length < 0 ? PYTOP_ERR_CORRUPT : PYTOP_ERR_LIMIT;
        return NULL;
    }
    if (header + (size_t)*length <= have) return h + header;
    return remote_view(c->mem, addr + header, (size_t)*length, 0, status);
}

static int32_t code_length_in_bytes(code_cache *c, const uint8_t *h, int *status) {
    const pytop_layout *L = c->L;
    int64_t n;
    if (L->co_code >= 0) { /* up to 3.10: a bytes object */
        if (!read_bytes(c, load_u64(h, L->co_code), INT32_MAX, &n, status)) return -1;
    } else { /* 3.11+: the code object is a var-object of 2-byte code units */
        n = load_i64(h, L->var_ob_size) * 2;
    }
    if (n < 0 || n > INT32_MAX) {
        *status = PYTOP_ERR_CORRUPT;
        return -1;
    }
    return (int32_t)n;
}

static int fill_entry(code_cache *c, uint64_t addr, const uint8_t *h, code_entry *e) {
    const pytop_layout *L = c->L;
    int status;
    memset(e, 0, sizeof *e);
    e->addr = addr;
    read_fingerprint(L, h, e);
    if ((status = check_code_type(c, e->type)) != PYTOP_OK) return status;
    e->code_bytes = code_length_in_bytes(c, h, &status);
    if (e->code_bytes < 0) return status;
    e->name = text_read(c->mem, L, e->name_ptr, MAX_NAME_CHARS, &status);
    if (!e->name) return status;
    e->qualname = e->name;
    if (e->qualname_ptr != e->name_ptr) {
        e->qualname = text_read(c->mem, L, e->qualname_ptr, MAX_NAME_CHARS, &status);
        if (!e->qualname) return status;
    }
    e->filename = text_read(c->mem, L, e->filename_ptr, MAX_FILENAME_CHARS, &status);
    if (!e->filename) return status;
    int64_t table_length;
    const uint8_t *table = read_bytes(c, e->linetable_ptr, MAX_LINETABLE_BYTES, &table_length, &status);
    if (!table) return status;
    return line_ranges_decode(L->line_table, table, (size_t)table_length, e->firstlineno, &e->lines);
}

static void free_entry_data(code_entry *e) {
    free(e->name);
    if (e->qualname != e->name) free(e->qualname);
    free(e->filename);
    line_ranges_free(&e->lines);
    e->name = e->qualname = e->filename = NULL;
}

static void mark_checked(code_cache *c, code_entry *e) { e->checked_generation = c->generation; }

/* Room for one more id in the list the engine takes new entries from. */
static bool fresh_room(code_cache *c) {
    uint32_t *fresh = grow_array(c->fresh, &c->fresh_cap, c->fresh_count + 1ull, sizeof *fresh, 64);
    if (fresh) c->fresh = fresh;
    return fresh != NULL;
}

/* Read the code object at `addr` into a new entry (a recycled one if any) and map the address. */
static int load(code_cache *c, uint64_t addr, uint32_t *id) {
    if (c->count >= UINT32_MAX / 2) return PYTOP_ERR_LIMIT;
    if ((c->count + 1) * 2 > c->slot_mask && grow_slots(c) != PYTOP_OK) return PYTOP_ERR_NOMEM;
    code_entry *entries = grow_array(c->entries, &c->cap, c->count + 1ull, sizeof *entries, 256);
    if (!entries || !fresh_room(c)) return PYTOP_ERR_NOMEM;
    c->entries = entries;
    int status;
    const uint8_t *h = remote_view(c->mem, addr, (size_t)c->L->co_header_size, VIEW_TRACK, &status);
    if (!h) return status;
    code_entry e;
    status = fill_entry(c, addr, h, &e);
    if (status != PYTOP_OK) {
        free_entry_data(&e);
        return status;
    }
    mark_checked(c, &e);
    e.memo_offset = INT32_MIN;
    e.used = true;
    *id = c->free_count ? c->free_ids[--c->free_count] : ++c->count;
    c->entries[*id - 1] = e;
    c->slots[find_slot(c, addr)] = *id;
    c->fresh[c->fresh_count++] = *id;
    return PYTOP_OK;
}

static int add_named(code_cache *c, char *name, const char *filename, bool native, uint32_t *id) {
    code_entry *entries = c->count < UINT32_MAX / 2
                              ? grow_array(c->entries, &c->cap, c->count + 1ull, sizeof *entries, 256)
                              : NULL;
    char *file = strdup(filename);
    if (entries) c->entries = entries;
    if (!entries || !file || !fresh_room(c)) {
        free(name);
        free(file);
        return PYTOP_ERR_NOMEM;
    }
    c->entries[c->count++] = (code_entry){.name = name, .qualname = name, .filename = file,
                                          .code_bytes = INT32_MAX, .memo_offset = INT32_MIN, .pseudo = true,
                                          .native = native};
    *id = c->count;
    c->fresh[c->fresh_count++] = *id;
    return PYTOP_OK;
}

int codes_add_pseudo(code_cache *c, char *name, const char *filename, uint32_t *id) {
    return add_named(c, name, filename, false, id);
}

int codes_add_native(code_cache *c, char *name, const char *library, uint32_t *id) {
    return add_named(c, name, library, true, id);
}

static void add_due(code_cache *c, uint32_t id) {
    for (uint32_t i = 0; i < c->due_count; i++)
        if (c->due[i] == id) return;
    uint32_t *due = grow_array(c->due, &c->due_cap, c->due_count + 1ull, sizeof *due, 32);
    if (!due) return; /* checked next time */
    c->due = due;
    c->due[c->due_count++] = id;
}

/* Is entry `e` still the object at its address, by the header this sample's reads already
 * cached? 1 yes, 0 replaced, -1 not cached. */
static int confirm_by_cached_header(code_cache *c, code_entry *e) {
    const uint8_t *h = remote_view_if_cached(c->mem, e->addr, (size_t)c->L->co_header_size);
    if (!h) return -1;
    code_entry now;
    read_fingerprint(c->L, h, &now);
    return same_object(e, &now);
}

int codes_lookup(code_cache *c, uint64_t addr, uint32_t *id) {
    uint32_t found = c->slots[find_slot(c, addr)];
    if (!found) return load(c, addr, id);
    code_entry *e = &c->entries[found - 1];
    if (c->generation_known) {
        if (e->checked_generation != c->generation) add_due(c, found);
    } else {
        int same = confirm_by_cached_header(c, e);
        if (same == 0) {
            e->stale = true;
            unmap_address(c, addr);
            return load(c, addr, id);
        }
        if (same < 0) add_due(c, found);
    }
    e->used = true;
    *id = found;
    return PYTOP_OK;
}

void codes_force_check(code_cache *c, uint32_t id) { add_due(c, id); }

int codes_confirm_due(code_cache *c) {
    uint32_t n = c->due_count;
    if (n == 0) return 0;
    size_t header = (size_t)c->L->co_header_size;
    range *want = malloc(n * (sizeof *want + sizeof(uint8_t *) + sizeof(bool)) + n * header);
    if (!want) return 0;
    uint8_t **bufs = (uint8_t **)(want + n);
    bool *ok = (bool *)(bufs + n);
    uint8_t *space = (uint8_t *)(ok + n);
    for (uint32_t i = 0; i < n; i++) {
        want[i] = (range){c->entries[c->due[i] - 1].addr, header, NULL, false, 0};
        bufs[i] = space + (size_t)i * header;
    }
    int replaced = 0;
    if (remote_readv(c->mem, want, bufs, n, ok) == PYTOP_OK) {
        for (uint32_t i = 0; i < n; i++) {
            code_entry *e = &c->entries[c->due[i] - 1];
            code_entry now;
            if (ok[i]) read_fingerprint(c->L, bufs[i], &now);
            if (ok[i] && same_object(e, &now)) {
                mark_checked(c, e);
            } else {
                e->stale = true; /* the id stays valid for names; the address is free again */
                unmap_address(c, e->addr);
                replaced++;
            }
        }
    }
    free(want);
    c->due_count = 0;
    return replaced;
}

int32_t codes_line(code_cache *c, uint32_t id, int32_t byte_offset) {
    if (id < 1 || id > c->count) return -1;
    code_entry *e = &c->entries[id - 1];
    if (e->memo_offset != byte_offset) {
        e->memo_line = line_ranges_lookup(&e->lines, byte_offset);
        e->memo_offset = byte_offset;
    }
    return e->memo_line;
}

const uint32_t *codes_take_fresh(code_cache *c, uint32_t *count) {
    *count = c->fresh_count;
    c->fresh_count = 0;
    return c->fresh;
}

uint32_t codes_recycle(code_cache *c, void (*recycled)(void *ctx, uint32_t id), void *ctx) {
    uint32_t n = 0;
    for (uint32_t id = 1; id <= c->count; id++) {
        code_entry *e = &c->entries[id - 1];
        bool used = e->used;
        e->used = false;
        /* Gone, or not used since the previous round, and named by no stack kept: a code object
         * alive after all is read again if a sample meets it. Pseudo-frames (tasks) stay. */
        if (e->free || e->pseudo || e->refs || (!e->stale && used)) continue;
        uint32_t *ids = grow_array(c->free_ids, &c->free_cap, c->free_count + 1ull, sizeof *ids, 64);
        if (!ids) break; /* kept for now: the next round frees it */
        c->free_ids = ids;
        if (!e->stale) unmap_address(c, e->addr);
        free_entry_data(e);
        e->free = true;
        e->stale = false;
        c->free_ids[c->free_count++] = id;
        recycled(ctx, id);
        n++;
    }
    return n;
}
