/*
 * A memory image read the way process_vm_readv reads a live process: a core file's segments,
 * handed over by the caller as (address, size, bytes) regions. The unwinder's reads go through
 * remote.c either way, so an image exercises the very walk a live process does: --dump of a
 * core file, and the fuzzing of the whole unwinder on mutated images.
 *
 * Reads never leave the regions: a read that runs off one (and not into an adjacent one) is
 * cut there, as the kernel cuts a read at an unmapped page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"

#define MAX_IMAGE_REGIONS (1u << 20)
#define MAX_LOGGED_READS (1u << 16)

int image_init(memory_image *m, const pytop_region *regions, uint32_t count) {
    memset(m, 0, sizeof *m);
    if (!regions || count == 0 || count > MAX_IMAGE_REGIONS) return PYTOP_ERR_ARGS;
    for (uint32_t i = 0; i < count; i++) {
        const pytop_region *r = &regions[i];
        if (r->size == 0 || !r->data || r->address + r->size < r->address) return PYTOP_ERR_ARGS;
        if (i && regions[i - 1].address + regions[i - 1].size > r->address) return PYTOP_ERR_ARGS; /* sorted, apart */
    }
    m->regions = malloc(count * sizeof *m->regions);
    if (!m->regions) return PYTOP_ERR_NOMEM;
    memcpy(m->regions, regions, count * sizeof *m->regions);
    m->count = count;
    return PYTOP_OK;
}

void image_free(memory_image *m) {
    free(m->regions);
    free(m->log);
    memset(m, 0, sizeof *m);
}

/* The region holding `addr`, or NULL. */
static const pytop_region *region_at(const memory_image *m, uint64_t addr) {
    uint32_t lo = 0, hi = m->count;
    while (lo < hi) { /* the first region that starts after addr */
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->regions[mid].address <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const pytop_region *r = &m->regions[lo - 1];
    return addr - r->address < r->size ? r : NULL;
}

/* Copy up to `len` bytes at `addr`, across adjacent regions; returns how many were there. */
static size_t copy_out(const memory_image *m, uint64_t addr, uint8_t *out, size_t len) {
    size_t done = 0;
    while (done < len) {
        const pytop_region *r = region_at(m, addr + done);
        if (!r) break;
        uint64_t at = addr + done - r->address;
        size_t n = r->size - at < len - done ? (size_t)(r->size - at) : len - done;
        memcpy(out + done, r->data + at, n);
        done += n;
    }
    return done;
}

static void log_read(memory_image *m, uint64_t addr, uint64_t len) {
    if (m->log_count >= MAX_LOGGED_READS) return;
    range *log = grow_array(m->log, &m->log_cap, m->log_count + 1ull, sizeof *log, 256);
    if (!log) return;
    m->log = log;
    m->log[m->log_count++] = (range){addr, len, NULL, false, 0};
}

long image_readv(memory_image *m, const struct iovec *local, const struct iovec *remote_iov, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t want = local[i].iov_len < remote_iov[i].iov_len ? local[i].iov_len : remote_iov[i].iov_len;
        uint64_t addr = (uint64_t)(uintptr_t)remote_iov[i].iov_base;
        log_read(m, addr, want);
        size_t got = copy_out(m, addr, local[i].iov_base, want);
        total += got;
        if (got < want) break; /* like the kernel: the first range not read in full ends the call */
    }
    if (total == 0 && n > 0) {
        errno = EFAULT;
        return -1;
    }
    return (long)total;
}

uint32_t image_reads(const memory_image *m, uint64_t *pairs, uint32_t capacity) {
    uint32_t n = m->log_count < capacity ? m->log_count : capacity;
    for (uint32_t i = 0; i < n; i++) {
        pairs[2 * i] = m->log[i].addr;
        pairs[2 * i + 1] = m->log[i].len;
    }
    return m->log_count;
}
