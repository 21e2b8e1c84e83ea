/*
 * What a sample keeps of the memory it reads (native/remote.c): thousands of ranges read in one
 * sample, far more than its index of them takes in a batch, each found again by any view inside
 * it without another read and with the bytes that were read; fresh readings between them, whose
 * ranges are forgotten at their end. test_remote.py builds and runs it; a broken property
 * prints what broke and exits 1.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define BASE 0x10000000ull
#define SIZE (1u << 22)
#define RANGES 3000
#define FRESH_EVERY 100 /* a fresh reading after this many ranges */
#define FRESH_VIEWS 80  /* ... of this many views of its own */

static uint64_t next(uint64_t *s) { /* xorshift64 */
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static bool same(const uint8_t *view, const uint8_t *bytes, uint64_t addr, uint64_t len) {
    return view && memcmp(view, bytes + (addr - BASE), len) == 0;
}

int main(void) {
    uint8_t *bytes = malloc(SIZE);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < SIZE; i++) bytes[i] = (uint8_t)next(&seed);
    pytop_region region = {BASE, SIZE, bytes};
    memory_image image;
    CHECK(image_init(&image, &region, 1) == PYTOP_OK, "an image of one region");
    remote r;
    remote_init_image(&r, &image);
    static uint64_t at[RANGES], len[RANGES];
    for (int round = 0; round < 3; round++) {
        remote_begin_sample(&r);
        int status;
        for (int i = 0; i < RANGES; i++) {
            len[i] = 8 + next(&seed) % 600;
            at[i] = BASE + next(&seed) % (SIZE - len[i]);
            CHECK(same(remote_view_kept(&r, at[i], len[i], &status), bytes, at[i], len[i]), "round %d: range %d",
                  round, i);
            if (i % FRESH_EVERY != FRESH_EVERY - 1) continue;
            fresh_mark mark = remote_begin_fresh(&r);
            for (int j = 0; j < FRESH_VIEWS; j++) {
                uint64_t a = BASE + next(&seed) % (SIZE - 64);
                CHECK(same(remote_view(&r, a, 64, 0, &status), bytes, a, 64), "round %d: fresh view %d", round, j);
            }
            remote_end_fresh(&r, mark);
        }
        uint32_t reads = r.syscalls;
        for (int i = RANGES - 1; i >= 0; i--) { /* the oldest last: found through the index */
            uint64_t inner = next(&seed) % len[i], n = 1 + next(&seed) % (len[i] - inner);
            CHECK(same(remote_view_kept(&r, at[i] + inner, n, &status), bytes, at[i] + inner, n),
                  "round %d: a view inside range %d", round, i);
        }
        CHECK(r.syscalls == reads, "round %d: %u reads for views of ranges the sample kept", round, r.syscalls - reads);
        /* Views of memory it never read are read, not found in a range that does not hold them. */
        uint64_t outside = BASE + SIZE - 4096;
        CHECK(same(remote_view_kept(&r, outside, 4096, &status), bytes, outside, 4096), "round %d: a last page", round);
    }
    remote_free(&r);
    image_free(&image);
    free(bytes);
    if (!failures) printf("all properties hold\n");
    return failures ? 1 : 0;
}
