/*
 * When the sampling thread samples: one implementation, used by the engine and by the bench's
 * bare-wait floor (bench/floor.c), so the two cannot drift apart.
 *
 * Time is cut into slots of one interval each (1/rate). Each slot holds at most one sample, at a
 * jittered point inside it (stratified jitter: no aliasing with the target's own periodic work,
 * and never more samples in a stretch of time than the rate allows). A slot that has passed
 * while the thread was busy or not given a CPU is skipped, never made up for later: a busy
 * machine gets fewer samples, never a burst of them. In cpu mode the time itself comes from
 * the kernel, so a skipped slot costs precision of a split, not truth.
 *
 * Self-contained (no pytop headers): bench/floor.c compiles it on its own.
 */
#ifndef PYTOP_SCHEDULE_H
#define PYTOP_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sample_schedule {
    uint64_t origin_ns;   /* where slot 0 begins at the current interval (CLOCK_MONOTONIC) */
    uint64_t interval_ns; /* one slot */
    uint64_t slot;        /* the slot the next sample is for */
    uint64_t due_ns;      /* when it is due */
    double jitter;        /* 0..0.9: samples fall within +-jitter/2 of a slot around its middle */
    uint64_t rng;
    uint64_t early_ns;    /* how much earlier than due to ask: what recent waits overshot */
} sample_schedule;

/* What one sample did to the schedule. */
typedef struct slot_outcome {
    uint32_t skipped;     /* slots that passed without a sample */
    bool late;            /* the sample began more than an interval after it was due */
} slot_outcome;

void schedule_init(sample_schedule *s, double rate, double jitter, uint64_t now_ns, uint64_t seed);
/* When to ask to be woken for the next sample: its due time less what waits overshoot lately
 * (never more than half an interval). */
uint64_t schedule_ask(const sample_schedule *s);
/* A wait that asked for `asked` ended at `now_ns`: learn how much waits overshoot. */
void schedule_woke(sample_schedule *s, uint64_t asked, uint64_t now_ns);
/* A sample began at `began_ns` and ended at `now_ns`: move to the next slot that can still be
 * kept, skipping the ones that have passed. */
slot_outcome schedule_advance(sample_schedule *s, uint64_t began_ns, uint64_t now_ns);
/* Sample at `rate` from the next slot on (slots restart at `now_ns`). */
void schedule_set_rate(sample_schedule *s, double rate, uint64_t now_ns);
/* A sample began at `began_ns` and ended at `now_ns` after a pause that was not the machine's
 * (a process's first read): slots start again at the end of the slot it began in, or at
 * `now_ns` if later, none counted skipped. */
void schedule_restart(sample_schedule *s, uint64_t began_ns, uint64_t now_ns);
double schedule_rate(const sample_schedule *s);

#endif
