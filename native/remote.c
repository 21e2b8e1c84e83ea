/*
 * Reading the target's memory with process_vm_readv, and never anything else (or a memory
 * image, image.c, read the same way).
 *
 * One syscall costs about as much as reading a page, so a sample is built to need few of them:
 * every access is remembered ("touched"), and the next sample starts by reading all of last
 * sample's touched memory in one scattered read (merged per page). When the stack did not
 * change much, the walk then finds everything it needs already in hand. Views handed out during
 * a sample point into the prefetch buffer or into an arena; both live until the next sample.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"

/* In a sanitizer build, bytes of the arena and of the prefetch buffer that no view owns are
 * poisoned, so a walk that reads past the end of what it asked for is caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GUARD_BYTES 16u /* between prefetched ranges */
#define ARENA_BLOCK_BYTES (1u << 20)
#define ARENA_KEEP_BYTES (8u << 20)
#define MERGE_GAP_BYTES 256u
#define WINDOW_BYTES (16u << 10)
#define IOV_BATCH 1024
#define PREFETCH_MAX_FAILURES 8
#define PREFETCH_SLACK_BYTES 512u /* read past what was touched: a stack that grew a little */
#define FRESH_BEFORE_BYTES 256u   /* a fresh view's neighbourhood: an object's pre-header, */
#define FRESH_AFTER_BYTES 1024u   /* and a heap type's fields up to its cached keys */

static uint64_t page_floor(uint64_t a) { return a & ~(uint64_t)(PAGE_SIZE_BYTES - 1); }
static uint64_t page_ceil(uint64_t a) { return page_floor(a + PAGE_SIZE_BYTES - 1); }

fresh_mark remote_begin_fresh(remote *r) {
    fresh_mark before = {r->fresh, r->fresh_since, r->fresh_from};
    r->fresh = true;
    r->fresh_from = r->extra_count;
    r->fresh_since = ++r->fresh_serial ? r->fresh_serial : ++r->fresh_serial; /* never 0 */
    return before;
}

void remote_end_fresh(remote *r, fresh_mark before) {
    /* What was read afresh is forgotten once no fresh reading goes on: a view of it stays valid
     * until the next sample, but the list of ranges kept is searched in order, and a sample
     * that names 2,000 new threads reads afresh some 10,000 times (every later view missed
     * the prefetch only to search them all: a sample of a pool took 5 s). */
    if (!before.fresh) r->extra_count = r->fresh_from;
    if (r->extra_indexed > r->extra_count) r->extra_indexed = 0; /* (never: nothing is indexed while fresh) */
    r->fresh = before.fresh;
    r->fresh_from = before.from;
    r->fresh_since = before.since;
}

void remote_init(remote *r, int pid) {
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->failure_limit = MAX_FAILED_READS_PER_SAMPLE;
}

void remote_init_image(remote *r, memory_image *image) {
    remote_init(r, 0);
    r->image = image;
}

/* The one place target memory is read: the process, or the image standing in for it. */
static ssize_t source_readv(remote *r, const struct iovec *local, const struct iovec *remote_iov, size_t n) {
    if (r->image) return image_readv(r->image, local, remote_iov, n);
    return process_vm_readv(r->pid, local, n, remote_iov, n, 0);
}

static void arena_release(remote *r, size_t keep) {
    arena_block **link = &r->arena;
    size_t kept = 0;
    while (*link) {
        arena_block *b = *link;
        if (kept + b->size <= keep) {
            b->used = 0;
            POISON(b->bytes, b->size);
            kept += b->size;
            link = &b->next;
        } else {
            *link = b->next;
            UNPOISON(b->bytes, b->size);
            free(b);
        }
    }
    r->arena_total = 0;
}

void remote_free(remote *r) {
    arena_release(r, 0);
    free(r->touched);
    free(r->ranges);
    free(r->ahead);
    free(r->extra);
    free(r->extra_keys);
    UNPOISON(r->prefetch, r->prefetch_cap);
    free(r->prefetch);
    memset(r, 0, sizeof *r);
}

static uint8_t *arena_alloc(remote *r, size_t len) {
    if (r->arena_total + len > MAX_ARENA_BYTES) return NULL;
    size_t step = (len + 7 + GUARD_BYTES) & ~(size_t)7; /* aligned, with a poisoned gap */
    arena_block *b = r->arena;
    while (b && b->size - b->used < step) b = b->next;
    if (!b) {
        size_t size = step > ARENA_BLOCK_BYTES ? step : ARENA_BLOCK_BYTES;
        b = malloc(sizeof *b + size);
        if (!b) return NULL;
        b->size = size;
        b->used = 0;
        POISON(b->bytes, size);
        b->next = r->arena;
        r->arena = b;
    }
    uint8_t *p = b->bytes + b->used;
    b->used += step;
    r->arena_total += len;
    UNPOISON(p, len);
    return p;
}

void remote_allow_failures(remote *r, uint32_t count) {
    uint64_t limit = (uint64_t)r->failed_reads + count;
    r->failure_limit = limit < MAX_FAILED_READS_PER_SAMPLE ? (uint32_t)limit : MAX_FAILED_READS_PER_SAMPLE;
}

int remote_read(remote *r, uint64_t addr, void *buf, size_t len) {
    if (len == 0) return PYTOP_OK;
    if (len > MAX_READ_BYTES) return PYTOP_ERR_LIMIT;
    if (addr == 0 || addr + len < addr || addr >= (1ull << 47)) return PYTOP_ERR_CORRUPT;
    if (r->failed_reads >= r->failure_limit) return PYTOP_ERR_LIMIT; /* chasing garbage: stop */
    struct iovec local = {buf, len};
    struct iovec remote_iov = {(void *)(uintptr_t)addr, len};
    r->syscalls++;
    ssize_t n = source_readv(r, &local, &remote_iov, 1);
    int status = n < 0 ? status_from_errno(errno) : (size_t)n == len ? PYTOP_OK : PYTOP_ERR_READ;
    if (status == PYTOP_ERR_READ) r->failed_reads++;
    return status;
}

/* Read up to IOV_BATCH ranges from `first`; returns how many were attempted, or -status. */
static long readv_batch(remote *r, const range *want, uint8_t **bufs, size_t count, bool *ok) {
    struct iovec local[IOV_BATCH], remote_iov[IOV_BATCH];
    size_t n = count < IOV_BATCH ? count : IOV_BATCH;
    for (size_t i = 0; i < n; i++) {
        local[i] = (struct iovec){bufs[i], want[i].len};
        remote_iov[i] = (struct iovec){(void *)(uintptr_t)want[i].addr, want[i].len};
    }
    r->syscalls++;
    ssize_t got = source_readv(r, local, remote_iov, n);
    if (got < 0) {
        int status = status_from_errno(errno);
        if (status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION) return -status;
        ok[0] = false; /* the first range failed; the kernel stops there */
        return 1;
    }
    /* The kernel stops at the first range it cannot read in full. */
    size_t done = 0;
    uint64_t left = (uint64_t)got;
    while (done < n && left >= want[done].len) {
        ok[done] = true;
        left -= want[done].len;
        done++;
    }
    if (done < n) {
        ok[done] = false;
        done++;
    }
    return (long)done;
}

int remote_readv(remote *r, const range *want, uint8_t **bufs, size_t count, bool *ok) {
    size_t i = 0;
    int failures = 0;
    while (i < count) {
        long done = readv_batch(r, want + i, bufs + i, count - i, ok + i);
        if (done < 0) return (int)-done;
        if (!ok[i + done - 1]) failures++;
        i += (size_t)done;
        if (failures >= PREFETCH_MAX_FAILURES) {
            for (; i < count; i++) ok[i] = false;
        }
    }
    return PYTOP_OK;
}

static void track(remote *r, uint64_t addr, uint64_t len, bool grows) {
    if (r->untracked) return;
    /* Walks touch neighbouring memory in a row (frames in a chunk): grow the last entry when
     * the new access shares its pages, so the list stays short and nearly sorted. */
    if (r->touched_count) {
        range *last = &r->touched[r->touched_count - 1];
        uint64_t end = addr + len, last_end = last->addr + last->len;
        if (addr <= last_end + MERGE_GAP_BYTES && end + MERGE_GAP_BYTES >= last->addr) {
            uint64_t lo = addr < last->addr ? addr : last->addr;
            uint64_t hi = end > last_end ? end : last_end;
            if (hi - lo <= MAX_READ_BYTES) {
                last->addr = lo;
                last->len = hi - lo;
                last->grows |= grows;
                return;
            }
        }
    }
    if (r->touched_count >= MAX_PREFETCH_RANGES) return;
    range *touched = grow_array(r->touched, &r->touched_cap, r->touched_count + 1ull, sizeof *touched, 64);
    if (!touched) return;
    r->touched = touched;
    r->touched[r->touched_count++] = (range){addr, len, NULL, grows, 0};
}

static int by_address(const void *a, const void *b) {
    uint64_t x = ((const range *)a)->addr, y = ((const range *)b)->addr;
    return x < y ? -1 : x > y;
}

static void sort_ranges(range *v, size_t n) {
    size_t unsorted = 0;
    for (size_t i = 1; i < n && unsorted < 16; i++) unsorted += v[i].addr < v[i - 1].addr;
    if (unsorted == 0) return; /* walks touch memory in the same order sample after sample */
    if (n > 24) {
        qsort(v, n, sizeof *v, by_address);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        range x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].addr > x.addr) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* Merge last sample's touched ranges into prefetch ranges. */
static size_t plan_prefetch(remote *r) {
    sort_ranges(r->touched, r->touched_count);
    size_t n = 0;
    for (size_t i = 0; i < r->touched_count; i++) {
        uint64_t a = r->touched[i].addr, e = a + r->touched[i].len;
        if (n) {
            range *cur = &r->ranges[n - 1];
            uint64_t cur_end = cur->addr + cur->len;
            /* Near: a small gap, or no page more than the two would read apart (the same page,
             * or the next one): each range in a call costs about as much as a page. */
            bool near = a <= cur_end + MERGE_GAP_BYTES || page_floor(a) <= page_floor(cur_end - 1) + PAGE_SIZE_BYTES;
            if (near && (e > cur_end ? e : cur_end) - cur->addr <= MAX_READ_BYTES) {
                if (e > cur_end) cur->len = e - cur->addr;
                cur->grows |= r->touched[i].grows;
                continue;
            }
        }
        r->ranges[n++] = (range){a, e - a, NULL, r->touched[i].grows, 0};
    }
    /* A little more than was touched catches stacks that grew since last time; not to the end
     * of the page: with a hundred threads that would copy hundreds of KiB every sample. */
    for (size_t i = 0; i < n; i++) {
        if (!r->ranges[i].grows) continue;
        uint64_t end = r->ranges[i].addr + r->ranges[i].len + PREFETCH_SLACK_BYTES;
        uint64_t page_end = page_ceil(r->ranges[i].addr + r->ranges[i].len);
        if (end > page_end) end = page_end > r->ranges[i].addr + r->ranges[i].len ? page_end : end;
        if (i + 1 < n && end > r->ranges[i + 1].addr) end = r->ranges[i + 1].addr;
        r->ranges[i].len = end - r->ranges[i].addr;
    }
    return n;
}

int remote_begin_sample(remote *r) {
    arena_release(r, ARENA_KEEP_BYTES);
    r->extra_count = 0;
    r->extra_indexed = 0;
    r->ahead_count = 0;
    r->ahead_hit = 0;
    r->syscalls = 0;
    r->failed_reads = 0;
    r->failure_limit = MAX_FAILED_READS_PER_SAMPLE;
    r->range_count = 0;
    if (r->touched_count == 0) return PYTOP_OK;
    if (r->range_cap < r->touched_count) {
        range *grown = realloc(r->ranges, r->touched_count * sizeof *grown);
        if (!grown) return PYTOP_ERR_NOMEM;
        r->ranges = grown;
        r->range_cap = r->touched_count;
    }
    size_t n = plan_prefetch(r);
    r->touched_count = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += r->ranges[i].len + GUARD_BYTES;
    if (total > MAX_ARENA_BYTES) return PYTOP_OK; /* too much to guess at; read on demand */
    if (total > r->prefetch_cap) {
        UNPOISON(r->prefetch, r->prefetch_cap);
        uint8_t *grown = realloc(r->prefetch, total);
        if (!grown) return PYTOP_ERR_NOMEM;
        r->prefetch = grown;
        r->prefetch_cap = total;
    }
    uint8_t **bufs = malloc(n * (sizeof *bufs + sizeof(bool)));
    if (!bufs) return PYTOP_ERR_NOMEM;
    bool *ok = (bool *)(bufs + n);
    size_t off = 0;
    POISON(r->prefetch, r->prefetch_cap);
    for (size_t i = 0; i < n; i++) {
        bufs[i] = r->prefetch + off;
        UNPOISON(bufs[i], r->ranges[i].len);
        off += r->ranges[i].len + GUARD_BYTES;
    }
    int status = remote_readv(r, r->ranges, bufs, n, ok);
    if (status == PYTOP_OK) {
        for (size_t i = 0; i < n; i++) r->ranges[i].data = ok[i] ? bufs[i] : NULL;
        r->range_count = n;
    }
    free(bufs);
    return status;
}

static bool holds(const range *c, uint64_t addr, uint64_t len) {
    return c->data && addr >= c->addr && addr + len <= c->addr + c->len;
}

/* The ranges kept this sample, indexed by address: a view that misses the prefetch looks for
 * them, and a sample that reads many stacks whole keeps thousands (a pool of 2,000 threads,
 * attached: searched in order, they were a seventh of the first read). The newest are searched
 * in order, the rest through the index, sorted by address, each key with the furthest end of
 * the ranges up to it: a range ending at or past the view's end and starting at or before it
 * is one that holds it. */
typedef struct extra_key {
    uint64_t addr;
    uint64_t reach; /* the furthest end of the ranges of this key and those before it */
    uint32_t at;    /* its index in `extra` */
} extra_key;

#define INDEX_BATCH 64 /* ranges searched in order before they are put in the index */

static int key_order(const void *a, const void *b) {
    const extra_key *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The ranges kept since the last call join the index: sorted, merged into it, reaches again. */
static void index_extras(remote *r) {
    uint32_t old = r->extra_indexed, n = r->extra_count, added = n - old;
    extra_key *keys = grow_array(r->extra_keys, &r->extra_keys_cap, (uint64_t)n + added, sizeof *keys, 256);
    if (!keys) return; /* still correct: they are searched in order */
    r->extra_keys = keys;
    extra_key *batch = keys + n; /* sorted after the index, then merged into it from the back */
    for (uint32_t i = 0; i < added; i++) batch[i] = (extra_key){r->extra[old + i].addr, 0, old + i};
    qsort(batch, added, sizeof *batch, key_order);
    for (uint32_t a = old, b = added, out = n; b > 0;)
        keys[--out] = a > 0 && key_order(&keys[a - 1], &batch[b - 1]) > 0 ? keys[--a] : batch[--b];
    uint64_t reach = 0;
    for (uint32_t i = 0; i < n; i++) {
        const range *c = &r->extra[keys[i].at];
        if (c->addr + c->len > reach) reach = c->addr + c->len;
        keys[i].reach = reach;
    }
    r->extra_indexed = n;
}

static const uint8_t *lookup_indexed(const remote *r, uint64_t addr, uint64_t len) {
    const extra_key *keys = r->extra_keys;
    size_t lo = 0, hi = r->extra_indexed;
    while (lo < hi) { /* the first key past addr */
        size_t mid = (lo + hi) / 2;
        if (keys[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    for (size_t j = lo; j > 0 && keys[j - 1].reach >= addr + len; j--) { /* one of these holds it */
        const range *c = &r->extra[keys[j - 1].at];
        if (holds(c, addr, len)) return c->data + (addr - c->addr);
    }
    return NULL;
}

/* A range kept since `from` that holds the view: the newest first (a walk reads what it just
 * kept), then, when all are asked for, the index. */
static const uint8_t *lookup_extra(const remote *r, size_t from, uint64_t addr, uint64_t len) {
    size_t indexed = from == 0 ? r->extra_indexed : 0;
    for (size_t i = r->extra_count; i > from && i > indexed; i--) {
        const range *c = &r->extra[i - 1];
        if (addr >= c->addr && addr + len <= c->addr + c->len) return c->data + (addr - c->addr);
    }
    return indexed ? lookup_indexed(r, addr, len) : NULL;
}

/* First range of sorted `v` (n of them) that starts after `addr`. */
static size_t first_after(const range *v, size_t n, uint64_t addr) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Read ahead, and (while reading afresh) during this fresh reading or one nested in it. */
static bool ahead_holds(const remote *r, const range *c, uint64_t addr, uint64_t len) {
    return holds(c, addr, len) && (!r->fresh || c->fresh_in >= r->fresh_since);
}

static const uint8_t *lookup_ahead(remote *r, uint64_t addr, uint64_t len) {
    if (r->ahead_hit < r->ahead_count && ahead_holds(r, &r->ahead[r->ahead_hit], addr, len))
        return r->ahead[r->ahead_hit].data + (addr - r->ahead[r->ahead_hit].addr);
    size_t i = first_after(r->ahead, r->ahead_count, addr);
    if (i == 0 || !ahead_holds(r, &r->ahead[i - 1], addr, len)) return NULL;
    r->ahead_hit = i - 1;
    return r->ahead[i - 1].data + (addr - r->ahead[i - 1].addr);
}

static const uint8_t *lookup(remote *r, uint64_t addr, uint64_t len) {
    if (r->fresh) {
        const uint8_t *ahead = lookup_ahead(r, addr, len);
        return ahead ? ahead : lookup_extra(r, r->fresh_from, addr, len);
    }
    /* Walks read neighbours in a row: try the range of the last hit first. */
    if (r->last_hit < r->range_count && holds(&r->ranges[r->last_hit], addr, len))
        return r->ranges[r->last_hit].data + (addr - r->ranges[r->last_hit].addr);
    size_t lo = first_after(r->ranges, r->range_count, addr);
    if (lo > 0 && holds(&r->ranges[lo - 1], addr, len)) {
        r->last_hit = lo - 1;
        return r->ranges[lo - 1].data + (addr - r->ranges[lo - 1].addr);
    }
    const uint8_t *ahead = lookup_ahead(r, addr, len);
    return ahead ? ahead : lookup_extra(r, 0, addr, len);
}

static const uint8_t *read_into_arena(remote *r, uint64_t addr, size_t len, int *status) {
    uint8_t *buf = arena_alloc(r, len);
    if (!buf) {
        *status = PYTOP_ERR_LIMIT;
        return NULL;
    }
    *status = remote_read(r, addr, buf, len);
    return *status == PYTOP_OK ? buf : NULL;
}

static void keep_extra(remote *r, uint64_t addr, size_t len, const uint8_t *data) {
    if (r->extra_count >= MAX_PREFETCH_RANGES) return; /* still correct: later views read again */
    range *extra = grow_array(r->extra, &r->extra_cap, r->extra_count + 1ull, sizeof *extra, 16);
    if (!extra) return;
    r->extra = extra;
    r->extra[r->extra_count++] = (range){addr, len, data, false, 0};
    /* Not while reading afresh: what it keeps is forgotten at its end (remote_end_fresh). */
    if (!r->fresh && r->extra_count - r->extra_indexed >= INDEX_BATCH) index_extras(r);
}

static bool bad_request(uint64_t addr, size_t len, int *status) {
    if (len == 0 || len > MAX_READ_BYTES || addr == 0 || addr + len < addr) {
        *status = len > MAX_READ_BYTES ? PYTOP_ERR_LIMIT : PYTOP_ERR_CORRUPT;
        return true;
    }
    *status = PYTOP_OK;
    return false;
}

void remote_prefetch_also(remote *r, uint64_t addr, size_t len) {
    int status;
    bool untracked = r->untracked;
    r->untracked = false;
    if (!bad_request(addr, len, &status)) track(r, addr, len, false);
    r->untracked = untracked;
}

/* The view of [addr, addr + len) as part of the window [start, end) around it, read in one go
 * and kept for the views after it; the view alone when the window is not all mapped (or is no
 * larger than the view, or too large to read). */
static const uint8_t *read_window(remote *r, uint64_t start, uint64_t end, uint64_t addr, size_t len, int *status) {
    if (start && start <= addr && end >= addr + len && end - start > len && end - start <= MAX_READ_BYTES) {
        int window_status;
        const uint8_t *w = read_into_arena(r, start, end - start, &window_status);
        if (w) {
            keep_extra(r, start, end - start, w);
            return w + (addr - start);
        }
        if (window_status == PYTOP_ERR_GONE || window_status == PYTOP_ERR_PERMISSION) {
            *status = window_status;
            return NULL;
        }
    }
    return read_into_arena(r, addr, len, status);
}

/* A view read afresh (see remote_begin_fresh), with its neighbourhood on the same pages, kept
 * until the fresh reading ends: reads from fresh memory follow pointers from object to object
 * (a thread's name: a dict's header, its keys, an int; a Thread, its type, its values, a str),
 * each object's fields a few words apart, and one syscall costs about as much as a page of
 * copying. The bytes are as fresh as the first view's: no older than this fresh reading. */
static const uint8_t *read_fresh_neighbourhood(remote *r, uint64_t addr, size_t len, int *status) {
    uint64_t start = addr > FRESH_BEFORE_BYTES ? addr - FRESH_BEFORE_BYTES : 0;
    uint64_t end = addr + len + FRESH_AFTER_BYTES < addr + len ? addr + len : addr + len + FRESH_AFTER_BYTES;
    if (start < page_floor(addr)) start = page_floor(addr); /* only the pages the view needs anyway */
    if (end > page_ceil(addr + len) || end < addr + len) end = page_ceil(addr + len);
    return read_window(r, start, end, addr, len, status);
}

/* A checked request's view from what the sample holds (NULL: none), tracked as `flags` say. */
static const uint8_t *tracked_lookup(remote *r, uint64_t addr, size_t len, int flags) {
    if (flags & VIEW_TRACK) track(r, addr, len, flags & VIEW_FRAME);
    return lookup(r, addr, len);
}

const uint8_t *remote_view(remote *r, uint64_t addr, size_t len, int flags, int *status) {
    if (bad_request(addr, len, status)) return NULL;
    const uint8_t *hit = tracked_lookup(r, addr, len, flags);
    if (hit) return hit;
    return r->fresh ? read_fresh_neighbourhood(r, addr, len, status) : read_into_arena(r, addr, len, status);
}

const uint8_t *remote_view_kept(remote *r, uint64_t addr, size_t len, int *status) {
    if (bad_request(addr, len, status)) return NULL;
    track(r, addr, len, false);
    const uint8_t *hit = lookup(r, addr, len);
    if (hit) return hit;
    const uint8_t *data = read_into_arena(r, addr, len, status);
    if (data) keep_extra(r, addr, len, data);
    return data;
}

const uint8_t *remote_view_if_cached(remote *r, uint64_t addr, size_t len) {
    int status;
    if (bad_request(addr, len, &status)) return NULL;
    bool untracked = r->untracked; /* asked for by any thread: kept, whichever thread is read next */
    r->untracked = false;
    track(r, addr, len, false);
    r->untracked = untracked;
    return lookup(r, addr, len);
}

const uint8_t *remote_view_if_held(remote *r, uint64_t addr, size_t len, int flags) {
    int status;
    return bad_request(addr, len, &status) ? NULL : tracked_lookup(r, addr, len, flags);
}

bool remote_holds(remote *r, uint64_t addr, size_t len) {
    int status;
    return !bad_request(addr, len, &status) && lookup(r, addr, len) != NULL;
}

int remote_keep_many(remote *r, const uint64_t *addrs, size_t count, size_t len) {
    if (count == 0 || len == 0 || len > MAX_READ_BYTES) return PYTOP_OK;
    range *want = malloc(count * (sizeof *want + sizeof(uint8_t *) + sizeof(bool)));
    if (!want) return PYTOP_ERR_NOMEM;
    uint8_t **bufs = (uint8_t **)(want + count);
    bool *ok = (bool *)(bufs + count);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        int status;
        if (bad_request(addrs[i], len, &status) || lookup(r, addrs[i], len)) continue;
        uint8_t *buf = arena_alloc(r, len);
        if (!buf) break;
        want[n] = (range){addrs[i], len, NULL, false, 0}; /* untracked: the next sample has other threads due */
        bufs[n++] = buf;
    }
    int status = n ? remote_readv(r, want, bufs, n, ok) : PYTOP_OK;
    for (size_t i = 0; status == PYTOP_OK && i < n; i++)
        if (ok[i]) keep_extra(r, want[i].addr, len, bufs[i]);
    free(want);
    return status;
}

/* Does a region read ahead before overlap [addr, addr + len)? */
/* The parts of sorted, merged `want` (n of them) that no region read ahead holds, into `out`
 * (room for n + r->ahead_count): each part read once. (Skipped whole when they overlapped a
 * region, the ranges of a second deep thread read ahead in one sample, whose frame objects share
 * pages with the first's, were read a frame at a time: 200-500 syscalls for a sample that found
 * two of three threads 2,000 frames deep moved, on a loaded machine.) */
static size_t ahead_gaps(const remote *r, const range *want, size_t n, range *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = want[i].addr, end = want[i].addr + want[i].len;
        size_t j = first_after(r->ahead, r->ahead_count, at);
        if (j > 0) j--; /* the region that may start before `at` and reach into it */
        for (; j < r->ahead_count && at < end; j++) {
            const range *c = &r->ahead[j];
            if (c->addr + c->len <= at) continue;
            if (c->addr >= end) break;
            if (c->addr > at) out[k++] = (range){at, c->addr - at, NULL, false, 0};
            at = c->addr + c->len;
        }
        if (at < end) out[k++] = (range){at, end - at, NULL, false, 0};
    }
    return k;
}

/* Sort `want` and merge the regions that overlap or touch; returns how many are left. */
static size_t merge_sorted(range *want, size_t count) {
    qsort(want, count, sizeof *want, by_address);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t end = want[i].addr + want[i].len;
        if (n && want[i].addr <= want[n - 1].addr + want[n - 1].len &&
            end - want[n - 1].addr <= MAX_READ_BYTES) {
            if (end > want[n - 1].addr + want[n - 1].len) want[n - 1].len = end - want[n - 1].addr;
            continue;
        }
        want[n++] = want[i];
    }
    return n;
}

/* Reading afresh: drop what regions read ahead before this fresh reading overlap of sorted
 * `want` (n of them), so that the fresh ones take their place (the list stays apart). */
static void drop_older_ahead(remote *r, const range *want, size_t n) {
    size_t kept = 0, w = 0;
    for (size_t i = 0; i < r->ahead_count; i++) {
        const range *c = &r->ahead[i];
        while (w < n && want[w].addr + want[w].len <= c->addr) w++;
        bool overlapped = w < n && want[w].addr < c->addr + c->len;
        if (!overlapped || c->fresh_in >= r->fresh_since) r->ahead[kept++] = *c;
    }
    r->ahead_count = (uint32_t)kept;
    r->ahead_hit = 0;
}

int remote_read_ahead(remote *r, range *want, size_t count) {
    if (count == 0) return PYTOP_OK;
    count = merge_sorted(want, count);
    if (r->fresh) drop_older_ahead(r, want, count);
    range *parts = malloc((count + r->ahead_count) * sizeof *parts);
    if (!parts) return PYTOP_ERR_NOMEM;
    size_t part_count = ahead_gaps(r, want, count, parts);
    size_t n = 0;
    for (size_t i = 0; i < part_count; i++) {
        int status;
        if (bad_request(parts[i].addr, parts[i].len, &status) || lookup(r, parts[i].addr, parts[i].len)) continue;
        uint8_t *buf = arena_alloc(r, parts[i].len);
        if (!buf) break; /* the sample's bound: later views read what they need */
        parts[n] = parts[i];
        parts[n].fresh_in = r->fresh ? r->fresh_since : 0;
        parts[n++].data = buf;
    }
    if (n == 0) {
        free(parts);
        return PYTOP_OK;
    }
    want = parts;
    uint8_t **bufs = malloc(n * (sizeof *bufs + sizeof(bool)));
    range *merged = bufs ? grow_array(r->ahead, &r->ahead_cap, (uint64_t)r->ahead_count + n, sizeof *merged, 64) : NULL;
    if (!merged) {
        free(bufs);
        free(parts);
        return PYTOP_ERR_NOMEM;
    }
    r->ahead = merged;
    bool *ok = (bool *)(bufs + n);
    for (size_t i = 0; i < n; i++) bufs[i] = (uint8_t *)want[i].data;
    int status = remote_readv(r, want, bufs, n, ok);
    size_t kept = 0;
    for (size_t i = 0; status == PYTOP_OK && i < n; i++)
        if (ok[i]) want[kept++] = want[i];
    free(bufs);
    /* Both lists are sorted and apart from each other: merge them from the back, in place. */
    size_t a = r->ahead_count, b = kept, out = a + b;
    while (b > 0) {
        if (a > 0 && r->ahead[a - 1].addr > want[b - 1].addr) r->ahead[--out] = r->ahead[--a];
        else r->ahead[--out] = want[--b];
    }
    r->ahead_count += (uint32_t)kept;
    r->ahead_hit = 0;
    free(parts);
    return status;
}

const uint8_t *remote_view_window(remote *r, uint64_t addr, size_t len, uint64_t floor, int *status) {
    if (bad_request(addr, len, status)) return NULL;
    track(r, addr, len, true);
    const uint8_t *hit = lookup(r, addr, len);
    if (hit) return hit;
    /* A walk outwards goes down in memory: read the window below as well, in one go, down to
     * the floor. Without one (a frame outside the current chunk: an older chunk's, a
     * generator's, or a shim on the C stack, which a thread whose GIL turn came has below its
     * frames every time) only down to the page's start: a C stack's pages below are not
     * frames, and each costs as much to read as a syscall. */
    uint64_t end = addr + len;
    uint64_t start = page_floor(addr);
    if (floor) {
        start = start > WINDOW_BYTES ? start - WINDOW_BYTES : 0;
        if (start < floor) start = floor;
    }
    return read_window(r, start, end, addr, len, status);
}
