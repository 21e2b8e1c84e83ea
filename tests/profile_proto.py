"""Reading a pprof profile back in the tests: a protobuf wire-format decoder for the fields of
profile.proto that pytop writes (independent of pytop's encoder)."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field

Fields = dict[int, list[int | bytes]]


def fields(data: bytes) -> Fields:
    out: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.setdefault(number, []).append(value)
        elif wire == 2:
            length, at = _varint(data, at)
            out.setdefault(number, []).append(data[at:at + length])
            at += length
        else:
            raise ValueError(f"wire type {wire} is not used by profile.proto")
    return out


def varints(data: bytes) -> list[int]:
    """A packed repeated field."""
    values, at = [], 0
    while at < len(data):
        value, at = _varint(data, at)
        values.append(value)
    return values


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def first(f: Fields, number: int, default: int = 0) -> int:
    values = f.get(number, [default])
    assert isinstance(values[0], int)
    return values[0]


@dataclass
class Profile:
    strings: list[str]
    sample_types: list[tuple[str, str]]
    samples: list[tuple[list[tuple[str, str, int]], list[int], dict[str, str | int]]]  # frames, values, labels
    time_nanos: int
    duration_nanos: int
    period_type: tuple[str, str]
    period: int
    comments: list[str] = field(default_factory=list)


def read(gzipped: bytes) -> Profile:
    top = fields(gzip.decompress(gzipped))
    strings = [s.decode() for s in top.get(6, []) if isinstance(s, bytes)]

    def value_type(data: int | bytes) -> tuple[str, str]:
        assert isinstance(data, bytes)
        f = fields(data)
        return strings[first(f, 1)], strings[first(f, 2)]

    functions = {}
    for data in top.get(5, []):
        assert isinstance(data, bytes)
        f = fields(data)
        functions[first(f, 1)] = (strings[first(f, 2)], strings[first(f, 4)])
    locations = {}
    for data in top.get(4, []):
        assert isinstance(data, bytes)
        f = fields(data)
        (line_data,) = f[4]
        assert isinstance(line_data, bytes)
        line = fields(line_data)
        locations[first(f, 1)] = (*functions[first(line, 1)], first(line, 2))
    samples = []
    for data in top.get(2, []):
        assert isinstance(data, bytes)
        f = fields(data)
        ids = varints(f[1][0]) if 1 in f else []  # type: ignore[arg-type]
        values = varints(f[2][0])  # type: ignore[arg-type]
        labels: dict[str, str | int] = {}
        for label_data in f.get(3, []):
            assert isinstance(label_data, bytes)
            lf = fields(label_data)
            labels[strings[first(lf, 1)]] = strings[first(lf, 2)] if 2 in lf else first(lf, 3)
        samples.append(([locations[i] for i in ids], values, labels))
    return Profile(strings, [value_type(v) for v in top.get(1, [])], samples, first(top, 9), first(top, 10),
                   value_type(top[11][0]), first(top, 12), [strings[c] for c in top.get(13, []) if isinstance(c, int)])
