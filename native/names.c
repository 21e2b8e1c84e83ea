/*
 * Thread names as `threading.enumerate()` shows them, read from the target when a thread is
 * first seen.
 *
 * The path: an interpreter's sys.modules -> the `threading` module's dict -> `_active` (thread
 * ident -> Thread) and `_limbo` (threads between start() and registration, Thread -> Thread) ->
 * the Thread's `_name`. The two registries are found once and kept while they stay dicts; the
 * lookup in `_active` goes by the stored hash (an int's hash is itself), so a name costs a
 * handful of reads: the registry's entries, the Thread's attribute storage, the str.
 * 2.7's Thread keeps them as private attributes, so by their mangled names (`_Thread__name`).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_NAME_INTERPRETERS 64
#define MAX_LIMBO_ENTRIES 4096

void names_init(names *n, remote *mem, const pytop_layout *L, uint64_t runtime) {
    memset(n, 0, sizeof *n);
    n->obj.mem = mem;
    n->obj.L = L;
    n->runtime = runtime;
}

static int read_u64(names *n, uint64_t addr, uint64_t *out) {
    int status;
    const uint8_t *p = remote_view(n->obj.mem, addr, 8, 0, &status);
    if (p) *out = load_u64(p, 0);
    return status;
}

/* The threading module's registries of the interpreters that imported it, the main one first:
 * the runtime lists the newest interpreter first, and a thread that a subinterpreter's threading
 * knows only as a "Dummy-1" has its real name in the main interpreter's. */
static int find_registries(names *n) {
    const pytop_layout *L = n->obj.L;
    uint64_t interp = 0, found[MAX_NAME_INTERPRETERS][2];
    uint32_t count = 0;
    int status = read_u64(n, n->runtime + (uint64_t)L->rt_interpreters_head, &interp);
    for (int i = 0; status == PYTOP_OK && interp && i < MAX_NAME_INTERPRETERS; i++) {
        uint64_t modules = 0, module = 0, dict = 0, active = 0, limbo = 0;
        int kind = OBJECT_OTHER;
        if (L->is_modules >= 0) status = read_u64(n, interp + (uint64_t)L->is_modules, &modules);
        if (status == PYTOP_OK && modules) status = object_dict_get_str(&n->obj, modules, "threading", &module);
        if (status == PYTOP_OK && module) status = object_kind_of(&n->obj, module, &kind);
        if (status == PYTOP_OK && kind == OBJECT_MODULE) {
            status = read_u64(n, module + (uint64_t)L->md_dict, &dict);
            if (status == PYTOP_OK && dict) status = object_dict_get_str(&n->obj, dict, "_active", &active);
            if (status == PYTOP_OK && dict) status = object_dict_get_str(&n->obj, dict, "_limbo", &limbo);
            if (status == PYTOP_OK && active) {
                found[count][0] = active;
                found[count][1] = limbo;
                count++;
            }
        }
        if (status == PYTOP_OK) status = read_u64(n, interp + (uint64_t)L->is_next, &interp);
    }
    if (status != PYTOP_OK) return status;
    n->registry_count = 0;
    for (uint32_t k = count; k > 0 && n->registry_count < NAME_REGISTRIES; k--) { /* the main one is last */
        n->registries[n->registry_count][0] = found[k - 1][0];
        n->registries[n->registry_count][1] = found[k - 1][1];
        n->registry_count++;
    }
    return count ? PYTOP_OK : PYTOP_ERR_ARGS; /* threading not imported (yet) */
}

/* A Thread's attributes, by the name its version's threading.py gives them. */
typedef struct thread_attributes {
    const char *name, *ident, *native_id; /* (no native id before 3.8: the attribute is absent) */
} thread_attributes;

static const thread_attributes THREAD_ATTRIBUTES_27 = {"_Thread__name", "_Thread__ident", NULL};
static const thread_attributes THREAD_ATTRIBUTES_3 = {"_name", "_ident", "_native_id"};

static const thread_attributes *thread_attributes_of(const pytop_layout *L) {
    return L->version_hex < 0x03000000 ? &THREAD_ATTRIBUTES_27 : &THREAD_ATTRIBUTES_3;
}

static int name_object(names *n, uint64_t thread, uint64_t *name) {
    return object_attribute(&n->obj, thread, thread_attributes_of(n->obj.L)->name, name);
}

static char *name_of_thread_now(names *n, uint64_t thread, uint64_t *name, int *status) {
    int kind = OBJECT_OTHER;
    *status = name_object(n, thread, name);
    if (*status == PYTOP_OK && *name) *status = object_kind_of(&n->obj, *name, &kind);
    if (*status != PYTOP_OK) return NULL;
    if (!*name || kind != OBJECT_STR) {
        *status = PYTOP_ERR_ARGS;
        return NULL;
    }
    return text_read(n->obj.mem, n->obj.L, *name, MAX_THREAD_NAME_CHARS, status);
}

/* A thread in _limbo has no entry in _active yet: find it by its `_ident` (set as soon as it
 * runs). */
typedef struct limbo_search {
    names *n;
    uint64_t thread_id;
    uint64_t found;
} limbo_search;

static bool match_ident(void *ctx, uint64_t key, uint64_t value) {
    limbo_search *s = ctx;
    uint64_t ident_obj = 0, ident = 0;
    (void)key;
    if (object_attribute(&s->n->obj, value, thread_attributes_of(s->n->obj.L)->ident, &ident_obj) == PYTOP_OK && ident_obj &&
        object_int(&s->n->obj, ident_obj, &ident) == PYTOP_OK && ident == s->thread_id) {
        s->found = value;
        return false;
    }
    return true;
}

static uint64_t find_thread_in(names *n, const uint64_t registry[2], uint64_t thread_id, int *status) {
    uint64_t thread = 0;
    *status = object_dict_get_int(&n->obj, registry[0], thread_id, &thread);
    if (*status != PYTOP_OK || thread || !registry[1]) return thread;
    limbo_search s = {n, thread_id, 0};
    *status = object_dict_items(&n->obj, registry[1], MAX_LIMBO_ENTRIES, match_ident, &s);
    return s.found;
}

/* The Thread object of `thread_id` in the first registry that has it (0: none has). */
static uint64_t find_thread(names *n, uint64_t thread_id, int *status) {
    *status = PYTOP_OK;
    for (uint32_t r = 0; r < n->registry_count && *status == PYTOP_OK; r++) {
        uint64_t thread = find_thread_in(n, n->registries[r], thread_id, status);
        if (thread) return thread;
    }
    return 0;
}

/* Names are read from fresh memory: a sample's views include whole pages read at its start,
 * and the objects on the way to a name (threading's `_active` and its entries, a Thread's
 * attributes) are small allocations that share pages with what the walk read (3.8-3.10 frames
 * are heap objects too). A pointer read now into such a page was seen as it was then: on a
 * server starting a thread per request, `_active` resizes every few requests and its new
 * entries could be read as the freed table a resize replaced.
 * `self` too: up to 3.10 a code object's frame is reused by its next call (its "zombie"
 * frame), so the page of _bootstrap's frame read at the sample's start can still hold the
 * previous thread's Thread, freed since, when the new thread started after that read. */
/* Whether `thread` is the Thread of `thread_id`: its `_ident` is that id, or not set yet (the
 * thread is in _bootstrap, before _bootstrap_inner's first line: None). The frame a sample saw may
 * be gone by the time it is read again: a thread per request ends within a millisecond, its
 * frame's memory goes to another call, and the object in its first slot is then any object
 * (on 3.15, an HTTP message whose `_name` is "msg" named dozens of request threads). */
static bool is_int(names *n, uint64_t obj, bool *yes) {
    int kind = OBJECT_OTHER;
    if (object_kind_of(&n->obj, obj, &kind) != PYTOP_OK) return false;
    *yes = kind == OBJECT_INT || kind == OBJECT_LONG_27;
    return true;
}

/* How sure it is that `thread` is the Thread of a thread: not (another's ident or TID), maybe
 * (its ident not set yet, or no TID to compare: before 3.8 a Thread keeps none, None until it
 * runs, 0 `inner_tid` when ours is not known), or sure (its ident and its TID both). The ident
 * alone cannot tell two threads apart: glibc gives an ended thread's pthread_t, the ident, to
 * the next thread, and a request thread seen as it ended was named, a few samples later, after
 * its successor under that ident. */
typedef enum thread_match { MATCH_NOT, MATCH_MAYBE, MATCH_SURE } thread_match;

/* Whether `thread` has the TID `inner_tid` (the target's number), or says none. */
static thread_match match_native_id(names *n, uint64_t thread, int inner_tid) {
    const char *attribute = thread_attributes_of(n->obj.L)->native_id;
    uint64_t id_obj = 0, id = 0;
    bool number = false;
    if (!attribute || inner_tid <= 0) return MATCH_MAYBE;
    if (object_attribute(&n->obj, thread, attribute, &id_obj) != PYTOP_OK) return MATCH_NOT; /* not vouched for */
    if (!id_obj) return MATCH_MAYBE;                                                  /* absent */
    if (!is_int(n, id_obj, &number)) return MATCH_NOT;
    if (!number) return MATCH_MAYBE; /* None */
    return object_int(&n->obj, id_obj, &id) == PYTOP_OK && id == (uint64_t)inner_tid ? MATCH_SURE : MATCH_NOT;
}

static thread_match match_thread(names *n, uint64_t thread, uint64_t thread_id, int inner_tid) {
    uint64_t ident_obj = 0, ident = 0;
    bool number = false;
    if (object_attribute(&n->obj, thread, thread_attributes_of(n->obj.L)->ident, &ident_obj) != PYTOP_OK ||
        !ident_obj || !is_int(n, ident_obj, &number))
        return MATCH_NOT;
    if (!number) return MATCH_MAYBE; /* None: a Thread not started yet */
    if (object_int(&n->obj, ident_obj, &ident) != PYTOP_OK || ident != thread_id) return MATCH_NOT;
    return match_native_id(n, thread, inner_tid);
}

static bool is_thread_of(names *n, uint64_t thread, uint64_t thread_id, int inner_tid) {
    return match_thread(n, thread, thread_id, inner_tid) != MATCH_NOT;
}

/* The name of `thread`, the Thread of `thread_id` (found in the registry if `registered`),
 * kept only if all still holds once its text is read, from memory read again: a thread per
 * request ends within a millisecond, its Thread and name are freed, the str's memory goes to
 * another str (an HTTP header's "Server: BaseHTTP/0.6" named a request thread), and the next
 * request's Thread often takes the same address under the same (reused) pthread id. The name's
 * str is then another: its address tells. A Thread that has this thread's ident and TID is
 * this thread's whatever the registry says (two threads cannot share both while one lives), so
 * the registry is looked at again only when the Thread cannot say (it saves two pages a name). */
static char *confirmed_name(names *n, uint64_t thread, uint64_t thread_id, int inner_tid, bool registered,
                            int *status) {
    uint64_t name_obj = 0, name_again = 0;
    char *name = name_of_thread_now(n, thread, &name_obj, status);
    if (!name) return NULL;
    fresh_mark mark = remote_begin_fresh(n->obj.mem); /* not the views read on the way here */
    int again = PYTOP_OK;
    thread_match match = match_thread(n, thread, thread_id, inner_tid);
    bool still = match != MATCH_NOT &&
                 (!registered || match == MATCH_SURE || find_thread(n, thread_id, &again) == thread) &&
                 again == PYTOP_OK && name_object(n, thread, &name_again) == PYTOP_OK && name_again == name_obj;
    remote_end_fresh(n->obj.mem, mark);
    if (still) return name;
    free(name);
    *status = again == PYTOP_OK ? PYTOP_ERR_ARGS : again;
    return NULL;
}

char *names_from_bootstrap(names *n, uint64_t frame, uint64_t thread_id, int inner_tid, int *status) {
    const pytop_layout *L = n->obj.L;
    uint64_t self = 0;
    remote_allow_failures(n->obj.mem, MAX_FAILED_READS_PER_THREAD);
    fresh_mark mark = remote_begin_fresh(n->obj.mem);
    *status = read_u64(n, frame + (uint64_t)L->fr_header_size, &self); /* localsplus[0] */
    if (L->fr_executable_tag_bits > 0) self &= ~(uint64_t)L->fr_executable_tag_bits; /* 3.14+ stack refs */
    if (*status == PYTOP_OK && !is_thread_of(n, self, thread_id, inner_tid)) *status = PYTOP_ERR_ARGS;
    char *name = *status == PYTOP_OK ? confirmed_name(n, self, thread_id, inner_tid, false, status) : NULL;
    remote_end_fresh(n->obj.mem, mark);
    return name;
}

static bool keep_name(names *n, uint32_t serial, uint64_t thread_id, char *name) {
    if (!name) return false;
    waiting_name *w = &n->waiting[n->waiting_next++ % MAX_WAITING_NAMES];
    free(w->name);
    *w = (waiting_name){serial, thread_id, name};
    return true;
}

bool names_read_new(names *n, uint32_t serial, uint64_t frame, uint64_t thread_id, int inner_tid) {
    int status;
    return keep_name(n, serial, thread_id, names_from_bootstrap(n, frame, thread_id, inner_tid, &status));
}

bool names_read_new_by_id(names *n, uint32_t serial, uint64_t thread_id, int inner_tid) {
    int status;
    return keep_name(n, serial, thread_id, names_lookup(n, thread_id, inner_tid, &status));
}

char *names_take(names *n, uint32_t serial, uint64_t thread_id) {
    char *name = NULL;
    for (uint32_t i = 0; i < MAX_WAITING_NAMES; i++) {
        waiting_name *w = &n->waiting[i];
        if (w->name && w->serial == serial) {
            if (w->thread_id == thread_id) name = w->name;
            else free(w->name);
            *w = (waiting_name){0, 0, NULL};
        }
    }
    return name;
}

void names_free(names *n) {
    for (uint32_t i = 0; i < MAX_WAITING_NAMES; i++) free(n->waiting[i].name);
    memset(n->waiting, 0, sizeof n->waiting);
}

static char *lookup_now(names *n, uint64_t thread_id, int inner_tid, int *status) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!n->registry_count && (*status = find_registries(n)) != PYTOP_OK) return NULL;
        uint64_t thread = find_thread(n, thread_id, status);
        if (*status == PYTOP_OK) {
            if (!thread) {
                *status = PYTOP_ERR_ARGS;
                return NULL;
            }
            return confirmed_name(n, thread, thread_id, inner_tid, true, status); /* fresh already */
        }
        if (fatal_status(*status)) return NULL;
        n->registry_count = 0; /* a module was reloaded or torn down: find them again */
    }
    return NULL;
}

char *names_lookup(names *n, uint64_t thread_id, int inner_tid, int *status) {
    remote_allow_failures(n->obj.mem, MAX_FAILED_READS_PER_THREAD);
    fresh_mark mark = remote_begin_fresh(n->obj.mem); /* see names_from_bootstrap() */
    char *name = lookup_now(n, thread_id, inner_tid, status);
    remote_end_fresh(n->obj.mem, mark);
    return name;
}
