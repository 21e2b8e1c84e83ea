/*
 * Each of the target's threads as the kernel reports it (kthreads.c): what a sample asks of
 * /proc/PID/task/TID, and the reads it skips. Included by internal.h; self-contained.
 */
#ifndef PYTOP_KTHREADS_H
#define PYTOP_KTHREADS_H

#include <stdbool.h>
#include <stdint.h>
/* A kernel thread: a thread as /proc/PID/task/TID shows it (the kernel calls it a task; in
 * pytop a task is asyncio's, asyncio.c's). */

/* What the kernel says of one thread in one sample. */
typedef struct kthread_report {
    char state;             /* as last read ('?' unknown) */
    uint64_t cpu_ns, cpu_delta_ns, wait_delta_ns;
    bool checked;           /* figures read this sample */
    bool first;             /* read for the first time (deltas 0) */
    bool running;           /* its letter says it runs (read this sample, or R and counts that
                               moved lately: see kthreads.c) */
    bool on_cpu;            /* its letter, read this sample, says it is on a CPU now */
    bool asleep;            /* its letter, read this sample, says it sleeps (S), waits in the kernel (D) or is stopped (T) */
    bool ran;               /* its counts moved since the previous check: it has run */
    uint64_t futex;         /* when its counts last moved, the word it then waited on in futex(2),
                               blocked; 0: not blocked there, or not known */
} kthread_report;

/* A task's counts as last read: what a read changes, and kthreads_defer() gives back. */
typedef struct task_counts {
    uint64_t cpu_ns, wait_ns, switches; /* schedstat: on-CPU time, run-queue wait, times run */
    uint64_t changed_at;    /* monotonic ns when cpu_ns or switches last moved */
    uint64_t read_at;       /* monotonic ns of the previous read of its figures */
    bool known;             /* its figures were read at least once */
} task_counts;

typedef struct kthread {
    int tid;
    int stat_fd;
    int schedstat_fd;
    int syscall_fd;         /* .../syscall, opened when first wanted (-1: not yet, -2: cannot be) */
    uint64_t futex;         /* see kthread_report */
    char state;
    task_counts now;
    task_counts undo;       /* as they were before this sample's read, for kthreads_defer() */
    bool read_idle;
    uint64_t state_at;      /* monotonic ns when `state` was read */
    bool on_cpu;            /* the last check found it running, not waiting for a CPU */
    bool watched;           /* its last letter read was R, or its counts had moved: letter and counts
                               read every sample */
    bool fresh;             /* read ahead for this sample (blocking mode): `ahead` is its report */
    kthread_report ahead;
    kthread_report last;       /* this sample's report, if it was asked already (reported_in) */
    uint32_t reported_in;
    uint32_t seen_in_sample;
    uint32_t missed_walks;  /* full walks in a row that did not see it */
} kthread;

enum task_how {
    KTHREAD_WHEN_DUE = 0,      /* figures when due (idle tasks are read less often), state if needed */
    KTHREAD_NOW = 1,           /* figures now, state if needed (the GIL's holder) */
    KTHREAD_ALL = 2,           /* figures and state now */
    KTHREAD_AFTER_GIL = 3      /* figures now, state if they moved (the GIL's holder until lately) */
};

#define GONE_MEMO 8    /* tasks found gone, remembered for GONE_SAMPLES samples */
#define GONE_SAMPLES 4
typedef struct kthreads {
    int pid;
    int mode;               /* PYTOP_OPT_OS_STATE */
    uint32_t syscalls;
    uint32_t idle_check;    /* the counts of a thread without the GIL are read every this many samples, */
    uint32_t threads;       /* ... stretched past 50 threads in proportion to their number */
    bool no_schedstat;      /* the kernel keeps no schedstat: CPU times come from stat (ticks) */
    bool check_all;         /* this sample reads every task's figures (the engine's full checks) */
    bool partial;           /* this sample looked at some threads only (a sparse walk): it does not
                               tell which tasks are gone */
    uint64_t start_clock;   /* with check_all: the process CPU clock before any count was read, */
    bool start_clock_known; /* ... which the period's close compares with them */
    bool ran_unseen;        /* a thread took a GIL between samples that no sample saw: the next
                               round of counts is read (a stack may have moved) */
    kthread *items;         /* sorted by tid */
    uint32_t count, cap;
    uint32_t finger;        /* the slot of the last task looked up (kthread_slot) */
    int gone_tid[GONE_MEMO]; /* tasks found gone (their files absent) at sample gone_at */
    uint32_t gone_at[GONE_MEMO], gone_next;
    uint32_t sample_no;
    uint64_t now;           /* this sample's time, monotonic ns */
    /* Rounds of counts are skipped while the process's CPU time is nearly all explained by
     * the counts read (kthreads.c): */
    bool round_on;          /* this round of counts is read */
    bool round_cpu_known;   /* round_cpu holds the process CPU time at the last round's start */
    uint64_t round_cpu;
    uint64_t explained_ns;  /* CPU time the counts read since then account for */
    int64_t unexplained_ns; /* process CPU time no count accounted for, since the last round read */
    uint64_t idle_found_ns; /* CPU time found by reads of threads without the GIL, this round */
    uint64_t last_round_at; /* monotonic ns when the last round that was read began */
    uint64_t deferred_ns;   /* CPU time this sample read and handed back (kthreads_defer) */
    bool last;              /* the last sample of a run: nothing is handed back */
} kthreads;

void kthreads_init(kthreads *o, int pid);
void kthreads_free(kthreads *o);
void kthreads_begin_sample(kthreads *o, uint64_t now, uint32_t threads);
/* The kernel's view of `tid` in this sample. */
void kthreads_report(kthreads *o, int tid, int how, kthread_report *out);
/* Is a thread without the GIL due for a read of its counts this sample? */
bool kthreads_due(const kthreads *o, int tid);
/* Was `tid` last found R (running or waiting for a CPU)? Such a thread is read every sample. */
bool kthreads_watched(kthreads *o, int tid);
/* Whether the task `tid` has exited (the kernel has no such task): the engine's last sample
 * ends the threads missing from it by this, having no later samples to wait for. */
bool kthreads_task_gone(kthreads *o, int tid);
/* Hand back what this sample read of `tid`'s figures, as if they had not been read: the next
 * read reports that CPU time again (its stack could not be read again this sample). Returns
 * that time. */
uint64_t kthreads_defer(kthreads *o, int tid);
/* Samples in a round of counts: each thread without the GIL is due once in it. */
uint32_t kthreads_round_length(const kthreads *o);
/* Read `tid`'s figures and state now, to be answered by kthreads_report() during this sample: in
 * blocking mode the threads are stopped (state 't') by the time their stacks are read. */
void kthreads_read_ahead(kthreads *o, int tid);
/* Close files of tasks that a number of samples in a row did not see, counting the samples
 * that walked every thread (not a sample that failed midway, nor a sparse one: they saw only
 * some, and the others are still there). */
void kthreads_end_sample(kthreads *o, bool complete);
/* The whole process's CPU time, ended threads included (ns). */
int kthreads_process_cpu(kthreads *o, uint64_t *cpu_ns);

/* A task of the process that is not a Python thread, as seen by kthreads_scan_others(). */
typedef struct other_kthread {
    int tid;
    int fd;
    uint64_t cpu_ns;
    uint64_t unlisted_ns;  /* of cpu_ns, what it used before it was listed (given to no row) */
    char comm[16];
    uint32_t seen;
    bool listed;           /* seen in a scan that did not hold new tasks back */
} other_kthread;

typedef struct other_kthreads {
    other_kthread *items;
    uint32_t count, cap, scan;
} other_kthreads;

/* List the process's tasks whose TIDs are not in `python_tids` (sorted), with their CPU time.
 * Calls `visit` once per such task with its CPU time since the previous scan, `first` until it
 * has been seen in a scan without `hold_new` (then its time so far counts as unlisted). */
int kthreads_scan_others(kthreads *o, other_kthreads *others, const int *python_tids, uint32_t count, bool hold_new,
                      void (*visit)(void *ctx, const other_kthread *t, uint64_t delta_ns, bool first),
                      void *ctx);
void kthreads_free_others(other_kthreads *others);

#endif
