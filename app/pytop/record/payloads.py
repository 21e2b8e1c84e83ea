"""What the frames of a recording hold, to bytes and back (docs/recording.md says the layout).

A window frame holds the engine's drains of one window as they were taken in (everything the
figures are made of: the stacks and functions first seen, the time per (thread, stack), the
tables the engine summed, the kernel's CPU per thread and process) and the window's
circumstances as the live view showed them. Replaying the drains through the same code that
took them in live (core.intake) gives the same figures, to the nanosecond: a replay is as true
as the live view. Key frames are record/keys.py's.

Decoding checks every value a later step would trust: ids within the bounds the figures index
by, flags and names of the right kinds. A payload that fails is Damaged."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from ..core.model import Circumstances
from ..core.records import (
    NO_STANDING,
    Drain,
    Function,
    FunctionFigures,
    Node,
    ProcessUpdate,
    Standing,
    ThreadUpdate,
    Weight,
)
from ..core.snapshot import MIN_CPU_WINDOW
from .codec import Damaged, Packer, Unpacker, same_length

PAYLOAD_VERSION = 3  # of a window frame's payload: 2 stores a row's figures a column each (1: 12 a row);
# 3 ends each drain with its standing threads (Drain.standing)
MAX_NODE_ID = 1 << 22  # the engine's tree is ~100,000 nodes at its largest: ids past this are crafted
MAX_LINE = (1 << 31) - 1
FIGURES = 12  # per function row: own, total, own with tasks hidden, each (samples, cpu, wall, gil)

# Each table's fields, in order, by kind: i an integer, d an id that mostly counts up (stored as
# differences), b a flag, s a name or None, S a name.
_SPECS: dict[type, str] = {
    ProcessUpdate: "iiiiiiiiiiiis",
    ThreadUpdate: "diiiisiiiiiiidSi",
    Function: "diibssb",
    Node: "ddiiidiii",
    Weight: "ddiiiii",
}
_DRAIN_INTS = ("ticks", "late", "skipped", "budget_limited", "running", "realtime", "stacks_dropped",
               "stacks_coarsened", "stack_nodes")
_DRAIN_FLOATS = ("slot_seconds", "first_at", "last_at", "lag", "longest_delay", "cpu_seconds", "start_up_cpu",
                 "rate_now")

Row = TypeVar("Row", bound=NamedTuple)


def _put_table(p: Packer, rows: Sequence[NamedTuple], kind: type) -> None:
    spec = _SPECS[kind]
    columns = list(zip(*rows)) if rows else [()] * len(spec)
    for code, column in zip(spec, columns):
        if code in "sS":
            p.put_texts(column)
        else:
            p.put_ints(column, delta=code == "d")


def _take_table(u: Unpacker, kind: Callable[..., Row]) -> list[Row]:
    spec = _SPECS[kind]  # type: ignore[index]
    columns: list[Sequence[Any]] = []
    for code in spec:
        if code in "sS":
            texts = u.texts()
            if code == "S" and any(t is None for t in texts):
                raise Damaged("a name that must be there is missing")
            columns.append(texts)
        elif code == "b":
            columns.append([bool(v) for v in u.ints()])
        else:
            columns.append(u.ints())
    same_length(*columns)
    return [kind(*values) for values in zip(*columns)]


def _skip_table(u: Unpacker, kind: type) -> None:
    for code in _SPECS[kind]:
        if code in "sS":
            u.skip_texts()
        else:
            u.skip_ints()


def _put_rows(p: Packer, rows: Sequence[FunctionFigures]) -> None:
    """A figure a column: each in the narrowest width that holds it (sample counts in a byte or
    two beside nanoseconds in four or eight: a third of a recording's rows' bytes)."""
    p.put_ints((r.function for r in rows), delta=True)
    p.put_ints(r.line for r in rows)
    for i in range(FIGURES):
        p.put_ints(r.figures[i] for r in rows)


def _take_rows(u: Unpacker, columns: bool) -> list[FunctionFigures]:
    """columns: a figure a column (payloads of version 2), else 12 figures a row."""
    functions, lines = u.ints(), u.ints()
    count = same_length(functions, lines)
    if columns:
        figures = [u.ints() for _ in range(FIGURES)]
        if same_length(functions, *figures) != count:
            raise Damaged("a table of functions does not add up")
        return [FunctionFigures(f, line, row) for f, line, row in zip(functions, lines, zip(*figures))]
    flat = u.ints()
    if count * FIGURES != len(flat):
        raise Damaged("a table of functions does not add up")
    return [FunctionFigures(f, line, tuple(flat[i * FIGURES:(i + 1) * FIGURES]))
            for i, (f, line) in enumerate(zip(functions, lines))]


def put_drain(p: Packer, d: Drain, standing: bool = False) -> None:
    """standing: the drain's standing threads at its end (window payloads from version 3; a key
    frame's drain, the book's, has none)."""
    p.put_ints(int(getattr(d, name)) for name in _DRAIN_INTS)
    p.put_floats(float(getattr(d, name)) for name in _DRAIN_FLOATS)
    p.put_texts([d.end])
    for rows, kind in ((d.processes, ProcessUpdate), (d.threads, ThreadUpdate), (d.functions, Function)):
        _put_table(p, rows, kind)
    p.put_ints(d.retired, delta=True)
    p.put_ints(d.evicted, delta=True)
    _put_table(p, d.nodes, Node)
    _put_table(p, d.weights, Weight)
    _put_rows(p, d.function_rows)
    _put_rows(p, d.line_rows)
    if standing:
        p.put_ints(d.standing.threads, delta=True)
        for column in d.standing[1:]:
            p.put_ints(column)


def _take_standing(u: Unpacker) -> Standing:
    threads, stacks, samples, wall = u.ints(), u.ints(), u.ints(), u.ints()
    same_length(threads, stacks, samples, wall)
    if not all(0 <= v < MAX_NODE_ID for v in stacks) or not all(v >= 0 for column in (samples, wall) for v in column):
        raise Damaged("a standing thread's stack or time is out of bounds")
    return Standing(tuple(threads), tuple(stacks), tuple(samples), tuple(wall)) if threads else NO_STANDING


def take_drain(u: Unpacker, columns: bool = True, standing: bool = False) -> Drain:
    """columns: a table's figures a column each (window payloads of version 2, key payloads of
    version 3); else as version 1 wrote them. standing: standing threads at its end (window
    payloads of version 3)."""
    ints, floats, (end,) = u.ints(), u.floats(), u.texts() or (None,)
    if len(ints) != len(_DRAIN_INTS) or len(floats) != len(_DRAIN_FLOATS):
        raise Damaged("a drain's figures are not those of this version")
    if not all(math.isfinite(v) for v in floats):
        raise Damaged("a drain's times are not numbers")
    processes = _take_table(u, ProcessUpdate)
    threads = _take_table(u, ThreadUpdate)
    functions = _take_table(u, Function)
    retired, evicted = tuple(u.ints()), tuple(u.ints())
    nodes = _take_table(u, Node)
    weights = _take_table(u, Weight)
    function_rows, line_rows = _take_rows(u, columns), _take_rows(u, columns)
    still = _take_standing(u) if standing else NO_STANDING
    _check_ids(evicted, nodes, weights, threads, function_rows, line_rows)
    fields: dict[str, Any] = dict(zip(_DRAIN_INTS, ints)) | dict(zip(_DRAIN_FLOATS, floats))
    for flag in ("budget_limited", "running", "realtime"):
        fields[flag] = bool(fields[flag])
    return Drain(processes=tuple(processes), threads=tuple(threads), functions=tuple(functions), retired=retired,
                 evicted=evicted, nodes=tuple(nodes), weights=tuple(weights), function_rows=tuple(function_rows),
                 line_rows=tuple(line_rows), end=end, standing=still, **fields)


class DrainTables(NamedTuple):
    """What a drain says of the function tables alone: the names its rows need, and the rows."""

    processes: tuple[ProcessUpdate, ...]
    functions: tuple[Function, ...]
    retired: tuple[int, ...]
    function_rows: tuple[FunctionFigures, ...]
    line_rows: tuple[FunctionFigures, ...]


def take_drain_tables(u: Unpacker, columns: bool = True, standing: bool = False) -> DrainTables:
    """A drain's tables and the names they need, the rest passed over undecoded (the stacks,
    the time per (thread, stack), the threads: most of a drain's bytes)."""
    u.skip_ints()
    u.skip_floats()
    u.skip_texts()
    processes = _take_table(u, ProcessUpdate)
    _skip_table(u, ThreadUpdate)
    functions = _take_table(u, Function)
    retired = tuple(u.ints())
    u.skip_ints()
    _skip_table(u, Node)
    _skip_table(u, Weight)
    function_rows, line_rows = _take_rows(u, columns), _take_rows(u, columns)
    _skip_standing(u, standing)
    if not all(abs(r.line) <= MAX_LINE for table in (function_rows, line_rows) for r in table):
        raise Damaged("a line is out of bounds")
    return DrainTables(tuple(processes), tuple(functions), retired, tuple(function_rows), tuple(line_rows))


def _skip_standing(u: Unpacker, standing: bool) -> None:
    if standing:
        for _ in Standing._fields:
            u.skip_ints()


def _skip_rows(u: Unpacker, columns: bool) -> None:
    for _ in range(2 + (FIGURES if columns else 1)):  # function, line, then the figures (a column each, or one)
        u.skip_ints()


class DrainLoad(NamedTuple):
    """What a drain says of how busy the target was: the kernel's CPU of its processes, and the
    samples taken over the schedule's time."""

    cpu_ns: int
    ticks: int
    slot_seconds: float


def take_drain_load(u: Unpacker, columns: bool = True, standing: bool = False) -> DrainLoad:
    """A drain's load, everything else passed over undecoded (a timeline point a window)."""
    ints, floats = u.ints(), u.floats()
    if len(ints) != len(_DRAIN_INTS) or len(floats) != len(_DRAIN_FLOATS) or not all(map(math.isfinite, floats)):
        raise Damaged("a drain's figures are not those of this version")
    u.skip_texts()
    cpu_ns = sum(p.cpu_ns for p in _take_table(u, ProcessUpdate))
    _skip_table(u, ThreadUpdate)
    _skip_table(u, Function)
    u.skip_ints()  # retired
    u.skip_ints()  # evicted
    _skip_table(u, Node)
    _skip_table(u, Weight)
    _skip_rows(u, columns)
    _skip_rows(u, columns)
    _skip_standing(u, standing)
    figures = dict(zip(_DRAIN_INTS, ints)) | dict(zip(_DRAIN_FLOATS, floats))
    return DrainLoad(cpu_ns, int(figures["ticks"]), float(figures["slot_seconds"]))


def _check_ids(evicted: Sequence[int], nodes: Sequence[Node], weights: Sequence[Weight],
               threads: Sequence[ThreadUpdate], *tables: Sequence[FunctionFigures]) -> None:
    """What the stack book stores in arrays indexed by node id, or as 32-bit values, in bounds."""
    def node_id(v: int) -> bool:
        return 0 <= v < MAX_NODE_ID

    ok = all(node_id(v) for v in evicted) and all(node_id(w.stack) for w in weights)
    ok = ok and all(node_id(t.stack) for t in threads)
    ok = ok and all(node_id(n.node) and node_id(n.parent) and 0 <= n.function < 1 << 32 and abs(n.line) <= MAX_LINE
                    and 0 <= n.depth < 1 << 32 and 0 <= n.kind < 0x80 and 0 <= n.flags < 0x100
                    and 0 <= n.process < 1 << 32 for n in nodes)
    ok = ok and all(abs(r.line) <= MAX_LINE for table in tables for r in table)
    if not ok:
        raise Damaged("a stack or a line is out of bounds")


# ---- window and key frames ---------------------------------------------------------------

class WindowRecord(NamedTuple):
    """One window as it was sampled and shown."""

    drains: tuple[Drain, ...]
    circumstances: Circumstances
    reset: bool = False  # the live view's figures were reset at its start (the recording's are not)
    dropped: int = 0  # windows just before it whose figures were lost (the disk could not keep up)
    totals: bytes = b""  # the session's totals after it, for a key frame to follow (not in its payload)


def window_payload(w: WindowRecord) -> bytes:
    p = Packer()
    p.put_ints((PAYLOAD_VERSION, int(w.reset), len(w.drains), w.dropped))
    p.put_blob(json.dumps(_plain(w.circumstances), allow_nan=False).encode())
    for d in w.drains:
        put_drain(p, d, standing=True)
    return p.data()


def read_window(data: bytes) -> WindowRecord:
    u, head, circumstances = _window_head(data)
    drains = tuple(take_drain(u, head[0] >= 2, head[0] >= 3) for _ in range(head[2]))
    u.end()
    return WindowRecord(drains, circumstances, bool(head[1]), head[3])


def _window_head(data: bytes) -> tuple[Unpacker, Sequence[int], Circumstances]:
    """A window payload's head (version, reset, drains, windows lost before it) and its
    circumstances; the unpacker left at its first drain."""
    u = Unpacker(data)
    head = u.ints()
    if len(head) != 4 or head[0] not in (1, 2, PAYLOAD_VERSION) or head[2] < 0 or head[3] < 0:
        raise Damaged("a window of another making")
    return u, head, _circumstances(u.blob())


class WindowTables(NamedTuple):
    """A window's function tables alone (read_window_tables)."""

    drains: tuple[DrainTables, ...]
    circumstances: Circumstances
    reset: bool


def read_window_tables(data: bytes) -> WindowTables:
    """A window frame's circumstances and its drains' function tables, the rest passed over:
    what summing a range's tables needs (record/prefix.py), at a fraction of read_window's work."""
    u, head, circumstances = _window_head(data)
    drains = tuple(take_drain_tables(u, head[0] >= 2, head[0] >= 3) for _ in range(head[2]))
    u.end()
    return WindowTables(drains, circumstances, bool(head[1]))


class WindowLoad(NamedTuple):
    """A window's point on the view's timeline: the target's CPU and pytop's rate over it, as
    the live view showed them for it."""

    cpu_pct: float | None  # 100 = one core (None: a window too short to say, as live)
    rate: float  # samples a second


def load_of(circumstances: Circumstances, drains: Sequence[DrainLoad]) -> WindowLoad:
    """As core/snapshot.py makes the window's figures: CPU over its circumstances' seconds,
    samples over the schedule's."""
    seconds, slots = circumstances.window_seconds, sum(d.slot_seconds for d in drains)
    cpu_ns = sum(d.cpu_ns for d in drains)
    return WindowLoad(100.0 * cpu_ns / (seconds * 1e9) if seconds >= MIN_CPU_WINDOW else None,
                      sum(d.ticks for d in drains) / slots if slots > 0 else 0.0)


def window_load(w: WindowRecord) -> WindowLoad:
    """The load of a window decoded whole (a replay's, which learns the timeline on its way)."""
    return load_of(w.circumstances, [DrainLoad(sum(p.cpu_ns for p in d.processes), d.ticks, d.slot_seconds)
                                     for d in w.drains])


def read_window_load(data: bytes) -> WindowLoad:
    """A window frame's load alone: its head, circumstances and each drain's processes decoded,
    the rest passed over (a tenth of read_window's work)."""
    u, head, circumstances = _window_head(data)
    drains = [take_drain_load(u, head[0] >= 2, head[0] >= 3) for _ in range(head[2])]
    u.end()
    return load_of(circumstances, drains)


def json_fields(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data, parse_constant=lambda name: None)  # (no NaN or Infinity)
    except (ValueError, RecursionError):
        raise Damaged("a frame's description is not JSON") from None
    if not isinstance(value, dict):
        raise Damaged("a frame's description is not an object")
    return value


def value_of(fields: dict[str, Any], name: str, kind: type, *default: Any) -> Any:
    """fields[name] checked to be a `kind` (an int where a float is asked is one)."""
    if name not in fields:
        if default:
            return default[0]
        raise KeyError(name)
    value = fields[name]
    if value is None and default and default[0] is None:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Damaged(f"{name} is not a {kind.__name__}")
    return value


def _plain(c: Circumstances) -> dict[str, Any]:
    fields = dataclasses.asdict(c)
    fields.pop("push", None)  # the live view's sending and writing, not the figures
    fields.pop("record", None)
    fields.pop("replay", None)
    fields.pop("exported", None)
    return fields


_OPTIONAL = {"rate_held", "pytop_cpu_pct", "rss", "exit_reason", "exit_status", "last_error", "failure",
             "work_elsewhere"}


def _circumstances(data: bytes) -> Circumstances:
    fields = json_fields(data)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(Circumstances):
        if f.name in ("push", "record", "replay", "exported") or f.name not in fields:
            continue
        value = fields[f.name]
        if value is None and f.name in _OPTIONAL:
            out[f.name] = None
        elif f.name in ("stopped", "processes"):
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise Damaged(f"{f.name} is not a list of pids")
            out[f.name] = tuple(value)
        else:
            kind = {"exited": bool}.get(f.name) or _kind_of(f.name)
            out[f.name] = value_of(fields, f.name, kind)
    for name in ("window_seconds", "elapsed", "rate_asked"):
        if name not in out:
            raise Damaged(f"a window without {name}")
    return Circumstances(**out)


def _kind_of(name: str) -> type:
    """The type a Circumstances field holds (its default's, or str for the optional texts)."""
    texts = {"exit_reason", "last_error", "failure", "work_elsewhere"}
    ints = {"rss", "exit_status", "stacks_dropped", "stacks_coarsened", "window_number"}
    if name in texts:
        return str
    if name in ints:
        return int
    return float



# ---- note frames ---------------------------------------------------------------------------

class Rotation(NamedTuple):
    """What a rotated recording's note says: its oldest part went (--record-max-size)."""

    rotated: int  # bytes of frames rotated away since the recording began
    since: float  # wall-clock seconds where what is kept starts


def rotation_note(rotated: int, since: float) -> bytes:
    p = Packer()
    p.put_ints((1,))
    p.put_blob(json.dumps({"rotated": rotated, "since": since}, allow_nan=False).encode())
    return p.data()


def read_note(data: bytes) -> Rotation | None:
    """A note frame's rotation (None: a note of another kind, which a reader passes over)."""
    u = Unpacker(data)
    if list(u.ints()) != [1]:
        raise Damaged("a note of another making")
    fields = json_fields(u.blob())
    u.end()
    if "rotated" not in fields:
        return None
    rotated, since = value_of(fields, "rotated", int), value_of(fields, "since", float)
    if rotated < 0 or not math.isfinite(since):
        raise Damaged("a rotation's figures are out of bounds")
    return Rotation(rotated, since)
