"""Python mirrors of pytop.h's structs, derived from cffi's own type information: a field added,
moved or resized in C moves its mirror with it (format strings typed by hand could be checked
by size only, and a reordering of two same-sized fields got past that)."""

from __future__ import annotations

import operator
import struct
from typing import Any

from .._native import ffi

_CODES = {"uint8_t": "B", "int8_t": "b", "char": "c", "_Bool": "?", "uint16_t": "H", "int16_t": "h",
          "uint32_t": "I", "int32_t": "i", "uint64_t": "Q", "int64_t": "q", "double": "d", "float": "f"}


RESERVED = "reserved"


def _code(ctype: Any) -> str:
    kind = ctype.kind
    if kind == "pointer":
        return "Q"
    if kind == "enum":
        return "i"
    return _CODES[ctype.cname]


def mirror(name: str, types: Any = ffi) -> struct.Struct:
    """A struct.Struct that unpacks C struct `name` into its fields in declaration order (an
    array field gives its items one after another; a field named `reserved` is padding).
    `types`: the cffi FFI that declares it (pytop.h's)."""
    ctype = types.typeof(name)
    parts, at = ["<"], 0
    for field_name, field in ctype.fields:
        if field_name == RESERVED:
            continue  # skipped: the padding before the next field, or at the end, covers it
        if field.offset > at:
            parts.append(f"{field.offset - at}x")
        item, count = field.type, 1
        if item.kind == "array":
            item, count = item.item, item.length
        parts.append(f"{count}{_code(item)}" if count != 1 else _code(item))
        at = field.offset + types.sizeof(field.type)
    if types.sizeof(ctype) > at:
        parts.append(f"{types.sizeof(ctype) - at}x")
    return struct.Struct("".join(parts))


class Mirror:
    """A C struct's layout, and its rows read and written by its fields' names: a record built
    by position took two fields of one type swapped in pytop.h for each other without a word
    (test_mirror checks sizes and offsets, not which figure a field is)."""

    def __init__(self, name: str, types: Any = ffi):
        self.name = name
        self.struct = mirror(name, types)
        self.size = self.struct.size
        self._at: dict[str, tuple[int, int]] = {}  # field -> (first item in a row, items: >1 for an array)
        at = 0
        for field_name, field in types.typeof(name).fields:
            if field_name == RESERVED:
                continue
            count = field.type.length if field.type.kind == "array" else 1
            self._at[field_name] = (at, count)
            at += count

    def picker(self, *fields: str) -> Any:
        """A function of an unpacked row giving `fields` in that order (an array: a tuple)."""
        missing = [f for f in fields if f not in self._at]
        if missing:
            raise KeyError(f"{self.name} has no field {missing}")
        spans = [self._at[f] for f in fields]
        if all(count == 1 for _, count in spans):
            return operator.itemgetter(*(at for at, _ in spans)) if len(spans) > 1 else \
                (lambda row, at=spans[0][0]: (row[at],))
        return lambda row: tuple(row[at] if count == 1 else tuple(row[at:at + count]) for at, count in spans)

    def rows(self, data: bytes, *fields: str) -> Any:
        """Each row of `data` as the values of `fields`, in that order."""
        pick = self.picker(*fields)
        return map(pick, self.struct.iter_unpack(data))

    def pack(self, **values: Any) -> bytes:
        """One row from its fields' values, by name (every field but padding must be given)."""
        row: list[Any] = [0] * sum(count for _, count in self._at.values())
        for field_name, (at, count) in self._at.items():
            value = values.pop(field_name)
            if count == 1:
                row[at] = value
            else:
                row[at:at + count] = value
        if values:
            raise KeyError(f"{self.name} has no field {sorted(values)}")
        return self.struct.pack(*row)
