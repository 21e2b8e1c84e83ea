"""What the frames of a recording of the host's table hold (`pytop --record FILE` without a PID,
`--batch --all --record FILE`), to bytes and back; docs/recording.md says the layout.

A window is one look at the host: every Python process as the table listed it (its CPU share
since the look before, threads, memory, command line, why pytop cannot read it) and the heats
the host sampler had for the busiest (their hottest functions, GIL share). A host of hundreds of
processes repeats its command lines and users at every look: each text is written once, in the
window that first needs it, and referred to by number after (a window's new texts carry their
first number, so a window lost to damage costs only the windows that refer to what it brought).

Decoding checks every value: numbers of texts known, counts that add up. A payload that fails is
Damaged."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..core.model import Heat, PythonProcess
from .codec import Damaged, Packer, Unpacker, same_length
from .keys import key_fields, key_parts
from .payloads import value_of

HOST_WINDOW_VERSION = 1  # its window frames: one look at the host
HOST_KEY_VERSION = 2  # its key frames: the texts so far after the JSON (a run's key frames went on to 3)
HOST = "host"  # a key frame's "kind": a recording of the host's table (a run's key frames have none)
MAX_TEXTS = 1 << 22  # texts in one recording: a host's command lines; past this a file is crafted
NONE = -1  # a text that is not there (no problem, no pid inside a container)


class HostKey(NamedTuple):
    """What a host recording's key frame says."""

    started: float  # wall-clock seconds of the first look
    refresh: float  # seconds between two looks asked
    cpu_budget: float  # share of a core
    host: str  # the machine's name


def host_key_payload(key: HostKey, texts: Texts | None = None) -> bytes:
    """The key frame: the recording's, and every text the file holds so far (`texts`), so that
    a reader may start there (the oldest part of a file rotated away, or a seek)."""
    p = Packer()
    p.put_ints((HOST_KEY_VERSION,))
    fields = {"kind": HOST, "started": key.started, "refresh": key.refresh, "cpu_budget": key.cpu_budget,
              "host": key.host}
    p.put_blob(json.dumps(fields, allow_nan=False).encode())
    numbered: list[str | None] = [None] * len(texts or {})
    for text, number in (texts or {}).items():
        numbered[number] = text
    p.put_texts(numbered)
    return p.data()


def key_kind(data: bytes) -> str:
    """A key frame's kind: HOST, or "run" (Damaged if it is not a key frame of this version)."""
    kind = key_fields(data).get("kind", "run")
    return kind if isinstance(kind, str) else "?"


def read_host_key(data: bytes) -> HostKey:
    return read_host_key_texts(data)[0]


def read_host_key_texts(data: bytes) -> tuple[HostKey, list[str | None]]:
    """The key, and the texts the file held when it was written, at their numbers."""
    fields, rest = key_parts(data)
    texts: list[str | None] = []
    if rest is not None:
        texts = list(rest.texts())
        rest.end()
        if len(texts) > MAX_TEXTS:
            raise Damaged("more texts than a recording holds")
    return _host_key(fields), texts


def _host_key(fields: dict[str, Any]) -> HostKey:
    if fields.get("kind") != HOST:
        raise Damaged("not a key frame of the host's table")
    try:
        return HostKey(value_of(fields, "started", float), value_of(fields, "refresh", float),
                       value_of(fields, "cpu_budget", float), value_of(fields, "host", str))
    except KeyError as exc:
        raise Damaged(f"a key frame without {exc}") from None


class HostWindow(NamedTuple):
    """One look at the host, as the table showed it."""

    processes: tuple[PythonProcess, ...]  # busiest first
    # pid -> what the host sampler's windows that closed since the look before said (each
    # window's heats are written once, with the look after it; a look with none shows the
    # last ones written, as the live table does)
    heats: tuple[tuple[int, Heat], ...]
    seconds: float  # what the CPU shares are measured over (since the look before)
    dropped: int = 0  # looks just before it that were lost (the disk could not keep up)
    heats_new: bool = True  # heats closed since the look before came with it (else: none did)


Texts = dict[str, int]  # the writer's: each text the file holds, and its number


def host_window_payload(w: HostWindow, texts: Texts) -> tuple[bytes, Texts]:
    """The window's payload, and the texts the file holds once it is written (`texts` is left as
    it was: a write that fails writes none of the new ones)."""
    known = texts
    new: list[str] = []

    def number(text: str | None) -> int:
        nonlocal known
        if text is None:
            return NONE
        at = known.get(text)
        if at is None:
            if known is texts:
                known = dict(texts)
            at = known[text] = len(known)
            new.append(text)
        return at

    processes = [(p.pid, round(p.cpu_pct * 1000), p.threads, p.rss, p.parent,
                  NONE if p.pid_inside is None else p.pid_inside,
                  number(p.user), number(p.command), number(p.version), number(p.problem)) for p in w.processes]
    heats = [(pid, round(h.cpu_seconds * 1e9), h.samples, h.gil_samples, len(h.functions)) for pid, h in w.heats]
    functions = [(number(f), number(filename), round(seconds * 1e9))
                 for _, h in w.heats for f, filename, seconds in h.functions]
    p = Packer()
    p.put_ints((HOST_WINDOW_VERSION, w.dropped, len(texts), int(w.heats_new)))
    p.put_floats((w.seconds,))
    p.put_texts(new)
    _put_columns(p, processes, 10)
    _put_columns(p, heats, 5)
    _put_columns(p, functions, 3)
    return p.data(), known


def _put_columns(p: Packer, rows: Sequence[tuple[int, ...]], width: int) -> None:
    columns = list(zip(*rows)) if rows else [()] * width
    for column in columns:
        p.put_ints(column)


def _take_columns(u: Unpacker, width: int) -> list[tuple[int, ...]]:
    columns = [u.ints() for _ in range(width)]
    same_length(*columns)
    return list(zip(*columns))


def learn_texts(data: bytes, texts: list[str | None]) -> None:
    """The texts a window brings, put at their numbers in `texts` (which grows; numbers not
    learned stay None): what the windows after it may refer to."""
    u = Unpacker(data)
    head = u.ints()
    if len(head) != 4 or head[0] != HOST_WINDOW_VERSION or head[1] < 0 or not 0 <= head[2] < MAX_TEXTS:
        raise Damaged("a window of another making")
    u.floats()
    new = u.texts()
    first = head[2]
    if first + len(new) > MAX_TEXTS or any(t is None for t in new):
        raise Damaged("a window's texts are out of bounds")
    if len(texts) < first + len(new):
        texts.extend([None] * (first + len(new) - len(texts)))
    texts[first:first + len(new)] = new


def read_host_window(data: bytes, texts: Sequence[str | None]) -> HostWindow:
    """A window, its texts looked up in `texts` (learn_texts of it and of every window before)."""
    u = Unpacker(data)
    head = u.ints()
    if len(head) != 4 or head[0] != HOST_WINDOW_VERSION or head[1] < 0 or head[3] not in (0, 1):
        raise Damaged("a window of another making")
    (seconds,) = u.floats() or (math.nan,)
    if not (math.isfinite(seconds) and seconds >= 0):
        raise Damaged("a window's time is not a number")
    u.texts()  # (learned already)

    def text(number: int) -> str:
        if not 0 <= number < len(texts) or texts[number] is None:
            raise Damaged("a text the file does not hold")
        return texts[number]  # type: ignore[return-value]

    def maybe(number: int) -> str | None:
        return None if number == NONE else text(number)

    rows = _take_columns(u, 10)
    if any(r[0] <= 0 or min(r[1:4]) < 0 for r in rows):
        raise Damaged("a process's figures are out of bounds")
    processes = tuple(
        PythonProcess(pid, text(user), text(command), milli / 1000, text(version), threads, rss,
                      None if inside == NONE else inside, maybe(problem), parent)
        for pid, milli, threads, rss, parent, inside, user, command, version, problem in rows)
    heat_rows = _take_columns(u, 5)
    functions = _take_columns(u, 3)
    u.end()
    if sum(n for *_, n in heat_rows) != len(functions) or any(n < 0 for *_, n in heat_rows):
        raise Damaged("a window's hottest functions do not add up")
    heats = []
    at = 0
    for pid, cpu_ns, samples, gil, n in heat_rows:
        mine = tuple((text(f), text(filename), ns / 1e9) for f, filename, ns in functions[at:at + n])
        at += n
        heats.append((pid, Heat(mine, cpu_ns / 1e9, samples, gil)))
    return HostWindow(processes, tuple(heats), seconds, head[1], bool(head[3]))

