/*
 * A target in another PID namespace (a container, `unshare -p`) knows its threads by that
 * namespace's numbers: its thread states hold them (native_thread_id, or the TID in struct
 * pthread), while /proc here lists the same tasks under this namespace's. Each task's status
 * file says both (its NSpid line: this namespace's number first, the innermost last), so the
 * unwinder maps one to the other, and looks again when a thread it does not know appears (at
 * most once a sample, reading only the status files of tasks not yet mapped).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define MAX_MAPPED 100000 /* tasks kept mapped; more are not looked up */

static bool same_namespace(int pid) {
    char path[64], theirs[64] = {0}, ours[64] = {0};
    snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    ssize_t a = readlink(path, theirs, sizeof theirs - 1);
    ssize_t b = readlink("/proc/self/ns/pid", ours, sizeof ours - 1);
    return a <= 0 || b <= 0 || strcmp(theirs, ours) == 0; /* not known: as if the same */
}

void pidns_init(pid_namespace *n, int pid) {
    memset(n, 0, sizeof *n);
    n->pid = pid;
    n->other = pid > 0 && !same_namespace(pid);
}

void pidns_free(pid_namespace *n) {
    free(n->map);
    memset(n, 0, sizeof *n);
}

/* The innermost namespace's number of task `tid` (ours), from its status; 0 if not found. */
static int inner_tid(int pid, int tid) {
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *line = strstr(text, "\nNSpid:");
    if (!line) return 0;
    line += 7;
    int last = 0;
    for (int fields = 0; fields < 32; fields++) { /* nesting is bounded (32 levels in Linux) */
        char *end;
        long v = strtol(line, &end, 10);
        if (end == line) break;
        last = v > 0 && v <= INT32_MAX ? (int)v : 0;
        line = end;
    }
    return last;
}

static int by_inner(const void *a, const void *b) {
    int x = ((const ns_task *)a)->inner, y = ((const ns_task *)b)->inner;
    return x < y ? -1 : x > y;
}

static int by_host(const void *a, const void *b) {
    int x = ((const ns_task *)a)->host, y = ((const ns_task *)b)->host;
    return x < y ? -1 : x > y;
}

/* Map the tasks now listed: known ones kept, gone ones dropped, new ones read. */
static void rescan(pid_namespace *n) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", n->pid);
    DIR *dir = opendir(path);
    if (!dir) return;
    if (n->count) qsort(n->map, n->count, sizeof *n->map, by_host); /* the known ones, by our number */
    uint32_t cap = 0, count = 0;
    ns_task *fresh = NULL;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < MAX_MAPPED) {
        ns_task key = {0, atoi(entry->d_name)};
        if (key.host <= 0) continue;
        const ns_task *known = n->count ? bsearch(&key, n->map, n->count, sizeof *n->map, by_host) : NULL;
        key.inner = known ? known->inner : inner_tid(n->pid, key.host);
        if (!key.inner) continue;
        ns_task *grown = grow_array(fresh, &cap, count + 1ull, sizeof *fresh, 64);
        if (!grown) break;
        fresh = grown;
        fresh[count++] = key;
    }
    closedir(dir);
    if (count) qsort(fresh, count, sizeof *fresh, by_inner);
    free(n->map);
    n->map = fresh;
    n->count = count;
}

/* The task whose number (ours if `by_host`, else the target's) is `tid`, searched for as if the
 * map were in that order (it is sorted by the target's: see pidns_inner_tid); NULL if not so found. */
static const ns_task *search(const pid_namespace *n, int tid, bool by_host) {
    uint32_t lo = 0, hi = n->count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if ((by_host ? n->map[mid].host : n->map[mid].inner) < tid) lo = mid + 1;
        else hi = mid;
    }
    return lo < n->count && (by_host ? n->map[lo].host : n->map[lo].inner) == tid ? &n->map[lo] : NULL;
}

int pidns_host_tid(pid_namespace *n, int tid, uint32_t sample_no) {
    if (!n->other || tid <= 0) return tid;
    for (int pass = 0; pass < 2; pass++) {
        const ns_task *found = search(n, tid, false);
        if (found) return found->host;
        if (pass || (n->scanned && n->scanned_in == sample_no)) break;
        rescan(n);
        n->scanned = true;
        n->scanned_in = sample_no;
    }
    return 0;
}

/* The map is sorted by the target's numbers, and both namespaces number tasks in the order they
 * are made, so ours are in order too but across a wrap of either count: searched as if in order
 * first, then, not found so, one by one (a new thread's name is checked by it: a pool of 2,000
 * threads in a container paid ~4 million compares at its first sample). */
int pidns_inner_tid(const pid_namespace *n, int host) {
    if (!n->other || host <= 0) return host;
    const ns_task *found = search(n, host, true);
    if (found) return found->inner;
    for (uint32_t i = 0; i < n->count; i++)
        if (n->map[i].host == host) return n->map[i].inner;
    return 0;
}
