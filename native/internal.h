/*
 * Declarations shared by the native core's C files. Each file owns one subsystem and calls only
 * the files before it in native/build_ffi.py's SOURCES, where each is described in a line (no
 * circles: tests/test_native_layering.py checks it over the compiled objects' symbols).
 *
 * Every walk over target memory is bounded and every size read from the target is checked.
 */
#ifndef PYTOP_INTERNAL_H
#define PYTOP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include "pytop.h"

#define PAGE_SIZE_BYTES 4096u
#define MAX_INTERPRETERS 256
#define MAX_THREADS 8192
#define DEFAULT_MAX_DEPTH 65536
#define MAX_NAME_CHARS 1024          /* function names and qualnames are cut here */
#define MAX_FILENAME_CHARS 4096
#define MAX_THREAD_NAME_CHARS 256
#define MAX_LINETABLE_BYTES (4u << 20)
#define MAX_READ_BYTES (16u << 20)   /* no single read of the target is larger */
#define MAX_PREFETCH_RANGES 8192
#define MAX_ARENA_BYTES (256u << 20) /* bound on what one sample may copy out of the target */
#define ERROR_TEXT_BYTES 256

/* Fibonacci hashing: a 64-bit key to a slot of an open-addressing table of a power of two
 * slots (mask = slots - 1), from the product's high bits, the well-mixed ones. Every table of
 * the native core finds its slots so. */
static inline uint32_t hash_slot(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}
/* Failed reads (unmapped addresses: a torn stack's garbage pointers) allowed while reading one
 * thread, and in one sample: past them a read fails at once, without a syscall. */
#define MAX_FAILED_READS_PER_THREAD 16
#define MAX_FAILED_READS_PER_SAMPLE 256
/* Code addresses that failed this sample, remembered so that no other frame retries them. */
#define MAX_BAD_CODES 16

/* Could `addr` be a pointer to an object in a 64-bit Linux process? (non-null, 8-aligned,
 * in the user half). Torn memory fails this far more often than not. */
static inline bool plausible_pointer(uint64_t addr) {
    return addr != 0 && (addr & 7) == 0 && addr < (1ull << 47);
}

/* Room for at least `need` items of `size` bytes in an array that doubles from `first` items:
 * returns the array (perhaps moved) and updates *cap, or returns NULL and leaves both as they
 * were when memory runs out. */
static inline void *grow_array(void *items, uint32_t *cap, uint64_t need, size_t size, uint32_t first) {
    if (need <= *cap) return items;
    uint64_t n = *cap ? *cap : first;
    while (n < need) n *= 2;
    if (n > UINT32_MAX || n > SIZE_MAX / size) return NULL;
    void *grown = realloc(items, (size_t)n * size);
    if (grown) *cap = (uint32_t)n;
    return grown;
}

static inline uint64_t load_u64(const uint8_t *p, int32_t off) {
    uint64_t v;
    __builtin_memcpy(&v, p + off, sizeof v);
    return v;
}
static inline uint32_t load_u32(const uint8_t *p, int32_t off) {
    uint32_t v;
    __builtin_memcpy(&v, p + off, sizeof v);
    return v;
}
static inline uint16_t load_u16(const uint8_t *p, int32_t off) {
    uint16_t v;
    __builtin_memcpy(&v, p + off, sizeof v);
    return v;
}
static inline int32_t load_i32(const uint8_t *p, int32_t off) { return (int32_t)load_u32(p, off); }
static inline int64_t load_i64(const uint8_t *p, int32_t off) { return (int64_t)load_u64(p, off); }

/* ---- status.c --------------------------------------------------------------------------- */

/* Record a readable cause in `error` (ERROR_TEXT_BYTES) unless one is there already (the
 * innermost cause wins); returns `status` for chaining. */
int fail(char *error, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int status_from_errno(int err);
/* Losing the process, the permission or memory ends a sample; other errors are one thread's. */
static inline bool fatal_status(int status) {
    return status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION || status == PYTOP_ERR_NOMEM;
}
uint64_t monotonic_ns(void);

typedef struct range {
    uint64_t addr;
    uint64_t len;
    const uint8_t *data; /* NULL while not (or not successfully) read */
    bool grows;          /* frames: next time, read a little more (the stack may have grown) */
    uint32_t fresh_in;   /* read ahead during this fresh reading (remote_begin_fresh's serial; 0: none) */
} range;

/* ---- image.c ---------------------------------------------------------------------------- */

struct iovec;
typedef struct memory_image {
    pytop_region *regions; /* a copy of the caller's list; the bytes stay the caller's */
    uint32_t count;
    range *log;            /* reads asked for since open (bounded), for the fuzzer's aim */
    uint32_t log_count, log_cap;
} memory_image;

/* Check (sorted, apart, non-empty) and copy the list of regions. */
int image_init(memory_image *m, const pytop_region *regions, uint32_t count);
void image_free(memory_image *m);
/* process_vm_readv on the image: local[i] gets remote_iov[i]; bytes read in all, stopping at
 * the first range not read in full; -1 with errno EFAULT when nothing could be read. */
long image_readv(memory_image *m, const struct iovec *local, const struct iovec *remote_iov, size_t n);
/* The logged reads as (address, length) pairs, at most `capacity`; returns how many there are. */
uint32_t image_reads(const memory_image *m, uint64_t *pairs, uint32_t capacity);

/* ---- remote.c --------------------------------------------------------------------------- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    uint8_t bytes[];
} arena_block;

/* Reads of one target process. Views returned by remote_view() stay valid until the next
 * remote_begin_sample(): they point into the prefetch buffer or into an arena. */
typedef struct remote {
    int pid;
    memory_image *image;  /* when set, reads come from it, never from a process */
    uint32_t syscalls;
    /* What this sample read (to prefetch next time) and what was prefetched for it. */
    range *touched;
    uint32_t touched_count, touched_cap;
    range *ranges;
    size_t range_count, range_cap, last_hit;
    uint8_t *prefetch;
    size_t prefetch_cap;
    /* Regions read ahead for a walk (remote_read_ahead), sorted and apart, searched after
     * `ranges`; then regions read whole during this sample (windows of stack chunks). */
    range *ahead;
    uint32_t ahead_count, ahead_cap;
    size_t ahead_hit;
    range *extra;
    uint32_t extra_count, extra_cap;
    /* `extra`'s first extra_indexed ranges by address (remote.c, index_extras). */
    struct extra_key *extra_keys;
    uint32_t extra_indexed, extra_keys_cap;
    arena_block *arena;
    size_t arena_total;
    /* While re-reading a torn stack: ignore what was read before `fresh_from` (an index into
     * `extra`) and the prefetch, so the new walk sees memory of one moment, read anew. */
    bool fresh;
    size_t fresh_from;
    uint32_t fresh_since, fresh_serial; /* this fresh reading's serial; the last one given */
    /* Reads that failed this sample, and how many may fail before reads give up at once. */
    uint32_t failed_reads, failure_limit;
    bool untracked;       /* for now, tracked views are not remembered for the next prefetch */
} remote;

enum view_flags {
    VIEW_TRACK = 1, /* remember the access so the next sample prefetches it */
    VIEW_FRAME = 2  /* ... with a margin: it is a stack frame (with VIEW_TRACK) */
};

void remote_init(remote *r, int pid);
/* Reads from `image` (owned by the caller) instead of a process. */
void remote_init_image(remote *r, memory_image *image);
void remote_free(remote *r);
/* Start a sample: drop last sample's views and prefetch what it touched in one syscall. */
int remote_begin_sample(remote *r);
/* Read `len` bytes at `addr` into a buffer owned by `r`. Returns NULL and sets *status on
 * failure. */
const uint8_t *remote_view(remote *r, uint64_t addr, size_t len, int flags, int *status);
/* A tracked view that, on a miss, reads down to `floor` (at most a window below its page; to
 * the start of its page when floor is 0) in the same syscall and keeps it for the rest of the
 * sample: the next frames of a walk outwards are usually just below. */
const uint8_t *remote_view_window(remote *r, uint64_t addr, size_t len, uint64_t floor, int *status);
/* A tracked view that, on a miss, reads `len` bytes at `addr` in one syscall and keeps them for
 * the rest of the sample: the fields of one struct read one by one then cost one syscall. */
const uint8_t *remote_view_kept(remote *r, uint64_t addr, size_t len, int *status);
/* A view of memory this sample already holds (prefetched or read), without a syscall, or NULL;
 * either way the range is prefetched next sample (also while reads are untracked). */
const uint8_t *remote_view_if_cached(remote *r, uint64_t addr, size_t len);
/* Before remote_begin_sample(): read this too with the coming prefetch (memory the sample is
 * known to need that the last one did not touch). */
void remote_prefetch_also(remote *r, uint64_t addr, size_t len);
/* remote_view() of memory this sample holds already, or NULL without a read (tracked as
 * remote_view() would, so a view of the same memory that follows costs nothing more). */
const uint8_t *remote_view_if_held(remote *r, uint64_t addr, size_t len, int flags);
/* Does this sample hold that memory already? (Nothing read, nothing asked for next time.) */
bool remote_holds(remote *r, uint64_t addr, size_t len);
/* Read these regions (any order; overlaps merged) in one syscall and keep them for the rest of
 * the sample, not for the next sample's prefetch: memory a walk is about to need that the
 * prefetch did not bring (a stack read again: the pages its frames had at its last read).
 * Regions already held, or overlapping ones read ahead before, are left out; while reading
 * afresh, what they overlap of older reads is dropped instead. `want` is reordered. */
int remote_read_ahead(remote *r, range *want, size_t count);
/* Read `count` regions of `len` bytes at once, in one syscall, and keep them for the rest of
 * the sample, not for the next sample's prefetch; regions that cannot be read are left out
 * (later views of them read again). */
int remote_keep_many(remote *r, const uint64_t *addrs, size_t count, size_t len);
/* From now on, at most `count` more reads may fail in this sample (within the sample's own
 * bound); further ones return PYTOP_ERR_LIMIT without a syscall. */
void remote_allow_failures(remote *r, uint32_t count);
/* Re-reading: until remote_end_fresh(), views ignore everything read so far in this sample.
 * Nests: remote_end_fresh() takes what remote_begin_fresh() returned and restores it. */
typedef struct fresh_mark {
    bool fresh;
    uint32_t since;
    size_t from;
} fresh_mark;
fresh_mark remote_begin_fresh(remote *r);
void remote_end_fresh(remote *r, fresh_mark before);
/* Direct read into the caller's buffer. */
int remote_read(remote *r, uint64_t addr, void *buf, size_t len);
/* Several independent reads in one syscall; ok[i] says which succeeded. */
int remote_readv(remote *r, const range *want, uint8_t **bufs, size_t count, bool *ok);

/* ---- linetable.c ------------------------------------------------------------------------ */

/* Lines by bytecode byte offset: entry i covers [start[i], start[i+1]) (the last up to `end`). */
typedef struct line_ranges {
    int32_t *start;
    int32_t *line;
    uint32_t count;
    int32_t end;
    int32_t firstlineno;
} line_ranges;

int line_ranges_decode(int format, const uint8_t *table, size_t length, int32_t firstlineno,
                       line_ranges *out);
int32_t line_ranges_lookup(const line_ranges *lr, int32_t offset);
void line_ranges_free(line_ranges *lr);

/* ---- text.c ----------------------------------------------------------------------------- */

/* Read a str object and return a malloc'd UTF-8 copy (cut at max_chars), or NULL. */
char *text_read(remote *r, const pytop_layout *L, uint64_t addr, size_t max_chars, int *status);

/* ---- objects.c -------------------------------------------------------------------------- */

/* Small caches of type objects by what they were found to be. */
typedef struct type_memo {
    uint64_t addr[16];
    uint8_t kind[16]; /* object_kind */
    uint32_t next;
} type_memo;

enum object_kind { OBJECT_OTHER = 0, OBJECT_DICT, OBJECT_INT, OBJECT_STR, OBJECT_MODULE, OBJECT_CODE,
                   OBJECT_LONG_27 /* 2.7's long (3.x's int) */ };

/* Where str keys were found in tables of dict entries: a table's address and a key's text ->
 * the entry and the key object found there. Read again, the same key object at the same entry
 * of the same table is taken for the same key without reading the candidates' texts (one page
 * pinned per candidate: most of what a thread's name cost). */
#define KEY_MEMO_SLOTS 16
typedef struct key_memo {
    uint64_t entries[KEY_MEMO_SLOTS], key[KEY_MEMO_SLOTS];
    const char *text[KEY_MEMO_SLOTS];
    uint32_t index[KEY_MEMO_SLOTS];
    uint32_t next;
} key_memo;

/* What a class says about where its instances keep their attributes (flags, sizes, its shared
 * keys) and where a name is among those keys: a class does not change its layout while it
 * lives, and reading it again (its type object and its shared keys, three pages pinned) was
 * half of what a thread's name cost. Kept for CLASS_MEMO_USES lookups, then read again, so that a
 * class freed and another made at its address is not believed for long (and every value read
 * through it is still checked by kind). */
#define CLASS_MEMO_SLOTS 4
#define CLASS_MEMO_NAMES 4
#define CLASS_MEMO_USES 64
typedef struct class_facts {
    uint64_t type, flags, basicsize, dictoffset, cached_keys;
    const char *names[CLASS_MEMO_NAMES]; /* (string literals: the callers') */
    int64_t index[CLASS_MEMO_NAMES];     /* in the shared keys (-1: not there) */
    uint32_t name_count, uses;
} class_facts;

typedef struct objects {
    remote *mem;
    const pytop_layout *L;
    type_memo types;
    key_memo keys;
    class_facts classes[CLASS_MEMO_SLOTS];
    uint32_t class_next;
} objects;

/* What kind of object is at `obj` (from its type's name, remembered per type object). */
int object_kind_of(objects *o, uint64_t obj, int *kind);
/* The value of an int object that fits 64 bits. */
int object_int(objects *o, uint64_t obj, uint64_t *value);
/* Is the str object at `obj` equal to the ASCII text `want`? */
int object_str_equals(objects *o, uint64_t obj, const char *want, bool *equal);
/* dict[key] for a str key; *value is 0 when absent. */
int object_dict_get_str(objects *o, uint64_t dict, const char *key, uint64_t *value);
/* dict[key] for an int key in a dict whose keys are ints (found by its stored hash, which is
 * the int itself below 2**61-1; the key object is not read: check what is found). */
int object_dict_get_int(objects *o, uint64_t dict, uint64_t key, uint64_t *value);
/* Calls `visit` for each (key, value) of a dict, at most `limit` entries; stops when it
 * returns false. */
int object_dict_items(objects *o, uint64_t dict, uint32_t limit,
                      bool (*visit)(void *ctx, uint64_t key, uint64_t value), void *ctx);
/* The attribute `name` of a plain Python instance (from its __dict__, managed dict or inline
 * values); *value is 0 when it has none. */
int object_attribute(objects *o, uint64_t obj, const char *name, uint64_t *value);

/* ---- names.c ---------------------------------------------------------------------------- */

/* A name read during a walk, waiting for whoever keeps the thread's figures to take it. */
#define MAX_WAITING_NAMES 64
typedef struct waiting_name {
    uint32_t serial;
    uint64_t thread_id; /* the id it was read by: a state taken up by its thread changes ids */
    char *name;
} waiting_name;

#define NAME_REGISTRIES 8 /* interpreters whose threads are named from their own registry */
typedef struct names {
    objects obj;
    uint64_t runtime;
    /* The threading module's _active and _limbo dicts of each interpreter that imported it,
     * the main interpreter's first, once found. */
    uint64_t registries[NAME_REGISTRIES][2];
    uint32_t registry_count;
    waiting_name waiting[MAX_WAITING_NAMES]; /* a ring: the oldest goes when it is full */
    uint32_t waiting_next;
} names;

void names_init(names *n, remote *mem, const pytop_layout *L, uint64_t runtime);
/* The name threading gives thread `thread_id`, malloc'd UTF-8, or NULL (*status says why:
 * PYTOP_ERR_ARGS when the thread is not, or not yet, in the registry). `inner_tid` (its TID as
 * the target knows it, in its own PID namespace; 0: not known) must be the Thread's too, where
 * it says one (3.8+): glibc gives an ended thread's pthread_t, the Python thread id, to the next
 * thread it starts, and a thread per request ends and is followed within a millisecond. */
char *names_lookup(names *n, uint64_t thread_id, int inner_tid, int *status);
/* The same, from a thread's outermost frame when that is threading's Thread._bootstrap(self):
 * the name of `self`, if `self` is still the Thread of `thread_id`. A thread can be named so
 * before it has registered itself. */
char *names_from_bootstrap(names *n, uint64_t frame, uint64_t thread_id, int inner_tid, int *status);
/* Read the name of the thread `serial`, first seen in this sample, at once: a short-lived thread
 * may be gone by the time its sample is accounted for. From its bootstrap frame, or by its
 * thread id from threading's registry (before its stack is read). True if it was read. */
bool names_read_new(names *n, uint32_t serial, uint64_t frame, uint64_t thread_id, int inner_tid);
bool names_read_new_by_id(names *n, uint32_t serial, uint64_t thread_id, int inner_tid);
/* The name read for thread `serial` during a walk, malloc'd (the caller owns it), or NULL; only
 * if read by the id the thread has now. A state its thread has not taken up yet carries its
 * creator's ids (up to 3.11): a name read by those is its creator's (a server's request threads
 * named "MainThread" or "acceptor"), and is dropped here once the thread has its own. */
char *names_take(names *n, uint32_t serial, uint64_t thread_id);
void names_free(names *n);

/* ---- codes.c ---------------------------------------------------------------------------- */

typedef struct code_entry {
    uint64_t addr;
    /* What identifies this code object: if any of it changes, the address was reused. */
    uint64_t type, name_ptr, qualname_ptr, filename_ptr, linetable_ptr;
    int32_t firstlineno;
    int32_t code_bytes;     /* bytecode length, bounds the instruction offset */
    uint64_t checked_generation;
    char *name, *qualname, *filename;
    line_ranges lines;
    int32_t memo_offset, memo_line; /* the last lookup: stacks repeat offsets */
    bool stale;             /* replaced by a newer object at the same address */
    bool pseudo;            /* no code object: a name pytop gives part of a stack (a task) */
    bool native;            /* ... a native (C) function: its name, in its library (`filename`) */
    bool resumable;         /* a generator's, coroutine's or async generator's code */
    bool free;              /* recycled: its id waits for the next code object */
    bool used;              /* looked up since the last codes_recycle */
    uint32_t refs;          /* the engine's stack-tree nodes that name it (see codes_recycle) */
} code_entry;

typedef struct code_cache {
    remote *mem;
    const pytop_layout *L;
    code_entry *entries; /* id = index + 1 */
    uint32_t count, cap;
    uint32_t *slots;     /* open addressing: remote address -> id, 0 = empty */
    uint32_t slot_mask;
    uint64_t type_ok[8], type_bad[8]; /* small caches of type objects known to be / not be code */
    uint64_t generation; /* target's code-object generation (3.14+), when known */
    bool generation_known;
    /* Entries used this sample that must be re-confirmed, checked together in one syscall. */
    uint32_t *due;
    uint32_t due_count, due_cap;
    /* Addresses that could not be read as code objects this sample, and why. */
    uint64_t bad[MAX_BAD_CODES];
    int bad_status[MAX_BAD_CODES];
    uint32_t bad_count;
    /* Ids of entries recycled (stale and named by no node), for new code objects. */
    uint32_t *free_ids;
    uint32_t free_count, free_cap;
    /* Ids loaded since the engine last took them (codes_take_fresh). */
    uint32_t *fresh;
    uint32_t fresh_count, fresh_cap;
} code_cache;

int codes_init(code_cache *c, remote *mem, const pytop_layout *L);
void codes_free(code_cache *c);
/* The entries loaded since the last call (their ids, until the next call), emptied. */
const uint32_t *codes_take_fresh(code_cache *c, uint32_t *count);
/* Free the entries that no stack-tree node names any more (refs 0) and that are gone (stale) or
 * were not used since the previous call, so that their ids serve new code objects: a target that
 * keeps making code does not grow the cache. Calls `recycled` with each id; returns how many. */
uint32_t codes_recycle(code_cache *c, void (*recycled)(void *ctx, uint32_t id), void *ctx);
/* Start a sample. */
void codes_begin_sample(code_cache *c);
/* The id of the code object at `addr`; reads and decodes it the first time. */
int codes_lookup(code_cache *c, uint64_t addr, uint32_t *id);
/* Confirm entries that are due for a check, in one batch. Returns how many were found replaced
 * (their address is then free for a new entry with a new id). */
int codes_confirm_due(code_cache *c);
/* Check this entry in the next codes_confirm_due(), whatever its age. */
void codes_force_check(code_cache *c, uint32_t id);
int32_t codes_line(code_cache *c, uint32_t id, int32_t byte_offset);
const code_entry *codes_get(const code_cache *c, uint32_t id);
/* Is code `id` a generator's or a coroutine's, code that runs only when a caller resumes it? */
bool codes_is_resumable(const code_cache *c, uint32_t id);
/* Is code `id` threading's Thread._bootstrap, the outermost frame of a threading.Thread? */
bool codes_is_thread_bootstrap(const code_cache *c, uint32_t id);
/* A new entry for a pseudo-frame named `name` (taken over, malloc'd) in file `filename`: it has
 * no address, no lines and is never checked against the target. */
int codes_add_pseudo(code_cache *c, char *name, const char *filename, uint32_t *id);
/* The same for a native function `name` (taken over) of library `library` (natives.c). */
int codes_add_native(code_cache *c, char *name, const char *library, uint32_t *id);

/* ---- asyncio.c -------------------------------------------------------------------------- */

/* A raw frame with this offset is a pseudo-frame: its code id is set already, its line is 0. */
#define PSEUDO_FRAME_OFFSET INT32_MIN
#define TASK_RECENT 1024       /* (task, name object) pairs remembered, by hash */
#define MAX_TASK_NAMES 4096    /* distinct task names given ids; later ones share one */

typedef struct task_recent {
    uint64_t task, name;
    uint32_t id;
} task_recent;

typedef struct asyncio_book {
    task_recent recent[TASK_RECENT];
    uint32_t *by_text;         /* open addressing over task-name entries' ids, by name */
    uint32_t text_mask, text_count;
    uint32_t unnamed_id, other_id;
    uint64_t str_types[4], other_types[4]; /* type objects whose instances are / are not str */
} asyncio_book;

void asyncio_book_free(asyncio_book *b);
/* The fields of thread state `ts` that say which loop and task it runs (0 when none or
 * unreadable). Reading the task at another instant than the innermost frame can show a task's
 * coroutine on a stack without its task (its step ended in between): asyncio_fields_held() says
 * whether they are in hand with the sample's memory (and asks for them in the next one);
 * asyncio_state_span() is how much of a thread state to read to have them with the rest. */
void asyncio_running(remote *mem, const pytop_layout *L, uint64_t ts, uint64_t *loop, uint64_t *task);
bool asyncio_fields_held(remote *mem, const pytop_layout *L, uint64_t ts);
size_t asyncio_state_span(const pytop_layout *L);
/* The running `task`'s coroutine frame (which the thread's walk passes through) and the id of
 * its pseudo-frame. *frame = 0 when there is none or it cannot be read (never an error: the
 * stack is then shown without it). */
void asyncio_task_frame(remote *mem, code_cache *codes, const pytop_layout *L, asyncio_book *b, uint64_t loop,
                        uint64_t task, uint64_t *frame, uint32_t *id);

/* ---- samplebuf.c ------------------------------------------------------------------------ */

typedef struct raw_frame {
    uint64_t code;
    uint64_t frame;  /* the frame's own address (its locals are there; 0: a pseudo-frame) */
    int32_t offset; /* instruction byte offset into the bytecode; negative: not started */
    bool entry;     /* the outermost frame one call of the eval loop runs (see pytop_frame_addresses) */
} raw_frame;

/* One sample's threads; their frames are in the pair's arena, which both samples share. Frames
 * are first collected raw (code address, instruction byte offset), then resolved through the
 * code cache into `frames`, index for index. `raw`, `frames` alias the arena's arrays. */
typedef struct sample_buf {
    pytop_thread *threads;
    uint32_t thread_count, thread_cap;
    raw_frame *raw;
    pytop_frame *frames;
    uint32_t frame_count;   /* the arena's end as this sample left it (where the next frame goes) */
} sample_buf;

/* This sample and the one before, over one arena of frames: a thread that has not run since
 * keeps its stack where it is (nothing is copied: a 50,000-frame stack that sleeps costs no
 * more than a short one); a stack read anew goes at the end. The arena is compacted when what
 * no thread uses any more outgrows what they do. */
typedef struct sample_pair {
    sample_buf bufs[2];
    sample_buf *cur, *prev;
    raw_frame *raw;
    pytop_frame *frames;
    uint32_t frame_cap;
} sample_pair;

void samples_init(sample_pair *s);
void samples_free(sample_pair *s);
/* Make the current sample the previous one and start an empty one. */
void samples_next(sample_pair *s);
/* Forget the sample being built: the previous one stays the one to compare with. */
void samples_drop(sample_pair *s);
pytop_thread *samples_push_thread(sample_pair *s);
int samples_push_frame(sample_pair *s, uint64_t frame, uint64_t code, int64_t offset);
/* The same thread state in the previous sample, or NULL (t->tstate must be set). */
const pytop_thread *samples_previous(const sample_pair *s, const pytop_thread *t);
/* The stack `t` had in the previous sample, if it had a complete one (its frames stay where they
 * are: t's first_frame and frame_count are set); false if not. */
bool samples_reuse_stack(sample_pair *s, pytop_thread *t);

/* ---- frames.c --------------------------------------------------------------------------- */

/* Where a thread's frames start, from its PyThreadState. */
typedef struct thread_frames {
    uint64_t top_frame;
    uint64_t chunk;     /* 3.11+: current data-stack chunk */
    uint64_t stack_top; /* 3.11+: datastack_top */
} thread_frames;

/* Walk `t`'s frames into s->cur (raw), innermost first, at most `max_depth` Python frames.
 * When a frame is at address `mark`, *marked is its index among t's frames (else -1). */
int frames_walk(remote *mem, const pytop_layout *L, sample_pair *s, int max_depth,
                const thread_frames *tf, pytop_thread *t, uint64_t mark, int32_t *marked);

/* ---- pidns.c ---------------------------------------------------------------------------- */
/* A target's thread numbers in its own PID namespace, and ours (pidns.c). */
typedef struct ns_task {
    int inner;  /* as the target knows it */
    int host;   /* as /proc here lists it */
} ns_task;

typedef struct pid_namespace {
    int pid;
    bool other;            /* the target's PID namespace is not ours */
    ns_task *map;          /* sorted by inner */
    uint32_t count;
    bool scanned;
    uint32_t scanned_in;   /* the sample that last looked */
} pid_namespace;

void pidns_init(pid_namespace *n, int pid);
void pidns_free(pid_namespace *n);
/* Our number for the target's thread `tid` (its own namespace's); `tid` itself when the target
 * shares our namespace, 0 when it is not (yet) listed. */
int pidns_host_tid(pid_namespace *n, int tid, uint32_t sample_no);
/* The target's number for our task `host` (the inverse, from what is mapped already; 0: not). */
int pidns_inner_tid(const pid_namespace *n, int host);

/* ---- kthreads.c: kthreads.h ------------------------------------------------------------ */
#include "kthreads.h"

/* ---- tracking.c ------------------------------------------------------------------------- */

/* A thread seen lately, remembered for a while in case a sample misses it. */
typedef struct recent_thread {
    uint64_t tstate, thread_id;
    int32_t native_id;
    uint32_t state_serial, serial, seen;
} recent_thread;

/* Samples in which a thread missed by a sample keeps its serial (then it is a new thread). */
#define TRACKING_RECENT_SAMPLES 64

typedef struct tracking {
    uint32_t next_serial;
    uint32_t sample_no;
    recent_thread *recent;
    uint32_t recent_count, recent_cap;
} tracking;

/* Give `t` (tstate and ids set) the serial it had when last seen (in the previous sample, or
 * lately, if a sample missed it), or a new one. */
void tracking_assign(tracking *k, const sample_pair *s, pytop_thread *t);
/* Remember threads of the previous sample that this one missed; forget them after a while. */
void tracking_end_sample(tracking *k, const sample_buf *cur, const sample_buf *prev);
void tracking_free(tracking *k);
/* Once the whole sample is known: a thread state that shares its id with another thread of the
 * sample and has no frames is a new thread's, still carrying its creator's id; where TIDs are
 * known (`has_tids`), one without a TID is not bound to a live thread. */
void tracking_mark_unclaimed(const tracking *k, sample_buf *b, const sample_buf *prev, bool has_tids);

/* ---- blocking.c ------------------------------------------------------------------------- */

typedef struct tracee {
    int tid;
    bool group_stop; /* stopped by someone else's SIGSTOP: leave it so */
} tracee;

typedef struct blocking {
    int pid;
    bool enabled;
    bool stopped;
    tracee *tracees;
    uint32_t count, cap;
} blocking;

/* Seize threads that appeared since the last call (they keep running). */
int blocking_seize_new(blocking *b);
/* Stop every seized thread and wait until each is stopped (bounded in time). */
int blocking_stop_all(blocking *b);
void blocking_resume_all(blocking *b);
void blocking_detach_all(blocking *b);
/* Is thread `tid` stopped by this sample's blocking_stop_all(), in a stop of ours? */
bool blocking_holds(const blocking *b, int tid);

/* ---- natives.c -------------------------------------------------------------------------- */

#define MAX_NATIVE_FRAMES 1024     /* native frames read per thread and sample (3.8: ~5 per Python call) */
#define NATIVE_TABLE_MAX (1u << 20) /* return addresses and functions remembered */

typedef struct native_slot {
    uint64_t key;   /* a return address (by_pc) or where a function starts (by_start) */
    uint32_t id;    /* its code id (a native pseudo-code) */
    uint8_t eval_loop; /* 1: the eval loop (3.6+), 2: 2.7's (or 3.6-3.10's wrapper of it), 0: other */
} native_slot;

/* The latest native stack of a thread that runs no Python (a BLAS or I/O worker), by its TID. */
typedef struct native_other {
    int tid;
    uint32_t sample;     /* the sample it was read in */
    uint32_t count;
    pytop_frame *frames; /* innermost first, native code ids, line 0 */
} native_other;

typedef struct natives {
    int pid;
    struct libdw_api *api;
    struct dwfl_callbacks *callbacks;
    void *dwfl;
    bool stale;             /* libdw's state for the process may be broken: made anew before use */
    uint64_t reported_at;
    native_slot *by_pc, *by_start;
    uint32_t pc_cap, pc_count, start_cap, start_count;
    uint32_t unplaced_id, cut_id; /* "(Python frames below: ...)", "(native frames past ...)" */
    native_other *others;
    uint32_t other_count, other_cap, sample_no;
} natives;

/* Whether libdw can be loaded here; else why not, in `why`. */
bool natives_available(char *why, size_t why_len);
/* Ready to unwind process `pid`'s threads (which the calling thread will hold stopped). */
int natives_open(natives *n, int pid, char *why, size_t why_len);
void natives_close(natives *n);
/* Thread `tid`'s return addresses, innermost first; none unless `held` holds it stopped. */
uint32_t natives_stack(natives *n, const blocking *stopper, int tid, uint64_t *pcs, uint32_t max);
/* The code id of the native function at `pc` (named once), and whether it is the eval loop. */
int natives_code(natives *n, code_cache *codes, uint64_t pc, uint64_t now, uint32_t *id, uint8_t *eval_loop);
/* Thread `t`'s stack, just read at the end of the sample's frames, with its native frames:
 * each call of the eval loop stands for the run of Python frames it runs. */
int natives_merge(natives *n, const blocking *stopper, sample_pair *s, code_cache *codes, pytop_thread *t,
                  uint64_t now);
/* The native stacks of the stopped threads that are none of this sample's Python threads. */
int natives_read_others(natives *n, code_cache *codes, const blocking *stop, const sample_buf *cur, uint64_t now);
/* Thread `tid`'s native stack as the latest sample read it (NULL: not read lately). */
const pytop_frame *natives_other_stack(const natives *n, int tid, uint32_t *count);

/* ---- threads.c -------------------------------------------------------------------------- */

/* A known thread's counts, read before the sample's prefetch when it is due, and whether its
 * state must be read again (they moved). */
typedef struct known_check {
    kthread_report counts;
    bool asked, moved;
} known_check;

/* The thread states of the last full walk of a one-interpreter process, in list order. */
typedef struct known_threads {
    uint64_t interp, head;
    uint64_t *tstates;
    uint64_t *cframes;      /* 3.11-3.12: where each one's _PyCFrame was when last read (0: not known) */
    known_check *checks;    /* this sample's, when checks_at is tasks' sample number + 1 */
    uint32_t count, cap, cframe_cap, check_cap;
    uint32_t walked_at; /* tasks' sample number of that walk */
    uint32_t checks_at;
    uint32_t reread_from;   /* where the next sample's stack re-reads start, if not all can be done */
    bool valid;
} known_threads;

/* A GIL's hand-overs: CPython counts each time a thread takes it from another (switch_number).
 * More hand-overs since the previous sample than the holders it saw explain mean that some
 * thread ran Python unseen in between: its stack may have moved (kthreads.c reads a round). */
#define MAX_GILS (MAX_INTERPRETERS + 1)
typedef struct gil_watch {
    uint64_t at;            /* the GIL's address (the runtime's, or an interpreter's) */
    uint64_t switches;      /* its switch_number then */
    uint64_t holder;        /* its last holder then, whether it still held it or not */
} gil_watch;

/* Where threads block to take each GIL the walks met: the words of its mutexes and condition
 * variables (2.7: of its lock), as [start, end) ranges. */
typedef struct gil_waits {
    uint64_t start[MAX_GILS], end[MAX_GILS];
    int count;
    uint64_t lock_27;       /* 2.7: its lock's address, once the interpreter made it */
    uint32_t waiters_27;    /* 2.7: threads in its lock's wait, as the lock counted them this sample */
    uint64_t holder_27;     /* 2.7: the thread state holding it when the sample began (0: none) */
} gil_waits;

struct pytop_unwinder {
    int pid;                /* 0 for an image: nothing reads /proc, ptrace or a process */
    memory_image image;
    pytop_layout L;
    uint64_t runtime;
    int max_depth;
    bool reuse_stacks;
    bool depth_changed;     /* the previous sample's stacks were cut at another depth: not reused */
    bool hold_stopped;      /* blocking: threads stay stopped after a sample (PYTOP_OPT_HOLD_STOPPED) */
    bool whole_life;        /* as handed to pytop_engine_add(), for the engine's thread to take up */
    remote mem;
    code_cache codes;
    kthreads os;               /* the kernel's figures of each thread (kthreads.c) */
    pid_namespace pidns;    /* its thread numbers, if its PID namespace is not ours (pidns.c) */
    names thread_names;
    tracking track;
    blocking stop;
    natives native_frames;  /* --native: each thread's C frames in its stack (natives.c) */
    sample_pair samples;
    known_threads known;
    uint64_t *walked;       /* the thread states met in the list being walked (threads.c) */
    uint32_t walked_mask, walked_count;
    gil_watch gils[MAX_GILS]; /* each GIL as the previous sample read it, in walk order */
    gil_waits waits;        /* where threads block to take a GIL (gil.c) */
    bool asyncio_tasks;     /* asyncio tasks as pseudo-frames (3.14+) */
    asyncio_book asyncio_names;
    int32_t gc_collecting;
    double taken_at;
    uint64_t image_id;      /* the program it was opened on (image_id.c) */
    bool image_known;
    char error[ERROR_TEXT_BYTES];
};

/* ---- image_id.c ------------------------------------------------------------------------- */
bool image_digest(int pid, uint64_t *out);
/* Whether the process exec'd another program since the unwinder was opened. */
bool unwinder_image_replaced(const pytop_unwinder *u);

/* A word of target memory, remembered for the next sample's prefetch. */
static inline int unwinder_read_u64(pytop_unwinder *u, uint64_t addr, uint64_t *out) {
    int status;
    const uint8_t *p = remote_view(&u->mem, addr, 8, VIEW_TRACK, &status);
    if (p) *out = load_u64(p, 0);
    return status;
}

static inline int unwinder_read_i32(pytop_unwinder *u, uint64_t addr, int32_t *out) {
    int status;
    const uint8_t *p = remote_view(&u->mem, addr, 4, VIEW_TRACK, &status);
    if (p) *out = load_i32(p, 0);
    return status;
}

/* ---- gil.c ------------------------------------------------------------------------------ */
typedef struct gil_holders {
    uint64_t tstate[MAX_GILS]; /* the thread holding each GIL that is held */
    int count;
    uint64_t last[MAX_GILS];   /* each GIL's last holder, whether it still holds it or not */
    int reads;
} gil_holders;

bool gil_holds(const gil_holders *g, uint64_t tstate);
/* Did `tstate` hold a GIL last, even if none holds it now? It ran Python since it took it. */
bool gil_held_last(const gil_holders *g, uint64_t tstate);
/* The GIL at `base` (its fields at those offsets; -1: the version has none) into `g`. */
int gil_read(pytop_unwinder *u, uint64_t base, int32_t locked_off, int32_t holder_off, int32_t switches_off,
             gil_holders *g);
/* Note where threads block to take the GIL at `base` (the runtime's, or an interpreter's when
 * `interpreter`), as the layout says. */
int gil_note_waits(pytop_unwinder *u, uint64_t base, bool interpreter);
/* Is `futex` (a word a thread is blocked on) one a thread waits on to take a GIL? */
bool gil_waited_on(const pytop_unwinder *u, uint64_t futex);
/* 2.7: how many threads wait in its lock now (u->waits.waiters_27), once the lock is known;
 * `g`: the GIL as this sample read it. */
int gil_count_waiters_27(pytop_unwinder *u, const gil_holders *g);
/* 2.7: the threads of the sample racing for its lock, found running, marked as waiting for it. */
void gil_mark_racing_waiters_27(pytop_unwinder *u);

/* ---- thread.c --------------------------------------------------------------------------- */
/* What every walker of one interpreter's threads shares. */
typedef struct walk_ctx {
    pytop_unwinder *u;
    uint64_t interp;        /* the interpreter state's address */
    int64_t id;             /* its id (0 before 3.7) */
    const gil_holders *g;   /* this sample's GIL holders */
} walk_ctx;

/* The thread state at `ts` into the sample (and its successor in the list into *next). */
int thread_walk(const walk_ctx *w, uint64_t ts, uint64_t *next);
/* Once every thread is walked: two threads whose stacks end at the same outermost frame are
 * read again (one followed the other's frames); still together, both are counted torn. */
int threads_part_shared_stacks(pytop_unwinder *u);
/* The holder of the interpreter's GIL, walked first; 0 if none is known here. */
uint64_t thread_walk_holder_first(const walk_ctx *w, uint64_t *next);
/* The holder's record, walked first at `first`, to `first + position` (its place in the list),
 * or away if the list no longer had it (position < 0). */
void thread_place_holder(sample_buf *b, uint32_t first, int64_t position);
/* Every raw frame of `t` to a code id (a torn code object sets t->status). */
int thread_resolve_ids(pytop_unwinder *u, pytop_thread *t);
/* How many bytes of a PyThreadState the walk reads in one go. */
size_t thread_state_span(const pytop_unwinder *u);

/* ---- sparse.c --------------------------------------------------------------------------- */
#define WALK_AGAIN 100 /* a sparse walk found the list changed: walk it all */
/* Do the settings let samples walk sparse? */
bool sparse_allowed(const pytop_unwinder *u);
/* Can this sample walk the interpreter's list from what the last full walk found? */
bool sparse_can_walk(const walk_ctx *w, uint64_t head);
/* The list a full walk just read (the sample's threads from `first_thread`), for the next. */
void sparse_remember_walk(pytop_unwinder *u, uint64_t interp, uint64_t head, uint32_t first_thread);
/* The known threads: the GIL holder's and the moved ones' stacks read, the others as before. */
int sparse_walk_known(const walk_ctx *w);
/* Before the prefetch: the counts of the known threads due this sample, and the memory of
 * those that moved to go with the prefetch. */
void sparse_plan_reads(pytop_unwinder *u);

/* ---- threads.c -------------------------------------------------------------------------- */
/* One sample of every interpreter's threads into u->samples.cur. */
int threads_walk(struct pytop_unwinder *u);

#endif
