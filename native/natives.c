/*
 * Native (C) frames in samples (--native): each stopped thread's machine stack, unwound by
 * elfutils' libdw (its DWARF call-frame unwinder and symbol tables), and merged with the
 * thread's Python frames where the interpreter's eval loop runs them.
 *
 * libdw is loaded at run time (dlopen), so pytop builds, installs and runs where it is absent;
 * --native then says how to get it (the Python side asks natives_available()). libdw reads
 * the registers of threads the calling thread holds stopped with ptrace: the unwinder's
 * blocking mode, which --native turns on, stops them at the start of each sample.
 *
 * The hot path gives each native frame a code id, as a Python frame has: a function is named
 * once (symbol and library), and each return address is looked up once in a small table.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define LIBDW "libdw.so.1"
#define EVAL_LOOP "_PyEval_EvalFrameDefault"
#define EVAL_LOOP_27 "PyEval_EvalFrameEx" /* 2.7; before 3.11 also the wrapper of the loop above */
#define REPORT_AGAIN_NS 1000000000ull     /* libraries loaded since are looked for at most this often */
#define UNKNOWN_FUNCTION "?"

/* The parts of libdw's API used here; its types are opaque but for the symbol (Elf64_Sym). */
typedef struct elf64_sym {
    uint32_t st_name;
    uint8_t st_info, st_other;
    uint16_t st_shndx;
    uint64_t st_value, st_size;
} elf64_sym;

typedef struct dwfl_callbacks {
    void *find_elf, *find_debuginfo, *section_address;
    char **debuginfo_path;
} dwfl_callbacks;

struct libdw_api {
    void *handle;
    void *(*begin)(const dwfl_callbacks *);
    void (*end)(void *);
    int (*proc_report)(void *, int);
    void (*report_begin_add)(void *);
    int (*report_end)(void *, void *, void *);
    int (*proc_attach)(void *, int, bool);
    int (*getthread_frames)(void *, int, int (*)(void *, void *), void *);
    bool (*frame_pc)(void *, uint64_t *, bool *);
    void *(*addrmodule)(void *, uint64_t);
    const char *(*module_addrinfo)(void *, uint64_t, uint64_t *, elf64_sym *, uint32_t *, void **, uint64_t *);
    const char *(*module_info)(void *, void ***, uint64_t *, uint64_t *, uint64_t *, uint64_t *, const char **,
                               const char **);
    void *find_elf, *find_debuginfo;
};

static bool load_api(struct libdw_api *a, char *why, size_t why_len) {
    a->handle = dlopen(LIBDW, RTLD_NOW | RTLD_LOCAL);
    if (!a->handle) {
        snprintf(why, why_len, "%s cannot be loaded (%s)", LIBDW, dlerror());
        return false;
    }
    struct { void **slot; const char *name; } wanted[] = {
        {(void **)&a->begin, "dwfl_begin"}, {(void **)&a->end, "dwfl_end"},
        {(void **)&a->proc_report, "dwfl_linux_proc_report"}, {(void **)&a->report_begin_add, "dwfl_report_begin_add"},
        {(void **)&a->report_end, "dwfl_report_end"}, {(void **)&a->proc_attach, "dwfl_linux_proc_attach"},
        {(void **)&a->getthread_frames, "dwfl_getthread_frames"}, {(void **)&a->frame_pc, "dwfl_frame_pc"},
        {(void **)&a->addrmodule, "dwfl_addrmodule"}, {(void **)&a->module_addrinfo, "dwfl_module_addrinfo"},
        {(void **)&a->module_info, "dwfl_module_info"}, {&a->find_elf, "dwfl_linux_proc_find_elf"},
        {&a->find_debuginfo, "dwfl_standard_find_debuginfo"},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        *wanted[i].slot = dlsym(a->handle, wanted[i].name);
        if (!*wanted[i].slot) {
            snprintf(why, why_len, "%s has no %s (elfutils 0.158 or newer is needed)", LIBDW, wanted[i].name);
            dlclose(a->handle);
            a->handle = NULL;
            return false;
        }
    }
    return true;
}

bool natives_available(char *why, size_t why_len) {
    struct libdw_api a;
    if (!load_api(&a, why, why_len)) return false;
    dlclose(a.handle);
    return true;
}

/* libdw's state for process n->pid, made anew: modules reported, threads "attached" (they are
 * stopped by the caller). */
static bool attach_state(natives *n) {
    if (n->dwfl) n->api->end(n->dwfl);
    n->dwfl = n->api->begin(n->callbacks);
    bool ok = n->dwfl && n->api->proc_report(n->dwfl, n->pid) == 0 && n->api->report_end(n->dwfl, NULL, NULL) == 0 &&
              n->api->proc_attach(n->dwfl, n->pid, true) == 0; /* the threads are stopped by us: no attach */
    n->stale = !ok;
    return ok;
}

int natives_open(natives *n, int pid, char *why, size_t why_len) {
    memset(n, 0, sizeof *n);
    n->api = calloc(1, sizeof *n->api);
    n->callbacks = calloc(1, sizeof *n->callbacks);
    if (!n->api || !n->callbacks) {
        natives_close(n);
        return PYTOP_ERR_NOMEM;
    }
    if (!load_api(n->api, why, why_len)) {
        natives_close(n);
        return PYTOP_ERR_ARGS;
    }
    n->callbacks->find_elf = n->api->find_elf;
    n->callbacks->find_debuginfo = n->api->find_debuginfo;
    n->pid = pid;
    if (!attach_state(n)) {
        snprintf(why, why_len, "libdw cannot read process %d", pid);
        natives_close(n);
        return PYTOP_ERR_READ;
    }
    return PYTOP_OK;
}

void natives_close(natives *n) {
    if (n->api && n->dwfl) n->api->end(n->dwfl);
    if (n->api && n->api->handle) dlclose(n->api->handle);
    free(n->api);
    free(n->callbacks);
    free(n->by_pc);
    free(n->by_start);
    for (uint32_t i = 0; i < n->other_count; i++) free(n->others[i].frames);
    free(n->others);
    memset(n, 0, sizeof *n);
}

/* ---- unwinding ------------------------------------------------------------------------ */

typedef struct walk {
    natives *n;
    uint64_t *pcs;
    uint32_t count, max;
} walk;

static int on_frame(void *state, void *arg) {
    walk *w = arg;
    uint64_t pc = 0;
    bool activation = false;
    if (!w->n->api->frame_pc(state, &pc, &activation) || !pc) return 1; /* (0: the outermost frame's caller) */
    /* A return address points after its call: the call itself is the byte before. */
    w->pcs[w->count++] = activation ? pc : pc - 1;
    return w->count < w->max ? 0 : 1;
}

/* libdw asserts, and so aborts pytop, when it is asked for a thread after it failed to read an
 * earlier thread's registers (elfutils' pid_set_initial_registers marks the thread attached
 * before reading them, and nothing clears the mark when the read fails). A thread that is not
 * stopped by us (one started since this sample's threads were seized, or ended since: a
 * thread-per-request server starts hundreds a second) fails that read: libdw is only asked
 * for threads we hold stopped, and after any thread of which it read nothing, its state is
 * made anew before the next one. */
uint32_t natives_stack(natives *n, const blocking *stopper, int tid, uint64_t *pcs, uint32_t max) {
    walk w = {n, pcs, 0, max};
    if (!n->api || !max || !blocking_holds(stopper, tid)) return 0;
    if ((n->stale || !n->dwfl) && !attach_state(n)) return 0;
    n->api->getthread_frames(n->dwfl, tid, on_frame, &w); /* ends early (-1) at a frame it cannot unwind */
    if (!w.count) n->stale = true; /* its registers were not read: libdw's mark may be left set */
    return w.count;
}

/* ---- naming ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Open addressing, address -> (code id, eval loop?); emptied when full (names stay: by_start). */
static native_slot *slot_in(native_slot **table, uint32_t *cap, uint32_t *count, uint64_t key, bool *found) {
    if (*count * 2 >= *cap) {
        uint32_t grown = *cap ? *cap * 2 : 1024;
        if (grown > NATIVE_TABLE_MAX) grown = NATIVE_TABLE_MAX;
        if (*count * 2 >= grown) { /* at the bound: start again */
            memset(*table, 0, (size_t)*cap * sizeof **table);
            *count = 0;
        } else {
            native_slot *fresh = calloc(grown, sizeof *fresh);
            if (!fresh) return NULL;
            for (uint32_t i = 0; i < *cap; i++) {
                native_slot *old = &(*table)[i];
                if (!old->key) continue;
                uint32_t at = (uint32_t)mix(old->key) & (grown - 1);
                while (fresh[at].key) at = (at + 1) & (grown - 1);
                fresh[at] = *old;
            }
            free(*table);
            *table = fresh;
            *cap = grown;
        }
    }
    uint32_t at = (uint32_t)mix(key) & (*cap - 1);
    while ((*table)[at].key && (*table)[at].key != key) at = (at + 1) & (*cap - 1);
    *found = (*table)[at].key == key;
    if (!*found) {
        (*table)[at].key = key;
        (*count)++;
    }
    return &(*table)[at];
}

static const char *base_name(const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : (path ? path : "?");
}

/* libdw knows the libraries mapped when it last looked: one loaded since (an extension module
 * imported later) is looked for again, not more than once a second. */
static void *module_of(natives *n, uint64_t pc, uint64_t now) {
    void *module = n->api->addrmodule(n->dwfl, pc);
    if (module || now - n->reported_at < REPORT_AGAIN_NS) return module;
    n->reported_at = now;
    n->api->report_begin_add(n->dwfl);
    n->api->proc_report(n->dwfl, n->pid);
    n->api->report_end(n->dwfl, NULL, NULL);
    return n->api->addrmodule(n->dwfl, pc);
}

static uint8_t eval_loop_kind(const char *symbol) {
    if (!symbol) return 0;
    return strcmp(symbol, EVAL_LOOP) == 0 ? 1 : strcmp(symbol, EVAL_LOOP_27) == 0 ? 2 : 0;
}

int natives_code(natives *n, code_cache *codes, uint64_t pc, uint64_t now, uint32_t *id, uint8_t *eval_loop) {
    bool found;
    native_slot *s = slot_in(&n->by_pc, &n->pc_cap, &n->pc_count, pc, &found);
    if (!s) return PYTOP_ERR_NOMEM;
    if (found && s->id) { /* (0: its naming ran out of memory: again) */
        *id = s->id;
        *eval_loop = s->eval_loop;
        return PYTOP_OK;
    }
    void *module = module_of(n, pc, now);
    const char *module_name = NULL, *symbol = NULL;
    uint64_t start = 0, offset = 0, bias = 0;
    if (module) {
        elf64_sym sym;
        uint32_t shndx;
        void *elf;
        module_name = n->api->module_info(module, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        symbol = n->api->module_addrinfo(module, pc, &offset, &sym, &shndx, &elf, &bias);
    }
    /* One function, one id: keyed by where it starts (a library's unnamed code: the library). */
    uint64_t key = symbol ? pc - offset : (module ? start : 1);
    native_slot *f = slot_in(&n->by_start, &n->start_cap, &n->start_count, key, &found);
    if (!f) return PYTOP_ERR_NOMEM;
    if (!found) {
        /* without its symbol version (clock_nanosleep@GLIBC_2.2.5), as debuggers show it; C++'s
         * demangled */
        char *name = symbol ? strndup(symbol, strcspn(symbol, "@")) : strdup(UNKNOWN_FUNCTION);
        char readable[MAX_NAME_CHARS];
        if (name && pytop_demangle(name, readable, sizeof readable) == PYTOP_OK) {
            free(name);
            name = strdup(readable);
        }
        if (!name) return PYTOP_ERR_NOMEM;
        int status = codes_add_native(codes, name, module ? base_name(module_name) : "?", &f->id);
        if (status != PYTOP_OK) {
            f->key = 0;
            n->start_count--;
            return status;
        }
        f->eval_loop = eval_loop_kind(symbol);
    }
    /* by_pc may have been emptied meanwhile (at its bound): look again */
    s = slot_in(&n->by_pc, &n->pc_cap, &n->pc_count, pc, &found);
    if (!s) return PYTOP_ERR_NOMEM;
    s->id = f->id;
    s->eval_loop = f->eval_loop;
    *id = f->id;
    *eval_loop = f->eval_loop;
    return PYTOP_OK;
}

/* ---- merging ---------------------------------------------------------------------------- */

#define UNPLACED_NAME "(Python frames below: the native stack names no eval loop to place them at)"
#define CUT_NAME "(native frames past the first 1024 not read: the outer Python frames below)"
_Static_assert(MAX_NATIVE_FRAMES == 1024, "CUT_NAME says how many native frames are read");

static int push_native(sample_pair *s, uint32_t id) {
    int status = samples_push_frame(s, 0, 0, 0);
    if (status != PYTOP_OK) return status;
    uint32_t at = s->cur->frame_count - 1;
    s->cur->raw[at] = (raw_frame){0, 0, PSEUDO_FRAME_OFFSET, false};
    s->cur->frames[at] = (pytop_frame){id, 0};
    return PYTOP_OK;
}

/* A frame of pytop's own that says why the Python frames after it are not in their place. */
static int push_marker(natives *n, code_cache *codes, sample_pair *s, uint32_t *id, const char *text) {
    if (!*id) {
        char *name = strdup(text);
        int status = name ? codes_add_native(codes, name, "pytop", id) : PYTOP_ERR_NOMEM;
        if (status != PYTOP_OK) return status;
    }
    return push_native(s, *id);
}

static int push_python(sample_pair *s, const raw_frame *raw, const pytop_frame *frame) {
    int status = samples_push_frame(s, 0, 0, 0);
    if (status != PYTOP_OK) return status;
    uint32_t at = s->cur->frame_count - 1;
    s->cur->raw[at] = *raw;
    s->cur->frames[at] = *frame;
    return PYTOP_OK;
}

int natives_merge(natives *n, const blocking *stopper, sample_pair *s, code_cache *codes, pytop_thread *t,
                  uint64_t now) {
    uint64_t pcs[MAX_NATIVE_FRAMES];
    uint32_t ids[MAX_NATIVE_FRAMES];
    uint8_t loops[MAX_NATIVE_FRAMES];
    if (!t->native_id || t->first_frame + t->frame_count != s->cur->frame_count) return PYTOP_OK;
    uint32_t count = natives_stack(n, stopper, (int)t->native_id, pcs, MAX_NATIVE_FRAMES);
    if (!count) return PYTOP_OK; /* not unwound: the Python frames alone */
    /* Where both the loop and 2.7's name (3.6-3.10's wrapper) are on a stack, the loop runs them. */
    uint8_t loop_kind = 2;
    for (uint32_t i = 0; i < count; i++) {
        int status = natives_code(n, codes, pcs[i], now, &ids[i], &loops[i]);
        if (status != PYTOP_OK) return status;
        if (loops[i] == 1) loop_kind = 1;
    }
    uint32_t python = t->frame_count;
    raw_frame *raw = python ? malloc(python * sizeof *raw) : NULL;
    pytop_frame *frames = python ? malloc(python * sizeof *frames) : NULL;
    if (python && (!raw || !frames)) {
        free(raw);
        free(frames);
        return PYTOP_ERR_NOMEM;
    }
    if (python) {
        memcpy(raw, s->cur->raw + t->first_frame, python * sizeof *raw);
        memcpy(frames, s->cur->frames + t->first_frame, python * sizeof *frames);
    }
    s->cur->frame_count = t->first_frame;
    uint32_t next = 0; /* the next Python frame to place (innermost first) */
    int status = PYTOP_OK;
    for (uint32_t i = 0; i < count && status == PYTOP_OK; i++) {
        if (loops[i] != loop_kind || next >= python) {
            status = push_native(s, ids[i]);
            continue;
        }
        do { /* the run of Python frames this call of the loop runs: up to its entry frame */
            status = push_python(s, &raw[next], &frames[next]);
        } while (status == PYTOP_OK && !raw[next++].entry && next < python);
    }
    /* Python frames left: the native stack was cut, or names no eval loop (a stripped build) */
    if (status == PYTOP_OK && next < python) {
        if (count == MAX_NATIVE_FRAMES) status = push_marker(n, codes, s, &n->cut_id, CUT_NAME);
        else status = push_marker(n, codes, s, &n->unplaced_id, UNPLACED_NAME);
        for (; next < python && status == PYTOP_OK; next++) status = push_python(s, &raw[next], &frames[next]);
    }
    free(raw);
    free(frames);
    t->frame_count = s->cur->frame_count - t->first_frame;
    return status;
}

/* ---- threads without Python ------------------------------------------------------------- */

#define OTHER_STALE_SAMPLES 64 /* a thread not read for this many samples is forgotten */

static native_other *other_of(natives *n, int tid) {
    for (uint32_t i = 0; i < n->other_count; i++)
        if (n->others[i].tid == tid) return &n->others[i];
    if (n->other_count >= MAX_THREADS) return NULL;
    native_other *grown = grow_array(n->others, &n->other_cap, n->other_count + 1ull, sizeof *grown, 8);
    if (!grown) return NULL;
    n->others = grown;
    native_other *o = &n->others[n->other_count++];
    *o = (native_other){tid, 0, 0, NULL};
    return o;
}

static bool is_python_thread(const sample_buf *cur, int tid) {
    for (uint32_t i = 0; i < cur->thread_count; i++)
        if (cur->threads[i].native_id == tid) return true;
    return false;
}

int natives_read_others(natives *n, code_cache *codes, const blocking *stop, const sample_buf *cur, uint64_t now) {
    uint64_t pcs[MAX_NATIVE_FRAMES];
    n->sample_no++;
    for (uint32_t i = 0; i < stop->count; i++) {
        int tid = stop->tracees[i].tid;
        if (stop->tracees[i].group_stop || is_python_thread(cur, tid)) continue;
        uint32_t count = natives_stack(n, stop, tid, pcs, MAX_NATIVE_FRAMES);
        native_other *o = count ? other_of(n, tid) : NULL;
        if (!o) continue;
        pytop_frame *frames = realloc(o->frames, count * sizeof *frames);
        if (!frames) return PYTOP_ERR_NOMEM;
        o->frames = frames;
        for (uint32_t k = 0; k < count; k++) {
            uint8_t loop;
            int status = natives_code(n, codes, pcs[k], now, &frames[k].code_id, &loop);
            if (status != PYTOP_OK) {
                o->count = 0;
                return status;
            }
            frames[k].line = 0;
        }
        o->count = count;
        o->sample = n->sample_no;
    }
    uint32_t kept = 0; /* ended threads go */
    for (uint32_t i = 0; i < n->other_count; i++) {
        if (n->sample_no - n->others[i].sample <= OTHER_STALE_SAMPLES) n->others[kept++] = n->others[i];
        else free(n->others[i].frames);
    }
    n->other_count = kept;
    return PYTOP_OK;
}

const pytop_frame *natives_other_stack(const natives *n, int tid, uint32_t *count) {
    for (uint32_t i = 0; i < n->other_count; i++)
        if (n->others[i].tid == tid && n->others[i].count) {
            *count = n->others[i].count;
            return n->others[i].frames;
        }
    return NULL;
}
