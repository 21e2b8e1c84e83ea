"""Key frames with the session's totals (record/totals.py): a range from a recording's start
taken in from the last such key, not from every window; the same figures either way, to the
nanosecond. Crafted totals are damage."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_record_replay import Kept, same_figures

import helpers
from pytop.core import commands
from pytop.core.intake import fold_finished, take_in
from pytop.core.snapshot import Figures, View, rows_of
from pytop.core.stack_book import StackBook
from pytop.process.attach import attach
from pytop.record import container
from pytop.record.codec import Damaged, Packer, Unpacker
from pytop.record.keys import RunRecord, key_payload, read_key_state, read_key_tables
from pytop.record.prefix import range_tables
from pytop.record.recorder import Recorder
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.record.totals import put_totals, take_totals
from pytop.report import table
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings
from record_fakes import TARGET, drain, write_recording


def summed() -> Figures:
    f = Figures()
    for n in (1, 2, 3):
        take_in(f, drain(n))
        fold_finished(f)
    return f


def packed(f: Figures, span: float = 2.5) -> bytes:
    p = Packer()
    assert f.totals is not None
    put_totals(p, f.total, f.totals, f.threads, span)
    return p.data()


def test_totals_come_back_as_they_were_summed() -> None:
    f = summed()
    u = Unpacker(packed(f))
    t = take_totals(u)
    u.end()
    assert t.total == f.total and t.span == 2.5
    assert f.totals is not None and t.by_function == f.totals.by_function and t.by_line == f.totals.by_line
    assert t.tasks == frozenset(f.totals.tasks) and t.natives == frozenset(f.totals.natives)
    assert t.threads == f.threads.threads and t.ended == f.threads.ended_count
    # (what a replay adds to is a copy: the key's own figures stay as they were read)
    sums = t.sums(f.book)
    next(iter(sums.by_function.values()))[0] += 1
    assert t.by_function == f.totals.by_function


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=100_000), st.integers(min_value=0, max_value=255), st.booleans())
def test_a_key_with_totals_changed_or_cut_anywhere_is_a_key_or_damage(at: int, value: int, cut: bool) -> None:
    data = bytearray(key_payload(RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0), drain(1), None, packed(summed())))
    at %= len(data)
    if cut:
        data = data[:at]
    else:
        data[at] = value
    for read in (read_key_state, read_key_tables):
        try:
            read(bytes(data))
        except Damaged:
            pass


def test_a_key_read_for_its_tables_alone_names_and_sums_as_read_whole() -> None:
    data = key_payload(RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0), drain(1), None, packed(summed()))
    whole, tables = read_key_state(data), read_key_tables(data)
    assert whole.book is not None and tables.book is not None and whole.totals is not None
    assert tables.book.functions == whole.book.functions and tables.book.processes == whole.book.processes
    assert tables.book.functions and tables.clock == whole.clock and tables.totals is not None
    assert tables.totals.by_function == whole.totals.by_function and tables.totals.by_line == whole.totals.by_line
    assert (tables.totals.tasks, tables.totals.natives) == (whole.totals.tasks, whole.totals.natives)
    assert tables.totals.span == whole.totals.span and not tables.totals.folded
    assert tables.totals.sums(StackBook()).by_function == whole.totals.sums(StackBook()).by_function


def test_a_range_from_the_start_is_taken_in_from_the_last_key_with_totals(some_interp: dict[str, Any],
                                                                          tmp_path: Path, monkeypatch: Any) -> None:
    # The thread-per-request server, a key frame every second or so: each window's figures, and
    # the totals from the recording's start, read from the last key before it are those read
    # from every window; after the view's figures are reset, keys hold no totals (the view's
    # figures are no longer the session's).
    path = tmp_path / "keys.pytop"
    with helpers.running(some_interp, "server.py") as t:
        target = attach(t.pid)
        info = info_of(target)
        settings = Settings(rate=300, delay=0.25, cpu_budget=0)
        recorder = Recorder(str(path), RunRecord(info, 300.0, 0.0, "cpu", time.time()), key_seconds=1.0)
        sampler = Sampler(target.unwinder, info, settings, recorder=recorder)
        kept = Kept()
        with helpers.sampling(sampler, kept):
            helpers.wait_until(lambda: recorder.keys >= 4, timeout=120)
            sampler.send(commands.Reset())
            keys_before = recorder.keys
            helpers.wait_until(lambda: recorder.keys >= keys_before + 2, timeout=120)
        target.close()
    status = recorder.close()
    assert status.dropped == 0, status
    recording = open_recording(str(path))
    with open(path, "rb") as f:
        totals = [read_key_state(container.payload(f, k.frame)).totals is not None for k in recording.keys]
    reset_at = next(i for i, w in enumerate(recording.windows) if _reset(path, w))
    with_totals = [k for k, has in zip(recording.keys, totals) if has]
    assert len(with_totals) >= 3 and all(k.index <= reset_at for k in with_totals), (totals, reset_at)
    assert not any(has for k, has in zip(recording.keys, totals) if k.index > reset_at + 1)
    every, every_as_one = Replay(recording, keys=False), Replay(recording, keys=False)
    view = View(mode="cpu", threads=True)
    expected = []
    for index in range(len(recording.windows)):
        start = max((k.index for k in with_totals if k.index <= index), default=0)
        # (a key right after the window holds the state it left: the window alone is read)
        reads = 1 if any(k.index == index + 1 for k in with_totals) else index - start + 1
        fresh = Replay(recording)
        expected.append(every.snapshot(index, view))
        same_figures(expected[-1], fresh.snapshot(index, view))
        assert fresh.windows_read == reads, (index, start)
        fresh.close()
        # The range as one window (pytop --batch FILE, --diff): the same report, byte for byte.
        fresh = Replay(recording)
        as_one, again = every_as_one.snapshot(index, view, whole=True), fresh.snapshot(index, view, whole=True)
        same_figures(as_one, again)
        assert again.run.window_seconds == as_one.run.window_seconds and again.run.elapsed == as_one.run.elapsed
        for form in ("json", "text", "collapsed", "speedscope"):
            assert (table.render(again, fresh.profile(index), form, "own_pct", False)
                    == table.render(as_one, every_as_one.profile(index), form, "own_pct", False)), form
        assert fresh.windows_read == reads, (index, start)
        fresh.close()
    every.close()
    every_as_one.close()
    # A range's tables by difference of the session's (record/prefix.py, what --diff and
    # --baseline take): the figures of the range replayed whole, to the nanosecond, and its
    # seconds, for ranges that begin and end anywhere, at keys, between them, across the reset;
    # an end nearer the key after it taken from that key's totals less the windows between.
    from pytop.record import prefix

    backwards, before_key = [], prefix._tables_before_key

    def counted(*args: Any) -> Any:
        backwards.append(before_key(*args))
        return backwards[-1]

    monkeypatch.setattr(prefix, "_tables_before_key", counted)
    n = len(recording.windows)
    for first, last in {(0, n - 1), (0, n // 2), (1, n - 1), (n // 3, 2 * n // 3), (n - 1, n - 1),
                        (reset_at, n - 1), (max(0, reset_at - 2), min(n - 1, reset_at + 1))}:
        tables = range_tables(recording, first, last)
        assert tables is not None, (first, last)
        for by_line in (False, True):
            replayed = Replay(recording)
            whole = replayed.snapshot(last, View(mode="cpu", by_line=by_line), first, whole=True)
            replayed.close()
            shown = rows_of(tables.sums, tables.sums, tables.span, "cpu", by_line, View().tasks)
            assert figures_of(shown) == figures_of(whole.rows)
            assert tables.seconds == whole.run.elapsed, (first, last)
    assert any(after is not None for after in backwards), backwards
    # Working ahead while the view waits (Replay.warm, run by the replay's thread between keys;
    # here stopped every fifth window, as a key press stops it): then each step back from the
    # end, window by window, is a checkpoint restored and at most one window read (the first
    # two: read from the file's start), never the windows since the key before; the same figures.
    warmed, asked = Replay(recording, checkpoint_every=2), [0]
    last = len(recording.windows) - 1
    warmed.snapshot(last, view)

    def a_key_every_fifth_window() -> bool:
        asked[0] += 1
        return asked[0] % 5 == 0

    while warmed.warm(last, 0, stop=a_key_every_fifth_window):
        pass
    assert asked[0] >= 5
    for index in range(last, -1, -1):
        before = warmed.windows_read
        same_figures(expected[index], warmed.snapshot(index, view))
        assert warmed.windows_read - before <= (1 if index >= 2 else index + 1), (index, warmed.windows_read - before)
    warmed.close()


def test_a_batch_recording_ends_with_the_state_its_last_window_left(some_interp: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    """A run that ends writes a key frame after its last window, with the totals: a reader
    opening the recording at its end (pytop FILE) reads that window alone, not the windows since
    the last key (an hour's 127 windows, 1.9 s), and shows the same figures."""
    path = tmp_path / "batch.pytop"
    with helpers.running(some_interp, "server.py") as t:
        done = helpers.run_pytop("--batch", "--duration", "5", "--cpu-budget", "0", "--record", str(path), str(t.pid))
    assert done.returncode == 0, done.stderr
    recording = open_recording(str(path))
    last = len(recording.windows) - 1
    assert last >= 1 and recording.keys[-1].index == last + 1, ([k.index for k in recording.keys], last)
    view = View(mode="cpu", threads=True)
    for whole in (False, True):
        every, opened = Replay(recording, keys=False), Replay(recording)
        expected, got = every.snapshot(last, view, whole=whole), opened.snapshot(last, view, whole=whole)
        same_figures(expected, got)
        assert got.run.window_seconds == expected.run.window_seconds and got.run.elapsed == expected.run.elapsed
        assert opened.windows_read == 1 < every.windows_read, (opened.windows_read, every.windows_read)
        every.close()
        opened.close()


def figures_of(rows: Any) -> dict[Any, tuple[float, float, int, int, bool]]:
    return {r.key: (r.own_time, r.total_time, r.own_count, r.total_count, r.native) for r in rows}


def test_a_range_by_difference_without_key_totals_is_summed_from_the_start(tmp_path: Path) -> None:
    # No key frame holds totals (a recording shorter than a key's interval): the session's tables
    # are summed from the first window, and the difference is still the range's.
    path = tmp_path / "short.pytop"
    write_recording(path, 6)
    recording = open_recording(str(path))
    for first, last in ((0, 5), (2, 4), (5, 5)):
        tables = range_tables(recording, first, last)
        assert tables is not None
        replayed = Replay(recording)
        for tasks in (False, True):
            whole = replayed.snapshot(last, View(mode="cpu", tasks=tasks), first, whole=True)
            shown = rows_of(tables.sums, tables.sums, tables.span, "cpu", False, tasks)
            assert figures_of(shown) == figures_of(whole.rows), tasks
        replayed.close()
        assert whole.rows and tables.seconds == whole.run.elapsed


def long_replay(tmp_path: Path) -> tuple[Replay, int, int]:
    """A replay (a checkpoint every 3 windows) of a recording of 60 drains, read to its last
    window (written once); that window, and the bytes of its largest checkpoint."""
    path = tmp_path / "long.pytop"
    if not path.exists():
        write_recording(path, 60)
    replay = Replay(open_recording(str(path)), checkpoint_every=3)
    last = len(replay) - 1
    assert last >= 20
    replay.snapshot(last, View())
    return replay, last, max(len(packed) for _, packed in replay._checkpoints.values())


def checkpoint_bytes(replay: Replay) -> int:
    return sum(len(packed) for _, packed in replay._checkpoints.values())


def test_working_ahead_stops_at_its_memory_bound(tmp_path: Path, monkeypatch: Any) -> None:
    # Checkpoints cost memory (an hour of churn: ~1 MB each): work ahead stops at three
    # quarters of their bound, never past it, and ends (it never makes what thinning removes).
    from pytop.record import replay as replay_module

    sizing, last, one = long_replay(tmp_path)
    sizing.close()
    monkeypatch.setattr(replay_module, "MAX_CHECKPOINT_BYTES", 8 * one)
    replay, _, _ = long_replay(tmp_path)
    replay._checkpoints.clear()  # (the seek's own, one every third window, fill the bound already)
    calls = 0
    while replay.warm(last) and calls < 1000:
        calls += 1
    assert 0 < calls < 1000 and checkpoint_bytes(replay) <= 8 * one
    assert 5 <= len(replay._checkpoints) <= 8
    replay.close()


def test_working_ahead_behind_a_cursor_moved_back_makes_room_there(tmp_path: Path, monkeypatch: Any) -> None:
    # Checkpoints filling the bound around an earlier cursor once left none to make behind a
    # later one: a step back from there read every window since the key frame (130 an hour in).
    from pytop.record import replay as replay_module

    replay, last, one = long_replay(tmp_path)
    assert last >= 25
    monkeypatch.setattr(replay_module, "MAX_CHECKPOINT_BYTES", 12 * one)
    monkeypatch.setattr(replay_module, "WARM_WINDOWS", 6)
    replay._checkpoints.clear()
    while replay.warm(last):
        pass
    assert min(replay._checkpoints) > last - 15  # (none behind the cursor to come)
    cursor = last - 15
    replay.snapshot(cursor, View())
    while replay.warm(cursor):
        pass
    behind = [at for at in replay._checkpoints if cursor - 6 <= at < cursor]
    assert len(behind) >= 3, (cursor, last, sorted(replay._checkpoints))
    assert checkpoint_bytes(replay) <= 12 * one
    replay.close()


def test_function_sums_come_back_from_a_pickle_as_they_were() -> None:
    import pickle

    f = summed()
    again = pickle.loads(pickle.dumps(f))  # noqa: S301 (made here)
    for mine, theirs in ((f.totals, again.totals), (f.window_table, again.window_table)):
        assert mine.by_function == theirs.by_function and mine.by_line == theirs.by_line
        assert mine.tasks == theirs.tasks and mine.natives == theirs.natives
        assert theirs.book is again.book and theirs.by_line


def _reset(path: Path, window: Any) -> bool:
    from pytop.record.payloads import read_window

    with open(path, "rb") as f:
        return read_window(container.payload(f, window.frame)).reset
