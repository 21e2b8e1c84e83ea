/* pytop's CPU budget as an account (see budget.h). */
#include "budget.h"

#define FIRST_WINDOW_NS 100000000ull /* checks this often while the first second lasts */
#define FIRST_SECOND_NS 1000000000ull
#define WINDOW_NS 500000000ull
#define PAYBACK_S 2.0   /* a balance is spread over this many seconds of sampling */
#define CREDIT_S 2.0    /* the most of the budget kept in hand: this many seconds' worth */
#define DEBT_S 2.0      /* the most owed: this many seconds' worth (a start that read 2,000
                         * threads' files is not paid back by half a minute of 1 sample a second) */
#define RISE_MAX 2.0    /* the rate at most doubles a check: a sample's cost grows with the rate */

void budget_init(cpu_budget *b, double share, double asked, double floor, uint64_t wall_ns, uint64_t thread_ns,
                 uint64_t process_ns, uint64_t samples) {
    *b = (cpu_budget){.share = share, .asked = asked, .floor = floor < asked ? floor : asked,
                      .started_ns = wall_ns, .wall_ns = wall_ns, .thread_ns = thread_ns,
                      .process_ns = process_ns, .samples = samples};
}

bool budget_due(const cpu_budget *b, uint64_t wall_ns) {
    uint64_t window = wall_ns - b->started_ns < FIRST_SECOND_NS ? FIRST_WINDOW_NS : WINDOW_NS;
    return wall_ns - b->wall_ns >= window;
}

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The (lower) median of `n` values, n <= OTHER_WINDOWS (a few: an insertion sort). */
static double median(const double *values, uint32_t n) {
    double sorted[OTHER_WINDOWS];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        for (; j > 0 && sorted[j - 1] > values[i]; j--) sorted[j] = sorted[j - 1];
        sorted[j] = values[i];
    }
    return n ? sorted[(n - 1) / 2] : 0.0;
}

double budget_check(cpu_budget *b, double rate, uint64_t wall_ns, uint64_t thread_ns, uint64_t process_ns,
                    uint64_t samples, uint64_t start_up_ns, bool start_up) {
    double span = (double)(wall_ns - b->wall_ns) / 1e9;
    double first_reads = start_up_ns > b->start_up_ns ? (double)(start_up_ns - b->start_up_ns) / 1e9 : 0.0;
    double sampling = (double)(thread_ns - b->thread_ns) / 1e9 - first_reads;
    double used = (process_ns > b->process_ns ? (double)(process_ns - b->process_ns) / 1e9 : 0.0) - first_reads;
    if (sampling < 0) sampling = 0;
    if (used < 0) used = 0;
    double rest = used > sampling ? used - sampling : 0.0;
    uint64_t taken = samples - b->samples;
    b->wall_ns = wall_ns;
    b->thread_ns = thread_ns;
    b->process_ns = process_ns;
    b->samples = samples;
    b->start_up_ns = start_up_ns;
    if (!(b->share > 0) || !(span > 0)) return rate;
    b->balance_s = clamp(b->balance_s + b->share * span - used, -b->share * DEBT_S, b->share * CREDIT_S);
    if (start_up && b->balance_s < 0) b->balance_s = 0;
    /* The rest's usual share: the median of the last windows. A one-off (an export, a first
     * drawing, attaching a program that exec'd) is paid back by the balance; taken into a
     * mean as well, it was paid twice, and held a 4 s run's rate down for seconds. */
    if (!start_up) {
        b->recent[b->windows++ % OTHER_WINDOWS] = rest / span;
        b->others = median(b->recent, b->windows < OTHER_WINDOWS ? b->windows : OTHER_WINDOWS);
    }
    if (taken && !start_up) {
        double per = sampling / (double)taken;
        b->per_sample_s = b->per_sample_s > 0 ? 0.5 * (b->per_sample_s + per) : per;
    }
    /* The sampling thread keeps at least a quarter of the budget, whatever the rest costs: a
     * screen that costs more than the budget must not stop sampling (the header says so). */
    double allowed = b->share - b->others + b->balance_s / PAYBACK_S;
    if (allowed < b->share / 4) allowed = b->share / 4;
    double next = b->per_sample_s > 0 ? allowed / b->per_sample_s : rate * RISE_MAX;
    if (next > rate * RISE_MAX) next = rate * RISE_MAX;
    return clamp(next, b->floor, b->asked);
}

double budget_first_sample(cpu_budget *b, double rate, double cost_s) {
    if (!(b->share > 0) || !(cost_s > 0) || b->per_sample_s > 0) return rate;
    b->per_sample_s = cost_s;
    return clamp(b->share / cost_s, b->floor, rate);
}
