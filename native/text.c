/*
 * CPython str objects (PEP 393) in the target, turned into UTF-8 here.
 *
 * A str is compact ASCII (data right after PyASCIIObject), compact non-ASCII (after
 * PyCompactUnicodeObject, 1, 2 or 4 bytes per character) or, rarely, a legacy object with a
 * data pointer. The state bit positions come from the layout. One read fetches the header and
 * the start of the data together; long strings take a second read.
 *
 * 2.7 (the layout has no str_state): a str is a PyStringObject, ob_size bytes at ob_sval, in
 * whatever encoding the program used: kept as they are when they are UTF-8, else read as
 * Latin-1 (every byte a character), so the text is always valid UTF-8.
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

/* The length of the valid UTF-8 sequence starting at p[0] (at most `left` bytes), 0 if none. */
static size_t utf8_sequence(const uint8_t *p, size_t left) {
    size_t n = p[0] < 0x80 ? 1 : (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || n > left) return 0;
    uint32_t cp = n == 1 ? p[0] : p[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    bool shortest = n == 1 || (n == 2 && cp >= 0x80) || (n == 3 && cp >= 0x800) || (n == 4 && cp >= 0x10000);
    return shortest && as_scalar(cp) == cp ? n : 0;
}

/* `count` bytes of a 2.7 str as UTF-8 (see above). */
static char *bytes_as_text(const uint8_t *data, size_t count, int *status) {
    bool utf8 = true;
    for (size_t i = 0, n; i < count && utf8; i += n) utf8 = (n = utf8_sequence(data + i, count - i)) > 0;
    char *out = malloc(count * 2 + 1);
    if (!out) {
        *status = PYTOP_ERR_NOMEM;
        return NULL;
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        if (utf8) out[used++] = (char)data[i];
        else used += put_utf8(data[i], out + used);
    }
    out[used] = '\0';
    *status = PYTOP_OK;
    return out;
}

static char *string_read_27(remote *r, const pytop_layout *L, uint64_t addr, size_t max_chars, int *status) {
    size_t header = (size_t)L->bytes_sval, have = header + SPECULATIVE_DATA_BYTES;
    const uint8_t *h = remote_view(r, addr, have, 0, status);
    if (!h && !fatal(*status)) {
        have = header;
        h = remote_view(r, addr, have, 0, status);
    }
    if (!h) return NULL;
    int64_t length = load_i64(h, L->var_ob_size);
    if (length < 0) {
        *status = PYTOP_ERR_CORRUPT;
        return NULL;
    }
    size_t count = (size_t)length < max_chars ? (size_t)length : max_chars;
    const uint8_t *data = header + count <= have ? h + header : remote_view(r, addr + header, count, 0, status);
    if (!data) return NULL;
    if (count < (size_t)length) { /* cut short: not in the middle of a UTF-8 character */
        size_t k = count;
        while (k > 0 && count - k < 3 && (data[k - 1] & 0xC0) == 0x80) k--;
        if (k > 0 && data[k - 1] >= 0xC0 && utf8_sequence(data + k - 1, count - k + 1) == 0) count = k - 1;
    }
    return bytes_as_text(data, count, status);
}

char *text_read(remote *r, const pytop_layout *L, uint64_t addr, size_t max_chars, int *status) {
    if (L->str_state < 0) return string_read_27(r, L, addr, max_chars, status);
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
