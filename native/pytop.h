/*
 * pytop's native core: its one public header.
 *
 * Two parts. The unwinder reads a running CPython process's memory with process_vm_readv only
 * (it never writes to the target and never stops it unless asked to) and returns, per call,
 * every thread of every interpreter with its frames as compact integer pairs (code id, line),
 * each thread's figures from the kernel, and its name. The engine runs unwinders on a native
 * thread of its own at a steady rate, interns stacks, attributes each thread's kernel CPU time,
 * wall time and GIL time to its stacks, and hands out what is new when drained.
 *
 * cffi reads this file as its cdef, so it keeps to what cdef understands: plain typedefs,
 * structs, enums and prototypes. Struct offsets of the target's CPython come in as data
 * (pytop_layout), filled by the Python side per version.
 */
#ifndef PYTOP_H
#define PYTOP_H
#include <stdint.h>
#include <stddef.h>

/* Status codes returned by every call. */
enum pytop_status {
    PYTOP_OK = 0,
    PYTOP_ERR_GONE = 1,       /* the target process has exited */
    PYTOP_ERR_PERMISSION = 2, /* the kernel refused to let us read the target */
    PYTOP_ERR_READ = 3,       /* a read of target memory failed (a structure changed under us) */
    PYTOP_ERR_CORRUPT = 4,    /* target memory did not make sense (bad pointer, size, type) */
    PYTOP_ERR_LIMIT = 5,      /* a safety bound was reached (frames, threads, sizes, time) */
    PYTOP_ERR_NOMEM = 6,      /* local allocation failed */
    PYTOP_ERR_ARGS = 7,       /* invalid argument */
    PYTOP_ERR_STATE = 8       /* not now: the engine is running, stopped, or stuck */
};

/* How frames are linked: PyFrameObject chain (2.7, 3.6-3.10) or _PyInterpreterFrame (3.11+). */
enum pytop_frame_model { PYTOP_FRAMES_OBJECTS = 1, PYTOP_FRAMES_INTERPRETER = 2 };

/* Line table formats: co_lnotab (3.6-3.9), co_linetable (3.10), location table (3.11+), and 2.7's
 * co_lnotab, whose line increments are unsigned. */
enum pytop_line_table { PYTOP_LINES_LNOTAB = 1, PYTOP_LINES_310 = 2, PYTOP_LINES_LOCATIONS = 3,
                        PYTOP_LINES_LNOTAB_27 = 4 };

/* Where things are inside the target's CPython structures. -1 means "this version has none".
 * Field names match app/pytop/target/layouts/generated.py (see tools/gen_layouts.py). */
typedef struct pytop_layout {
    uint32_t version_hex;
    int32_t frame_model;
    int32_t line_table;
    int32_t lasti_scale;   /* bytes per unit of f_lasti: 1 (3.8-3.9) or 2 (3.10) */
    int32_t pthread_tid;   /* offset of the kernel TID inside glibc's struct pthread, or -1 */

    int32_t rt_interpreters_head, rt_main_thread, rt_gil_locked, rt_gil_holder, rt_gil_switches, rt_gc_collecting;
    int32_t is_next, is_id, is_threads_head, is_gil_locked, is_gil_holder, is_gil_switches, is_gc_collecting;
    /* Where threads block to take the GIL: its mutexes and condition variables, gil_waits_size
     * bytes at rt_gil_waits (the runtime's, 3.6-3.11) or is_gil_waits (an interpreter's, 3.12+),
     * or at the address held at rt_gil_lock (2.7's lock). 0 bytes: not known. */
    int32_t rt_gil_waits, is_gil_waits, rt_gil_lock, gil_waits_size;
    int32_t is_code_generation, is_modules;
    int32_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id, ts_unique_id, ts_frame, ts_cframe;
    int32_t cf_current_frame, ts_datastack_chunk, ts_datastack_top;
    int32_t fr_previous, fr_code, fr_lasti, fr_instr_ptr, fr_owner, fr_header_size;
    int32_t fr_owner_native, fr_executable_tag_bits, fr_owner_max, fr_is_entry;
    int32_t chunk_previous, chunk_size, chunk_data;
    int32_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_code, co_flags, co_flags_resumable;
    int32_t co_code_adaptive, co_header_size;
    int32_t ob_refcnt, ob_type, var_ob_size, tp_name, tp_flags, tp_basicsize, tp_dictoffset, tp_itemsize;
    int32_t ht_cached_keys, bytes_sval;
    /* str: PEP 393 (3.x); str_state -1 means 2.7's PyStringObject (ob_size bytes at bytes_sval). */
    int32_t str_length, str_state, str_ascii_size, str_compact_size, str_legacy_data;
    int32_t str_kind_shift, str_kind_width, str_compact_shift, str_compact_width;
    int32_t str_ascii_shift, str_ascii_width;
    /* Objects the thread-name reader walks: modules, dicts, ints, instance attributes. */
    int32_t md_dict, dict_ma_keys, dict_ma_values;
    int32_t dk_size, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_nentries, dk_indices;
    int32_t dict_entry_size, dict_entry_hash, dict_entry_key, dict_entry_value;
    int32_t dict_unicode_entry_size, dict_unicode_entry_key, dict_unicode_entry_value;
    int32_t dict_values_values, dict_values_capacity, dict_values_valid;
    int32_t dict_ma_mask, dict_ma_table; /* 2.7: one table of ma_mask + 1 PyDictEntry (else -1) */
    int32_t long_digits, long_tag, long_shift;
    int32_t int_ival; /* 2.7: PyIntObject's value (else -1) */
    int32_t managed_dict, managed_values, tpflags_managed_dict, tpflags_inline_values;
    /* asyncio (3.14+): a thread's running loop and task, a task's coroutine and name, where a
     * coroutine keeps its frame. */
    int32_t ts_asyncio_running_loop, ts_asyncio_running_task, task_coro, task_name, gen_iframe;
    int32_t tpflags_unicode_subclass;
} pytop_layout;

/* Per-thread flags. */
enum pytop_thread_flags {
    PYTOP_THREAD_GIL = 1,        /* holds the GIL */
    PYTOP_THREAD_ACTIVE = 2,     /* the kernel reports it running or runnable (state R) now */
    PYTOP_THREAD_OS_KNOWN = 4,   /* its kernel figures could be read */
    PYTOP_THREAD_TRUNCATED = 8,  /* its stack was cut at the depth limit */
    PYTOP_THREAD_UNCHANGED = 16, /* it has not run since the last sample: its stack was reused */
    PYTOP_THREAD_CHECKED = 32,   /* its kernel figures were read in this sample */
    PYTOP_THREAD_RAN = 64,       /* it was on a CPU since its previous check */
    PYTOP_THREAD_NEW_TASK = 128, /* its kernel figures were read for the first time: cpu_ns is
                                    its whole life so far, cpu_delta_ns is 0 */
    PYTOP_THREAD_UNCLAIMED = 256, /* a thread state its new thread has not taken up yet: it carries
                                    no ids of its own (3.12+) or its creator's (before) */
    PYTOP_THREAD_ON_CPU = 512,   /* its state letter, read in this sample, says it is on a CPU
                                    (R, and it ran since it was last found asleep or waiting):
                                    C code that let the GIL go runs here, at this stack */
    PYTOP_THREAD_GIL_WAIT = 1024, /* when its counts were last read, it was blocked in the kernel
                                    taking the GIL (not napping, nor waiting for another lock) */
    PYTOP_THREAD_GIL_ASLEEP = 2048 /* it holds the GIL, and its letter, read in this sample, says it
                                    sleeps (S) or waits in the kernel (D): C code that blocks
                                    without letting the GIL go; or it is stopped (T). It does not
                                    run there */
};

/* One frame: which code object (an id, stable while the object lives) and which line. */
typedef struct pytop_frame {
    uint32_t code_id;
    int32_t line;
} pytop_frame;

typedef struct pytop_thread {
    uint64_t thread_id;     /* Python's thread id (threading.get_ident()) */
    uint64_t tstate;        /* address of its PyThreadState in the target */
    int64_t interp_id;
    uint64_t cpu_ns;        /* the kernel's count of its CPU time, its whole life (0: unknown) */
    uint64_t cpu_delta_ns;  /* CPU time since its previous check */
    uint64_t wait_delta_ns; /* time runnable but waiting for a CPU, since its previous check */
    uint64_t outer_frame;   /* address of its outermost Python frame (0: none) */
    uint64_t top_frame;     /* address of its innermost frame when its stack was read */
    int32_t native_id;      /* kernel TID, 0 when unknown */
    uint32_t flags;         /* pytop_thread_flags */
    int32_t status;         /* PYTOP_OK, or why its stack could not be read in full */
    uint32_t first_frame;   /* index into pytop_sample.frames; frames are innermost first */
    uint32_t frame_count;
    uint32_t serial;        /* a thread keeps its serial from sample to sample; one that was not in
                               the previous sample is a new thread, even if its ids were used before */
    char os_state;          /* state letter from /proc (R, S, D, ...) as last read, or '?' */
    uint32_t state_serial;  /* 3.8-3.10: the interpreter's number for its thread state (low bits),
                               which tells a new thread in a reused state from the old one; else 0 */
} pytop_thread;

/* One call's result. The arrays belong to the unwinder and stay valid until the next call. */
typedef struct pytop_sample {
    const pytop_thread *threads;
    const pytop_frame *frames;
    uint32_t thread_count;
    uint32_t frame_count;
    uint32_t active_count;     /* threads the kernel reports running */
    uint32_t torn_count;       /* threads whose stack could not be read in full */
    int32_t gil_held;          /* 1 if some thread held the GIL */
    int32_t gc_collecting;     /* 1 if the garbage collector was running, 0 if not, -1 unknown */
    uint32_t syscalls;         /* syscalls this call made: memory and /proc reads (for benchmarks) */
    uint32_t failed_reads;     /* reads of target memory that failed (torn structures) */
    double taken_at;           /* CLOCK_MONOTONIC seconds when the sample began */
} pytop_sample;

typedef struct pytop_code_info {
    const char *name;      /* UTF-8, valid until pytop_close() */
    const char *qualname;  /* equals name before 3.11 */
    const char *filename;
    int32_t firstlineno;
    uint64_t address;      /* where the code object lived in the target */
} pytop_code_info;

typedef struct pytop_unwinder pytop_unwinder;

/* Options for pytop_set_option(). */
enum pytop_option {
    PYTOP_OPT_MAX_DEPTH = 1,       /* frames kept per thread (default 65536) */
    PYTOP_OPT_OS_STATE = 2,        /* 0: no /proc reads, 1: as needed (default), 2: every thread's
                                      kernel figures and state letter in every sample */
    PYTOP_OPT_REUSE_STACKS = 4,    /* 1 (default): keep the stacks of threads that have not run */
    PYTOP_OPT_BLOCKING = 5,        /* 1: stop the target's threads (ptrace) while sampling; 0: release them.
                                      Set, sample and release from one thread: ptrace belongs to it */
    PYTOP_OPT_IDLE_CHECK = 6,      /* at most this many samples between two reads of an idle
                                      thread's kernel figures (default 1: every sample); past 1,
                                      a round of such reads is skipped while the process's CPU
                                      time is nearly all accounted for (kthreads.c) */
    PYTOP_OPT_TASKS = 7,           /* 1: a thread running an asyncio task (3.14+) gets a pseudo-frame
                                      named for the task outside the task's coroutine frame; its
                                      code info has filename "<asyncio task>" */
    PYTOP_OPT_HOLD_STOPPED = 8,    /* with BLOCKING: 1 keeps the threads stopped after a sample (its
                                      native stacks can be read, consistent with it, by the same
                                      thread); 0 lets them go on */
    PYTOP_OPT_NATIVE = 9           /* with BLOCKING: 1 puts each thread's native (C) frames in its
                                      stack, through libdw (pytop_native_available() says if it can);
                                      their code info has native = 1 and the library as filename */
};

/* 1 if --native can work here (libdw loads); else 0 and why not in `why`. */
int pytop_native_available(char *why, size_t why_len);

/* Attach to `pid` whose _PyRuntime lives at `runtime_address`. Returns NULL and sets *status
 * on failure. Nothing is read from the target until the first pytop_collect(). */
pytop_unwinder *pytop_open(int pid, const pytop_layout *layout, uint64_t runtime_address,
                           int *status);
/* A memory image read instead of a live process: a core file's segments. */
typedef struct pytop_region {
    uint64_t address;     /* where the bytes were in the process */
    uint64_t size;
    const uint8_t *data;  /* the bytes, owned by the caller */
} pytop_region;

/* Like pytop_open, on a memory image: `regions` sorted by address, apart, non-empty. The list
 * is copied; the bytes stay the caller's and must outlive the unwinder. Reads never leave the
 * regions, and nothing reads /proc or any process: no kernel figures (OS state 0 only), no
 * --blocking, no engine. */
pytop_unwinder *pytop_open_image(const pytop_region *regions, uint32_t count, const pytop_layout *layout,
                                 uint64_t runtime_address, int *status);
/* The reads an image unwinder was asked for since it opened, as (address, length) pairs in
 * `pairs` (2 * capacity integers); returns how many there are (the first 65536 are kept). For
 * the fuzzer: it mutates what the unwinder reads. */
uint32_t pytop_image_reads(pytop_unwinder *u, uint64_t *pairs, uint32_t capacity);
int pytop_set_option(pytop_unwinder *u, int option, int64_t value);
/* Take one sample of every thread. On PYTOP_OK `out` describes it; on failure
 * pytop_last_error() says what went wrong. */
int pytop_collect(pytop_unwinder *u, pytop_sample *out);
/* `count` samples back to back, for benchmarks of the unwinder alone: adds the good samples,
 * the threads they held and the syscalls made to the counters. Stops early only when the target
 * is gone or unreadable, and returns that status. */
int pytop_bench_collect(pytop_unwinder *u, uint32_t count, uint64_t *good, uint64_t *threads,
                        uint64_t *syscalls);
int pytop_describe_code(pytop_unwinder *u, uint32_t code_id, pytop_code_info *out);
/* The id of the code object at `address` (read the first time) and the line of its bytecode
 * byte `offset` (-1: none), for frames outside a thread's stack (a suspended coroutine's).
 * Call it after pytop_collect(), from the thread that samples. */
int pytop_code_at(pytop_unwinder *u, uint64_t address, int32_t offset, uint32_t *code_id, int32_t *line);
/* The name `threading` gives the thread with this id (Thread.name), as NUL-terminated UTF-8 in
 * `out`; PYTOP_ERR_ARGS when the target has no such thread in threading's registry. */
int pytop_thread_name(pytop_unwinder *u, uint64_t thread_id, char *out, size_t capacity);
/* The addresses of the last sample's frames first_frame .. first_frame + count - 1 (as its
 * threads index them): where each frame's arguments and locals are (0 for a pseudo-frame). If
 * `entry` is not NULL, entry[i] is 1 for a frame that is the outermost of the frames one call of
 * the eval loop runs (its C caller is native code: where native frames go between Python ones). */
int pytop_frame_addresses(pytop_unwinder *u, uint32_t first_frame, uint32_t count, uint64_t *out,
                          uint8_t *entry);
/* The target's whole CPU time (every thread, ended ones included), in nanoseconds. */
int pytop_process_cpu(pytop_unwinder *u, uint64_t *cpu_ns);
const char *pytop_last_error(pytop_unwinder *u);
void pytop_close(pytop_unwinder *u);

/* One read of target memory, for attach-time work done in Python. */
int pytop_read_memory(int pid, uint64_t address, void *buffer, size_t length);

/* The terminal on `fd` given back (its settings as now, the live view's modes undone) if the
 * process dies of a fatal signal (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL), which then does
 * what it did before; pytop_unguard_terminal() stops that (see guard.c). */
int pytop_guard_terminal(int fd);
void pytop_unguard_terminal(void);

/* A C++ symbol demangled into `out` (cut at `capacity`, NUL-terminated), a compiler clone's
 * suffix said ("[clone .constprop.1]"); PYTOP_ERR_ARGS when it is no C++ name, or no demangler
 * (the C++ runtime's) can be loaded. */
int pytop_demangle(const char *symbol, char *out, size_t capacity);

/* Line-table decoding, exposed for tests with random and truncated input. Returns the line for
 * byte offset `offset` or -1; never reads outside table[0..length). */
int32_t pytop_decode_line(int format, const uint8_t *table, size_t length, int32_t firstlineno,
                          int32_t offset);
/* String decoding, exposed for tests: writes UTF-8 (NUL-terminated, at most `capacity` bytes
 * including the NUL) for `count` characters of `kind` (1, 2 or 4 bytes each). Returns the number
 * of bytes written before the NUL, or -1 on invalid input. */
int64_t pytop_decode_text(int kind, const uint8_t *data, size_t data_length, size_t count,
                          char *out, size_t capacity);

/* ---- The engine --------------------------------------------------------------------------
 *
 * One native thread samples every process handed to it, at most `rate` times a second (one
 * sample per slot of the schedule, jittered within it; see schedule.h), without Python's GIL.
 * Slots that pass while the machine is too busy are skipped, never caught up in a burst, and the
 * rate is lowered while pytop uses more than its CPU budget. Per thread it attributes:
 *   cpu:  the kernel's count of the thread's CPU time, split over the stacks it was seen running
 *         with since the count last moved (or given to its latest stack when it was not seen);
 *   wall: the time between samples, to the stack it had;
 *   gil:  the same, while it held the GIL.
 * A sample after skipped slots stands for them too (up to `max_gap`): wall time adds up to the
 * time that passed. Python drains what is new a few times a second. Ownership: an unwinder handed to the
 * engine is used and freed by the engine's thread only. */

typedef struct pytop_engine pytop_engine;

typedef struct pytop_engine_config {
    double rate;              /* samples per second asked for */
    double jitter;            /* where in its slot a sample falls: the middle +- jitter/2 (0..0.9) */
    double max_gap;           /* seconds: the most wall time one sample may stand for */
    int32_t realtime;         /* 1: try the lowest real-time priority for the sampling thread */
    double realtime_budget;   /* share of a core above which it gives that priority back */
    double cpu_budget;        /* share of a core pytop's whole process may use: past it, the rate is
                                 lowered until it fits (0: no budget) */
    double min_rate;          /* the budget never lowers the rate below this */
    int32_t blocking;         /* 1: stop the target's threads with ptrace while they are read */
    int32_t native;           /* 1 (with blocking): native frames in the stacks (PYTOP_OPT_NATIVE) */
    uint32_t max_stack_nodes; /* bound on the nodes of the stack tree (0: default); one given is
                                 also the room it may grow by between evictions */
    double period;            /* seconds between two full checks of every thread (0: default) */
} pytop_engine_config;

/* Kinds of stack with no frames of their own: shown as one pseudo-function each. */
enum pytop_stack_kind {
    PYTOP_STACK_FRAMES = 0,      /* Python frames */
    PYTOP_STACK_EMPTY = 1,       /* a Python thread with no Python frame (C code, starting up) */
    PYTOP_STACK_NATIVE = 2,      /* a thread of the process that is not a Python thread */
    PYTOP_STACK_UNSEEN = 3,      /* CPU of threads that started and ended between samples */
    PYTOP_STACK_OVERFLOW = 4,    /* stacks past the bound on unique stacks */
    PYTOP_STACK_TORN = 5,        /* a thread whose stack changed under every read before one was whole */
    PYTOP_STACK_UNPLACED = 6,    /* not a root: a node under a thread's frames for CPU time it used
                                    there between samples, where no sample saw it */
    PYTOP_STACK_INCOMPLETE = 8,  /* flag: outer frames are missing (cut or torn): no caller edges */
    PYTOP_STACK_COARSE = 16      /* flag: a stack that found no room in the tree whole, kept as the set
                                    of its (function, line) frames (in the order of function ids)
                                    and its innermost frame: own and total times whole, no callers */
};

typedef struct pytop_drain_process {
    uint32_t process;        /* the engine's index for it */
    int32_t pid;
    int32_t status;          /* PYTOP_OK while sampled; why it stopped otherwise */
    uint32_t threads;        /* Python threads in its latest sample */
    uint32_t samples;        /* since the previous drain: samples taken ... */
    uint32_t failed;         /* ... samples that failed as a whole ... */
    uint32_t gil_samples;    /* ... with some thread holding the GIL ... */
    uint32_t gc_samples;     /* ... taken while the GC ran ... */
    uint32_t gc_known;       /* ... in which the target said whether it did */
    uint32_t torn;           /* thread stacks that could not be read in full */
    uint64_t cpu_ns;         /* the kernel's CPU time of the whole process in the same time */
    uint64_t unseen_cpu_ns;  /* ... of which by threads no sample saw (they started and ended
                                between two): their row's, "threads that ended between samples" */
    uint32_t error_at;       /* offset in `text` of its latest error, or UINT32_MAX */
    uint32_t reserved;
} pytop_drain_process;

enum pytop_drain_thread_flags {
    PYTOP_DRAIN_ALIVE = 1,   /* in the latest sample */
    PYTOP_DRAIN_NAMED = 2,   /* name_at is set (sent when the name is first known) */
    PYTOP_DRAIN_NATIVE = 4,  /* not a Python thread: a task of the process without a thread state */
    PYTOP_DRAIN_GIL = 8      /* held the GIL in the latest sample */
};

typedef struct pytop_drain_thread {
    uint64_t thread_id;
    uint64_t cpu_ns;         /* since the previous drain: the kernel's CPU time (and its share
                                of the time of threads that ended unseen) */
    uint64_t wall_ns;        /* time it was sampled over */
    uint64_t wait_ns;        /* time runnable but waiting for a CPU */
    uint64_t unplaced_ns;    /* of cpu_ns, what it used where no sample saw it (an unplaced row) */
    uint32_t thread;         /* the engine's key for it, never reused */
    uint32_t process;
    int32_t native_id;
    uint32_t flags;          /* pytop_drain_thread_flags */
    uint32_t samples;        /* since the previous drain */
    uint32_t gil_samples;
    uint32_t errors;         /* samples in which its stack could not be read */
    int32_t last_error;      /* status of its latest error */
    uint32_t stack;          /* its stack in the latest sample (0: none yet) */
    uint32_t name_at;        /* offset in `text`, or UINT32_MAX */
    char os_state;
    char reserved[7];
} pytop_drain_thread;

/* A node of the stack tree (see stacks.c): a frame reached by one path from its root. A stack
 * is known by its innermost node; a root stands for a stack kind with no frame. */
typedef struct pytop_drain_node {
    uint32_t node;           /* ids start at 1; an id evicted in this drain or before may be reused */
    uint32_t parent;         /* 0 for a root */
    uint32_t code_id;        /* a root: its kind (pytop_stack_kind, flags included) */
    int32_t line;
    uint32_t process;
    uint32_t function;       /* the engine's function (a root of a kind without frames: its row) */
    uint32_t depth;          /* 0 for a root */
    uint8_t flags;           /* pytop_node_flags */
    uint8_t kind;            /* its root's kind */
    uint8_t reserved[2];
} pytop_drain_node;

enum pytop_node_flags {
    PYTOP_NODE_FIRST_FUNCTION = 2, /* its function is not on its path further out */
    PYTOP_NODE_FIRST_LINE = 4      /* ... nor its (function, line) */
};

typedef struct pytop_drain_weight {
    uint64_t cpu_ns, wall_ns, gil_ns;
    uint32_t stack, thread;  /* stack: its innermost node */
    uint32_t samples;        /* samples in which the thread had this stack */
    uint32_t running;        /* ... and the kernel reported it running */
} pytop_drain_weight;

/* A function (a row of the table), first seen since the last drain. */
typedef struct pytop_drain_function {
    uint32_t function;
    uint32_t process;
    uint32_t kind;           /* a stack kind's row (pytop_stack_kind); 0 for code */
    uint32_t task;           /* 1: an asyncio task's pseudo-frame */
    uint32_t native;         /* 1: a native (C) function (--native): filename is its library */
    uint32_t qualname_at, filename_at; /* offsets in `text` (UINT32_MAX for a kind's row) */
} pytop_drain_function;

/* Time of stacks, summed per function or per (function, line): `own` where it is the innermost
 * frame, `total` where it is anywhere on the stack (once per stack), `own_hidden` the own time
 * it has when asyncio tasks' pseudo-frames are hidden (a task frame's own time goes out to the
 * nearest real frame). Figures: samples, cpu ns, wall ns, gil ns. */
typedef struct pytop_function_row {
    uint64_t own[4], total[4], own_hidden[4];
    uint32_t function;
    int32_t line;            /* per-line rows: its line; per-function rows: 0 */
} pytop_function_row;

/* A node's time: `own` in stacks that end at it, `total` in every stack through it. */
typedef struct pytop_node_row {
    uint64_t own[4], total[4];
    uint32_t node;
    uint32_t reserved;
} pytop_node_row;

/* Time of one stack (its innermost node), to be summed (pytop_engine_aggregate). */
typedef struct pytop_leaf_tally {
    uint64_t cpu_ns, wall_ns, gil_ns;
    uint32_t leaf;
    uint32_t samples;
} pytop_leaf_tally;

enum pytop_aggregate_flags {
    PYTOP_AGGREGATE_TABLES = 1,  /* per-function and per-line rows */
    PYTOP_AGGREGATE_NODES = 2    /* per-node rows: every node on the stacks' paths */
};

typedef struct pytop_aggregate {
    const pytop_function_row *functions;
    const pytop_function_row *lines;
    const pytop_node_row *nodes;
    uint32_t function_count, line_count, node_count;
    uint32_t skipped;        /* tallies whose stack is no longer in the tree (evicted) */
} pytop_aggregate;

typedef struct pytop_drain {
    const pytop_drain_process *processes;
    const pytop_drain_thread *threads;     /* threads new, changed or ended since the last drain */
    const pytop_drain_function *functions; /* functions first seen since the last drain */
    const uint32_t *retired;               /* functions gone since the last drain, before `functions`
                                              (which may reuse their ids) */
    const pytop_drain_node *nodes;         /* nodes made since the last drain, parents first */
    const uint32_t *evicted;               /* nodes evicted since the last drain (before `nodes`) */
    const pytop_drain_weight *weights;     /* time added since the last drain, per (stack, thread) */
    const pytop_drain_weight *standing;    /* whole drains: threads left out of `threads` because
                                              their only news is time asleep on the stack they were
                                              last handed over with (their update: these samples
                                              and wall time; no CPU, GIL or running samples); their
                                              time is here, not in `weights` */
    const pytop_function_row *function_rows; /* ... the same time per function (`standing` too) */
    const pytop_function_row *line_rows;   /* ... and per (function, line) */
    const char *text;
    uint32_t process_count, thread_count, function_count, retired_count, node_count, evicted_count;
    uint32_t weight_count, standing_count, function_row_count, line_row_count;
    uint32_t text_size;
    uint32_t ticks;          /* since the previous drain: sampling ticks ... */
    uint32_t late;           /* ... that began more than one interval after they were due */
    uint32_t skipped;        /* slots of the schedule that passed without a sample (a busy machine) */
    uint32_t budget_limited; /* 1 while the CPU budget holds the rate below the one asked for */
    double slot_seconds;     /* the schedule's time the ticks and skipped slots cover */
    double first_at, last_at;/* CLOCK_MONOTONIC seconds of the first and last tick drained */
    double lag;              /* seconds the latest tick began after it was due */
    double longest_delay;    /* seconds: the latest a tick began after it was due (a stall) */
    double cpu_seconds;      /* CPU time the sampling thread used */
    double start_up_cpu;     /* pytop's whole process's CPU time (the kernel's count) at the end of its
                              * first process's first read: imports, attaching, naming every thread
                              * (0 until then). The budget's account starts there (budget.h). */
    double rate_now;         /* samples per second the schedule runs at now */
    int32_t running;         /* 1 while the sampling thread runs */
    int32_t realtime;        /* 1 while it has a real-time priority */
    uint32_t stacks_dropped; /* stacks that found no room in the tree (overflow rows), since the start */
    uint32_t stacks_coarsened; /* stacks kept coarse (PYTOP_STACK_COARSE) for want of room, since the start */
    uint32_t stack_nodes;    /* nodes in the stack tree now */
    uint32_t end_at;         /* why sampling ended (offset in `text`), or UINT32_MAX */
} pytop_drain;

/* A stopped engine with nothing to sample yet. */
pytop_engine *pytop_engine_new(const pytop_engine_config *config, int *status);
/* Hand an unwinder to the engine (from any thread, before or while it runs): from the call on,
 * only the engine's thread uses it, and frees it when its process ends or the engine stops.
 * With `whole_life`, the CPU its process used before its first sample counts too (a child
 * started since sampling began: all its time is the run's); else it counts from there.
 * *process is the engine's index for it. */
int pytop_engine_add(pytop_engine *e, pytop_unwinder *u, int32_t whole_life, uint32_t *process);
/* Stop sampling `process` from its next tick on, as if it had exited, with `why` as its error
 * (a process that exec'd another program: its unwinder reads a memory that is no longer
 * there). PYTOP_ERR_STATE while the sampling thread has not taken the process up yet. */
int pytop_engine_retire(pytop_engine *e, uint32_t process, const char *why);
/* While `waiting` is set, the engine with no live process waits for one to be added, rather
 * than ending its run (--subprocesses on a program that is not Python: its Python children
 * come and go while it lives). Clearing it ends the run if no process is live. */
int pytop_engine_wait_for_processes(pytop_engine *e, int waiting);
/* Start the sampling thread. */
int pytop_engine_start(pytop_engine *e);
/* Ask the sampling thread to end and wait for it at most `timeout` seconds. PYTOP_OK when it
 * has ended (and freed its unwinders); PYTOP_ERR_LIMIT when it has not: the engine must then
 * be left alone (never freed), since that thread may still use it. */
int pytop_engine_stop(pytop_engine *e, double timeout);
/* What is new since the previous drain, in arrays the engine owns until the next drain. With
 * `whole` 0 (a drain between two refreshes), a thread with no news but more wall time (it
 * slept on) keeps that time for the next whole drain: on a pool of 2,000 sleepers, handing
 * every thread over three times a second was most of pytop's own CPU. */
int pytop_engine_drain(pytop_engine *e, pytop_drain *out, int whole);
/* Ticks taken since the previous drain, without draining (any thread; a counter read under the
 * engine's lock). */
int pytop_engine_pending_ticks(pytop_engine *e, uint32_t *ticks);
/* Sum `count` stacks' time per function and per (function, line) (PYTOP_AGGREGATE_TABLES)
 * and per node of their paths (PYTOP_AGGREGATE_NODES), into arrays the engine owns until the
 * next call. Tallies of stacks no longer in the tree are skipped and counted. Any thread. */
int pytop_engine_aggregate(pytop_engine *e, const pytop_leaf_tally *tallies, uint32_t count, uint32_t flags,
                           pytop_aggregate *out);
/* Free an engine whose thread has ended (or never started). PYTOP_ERR_STATE otherwise. */
int pytop_engine_free(pytop_engine *e);

#endif
