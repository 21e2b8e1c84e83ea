"""A recording's container (record/container.py): frames written and read back, and a file cut,
damaged, of another kind, of a newer version, recorded twice at once, or crafted: read to its
last whole frame, said in one line, never a traceback. Pure but for the files it writes."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytop import errors
from pytop.record import container
from pytop.record.container import INDEX, KEY, NOTE, WINDOW, Writer, frames, scan


def recorded(path: Path, payloads: list[tuple[int, bytes]]) -> list[int]:
    writer = Writer(str(path))
    try:
        return [writer.write(kind, data, 100.0 + n, 101.0 + n) for n, (kind, data) in enumerate(payloads)]
    finally:
        writer.close()


PAYLOADS = [(KEY, b"names " * 200), (WINDOW, os.urandom(300)), (WINDOW, b"x" * 5000), (NOTE, b""),
            (INDEX, b"\x00" * 64), (WINDOW, b"last window")]


def test_frames_come_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "run.pytop"
    offsets = recorded(path, PAYLOADS)
    found = scan(str(path))
    assert [f.offset for f in found.frames] == offsets and found.lost == 0
    assert [(f.kind, f.start, f.end) for f in found.frames] == [(k, 100.0 + n, 101.0 + n)
                                                               for n, (k, _) in enumerate(PAYLOADS)]
    assert [data for _, data in frames(str(path))] == [data for _, data in PAYLOADS]
    # zstd; the first window after a key is the next ones' reference, kept as zstd even when that is
    # no smaller (random bytes); a referenced window no smaller than its payload is stored.
    assert [f.codec for f in found.frames] == [container.ZSTD, container.ZSTD, container.ZSTD_REFERENCED,
                                               container.STORED, container.ZSTD, container.STORED]
    assert os.stat(path).st_mode & 0o777 == 0o600


def window(n: int) -> bytes:
    """A window's payload: the columns of the one before it, a few figures changed."""
    names = b"".join(b"thread-%d handle_request query_orders encode_orders " % t for t in range(40))
    return names + struct.pack("<40q", *(n * 1_000_003 + t * 7 for t in range(40)))


def test_windows_are_compressed_with_an_earlier_one(tmp_path: Path) -> None:
    """Each window but every REFERENCE_EVERY-th, and the first after a key (a reader may start
    there), is compressed with the last of those as its dictionary: smaller than alone."""
    path = tmp_path / "run.pytop"
    written = [(KEY, b"run")] + [(WINDOW, window(n)) for n in range(25)] + [(KEY, b"again")] + \
        [(WINDOW, window(n)) for n in range(25, 28)]
    recorded(path, written)
    found = scan(str(path))
    assert [data for _, data in frames(str(path))] == [data for _, data in written]
    codecs = [f.codec for f in found.frames if f.kind == WINDOW]
    referenced, alone = container.ZSTD_REFERENCED, container.ZSTD
    assert codecs == ([alone] + [referenced] * 9) * 2 + [alone] + [referenced] * 4 + [alone] + [referenced] * 2
    windows = [f for f in found.frames if f.kind == WINDOW]
    assert all(f.reference == windows[0] for f in windows[1:10]) and windows[26].reference == windows[25]
    assert max(f.length for f in windows[1:10]) * 2 < windows[0].length


def test_a_window_whose_reference_is_damaged_is_lost_with_it_alone(tmp_path: Path) -> None:
    """A damaged reference takes the windows compressed with it (said as damage, never read with
    another window's dictionary); the windows after the next reference read whole."""
    path = tmp_path / "run.pytop"
    written = [(KEY, b"run")] + [(WINDOW, window(n)) for n in range(15)]
    offsets = recorded(path, written)
    data = bytearray(path.read_bytes())
    data[offsets[11] + container.FRAME_HEADER_SIZE + 5] ^= 0xFF  # the second reference's payload
    path.write_bytes(bytes(data))
    read = [data for frame, data in frames(str(path)) if frame is None or frame.kind == WINDOW]
    assert read[:10] == [window(n) for n in range(10)]
    assert read[10:] == [b""] * 4  # (None, b""): the four windows compressed with it
    found = scan(str(path))
    with open(path, "rb") as f, pytest.raises(ValueError, match="compressed with is lost"):
        container.payload(f, found.frames[-1])


def test_a_file_cut_anywhere_reads_to_its_last_whole_frame(tmp_path: Path) -> None:
    """SIGKILL, a crash, a full disk: every cut gives the frames before it, and how much was lost."""
    whole = tmp_path / "whole.pytop"
    offsets = recorded(whole, PAYLOADS[:4])
    data = whole.read_bytes()
    ends = [*offsets[1:], len(data)]
    cut = tmp_path / "cut.pytop"
    for size in range(len(data) + 1):
        cut.write_bytes(data[:size])
        if size < container.HEADER.size:
            with pytest.raises(errors.UsageError, match="cut short before its first frame|not a pytop recording"):
                scan(str(cut))
            continue
        found = scan(str(cut))
        whole_frames = sum(1 for end in ends if end <= size)
        assert len(found.frames) == whole_frames, size
        last_end = max([container.HEADER.size] + [e for e in ends if e <= size])
        assert found.cut == size - last_end and found.skipped == 0, size


def test_a_damaged_frame_is_passed_over_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "run.pytop"
    offsets = recorded(path, PAYLOADS)
    data = bytearray(path.read_bytes())
    data[offsets[2] + container.FRAME_HEADER_SIZE + 10] ^= 0xFF  # in the third frame's payload
    data[offsets[4] + 6] ^= 0xFF  # in the fifth frame's header
    path.write_bytes(bytes(data))
    found = scan(str(path))
    assert [f.offset for f in found.frames] == [offsets[0], offsets[1], offsets[3], offsets[5]]
    assert found.skipped == (offsets[3] - offsets[2]) + (offsets[5] - offsets[4]) and found.cut == 0


@pytest.mark.parametrize(("content", "said"), [
    (b"", "not a pytop recording"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not a pytop recording"),
    (b"PYTOP", "cut short before its first frame"),
    (struct.pack("<8sHH", b"PYTOPREC", 1, 0) + b"\x00\x00\x00\x00", "header is damaged"),
    (struct.pack("<8sHH", b"PYTOPREC", 7, 0) + struct.pack("<I", zlib.crc32(struct.pack("<8sHH", b"PYTOPREC", 7, 0))),
     "newer format \\(version 7"),
])
def test_what_is_not_a_recording_this_pytop_reads_is_one_line(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "file"
    path.write_bytes(content)
    with pytest.raises(errors.UsageError, match=said):
        scan(str(path))


def test_a_directory_or_a_missing_file_is_one_line(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "nothing.pytop"):
        with pytest.raises(errors.UsageError, match="cannot read"):
            scan(str(path))


def test_two_pytops_recording_to_one_file_the_second_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.pytop"
    first = Writer(str(path))
    try:
        first.write(KEY, b"first's", 1.0, 2.0)
        with pytest.raises(errors.UsageError, match="being recorded by another pytop"):
            Writer(str(path))
        first.write(WINDOW, b"still first's", 2.0, 3.0)
    finally:
        first.close()
    assert [data for _, data in frames(str(path))] == [b"first's", b"still first's"]  # nothing of it lost
    again = Writer(str(path))  # once it is free: a new recording
    again.close()
    assert scan(str(path)).frames == ()


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    (tmp_path / "run.pytop").symlink_to(victim)
    with pytest.raises(errors.UsageError, match="symbolic link"):
        Writer(str(tmp_path / "run.pytop"))
    assert victim.read_bytes() == b"keep me"


def test_a_payload_that_inflates_past_its_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bomb.pytop"
    recorded(path, [(WINDOW, b"\x00" * 100_000)])
    monkeypatch.setattr(container, "MAX_EXPANDED", 1000)
    found = scan(str(path))
    with open(path, "rb") as f, pytest.raises(ValueError, match="within its bound"):
        container.payload(f, found.frames[0])
    assert list(frames(str(path))) == [(None, b"")]  # passed over as damage (to be counted), not read whole


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=600), st.lists(st.binary(max_size=80), max_size=4), st.integers(0, 2000))
def test_crafted_bytes_never_make_a_traceback(tmp_path: Path, junk: bytes, payloads: list[bytes], flip: int) -> None:
    """Whatever follows the header (frames, junk, a byte flipped): scan and read go to the end
    and every frame they give is sound."""
    path = tmp_path / "crafted.pytop"
    recorded(path, [(WINDOW, p) for p in payloads])
    data = bytearray(path.read_bytes() + junk)
    if data and flip < len(data) and flip >= container.HEADER.size:
        data[flip] ^= 0x5A
    path.write_bytes(bytes(data))
    found = scan(str(path))
    assert all(f.payload_offset + f.length <= found.size for f in found.frames)
    read = list(frames(str(path)))
    assert len(read) <= len(found.frames)
    assert found.lost <= len(data) - container.HEADER.size
