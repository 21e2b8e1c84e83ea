"""A recording's key frames: the run (what was sampled, how), and what a reader starting at the
key needs (the names, stacks and threads so far, the session's clock) with the session's totals
so far. Window frames are record/payloads.py's."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..core.model import TargetInfo
from ..core.records import Drain
from .book import RecordedBook, SessionClock
from .codec import Damaged, Packer, Unpacker
from .payloads import DrainTables, json_fields, put_drain, take_drain, take_drain_tables, value_of
from .totals import Totals, TotalTables, take_total_tables, take_totals

KEY_VERSION = 3  # of a key frame's: 2 brings what a reader starting there needs (1: the run alone), 3 the totals


class RunRecord(NamedTuple):
    """What a key frame says of the run."""

    target: TargetInfo
    rate: float
    cpu_budget: float
    mode: str
    started: float  # wall-clock seconds when sampling started


class KeyState(NamedTuple):
    """What a key frame says: the run, and what a reader starting there needs (none in a key
    frame of version 1, which only the start of a recording has), and the session's totals so
    far (none before version 3, nor where the recorder could not vouch for them)."""

    run: RunRecord
    book: Drain | None
    clock: SessionClock
    totals: Totals | None = None


def key_payload(run: RunRecord, book: Drain | None = None, clock: SessionClock | None = None,
                totals: bytes = b"") -> bytes:
    """totals: the session's totals so far, as record/totals.py packs them (b"": none)."""
    p = Packer()
    p.put_ints((KEY_VERSION,))
    fields = {"target": dataclasses.asdict(run.target), "rate": run.rate, "cpu_budget": run.cpu_budget,
              "mode": run.mode, "started": run.started, "clock": list(clock or SessionClock())}
    p.put_blob(json.dumps(fields, allow_nan=False).encode())
    put_drain(p, book if book is not None else RecordedBook().key_drain())
    p.put_blob(totals)
    return p.data()


def key_parts(data: bytes) -> tuple[dict[str, Any], Unpacker | None]:
    """A key frame's JSON, and what follows it (None for a key of version 1: nothing does)."""
    u = Unpacker(data)
    head = list(u.ints())
    if head not in ([1], [2], [KEY_VERSION]):
        raise Damaged("a key frame of another making")
    fields = json_fields(u.blob())
    if head == [1]:
        u.end()
        return fields, None
    return fields, u


def key_fields(data: bytes) -> dict[str, Any]:
    """What a key frame's JSON says (of a run, or of the host's table: its "kind")."""
    return key_parts(data)[0]


def read_key(data: bytes) -> RunRecord:
    return _run_of(key_fields(data))


def read_key_state(data: bytes) -> KeyState:
    run, book, clock, totals = _read_key(data, take_drain, take_totals)
    return KeyState(run, book, clock, totals)


class KeyTables(NamedTuple):
    """What a key frame says of the session's function tables: the names their rows need (none
    in a key of version 1), the clock, the totals (see KeyState)."""

    book: DrainTables | None
    clock: SessionClock
    totals: TotalTables | None


def read_key_tables(data: bytes) -> KeyTables:
    """A key frame's function tables and names, its stacks and threads passed over (record/prefix.py):
    an hour into a churning server, 23 ms where read_key_state takes 104."""
    _, book, clock, totals = _read_key(data, take_drain_tables, take_total_tables)
    return KeyTables(book, clock, totals)


_Book = TypeVar("_Book", Drain, DrainTables)
_Totals = TypeVar("_Totals", Totals, TotalTables)


def _read_key(data: bytes, take_book: Callable[[Unpacker, bool], _Book], take: Callable[[Unpacker], _Totals]
              ) -> tuple[RunRecord, _Book | None, SessionClock, _Totals | None]:
    fields, rest = key_parts(data)
    run = _run_of(fields)
    if rest is None:
        return run, None, SessionClock(), None
    version = int(Unpacker(data).ints()[0])
    book = take_book(rest, version >= 3)
    totals = None
    if version >= 3:
        packed = rest.blob()
        if packed:
            inner = Unpacker(packed)
            totals = take(inner)
            inner.end()
    rest.end()
    clock = fields.get("clock")
    if not (isinstance(clock, list) and len(clock) == 3 and all(isinstance(v, (int, float)) and not
                                                                isinstance(v, bool) and math.isfinite(v)
                                                                for v in clock)):
        raise Damaged("a key frame without the session's clock")
    return run, book, SessionClock(*map(float, clock)), totals


def _run_of(fields: dict[str, Any]) -> RunRecord:
    target = fields.get("target")
    if not isinstance(target, dict):
        raise Damaged("a key frame without its target")
    try:
        info = TargetInfo(value_of(target, "pid", int), value_of(target, "command", str),
                          value_of(target, "python_version", str), value_of(target, "cwd", str, None))
        return RunRecord(info, value_of(fields, "rate", float), value_of(fields, "cpu_budget", float),
                         value_of(fields, "mode", str), value_of(fields, "started", float))
    except KeyError as exc:
        raise Damaged(f"a key frame without {exc}") from None
