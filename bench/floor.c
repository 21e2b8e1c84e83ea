/*
 * The machine's floor for late and skipped samples: a thread that waits on pytop's own schedule
 * (native/schedule.c, compiled in: the same slots, jitter and wake-up correction) with the same
 * timer slack, but samples nothing. What it finds late or skips, pytop cannot do better than:
 * on a VM the host may hold a vCPU for milliseconds. With "realtime" as a third argument it
 * takes the real-time priority that pytop takes with --realtime.
 *
 * Usage: floor RATE SECONDS [realtime]  (bench/live.py builds and runs it beside pytop)
 * Prints one JSON line: ticks, late (more than an interval after due), skipped, cpu_seconds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "schedule.h"

static uint64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: floor RATE SECONDS [realtime]\n");
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    if (!(rate > 0 && rate <= 100000) || !(seconds > 0)) return 2;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int realtime = 0;
    if (argc == 4 && strcmp(argv[3], "realtime") == 0) {
        struct sched_param param = {.sched_priority = 1};
        realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
    }
    uint64_t start = monotonic_ns(), end = start + (uint64_t)(seconds * 1e9);
    uint64_t ticks = 0, late = 0, skipped = 0;
    sample_schedule schedule;
    schedule_init(&schedule, rate, 0.5, start, 0x9E3779B97F4A7C15ull);
    while (schedule.due_ns < end) {
        uint64_t ask = schedule_ask(&schedule);
        if (monotonic_ns() < ask) {
            struct timespec when = {(time_t)(ask / 1000000000u), (long)(ask % 1000000000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, NULL);
            schedule_woke(&schedule, ask, monotonic_ns());
        }
        uint64_t began = monotonic_ns();
        slot_outcome outcome = schedule_advance(&schedule, began, monotonic_ns());
        ticks++;
        late += outcome.late;
        skipped += outcome.skipped;
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    printf("{\"ticks\": %llu, \"late\": %llu, \"skipped\": %llu, \"cpu_seconds\": %.6f, \"realtime\": %s}\n",
           (unsigned long long)ticks, (unsigned long long)late, (unsigned long long)skipped,
           (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9, realtime ? "true" : "false");
    return 0;
}
