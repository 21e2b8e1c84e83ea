/*
 * Declarations shared by the unwinder's C files. Each file owns one subsystem:
 *   remote.c     reading target memory: direct reads, the per-sample arena and prefetch
 *   linetable.c  line-table decoders (pure: bytes in, line ranges out)
 *   text.c       CPython str objects to UTF-8 (pure decoding plus the remote read)
 *   codes.c      the code-object cache: remote address -> id, names, line ranges
 *   frames.c     walking one thread's frames (PyFrameObject or _PyInterpreterFrame)
 *   threads.c    walking interpreters and thread states, GIL holder, GC flag
 *   osstate.c    each thread's state as the kernel reports it (/proc/PID/task/TID)
 *   unwinder.c   the public API in pytop.h
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
#define MAX_LINETABLE_BYTES (4u << 20)
#define MAX_READ_BYTES (16u << 20)   /* no single read of the target is larger */
#define MAX_PREFETCH_RANGES 8192
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
#define MAX_ARENA_BYTES (256u << 20) /* bound on what one sample may copy out of the target */
#define ERROR_TEXT_BYTES 256

/* ---- remote.c --------------------------------------------------------------------------- */

typedef struct range {
    uint64_t addr;
    uint64_t len;
    const uint8_t *data; /* NULL while not (or not successfully) read */
} range;

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    uint8_t bytes[];
} arena_block;

/* Reads of one target process. Views returned by remote_view() stay valid until the next
 * remote_begin_sample(): they point into the prefetch buffer or into the arena. */
typedef struct remote {
    int pid;
    uint32_t syscalls;
    /* What this sample read (to prefetch next time) and what was prefetched for it. */
    range *touched;
    uint32_t touched_count, touched_cap;
    range *ranges;
    size_t range_count, range_cap, last_hit;
    uint8_t *prefetch;
    size_t prefetch_cap;
    /* Regions read whole during this sample (windows of stack chunks), searched after `ranges`. */
    range *extra;
    uint32_t extra_count, extra_cap;
    arena_block *arena;
    size_t arena_total;
    /* While re-reading a torn stack: ignore what was read before `fresh_from` (an index into
     * `extra`) and the prefetch, so the new walk sees memory of one moment, read anew. */
    bool fresh;
    size_t fresh_from;
    /* Reads that failed this sample, and how many may fail before reads give up at once. */
    uint32_t failed_reads, failure_limit;
} remote;

enum view_flags {
    VIEW_TRACK = 1 /* remember the access so the next sample prefetches it */
};

void remote_init(remote *r, int pid);
void remote_free(remote *r);
/* Start a sample: drop last sample's views and prefetch what it touched in one syscall. */
int remote_begin_sample(remote *r);
/* Read `len` bytes at `addr` into a buffer owned by `r`. Returns NULL and sets *status on
 * failure. */
const uint8_t *remote_view(remote *r, uint64_t addr, size_t len, int flags, int *status);
/* A tracked view that, on a miss, reads down to `floor` (or a guessed window when floor is 0)
 * in the same syscall and keeps it for the rest of the sample: the next frames of a walk
 * outwards are usually just below. */
const uint8_t *remote_view_window(remote *r, uint64_t addr, size_t len, uint64_t floor, int *status);
/* From now on, at most `count` more reads may fail in this sample (within the sample's own
 * bound); further ones return PYTOP_ERR_LIMIT without a syscall. */
void remote_allow_failures(remote *r, uint32_t count);
/* Re-reading: until remote_end_fresh(), views ignore everything read so far in this sample.
 * Nests: remote_end_fresh() takes what remote_begin_fresh() returned and restores it. */
typedef struct fresh_mark {
    bool fresh;
    size_t from;
} fresh_mark;
fresh_mark remote_begin_fresh(remote *r);
void remote_end_fresh(remote *r, fresh_mark before);
/* Direct read into the caller's buffer. */
int remote_read(remote *r, uint64_t addr, void *buf, size_t len);
/* Several independent reads in one syscall; ok[i] says which succeeded. */
int remote_readv(remote *r, const range *want, uint8_t **bufs, size_t count, bool *ok);
int status_from_errno(int err);

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
static inline int32_t load_i32(const uint8_t *p, int32_t off) { return (int32_t)load_u32(p, off); }
static inline int64_t load_i64(const uint8_t *p, int32_t off) { return (int64_t)load_u64(p, off); }

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

/* ---- codes.c ---------------------------------------------------------------------------- */

typedef struct code_entry {
    uint64_t addr;
    /* What identifies this code object: if any of it changes, the address was reused. */
    uint64_t type, name_ptr, qualname_ptr, filename_ptr, linetable_ptr;
    int32_t firstlineno;
    int32_t code_bytes;     /* bytecode length, bounds the instruction offset */
    uint64_t checked_at_ms; /* when last confirmed (versions without a code generation) */
    uint64_t checked_generation;
    char *name, *qualname, *filename;
    line_ranges lines;
    int32_t memo_offset, memo_line; /* the last lookup: stacks repeat offsets */
    bool stale;             /* replaced by a newer object at the same address */
} code_entry;

typedef struct code_cache {
    code_entry *entries; /* id = index + 1 */
    uint32_t count, cap;
    uint32_t *slots;     /* open addressing: remote address -> id, 0 = empty */
    uint32_t slot_mask;
    uint64_t type_ok[8], type_bad[8]; /* small caches of type objects known to be / not be code */
    uint64_t generation; /* target's code-object generation (3.14+), when known */
    bool generation_known;
    uint64_t recheck_ms;
    /* Entries used this sample that must be re-confirmed, checked together in one syscall. */
    uint32_t *due;
    uint32_t due_count, due_cap;
    /* Addresses that could not be read as code objects this sample, and why. */
    uint64_t bad[MAX_BAD_CODES];
    int bad_status[MAX_BAD_CODES];
    uint32_t bad_count;
} code_cache;

struct pytop_unwinder;
int codes_init(code_cache *c);
void codes_free(code_cache *c);
/* The id of the code object at `addr`; reads and decodes it the first time. */
int codes_lookup(struct pytop_unwinder *u, uint64_t addr, uint32_t *id);
/* Confirm entries that are due for a check, in one batch. Returns how many were found replaced
 * (their address is then free for a new entry with a new id). */
int codes_confirm_due(struct pytop_unwinder *u);
/* Check this entry in the next codes_confirm_due(), whatever its age. */
void codes_force_check(struct pytop_unwinder *u, uint32_t id);
int32_t codes_line(code_cache *c, uint32_t id, int32_t byte_offset);
const code_entry *codes_get(const code_cache *c, uint32_t id);

/* ---- frames.c --------------------------------------------------------------------------- */

/* Where a thread's frames start, from its PyThreadState. */
typedef struct thread_frames {
    uint64_t top_frame;
    uint64_t chunk;     /* 3.11+: current data-stack chunk */
    uint64_t stack_top; /* 3.11+: datastack_top */
} thread_frames;

int frames_walk(struct pytop_unwinder *u, const thread_frames *tf, pytop_thread *t);

/* ---- threads.c -------------------------------------------------------------------------- */

int threads_walk(struct pytop_unwinder *u);

/* ---- osstate.c -------------------------------------------------------------------------- */

typedef struct task_files {
    int tid;
    int stat_fd;
    int schedstat_fd;
    char state;
    uint64_t pcount;        /* times scheduled onto a CPU, from schedstat */
    bool fresh;             /* `state` was read for this sample already (blocking mode) */
    bool pcount_known;
    uint32_t seen_in_sample;
} task_files;

typedef struct os_state {
    int pid;
    int mode; /* PYTOP_OPT_OS_STATE */
    uint32_t syscalls;
    task_files *tasks;
    uint32_t count, cap;
    uint32_t sample_no;
} os_state;

void os_state_init(os_state *o, int pid);
void os_state_free(os_state *o);
/* The kernel's state letter for `tid` ('?' when unknown). *idle_since is set when the thread
 * was not running at the last look and has not been on a CPU since: its stack is unchanged. */
char os_state_of(os_state *o, int tid, bool *idle_since);
/* Read `tid`'s state now, to be answered by os_state_of() during this sample: in blocking mode
 * the threads are stopped (state 't') by the time their stacks are read. */
void os_state_read_ahead(os_state *o, int tid);
/* Close files of threads that were not seen in this sample. */
void os_state_end_sample(os_state *o);

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
/* Stop every seized thread and wait until each is stopped. */
int blocking_stop_all(blocking *b);
void blocking_resume_all(blocking *b);
void blocking_detach_all(blocking *b);

/* ---- tracking.c ------------------------------------------------------------------------- */

typedef struct thread_stat_entry {
    pytop_thread_stat stat;
    uint32_t last_seen; /* sample number */
} thread_stat_entry;

typedef struct thread_tracking {
    uint32_t next_serial;
    uint32_t sample_no;
    thread_stat_entry *entries;
    uint32_t count, cap, hint;
} thread_tracking;

struct pytop_unwinder;
/* Give `t` (tstate and ids set) its previous serial, or a new one. */
void tracking_assign_serial(struct pytop_unwinder *u, pytop_thread *t);
/* Count this sample's threads into their figures. */
void tracking_count(struct pytop_unwinder *u);

/* ---- unwinder.c ------------------------------------------------------------------------- */

typedef struct raw_frame {
    uint64_t code;
    int32_t offset; /* instruction byte offset into the bytecode; negative: not started */
} raw_frame;

/* One sample's threads and frames. Frames are first collected raw (code address, instruction
 * byte offset), then resolved through the code cache into `frames`, index for index. */
typedef struct sample_buf {
    pytop_thread *threads;
    uint32_t thread_count, thread_cap;
    raw_frame *raw;
    pytop_frame *frames;
    uint32_t frame_count, frame_cap;
} sample_buf;

struct pytop_unwinder {
    /* pytop_collect() and pytop_describe_code() may come from two threads: the code cache
     * they share is guarded by this lock (collections themselves come from one thread). */
    pthread_mutex_t lock;
    int pid;
    pytop_layout L;
    uint64_t runtime;
    int max_depth;
    bool reuse_stacks;
    int select;                  /* pytop_select */
    uint32_t *selected;
    uint32_t selected_cap;
    thread_tracking track;
    blocking stop;
    remote mem;
    code_cache codes;
    os_state os;
    /* This sample and the one before: a thread that has not run since keeps its stack. */
    sample_buf bufs[2];
    sample_buf *cur, *prev;
    int32_t gc_collecting;
    uint64_t now_ms;
    char error[ERROR_TEXT_BYTES];
};

/* Record a readable cause for the current failure; returns `status` for chaining. */
int fail(struct pytop_unwinder *u, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int push_raw_frame(struct pytop_unwinder *u, uint64_t code, int64_t offset);
pytop_thread *push_thread(struct pytop_unwinder *u);
/* Code ids for the raw frames of `t`; a code object that cannot be read sets t->status. */
int resolve_ids(struct pytop_unwinder *u, pytop_thread *t);
/* The same thread state in the previous sample, or NULL (t->tstate must be set). */
const pytop_thread *previous_thread(const struct pytop_unwinder *u, const pytop_thread *t);
/* Copy the stack `t` had in the previous sample, if it had one; false if not. */
bool reuse_previous_stack(struct pytop_unwinder *u, pytop_thread *t);

#endif
