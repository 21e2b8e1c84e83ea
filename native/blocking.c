/*
 * Opt-in stop-the-world sampling (--blocking): every thread of the target is stopped with
 * ptrace while its stacks are read, so a stack can never change under the reader. It costs
 * the target a pause per sample, and pytop a few syscalls per thread, which is why it is off
 * by default.
 *
 * Threads are seized (PTRACE_SEIZE, which does not stop them) as they appear, interrupted
 * (PTRACE_INTERRUPT) at the start of a sample and continued at its end. ptrace belongs to the
 * thread that seized: all of this runs on the sampling thread, and the kernel detaches every
 * tracee by itself when that thread ends. Signals that arrive while a thread is stopped are
 * handed back to it; a thread in a group stop (SIGSTOP from elsewhere, Ctrl-Z) is left stopped,
 * and goes on when SIGCONT comes: the kernel then reports the stop's end, and SIGCONT itself,
 * before the interrupt asked for, each of which must be answered (once answered a step late
 * at every sample, a target stopped and continued stayed stopped until pytop detached).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"

#define MAX_STOP_WAITS 16 /* signals handed back while waiting for one thread's stop */
#define STOP_DEADLINE_NS (200u * 1000000u) /* a sample waits at most this long for the stops */
/* Detaching waits longer: once per run, and a thread left traced stays so until pytop ends (a
 * loaded machine kept a debug build's threads from stopping within a sample's wait). */
#define DETACH_DEADLINE_NS (2000u * 1000000u)
#define STOP_POLL_NS 20000u

static tracee *find(blocking *b, int tid) {
    for (uint32_t i = 0; i < b->count; i++)
        if (b->tracees[i].tid == tid) return &b->tracees[i];
    return NULL;
}

int blocking_seize_new(blocking *b) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", b->pid);
    DIR *dir = opendir(path);
    if (!dir) return errno == ENOENT ? PYTOP_ERR_GONE : PYTOP_ERR_READ;
    int status = PYTOP_OK;
    bool refused = false;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int tid = atoi(entry->d_name);
        if (tid <= 0 || find(b, tid)) continue;
        tracee *tracees = grow_array(b->tracees, &b->cap, b->count + 1ull, sizeof *tracees, 16);
        if (!tracees) {
            status = PYTOP_ERR_NOMEM;
            break;
        }
        b->tracees = tracees;
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
            /* ESRCH: it has just exited. EPERM: not allowed, or the thread is exiting (a
             * thread that has begun to exit cannot be traced: a thread-per-request server
             * ends hundreds a second); which one, the other threads say. */
            refused |= errno == EPERM;
            continue;
        }
        b->tracees[b->count++] = (tracee){tid, false};
    }
    closedir(dir);
    if (refused && status == PYTOP_OK && b->count == 0) status = PYTOP_ERR_PERMISSION; /* none could be */
    return status;
}

static void forget(blocking *b, uint32_t i) { b->tracees[i] = b->tracees[--b->count]; }

/* waitpid, but giving up at `deadline` (monotonic ns): 1 with a status, 0 gone, -1 late. A
 * thread that never stops (a kernel that loses the interrupt, a debugger racing us) must not
 * hang the sampling thread. */
static int wait_until(int tid, int *st, uint64_t deadline) {
    for (;;) {
        pid_t got = waitpid(tid, st, __WALL | WNOHANG);
        if (got == tid) return 1;
        if (got < 0) return 0;
        if (monotonic_ns() >= deadline) return -1;
        struct timespec pause = {0, STOP_POLL_NS};
        nanosleep(&pause, NULL);
    }
}

/* Wait until tracee i is in its interrupt stop: 1 stopped, 0 gone, -1 not by the deadline. */
static int wait_stopped(blocking *b, uint32_t i, uint64_t deadline) {
    tracee *t = &b->tracees[i];
    for (int n = 0; n < MAX_STOP_WAITS; n++) {
        int st;
        int got = wait_until(t->tid, &st, deadline);
        if (got <= 0) return got;
        if (WIFEXITED(st) || WIFSIGNALED(st)) return 0;
        if (!WIFSTOPPED(st)) continue;
        if ((st >> 16) == PTRACE_EVENT_STOP) {
            int sig = WSTOPSIG(st);
            /* An interrupt stop reports SIGTRAP; a group stop reports the stopping signal. A
             * thread listening in a group stop reports SIGTRAP too when SIGCONT ends it, and the
             * kernel may fold our pending interrupt into that one trap: so it goes on, SIGCONT
             * is delivered, and it is interrupted again (a second interrupt folds into the
             * first if that one is still pending: one stop either way). */
            bool group = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
            if (!group && t->group_stop) {
                t->group_stop = false;
                ptrace(PTRACE_CONT, t->tid, NULL, NULL);
                ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
                continue;
            }
            t->group_stop = group;
            return 1;
        }
        /* A signal arrived first: hand it back, our interrupt stop follows. */
        ptrace(PTRACE_CONT, t->tid, NULL, (void *)(uintptr_t)WSTOPSIG(st));
    }
    return 0;
}

/* Stops of tracee i already reported after it was continued (a signal that came meanwhile,
 * SIGCONT after a group stop): answered now, not left stopped until the next sample. */
static void answer_pending(blocking *b, uint32_t i) {
    tracee *t = &b->tracees[i];
    for (int n = 0; n < MAX_STOP_WAITS; n++) {
        int st;
        if (waitpid(t->tid, &st, __WALL | WNOHANG) != t->tid || !WIFSTOPPED(st)) return;
        int sig = WSTOPSIG(st);
        if ((st >> 16) != PTRACE_EVENT_STOP) {
            ptrace(PTRACE_CONT, t->tid, NULL, (void *)(uintptr_t)sig); /* a signal: delivered */
            continue;
        }
        t->group_stop = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
        ptrace(t->group_stop ? PTRACE_LISTEN : PTRACE_CONT, t->tid, NULL, NULL);
    }
}

int blocking_stop_all(blocking *b) {
    uint64_t deadline = monotonic_ns() + STOP_DEADLINE_NS;
    for (uint32_t i = 0; i < b->count; i++) ptrace(PTRACE_INTERRUPT, b->tracees[i].tid, NULL, NULL);
    b->stopped = true; /* from here on, blocking_resume_all() continues whoever did stop */
    for (uint32_t i = 0; i < b->count;) {
        int got = wait_stopped(b, i, deadline);
        if (got < 0) return PYTOP_ERR_LIMIT; /* resumed by the caller; this sample is given up */
        if (got > 0) i++;
        else forget(b, i); /* exited meanwhile */
    }
    return b->count ? PYTOP_OK : PYTOP_ERR_GONE;
}

void blocking_resume_all(blocking *b) {
    if (!b->stopped) return;
    for (uint32_t i = 0; i < b->count; i++) {
        tracee *t = &b->tracees[i];
        /* A thread someone else stopped stays stopped, but keeps reporting to its parent. */
        ptrace(t->group_stop ? PTRACE_LISTEN : PTRACE_CONT, t->tid, NULL, NULL);
    }
    for (uint32_t i = 0; i < b->count; i++) answer_pending(b, i);
    b->stopped = false;
}

bool blocking_holds(const blocking *b, int tid) {
    if (!b->stopped || tid <= 0) return false;
    for (uint32_t i = 0; i < b->count; i++)
        if (b->tracees[i].tid == tid) return !b->tracees[i].group_stop;
    return false;
}

void blocking_detach_all(blocking *b) {
    blocking_resume_all(b);
    for (uint32_t i = 0; i < b->count; i++) {
        tracee *t = &b->tracees[i];
        /* PTRACE_DETACH needs a stopped tracee: interrupt it first. If it does not stop in
         * time, the kernel detaches it when this thread ends. */
        if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) == 0 && wait_stopped(b, i, monotonic_ns() + DETACH_DEADLINE_NS) > 0)
            ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
    }
    free(b->tracees);
    b->tracees = NULL;
    b->count = b->cap = 0;
}
