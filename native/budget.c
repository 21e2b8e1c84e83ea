/* pytop's CPU budget as an account (see budget.h). */
#include "budget.h"

#define FIRST_WINDOW_NS 100000000ull /* checks this often while the first second lasts */
#define FIRST_SECOND_NS 1000000000ull
#define WINDOW_NS 500000000ull
#define PAYBACK_S 2.0   /* a balance is spread over this many seconds of sampling */
#define CREDIT_S 2.0    /* the most of the budget kept in hand: this many seconds' worth */
#define DEBT_S 2.0      /* the most owed: this many seconds' worth (a start that read 2,000
                         * threads' files is not paid back by half a minute of 1 sample a second) */
#define OTHERS_S 5.0    /* the rest of the process's cost is averaged over about this long */
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

double budget_check(cpu_budget *b, double rate, uint64_t wall_ns, uint64_t thread_ns, uint64_t process_ns,
                    uint64_t samples) {
    double span = (double)(wall_ns - b->wall_ns) / 1e9;
    double sampling = (double)(thread_ns - b->thread_ns) / 1e9;
    double used = process_ns > b->process_ns ? (double)(process_ns - b->process_ns) / 1e9 : 0.0;
    double rest = used > sampling ? used - sampling : 0.0;
    uint64_t taken = samples - b->samples;
    b->wall_ns = wall_ns;
    b->thread_ns = thread_ns;
    b->process_ns = process_ns;
    b->samples = samples;
    if (!(b->share > 0) || !(span > 0)) return rate;
    b->balance_s = clamp(b->balance_s + b->share * span - used, -b->share * DEBT_S, b->share * CREDIT_S);
    /* From 0, not from the first window: the screen's first drawing is a one-off, paid back by
     * the balance, not a cost that recurs. */
    b->others += span / (span + OTHERS_S) * (rest / span - b->others);
    if (taken) {
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
