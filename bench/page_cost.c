/*
 * What reading another process's memory costs here, by read size: process_vm_readv (what pytop
 * uses) and pread on /proc/PID/mem, over the same region of a live process, a page at a time
 * up to 64 KiB at a time. Per call and per page, in microseconds: with one syscall's fixed
 * cost small beside a page's, a sample's cost is the pages it reads, whatever their grouping.
 *
 *   cc -O2 -o /tmp/page_cost bench/page_cost.c
 *   /tmp/page_cost PID   (reads the first writable mapping of at least 1 MiB)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REGION (1u << 20)
#define ROUNDS 50

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned long writable_region(int pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long lo = 0, hi = 0, found = 0;
    char perms[8];
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[0] == 'r' && perms[1] == 'w' &&
            hi - lo >= REGION)
            found = lo;
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PID\n", argv[0]);
        return 2;
    }
    int pid = atoi(argv[1]);
    unsigned long base = writable_region(pid);
    if (!base) {
        fprintf(stderr, "no readable writable mapping of 1 MiB in pid %d\n", pid);
        return 1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, O_RDONLY);
    char *buf = malloc(REGION);
    size_t sizes[] = {4096, 16384, 65536};
    for (int way = 0; way < 2; way++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            size_t size = sizes[k];
            long calls = 0;
            double start = now();
            for (int round = 0; round < ROUNDS; round++)
                for (size_t off = 0; off + size <= REGION; off += size, calls++) {
                    ssize_t got;
                    if (way == 0) {
                        struct iovec local = {buf + off, size}, remote = {(void *)(base + off), size};
                        got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
                    } else {
                        got = pread(fd, buf + off, size, (off_t)(base + off));
                    }
                    if (got != (ssize_t)size) {
                        perror(way == 0 ? "process_vm_readv" : "pread /proc/PID/mem");
                        return 1;
                    }
                }
            double us = (now() - start) / calls * 1e6;
            printf("%-16s %6zu bytes a call: %6.2f us a call, %5.2f us a page\n",
                   way == 0 ? "process_vm_readv" : "/proc/PID/mem", size, us, us / (size / 4096));
        }
    }
    return 0;
}
