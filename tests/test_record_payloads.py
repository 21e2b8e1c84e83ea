"""What a recording's frames hold (record/payloads.py, record/codec.py) and the ranges asked of
it (record/ranges.py): written and read back whole; crafted or damaged bytes are Damaged, never
another exception, never a huge allocation; times parsed as a user writes them. Pure."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytop.core.counts import timed_stacks
from pytop.core.model import Circumstances, TargetInfo
from pytop.core.records import NO_STANDING, Drain, Node, Standing, Weight
from pytop.core.snapshot import View
from pytop.core.when import parse_when
from pytop.record.codec import Damaged, Packer, Unpacker
from pytop.record.keys import RunRecord, key_payload, read_key
from pytop.record.payloads import (
    WindowRecord,
    read_window,
    read_window_load,
    read_window_tables,
    window_load,
    window_payload,
)
from pytop.record.ranges import window_range
from pytop.record.recorder import Recorder
from pytop.record.recording import open_recording
from pytop.record.replay import Replay, TreeCheck
from record_fakes import CIRCUMSTANCES, drain


def test_a_window_comes_back_as_it_was_written() -> None:
    record = WindowRecord((drain(1), drain(2)), CIRCUMSTANCES, reset=True, dropped=3)
    again = read_window(window_payload(record))
    assert again.drains == record.drains
    assert again.reset and again.dropped == 3
    # The circumstances, but for how the live run's writing went (not the figures').
    assert again.circumstances == CIRCUMSTANCES.__class__(**{**CIRCUMSTANCES.__dict__, "record": None})


def test_standing_threads_come_back_and_a_window_of_version_2_has_none() -> None:
    standing = Standing((7, 8, 300), (12, 12, 11), (10, 10, 9), (9_000_000, 9_000_000, 8_100_000))
    record = WindowRecord((replace(drain(1), standing=standing), drain(2)), CIRCUMSTANCES)
    again = read_window(window_payload(record))
    assert again.drains[0].standing == standing and again.drains[1].standing == NO_STANDING
    tables = read_window_tables(window_payload(record))  # passed over, to the next drain
    assert [t.function_rows for t in tables.drains] == [d.function_rows for d in record.drains]
    assert read_window_load(window_payload(record)) == window_load(record)  # (likewise)
    # Version 2 wrote no standing columns: the same drain, its tail and version number aside.
    plain = window_payload(WindowRecord((drain(1),), CIRCUMSTANCES))
    tail = Packer()
    for delta in (True, False, False, False):  # thread ids as differences, then stack, samples, wall
        tail.put_ints((), delta=delta)
    head = Packer()
    head.put_ints((3, 0, 1, 0))
    assert plain.startswith(head.data()) and plain.endswith(tail.data())
    older = Packer()
    older.put_ints((2, 0, 1, 0))
    version_2 = older.data() + plain[len(head.data()):-len(tail.data())]
    assert read_window(version_2).drains == (drain(1),)


@pytest.mark.parametrize("standing", [
    Standing((7,), (1 << 30,), (1,), (1,)),  # a stack id the book would grow an array to
    Standing((7,), (12,), (-1,), (1,)),
    Standing((7, 8), (12,), (1, 1), (1, 1)),  # columns that do not add up
])
def test_standing_threads_out_of_bounds_are_damage(standing: Standing) -> None:
    with pytest.raises(Damaged):
        read_window(window_payload(WindowRecord((replace(drain(1), standing=standing),), CIRCUMSTANCES)))


def test_a_key_frame_comes_back_as_it_was_written() -> None:
    run = RunRecord(TargetInfo(4242, "python -m app\x1b[31m", "3.12.1", None), 1000.0, 0.05, "wall", time.time())
    assert read_key(key_payload(run)) == run


def test_an_empty_window_comes_back() -> None:
    record = WindowRecord((), Circumstances(window_seconds=1.0, elapsed=1.0, rate_asked=100.0))
    assert read_window(window_payload(record)) == record


@pytest.mark.parametrize("change", [
    lambda n: n._replace(node=1 << 30),  # an id the stack book would grow an array to
    lambda n: n._replace(parent=-1),
    lambda n: n._replace(line=1 << 40),
    lambda n: n._replace(kind=0x80),
])
def test_ids_out_of_bounds_are_damage(change: object) -> None:
    bad = drain()
    bad = Drain(**{**bad.__dict__, "nodes": (change(bad.nodes[1]),)})  # type: ignore[operator]
    with pytest.raises(Damaged):
        read_window(window_payload(WindowRecord((bad,), CIRCUMSTANCES)))


def test_a_column_that_claims_more_than_its_payload_is_damage() -> None:
    p = Packer()
    p.put_ints([1, 2, 3])
    data = bytearray(p.data())
    data[0:4] = (1 << 24).to_bytes(4, "little")  # a count of 16 million
    with pytest.raises(Damaged):
        Unpacker(bytes(data)).ints()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_any_bytes_are_a_window_or_damage(data: bytes) -> None:
    for reader in (read_window, read_key, read_window_tables, read_window_load):
        try:
            reader(data)
        except Damaged:
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=255), st.booleans())
def test_a_sound_window_with_one_byte_changed_or_cut_is_a_window_or_damage(at: int, value: int, cut: bool) -> None:
    data = bytearray(window_payload(WindowRecord((drain(1), drain(2)), CIRCUMSTANCES)))
    at %= len(data)
    if cut:
        data = data[:at]
    else:
        data[at] = value
    try:
        whole = window_load(read_window(bytes(data)))
    except Damaged:
        whole = None
    try:  # (the load alone reads less of the frame: it may find no damage where the whole read does)
        alone = read_window_load(bytes(data))
    except Damaged:
        assert whole is None
    else:
        assert whole is None or alone == whole
    try:
        read_window_tables(bytes(data))
    except Damaged:
        pass


@pytest.mark.parametrize("text, seconds, clock", [
    ("90", 90.0, False), ("90s", 90.0, False), ("1m30s", 90.0, False), ("2m", 120.0, False), ("1h", 3600.0, False),
    ("0.5", 0.5, False), ("14:05", 14 * 3600 + 300.0, True), ("14:05:30", 14 * 3600 + 330.0, True),
])
def test_times_as_users_write_them(text: str, seconds: float, clock: bool) -> None:
    when = parse_when(text)
    assert (when.seconds, when.clock) == (seconds, clock)


@pytest.mark.parametrize("text", ["", "abc", "1x", "25:00", "12:60", "-5", "1m1h"])
def test_what_is_not_a_time_says_what_is(text: str) -> None:
    with pytest.raises(ValueError, match="not a time"):
        parse_when(text)


def test_a_range_takes_the_windows_whose_middle_it_holds() -> None:
    spans = [(1000.0 + 2 * i, 1002.0 + 2 * i) for i in range(5)]  # 0-2, 2-4, 4-6, 6-8, 8-10 s
    assert window_range(spans, 1000.0, None, None) == (0, 4)
    assert window_range(spans, 1000.0, parse_when("2"), parse_when("6")) == (1, 2)
    assert window_range(spans, 1000.0, parse_when("2.01"), parse_when("5.99")) == (1, 2)
    assert window_range(spans, 1000.0, parse_when("4.5"), parse_when("4.7")) == (2, 2)  # within one window
    with pytest.raises(ValueError, match="nothing of it"):
        window_range(spans, 1000.0, parse_when("1h"), None)
    with pytest.raises(ValueError, match="before --from"):
        window_range(spans, 1000.0, parse_when("5"), parse_when("3"))


def test_a_time_of_day_is_on_the_recordings_day() -> None:
    start = time.mktime((2026, 11, 29, 14, 0, 0, 0, 0, -1))
    assert parse_when("14:05").at(start) == start + 300
    assert parse_when("13:59").at(start) == start - 60 + 86400  # before the start: the next day's


def test_a_crafted_stack_tree_with_a_loop_is_passed_over(tmp_path: Path) -> None:
    # Node 11 is made under 12's id while 12 is a child of 11: walking up from either would go
    # round for ever. The window that would make the loop is damage; the rest is shown.
    path = tmp_path / "loop.pytop"
    recorder = Recorder(str(path), RunRecord(TargetInfo(4242, "python app.py", "3.12.1"), 1000.0, 0.05, "cpu", 1.0))
    sound = drain(1)
    recorder.add(sound)
    recorder.window(CIRCUMSTANCES)
    looped = Drain(**{**drain(2).__dict__, "evicted": (11,), "nodes": (Node(11, 12, 77, 31, 1, 3, 2, 6, 0),),
                      "weights": (Weight(11, 7, 10, 9, 4_000_000, 9_000_000, 8_000_000),)})
    recorder.add(looped)
    recorder.window(CIRCUMSTANCES)
    recorder.close()
    replay = Replay(open_recording(str(path)))
    shown = replay.snapshot(1, View(tree=True, focus=("Worker.spin", "/srv/app.py", 0, 4242)))
    assert replay.damaged == 1
    assert shown.call_tree is not None
    exported = replay.profile(1)
    assert [info.frames for info, _ in timed_stacks(exported.counts, exported.book, "cpu")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=50), st.booleans())
def test_integers_come_back_whatever_their_width(values: list[int], delta: bool) -> None:
    p = Packer()
    try:
        p.put_ints(values, delta=delta)
    except ValueError:  # differences past 64 bits: said, never written wrong
        assert delta
        return
    unpacker = Unpacker(p.data())
    assert list(unpacker.ints()) == values
    unpacker.end()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.text(), max_size=12), st.integers(min_value=0, max_value=200),
       st.integers(min_value=0, max_value=255))
@example(["ascii", None, "", "ünïcödé_名前", "lone \udc80 surrogate"], 3, 0xFF)
def test_names_come_back_as_they_were_or_are_damage(names: list[str | None], at: int, value: int) -> None:
    # Read as one decode when the column is ASCII, name by name otherwise (lone surrogates too,
    # as a target may hold them); a byte changed anywhere is names or Damaged, never another error.
    p = Packer()
    p.put_texts(names)
    unpacker = Unpacker(p.data())
    assert unpacker.texts() == names
    unpacker.end()
    changed = bytearray(p.data())
    changed[at % len(changed)] = value
    try:
        Unpacker(bytes(changed)).texts()
    except Damaged:
        pass


def test_a_window_that_breaks_the_tree_teaches_nothing_of_it() -> None:
    # Its first drain alone is sound, its second is not: the check forgets the first too, as the
    # stack book never learns it (a check that kept it would pass a later node the book cannot
    # place: the way to a loop).
    tree = TreeCheck()
    assert tree.sound([drain(1)])
    before = (dict(tree.depth), dict(tree.children), dict(tree.parents))
    sound = Drain(**{**drain(2).__dict__, "evicted": (12,), "nodes": (Node(20, 11, 5, 1, 1, 3, 1, 6, 0),)})
    broken = Drain(**{**drain(3).__dict__, "evicted": (), "nodes": (Node(21, 99, 5, 1, 1, 3, 1, 6, 0),)})
    assert not tree.sound([sound, broken])
    assert (tree.depth, tree.children, tree.parents) == before
    assert tree.sound([sound])  # alone, it is taken
