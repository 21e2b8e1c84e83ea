/*
 * The engine's insides, shared by engine.c (thread, schedule, lifecycle), account.c (what each
 * sample's time goes to) and drain.c (handing out what is new). See pytop.h for what it does.
 *
 * Locking: one mutex guards everything a drain reads (processes' figures, threads, stacks,
 * weights, new codes, text). The sampling thread takes it after each process's sample, to
 * account for it, and never while it reads the target; it alone changes the process list and
 * uses the unwinders. Other threads only add unwinders (to `adding`) and drain.
 */
#ifndef PYTOP_ENGINE_H
#define PYTOP_ENGINE_H

#include "aggregate.h"
#include "internal.h"
#include "weights.h"
#include "schedule.h"

#define PENDING_RUNS 32        /* stacks a thread was seen running with, awaiting its CPU count */
#define THREAD_RUNS 16         /* stacks a thread was lately seen running with, for CPU no sample saw */
_Static_assert(THREAD_RUNS <= PENDING_RUNS, "an ended thread keeps its runs as its pending ones");
#define MAX_ENDED 4096         /* threads that ended in one period, kept for the remainder */
#define FORGOTTEN_KEYS 64      /* ended threads dropped from the table whose key a return takes up */

/* Time in which a thread was seen running with one stack (holding the GIL, or on a CPU): each
 * interval between two samples counts half for the stack at either end (see attribute.c). */
typedef struct pending_run {
    uint32_t stack;
    bool firm;                 /* a run, not a glimpse: remembered for CPU no sample saw */
    uint64_t weight_ns;
} pending_run;

typedef struct engine_thread {
    uint32_t key;              /* the engine's key for it, never reused */
    uint32_t process;
    uint32_t ident;            /* the unwinder's serial, or the TID of a native task */
    bool native;               /* a task of the process that is not a Python thread */
    bool alive, ended, gil;
    /* Ended in its process's open period: kept (past the drain that hands its end over) until
     * that period closes, whose remainder may still give it CPU (account.c, count_ended). */
    bool closing;
    bool running;              /* its latest sample saw it run: the GIL, or on a CPU */
    bool computing_sighted;    /* ... on a CPU in the call it had waited for the GIL in (account.c) */
    uint32_t asleep_stack;     /* where a sample last found it asleep holding the GIL (0: never) */
    uint32_t napped_stack;     /* where one last found it asleep without it, not waiting for it (0: never) */
    uint32_t napped_seen, napped_epoch; /* ... its process's sample number then, the tree's epoch */
    uint32_t asleep_seen, asleep_epoch; /* ... its process's sample number then, the tree's epoch */
    bool name_sent;
    uint64_t thread_id;
    int32_t native_id;
    char *name;
    uint32_t name_tries;
    uint64_t name_retry_at;    /* monotonic ns */
    uint32_t stack;            /* its stack in its latest sample (the stack tree's leaf) */
    uint32_t read_stack;       /* ... when its CPU count was last read */
    bool gil_wait, read_gil_wait; /* blocked taking the GIL at its latest count read; at the one before */
    bool read_napped;             /* found napping (attribute.c) at its count read before the latest */
    uint32_t gil_waits_here;   /* ... at the samples in a row, up to the latest, that read it so at its stack */
    stack_path path;           /* ... as a path, for interning the next one from where they differ */
    uint32_t seen;             /* its process's sample number when last seen */
    /* Time for `stack` not yet added to the weight map. */
    uint64_t acc_wall, acc_gil;
    uint32_t acc_samples, acc_running;
    /* Since the kernel's count last moved: the stacks it was seen running with, by time. */
    pending_run pending[PENDING_RUNS];
    uint32_t pending_count;
    uint64_t pending_total;
    uint64_t pending_wait;     /* run-queue wait the kernel told of since, not yet taken off */
    uint32_t pending_firm;     /* ... of them not glimpses (attribute_running) */
    uint32_t checked_at;       /* its process's sample number when its count was last read */
    uint64_t period_cpu;       /* CPU attributed to it in the current period */
    uint64_t unseen_ns;        /* CPU used unseen, waiting for a sample to see it run (attribute.c) */
    uint64_t unseen_since;     /* monotonic ns: since when it has had some */
    uint32_t unseen_anchor;    /* the frames it was used in (0: anywhere in the thread) */
    bool unseen_napped_in;     /* ... found not running in the anchor's own frame at both ends */
    /* The stacks it was lately seen running with, by time (a ring), in the tree's epoch. */
    pending_run runs[THREAD_RUNS];
    uint32_t runs_count, runs_next, runs_epoch;
    /* Since the previous drain. */
    uint64_t d_cpu, d_wall, d_wait, d_unplaced;
    uint32_t d_samples, d_gil, d_errors;
    int32_t last_error;
    bool dirty;
    char os_state;
    /* As the latest drain that handed it over had them: a change is news (drain.c). */
    uint32_t sent_stack;
    bool sent_gil;
    char sent_os_state;
} engine_thread;

/* A thread that ended in the current period: where CPU of threads that ended unseen may go. */
typedef struct ended_thread {
    uint32_t key, stack;
    uint64_t cpu;              /* attributed in the period */
    pending_run pending[PENDING_RUNS];
    uint32_t pending_count;
} ended_thread;

/* A thread ended, handed over and dropped from the table: its serial and its key. */
typedef struct forgotten_key {
    uint32_t ident, key, sample_no;
} forgotten_key;

typedef struct engine_process {
    pytop_unwinder *u;         /* NULL once its process ended: freed by the sampling thread */
    int pid;
    bool active;
    bool retired;              /* pytop_engine_retire(): ends like an exit at its next tick */
    bool replaced;             /* it exec'd (image_id.c): not sampled until retired */
    bool whole_life;           /* its CPU before its first sample counts (pytop_engine_add) */
    int32_t status;
    char error[ERROR_TEXT_BYTES];
    bool error_new;
    uint32_t sample_no;        /* good samples so far */
    uint64_t last_ns;          /* when its previous good sample began */
    uint64_t cpu_clock;        /* the process CPU clock at the latest period close */
    bool cpu_known;
    uint64_t first_read_ns;    /* the process's CPU while its first read went on (see account_period) */
    uint64_t first_counts_ns;  /* the threads' counts as the first read found them */
    uint64_t first_before_ns;  /* of first_read_ns, what the counts show was used before they were read */
    int64_t carry_ns;          /* remainder too small to place, carried to the next period */
    uint64_t period_attributed;
    uint64_t deferred_ns;      /* CPU read at the latest period close and handed back (kthreads_defer) */
    other_kthreads others;
    ended_thread *ended;
    uint32_t ended_count, ended_cap;
    uint32_t unseen_thread;    /* key of its "threads that ended unseen" pseudo-thread, 0 if none */
    /* Threads dropped lately (a ring): the unwinder keeps a missed thread's serial for
     * TRACKING_RECENT_SAMPLES samples, and a thread that comes back keeps its row. */
    forgotten_key forgotten[FORGOTTEN_KEYS];
    uint32_t forgotten_next;
    /* Since the previous drain. */
    uint32_t d_samples, d_failed, d_gil, d_gc, d_gc_known, d_torn, threads_now;
    uint32_t starting_now;     /* thread states in the latest sample not yet taken up by their thread */
    uint64_t d_cpu, d_unseen;
} engine_process;

typedef struct growing_text {
    char *bytes;
    uint32_t size, cap;
} growing_text;

/* Add NUL-terminated `s` (cut at `max` bytes); returns its offset, or UINT32_MAX. */

struct pytop_engine {
    pytop_engine_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, finished, stop;
    bool waiting;              /* with no live process, wait for one (pytop_engine_wait_for_processes) */
    /* Unwinders handed over and not yet taken up by the sampling thread. */
    pytop_unwinder **adding;
    uint32_t adding_count, adding_cap;
    uint32_t next_process;
    uint32_t threads_seen;     /* thread_count as the sampling thread last saw it, for its own use */
    engine_process *processes;
    uint32_t process_count, process_cap;
    engine_thread *threads;
    uint32_t thread_count, thread_cap;
    uint32_t *thread_slots;    /* (process, native, ident) -> index + 1 */
    uint32_t thread_slot_mask;
    uint32_t next_key;
    function_table functions;
    stack_table stacks;
    uint32_t drained_clock;    /* the stack tree's clock at the previous drain */
    uint32_t fresh_counted;    /* the tree's fresh nodes whose code objects were counted */
    aggregator *drain_sums;    /* the drain's per-function rows */
    aggregator *asked_sums;    /* pytop_engine_aggregate's */
    pytop_drain_function *out_functions;
    pytop_drain_node *out_nodes;
    uint32_t *out_evicted, *out_retired;
    uint32_t out_function_cap, out_node_cap, out_evicted_cap, out_retired_cap;
    pytop_leaf_tally *drain_tallies;
    uint32_t drain_tally_cap;
    weight_map weights;
    /* Schedule, since the previous drain. */
    uint32_t ticks, late, skipped;
    bool start_up_since_check; /* a process was added since the budget's last check */
    uint64_t slot_ns;          /* the schedule's time the ticks and skipped slots cover */
    double rate_now;           /* what the schedule runs at (the budget may hold it below the rate asked) */
    uint64_t longest_delay_ns; /* a tick that began that long after it was due: a stall of the
                                  sampling thread, in which what the target did is a guess */
    double first_at, last_at, lag;
    bool realtime;
    double cpu_seconds;
    double start_up_cpu;       /* pytop's process CPU at the end of its first process's first read */
    char end[ERROR_TEXT_BYTES];
    /* The latest drain's output, owned until the next one. */
    pytop_drain_process *out_processes;
    pytop_drain_thread *out_threads;
    pytop_drain_weight *out_weights, *out_standing;
    growing_text out_text;
    uint32_t out_process_cap, out_thread_cap, out_weight_cap, out_standing_cap;
};

/* ---- attribute.c: under the lock, on the sampling thread -------------------------------- */

/* `ns` of CPU to (stack, thread key). */
void attribute_add(pytop_engine *e, uint32_t key, uint32_t stack, uint64_t ns);
/* A sample found thread `t` running with `stack`, standing for `ns` of its time. A `glimpse`:
 * holding the GIL in the very call (the same line) the other end of the interval found it
 * asleep in, waking there or about to sleep: it takes its interval's CPU when that is known
 * exactly, never CPU used unseen before (see attribute.c). */
void attribute_running(engine_thread *t, uint32_t stack, uint64_t ns, bool glimpse);
/* A sample found thread `t` holding the GIL with `stack`, the other end of the interval found
 * it not running: one sighting among its runs, standing for `ns`, not the owner of the
 * interval's CPU (see attribute.c). */
void attribute_lone_sighting(pytop_engine *e, engine_thread *t, uint32_t stack, uint64_t ns);
/* Split `ns` of thread `key` over `runs` by their weights (`total` their sum). */
void attribute_split(pytop_engine *e, uint32_t key, const pending_run *runs, uint32_t count, uint64_t total,
                     uint64_t ns);
/* Thread `t`'s count moved by `ns` at `now`: to its stacks (see attribute.c); `settle`: the
 * run's last sample, nothing is held; `exact`: the count was read at the previous sample too,
 * so `ns` is what it used since then. */
void attribute_cpu(pytop_engine *e, engine_thread *t, uint64_t ns, uint64_t now, bool settle, bool exact);
/* An ending thread's held CPU: to its own runs, else unplaced. */
void attribute_held(pytop_engine *e, engine_thread *t);
/* `ns` of thread `key`, which cannot be placed: unplaced, at the root of `stack`'s tree. */
void attribute_unplaced(pytop_engine *e, uint32_t key, uint32_t stack, uint64_t ns);
void attribute_pending_clear(engine_thread *t);

/* ---- account.c: under the lock, on the sampling thread ---------------------------------- */

/* Account for one good sample of process `p`, begun at `now` (ns); `interval_ns` is the
 * schedule's (what a first sample stands for), `cap_ns` bounds the time one sample may stand for. */
void account_sample(pytop_engine *e, uint32_t p, const pytop_sample *s, uint64_t now, uint64_t interval_ns,
                    uint64_t cap_ns);
/* Threads of `p` not in its latest sample have ended. */
void account_ends(pytop_engine *e, uint32_t p);
/* Names for threads that have none yet (a few reads each, retried while they are new), from
 * sample `s` of process `p`. */
void account_names(pytop_engine *e, uint32_t p, const pytop_sample *s, uint64_t now);
/* Close a period after a sample that read every thread's figures: the process's CPU time
 * against what was attributed, non-Python threads, and where the rest goes. */
void account_period(pytop_engine *e, uint32_t p);
/* Code objects the unwinder of `p` read since the last call: their functions, for the tree. */
void account_codes(pytop_engine *e, uint32_t p);
/* Add a thread's not-yet-added time to the weight map. */
void account_flush(pytop_engine *e, engine_thread *t);
/* ---- thread_table.c: the engine's threads by (process, native, ident) ------------------- */
/* The thread, made if new (*created); pointers into the table are good until the next call
 * that may add a thread. NULL: no memory. */
engine_thread *thread_table_get(pytop_engine *e, uint32_t p, bool native, uint32_t ident, bool *created);
/* Ended threads whose end a drain has handed over leave the table. */
void thread_table_forget_ended(pytop_engine *e);
/* The thread with these ids, or NULL. */
engine_thread *thread_table_find(pytop_engine *e, uint32_t p, bool native, uint32_t ident);
/* The Python thread with serial `ident` if it was dropped from the table within
 * TRACKING_RECENT_SAMPLES samples, else NULL (its key zeroed once it is taken up). */
forgotten_key *thread_table_forgotten(pytop_engine *e, uint32_t p, uint32_t ident);
/* ---- upkeep.c -------------------------------------------------------------------------- */
/* The stack tree's upkeep, after a tick's samples: nodes made name their code objects; past its
 * bound, old nodes are evicted; with `full`, code objects that are gone and that no node names
 * leave the code cache (and their functions, if they were the last). On the sampling thread: the
 * unwinders' code caches are its alone. */
void upkeep_tree(pytop_engine *e, bool full);

#endif
