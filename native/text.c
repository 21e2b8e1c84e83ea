/*
 * CPython str objects (PEP 393) in the target, turned into UTF-8 here.
 *
 * A str is compact ASCII (data right after PyASCIIObject), compact non-ASCII (after
 * PyCompactUnicodeObject, 1, 2 or 4 bytes per character) or, rarely, a legacy object with a
 * data pointer. The state bit positions come from the layout. One read fetches the header and
 * the start of the data together; long strings take a second read.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SPECULATIVE_DATA_BYTES 192

static uint32_t as_scalar(uint32_t cp) {
    /* Lone surrogates and values past Unicode are not text. */
    return (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF ? 0xFFFD : cp;
}

static size_t utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

static size_t put_utf8(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int64_t decode_text(int kind, const uint8_t *data, size_t data_length, size_t count,
                           char *out, size_t capacity) {
    if ((kind != 1 && kind != 2 && kind != 4) || capacity == 0) return -1;
    if (count > data_length / (size_t)kind) return -1;
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t cp;
        if (kind == 1) {
            cp = data[i];
        } else if (kind == 2) {
            uint16_t v;
            memcpy(&v, data + 2 * i, 2);
            cp = v;
        } else {
            memcpy(&cp, data + 4 * i, 4);
        }
        cp = as_scalar(cp);
        if (used + utf8_length(cp) + 1 > capacity) break; /* cut between characters */
        used += put_utf8(cp, out + used);
    }
    out[used] = '\0';
    return (int64_t)used;
}

int64_t pytop_decode_text(int kind, const uint8_t *data, size_t data_length, size_t count,
                          char *out, size_t capacity) {
    /* Exact-size copies: in a sanitizer build, any access past either end is caught. */
    uint8_t *in = malloc(data_length ? data_length : 1);
    char *buf = malloc(capacity ? capacity : 1);
    int64_t n = -1;
    if (in && buf) {
        memcpy(in, data, data_length);
        n = decode_text(kind, in, data_length, count, buf, capacity);
        if (n >= 0) memcpy(out, buf, (size_t)n + 1);
    }
    free(in);
    free(buf);
    return n;
}

static unsigned state_field(uint32_t state, int32_t shift, int32_t width) {
    if (shift < 0 || width <= 0 || width >= 32) return 0;
    return (state >> shift) & ((1u << width) - 1);
}

static bool fatal(int status) {
    return status == PYTOP_ERR_GONE || status == PYTOP_ERR_PERMISSION;
}

char *text_read(remote *r, const pytop_layout *L, uint64_t addr, size_t max_chars, int *status) {
    size_t header = (size_t)L->str_compact_size;
    size_t have = header + SPECULATIVE_DATA_BYTES;
    const uint8_t *h = remote_view(r, addr, have, 0, status);
    if (!h && !fatal(*status)) { /* the string may end right before an unmapped page */
        have = header;
        h = remote_view(r, addr, have, 0, status);
    }
    if (!h) return NULL;
    int64_t length = load_i64(h, L->str_length);
    uint32_t state = load_u32(h, L->str_state);
    unsigned kind = state_field(state, L->str_kind_shift, L->str_kind_width);
    bool compact = state_field(state, L->str_compact_shift, L->str_compact_width);
    bool ascii = state_field(state, L->str_ascii_shift, L->str_ascii_width);
    if (length < 0 || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) {
        *status = PYTOP_ERR_CORRUPT;
        return NULL;
    }
    size_t count = (size_t)length < max_chars ? (size_t)length : max_chars;
    size_t bytes = count * kind;
    const uint8_t *data = h;
    if (compact) {
        size_t offset = ascii ? (size_t)L->str_ascii_size : header;
        if (offset + bytes <= have) data = h + offset;
        else data = remote_view(r, addr + offset, bytes, 0, status);
    } else if (bytes) {
        data = remote_view(r, load_u64(h, L->str_legacy_data), bytes, 0, status);
    }
    if (!data) return NULL;
    size_t capacity = count * 4 + 1;
    char *out = malloc(capacity);
    if (!out) {
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    if (decode_text((int)kind, data, bytes, count, out, capacity) < 0) {
        free(out);
        *status = PYTOP_ERR_CORRUPT;
        return NULL;
    }
    *status = PYTOP_OK;
    return out;
}
