/*
 * Plain objects of the target, read without trusting them: ints, dicts, modules and the
 * attributes of instances of Python classes. Used to find thread names (names.c), at a few
 * reads per new thread, never per sample.
 *
 * Where an instance keeps its attributes changed in nearly every version (all offsets come from
 * the layout, see tools/gen_layouts.py):
 *   3.8-3.10  a __dict__ at tp_dictoffset
 *   3.11      a values array before the object (managed_values), else a dict (managed_dict)
 *   3.12      one word before the object: values pointer + 1 if odd, else a dict
 *   3.13+     inline values at obj + tp_basicsize when the type says so (and `valid`), else
 *             the managed dict
 * Values arrays follow the order of the type's shared keys (ht_cached_keys). Dicts: entries
 * follow a table of indices whose width depends on the size; a split dict's values live in
 * a separate array. Every count is bounded and every type checked by name.
 *
 * 2.7 (the layout says so by its fields): a dict is one open-addressed table of ma_mask + 1
 * (hash, key, value) entries at ma_table, empty and deleted ones with no value; instances keep
 * a __dict__ at tp_dictoffset; ints are PyIntObject (a C long) or PyLongObject ("long"); str
 * keys are PyStringObject.
 */
#include <string.h>

#include "internal.h"

#define MAX_DICT_ENTRIES (1u << 16)
#define TYPE_NAME_BYTES 16
#define KEY_PEEK_BYTES 64   /* of a str key: enough for its header and a short ASCII text */

static int read_u64(objects *o, uint64_t addr, uint64_t *out) {
    int status;
    const uint8_t *p = remote_view(o->mem, addr, 8, 0, &status);
    if (p) *out = load_u64(p, 0);
    return status;
}

static const char *const KIND_NAMES[] = {"", "dict", "int", "str", "module", "code", "long"};

int object_kind_of(objects *o, uint64_t obj, int *kind) {
    uint64_t type = 0;
    if (!plausible_pointer(obj)) return PYTOP_ERR_CORRUPT;
    int status = read_u64(o, obj + (uint64_t)o->L->ob_type, &type);
    if (status != PYTOP_OK) return status;
    type_memo *m = &o->types;
    for (int i = 0; i < 16; i++)
        if (m->addr[i] == type && type) {
            *kind = m->kind[i];
            return PYTOP_OK;
        }
    uint64_t name_ptr = 0;
    char name[TYPE_NAME_BYTES];
    if (!plausible_pointer(type)) return PYTOP_ERR_CORRUPT;
    status = read_u64(o, type + (uint64_t)o->L->tp_name, &name_ptr);
    if (status == PYTOP_OK) status = remote_read(o->mem, name_ptr, name, sizeof name);
    if (status != PYTOP_OK) return status;
    *kind = OBJECT_OTHER;
    for (int k = 1; k < (int)(sizeof KIND_NAMES / sizeof *KIND_NAMES); k++)
        if (strncmp(name, KIND_NAMES[k], sizeof name) == 0) *kind = k;
    m->addr[m->next % 16] = type;
    m->kind[m->next % 16] = (uint8_t)*kind;
    m->next++;
    return PYTOP_OK;
}

static int expect_kind(objects *o, uint64_t obj, int want) {
    int kind = OBJECT_OTHER;
    int status = object_kind_of(o, obj, &kind);
    if (status != PYTOP_OK) return status;
    return kind == want ? PYTOP_OK : PYTOP_ERR_CORRUPT;
}

int object_int(objects *o, uint64_t obj, uint64_t *value) {
    const pytop_layout *L = o->L;
    int kind = OBJECT_OTHER;
    int status = object_kind_of(o, obj, &kind);
    if (status != PYTOP_OK) return status;
    if (kind == OBJECT_INT && L->int_ival >= 0) { /* 2.7's int: a C long */
        uint64_t v = 0;
        if ((status = read_u64(o, obj + (uint64_t)L->int_ival, &v)) != PYTOP_OK) return status;
        if ((int64_t)v < 0) return PYTOP_ERR_CORRUPT; /* not a thread ident */
        *value = v;
        return PYTOP_OK;
    }
    if (kind != OBJECT_INT && !(kind == OBJECT_LONG_27 && L->int_ival >= 0)) return PYTOP_ERR_CORRUPT;
    uint64_t ndigits;
    bool negative;
    if (L->long_tag >= 0) { /* 3.12+: digit count << 3 | sign (0 positive, 1 zero, 2 negative) */
        uint64_t tag = 0;
        if ((status = read_u64(o, obj + (uint64_t)L->long_tag, &tag)) != PYTOP_OK) return status;
        ndigits = tag >> 3;
        negative = (tag & 3) == 2;
    } else {
        uint64_t size = 0;
        if ((status = read_u64(o, obj + (uint64_t)L->var_ob_size, &size)) != PYTOP_OK) return status;
        negative = (int64_t)size < 0;
        ndigits = negative ? (uint64_t)(-(int64_t)size) : size;
    }
    unsigned shift = L->long_shift > 0 && L->long_shift < 32 ? (unsigned)L->long_shift : 30;
    uint32_t digits[4] = {0};
    /* not a thread ident; nor digits of 30 bits in uint32s (a 15-bit build's are uint16s) */
    if (negative || ndigits * shift > 64 + shift || shift != 30 || ndigits > 4) return PYTOP_ERR_CORRUPT;
    if (ndigits) { /* a view: the int's header was just read, its digits follow it */
        const uint8_t *p = remote_view(o->mem, obj + (uint64_t)L->long_digits, 4 * ndigits, 0, &status);
        if (!p) return status;
        memcpy(digits, p, 4 * ndigits);
    }
    uint64_t v = 0;
    for (uint64_t i = 0; i < ndigits; i++) v |= (uint64_t)digits[i] << (shift * i);
    *value = v;
    return PYTOP_OK;
}

/* The text of a str key, when it is compact ASCII: *length chars at *data (a view). */
static bool ascii_text(objects *o, const uint8_t *h, size_t have, const uint8_t **data, size_t *length) {
    const pytop_layout *L = o->L;
    if (L->str_state < 0) { /* 2.7: a PyStringObject's bytes */
        int64_t n = load_i64(h, L->var_ob_size);
        if (n < 0 || (size_t)L->bytes_sval + (size_t)n > have) return false;
        *data = h + L->bytes_sval;
        *length = (size_t)n;
        return true;
    }
    int64_t n = load_i64(h, L->str_length);
    uint32_t state = load_u32(h, L->str_state);
    bool compact = (state >> L->str_compact_shift) & 1, ascii = (state >> L->str_ascii_shift) & 1;
    if (!compact || !ascii || n < 0 || (size_t)L->str_ascii_size + (size_t)n > have) return false;
    *data = h + L->str_ascii_size;
    *length = (size_t)n;
    return true;
}

int object_str_equals(objects *o, uint64_t obj, const char *want, bool *equal) {
    *equal = false;
    int status;
    size_t header = (size_t)(o->L->str_state < 0 ? o->L->bytes_sval : o->L->str_ascii_size);
    const uint8_t *h = remote_view(o->mem, obj, header + strlen(want), 0, &status);
    if (!h) return status;
    const uint8_t *data;
    size_t length;
    if (ascii_text(o, h, header + strlen(want), &data, &length))
        *equal = length == strlen(want) && memcmp(data, want, length) == 0;
    return PYTOP_OK;
}

/* A dict's entries: where they are and how they are laid out. */
typedef struct dict_view {
    uint64_t entries, values; /* values: the split values array (0 when combined) */
    uint32_t count;           /* entries used so far (deleted ones included) */
    uint32_t entry_size;
    int32_t hash_at, key_at, value_at; /* -1: the entries keep no hash */
    uint64_t indices;         /* the hash table of entry numbers (0: none, 2.7's flat table) */
    uint64_t slots;           /* its length, a power of two */
    uint32_t index_width;     /* bytes an entry number takes in it */
} dict_view;

static int index_width(uint64_t size) { return size <= 0xFF ? 1 : size <= 0xFFFF ? 2 : size <= 0xFFFFFFFFu ? 4 : 8; }

/* 2.7: the table, every slot of it (ma_mask + 1, a power of two). */
static int view_dict_27(objects *o, uint64_t dict, dict_view *v) {
    const pytop_layout *L = o->L;
    uint64_t mask = 0, table = 0;
    int status = read_u64(o, dict + (uint64_t)L->dict_ma_mask, &mask);
    if (status == PYTOP_OK) status = read_u64(o, dict + (uint64_t)L->dict_ma_table, &table);
    if (status != PYTOP_OK) return status;
    if (!plausible_pointer(table) || (mask & (mask + 1))) return PYTOP_ERR_CORRUPT;
    if (mask + 1 > MAX_DICT_ENTRIES) return PYTOP_ERR_LIMIT;
    *v = (dict_view){.entries = table, .values = 0, .count = (uint32_t)(mask + 1), .entry_size = (uint32_t)L->dict_entry_size,
                     .hash_at = L->dict_entry_hash, .key_at = L->dict_entry_key, .value_at = L->dict_entry_value};
    return PYTOP_OK;
}

static int view_dict(objects *o, uint64_t dict, dict_view *v) {
    const pytop_layout *L = o->L;
    uint64_t keys = 0, values = 0;
    int status = expect_kind(o, dict, OBJECT_DICT);
    if (status == PYTOP_OK && L->dict_ma_table >= 0) return view_dict_27(o, dict, v);
    if (status == PYTOP_OK) status = read_u64(o, dict + (uint64_t)L->dict_ma_keys, &keys);
    if (status == PYTOP_OK) status = read_u64(o, dict + (uint64_t)L->dict_ma_values, &values);
    if (status != PYTOP_OK) return status;
    if (!plausible_pointer(keys)) return PYTOP_ERR_CORRUPT;
    const uint8_t *k = remote_view(o->mem, keys, (size_t)L->dk_indices, 0, &status);
    if (!k) return status;
    uint64_t nentries = load_u64(k, L->dk_nentries), index_bytes;
    *v = (dict_view){.values = values, .entry_size = (uint32_t)L->dict_entry_size,
                     .hash_at = L->dict_entry_hash, .key_at = L->dict_entry_key, .value_at = L->dict_entry_value};
    if (L->dk_log2_size >= 0) { /* 3.11+ */
        uint8_t log2_size = k[L->dk_log2_size], log2_index_bytes = k[L->dk_log2_index_bytes], kind = k[L->dk_kind];
        if (log2_size > 30 || log2_index_bytes < log2_size || log2_index_bytes > log2_size + 3 || kind > 2)
            return PYTOP_ERR_CORRUPT;
        index_bytes = 1ull << log2_index_bytes;
        v->slots = 1ull << log2_size;
        v->index_width = 1u << (log2_index_bytes - log2_size);
        if (kind != 0) { /* unicode keys: (key, value) entries, no hash */
            v->entry_size = (uint32_t)L->dict_unicode_entry_size;
            v->hash_at = -1;
            v->key_at = L->dict_unicode_entry_key;
            v->value_at = L->dict_unicode_entry_value;
        }
        if (values && L->dict_values_values > 0) v->values += (uint64_t)L->dict_values_values;
    } else {
        uint64_t size = load_u64(k, L->dk_size);
        if (size > (1u << 30) || (size & (size - 1))) return PYTOP_ERR_CORRUPT;
        index_bytes = size * (uint64_t)index_width(size);
        v->slots = size;
        v->index_width = (uint32_t)index_width(size);
    }
    if (nentries > MAX_DICT_ENTRIES) return PYTOP_ERR_LIMIT;
    v->indices = keys + (uint64_t)L->dk_indices;
    v->entries = v->indices + index_bytes;
    v->count = (uint32_t)nentries;
    return PYTOP_OK;
}

int object_dict_items(objects *o, uint64_t dict, uint32_t limit,
                      bool (*visit)(void *ctx, uint64_t key, uint64_t value), void *ctx) {
    dict_view v;
    int status = view_dict(o, dict, &v);
    if (status != PYTOP_OK || v.count == 0) return status;
    uint32_t n = v.count < limit ? v.count : limit;
    const uint8_t *entries = remote_view(o->mem, v.entries, (size_t)n * v.entry_size, 0, &status);
    const uint8_t *values = entries && v.values ? remote_view(o->mem, v.values, (size_t)n * 8, 0, &status) : NULL;
    if (!entries || (v.values && !values)) return status;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = entries + (size_t)i * v.entry_size;
        uint64_t key = load_u64(e, v.key_at);
        uint64_t value = values ? load_u64(values, (int32_t)(8 * i)) : load_u64(e, v.value_at);
        if (key && value && !visit(ctx, key, value)) break;
    }
    return PYTOP_OK;
}

/* Which entry holds a key: by its stored hash, else by reading candidate keys together. */
typedef struct key_search {
    objects *o;
    const char *text;  /* a str key, or NULL */
    uint64_t number;   /* an int key */
    uint64_t found;
    int status;
} key_search;

/* Whether the entry at `e` holds the int `key`: a key is there and its stored hash is `key` (an
 * int's hash is itself), its value if so. The key object is not read (a page pinned for each
 * name): in a table whose keys are ints, only the int itself has that hash, and what the
 * caller finds is its to check (names.c: the Thread's own ident). */
static bool entry_holds_int(const dict_view *v, const uint8_t *e, uint64_t key, uint64_t *value) {
    if (!load_u64(e, v->key_at) || load_u64(e, v->hash_at) != key) return false;
    *value = load_u64(e, v->value_at);
    return true;
}

/* Up to this many slots of a hash table probed before reading its entries whole: a real
 * table is at most two thirds full, and meets an empty slot within a few. */
#define MAX_PROBES 64

/* The int `key` looked up as CPython does (3.6+): its hash picks slots of the index table in
 * a fixed order until one holds its entry or none. Two small reads a slot, where reading the
 * entries whole took a 2,000-thread pool's `_active` (48 KB) for every thread named.
 * *searched: false when the probes did not end (torn or hostile memory): read them whole. */
static int probe_int(objects *o, const dict_view *v, uint64_t key, uint64_t *value, bool *searched) {
    int status = PYTOP_OK;
    uint64_t mask = v->slots - 1, slot = key & mask, perturb = key;
    *searched = false;
    for (int probe = 0; probe < MAX_PROBES; probe++) {
        const uint8_t *at = remote_view(o->mem, v->indices + slot * v->index_width, v->index_width, 0, &status);
        if (!at) return status;
        int64_t ix = v->index_width == 1 ? (int8_t)at[0] : v->index_width == 2 ? (int16_t)load_u16(at, 0)
                   : v->index_width == 4 ? load_i32(at, 0) : load_i64(at, 0);
        if (ix == -1) { /* DKIX_EMPTY: not in the table */
            *searched = true;
            return PYTOP_OK;
        }
        if (ix >= 0) { /* (-2: a deleted entry's slot, go on) */
            if ((uint64_t)ix >= v->count) return PYTOP_OK; /* torn: not searched */
            const uint8_t *e = remote_view(o->mem, v->entries + (uint64_t)ix * v->entry_size, v->entry_size, 0, &status);
            if (!e) return status;
            if (entry_holds_int(v, e, key, value)) {
                *searched = true;
                return PYTOP_OK;
            }
        }
        perturb >>= 5; /* PERTURB_SHIFT */
        slot = (slot * 5 + perturb + 1) & mask;
    }
    return PYTOP_OK;
}

int object_dict_get_int(objects *o, uint64_t dict, uint64_t key, uint64_t *value) {
    dict_view v;
    *value = 0;
    int status = view_dict(o, dict, &v);
    if (status != PYTOP_OK || v.count == 0) return status;
    if (v.hash_at < 0) return PYTOP_OK; /* only str keys in it */
    /* An int's hash is the int itself below 2**61 - 1 (thread idents are far below). */
    if (v.indices && !v.values && v.slots && (v.slots & (v.slots - 1)) == 0) {
        bool searched;
        status = probe_int(o, &v, key, value, &searched);
        if (status != PYTOP_OK || searched) return status;
        *value = 0;
    }
    const uint8_t *entries = remote_view(o->mem, v.entries, (size_t)v.count * v.entry_size, 0, &status);
    const uint8_t *values = entries && v.values ? remote_view(o->mem, v.values, (size_t)v.count * 8, 0, &status) : NULL;
    if (!entries || (v.values && !values)) return status;
    for (uint32_t i = 0; i < v.count; i++) {
        const uint8_t *e = entries + (size_t)i * v.entry_size;
        if (!load_u64(e, v.key_at) || load_u64(e, v.hash_at) != key) continue; /* (see entry_holds_int) */
        *value = values ? load_u64(values, (int32_t)(8 * i)) : load_u64(e, v.value_at);
        return PYTOP_OK;
    }
    return PYTOP_OK;
}

/* The entry that held `want` when this table was last searched, if the same key object is
 * still there (-1: not remembered, or moved). */
static int64_t remembered_key(const key_memo *m, uint64_t entries_at, const uint8_t *entries, uint32_t count,
                              uint32_t entry_size, int32_t key_at, const char *want) {
    for (uint32_t s = 0; s < KEY_MEMO_SLOTS; s++)
        if (m->entries[s] == entries_at && m->text[s] && m->index[s] < count && strcmp(m->text[s], want) == 0 &&
            load_u64(entries + (size_t)m->index[s] * entry_size, key_at) == m->key[s])
            return m->index[s];
    return -1;
}

static void remember_key(key_memo *m, uint64_t entries_at, uint32_t index, uint64_t key, const char *want) {
    for (uint32_t s = 0; s < KEY_MEMO_SLOTS; s++) /* a table searched again: its slot, not a second one */
        if (m->entries[s] == entries_at && m->text[s] && strcmp(m->text[s], want) == 0) {
            m->index[s] = index;
            m->key[s] = key;
            return;
        }
    uint32_t s = m->next++ % KEY_MEMO_SLOTS;
    m->entries[s] = entries_at;
    m->index[s] = index;
    m->key[s] = key;
    m->text[s] = want; /* the callers' keys are string literals */
}

/* The index of the str key `want` among the first `count` entries at `entries` (a view of the
 * table at `entries_at`), or -1: the candidate keys are read together in one syscall. */
static int find_str_key(objects *o, uint64_t entries_at, const uint8_t *entries, uint32_t count, uint32_t entry_size,
                        int32_t key_at, const char *want, int64_t *index) {
    *index = -1;
    if (count == 0) return PYTOP_OK;
    if ((*index = remembered_key(&o->keys, entries_at, entries, count, entry_size, key_at, want)) >= 0)
        return PYTOP_OK;
    size_t peek = KEY_PEEK_BYTES;
    range *want_ranges = calloc(count, sizeof *want_ranges + sizeof(uint8_t *) + sizeof(bool) + peek);
    if (!want_ranges) return PYTOP_ERR_NOMEM;
    uint8_t **bufs = (uint8_t **)(want_ranges + count);
    bool *ok = (bool *)(bufs + count);
    uint8_t *space = (uint8_t *)(ok + count);
    uint32_t n = 0;
    uint32_t *slot_of = malloc(count * sizeof *slot_of);
    if (!slot_of) {
        free(want_ranges);
        return PYTOP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint64_t key = load_u64(entries + (size_t)i * entry_size, key_at);
        if (!plausible_pointer(key)) continue;
        want_ranges[n] = (range){key, peek, NULL, false, 0};
        bufs[n] = space + (size_t)n * peek;
        slot_of[n++] = i;
    }
    int status = n ? remote_readv(o->mem, want_ranges, bufs, n, ok) : PYTOP_OK;
    size_t length = strlen(want);
    for (uint32_t j = 0; status == PYTOP_OK && j < n && *index < 0; j++) {
        const uint8_t *data;
        size_t have;
        if (ok[j] && ascii_text(o, bufs[j], peek, &data, &have) && have == length && memcmp(data, want, length) == 0)
            *index = slot_of[j];
    }
    if (*index >= 0)
        remember_key(&o->keys, entries_at, (uint32_t)*index, load_u64(entries + (size_t)*index * entry_size, key_at), want);
    free(slot_of);
    free(want_ranges);
    return status;
}

int object_dict_get_str(objects *o, uint64_t dict, const char *key, uint64_t *value) {
    dict_view v;
    *value = 0;
    int status = view_dict(o, dict, &v);
    if (status != PYTOP_OK || v.count == 0) return status;
    const uint8_t *entries = remote_view(o->mem, v.entries, (size_t)v.count * v.entry_size, 0, &status);
    if (!entries) return status;
    int64_t at;
    if ((status = find_str_key(o, v.entries, entries, v.count, v.entry_size, v.key_at, key, &at)) != PYTOP_OK || at < 0)
        return status;
    if (v.values) return read_u64(o, v.values + 8 * (uint64_t)at, value);
    *value = load_u64(entries + (size_t)at * v.entry_size, v.value_at);
    return PYTOP_OK;
}

/* A class's facts (class_facts): remembered, or read now into the slot of `type`, or the
 * oldest slot. */
static class_facts *facts_of(objects *o, uint64_t type, int *status) {
    const pytop_layout *L = o->L;
    class_facts *c = NULL;
    *status = PYTOP_OK;
    for (uint32_t i = 0; i < CLASS_MEMO_SLOTS; i++)
        if (o->classes[i].type == type) {
            c = &o->classes[i];
            if (c->uses < CLASS_MEMO_USES) {
                c->uses++;
                return c;
            }
        }
    if (!c) c = &o->classes[o->class_next++ % CLASS_MEMO_SLOTS];
    class_facts fresh = {.type = type, .uses = 1};
    *status = read_u64(o, type + (uint64_t)L->tp_flags, &fresh.flags);
    bool managed = L->tpflags_managed_dict > 0 && (fresh.flags & (uint64_t)L->tpflags_managed_dict);
    if (*status == PYTOP_OK && managed && L->tpflags_inline_values > 0 && (fresh.flags & (uint64_t)L->tpflags_inline_values))
        *status = read_u64(o, type + (uint64_t)L->tp_basicsize, &fresh.basicsize);
    if (*status == PYTOP_OK && managed) *status = read_u64(o, type + (uint64_t)L->ht_cached_keys, &fresh.cached_keys);
    if (*status == PYTOP_OK && !managed) *status = read_u64(o, type + (uint64_t)L->tp_dictoffset, &fresh.dictoffset);
    if (*status != PYTOP_OK) {
        c->type = 0; /* (not half-remembered) */
        return NULL;
    }
    *c = fresh;
    return c;
}

/* The position of `name` in shared keys at `keys`, for instances that keep values arrays. */
static int shared_key_index(objects *o, uint64_t keys, const char *name, int64_t *index) {
    int status = PYTOP_OK;
    *index = -1;
    if (!keys) return status;
    /* The shared keys are a dict's keys object; view them through a fake dict's fields. */
    const pytop_layout *L = o->L;
    const uint8_t *k = remote_view(o->mem, keys, (size_t)L->dk_indices, 0, &status);
    if (!k) return status;
    uint64_t nentries = load_u64(k, L->dk_nentries);
    uint8_t log2_size = k[L->dk_log2_size], log2_index_bytes = k[L->dk_log2_index_bytes];
    if (nentries > MAX_DICT_ENTRIES || log2_size > 30 || log2_index_bytes < log2_size || log2_index_bytes > log2_size + 3)
        return PYTOP_ERR_CORRUPT;
    uint32_t entry_size = (uint32_t)(k[L->dk_kind] ? L->dict_unicode_entry_size : L->dict_entry_size);
    int32_t key_at = k[L->dk_kind] ? L->dict_unicode_entry_key : L->dict_entry_key;
    uint64_t entries_at = keys + (uint64_t)L->dk_indices + (1ull << log2_index_bytes);
    const uint8_t *entries = nentries ? remote_view(o->mem, entries_at, (size_t)nentries * entry_size, 0, &status) : NULL;
    if (nentries && !entries) return status;
    return find_str_key(o, entries_at, entries, (uint32_t)nentries, entry_size, key_at, name, index);
}

/* The position of `name` in the class's shared keys: remembered with the class, else found. A
 * name found absent is remembered too (an attribute set later makes the instance's dict). */
static int class_key_index(objects *o, class_facts *c, const char *name, int64_t *index) {
    for (uint32_t i = 0; i < c->name_count; i++)
        if (strcmp(c->names[i], name) == 0) {
            *index = c->index[i];
            return PYTOP_OK;
        }
    int status = shared_key_index(o, c->cached_keys, name, index);
    if (status == PYTOP_OK && c->name_count < CLASS_MEMO_NAMES) {
        c->names[c->name_count] = name;
        c->index[c->name_count++] = *index;
    }
    return status;
}

/* The attribute from a values array of `capacity` slots (0: unknown) at `values`. */
static int from_values(objects *o, class_facts *c, uint64_t values, uint64_t capacity, const char *name,
                       uint64_t *value) {
    int64_t index;
    int status = class_key_index(o, c, name, &index);
    if (status != PYTOP_OK || index < 0 || (capacity && (uint64_t)index >= capacity)) return status;
    return read_u64(o, values + 8 * (uint64_t)index, value);
}

int object_attribute(objects *o, uint64_t obj, const char *name, uint64_t *value) {
    const pytop_layout *L = o->L;
    uint64_t type = 0, dict = 0;
    *value = 0;
    if (!plausible_pointer(obj)) return PYTOP_ERR_CORRUPT;
    int status = read_u64(o, obj + (uint64_t)L->ob_type, &type);
    if (status == PYTOP_OK && !plausible_pointer(type)) status = PYTOP_ERR_CORRUPT;
    class_facts *c = status == PYTOP_OK ? facts_of(o, type, &status) : NULL;
    if (!c) return status;
    if (L->tpflags_managed_dict > 0 && (c->flags & (uint64_t)L->tpflags_managed_dict)) {
        if (L->tpflags_inline_values > 0 && (c->flags & (uint64_t)L->tpflags_inline_values)) { /* 3.13+ */
            if (c->basicsize > 4096) return PYTOP_ERR_CORRUPT;
            const uint8_t *head = remote_view(o->mem, obj + c->basicsize, (size_t)L->dict_values_values, 0, &status);
            if (!head) return status;
            if (head[L->dict_values_valid])
                return from_values(o, c, obj + c->basicsize + (uint64_t)L->dict_values_values,
                                   head[L->dict_values_capacity], name, value);
        } else if (L->managed_values != -1) { /* 3.11: a values pointer before the dict pointer */
            uint64_t values = 0;
            if ((status = read_u64(o, obj + (uint64_t)(int64_t)L->managed_values, &values)) != PYTOP_OK) return status;
            if (values) return from_values(o, c, values + (uint64_t)L->dict_values_values, 0, name, value);
        }
        if ((status = read_u64(o, obj + (uint64_t)(int64_t)L->managed_dict, &dict)) != PYTOP_OK) return status;
        /* 3.12 (managed dict, no inline values, ints with a tag): an odd word is a values
         * pointer stored minus one (_PyDictOrValues_SetValues). */
        if (L->long_tag >= 0 && L->tpflags_inline_values < 0 && (dict & 1))
            return from_values(o, c, dict + 1 + (uint64_t)L->dict_values_values, 0, name, value);
    } else {
        if ((int64_t)c->dictoffset <= 0 || c->dictoffset > 4096) return PYTOP_OK; /* no __dict__ we can find */
        if ((status = read_u64(o, obj + c->dictoffset, &dict)) != PYTOP_OK) return status;
    }
    return dict ? object_dict_get_str(o, dict, name, value) : PYTOP_OK;
}
