"""Python mirrors of pytop.h's structs, derived from cffi's own type information: a field added,
moved or resized in C moves its mirror with it (format strings typed by hand could be checked
by size only, and a reordering of two same-sized fields got past that)."""

from __future__ import annotations

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


def mirror(name: str) -> struct.Struct:
    """A struct.Struct that unpacks C struct `name` into its fields in declaration order (an
    array field gives its items one after another; a field named `reserved` is padding)."""
    ctype = ffi.typeof(name)
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
        at = field.offset + ffi.sizeof(field.type)
    if ffi.sizeof(ctype) > at:
        parts.append(f"{ffi.sizeof(ctype) - at}x")
    return struct.Struct("".join(parts))
