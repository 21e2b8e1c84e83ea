/*
 * The CPU budget's account (native/budget.c) on a simulated clock: a sampler whose samples cost
 * a known CPU time, the rest of pytop costing a known share of a core, a start-up owed. Pure
 * logic, so no load can change what it finds. test_budget.py builds and runs it; a broken
 * property prints what broke and exits 1.
 */
#include <stdbool.h>
#include <stdio.h>

#include "check.h"

#include "budget.h"

#define MS 1000000ull
#define S 1000000000ull


typedef struct world {
    double share, asked, floor;
    double sample_s;      /* the sampling thread's CPU per sample */
    double others;        /* the rest of the process, share of a core */
    double spike_at_s, spike_s; /* a one-off of the rest: spike_s of CPU at spike_at_s */
    double first_read_s;  /* the process's first read (naming every thread): start-up */
} world;

typedef struct outcome {
    double used_s;        /* the process's CPU over the run (start-up not included) */
    double elapsed_s;     /* the run's length: past `seconds` by what its last sample took */
    double rate;          /* the rate at the end */
    double lowest, highest;
    double first_full_s;  /* when the rate first came back to the one asked (-1: never) */
    uint64_t samples;
    uint64_t skipped;     /* slots that passed while a sample was being taken */
} outcome;

/* Run `w` for `seconds`, sampling at the budget's rate; a sample that costs more than its
 * interval delays the next one (the schedule skips, never bursts). */
static outcome run(const world *w, double seconds) {
    cpu_budget b;
    uint64_t now = 0, thread = 0, process = 0, samples = 0, start_up = 0;
    budget_init(&b, w->share, w->asked, w->floor, now, thread, process, samples);
    outcome o = {.rate = w->asked, .lowest = w->asked, .highest = 0, .first_full_s = -1};
    double rate = w->asked, t = 0, spiked = 0;
    while (t < seconds) {
        double interval = 1.0 / rate, cost = w->sample_s;
        if (start_up == 0 && w->first_read_s > 0) { /* the first read, then sampling on */
            cost = w->first_read_s;
            start_up = (uint64_t)(cost * S);
            samples--; /* (not a sample the account counts) */
        }
        double step = cost > interval ? cost : interval;
        bool restarted = false; /* the first sample read (a first read counts as -1): its cost */
        if (samples == 0) {     /* sets the rate, and the slots start again at it */
            double was = rate;
            rate = budget_first_sample(&b, rate, cost);
            restarted = rate != was;
        }
        if (cost > interval && !restarted) o.skipped += (uint64_t)(cost / interval);
        thread += (uint64_t)(cost * S);
        double rest = w->others * step;
        if (!spiked && t >= w->spike_at_s && w->spike_s > 0) {
            rest += w->spike_s;
            spiked = 1;
        }
        process += (uint64_t)(cost * S) + (uint64_t)(rest * S);
        t += step;
        now = (uint64_t)(t * S);
        samples++;
        if (budget_due(&b, now)) {
            double next = budget_check(&b, rate, now, thread, process, samples, start_up, false);
            rate = next;
            if (t > 0.5) { /* past the first windows, at the asked rate by construction */
                if (rate < o.lowest) o.lowest = rate;
            }
            if (rate > o.highest) o.highest = rate;
            if (o.first_full_s < 0 && t > 0.2 && rate >= w->asked) o.first_full_s = t;
        }
    }
    o.used_s = (double)(process - start_up) / S;
    o.elapsed_s = t;
    o.rate = rate;
    o.samples = samples;
    return o;
}

int main(void) {
    /* A costly sample (15 ms: a 10,000-frame stack read whole) at 1,000/s asked, 5%: the budget
     * is kept over 10 s, from the start (a first tenth of a second at the asked rate at most). */
    world deep = {.share = 0.05, .asked = 1000, .floor = 1, .sample_s = 0.015, .others = 0.005};
    outcome o = run(&deep, 10);
    CHECK(o.used_s <= 0.05 * o.elapsed_s * 1.02, "deep: %.3f s of CPU in %.2f s at a 5%% budget", o.used_s, o.elapsed_s);
    CHECK(o.rate < 5 && o.rate >= 1, "deep: held at %.2f/s", o.rate);
    CHECK(o.skipped <= 0.05 * (double)(o.samples + o.skipped), "deep: %llu slots skipped, %llu sampled",
          (unsigned long long)o.skipped, (unsigned long long)o.samples); /* from its first sample on */
    o = run(&deep, 1);
    CHECK(o.used_s <= 0.05 * 1 + 0.1 + 0.015, "deep: %.3f s in the first second", o.used_s);

    /* A one-off at the start (the screen's first drawing: 0.3 s) is paid back up to what the
     * account may owe (2 s of the budget: 0.4 s at 20%) within a 6 s run, sampling still. */
    world first = {.share = 0.20, .asked = 1000, .floor = 1, .sample_s = 0.0012, .others = 0.01, .spike_s = 0.3};
    o = run(&first, 6);
    CHECK(o.used_s <= 0.20 * o.elapsed_s * 1.05, "first: %.3f s in %.2f s at 20%%", o.used_s, o.elapsed_s);
    CHECK(o.samples > 100, "first: %llu samples", (unsigned long long)o.samples);

    /* A first read that names a pool's 1,000 threads (0.3 s) is start-up: the samples after it
     * (1.2 ms) are not taken for as dear, and sample at the budget's rate within a second. */
    world pool = {.share = 0.20, .asked = 1000, .floor = 1, .sample_s = 0.0012, .others = 0.01, .first_read_s = 0.3};
    o = run(&pool, 6);
    CHECK(o.used_s <= 0.20 * o.elapsed_s * 1.05, "pool: %.3f s in %.2f s at 20%%", o.used_s, o.elapsed_s);
    CHECK(o.samples > 0.5 * 6 * 0.19 / 0.0012, "pool: %llu samples", (unsigned long long)o.samples);
    o = run(&pool, 1.5);
    CHECK(o.rate > 0.5 * 0.19 / 0.0012, "pool: %.1f/s 1.5 s in", o.rate);

    /* A cheap sample (20 us) is not held: the rate asked, at once and to the end. */
    world cheap = {.share = 0.05, .asked = 1000, .floor = 1, .sample_s = 0.00002, .others = 0.005};
    o = run(&cheap, 10);
    CHECK(o.rate == 1000 && o.lowest == 1000, "cheap: %.1f/s at the end, %.1f/s at the lowest", o.rate, o.lowest);

    /* A rest that costs more than the budget (a screen at 8%) leaves sampling a quarter of it. */
    world screen = {.share = 0.05, .asked = 1000, .floor = 1, .sample_s = 0.0001, .others = 0.08};
    o = run(&screen, 20);
    CHECK(o.rate > 0.8 * 0.0125 / 0.0001 && o.rate < 1.2 * 0.0125 / 0.0001, "screen: held at %.1f/s", o.rate);

    /* A one-off (an export: 0.08 s of CPU at 3 s) is paid back, then the rate recovers; one
     * past what the account may owe (0.3 s) is paid back up to that (0.1 s at 5%). */
    world spike = {.share = 0.05, .asked = 1000, .floor = 1, .sample_s = 0.00004, .others = 0.005,
                   .spike_at_s = 3, .spike_s = 0.08};
    o = run(&spike, 30);
    CHECK(o.used_s <= 0.05 * o.elapsed_s * 1.02, "spike: %.3f s in %.2f s", o.used_s, o.elapsed_s);
    CHECK(o.rate >= 0.9 * 1000 * 0.8, "spike: %.1f/s at the end", o.rate);
    spike.spike_s = 0.3;
    o = run(&spike, 10);
    CHECK(o.used_s <= 0.05 * o.elapsed_s * 1.02 + 0.2, "big spike: %.3f s in %.2f s", o.used_s, o.elapsed_s);
    CHECK(o.rate >= 0.9 * 1000 * 0.8, "big spike: %.1f/s 7 s after it", o.rate);

    /* Never below the floor, never above the rate asked, however costly. */
    world awful = {.share = 0.01, .asked = 500, .floor = 2, .sample_s = 0.2, .others = 0.5, .spike_s = 5};
    o = run(&awful, 30);
    CHECK(o.lowest >= 2 && o.highest <= 500, "awful: %.2f..%.2f/s", o.lowest, o.highest);

    /* A first sample's cost that would allow more than the rate asked leaves the rate as it
     * was; a first read before it is start-up, not that cost (the pool above). */
    cpu_budget fresh;
    budget_init(&fresh, 0.05, 1000, 1, 0, 0, 0, 0);
    CHECK(budget_first_sample(&fresh, 1000, 0.00001) == 1000, "a cheap first sample lowered the rate");
    CHECK(budget_first_sample(&fresh, 1000, 0.01) == 1000, "a second first sample counted");
    budget_init(&fresh, 0, 1000, 1, 0, 0, 0, 0);
    CHECK(budget_first_sample(&fresh, 1000, 0.5) == 1000, "no budget, yet the first sample lowered the rate");

    /* No budget: the rate asked, whatever it costs. */
    world none = {.share = 0, .asked = 1000, .floor = 1, .sample_s = 0.015, .others = 0.5};
    o = run(&none, 3);
    CHECK(o.lowest == 1000 && o.rate == 1000, "none: %.1f/s", o.rate);

    if (failures) return 1;
    printf("all properties hold\n");
    return 0;
}
