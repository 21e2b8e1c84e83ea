/*
 * The engine: one native thread that samples every process handed to it on a steady,
 * jittered schedule, and the API that starts, feeds, drains and stops it (pytop.h).
 *
 * Why a native thread: a sampler that needs Python's GIL is delayed by whatever holds it (the
 * screen, a garbage collection), and its samples come late in bursts. This thread never
 * touches Python. It waits with clock_nanosleep's precision (timer slack 1 ns, so its wake-ups
 * are not moved onto the target's own timer expiries) for the next slot of its schedule
 * (schedule.h): slots that pass while the machine is busy are skipped, never caught up.
 *
 * Do no harm: it runs at normal priority unless asked (--realtime: the lowest real-time
 * priority, given back if it ever uses more than its budget of a core), and it lowers its rate
 * while pytop's whole process uses more than its CPU budget, raising it again when it can.
 *
 * Lifecycle: an unwinder handed over is the sampling thread's alone: it samples it, and frees it
 * when its process ends or when the thread ends. pytop_engine_stop() asks the thread to end and
 * waits with a deadline; pytop_engine_free() refuses while the thread may still run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "engine.h"

#define DEFAULT_PERIOD_S 0.2
#define PERIOD_THREADS 200         /* past this many threads, periods grow in proportion */
#define IDLE_CHECK_S 0.01          /* an idle thread's CPU count is read at least this often */
#define DEFAULT_MIN_RATE 1.0
#define WAIT_SLICE_NS 20000000ull /* a stop is seen within this long */
/* Memory freed in the middle of glibc's heaps stays in the process until trimmed: hours of new
 * code, threads and stacks freed and allocated again, on this thread and the screen's, left
 * pytop's RSS growing though what it held did not (malloc_trim gives back whole free pages). */
#define TRIM_EVERY_NS 30000000000ull

pytop_engine *pytop_engine_new(const pytop_engine_config *config, int *status) {
    if (!config || !(config->rate > 0 && config->rate <= 100000) || !(config->jitter >= 0 && config->jitter <= 0.9) ||
        !(config->max_gap > 0) || config->period < 0 || !(config->cpu_budget >= 0) || !(config->min_rate >= 0)) {
        *status = PYTOP_ERR_ARGS;
        return NULL;
    }
    pytop_engine *e = calloc(1, sizeof *e);
    if (!e) {
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    e->cfg = *config;
    if (e->cfg.period == 0) e->cfg.period = DEFAULT_PERIOD_S;
    if (e->cfg.realtime_budget <= 0) e->cfg.realtime_budget = 0.5;
    if (e->cfg.min_rate <= 0) e->cfg.min_rate = DEFAULT_MIN_RATE;
    e->rate_now = e->cfg.rate;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    /* The sampling thread may run at a real-time priority while a drain holds the lock from a
     * thread that does not: priority inheritance lets the holder finish at the sampler's
     * priority, instead of waiting behind whatever else keeps the cores busy. */
    pthread_mutexattr_t mattr;
    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_setprotocol(&mattr, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&e->lock, &mattr);
    pthread_mutexattr_destroy(&mattr);
    pthread_cond_init(&e->wake, &attr);
    pthread_condattr_destroy(&attr);
    e->drain_sums = aggregator_new();
    e->asked_sums = aggregator_new();
    if (functions_init(&e->functions) != PYTOP_OK || stacks_init(&e->stacks, config->max_stack_nodes, config->max_stack_nodes) != PYTOP_OK ||
        weights_init(&e->weights) != PYTOP_OK || !e->drain_sums || !e->asked_sums) {
        pytop_engine_free(e);
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    *status = PYTOP_OK;
    return e;
}

int pytop_engine_add(pytop_engine *e, pytop_unwinder *u, int32_t whole_life, uint32_t *process) {
    if (!e || !u || !process || !u->pid) return PYTOP_ERR_ARGS; /* an image is read, not sampled */
    pthread_mutex_lock(&e->lock);
    int status = PYTOP_OK;
    pytop_unwinder **adding = NULL;
    if (e->finished || e->stop) status = PYTOP_ERR_STATE;
    else if (!(adding = grow_array(e->adding, &e->adding_cap, e->adding_count + 1ull, sizeof *adding, 4))) status = PYTOP_ERR_NOMEM;
    if (status == PYTOP_OK) {
        e->adding = adding;
        u->whole_life = whole_life != 0;
        e->adding[e->adding_count++] = u;
        *process = e->next_process++;
        if (e->ticks) e->start_up_since_check = true; /* not the first: its start is not sampling's (budget.h) */
        pthread_cond_broadcast(&e->wake);
    }
    pthread_mutex_unlock(&e->lock);
    return status;
}

int pytop_engine_retire(pytop_engine *e, uint32_t process, const char *why) {
    if (!e || !why) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    int status = PYTOP_ERR_STATE;
    if (process < e->process_count && e->processes[process].active && !e->processes[process].retired) {
        engine_process *P = &e->processes[process];
        snprintf(P->error, sizeof P->error, "%s", why);
        __atomic_store_n(&P->retired, true, __ATOMIC_RELEASE);
        status = PYTOP_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return status;
}

int pytop_engine_wait_for_processes(pytop_engine *e, int waiting) {
    if (!e) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    e->waiting = waiting != 0;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
    return PYTOP_OK;
}

/* ---- on the sampling thread --------------------------------------------------------------- */

/* Each idle thread's CPU count is read every IDLE_CHECK_S, whatever the rate. */
static void set_idle_check(pytop_engine *e, engine_process *P) {
    uint64_t idle = (uint64_t)(e->rate_now * IDLE_CHECK_S);
    pytop_set_option(P->u, PYTOP_OPT_IDLE_CHECK, idle > 1 ? (int64_t)idle : 1);
}

/* Unwinders handed over since the last tick join the process list (under the lock). */
static void take_up(pytop_engine *e) {
    uint32_t taken = 0;
    for (; taken < e->adding_count; taken++) {
        engine_process *processes = grow_array(e->processes, &e->process_cap, e->process_count + 1ull,
                                               sizeof *processes, 4);
        if (!processes) break; /* the rest next tick */
        e->processes = processes;
        pytop_unwinder *u = e->adding[taken];
        engine_process *P = &e->processes[e->process_count++];
        memset(P, 0, sizeof *P);
        P->u = u;
        P->pid = u->pid;
        P->active = true;
        P->whole_life = u->whole_life;
        set_idle_check(e, P);
        if (e->cfg.blocking) pytop_set_option(u, PYTOP_OPT_BLOCKING, 1); /* ptrace belongs to this thread */
        /* libdw missing or the process unreadable to it: its Python frames alone (the caller
         * checked pytop_native_available() and said so) */
        if (e->cfg.blocking && e->cfg.native) (void)pytop_set_option(u, PYTOP_OPT_NATIVE, 1);
    }
    if (taken < e->adding_count) memmove(e->adding, e->adding + taken, (e->adding_count - taken) * sizeof *e->adding);
    e->adding_count -= taken;
}

static bool any_active(const pytop_engine *e) {
    for (uint32_t i = 0; i < e->process_count; i++)
        if (e->processes[i].active) return true;
    return false;
}

/* Asked to stop? Read without the lock: the wait below does not hold it. */
static bool stopping(pytop_engine *e) {
    return __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE);
}

/* Wait until the next sample is due or until asked to stop; false when asked to stop. A plain
 * clock_nanosleep, in slices of at most WAIT_SLICE_NS so that a stop is seen that soon: a timed
 * wait on the condition variable came back holding its priority-inheriting mutex, and giving
 * that back cost a second futex call a sample (bench/floor.c's wait, side by side on this VM:
 * ~5-10% of what a wake costs). */
static bool wait_for_slot(pytop_engine *e, sample_schedule *schedule) {
    uint64_t ask = schedule_ask(schedule);
    bool slept = false;
    for (uint64_t now = monotonic_ns(); now < ask && !stopping(e); now = monotonic_ns()) {
        uint64_t until = ask - now > WAIT_SLICE_NS ? now + WAIT_SLICE_NS : ask;
        struct timespec when = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
        slept = until == ask;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, NULL);
    }
    if (slept) schedule_woke(schedule, ask, monotonic_ns());
    return !stopping(e);
}

/* One sample of process i; whether it was read (a failed attempt is not a sample). */
static bool sample_process(pytop_engine *e, uint32_t i, bool full, uint64_t interval_ns) {
    engine_process *P = &e->processes[i];
    pytop_unwinder *u = P->u;
    pytop_sample sample = {0};
    bool retired = __atomic_load_n(&P->retired, __ATOMIC_ACQUIRE);
    if (P->replaced && !retired) return false; /* until Python follows the new program, or not */
    u->os.check_all = full;
    int status = retired ? PYTOP_ERR_GONE : pytop_collect(u, &sample);
    u->os.check_all = false;
    uint64_t began = (uint64_t)(sample.taken_at * 1e9);
    /* A failure of a process that exec'd: the addresses read name nothing now. Not pytop's
     * error, and no attempt is made until the new program is followed (or not: it is retired).
     * (Asked before the lock: it reads a file of /proc.) */
    bool replaced = status != PYTOP_OK && status != PYTOP_ERR_GONE && status != PYTOP_ERR_PERMISSION &&
                    !retired && unwinder_image_replaced(u);
    pthread_mutex_lock(&e->lock);
    if (status == PYTOP_OK) {
        account_codes(e, i); /* first: the stack tree needs each code's function */
        e->stacks.clock++;
        account_sample(e, i, &sample, began, interval_ns, (uint64_t)(e->cfg.max_gap * 1e9));
        account_ends(e, i);
        account_names(e, i, &sample, began);
        if (full) account_period(e, i);
        upkeep_tree(e, full); /* before the lock goes: a drain takes the tree's new nodes */
        e->threads_seen = e->thread_count;
    } else {
        if (!retired) snprintf(P->error, sizeof P->error, "%s", pytop_last_error(u)); /* else: why, already */
        P->error_new = true;
        P->status = status;
        if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION) {
            P->active = false;
            account_ends(e, i);
            P->u = NULL;
        } else if (replaced) {
            P->replaced = true;
            P->error_new = false;
            P->status = PYTOP_OK;
        } else {
            P->d_failed++;
            P->status = PYTOP_OK;
        }
    }
    pthread_mutex_unlock(&e->lock);
    if (!P->active && u) {
        kthreads_free_others(&P->others);
        pytop_close(u);
    }
    return status == PYTOP_OK;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void take_priority(pytop_engine *e) {
    prctl(PR_SET_NAME, (unsigned long)"pytop-sampling", 0, 0, 0); /* for top -H, and for the tests */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (!e->cfg.realtime) return;
    struct sched_param param = {.sched_priority = 1};
    e->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
}

static uint64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sample at `rate` from the next slot on; whether the slots started again. Under the lock. */
static bool set_rate(pytop_engine *e, sample_schedule *schedule, double rate, uint64_t wall) {
    /* (a change of under 2% is not worth restarting the schedule's slots for) */
    if (!(rate < 0.98 * e->rate_now || rate > 1.02 * e->rate_now || (rate == e->cfg.rate && rate != e->rate_now)))
        return false;
    e->rate_now = rate;
    schedule_set_rate(schedule, rate, wall);
    for (uint32_t i = 0; i < e->process_count; i++)
        if (e->processes[i].active) set_idle_check(e, &e->processes[i]);
    return true;
}

/* Once a check is due: the CPU pytop's process used against its budget (the rate follows,
 * budget.c), and the sampling thread's own against its real-time budget (the priority goes
 * back if it is over: it must never starve the target). */
static void check_budget(pytop_engine *e, cpu_budget *b, sample_schedule *schedule, uint64_t samples,
                         uint64_t start_up_ns) {
    uint64_t wall = monotonic_ns();
    if (!budget_due(b, wall)) return;
    uint64_t cpu = thread_cpu_ns(), process = process_cpu_ns(); /* syscalls: the vDSO serves neither */
    double sampling = (double)(cpu - b->thread_ns) / 1e9, span = (double)(wall - b->wall_ns) / 1e9;
    pthread_mutex_lock(&e->lock);
    bool start_up = e->start_up_since_check;
    e->start_up_since_check = false;
    pthread_mutex_unlock(&e->lock);
    double rate = budget_check(b, e->rate_now, wall, cpu, process, samples, start_up_ns, start_up);
    pthread_mutex_lock(&e->lock);
    e->cpu_seconds += sampling;
    if (e->realtime && sampling > e->cfg.realtime_budget * span) {
        struct sched_param param = {.sched_priority = 0};
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);
        e->realtime = false;
    }
    (void)set_rate(e, schedule, rate, wall);
    pthread_mutex_unlock(&e->lock);
}

static void count_tick(pytop_engine *e, uint64_t began, uint64_t due, uint64_t interval, slot_outcome o) {
    pthread_mutex_lock(&e->lock);
    e->ticks++;
    if (e->first_at == 0) e->first_at = (double)began / 1e9;
    e->last_at = (double)began / 1e9;
    e->lag = began > due ? (double)(began - due) / 1e9 : 0.0;
    if (began > due && began - due > e->longest_delay_ns) e->longest_delay_ns = began - due;
    e->late += o.late;
    e->skipped += o.skipped;
    e->slot_ns += (1 + (uint64_t)o.skipped) * interval;
    pthread_mutex_unlock(&e->lock);
}

/* Whether there is something to sample; waits for a first process. Sets the end reason when
 * every process has gone. */
static bool have_work(pytop_engine *e) {
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->stop && (e->process_count == 0 || e->waiting) && e->adding_count == 0 && !any_active(e))
            pthread_cond_wait(&e->wake, &e->lock);
        take_up(e);
        if (e->stop || any_active(e) || !e->waiting) break;
    }
    bool work = !e->stop && any_active(e);
    if (!e->stop && !work && e->process_count) {
        const engine_process *last = &e->processes[e->process_count - 1];
        snprintf(e->end, sizeof e->end, "%s", last->error[0] ? last->error : "the process has exited");
    }
    pthread_mutex_unlock(&e->lock);
    return work;
}

static void run(pytop_engine *e) {
    uint64_t period = (uint64_t)(e->cfg.period * 1e9);
    uint64_t start = monotonic_ns(), next_period = start;
    sample_schedule schedule;
    schedule_init(&schedule, e->cfg.rate, e->cfg.jitter, start, (uint64_t)getpid() * 0x9E3779B97F4A7C15ull);
    cpu_budget budget;
    uint64_t samples = 0, start_up_ns = 0; /* (start_up_ns: a clock, see budget_check) */
    budget_init(&budget, e->cfg.cpu_budget, e->cfg.rate, e->cfg.min_rate, start, thread_cpu_ns(), process_cpu_ns(),
                samples);
    uint64_t next_trim = start + TRIM_EVERY_NS;
    while (have_work(e) && wait_for_slot(e, &schedule)) {
        uint64_t began = monotonic_ns(), due = schedule.due_ns, interval = schedule.interval_ns;
        bool full = began >= next_period;
        bool read = false, first_read = false;
        bool measure = samples == 0 && budget.share > 0; /* the first sample read: what one costs */
        uint64_t cpu_before = measure ? thread_cpu_ns() : 0, start_up_before = start_up_ns;
        for (uint32_t i = 0; i < e->process_count; i++) {
            if (!e->processes[i].active) continue;
            /* A process's first read names every thread and opens every thread's files (a
             * pool of 1,000: ~0.3 s of CPU): attaching's last step, start-up like it (budget.h).
             * Charged to sampling, it made a sample seem a hundred times dearer than the next
             * ones, and the rate sat near the floor for seconds. (sample_no: this thread's.) */
            bool first = e->processes[i].sample_no == 0;
            uint64_t before = first ? thread_cpu_ns() : 0;
            bool ok = sample_process(e, i, full, interval);
            if (first) start_up_ns += thread_cpu_ns() - before;
            else read |= ok;
            first_read |= first;
        }
        /* Past PERIOD_THREADS threads, a period reads so many counts that it is made longer in
         * proportion: its cost must not grow with the threads while a budget lowers the rate. */
        uint32_t threads = e->threads_seen; /* (the sampling thread's own copy: no lock needed) */
        if (full) next_period = began + period * (threads > PERIOD_THREADS ? threads / PERIOD_THREADS : 1);
        /* The slots a first read outlasts are start-up's, not slots a busy machine made pytop
         * skip: the schedule starts again after it (counted skipped at 1,000/s, the seconds
         * of naming a pool's threads said "85% skipped" and showed a false "Behind" banner). */
        slot_outcome outcome = {0};
        bool rated = false;
        if (measure && read) { /* (a first read in the same tick is start-up, not its cost) */
            uint64_t cost = thread_cpu_ns() - cpu_before - (start_up_ns - start_up_before);
            pthread_mutex_lock(&e->lock);
            /* A new rate starts the slots again: the ones this sample outlasted were the rate
             * asked's, which the budget had no cost to judge by yet, not ones the machine took. */
            rated = set_rate(e, &schedule, budget_first_sample(&budget, e->rate_now, (double)cost / 1e9),
                             monotonic_ns());
            pthread_mutex_unlock(&e->lock);
        }
        if (first_read && e->start_up_cpu == 0) { /* (read off the lock: a syscall) */
            double cpu = (double)process_cpu_ns() / 1e9;
            pthread_mutex_lock(&e->lock);
            e->start_up_cpu = cpu;
            pthread_mutex_unlock(&e->lock);
        }
        if (first_read) schedule_restart(&schedule, began, monotonic_ns());
        else if (!rated) outcome = schedule_advance(&schedule, began, monotonic_ns());
        count_tick(e, began, due, interval, outcome);
        if (began >= next_trim) { /* between samples, off the lock: the screen's allocations too */
            malloc_trim(0);
            next_trim = began + TRIM_EVERY_NS;
        }
        /* The budget's cost of a sample is that of the samples read: failed attempts are cheap
         * (a program exec'ing: until it is followed), and counted as samples they doubled the
         * rate while every sample failed. */
        samples += read;
        check_budget(e, &budget, &schedule, samples, start_up_ns);
    }
}

/* When asked to stop: one last sample that reads every thread's figures and closes the period,
 * so the process's CPU time and what was attributed cover the same time. */
static void last_sample(pytop_engine *e) {
    uint64_t interval = (uint64_t)(1e9 / e->rate_now);
    for (uint32_t i = 0; i < e->process_count; i++)
        if (e->processes[i].active && e->processes[i].sample_no) {
            if (e->processes[i].u) e->processes[i].u->os.last = true; /* every count given, none held */
            sample_process(e, i, true, interval);
        }
}

static void *thread_main(void *arg) {
    pytop_engine *e = arg;
    take_priority(e);
    run(e);
    last_sample(e);
    /* Everything this thread owned goes with it. */
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < e->process_count; i++) {
        engine_process *P = &e->processes[i];
        if (P->u) {
            kthreads_free_others(&P->others);
            pytop_close(P->u);
            P->u = NULL;
            P->active = false;
        }
    }
    if (!e->end[0]) snprintf(e->end, sizeof e->end, "sampling stopped");
    e->finished = true;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- from any thread ---------------------------------------------------------------------- */

int pytop_engine_start(pytop_engine *e) {
    if (!e) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    int status = e->started ? PYTOP_ERR_STATE : PYTOP_OK;
    if (status == PYTOP_OK) {
        e->started = true;
        if (pthread_create(&e->thread, NULL, thread_main, e) != 0) {
            e->started = false;
            status = PYTOP_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return status;
}

int pytop_engine_stop(pytop_engine *e, double timeout) {
    if (!e) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    __atomic_store_n(&e->stop, true, __ATOMIC_RELEASE); /* the wait reads it without the lock */
    pthread_cond_broadcast(&e->wake);
    bool started = e->started;
    pthread_mutex_unlock(&e->lock);
    if (!started) return PYTOP_OK;
    if (e->thread == 0) return PYTOP_OK; /* joined already */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double whole = timeout > 0 ? timeout : 0;
    deadline.tv_sec += (time_t)whole;
    deadline.tv_nsec += (long)((whole - (double)(time_t)whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(e->thread, NULL, &deadline) != 0) return PYTOP_ERR_LIMIT;
    e->thread = 0;
    return PYTOP_OK;
}

int pytop_engine_aggregate(pytop_engine *e, const pytop_leaf_tally *tallies, uint32_t count, uint32_t flags,
                           pytop_aggregate *out) {
    if (!e || !out || (count && !tallies)) return PYTOP_ERR_ARGS;
    pthread_mutex_lock(&e->lock);
    int status = aggregate_tallies(e->asked_sums, &e->stacks, &e->functions, tallies, count, flags, out);
    pthread_mutex_unlock(&e->lock);
    return status;
}

int pytop_engine_free(pytop_engine *e) {
    if (!e) return PYTOP_OK;
    if (e->started && e->thread != 0) return PYTOP_ERR_STATE; /* its thread may still use it */
    for (uint32_t i = 0; i < e->adding_count; i++) pytop_close(e->adding[i]);
    for (uint32_t i = 0; i < e->process_count; i++) {
        engine_process *P = &e->processes[i];
        if (P->u) pytop_close(P->u);
        kthreads_free_others(&P->others);
        free(P->ended);
    }
    for (uint32_t i = 0; i < e->thread_count; i++) {
        free(e->threads[i].name);
        stack_path_free(&e->threads[i].path);
    }
    free(e->adding);
    free(e->processes);
    free(e->threads);
    free(e->thread_slots);
    stacks_free(&e->stacks);
    functions_free(&e->functions);
    aggregator_free(e->drain_sums);
    aggregator_free(e->asked_sums);
    free(e->drain_tallies);
    free(e->out_functions);
    free(e->out_nodes);
    free(e->out_evicted);
    free(e->out_retired);
    weights_free(&e->weights);
    free(e->out_processes);
    free(e->out_threads);
    free(e->out_weights);
    free(e->out_standing);
    free(e->out_text.bytes);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake);
    free(e);
    return PYTOP_OK;
}
