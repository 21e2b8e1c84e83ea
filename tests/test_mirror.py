"""The Python mirrors of pytop.h's structs read each field where C wrote it (pure: no target)."""

from __future__ import annotations

from typing import Any

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


def test_drain_records_are_read_by_field_name() -> None:
    """Every record the drain hands over gets each figure from the C field of its name: set by
    name in C, read back by name in Python. (Built by position, two fields of one type swapped
    in pytop.h would have swapped two figures, and the test above would still pass.)"""
    from types import SimpleNamespace

    from pytop.native import engine

    def filled(name: str) -> Any:
        c = ffi.new(f"{name}[1]")
        n = 0
        for field_name, field in ffi.typeof(name).fields:
            if field_name == RESERVED:
                continue
            if field.type.kind == "array":
                setattr(c[0], field_name, [1000 * (n + 1) + i for i in range(field.type.length)])
            elif field.type.cname == "char":
                setattr(c[0], field_name, b"R")
            else:
                setattr(c[0], field_name, n + 1)
            n += 1
        return c

    text = SimpleNamespace(at=lambda offset: f"text@{offset}")
    thread = filled("pytop_drain_thread")
    (update,) = engine._threads(SimpleNamespace(threads=thread, thread_count=1), text)  # type: ignore[arg-type]
    for field in ("thread", "process", "thread_id", "native_id", "flags", "cpu_ns", "wall_ns", "wait_ns",
                  "samples", "gil_samples", "errors", "last_error", "stack", "unplaced_ns"):
        assert getattr(update, field) == getattr(thread[0], field), field
    assert update.name == f"text@{thread[0].name_at}" and update.os_state == "R"
    process = filled("pytop_drain_process")
    (p,) = engine._processes(SimpleNamespace(processes=process, process_count=1), text)  # type: ignore[arg-type]
    for field in ("process", "pid", "status", "threads", "samples", "failed", "gil_samples", "gc_samples",
                  "gc_known", "torn", "cpu_ns", "unseen_cpu_ns"):
        assert getattr(p, field) == getattr(process[0], field), field
    assert p.error == f"text@{process[0].error_at}"
    weight = filled("pytop_drain_weight")
    (w,) = engine._weights(SimpleNamespace(weights=weight, weight_count=1))
    assert all(getattr(w, field) == getattr(weight[0], field) for field in w._fields)
    node = filled("pytop_drain_node")
    (nd,) = engine._nodes(SimpleNamespace(nodes=node, node_count=1))
    assert all(getattr(nd, field) == getattr(node[0], field) for field in nd._fields)
    function = filled("pytop_drain_function")
    (f,) = engine._functions(SimpleNamespace(functions=function, function_count=1), text)  # type: ignore[arg-type]
    assert (f.function, f.process, f.kind) == (function[0].function, function[0].process, function[0].kind)
    assert f.qualname == f"text@{function[0].qualname_at}" and f.filename == f"text@{function[0].filename_at}"
    row = filled("pytop_function_row")
    (fr,) = engine.function_rows(row, 1)
    assert (fr.function, fr.line) == (row[0].function, row[0].line)
    assert fr.figures == (*row[0].own, *row[0].total, *row[0].own_hidden)
    node_row = filled("pytop_node_row")
    (nr,) = engine.node_rows(node_row, 1)
    assert (nr.node, nr.own, nr.total) == (node_row[0].node, tuple(node_row[0].own), tuple(node_row[0].total))


def test_a_mirror_follows_its_fields_names_when_they_move() -> None:
    """Two fields of one type swapped in the C declaration: a row read by name still gives each
    its own value (read by position, they trade places)."""
    from cffi import FFI

    from pytop.native.mirror import Mirror

    before, after = FFI(), FFI()
    before.cdef("typedef struct r { uint64_t cpu_ns, wall_ns; uint32_t stack, thread; } r;")
    after.cdef("typedef struct r { uint64_t wall_ns, cpu_ns; uint32_t thread, stack; } r;")
    for types in (before, after):
        c = types.new("r *", {"cpu_ns": 11, "wall_ns": 22, "stack": 3, "thread": 4})
        data = bytes(types.buffer(c))
        assert list(Mirror("r", types).rows(data, "cpu_ns", "wall_ns", "stack", "thread")) == [(11, 22, 3, 4)]
    c = after.new("r *", {"cpu_ns": 11, "wall_ns": 22, "stack": 3, "thread": 4})
    assert mirror("r", before).unpack(bytes(after.buffer(c))) != (11, 22, 3, 4)  # by position: swapped
