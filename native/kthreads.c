/*
 * Each of the target's threads as the kernel reports it: CPU time, run-queue wait, how often it
 * was put on a CPU (/proc/PID/task/TID/schedstat), and its state letter (.../stat: R running or
 * runnable, S sleeping, D uninterruptible, ...). The kernel's counts are the ground truth for
 * time: pytop attributes them to stacks rather than counting samples.
 *
 * Costs (measured here: schedstat ~1 us a read, stat ~4.5 us, the process CPU clock ~0.5 us)
 * decide what is read when. Files stay open and are re-read with pread.
 *   - A thread's Python stack only changes while it holds the GIL. The GIL holder's counts are
 *     read every sample (the caller asks, KTHREAD_NOW); every other thread's every `idle_check`
 *     samples (about 10 ms; longer past 50 threads, so that a thousand idle threads do not cost
 *     a thousand reads a round), in turn by TID so the reads spread over the samples. Its CPU
 *     time is a counter: nothing is lost, it is attributed when read, to the stack it has then
 *     (the call where it let the GIL go, which is where that CPU was spent). The thread that
 *     held the GIL in the previous sample is read at once too: it ran Python since then; so is
 *     the GIL's last holder when no thread holds it now.
 *   - A round of such reads is skipped when it would find little: at a round's start the
 *     process CPU clock (one cheap call, every thread's time) is compared with what the counts
 *     read since the last round account for. While that is under UNEXPLAINED_SHARE of the
 *     time since the last round that was read, no idle thread can have run much; the engine's
 *     periodic read of every thread (each ~0.2 s) still catches what little they did. Unless a
 *     thread took the GIL unseen (the GIL's count of hand-overs says so: threads.c): it ran
 *     Python, however briefly, and may be on another line, so the round is read. A round
 *     that found its threads used more than FOUND_SHARE is followed by another: a thread that
 *     keeps running without the GIL (hashing, compressing) is explained by each round that
 *     reads it, and is read every round, not every other one. A round costs a read per
 *     thread: with a hundred threads that wait or sleep, skipping it is most of a sample's
 *     syscalls.
 *   - A thread whose counts have not moved since its previous read has not run: its stack is
 *     unchanged. Counts move only at the scheduler's ticks and at switches, so a thread that
 *     runs on without a switch can show no move: the caller treats the GIL holder as running.
 *   - The state letter says whether a thread without the GIL is on a CPU at this sample (C code
 *     that let the GIL go: compressing, hashing), which only the GIL tells of a thread that
 *     runs Python; and whether the GIL's holder sleeps holding it (C code that blocks without
 *     letting it go), read with the holder's counts every sample (one more read, ~4.5 us). It
 *     is read when asked (KTHREAD_ALL: every thread in blocking mode); when a
 *     thread without the GIL had its counts move and was R, or busy (a share of the time since
 *     its last read on a CPU); and at every sample while the last letter read was R or the
 *     thread was busy (a thread "watched": it may be waiting for the GIL between two calls that
 *     let it go). So a thread running C is seen running at each sample, and a sleeper costs
 *     nothing. Otherwise it is read every STATE_REFRESH_NS per thread (longer past
 *     THREADS_PER_ROUND threads, in proportion), for display and --dump. Running, or waiting for a CPU? Both read "R": a thread found R whose
 *     counts have not moved since a read that found it asleep or waiting has not been on a
 *     CPU yet (it waits in the run queue, its stack still at the call that slept).
 * When the kernel keeps no schedstat, the times come from stat (utime + stime, in ticks).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define STATE_REFRESH_NS (250u * 1000000u) /* a thread's letter is read again this often */
#define RUNNING_NS (20u * 1000000u)        /* counts that moved this recently, with an R: running */
#define KTHREAD_GRACE_WALKS 16 /* files of a task missing from full walks stay open this long */
#define UNEXPLAINED_SHARE 0.02 /* rounds are read while more than this share of a core is unexplained, */
#define FOUND_SHARE 0.1        /* ... or the last round found its threads used more than this share */
#define THREADS_PER_ROUND 50   /* past this many threads, a round of count reads takes longer */
#define BUSY_PARTS 10          /* a thread that used 1/BUSY_PARTS of the time since its last read is busy */

void kthreads_init(kthreads *o, int pid) {
    memset(o, 0, sizeof *o);
    o->pid = pid;
    o->mode = 1;
    o->idle_check = 1;
    o->round_on = true;
}

static void close_task(kthread *t) {
    if (t->stat_fd >= 0) close(t->stat_fd);
    if (t->schedstat_fd >= 0) close(t->schedstat_fd);
    if (t->syscall_fd >= 0) close(t->syscall_fd);
}

void kthreads_free(kthreads *o) {
    for (uint32_t i = 0; i < o->count; i++) close_task(&o->items[i]);
    free(o->items);
    memset(o, 0, sizeof *o);
}

/* Samples in a round: every thread without the GIL is due once in it. */
uint32_t kthreads_round_length(const kthreads *o) {
    uint32_t every = o->idle_check;
    if (o->threads > THREADS_PER_ROUND) every = (uint32_t)((uint64_t)every * o->threads / THREADS_PER_ROUND);
    return every;
}

/* At a round's start: read it if the process used CPU time that the counts read since the last
 * round do not account for (see the top of the file). */
static void decide_round(kthreads *o) {
    uint64_t cpu = 0;
    if (o->mode != 1 || kthreads_process_cpu(o, &cpu) != PYTOP_OK) {
        o->round_on = true;
        o->round_cpu_known = false;
        return;
    }
    /* The process clock lags a running thread's own count by up to a scheduler tick: what the
     * counts explain beyond it is not carried over, lest it hide CPU time used later. */
    if (o->round_cpu_known) o->unexplained_ns += (int64_t)(cpu - o->round_cpu) - (int64_t)o->explained_ns;
    if (o->unexplained_ns < 0) o->unexplained_ns = 0;
    bool first = !o->round_cpu_known;
    o->round_cpu = cpu;
    o->round_cpu_known = true;
    /* What a round found its threads used counts too: a thread that keeps running without the
     * GIL is explained by every round that reads it, and must be read by the next one. */
    double since = (double)(o->now - o->last_round_at);
    o->round_on = first || o->ran_unseen || (double)o->unexplained_ns > UNEXPLAINED_SHARE * since ||
                  (double)o->idle_found_ns > FOUND_SHARE * since;
    o->ran_unseen = false;
    o->explained_ns = 0;
    o->idle_found_ns = 0;
    if (o->round_on) {
        o->unexplained_ns = 0;
        o->last_round_at = o->now;
    }
}

void kthreads_begin_sample(kthreads *o, uint64_t now, uint32_t threads) {
    o->now = now;
    o->syscalls = 0;
    o->deferred_ns = 0;
    o->threads = threads;
    uint32_t every = kthreads_round_length(o);
    if (every > 1 && o->sample_no % every == 0) decide_round(o);
}

static int open_task_file(int pid, int tid, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/%s", pid, tid, name);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Where `tid` is, or would go, in the sorted tasks. A sample asks for its threads in the list's
 * order, which is mostly the order of their TIDs (newest first): the slots beside the last one
 * found are tried before a search, which on a pool of 2,000 threads missed the cache at each of
 * its steps for each thread, every sample (12% of the sampling thread's time). */
static uint32_t kthread_slot(kthreads *o, int tid) {
    for (uint32_t at = o->finger > 0 ? o->finger - 1 : 0; at <= o->finger + 1 && at < o->count; at++)
        if (o->items[at].tid == tid) {
            o->finger = at;
            return at;
        }
    uint32_t lo = 0, hi = o->count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (o->items[mid].tid < tid) lo = mid + 1;
        else hi = mid;
    }
    if (lo < o->count) o->finger = lo;
    return lo;
}

/* Tasks are kept sorted by tid: a sample looks each one up once. */
static kthread *find_kthread(kthreads *o, int tid) {
    uint32_t lo = kthread_slot(o, tid);
    if (lo < o->count && o->items[lo].tid == tid) return &o->items[lo];
    kthread *items = grow_array(o->items, &o->cap, o->count + 1ull, sizeof *items, 16);
    if (!items) return NULL;
    o->items = items;
    /* A task found gone is not looked for again for a few samples: a thread per request that
     * ended between the list's read and its files' is met again by the next walk, and the one
     * after (its thread state read ahead, or not yet unlinked). Its TID is not another's so
     * soon: the kernel hands TIDs out in turn. */
    for (uint32_t i = 0; i < GONE_MEMO; i++)
        if (o->gone_tid[i] == tid && o->sample_no - o->gone_at[i] < GONE_SAMPLES) return NULL;
    int stat_fd = open_task_file(o->pid, tid, "stat");
    if (stat_fd < 0) {
        if (errno == ENOENT) {
            uint32_t i = o->gone_next++ % GONE_MEMO;
            o->gone_tid[i] = tid;
            o->gone_at[i] = o->sample_no;
        }
        return NULL;
    }
    memmove(&o->items[lo + 1], &o->items[lo], (o->count - lo) * sizeof *o->items);
    o->count++;
    kthread *t = &o->items[lo];
    *t = (kthread){.tid = tid, .stat_fd = stat_fd, .schedstat_fd = -1, .syscall_fd = -1, .state = '?'};
    t->schedstat_fd = open_task_file(o->pid, tid, "schedstat");
    return t;
}

/* The next decimal number at *p (skipping spaces); false if there is none. */
static bool next_number(const char **p, uint64_t *value) {
    const char *s = *p;
    while (*s == ' ') s++;
    if (*s < '0' || *s > '9') return false;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (uint64_t)(*s - '0');
    *p = s;
    *value = v;
    return true;
}

/* Skip `count` space-separated fields. */
static const char *skip_fields(const char *s, int count) {
    for (int i = 0; i < count && *s; i++) {
        while (*s == ' ') s++;
        while (*s && *s != ' ') s++;
    }
    return s;
}

/* stat: the state letter, and utime + stime in nanoseconds (for kernels without schedstat). */
static bool read_stat(kthreads *o, int fd, char *state, uint64_t *cpu_ns) {
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    o->syscalls++;
    if (n <= 0) return false;
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')'); /* the command name may itself hold ')' */
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] == '\0') return false;
    *state = close_paren[2];
    /* Fields after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt,
     * then utime and stime (fields 14 and 15 of the line). */
    const char *at = skip_fields(close_paren + 3, 10);
    uint64_t utime = 0, stime = 0;
    if (next_number(&at, &utime) && next_number(&at, &stime)) {
        long hz = sysconf(_SC_CLK_TCK);
        *cpu_ns = (utime + stime) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
    }
    return true;
}

enum { SCHEDSTAT_ERROR = -1, SCHEDSTAT_ZERO = 0, SCHEDSTAT_OK = 1 };

/* The word `t` is blocked on in futex(2) now, from .../syscall ("202 0x7f... 0x80 ..."; "running"
 * or another call: 0). The file asks what ptrace does, as reading its memory does. */
static uint64_t read_futex_word(kthreads *o, kthread *t) {
    if (t->syscall_fd == -1) {
        t->syscall_fd = open_task_file(o->pid, t->tid, "syscall");
        if (t->syscall_fd < 0) t->syscall_fd = -2;
    }
    if (t->syscall_fd < 0) return 0;
    char buf[64];
    ssize_t n = pread(t->syscall_fd, buf, sizeof buf - 1, 0);
    o->syscalls++;
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *at = buf;
    uint64_t nr = 0;
    if (!next_number(&at, &nr) || nr != SYS_futex || strncmp(at, " 0x", 3) != 0) return 0;
    return strtoull(at + 3, NULL, 16);
}

/* schedstat: CPU time, run-queue wait (ns) and times run. SCHEDSTAT_ZERO when it reads "0 0 0"
 * (a thread not yet run, or a kernel that keeps no schedstat), SCHEDSTAT_ERROR when it cannot
 * be read (the thread has exited). */
static int read_schedstat(kthreads *o, int fd, uint64_t *cpu, uint64_t *wait, uint64_t *switches) {
    if (fd < 0) return SCHEDSTAT_ERROR;
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    o->syscalls++;
    if (n <= 0) return SCHEDSTAT_ERROR;
    buf[n] = '\0';
    const char *at = buf;
    uint64_t c, w, s;
    if (!next_number(&at, &c) || !next_number(&at, &w) || !next_number(&at, &s)) return SCHEDSTAT_ERROR;
    *cpu = c;
    *wait = w;
    *switches = s;
    return c == 0 && s == 0 ? SCHEDSTAT_ZERO : SCHEDSTAT_OK;
}

/* How old a thread's letter may get. Past THREADS_PER_ROUND threads, longer in proportion: the
 * letters of 2,000 threads every 250 ms cost 4% of a core whatever the rate, and a CPU budget
 * that lowers the rate to pay for them could never catch up. */
static uint64_t state_refresh_ns(const kthreads *o) {
    uint64_t every = STATE_REFRESH_NS;
    return o->threads > THREADS_PER_ROUND ? every * o->threads / THREADS_PER_ROUND : every;
}

/* Read `t`'s figures (and its letter when `with_state`, when it is old, or when `letter_if_moved`
 * and they moved); report what moved since the previous read. */
static bool read_figures(kthreads *o, kthread *t, bool with_state, bool letter_if_moved, kthread_report *out) {
    uint64_t cpu = 0, wait = 0, switches = 0;
    char state = t->state;
    int got = o->no_schedstat ? SCHEDSTAT_ERROR : read_schedstat(o, t->schedstat_fd, &cpu, &wait, &switches);
    if (got == SCHEDSTAT_ERROR && !o->no_schedstat) return false; /* the thread has exited */
    bool state_read = false;
    if (got != SCHEDSTAT_OK) { /* "0 0 0", or no schedstat: times from stat, in ticks, with the letter */
        uint64_t ticks_ns = 0;
        if (!read_stat(o, t->stat_fd, &state, &ticks_ns)) return false;
        /* Zeros from a thread the kernel says has run: this kernel keeps no schedstat. */
        if (got == SCHEDSTAT_ZERO && ticks_ns > 0) o->no_schedstat = true;
        if (got == SCHEDSTAT_ZERO && !o->no_schedstat) ticks_ns = 0; /* not run yet */
        cpu = ticks_ns;
        wait = t->now.wait_ns;
        switches = t->now.switches;
        state_read = true;
    }
    bool moved = !t->now.known || cpu != t->now.cpu_ns || switches != t->now.switches;
    bool known_before = t->now.known;
    t->undo = t->now;
    out->first = !t->now.known;
    out->cpu_delta_ns = t->now.known && cpu > t->now.cpu_ns ? cpu - t->now.cpu_ns : 0;
    o->explained_ns += out->cpu_delta_ns; /* (a new thread's earlier time stays unexplained: a round) */
    out->wait_delta_ns = t->now.known && wait > t->now.wait_ns ? wait - t->now.wait_ns : 0;
    t->now.cpu_ns = cpu;
    t->now.wait_ns = wait;
    t->now.switches = switches;
    t->now.known = true;
    if (moved) t->now.changed_at = o->now;
    /* Where a thread that ran since and is not the GIL's holder now waits, if it is blocked:
     * unchanged while its counts do not move (it has not run since). */
    if (moved) t->futex = letter_if_moved ? read_futex_word(o, t) : 0;
    /* A thread that ran since its last read may be running now: read again if it was R, or
     * if it used a share of the time since (C code between waits for the GIL); not for a
     * sleeper that woke a moment (a pool's 2,000 threads wake ~730 times a second). */
    uint64_t since = known_before && o->now > t->now.read_at ? o->now - t->now.read_at : 0;
    bool busy = since && out->cpu_delta_ns * BUSY_PARTS >= since;
    bool recheck = moved && letter_if_moved && (t->state == 'R' || busy);
    if (!state_read && (with_state || recheck || o->now - t->state_at >= state_refresh_ns(o))) {
        uint64_t ignored;
        state_read = read_stat(o, t->stat_fd, &state, &ignored);
    }
    if (state_read) {
        t->state = state;
        t->state_at = o->now;
        t->on_cpu = state == 'R' && (moved || t->on_cpu);
        /* R: on a CPU, or about to be. A thread that ran much since its last read and sleeps
         * now may be waiting for the GIL between two calls that let it go: read again next time. */
        t->watched = state == 'R' || (moved && busy);
    } else if (moved) {
        t->on_cpu = false; /* it switched since: whether it runs now is not known */
    }
    /* Without a fresh letter: R as last read, and counts that moved lately. */
    out->running = state_read ? t->on_cpu : t->state == 'R' && o->now - t->now.changed_at < RUNNING_NS;
    out->on_cpu = state_read && t->on_cpu;
    /* T: stopped by a signal (SIGSTOP, a shell's Ctrl-Z): it does not run either. (Not t, a
     * tracer's stop: --blocking reads its letters before it stops the threads.) A holder found
     * stopped at its sleep's line while the process was frozen was taken for running there, in
     * sample after sample: those runs drew its loop's CPU to the sleep when it went on. */
    out->asleep = state_read && (state == 'S' || state == 'D' || state == 'T');
    out->ran = moved;
    t->now.read_at = o->now;
    return true;
}

static void fill_known(const kthread *t, kthread_report *out) {
    out->state = t->state;
    out->futex = t->futex;
    out->cpu_ns = t->now.cpu_ns;
}

/* A TID asked twice in one sample gets the same answer: a thread state not yet taken up by its
 * new thread carries its creator's ids before 3.11 (so its TID), and must not consume the
 * creator's CPU time. */
void kthreads_report(kthreads *o, int tid, int how, kthread_report *out) {
    memset(out, 0, sizeof *out);
    out->state = '?';
    if (o->mode == 0 || tid <= 0) return;
    kthread *t = find_kthread(o, tid);
    if (!t) return;
    if (t->seen_in_sample == o->sample_no && t->reported_in == o->sample_no + 1) {
        *out = t->last;
        return;
    }
    t->seen_in_sample = o->sample_no;
    t->reported_in = o->sample_no + 1; /* + 1: a new task's zeroed field means "not yet" */
    if (t->fresh) { /* read ahead, before the thread was stopped */
        *out = t->last = t->ahead;
        t->fresh = false;
        return;
    }
    if (o->mode == 2) how = KTHREAD_ALL;
    /* The GIL's holder: its letter too, every sample (one read of its stat file). A holder may
     * sleep in C code that keeps the GIL (a C extension blocked on a socket, ctypes.PyDLL): its
     * samples are not where it runs. */
    bool holder = how == KTHREAD_NOW;
    bool idle = how == KTHREAD_WHEN_DUE; /* not the GIL's holder, nor its last */
    bool letter_if_moved = idle || how == KTHREAD_AFTER_GIL;
    if (how == KTHREAD_AFTER_GIL) how = KTHREAD_NOW;
    if (o->check_all && how == KTHREAD_WHEN_DUE) how = KTHREAD_NOW;
    bool due = how != KTHREAD_WHEN_DUE || !t->now.known || t->watched || kthreads_due(o, tid);
    /* A thread without the GIL whose counts moved may have run a moment and gone back to
     * sleep: an old R and a recent move said "running" of a pool's worker asleep again after a
     * 1 ms burst, and its CPU went to the call it slept in. Its letter is read again; and read
     * at every sample while it says R (see the top of the file). */
    t->read_idle = false;
    if (due && read_figures(o, t, how == KTHREAD_ALL || holder || (letter_if_moved && t->watched), letter_if_moved,
                            out)) {
        out->checked = true;
        t->read_idle = idle;
        if (idle) o->idle_found_ns += out->cpu_delta_ns;
    }
    fill_known(t, out);
    out->running = out->checked ? out->running : false;
    t->last = *out;
}

bool kthreads_task_gone(kthreads *o, int tid) {
    if (o->mode == 0 || tid <= 0) return false;
    char buf[128];
    uint32_t at = kthread_slot(o, tid);
    /* A file held open answers for the task it was opened for, even if its TID is reused. */
    if (at < o->count && o->items[at].tid == tid && o->items[at].schedstat_fd >= 0)
        return pread(o->items[at].schedstat_fd, buf, sizeof buf, 0) < 0;
    snprintf(buf, sizeof buf, "/proc/%d/task/%d", o->pid, tid);
    return access(buf, F_OK) != 0 && errno == ENOENT;
}

uint64_t kthreads_defer(kthreads *o, int tid) {
    uint32_t at = kthread_slot(o, tid);
    if (at >= o->count || o->items[at].tid != tid) return 0;
    kthread *t = &o->items[at];
    if (t->reported_in != o->sample_no + 1 || !t->last.checked || t->fresh) return 0; /* not read this sample */
    uint64_t delta = t->last.cpu_delta_ns;
    t->now = t->undo;
    o->explained_ns = o->explained_ns > delta ? o->explained_ns - delta : 0;
    if (t->read_idle) o->idle_found_ns = o->idle_found_ns > delta ? o->idle_found_ns - delta : 0;
    t->last.checked = t->last.ran = t->last.first = t->last.on_cpu = false;
    t->last.cpu_delta_ns = t->last.wait_delta_ns = 0;
    o->deferred_ns += delta;
    return delta;
}

bool kthreads_watched(kthreads *o, int tid) {
    uint32_t at = kthread_slot(o, tid);
    return at < o->count && o->items[at].tid == tid && o->items[at].watched;
}

bool kthreads_due(const kthreads *o, int tid) {
    uint32_t every = kthreads_round_length(o);
    return every <= 1 || (o->round_on && (o->sample_no + (uint32_t)tid) % every == 0);
}

void kthreads_read_ahead(kthreads *o, int tid) {
    kthread *t = find_kthread(o, tid);
    if (!t) return;
    memset(&t->ahead, 0, sizeof t->ahead);
    if (!read_figures(o, t, true, true, &t->ahead)) return;
    t->ahead.checked = true;
    fill_known(t, &t->ahead);
    t->fresh = true;
}

void kthreads_end_sample(kthreads *o, bool complete) {
    if (complete && !o->partial) {
        uint32_t kept = 0;
        for (uint32_t i = 0; i < o->count; i++) {
            kthread *t = &o->items[i];
            t->missed_walks = t->seen_in_sample == o->sample_no ? 0 : t->missed_walks + 1;
            /* A walk may miss a thread that is still there (see tracking.c): its counts go on. */
            if (t->missed_walks < KTHREAD_GRACE_WALKS) o->items[kept++] = *t;
            else close_task(t);
        }
        o->count = kept;
    }
    o->partial = false;
    o->sample_no++;
}

int kthreads_process_cpu(kthreads *o, uint64_t *cpu_ns) {
    /* The process CPU clock of another process: ((~pid) << 3) | CPUCLOCK_SCHED. It covers every
     * thread, ended ones included, and moves like schedstat's per-thread times. */
    clockid_t clock = (clockid_t)((~(unsigned)o->pid << 3) | 2);
    struct timespec ts;
    o->syscalls++;
    if (clock_gettime(clock, &ts) == 0) {
        *cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        return PYTOP_OK;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", o->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PYTOP_ERR_GONE;
    char state;
    bool ok = read_stat(o, fd, &state, cpu_ns);
    close(fd);
    return ok ? PYTOP_OK : PYTOP_ERR_GONE;
}

static bool among(const int *sorted, uint32_t count, int tid) {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (sorted[mid] < tid) lo = mid + 1;
        else hi = mid;
    }
    return lo < count && sorted[lo] == tid;
}

static other_kthread *find_other(other_kthreads *others, int pid, int tid) {
    for (uint32_t i = 0; i < others->count; i++)
        if (others->items[i].tid == tid) return &others->items[i];
    other_kthread *items = grow_array(others->items, &others->cap, others->count + 1ull, sizeof *items, 8);
    if (!items) return NULL;
    others->items = items;
    other_kthread *t = &others->items[others->count];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->fd = open_task_file(pid, tid, "schedstat");
    int comm = open_task_file(pid, tid, "comm");
    if (comm >= 0) {
        ssize_t n = read(comm, t->comm, sizeof t->comm - 1);
        close(comm);
        if (n > 0 && t->comm[n - 1] == '\n') n--;
        t->comm[n > 0 ? n : 0] = '\0';
    }
    if (t->fd < 0) return NULL;
    others->count++;
    return t;
}

int kthreads_scan_others(kthreads *o, other_kthreads *others, const int *python_tids, uint32_t count, bool hold_new,
                      void (*visit)(void *ctx, const other_kthread *t, uint64_t delta_ns, bool first),
                      void *ctx) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", o->pid);
    DIR *dir = opendir(path);
    if (!dir) return PYTOP_ERR_GONE;
    others->scan++;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int tid = atoi(entry->d_name);
        if (tid <= 0 || among(python_tids, count, tid)) continue;
        other_kthread *t = find_other(others, o->pid, tid);
        uint64_t cpu = 0, wait = 0, switches = 0;
        if (!t || read_schedstat(o, t->fd, &cpu, &wait, &switches) == SCHEDSTAT_ERROR) continue;
        bool first = !t->listed;
        uint64_t delta = !first && cpu > t->cpu_ns ? cpu - t->cpu_ns : 0;
        o->explained_ns += delta;
        t->cpu_ns = cpu;
        if (first) t->unlisted_ns = cpu;
        t->seen = others->scan;
        t->listed = !hold_new;
        visit(ctx, t, delta, first);
    }
    closedir(dir);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < others->count; i++) {
        if (others->items[i].seen == others->scan) others->items[kept++] = others->items[i];
        else close(others->items[i].fd);
    }
    others->count = kept;
    return PYTOP_OK;
}

void kthreads_free_others(other_kthreads *others) {
    for (uint32_t i = 0; i < others->count; i++) close(others->items[i].fd);
    free(others->items);
    memset(others, 0, sizeof *others);
}
