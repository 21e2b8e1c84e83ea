"""The native line-table and str decoders: the same answers as CPython on real code, and no
crash, hang or out-of-range read on random and truncated input."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
import line_reference
from pytop.native import decode_line, decode_text

FORMATS = (1, 2, 3, 4)  # co_lnotab (3.6-3.9), co_linetable (3.10), location table (3.11+), 2.7's co_lnotab


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
            assert decode_line(entry["format"], table, entry["firstlineno"], index * entry["step"]) == expected
            checked += 1
    assert checked > 10_000


# Tables of whole entries (a head byte with the top bit set, then its other bytes): random bytes
# alone would mostly end a 3.11+ table at its first byte.
ENTRIES = st.lists(st.tuples(st.integers(0x80, 0xFF), st.binary(max_size=7)), max_size=80).map(
    lambda entries: b"".join(bytes([head]) + bytes(b & 0x7F for b in rest) for head, rest in entries))


def check_against_reference(fmt: int, table: bytes, first: int, offsets: list[int]) -> None:
    for offset in offsets:
        got = decode_line(fmt, table, first, offset)
        assert got == line_reference.line_of(fmt, table, first, offset), (fmt, table.hex(), first, offset)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FORMATS), st.one_of(st.binary(max_size=600), ENTRIES),
       st.one_of(st.integers(-5, 5000), st.integers(2**31 - 300, 2**31 - 1), st.integers(-2**31, -2**31 + 300)),
       st.lists(st.integers(-4, 4000), max_size=20))
def test_line_decoder_agrees_with_cpythons_reader_on_any_bytes(fmt: int, table: bytes, first: int,
                                                               offsets: list[int]) -> None:
    """Any bytes, whole or cut anywhere: the line CPython's reader gives (line_reference.py), and
    no crash, hang or read past the end (the sanitizer build runs this file too)."""
    edges = [0, 1, 2, len(table), 2 * len(table), 255 * len(table) // 2]
    for cut in (len(table), len(table) - 1, len(table) // 2, 1, 0):
        check_against_reference(fmt, table[:max(cut, 0)], first, offsets + edges)


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


def test_cxx_names_are_demangled() -> None:
    """--native's C++ functions read as people write them (the C++ runtime's demangler), a
    compiler clone's suffix said; other names, and what is no valid mangling, as they are."""
    from pytop.native.stateless import demangled

    assert demangled("_Z11svd_wrapperIdEvcPPcPKlS3_.constprop.1") == \
        "void svd_wrapper<double>(char, char**, long const*, long const*) [clone .constprop.1]"
    assert demangled("_ZNSt6vectorIiSaIiEE9push_backERKi") == \
        "std::vector<int, std::allocator<int> >::push_back(int const&)"
    assert demangled("deflate") == "deflate" and demangled("_Zbogus") == "_Zbogus"
