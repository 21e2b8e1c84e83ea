"""CPython's line-table readers in plain Python, the reference the native decoder is held to.

Each follows the reader of its version in Objects/codeobject.c (2.7 and 3.6-3.9
PyCode_Addr2Line over co_lnotab, whose line increments 2.7 reads unsigned; 3.10 and 3.11+ the
PyCodeAddressRange walk of _PyCode_CheckLineNumber). CPython trusts its tables; where a reader
would run past a malformed one, the rule here is stated: the table ends before the entry that
cannot be read whole, or whose line would not fit in 32 bits (CPython's int).
"""

from __future__ import annotations

LNOTAB, LINETABLE_310, LOCATIONS, LNOTAB_27 = 1, 2, 3, 4
NO_LINE = -1


def line_of(fmt: int, table: bytes, firstlineno: int, offset: int) -> int:
    """The line of byte offset `offset`, or -1 where the table gives none."""
    if offset < 0:
        return firstlineno  # a frame that has not started yet
    if fmt in (LNOTAB, LNOTAB_27):
        return _lnotab(table, firstlineno, offset, signed=fmt == LNOTAB)
    ranges = _ranges_310(table, firstlineno) if fmt == LINETABLE_310 else _locations(table, firstlineno)
    for start, end, line in ranges:
        if start <= offset < end:
            return line
    return NO_LINE


def _lnotab(table: bytes, line: int, offset: int, signed: bool) -> int:
    # while (--size >= 0) { addr += *p++; if (addr > addrq) break; line += (signed char)*p++; }
    # (2.7: line += *p++, unsigned)
    addr = 0
    for i in range(0, len(table) - 1, 2):
        addr += table[i]
        delta = _signed_byte(table[i + 1]) if signed else table[i + 1]
        if addr > offset or not _fits(line + delta):
            break
        line += delta
    return line


def _ranges_310(table: bytes, line: int) -> list[tuple[int, int, int]]:
    # advance(): ar_start = ar_end; ar_end += p[0]; ldelta = (signed char)p[1]; -128: no line.
    # NextAddressRange skips empty ranges.
    ranges, end = [], 0
    for i in range(0, len(table) - 1, 2):
        delta = _signed_byte(table[i + 1])
        if delta != -128 and not _fits(line + delta):
            break
        start, end = end, end + table[i]
        this = NO_LINE
        if delta != -128:
            line += delta
            this = line
        if end > start:
            ranges.append((start, end, this))
    return ranges


def _locations(table: bytes, line: int) -> list[tuple[int, int, int]]:
    # advance(): computed_line += get_line_delta(p); a code of 15 has no line; ar_end += ((p[0] & 7)
    # + 1) * 2; then p moves to the next byte with the top bit set (an entry's first byte).
    ranges, end, pos = [], 0, 0
    while pos < len(table):
        head = table[pos]
        if not head & 0x80:
            break  # not the first byte of an entry
        code = (head >> 3) & 15
        if code in (13, 14):  # no columns, long form: the line delta is a signed varint
            delta = _signed_varint(table, pos + 1)
            if delta is None:
                break
        else:
            delta = code - 10 if code in (10, 11, 12) else 0  # one-line forms; the rest: same line
        if not _fits(line + delta):
            break
        line += delta
        start, end = end, end + ((head & 7) + 1) * 2
        ranges.append((start, end, NO_LINE if code == 15 else line))
        pos += 1
        while pos < len(table) and not table[pos] & 0x80:
            pos += 1
    return ranges


def _signed_varint(table: bytes, pos: int) -> int | None:
    """scan_signed_varint: 6 bits a byte, bit 6 for more. None if the table ends first or it
    runs past 32 bits (CPython would read on)."""
    value = shift = 0
    while True:
        if pos >= len(table) or shift >= 32:
            return None
        byte = table[pos]
        pos += 1
        value |= (byte & 63) << shift
        shift += 6
        if not byte & 64:
            break
    value &= 0xFFFFFFFF
    return -(value >> 1) if value & 1 else value >> 1


def _signed_byte(b: int) -> int:
    return b - 256 if b > 127 else b


def _fits(line: int) -> bool:
    return -(2**31) <= line < 2**31
