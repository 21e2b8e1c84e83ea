"""A bounded recording (--record-max-size): past its bound the oldest part goes, up to a key
frame, and what is kept reads whole, says what went, and replays as the unbounded recording of
the same session shows the same windows, figure by figure."""

from __future__ import annotations

import collections
import os
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from test_record_replay import Kept, same_figures

import helpers
from pytop import errors
from pytop.cli import record_size
from pytop.core.model import Circumstances, RecordStatus, Snapshot
from pytop.core.records import Drain
from pytop.core.snapshot import View
from pytop.process.attach import attach
from pytop.record import container
from pytop.record.bounds import KEEP_SHARE
from pytop.record.keys import RunRecord, read_key_state
from pytop.record.payloads import read_note
from pytop.record.queued import QueuedWriter
from pytop.record.recorder import Recorder
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings

# ---- the container: a cut keeps whole frames from a key on, and says what went ---------------


def noise(size: int, seed: int) -> bytes:
    """A payload that does not compress: the file's size is what the test writes."""
    return random.Random(seed).randbytes(size)


def written(path: Path) -> list[tuple[int, bytes, float]]:
    """The file's frames as read back: kind, payload, start."""
    return [(f.kind, data, f.start) for f, data in container.frames(str(path)) if f is not None]


def filled(path: Path, windows: int, key_every: int) -> tuple[container.Writer, list[tuple[int, bytes, float]]]:
    w = container.Writer(str(path))
    frames = []
    for i in range(windows):
        if i % key_every == 0:
            frames.append((container.KEY, b"key %d" % i, float(i)))
            w.write(container.KEY, frames[-1][1], i, i)
        frames.append((container.WINDOW, noise(1000, i), float(i)))
        w.write(container.WINDOW, frames[-1][1], i, i + 1)
    return w, frames


def test_a_cut_keeps_the_newest_frames_from_a_key_on_and_notes_what_went(tmp_path: Path) -> None:
    path = tmp_path / "bounded.pytop"
    w, frames = filled(path, 100, key_every=10)
    before = path.stat().st_size
    keep = 30_000
    dropped = w.cut(keep, lambda rotated, since: f"{rotated} {since}".encode())
    assert dropped > 0 and w.size == path.stat().st_size <= keep + 200
    (note, *kept) = written(path)
    assert note[0] == container.NOTE
    rotated, since = note[1].decode().split()
    note_size = len(container.frame_bytes(container.NOTE, note[1], float(since), float(since)))
    assert int(rotated) == dropped == before - w.size + note_size
    # What is kept is the newest frames exactly, beginning at a key frame (the one "since" names)
    assert kept[0][0] == container.KEY and float(since) == kept[0][2]
    assert kept == frames[len(frames) - len(kept):]
    assert len(kept) * 1036 > KEEP_SHARE * keep * 0.5  # (not much more went than needed)
    # A second cut says all that went since the recording began, and appends go on after it
    w.write(container.WINDOW, b"after", 200, 201)
    again = w.cut(15_000, lambda rotated, since: f"{rotated} {since}".encode())
    assert again > 0
    note2, *kept2 = written(path)
    assert int(note2[1].split()[0]) == int(rotated) + again
    assert kept2[-1] == (container.WINDOW, b"after", 200.0) and kept2[0][0] == container.KEY
    w.close()


def test_no_key_frame_to_cut_at_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "bounded.pytop"
    w, _ = filled(path, 20, key_every=100)  # one key, at the start: nothing after it to cut at
    content = path.read_bytes()
    assert w.cut(1000, lambda rotated, since: b"") == 0
    assert path.read_bytes() == content
    w.close()


def test_after_a_cut_the_file_is_still_locked_against_a_second_pytop(tmp_path: Path) -> None:
    path = tmp_path / "bounded.pytop"
    w, _ = filled(path, 50, key_every=5)
    assert w.cut(10_000, lambda rotated, since: b"note")
    with pytest.raises(errors.UsageError, match="being recorded by another pytop"):
        container.Writer(str(path))
    assert not [p for p in tmp_path.iterdir() if p.name != path.name]  # no temporary file left
    w.close()


def test_a_cut_that_cannot_write_keeps_the_old_file_whole(tmp_path: Path) -> None:
    # The temporary file's name is taken (by a directory): the cut fails with OSError, and the
    # recording is what it was, still appended to.
    path = tmp_path / "bounded.pytop"
    w, frames = filled(path, 50, key_every=5)
    (tmp_path / f".{path.name}.rotating-{os.getpid()}").mkdir()
    content = path.read_bytes()
    with pytest.raises(OSError):
        w.cut(10_000, lambda rotated, since: b"note")
    assert path.read_bytes() == content
    w.write(container.WINDOW, b"after", 99, 100)
    assert written(path) == [*frames, (container.WINDOW, b"after", 99.0)]
    w.close()


def test_a_frame_cut_short_by_the_disk_is_taken_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "full.pytop"
    w, frames = filled(path, 3, key_every=10)
    size = path.stat().st_size

    class Full(OSError):
        pass

    real_write = os.write
    calls = collections.Counter[str]()

    def half_then_full(fd: int, data: Any) -> int:
        calls["write"] += 1
        if calls["write"] == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise Full(28, "No space left on device")

    with monkeypatch.context() as patched:  # (for this one frame: the disk fills in the middle of it)
        patched.setattr(container.os, "write", half_then_full)
        with pytest.raises(Full):
            w.write(container.WINDOW, noise(5000, 9), 9, 10)
    assert path.stat().st_size == size == w.size
    w.write(container.WINDOW, b"later", 10, 11)
    assert written(path) == [*frames, (container.WINDOW, b"later", 10.0)]
    w.close()


# ---- the writer's thread: a file that grows for ever stays within its bound --------------------


class Noise(QueuedWriter[int]):
    """Windows of incompressible bytes, keys of a given size: the writer's thread alone."""

    def __init__(self, path: Path, max_size: int, key_size: int):
        super().__init__(container.Writer(str(path)), 1000, "noise-writer", max_size)
        self.key_size = key_size
        self.keys_made = 0
        self._start(noise(key_size, -1), 0.0)

    def encode(self, item: int) -> tuple[bytes, object]:
        return noise(2000, item), None

    def key(self) -> bytes:
        self.keys_made += 1
        return noise(self.key_size, -1 - self.keys_made)


@pytest.mark.parametrize("key_size", [100, 20_000])
def test_a_recording_stays_within_its_bound_and_keys_stay_a_small_part(tmp_path: Path, key_size: int) -> None:
    path = tmp_path / "bounded.pytop"
    bound = 300_000
    sizes = []
    writer = Noise(path, bound, key_size)
    for i in range(1500):  # 3 MB of windows: ten times the bound
        writer.put(i, i, i + 1)
        if i % 50 == 49:
            helpers.wait_until(lambda i=i: writer.written == i + 1, timeout=30)
            sizes.append(path.stat().st_size)
    status = writer.close()
    assert status.dropped == 0 and status.failing is None
    assert max(sizes) <= bound + 2100 and writer.rotations >= 8
    assert min(sizes[len(sizes) // 2:]) >= bound * (1 - 2 * KEEP_SHARE / 3) - 2100  # 5/8 of it kept, or so
    frames = written(path)
    assert frames[0][0] == container.NOTE and frames[1][0] == container.KEY
    windows = [p for kind, p, _ in frames if kind == container.WINDOW]
    assert windows == [noise(2000, i) for i in range(1500 - len(windows), 1500)]  # the newest, none missing
    # Each key frame follows twice its bytes of windows at least (the first, the file's front)
    keys = [len(p) for kind, p, _ in frames if kind == container.KEY]
    assert sum(keys[1:]) <= sum(map(len, windows)) / 2


# ---- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("text, size", [("100M", 100 << 20), ("2G", 2 << 30), ("512k", 512 << 10),
                                        ("1.5MiB", 3 << 19), ("300000", 300000), ("0", 0)])
def test_a_size_is_read_as_people_write_it(text: str, size: int) -> None:
    assert record_size(text) == size


@pytest.mark.parametrize("text", ["abc", "-1", "1e9", "10k", "5 parsecs", ""])
def test_a_size_that_is_none_or_too_small_is_refused(text: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        record_size(text)


@pytest.mark.process
@pytest.mark.parametrize("args, said", [
    (["--record-max-size", "1G", "--batch", "--demo"], "--record-max-size goes with --record FILE, or the live"),
    (["--record-max-size", "10k", "--record", "x.pytop", "--demo"], "at least 256k"),
])
def test_a_bound_asked_for_wrongly_says_so(tmp_path: Path, args: list[str], said: str) -> None:
    result = helpers.run_pytop(*args, cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


# ---- a real session, recorded twice: bounded and not --------------------------------------------

BOUND = 512 << 10


class Both:
    """Where the sampler's drains and windows go: two recorders of the same session."""

    def __init__(self, bounded: Recorder, whole: Recorder):
        self.bounded, self.whole = bounded, whole
        self.lock = threading.Lock()

    def add(self, drain: Drain) -> None:
        self.bounded.add(drain)
        self.whole.add(drain)

    def schedule(self) -> tuple[int, int, float, float, float]:
        return self.whole.schedule()

    def window(self, circumstances: Circumstances, reset: bool = False, figures: Any = None,
               last: bool = False) -> None:
        self.bounded.window(circumstances, reset, figures, last)
        self.whole.window(circumstances, reset, figures, last)

    def status(self) -> RecordStatus:
        return self.whole.status()


def test_a_rotated_recording_replays_its_windows_as_the_whole_recording_does(some_interp: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    # The thread-per-request server: threads start and end all the time, new stacks come in every
    # window, so what a key frame must carry changes. The bounded file rotates; each window it
    # still holds is the window the unbounded file (read from its start, keys unused) and the
    # live view showed, figure by figure, and its totals are the session's. (The bound holds a
    # few key frames with the session's totals: some 50 KB each here.)
    bounded_path, whole_path = tmp_path / "bounded.pytop", tmp_path / "whole.pytop"
    with helpers.running(some_interp, "server.py") as t:
        target = attach(t.pid)
        info = info_of(target)
        settings = Settings(rate=300, delay=0.25, cpu_budget=0)
        run = RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, 0.0)
        bounded = Recorder(str(bounded_path), run, max_size=BOUND)
        whole = Recorder(str(whole_path), run, max_size=None)
        sampler = Sampler(target.unwinder, info, settings, recorder=Both(bounded, whole))
        kept = Kept()
        with helpers.sampling(sampler, kept):
            helpers.wait_until(lambda: bounded.rotations >= 2, timeout=180, what=bounded.status)
        kept(sampler.final_snapshot())
        target.close()
    for recorder in (bounded, whole):
        status = recorder.close()
        assert status.dropped == 0 and status.failing is None, status
    short, full = open_recording(str(bounded_path)), open_recording(str(whole_path))
    assert full.rotation is None and short.rotation is not None
    assert short.rotation.rotated > BOUND // 2 and bounded_path.stat().st_size <= BOUND
    assert len(full.windows) == len(kept.snapshots)
    gone = len(full.windows) - len(short.windows)
    # (the same payloads, compressed with references of their own file's: each recorder stamps its
    # frames with its own clock's reading)
    with open(bounded_path, "rb") as b, open(whole_path, "rb") as w:
        assert gone > 0 and [container.payload(b, x.frame) for x in short.windows] == \
            [container.payload(w, x.frame) for x in full.windows[gone:]]
    assert short.rotation.since <= short.windows[0].start
    from_start = Replay(full, keys=False)
    from_key = Replay(short)
    # What went is in the totals (the key the file starts at holds the session's so far), its
    # detail is not: each window's totals are the unbounded file's from its start, and its
    # own figures the live view's; few windows are read for it.
    front = read_key_state(next(d for f, d in container.frames(str(bounded_path)) if f and f.kind == container.KEY))
    assert front.totals is not None
    view = View(mode="cpu", threads=True)
    for index in range(len(short.windows)):
        shown, again = kept.snapshots[gone + index], from_key.snapshot(index, view)
        same_figures(from_start.snapshot(gone + index, view), again)
        assert again.run.replay is not None and again.run.replay.range_start == run.started
        assert {r.key: r.own_pct for r in again.rows if r.own_pct} == {r.key: r.own_pct for r in shown.rows
                                                                       if r.own_pct}
        assert again.cpu_pct == shown.cpu_pct and again.rate == shown.rate
    # A range within what is kept, as one window: the unbounded file's sum of the same windows
    last = len(short.windows) - 1
    ranged: Snapshot = from_key.snapshot(last, View(), 1, whole=True)
    same: Snapshot = from_start.snapshot(gone + last, View(), gone + 1, whole=True)
    assert {r.key: r.own_time for r in ranged.rows} == {r.key: r.own_time for r in same.rows}
    assert ranged.cpu_time == same.cpu_time and ranged.samples == same.samples
    # A range that begins at or after a key frame is read from that key on only (the windows
    # between the key and the range's start teach names and stacks), and shows what the whole
    # file read from its start shows for the same range
    keys = [k for k in short.keys if k.index <= last]  # (the last key may follow the last window)
    assert len(keys) >= 2  # (the front, and one to seek from)
    for key in keys[1:]:
        for first, index in ((key.index, key.index), (key.index, min(key.index + 2, last)),
                             (min(key.index + 1, last), min(key.index + 2, last))):
            fresh = Replay(short)
            same_figures(from_start.snapshot(gone + index, view, gone + first), fresh.snapshot(index, view, first))
            assert fresh.windows_read <= index - key.index + 1
            fresh.close()
    for replay in (from_start, from_key):
        replay.close()
    rotation = read_note(next(d for f, d in container.frames(str(bounded_path)) if f and f.kind == container.NOTE))
    assert rotation == short.rotation
