/*
 * Each thread's state as the kernel reports it, from /proc/PID/task/TID/stat ("R" running or
 * runnable, "S" sleeping, "D" in uninterruptible wait, ...). The files stay open and are re-read
 * with pread; files of threads that are gone are closed at the end of the sample.
 *
 * A stat read costs ~4 us here, far more than reading a stack, while schedstat costs ~0.8 us.
 * Its third number counts how many times the thread was put on a CPU. So a thread that was
 * not running at its last stat read, and has not been put on a CPU since, is still not running:
 * for the many idle threads of a typical process, schedstat alone answers. The count must be
 * read before the stat it vouches for; when it was read after (a thread just went to sleep), the
 * next sample reads both again in the right order. Mode 2 reads stat every time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void os_state_init(os_state *o, int pid) {
    memset(o, 0, sizeof *o);
    o->pid = pid;
    o->mode = 1;
}

static void close_task(task_files *t) {
    if (t->stat_fd >= 0) close(t->stat_fd);
    if (t->schedstat_fd >= 0) close(t->schedstat_fd);
}

void os_state_free(os_state *o) {
    for (uint32_t i = 0; i < o->count; i++) close_task(&o->tasks[i]);
    free(o->tasks);
    memset(o, 0, sizeof *o);
}

static int open_task_file(int pid, int tid, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/%s", pid, tid, name);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Tasks are kept sorted by tid: a sample looks each one up once. */
static task_files *find_task(os_state *o, int tid) {
    uint32_t lo = 0, hi = o->count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (o->tasks[mid].tid < tid) lo = mid + 1;
        else hi = mid;
    }
    if (lo < o->count && o->tasks[lo].tid == tid) return &o->tasks[lo];
    task_files *tasks = grow_array(o->tasks, &o->cap, o->count + 1ull, sizeof *tasks, 16);
    if (!tasks) return NULL;
    o->tasks = tasks;
    int stat_fd = open_task_file(o->pid, tid, "stat");
    if (stat_fd < 0) return NULL;
    memmove(&o->tasks[lo + 1], &o->tasks[lo], (o->count - lo) * sizeof *o->tasks);
    o->count++;
    task_files *t = &o->tasks[lo];
    *t = (task_files){.tid = tid, .stat_fd = stat_fd, .schedstat_fd = -1, .state = '?'};
    t->schedstat_fd = open_task_file(o->pid, tid, "schedstat");
    return t;
}

static char read_stat_state(os_state *o, task_files *t) {
    char buf[512];
    ssize_t n = pread(t->stat_fd, buf, sizeof buf - 1, 0);
    o->syscalls++;
    if (n <= 0) return '?';
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')'); /* the command name may itself hold ')' */
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] == '\0') return '?';
    return close_paren[2];
}

/* Times put on a CPU, or 0 when schedstat is missing or disabled. */
static uint64_t read_pcount(os_state *o, task_files *t) {
    if (t->schedstat_fd < 0) return 0;
    char buf[96];
    ssize_t n = pread(t->schedstat_fd, buf, sizeof buf - 1, 0);
    o->syscalls++;
    if (n <= 0) return 0;
    buf[n] = '\0';
    unsigned long long run, wait, count;
    if (sscanf(buf, "%llu %llu %llu", &run, &wait, &count) != 3) return 0;
    return count;
}

void os_state_read_ahead(os_state *o, int tid) {
    task_files *t = find_task(o, tid);
    if (!t) return;
    t->state = read_stat_state(o, t);
    t->pcount_known = false;
    t->fresh = true;
}

char os_state_of(os_state *o, int tid, bool *idle_since) {
    *idle_since = false;
    task_files *t = find_task(o, tid);
    if (!t) return '?';
    t->seen_in_sample = o->sample_no;
    if (t->fresh) { /* read before the thread was stopped */
        t->fresh = false;
        return t->state;
    }
    bool idle_before = t->state != '?' && t->state != 'R';
    if (o->mode == 1 && idle_before && t->pcount_known) {
        uint64_t pcount = read_pcount(o, t);
        if (pcount && pcount == t->pcount) { /* not on a CPU since: nothing changed */
            *idle_since = true;
            return t->state;
        }
        t->state = read_stat_state(o, t);
        t->pcount = pcount;
        t->pcount_known = pcount != 0;
        return t->state;
    }
    if (o->mode == 1 && idle_before) { /* last count was read after the stat: re-read both */
        uint64_t pcount = read_pcount(o, t);
        t->state = read_stat_state(o, t);
        t->pcount = pcount;
        t->pcount_known = pcount != 0;
        return t->state;
    }
    t->state = read_stat_state(o, t);
    t->pcount_known = false;
    if (o->mode == 1 && t->state != 'R' && t->state != '?') {
        t->pcount = read_pcount(o, t); /* read after the stat: only a hint, see above */
    }
    return t->state;
}

void os_state_end_sample(os_state *o) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < o->count; i++) {
        if (o->tasks[i].seen_in_sample == o->sample_no) o->tasks[kept++] = o->tasks[i];
        else close_task(&o->tasks[i]);
    }
    o->count = kept;
    o->sample_no++;
    o->syscalls = 0;
}
