"""The Python mirrors of pytop.h's structs read each field where C wrote it (pure: no target)."""

from __future__ import annotations

import pytest

from pytop._native import ffi
from pytop.native.mirror import RESERVED, mirror

STRUCTS = ("pytop_thread", "pytop_drain_process", "pytop_drain_thread", "pytop_drain_function",
           "pytop_drain_node", "pytop_drain_weight", "pytop_function_row", "pytop_node_row", "pytop_leaf_tally")


def distinct_value(ctype: object, n: int) -> object:
    """A value of C type `ctype` that no other field gets (n counts the fields set so far)."""
    kind, name = getattr(ctype, "kind"), getattr(ctype, "cname")  # noqa: B009
    if kind == "pointer":
        return ffi.cast(name, 0x1000 + n)
    if name == "char":
        return bytes([ord("A") + n % 26])
    if name in ("double", "float"):
        return n + 0.5
    if name == "_Bool":
        return n % 2 == 1
    return n + 1


@pytest.mark.parametrize("name", STRUCTS)
def test_each_field_is_read_where_c_wrote_it(name: str) -> None:
    c = ffi.new(f"{name} *")
    expected: list[object] = []
    n = 0
    for field_name, field in ffi.typeof(name).fields:
        if field_name == RESERVED:
            continue
        if field.type.kind == "array":
            values = [distinct_value(field.type.item, n + i) for i in range(field.type.length)]
            setattr(c, field_name, values)
            n += len(values)
        else:
            values = [distinct_value(field.type, n)]
            setattr(c, field_name, values[0])
            n += 1
        expected += [int(ffi.cast("uintptr_t", v)) if field.type.kind == "pointer" else v for v in values]
    layout = mirror(name)
    assert layout.size == ffi.sizeof(name)
    assert list(layout.unpack(bytes(ffi.buffer(c)))) == expected
