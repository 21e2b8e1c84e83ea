"""The byte codec of a recording's payloads: columns of integers, floats and strings, packed with
the array module (C speed, no per-value Python work when writing) and read back with every count
and length checked against what is left and against a bound before anything is allocated.

A payload comes from a file anyone may have written: the reader raises Damaged (a ValueError)
for anything that does not hold together, never another exception, never a huge allocation."""

from __future__ import annotations

import itertools
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence

BIG_ENDIAN = sys.byteorder == "big"  # the layout is little-endian: swapped on such a machine
MAX_ITEMS = 1 << 24  # values in one column: a window of one session never has this many
_COUNT = struct.Struct("<I")
_WIDTH = struct.Struct("<BB")  # bytes per integer, delta-coded
_INTS_HEAD = struct.Struct("<IBB")  # a column of integers' count and width, read in one go
_FITS = {c: (-(1 << (8 * n - 1)), (1 << (8 * n - 1)) - 1) for c, n in (("b", 1), ("h", 2), ("i", 4), ("q", 8))}
_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}


class Damaged(ValueError):
    """A payload that does not decode: its frame is damaged or of another making."""


def _int_column(values: Iterable[int]) -> array[int]:
    try:
        return array("q", values)
    except OverflowError:  # (a figure past 2**63: never, for nanoseconds of one session)
        raise ValueError("a value does not fit a recording's 64-bit column") from None


class Packer:
    """Builds a payload: each put_* appends one self-sized column."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def put_ints(self, values: Iterable[int], delta: bool = False) -> None:
        """Stored in the narrowest of 1, 2, 4 or 8 bytes that holds them all (most figures of a
        window are small: this halves a recording, and zlib then has less to do); `delta`:
        each stored as its difference from the one before (ids that mostly count up)."""
        column = _int_column(values)
        if delta and column:
            column = _int_column(b - a for a, b in zip(itertools.chain((0,), column), column))
        low, high = (min(column), max(column)) if column else (0, 0)
        code = next(c for c in "bhiq" if _FITS[c][0] <= low and high <= _FITS[c][1])
        if code != "q":
            column = array(code, column)
        if BIG_ENDIAN:
            column.byteswap()
        self._parts.append(_COUNT.pack(len(column)))
        self._parts.append(_WIDTH.pack(column.itemsize, int(delta)))
        self._parts.append(column.tobytes())

    def put_floats(self, values: Iterable[float]) -> None:
        column = array("d", values)
        if BIG_ENDIAN:
            column.byteswap()
        self._parts.append(_COUNT.pack(len(column)))
        self._parts.append(column.tobytes())

    def put_texts(self, values: Sequence[str | None]) -> None:
        """Strings (None kept apart from ""): their lengths in bytes (-1: None), then their bytes.
        A name read from a target may hold lone surrogates: they go through as they are."""
        encoded = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
        self.put_ints(-1 if v is None else len(e) for v, e in zip(values, encoded))
        self.put_blob(b"".join(encoded))

    def put_blob(self, data: bytes) -> None:
        self._parts.append(_COUNT.pack(len(data)))
        self._parts.append(data)

    def data(self) -> bytes:
        return b"".join(self._parts)


class Unpacker:
    """Reads a payload back column by column, in the order it was packed."""

    def __init__(self, data: bytes):
        self._data = memoryview(data)
        self._at = 0

    def _take(self, size: int) -> memoryview:
        if size < 0 or self._at + size > len(self._data):
            raise Damaged("a payload ends inside one of its columns")
        part = self._data[self._at:self._at + size]
        self._at += size
        return part

    def _count(self, item_size: int) -> int:
        at = self._at
        if at + _COUNT.size > len(self._data):
            raise Damaged("a payload ends inside one of its columns")
        (count,) = _COUNT.unpack_from(self._data, at)
        self._at = at = at + _COUNT.size
        if count > MAX_ITEMS or count * item_size > len(self._data) - at:
            raise Damaged("a column says it holds more than its payload")
        return int(count)

    def _ints_head(self) -> tuple[int, int, int]:
        """A column of integers' count, bytes per value and delta flag, checked against what is
        left and against the bound (one unpack: a range's ends read ~250 columns a window)."""
        at, data = self._at, self._data
        if at + _INTS_HEAD.size > len(data):
            raise Damaged("a payload ends inside one of its columns")
        count, width, delta = _INTS_HEAD.unpack_from(data, at)
        self._at = at = at + _INTS_HEAD.size
        if width not in _CODES or delta not in (0, 1):
            raise Damaged("a column of integers of no known width")
        if count > MAX_ITEMS or count * width > len(data) - at:
            raise Damaged("a column says it holds more than its payload")
        return count, width, delta

    def ints(self) -> array[int]:
        count, width, delta = self._ints_head()
        if not count:  # (two columns in five: a drain's tables are mostly empty but for a few)
            return array("q")
        code = _CODES[width]
        stored = array(code)
        at = self._at
        stored.frombytes(self._data[at:at + width * count])
        self._at = at + width * count
        if BIG_ENDIAN:
            stored.byteswap()
        if delta:
            try:
                return array("q", itertools.accumulate(stored))
            except OverflowError:
                raise Damaged("a column of integers adds up past 64 bits") from None
        return stored if code == "q" else array("q", stored)

    def skip_ints(self) -> None:
        """Past a column of integers without decoding it (a reader that needs other columns)."""
        count, width, _ = self._ints_head()
        self._at += width * count

    def skip_texts(self) -> None:
        self.skip_ints()
        size = self._count(1)  # (within the payload: _count checked it; and moved _at first)
        self._at += size

    def floats(self) -> array[float]:
        count = self._count(8)
        column = array("d")
        column.frombytes(self._take(8 * count))
        if BIG_ENDIAN:
            column.byteswap()
        return column

    def skip_floats(self) -> None:
        size = 8 * self._count(8)  # (within the payload: _count checked it; and moved _at first)
        self._at += size

    def texts(self) -> list[str | None]:
        lengths = self.ints()
        blob = self.blob()
        if lengths and (min(lengths) < -1 or sum(lengths) + lengths.count(-1) != len(blob)):
            raise Damaged("a column of names does not add up")
        if not lengths and blob:
            raise Damaged("a column of names does not add up")
        # Names are mostly ASCII: one decode for the whole column, sliced as text (a range's ends
        # read ~40 such columns a window; a decode a name was a tenth of their time).
        whole: str | bytes = blob.decode("ascii") if blob.isascii() else blob
        out: list[str | None] = []
        at = 0
        for n in lengths:
            if n < 0:
                out.append(None)
                continue
            part = whole[at:at + n]
            if isinstance(part, bytes):
                try:
                    part = part.decode("utf-8", "surrogatepass")
                except UnicodeDecodeError:
                    raise Damaged("a name is not UTF-8") from None
            out.append(part)
            at += n
        return out

    def blob(self) -> bytes:
        return bytes(self._take(self._count(1)))

    def end(self) -> None:
        """The payload must end here: bytes left over mean a frame of another making."""
        if self._at != len(self._data):
            raise Damaged("a payload goes on past its last column")


def same_length(*columns: Sequence[object]) -> int:
    """The length all of a table's columns share; Damaged if they differ."""
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise Damaged("a table's columns differ in length")
    return lengths.pop() if lengths else 0
