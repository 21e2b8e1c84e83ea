/* The sampling schedule: slots, jitter, skipping (see schedule.h). */
#include "schedule.h"

static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static uint64_t interval_of(double rate) {
    uint64_t ns = (uint64_t)(1e9 / rate);
    return ns ? ns : 1;
}

static uint64_t slot_start(const sample_schedule *s, uint64_t slot) { return s->origin_ns + slot * s->interval_ns; }

/* The slot that `t` falls in (slots before the origin count as slot 0). */
static uint64_t slot_at(const sample_schedule *s, uint64_t t) {
    return t > s->origin_ns ? (t - s->origin_ns) / s->interval_ns : 0;
}

/* A jittered point in `slot`, never before `now`. */
static uint64_t due_in(sample_schedule *s, uint64_t slot, uint64_t now) {
    double u = (double)(next_random(&s->rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    double where = 0.5 + s->jitter * (u - 0.5);
    uint64_t due = slot_start(s, slot) + (uint64_t)(where * (double)s->interval_ns);
    return due > now ? due : now;
}

void schedule_init(sample_schedule *s, double rate, double jitter, uint64_t now_ns, uint64_t seed) {
    s->interval_ns = interval_of(rate);
    s->jitter = jitter < 0 ? 0 : jitter > 0.9 ? 0.9 : jitter;
    s->rng = seed | 1;
    s->early_ns = 0;
    s->origin_ns = now_ns;
    s->slot = 0;
    s->due_ns = now_ns; /* the first sample at once */
}

uint64_t schedule_ask(const sample_schedule *s) {
    uint64_t cap = s->interval_ns / 2, early = s->early_ns < cap ? s->early_ns : cap;
    return s->due_ns > early ? s->due_ns - early : s->due_ns;
}

/* A wait ends some tens of microseconds after the time asked (the timer's interrupt, the switch
 * back to this thread; 30-50 us on a VM here): at 10 kHz that is half an interval. A moving
 * average of the overshoot; one long stall (a preemption) moves it by an interval at most. */
void schedule_woke(sample_schedule *s, uint64_t asked, uint64_t now_ns) {
    uint64_t over = now_ns > asked ? now_ns - asked : 0;
    if (over > s->interval_ns) over = s->interval_ns;
    s->early_ns = s->early_ns - s->early_ns / 16 + over / 16;
}

slot_outcome schedule_advance(sample_schedule *s, uint64_t began_ns, uint64_t now_ns) {
    slot_outcome out = {0, began_ns > s->due_ns + s->interval_ns};
    /* A sample that began after its slot ended took the place of the slot it began in. */
    uint64_t taken = slot_at(s, began_ns);
    if (taken < s->slot) taken = s->slot;
    out.skipped = (uint32_t)(taken - s->slot);
    uint64_t next = taken + 1;
    /* The next slot has ended already: sample in the one that runs now, not in every one missed. */
    uint64_t current = slot_at(s, now_ns);
    if (current > next) {
        out.skipped += (uint32_t)(current - next);
        next = current;
    }
    s->slot = next;
    s->due_ns = due_in(s, next, now_ns);
    return out;
}

void schedule_set_rate(sample_schedule *s, double rate, uint64_t now_ns) {
    uint64_t interval = interval_of(rate);
    if (interval == s->interval_ns) return;
    /* The slot under way keeps its sample; slots of the new length begin where it ends. */
    uint64_t end = slot_start(s, s->slot);
    s->interval_ns = interval;
    s->origin_ns = end > now_ns ? end : now_ns;
    s->slot = 0;
    s->due_ns = due_in(s, 0, now_ns);
}

void schedule_restart(sample_schedule *s, uint64_t began_ns, uint64_t now_ns) {
    /* The slot the sample began in keeps it: slots start again where it ends, or now. */
    uint64_t taken = slot_at(s, began_ns);
    if (taken < s->slot) taken = s->slot;
    uint64_t end = slot_start(s, taken + 1);
    s->origin_ns = end > now_ns ? end : now_ns;
    s->slot = 0;
    s->due_ns = due_in(s, 0, now_ns);
}

double schedule_rate(const sample_schedule *s) { return 1e9 / (double)s->interval_ns; }
