/*
 * Which program a process runs: an exec keeps the pid and replaces the whole memory, so an
 * unwinder's addresses then name nothing and every sample fails until pytop follows the new
 * program (sampling/processes.py). The kernel writes a new auxiliary vector at every exec (the
 * new entry point, and 16 random bytes of the new stack), so a digest of /proc/PID/auxv names
 * the program image. Read at open, and again only when a sample fails: a failure of a process
 * that exec'd since is not an error of pytop's, but the end of the program it read.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "internal.h"

#define AUXV_MAX_BYTES 4096 /* the vector is a few hundred bytes; a longer one is cut, not overrun */

/* FNV-1a of the process's auxiliary vector; false if it cannot be read (gone, not ours). */
bool image_digest(int pid, uint64_t *out) {
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/auxv", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    unsigned char bytes[AUXV_MAX_BYTES];
    size_t size = 0;
    for (int reads = 0; reads < 8 && size < sizeof bytes; reads++) { /* bounded: /proc may split */
        ssize_t got = read(fd, bytes + size, sizeof bytes - size);
        if (got <= 0) break;
        size += (size_t)got;
    }
    close(fd);
    if (!size) return false;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ bytes[i]) * 0x100000001b3ull;
    *out = h;
    return true;
}

bool unwinder_image_replaced(const pytop_unwinder *u) {
    uint64_t now;
    return u->pid > 0 && u->image_known && image_digest(u->pid, &now) && now != u->image_id;
}
