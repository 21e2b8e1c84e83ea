/*
 * Line tables, decoded once per code object into sorted (start offset, line) ranges so that a
 * sample's line lookup is a binary search. Three formats, each a faithful port of CPython's own
 * reader for that version (Objects/codeobject.c):
 *   2.7      co_lnotab: (address increment, line increment) byte pairs, both unsigned
 *            (PyCode_Addr2Line);
 *   3.6-3.9  co_lnotab: (address increment, signed line increment) byte pairs;
 *   3.10     co_linetable: (address delta, signed line delta or -128 for "no line") pairs;
 *   3.11+    location table: variable-length entries with 6-bit varints.
 * The input is untrusted bytes from another process: every read is checked against the end.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct builder {
    line_ranges *out;
    uint32_t cap;
    int status;
} builder;

/* Append [start, ...) -> line; an empty range at the same start is replaced. */
static void emit(builder *b, int32_t start, int32_t line) {
    line_ranges *lr = b->out;
    if (b->status != PYTOP_OK) return;
    if (lr->count && lr->start[lr->count - 1] == start) {
        lr->line[lr->count - 1] = line;
        return;
    }
    if (lr->count && lr->line[lr->count - 1] == line) return; /* same line continues */
    if (lr->count == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 16;
        int32_t *s = realloc(lr->start, cap * sizeof *s);
        if (!s) { b->status = PYTOP_ERR_NOMEM; return; }
        lr->start = s;
        int32_t *l = realloc(lr->line, cap * sizeof *l);
        if (!l) { b->status = PYTOP_ERR_NOMEM; return; }
        lr->line = l;
        b->cap = cap;
    }
    lr->start[lr->count] = start;
    lr->line[lr->count] = line;
    lr->count++;
}

/* 2.7, 3.6-3.9: line = firstlineno + the line increments of every pair whose cumulative address
 * is <= the offset; 2.7's increments are unsigned (3.6 made them signed). */
static void decode_lnotab(builder *b, const uint8_t *p, size_t length, int32_t first, bool is_signed) {
    int64_t addr = 0, line = first;
    emit(b, 0, first);
    for (size_t i = 0; i + 1 < length; i += 2) {
        addr += p[i];
        line += is_signed ? (int8_t)p[i + 1] : p[i + 1];
        if (addr > INT32_MAX || line > INT32_MAX || line < INT32_MIN) break;
        emit(b, (int32_t)addr, (int32_t)line);
    }
    b->out->end = INT32_MAX;
}

/* 3.10: ranges of `p[i]` bytes, each with line += p[i+1] unless it is -128 (no line). */
static void decode_310(builder *b, const uint8_t *p, size_t length, int32_t first) {
    int64_t end = 0, line = first;
    for (size_t i = 0; i + 1 < length; i += 2) {
        int64_t start = end;
        int ldelta = (int8_t)p[i + 1];
        int64_t next_line = ldelta == -128 ? line : line + ldelta;
        if (next_line > INT32_MAX || next_line < INT32_MIN || end + p[i] > INT32_MAX) break; /* ends before it */
        end += p[i];
        line = next_line;
        if (end > start) emit(b, (int32_t)start, ldelta == -128 ? -1 : (int32_t)line);
    }
    b->out->end = (int32_t)end;
}

/* 3.11+ varints: 6 bits per byte, bit 6 says another byte follows. */
static int read_varint(const uint8_t *p, size_t length, size_t *pos, uint32_t *value) {
    uint32_t v = 0;
    for (unsigned shift = 0; shift < 32; shift += 6) {
        if (*pos >= length) return -1;
        uint8_t byte = p[(*pos)++];
        v |= (uint32_t)(byte & 63) << shift;
        if (!(byte & 64)) {
            *value = v;
            return 0;
        }
    }
    return -1;
}

static int read_signed_varint(const uint8_t *p, size_t length, size_t *pos, int32_t *value) {
    uint32_t u;
    if (read_varint(p, length, pos, &u) < 0) return -1;
    *value = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
    return 0;
}

enum { LOC_NONE = 15, LOC_LONG = 14, LOC_NO_COLUMNS = 13, LOC_ONE_LINE0 = 10 };

static void decode_locations(builder *b, const uint8_t *p, size_t length, int32_t first) {
    int64_t end = 0, line = first;
    size_t pos = 0;
    while (pos < length) {
        uint8_t head = p[pos];
        if (!(head & 128)) break; /* every entry starts with the top bit set */
        int code = (head >> 3) & 15;
        pos++;
        int32_t delta = 0;
        if (code == LOC_LONG || code == LOC_NO_COLUMNS) {
            size_t at = pos;
            if (read_signed_varint(p, length, &at, &delta) < 0) break; /* the table ends before it */
        } else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMNS) {
            delta = code - LOC_ONE_LINE0;
        }
        int64_t start = end, next_line = line + delta, entry_bytes = ((head & 7) + 1) * 2;
        if (next_line > INT32_MAX || next_line < INT32_MIN || end + entry_bytes > INT32_MAX) break; /* ends before it */
        end += entry_bytes;
        line = next_line;
        emit(b, (int32_t)start, code == LOC_NONE ? -1 : (int32_t)line);
        while (pos < length && !(p[pos] & 128)) pos++; /* skip the entry's other bytes */
    }
    b->out->end = (int32_t)end;
}

int line_ranges_decode(int format, const uint8_t *table, size_t length, int32_t firstlineno,
                       line_ranges *out) {
    memset(out, 0, sizeof *out);
    out->firstlineno = firstlineno;
    if (length > MAX_LINETABLE_BYTES) return PYTOP_ERR_LIMIT;
    builder b = {out, 0, PYTOP_OK};
    switch (format) {
    case PYTOP_LINES_LNOTAB: decode_lnotab(&b, table, length, firstlineno, true); break;
    case PYTOP_LINES_LNOTAB_27: decode_lnotab(&b, table, length, firstlineno, false); break;
    case PYTOP_LINES_310: decode_310(&b, table, length, firstlineno); break;
    case PYTOP_LINES_LOCATIONS: decode_locations(&b, table, length, firstlineno); break;
    default: return PYTOP_ERR_ARGS;
    }
    if (b.status != PYTOP_OK) line_ranges_free(out);
    return b.status;
}

int32_t line_ranges_lookup(const line_ranges *lr, int32_t offset) {
    if (offset < 0) return lr->firstlineno; /* a frame that has not started yet */
    if (lr->count == 0 || offset < lr->start[0] || offset >= lr->end) return -1;
    uint32_t lo = 0, hi = lr->count;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (lr->start[mid] <= offset) lo = mid;
        else hi = mid;
    }
    return lr->line[lo];
}

void line_ranges_free(line_ranges *lr) {
    free(lr->start);
    free(lr->line);
    lr->start = lr->line = NULL;
    lr->count = 0;
}

int32_t pytop_decode_line(int format, const uint8_t *table, size_t length, int32_t firstlineno,
                          int32_t offset) {
    /* An exact-size copy: in a sanitizer build, any read past the table's end is caught. */
    uint8_t *copy = malloc(length ? length : 1);
    if (!copy) return -1;
    memcpy(copy, table, length);
    line_ranges lr;
    int32_t line = -1;
    if (line_ranges_decode(format, copy, length, firstlineno, &lr) == PYTOP_OK) {
        line = line_ranges_lookup(&lr, offset);
        line_ranges_free(&lr);
    }
    free(copy);
    return line;
}
