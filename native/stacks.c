/*
 * The engine's table of unique stacks: every distinct (process, kind, frames) gets a small id,
 * once. A sample then refers to stacks by id, and Python learns each stack's frames once, from
 * the drain in which it first appears.
 *
 * Memory is bounded: past `max_frames` frames in all, a new stack is not stored but counted
 * and given its process's overflow stack (shown as such), so hours of a target whose stacks
 * never repeat cannot grow the table without end.
 */
#include <string.h>

#include "internal.h"

#define DEFAULT_MAX_FRAMES (4u << 20) /* 32 MiB of frames */

int stacks_init(stack_table *t, uint32_t max_frames) {
    memset(t, 0, sizeof *t);
    t->max_frames = max_frames ? max_frames : DEFAULT_MAX_FRAMES;
    t->slot_mask = 4095;
    t->slots = calloc(t->slot_mask + 1, sizeof *t->slots);
    return t->slots ? PYTOP_OK : PYTOP_ERR_NOMEM;
}

void stacks_free(stack_table *t) {
    free(t->stacks);
    free(t->slots);
    free(t->frames);
    memset(t, 0, sizeof *t);
}

static uint64_t hash_stack(uint32_t process, uint32_t kind, const pytop_frame *frames, uint32_t count) {
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)process << 32 | kind);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t v = (uint64_t)frames[i].code_id << 32 | (uint32_t)frames[i].line;
        h = (h ^ v) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h * 0x9E3779B97F4A7C15ull;
}

static bool same(const stack_table *t, const stack_record *r, uint64_t hash, uint32_t process, uint32_t kind,
                 const pytop_frame *frames, uint32_t count) {
    return r->hash == hash && r->process == process && r->kind == kind && r->count == count &&
           (count == 0 || memcmp(t->frames + r->first, frames, count * sizeof *frames) == 0);
}

static int grow_slots(stack_table *t) {
    uint32_t mask = t->slot_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (!slots) return PYTOP_ERR_NOMEM;
    for (uint32_t id = 1; id <= t->count; id++) {
        uint32_t i = (uint32_t)(t->stacks[id - 1].hash >> 32) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->slot_mask = mask;
    return PYTOP_OK;
}

static uint32_t add(stack_table *t, uint64_t hash, uint32_t process, uint32_t kind, const pytop_frame *frames,
                    uint32_t count, uint32_t slot) {
    stack_record *stacks = grow_array(t->stacks, &t->cap, t->count + 1ull, sizeof *stacks, 256);
    if (!stacks) return 0;
    t->stacks = stacks;
    pytop_frame *all = grow_array(t->frames, &t->frame_cap, (uint64_t)t->frame_count + count, sizeof *all, 4096);
    if (!all) return 0;
    t->frames = all;
    if (count) memcpy(t->frames + t->frame_count, frames, count * sizeof *frames);
    t->stacks[t->count] = (stack_record){hash, t->frame_count, count, process, kind};
    t->frame_count += count;
    t->slots[slot] = ++t->count;
    return t->count;
}

uint32_t stacks_intern(stack_table *t, uint32_t process, uint32_t kind, const pytop_frame *frames,
                       uint32_t count) {
    if ((t->count + 1) * 2 > t->slot_mask && grow_slots(t) != PYTOP_OK) return 0;
    uint64_t hash = hash_stack(process, kind, frames, count);
    uint32_t i = (uint32_t)(hash >> 32) & t->slot_mask;
    for (; t->slots[i]; i = (i + 1) & t->slot_mask)
        if (same(t, &t->stacks[t->slots[i] - 1], hash, process, kind, frames, count)) return t->slots[i];
    if ((uint64_t)t->frame_count + count > t->max_frames && kind != PYTOP_STACK_OVERFLOW) {
        t->dropped++;
        return stacks_intern(t, process, PYTOP_STACK_OVERFLOW, frames, 0);
    }
    return add(t, hash, process, kind, frames, count, i);
}

const stack_record *stacks_get(const stack_table *t, uint32_t id) {
    return id >= 1 && id <= t->count ? &t->stacks[id - 1] : NULL;
}
