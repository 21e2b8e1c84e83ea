"""The native line-table and str decoders: the same answers as CPython on real code, and no
crash, hang or out-of-range read on random and truncated input."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from pytop.native import decode_line, decode_text

FORMATS = (1, 2, 3)  # co_lnotab (3.8-3.9), co_linetable (3.10), location table (3.11+)


def test_line_tables_read_as_cpython_reads_them(interp: dict[str, Any]) -> None:
    script = helpers.stage(interp, "line_tables.py")
    proc = subprocess.run([*interp["argv"], script], capture_output=True, text=True,
                          env=helpers.target_env(), timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    tables = json.loads(proc.stdout)
    assert len(tables) > 100
    checked = 0
    for entry in tables:
        table = bytes.fromhex(entry["table"])
        for index, expected in enumerate(entry["expected"]):
            assert decode_line(entry["format"], table, entry["firstlineno"], index * 2) == expected
            checked += 1
    assert checked > 10_000


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FORMATS), st.binary(max_size=600), st.integers(-5, 5000), st.integers(-4, 4000))
def test_line_decoder_survives_any_bytes(fmt: int, table: bytes, first: int, offset: int) -> None:
    line = decode_line(fmt, table, first, offset)
    assert isinstance(line, int)
    # Every truncation of the same table must be just as safe.
    for cut in (0, 1, len(table) // 2, max(len(table) - 1, 0)):
        decode_line(fmt, table[:cut], first, offset)


def expected_text(kind: int, data: bytes, count: int) -> str:
    units = [int.from_bytes(data[i * kind:(i + 1) * kind], "little") for i in range(count)]
    return "".join("\ufffd" if 0xD800 <= u <= 0xDFFF or u > 0x10FFFF else chr(u) for u in units)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from((1, 2, 4)), st.binary(max_size=400), st.integers(0, 300))
def test_text_decoder(kind: int, data: bytes, count: int) -> None:
    got = decode_text(kind, data, count)
    if count > len(data) // kind:
        assert got is None
    else:
        assert got == expected_text(kind, data, count)


def test_text_decoder_rejects_bad_kind_and_cuts_long_text() -> None:
    assert decode_text(3, b"abc", 1) is None
    assert decode_text(1, "é".encode("latin-1") * 10, 10, capacity=9) == "éééé"
    assert decode_text(4, "😀".encode("utf-32-le") * 3, 3, capacity=8) == "😀"
