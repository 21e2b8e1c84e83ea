/*
 * The machine's floor for late samples: a thread that waits like pytop's sampling thread (the
 * same jittered schedule, the same wait, the same real-time priority and timer slack, the same
 * correction for what waits overshoot) but samples nothing. What it finds late, pytop cannot
 * do better than: on a VM the host may hold a vCPU for milliseconds.
 *
 * Usage: floor RATE SECONDS  (bench/live.py builds and runs it beside pytop)
 * Prints one JSON line: ticks, late (more than an interval after due), cpu_seconds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static uint64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: floor RATE SECONDS\n");
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    if (!(rate > 0 && rate <= 100000) || !(seconds > 0)) return 2;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    struct sched_param param = {.sched_priority = 1};
    int realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
    uint64_t interval = (uint64_t)(1e9 / rate), due = monotonic_ns(), end = due + (uint64_t)(seconds * 1e9);
    uint64_t early = 0, ticks = 0, late = 0, rng = 0x9E3779B97F4A7C15ull;
    while (due < end) {
        uint64_t cap = interval / 2, ask = due - (early < cap ? early : cap);
        struct timespec when = {(time_t)(ask / 1000000000u), (long)(ask % 1000000000u)};
        int slept = 0;
        if (monotonic_ns() < ask) {
            slept = 1;
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, NULL);
        }
        uint64_t began = monotonic_ns();
        if (slept) {
            uint64_t over = began > ask ? began - ask : 0;
            if (over > interval) over = interval;
            early = early - early / 16 + over / 16;
        }
        ticks++;
        late += began > due + interval;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        double factor = 1.0 + 0.5 * ((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        due += (uint64_t)((double)interval * factor);
        if (began > due + 1000000000u) due = began; /* the engine gives up on a second's backlog */
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    printf("{\"ticks\": %llu, \"late\": %llu, \"cpu_seconds\": %.6f, \"realtime\": %s}\n", (unsigned long long)ticks,
           (unsigned long long)late, (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9, realtime ? "true" : "false");
    return 0;
}
