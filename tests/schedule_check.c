/*
 * The sampling schedule (native/schedule.c) on a simulated clock: pure logic, no waiting, so
 * no load can change what it finds. test_schedule.py builds and runs it; a broken property
 * prints what broke and exits 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "schedule.h"

#define MS 1000000ull
#define US 1000ull


/* Samples taken from `from` for `count` samples, each `cost` long, the clock jumping by `stall`
 * after sample number `stall_at`. Returns the clock at the end; fills the start of each. */
typedef struct run_result {
    uint64_t began[20000];
    uint32_t count;
    uint64_t skipped, late;
} run_result;

static uint64_t simulate(sample_schedule *s, uint64_t now, uint32_t count, uint64_t cost, uint32_t stall_at,
                         uint64_t stall, run_result *r) {
    r->count = 0;
    r->skipped = r->late = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t ask = schedule_ask(s);
        if (now < ask) now = ask; /* a wait that wakes exactly when asked */
        uint64_t began = now;
        now += cost;
        if (i == stall_at) now += stall;
        slot_outcome o = schedule_advance(s, began, now);
        r->began[r->count++] = began;
        r->skipped += o.skipped;
        r->late += o.late;
    }
    return now;
}

/* At most one sample per slot: in any stretch of time, never more than the rate allows. */
static void check_never_above_rate(const run_result *r, uint64_t interval, const char *what) {
    for (uint32_t i = 0; i + 1 < r->count; i++) {
        uint64_t window = 100 * interval; /* samples in [began[i], began[i] + window) */
        uint32_t n = 0;
        for (uint32_t j = i; j < r->count && r->began[j] < r->began[i] + window; j++) n++;
        CHECK(n <= 101, "%s: %u samples in 100 intervals from sample %u", what, n, i);
        if (n > 101) return;
    }
}

int main(void) {
    static run_result r;
    sample_schedule s;

    /* A quiet machine: one sample per slot, none skipped, none late, jitter inside the slot. */
    schedule_init(&s, 1000.0, 0.5, 10 * MS, 42);
    simulate(&s, 10 * MS, 5000, 30 * US, UINT32_MAX, 0, &r);
    CHECK(r.skipped == 0 && r.late == 0, "quiet: %" PRIu64 " skipped, %" PRIu64 " late", r.skipped, r.late);
    uint64_t shortest = UINT64_MAX, longest = 0;
    for (uint32_t i = 1; i < r.count; i++) {
        uint64_t gap = r.began[i] - r.began[i - 1];
        shortest = gap < shortest ? gap : shortest;
        longest = gap > longest ? gap : longest;
        uint64_t in_slot = (r.began[i] - 10 * MS) % MS;
        CHECK(in_slot >= 250 * US && in_slot <= 750 * US, "quiet: sample %u at %" PRIu64 " ns into its slot", i,
              in_slot);
    }
    CHECK(shortest >= 500 * US && longest <= 1500 * US, "quiet: gaps %" PRIu64 "..%" PRIu64, shortest, longest);
    CHECK(longest - shortest > 400 * US, "quiet: no jitter (gaps %" PRIu64 "..%" PRIu64 ")", shortest, longest);
    uint64_t span = r.began[r.count - 1] - r.began[0];
    CHECK(span > 4990 * MS && span < 5000 * MS, "quiet: 5000 samples over %" PRIu64 " ns", span);
    check_never_above_rate(&r, MS, "quiet");

    /* A stall of 50 ms (the sampler was not given a CPU): the slots it covered are skipped, and
     * the next samples come one per slot, not in a burst that makes up for them. */
    schedule_init(&s, 1000.0, 0.5, 0, 7);
    simulate(&s, 0, 2000, 30 * US, 1000, 50 * MS, &r);
    CHECK(r.skipped >= 49 && r.skipped <= 51, "stall: %" PRIu64 " skipped for 50 ms", r.skipped);
    CHECK(r.count + r.skipped == s.slot, "stall: %u taken + %" PRIu64 " skipped for %" PRIu64 " slots", r.count,
          r.skipped, s.slot);
    for (uint32_t i = 1002; i < 1010; i++)
        CHECK(r.began[i] - r.began[i - 1] >= 250 * US, "stall: burst after it (gap %" PRIu64 " ns at %u)",
              r.began[i] - r.began[i - 1], i);
    check_never_above_rate(&r, MS, "stall");

    /* Samples that cost a slot and a half: the slots they overrun are skipped, never a backlog.
     * Every slot is either taken or skipped, once. */
    schedule_init(&s, 1000.0, 0.5, 0, 9);
    uint64_t end = simulate(&s, 0, 1000, 1500 * US, UINT32_MAX, 0, &r);
    CHECK(r.skipped >= 400 && r.skipped <= 800, "slow samples: %" PRIu64 " skipped for 1000 taken", r.skipped);
    CHECK(r.count + r.skipped == s.slot, "slow samples: %u taken + %" PRIu64 " skipped for %" PRIu64 " slots",
          r.count, r.skipped, s.slot);
    CHECK(s.slot >= end / MS && s.slot <= end / MS + 1, "slow samples: at slot %" PRIu64 " at %" PRIu64 " ns", s.slot,
          end);
    check_never_above_rate(&r, MS, "slow samples");

    /* A wake that comes late (a preemption between the wake and the sample): late, and the
     * slots it passed are skipped. */
    schedule_init(&s, 1000.0, 0.0, 0, 3);
    simulate(&s, 0, 10, 10 * US, UINT32_MAX, 0, &r);
    uint64_t due = s.due_ns;
    slot_outcome o = schedule_advance(&s, due + 3 * MS + 100 * US, due + 3 * MS + 200 * US);
    CHECK(o.late && o.skipped == 3, "late wake: late %d, %u skipped", o.late, o.skipped);
    CHECK(s.due_ns >= due + 3 * MS + 200 * US, "late wake: next due before the sample ended");

    /* The rate lowered (the CPU budget): slots of the new length from the next one on. */
    schedule_init(&s, 1000.0, 0.5, 0, 11);
    uint64_t now = simulate(&s, 0, 100, 30 * US, UINT32_MAX, 0, &r);
    schedule_set_rate(&s, 100.0, now);
    CHECK(s.interval_ns == 10 * MS && schedule_rate(&s) > 99.9 && schedule_rate(&s) < 100.1, "set_rate: interval %" PRIu64,
          s.interval_ns);
    simulate(&s, now, 500, 30 * US, UINT32_MAX, 0, &r);
    CHECK(r.skipped == 0, "set_rate: %" PRIu64 " skipped", r.skipped);
    check_never_above_rate(&r, 10 * MS, "set_rate");

    /* Waits that overshoot by 40 us: the schedule learns to ask that much earlier, never more
     * than half an interval. */
    schedule_init(&s, 10000.0, 0.5, 0, 5);
    for (int i = 0; i < 200; i++) {
        uint64_t ask = schedule_ask(&s);
        schedule_woke(&s, ask, ask + 40 * US);
        schedule_advance(&s, ask + 40 * US, ask + 45 * US);
    }
    CHECK(s.early_ns > 35 * US && s.early_ns <= 40 * US, "early: %" PRIu64, s.early_ns);
    CHECK(s.due_ns - schedule_ask(&s) <= 50 * US, "early: asks %" PRIu64 " ns early at 10 kHz",
          s.due_ns - schedule_ask(&s));

    /* A restart after a pause that was not the machine's (a first read of 2 s): slots from
     * then on, the next due within one interval, none counted skipped after it. */
    schedule_init(&s, 1000.0, 0.5, 0, 11);
    uint64_t t = 2000 * MS;
    schedule_restart(&s, 0, t);
    CHECK(s.due_ns >= t && s.due_ns < t + MS, "restart: due %" PRIu64 " ns after it", s.due_ns - t);
    simulate(&s, t, 1000, 30 * US, UINT32_MAX, 0, &r);
    CHECK(r.skipped == 0 && r.late == 0, "restart: %" PRIu64 " skipped, %" PRIu64 " late", r.skipped, r.late);
    /* A quick first read (0.5 ms at 200/s) keeps its slot: the next sample is not before the
     * slot ends (two samples in one slot made 301 samples in 1.5 s at 200/s). */
    for (uint64_t seed = 1; seed <= 50; seed++) {
        schedule_init(&s, 200.0, 0.5, 0, seed);
        schedule_restart(&s, 0, 500 * US);
        CHECK(s.due_ns >= 5 * MS, "quick restart: due at %" PRIu64 " ns, inside the first slot", s.due_ns);
        r.began[0] = 0;
        r.count = 1;
        simulate(&s, 500 * US, 299, 30 * US, UINT32_MAX, 0, &r);
        CHECK(r.began[r.count - 1] >= 299 * 5 * MS, "quick restart: 300 samples by %" PRIu64 " ns", r.began[r.count - 1]);
    }

    if (failures) return 1;
    printf("schedule: all properties hold\n");
    return 0;
}
