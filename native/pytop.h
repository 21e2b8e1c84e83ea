/*
 * pytop's native unwinder: its one public header.
 *
 * The unwinder reads a running CPython process's memory with process_vm_readv only (it never
 * writes to the target and never stops it) and returns, per call, every thread of every
 * interpreter with its frames as compact integer pairs (code id, line). Names are resolved once
 * per code object with pytop_describe_code().
 *
 * cffi reads this file as its cdef, so it keeps to what cdef understands: plain typedefs,
 * structs, enums and prototypes, with integer #defines only. Struct offsets of the target's
 * CPython come in as data (pytop_layout), filled by the Python side per version.
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
    PYTOP_ERR_LIMIT = 5,      /* a safety bound was reached (frames, threads, sizes) */
    PYTOP_ERR_NOMEM = 6,      /* local allocation failed */
    PYTOP_ERR_ARGS = 7        /* invalid argument */
};

/* How frames are linked: PyFrameObject chain (3.8-3.10) or _PyInterpreterFrame (3.11+). */
enum pytop_frame_model { PYTOP_FRAMES_OBJECTS = 1, PYTOP_FRAMES_INTERPRETER = 2 };

/* Line table formats: co_lnotab (3.8-3.9), co_linetable (3.10), location table (3.11+). */
enum pytop_line_table { PYTOP_LINES_LNOTAB = 1, PYTOP_LINES_310 = 2, PYTOP_LINES_LOCATIONS = 3 };

/* Where things are inside the target's CPython structures. -1 means "this version has none".
 * Field names match app/pytop/layouts/generated.py (see tools/gen_layouts.py). */
typedef struct pytop_layout {
    uint32_t version_hex;
    int32_t frame_model;
    int32_t line_table;
    int32_t lasti_scale;   /* bytes per unit of f_lasti: 1 (3.8-3.9) or 2 (3.10) */
    int32_t pthread_tid;   /* offset of the kernel TID inside glibc's struct pthread, or -1 */

    int32_t rt_interpreters_head, rt_main_thread, rt_gil_locked, rt_gil_holder, rt_gc_collecting;
    int32_t is_next, is_id, is_threads_head, is_gil_locked, is_gil_holder, is_gc_collecting;
    int32_t is_code_generation;
    int32_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id, ts_frame, ts_cframe;
    int32_t cf_current_frame, ts_datastack_chunk, ts_datastack_top;
    int32_t fr_previous, fr_code, fr_lasti, fr_instr_ptr, fr_owner, fr_header_size;
    int32_t fr_owner_native, fr_executable_tag_bits, fr_owner_max;
    int32_t chunk_previous, chunk_size, chunk_data;
    int32_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_code;
    int32_t co_code_adaptive, co_header_size;
    int32_t ob_type, var_ob_size, tp_name, bytes_sval;
    int32_t str_length, str_state, str_ascii_size, str_compact_size, str_legacy_data;
    int32_t str_kind_shift, str_kind_width, str_compact_shift, str_compact_width;
    int32_t str_ascii_shift, str_ascii_width;
} pytop_layout;

/* Per-thread flags. */
enum pytop_thread_flags {
    PYTOP_THREAD_GIL = 1,       /* holds the GIL */
    PYTOP_THREAD_ACTIVE = 2,    /* the OS reports it running (state R) */
    PYTOP_THREAD_OS_KNOWN = 4,  /* its OS state could be read */
    PYTOP_THREAD_TRUNCATED = 8, /* its stack was cut at the depth limit */
    PYTOP_THREAD_UNCHANGED = 16 /* it has not run since the last sample: its stack was reused */
};

/* One frame: which code object (an id, stable while the object lives) and which line. */
typedef struct pytop_frame {
    uint32_t code_id;
    int32_t line;
} pytop_frame;

typedef struct pytop_thread {
    uint64_t thread_id;    /* Python's thread id (threading.get_ident()) */
    uint64_t tstate;       /* address of its PyThreadState in the target */
    int64_t interp_id;
    int32_t native_id;     /* kernel TID, 0 when unknown */
    uint32_t flags;        /* pytop_thread_flags */
    int32_t status;        /* PYTOP_OK, or why its stack could not be read in full */
    uint32_t first_frame;  /* index into pytop_sample.frames; frames are innermost first */
    uint32_t frame_count;
    uint32_t serial;       /* a thread keeps its serial from sample to sample; one that was not in
                              the previous sample is a new thread, even if its ids were used before */
    char os_state;         /* state letter from /proc (R, S, D, ...), or '?' */
} pytop_thread;

/* Which threads' stacks a sample selects (PYTOP_OPT_SELECT). */
enum pytop_select {
    PYTOP_SELECT_ALL = 0,   /* every thread */
    PYTOP_SELECT_BUSY = 1,  /* running, or holding the GIL (default) */
    PYTOP_SELECT_GIL = 2    /* holding the GIL */
};

/* One call's result. The arrays belong to the unwinder and stay valid until the next call. */
typedef struct pytop_sample {
    const pytop_thread *threads;
    const pytop_frame *frames;
    const uint32_t *selected;  /* indices into threads: the readable ones PYTOP_OPT_SELECT keeps */
    uint32_t thread_count;
    uint32_t frame_count;
    uint32_t selected_count;
    uint32_t active_count;     /* threads the OS reports running */
    uint32_t torn_count;       /* threads whose stack could not be read in full */
    int32_t gil_held;          /* 1 if some thread held the GIL */
    int32_t gc_collecting;     /* 1 if the garbage collector was running, 0 if not, -1 unknown */
    uint32_t syscalls;         /* syscalls this call made: memory and /proc reads (for benchmarks) */
} pytop_sample;

/* One thread's figures since pytop_reset_thread_stats(), kept by the unwinder so that a
 * sampler at 1 kHz need not look at every thread of every sample. */
typedef struct pytop_thread_stat {
    uint64_t thread_id;
    uint32_t serial;
    int32_t native_id;
    uint32_t samples;    /* samples it was in */
    uint32_t active;     /* ... running */
    uint32_t gil;        /* ... holding the GIL */
    uint32_t top_code;   /* code id of the innermost frame of its latest sample, 0 if none */
    uint32_t alive;      /* 1 if it was in the latest sample */
} pytop_thread_stat;

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
    PYTOP_OPT_MAX_DEPTH = 1,     /* frames kept per thread (default 65536) */
    PYTOP_OPT_OS_STATE = 2,      /* 0: skip /proc reads, 1: schedstat shortcut (default), 2: stat always */
    PYTOP_OPT_CODE_RECHECK_MS = 3, /* before 3.14, how old a code object's check may get (default 250) */
    PYTOP_OPT_REUSE_STACKS = 4,    /* 1 (default): keep the stacks of threads that have not run */
    PYTOP_OPT_BLOCKING = 5,        /* 1: stop the target's threads (ptrace) while sampling; 0: release them.
                                      Set, sample and release from one thread: ptrace belongs to it */
    PYTOP_OPT_SELECT = 6           /* a pytop_select */
};

/* Attach to `pid` whose _PyRuntime lives at `runtime_address`. Returns NULL and sets *status
 * on failure. Nothing is read from the target until the first pytop_collect(). */
pytop_unwinder *pytop_open(int pid, const pytop_layout *layout, uint64_t runtime_address,
                           int *status);
int pytop_set_option(pytop_unwinder *u, int option, int64_t value);
/* Take one sample of every thread. On PYTOP_OK `out` describes it; on failure
 * pytop_last_error() says what went wrong. */
int pytop_collect(pytop_unwinder *u, pytop_sample *out);
/* The same, at a given time: sleep until `due` (seconds of CLOCK_MONOTONIC, as Python's
 * time.monotonic()), then sample; *started says when the sample began. A sampler that calls
 * this without its interpreter's GIL takes each sample on time however busy its other threads. */
int pytop_collect_at(pytop_unwinder *u, double due, pytop_sample *out, double *started);
/* `count` samples back to back, for benchmarks of the unwinder alone: adds the good samples,
 * the threads they held and the syscalls made to the counters. Stops early only when the target
 * is gone or unreadable, and returns that status. */
int pytop_bench_collect(pytop_unwinder *u, uint32_t count, uint64_t *good, uint64_t *threads,
                        uint64_t *syscalls);
/* Copy out the per-thread figures (at most `capacity`; *count says how many there are). */
int pytop_thread_stats(pytop_unwinder *u, pytop_thread_stat *out, uint32_t capacity, uint32_t *count);
/* Start the per-thread figures again (the threads keep their serials). */
void pytop_reset_thread_stats(pytop_unwinder *u);
int pytop_describe_code(pytop_unwinder *u, uint32_t code_id, pytop_code_info *out);
const char *pytop_last_error(pytop_unwinder *u);
void pytop_close(pytop_unwinder *u);

/* One read of target memory, for attach-time work done in Python. */
int pytop_read_memory(int pid, uint64_t address, void *buffer, size_t length);

/* Line-table decoding, exposed for tests with random and truncated input. Returns the line for
 * byte offset `offset` or -1; never reads outside table[0..length). */
int32_t pytop_decode_line(int format, const uint8_t *table, size_t length, int32_t firstlineno,
                          int32_t offset);
/* String decoding, exposed for tests: writes UTF-8 (NUL-terminated, at most `capacity` bytes
 * including the NUL) for `count` characters of `kind` (1, 2 or 4 bytes each). Returns the number
 * of bytes written before the NUL, or -1 on invalid input. */
int64_t pytop_decode_text(int kind, const uint8_t *data, size_t data_length, size_t count,
                          char *out, size_t capacity);

#endif
