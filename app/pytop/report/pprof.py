"""What was sampled as a pprof profile: gzipped `profile.proto` (github.com/google/pprof,
proto/profile.proto), read by `go tool pprof`, Pyroscope, Parca and Grafana. Pure.

One Sample per (thread, stack): values [samples, time in the mode's nanoseconds], labels pid,
thread_id (the kernel's TID) and thread_name. Locations are one per (function, file, line), each
with one Line of a Function per (function, file). The encoding is written here: the message is
small and fixed, and a protobuf runtime would be a dependency for ten field numbers.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable

from ..core.model import Mode
from ..core.profile import Profile, Sample, samples_of

# Field numbers of profile.proto.
PROFILE_SAMPLE_TYPE, PROFILE_SAMPLE, PROFILE_LOCATION, PROFILE_FUNCTION, PROFILE_STRINGS = 1, 2, 4, 5, 6
PROFILE_TIME, PROFILE_DURATION, PROFILE_PERIOD_TYPE, PROFILE_PERIOD, PROFILE_COMMENT = 9, 10, 11, 12, 13
PROFILE_DEFAULT_TYPE = 14
SAMPLE_LOCATION, SAMPLE_VALUE, SAMPLE_LABEL = 1, 2, 3
LABEL_KEY, LABEL_STR, LABEL_NUM = 1, 2, 3
LOCATION_ID, LOCATION_LINE = 1, 4
LINE_FUNCTION, LINE_LINE = 1, 2
FUNCTION_ID, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME = 1, 2, 3, 4
VALUE_TYPE, VALUE_UNIT = 1, 2


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64: two's complement, as protobuf encodes negatives
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def number(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value) if value else b""


def message(field: int, body: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(body)) + body


def packed(field: int, values: list[int]) -> bytes:
    return message(field, b"".join(varint(v) for v in values)) if values else b""


def label(key: int, field: int, value: int) -> bytes:
    """A Label: `field` is LABEL_NUM for a number, LABEL_STR for a string index."""
    return message(SAMPLE_LABEL, number(LABEL_KEY, key) + number(field, value))


class Strings:
    """The string table: index 0 is the empty string, as the format requires."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def encoded(self) -> bytes:
        return b"".join(message(PROFILE_STRINGS, text.encode("utf-8")) for text in self.index)


def profile(run: Profile, mode: Mode, rate: float, start_ns: int, duration_ns: int) -> bytes:
    """The gzipped pprof profile of `run`."""
    return encode(samples_of(run.counts, run.book, run.thread_of, mode), mode, rate, start_ns, duration_ns,
                  run.title)


def encode(samples: Iterable[Sample], mode: Mode, rate: float, start_ns: int, duration_ns: int,
           comment: str) -> bytes:
    """The gzipped pprof profile of `samples`: values [samples, time in the mode's nanoseconds]."""
    strings = Strings()
    unit = strings("nanoseconds")
    kind = strings(mode)
    functions: dict[tuple[str, str], int] = {}
    locations: dict[tuple[str, str, int], int] = {}
    body = bytearray()
    body += message(PROFILE_SAMPLE_TYPE, number(VALUE_TYPE, strings("samples")) + number(VALUE_UNIT, strings("count")))
    body += message(PROFILE_SAMPLE_TYPE, number(VALUE_TYPE, kind) + number(VALUE_UNIT, unit))
    stacks: dict[int, tuple[tuple[tuple[str, str, int], ...], bytes]] = {}  # id(frames) -> (frames, its ids packed)
    for sample in samples:
        known = stacks.get(id(sample.frames))
        if known is not None and known[0] is sample.frames:  # (the same tuple: samples_of shares one a stack)
            location_ids = known[1]
        else:
            ids = []
            for function, filename, line in sample.frames:  # innermost first, as pprof wants
                where = (function, filename, max(line, 0))
                if where not in locations:
                    locations[where] = len(locations) + 1
                    functions.setdefault((function, filename), len(functions) + 1)
                ids.append(locations[where])
            location_ids = packed(SAMPLE_LOCATION, ids)
            stacks[id(sample.frames)] = (sample.frames, location_ids)
        labels = label(strings("pid"), LABEL_NUM, sample.pid)
        if sample.tid:
            labels += label(strings("thread_id"), LABEL_NUM, sample.tid)
        if sample.thread_name:
            labels += label(strings("thread_name"), LABEL_STR, strings(sample.thread_name))
        values = [sample.samples, sample.nanoseconds]
        body += message(PROFILE_SAMPLE, location_ids + packed(SAMPLE_VALUE, values) + labels)
    for (function, filename, line), location in locations.items():
        line_record = number(LINE_FUNCTION, functions[(function, filename)]) + number(LINE_LINE, line)
        body += message(PROFILE_LOCATION, number(LOCATION_ID, location) + message(LOCATION_LINE, line_record))
    for (function, filename), function_id in functions.items():
        name_index = strings(function)
        body += message(PROFILE_FUNCTION, number(FUNCTION_ID, function_id) + number(FUNCTION_NAME, name_index)
                        + number(FUNCTION_SYSTEM_NAME, name_index) + number(FUNCTION_FILENAME, strings(filename)))
    body += number(PROFILE_TIME, start_ns) + number(PROFILE_DURATION, duration_ns)
    body += message(PROFILE_PERIOD_TYPE, number(VALUE_TYPE, kind) + number(VALUE_UNIT, unit))
    body += number(PROFILE_PERIOD, round(1e9 / rate) if rate else 0)
    body += number(PROFILE_COMMENT, strings(comment))
    body += number(PROFILE_DEFAULT_TYPE, kind)
    return gzip.compress(bytes(body) + strings.encoded())
