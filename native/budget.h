/*
 * pytop's CPU budget: the sampling rate at which its whole process keeps within a share of a
 * core, kept as an account rather than judged window by window.
 *
 * The account earns the budget's share of every second from the first sample and pays all the
 * CPU the process uses from then: the sampling thread, the screen, the drains. What the
 * sampling thread may use next is the budget, less what the rest of the process usually costs
 * (the median of its last windows), plus (or less) the balance spread over PAYBACK seconds;
 * the rate is that over what a sample lately costs. So the rate is right from the first tenth
 * of a second (a sample of a 10,000-frame stack costs ~15 ms: judged after a 2 s grace at
 * 1,000/s, the first seconds used 20% of a core), a one-off (an export, a big view) is paid
 * back rather than ignored, and samples held down are on time at the rate held (it is one they
 * can keep). The account keeps at most DEBT_S seconds' worth of the budget owed, and CREDIT_S
 * in hand.
 *
 * Not the start-up (imports, attaching: 0.4 s of CPU, 1.5 s for 2,000 threads), up to and
 * including a process's first read (naming every thread, opening every thread's files: 0.3 s
 * for a pool of 1,000): owed, it held a 10 s run at a quarter of the budget throughout (24-28
 * samples a second on a server), and as a sample's cost it held a pool's rate near the floor
 * for seconds; it is measured apart (bench/cost.py) and made small there. Nor the start-up of
 * a process added later (a program that exec'd: owed, it held the rest of a 4 s run so low
 * that the samples failing while the exec was followed were 6-9% of them).
 *
 * Self-contained (no pytop headers), pure arithmetic on the clocks it is given.
 */
#ifndef PYTOP_BUDGET_H
#define PYTOP_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define OTHER_WINDOWS 5 /* the rest of the process's share is the median of this many windows */

typedef struct cpu_budget {
    double share;             /* of one core (0.05): 0, none */
    double asked, floor;      /* the rate asked for; the lowest the budget may hold it to */
    double balance_s;         /* CPU seconds in hand: earned less used (negative: owed) */
    double others;            /* the share of a core the rest of the process usually uses */
    double recent[OTHER_WINDOWS]; /* ... in each of the last windows */
    uint32_t windows;
    double per_sample_s;      /* the sampling thread's CPU per sample (smoothed; 0: not known yet) */
    uint64_t started_ns;      /* CLOCK_MONOTONIC of the first check's start */
    uint64_t wall_ns, thread_ns, process_ns, samples; /* at the last check */
    uint64_t start_up_ns;     /* ... and the sampling thread's CPU on processes' first reads */
} cpu_budget;

/* The clocks and the sample count as they are now. */
void budget_init(cpu_budget *b, double share, double asked, double floor, uint64_t wall_ns, uint64_t thread_ns,
                 uint64_t process_ns, uint64_t samples);
/* Whether a check is due: every tenth of a second for the first second, then twice a second. */
bool budget_due(const cpu_budget *b, uint64_t wall_ns);
/* A check: the rate to sample at from now (`rate`: the one in force). `start_up_ns`: a clock
 * of the sampling thread's CPU spent on processes' first reads (not counted in `samples`),
 * taken off the account like the start-up before them. `start_up`: a process was added since
 * the last check (a program that exec'd, a child with -s): attaching it (in another thread)
 * is its start-up, like pytop's own, so what the window owes is forgiven and its samples do
 * not say what a sample costs. */
double budget_check(cpu_budget *b, double rate, uint64_t wall_ns, uint64_t thread_ns, uint64_t process_ns,
                    uint64_t samples, uint64_t start_up_ns, bool start_up);

/* What the first sample read cost (`cost_s` of the sampling thread's CPU), before any check:
 * the rate the budget's share allows for samples that dear (never above `rate`, the one in
 * force), so the slots before the first check are slots it can keep. Sampled at the rate asked
 * until then, a deep recursion's samples (3.5 ms at 1,000/s asked) passed ~70 slots in that
 * tenth of a second: a third of a quiet 10 s run's slots counted skipped. */
double budget_first_sample(cpu_budget *b, double rate, double cost_s);

#endif
