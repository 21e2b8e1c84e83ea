"""A recording's container: a header, then frames appended one by one, each self-describing (its
kind, its time span, its length, checksums of its header and its payload) and compressed on its
own, so that a file cut anywhere (SIGKILL, a crash, a full disk) reads up to its last whole
frame, a damaged frame is skipped to the next good one, and a reader can start at any frame a
time index or a scan points to. The byte layout is docs/recording.md's; this module is its only
reader and writer. What goes in a payload is the callers' (bytes here).

Remote data rules here too: a recording may come from anyone. Every length is checked against
the file and a bound before anything is allocated, every checksum before a payload is trusted."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from .. import errors, files
from . import zstd

MAGIC = b"PYTOPREC"
VERSION = 5  # 2: key frames a reader may start at, a rotated file's note; 3: the session's totals in them; 4: zstd;
# 5: window payloads of version 3 (a drain's standing threads)
HEADER = struct.Struct("<8sHHI")  # magic, version, flags (0), crc32 of the 12 bytes before
FRAME_MAGIC = b"FRAM"
FRAME = struct.Struct("<4sBBHIIdd")  # magic, kind, codec, 0, payload length, payload crc32, start, end
FRAME_CRC = struct.Struct("<I")  # crc32 of the frame header's 32 bytes before it
FRAME_HEADER_SIZE = FRAME.size + FRAME_CRC.size  # 36
MAX_PAYLOAD = 64 << 20  # bytes stored: a frame is one window of one session, never this big
MAX_EXPANDED = 256 << 20  # bytes a payload may inflate to (a crafted zlib bomb stops there)

# Frame kinds. KEY: what a reader needs to start there (names, the run); WINDOW: one window's
# figures, read with the last KEY before it; INDEX: times and offsets of the frames before it;
# NOTE: what the writer has to say (frames it dropped, why it stopped).
KEY, WINDOW, INDEX, NOTE = 1, 2, 3, 4
KINDS = {KEY: "key", WINDOW: "window", INDEX: "index", NOTE: "note"}
# Codecs. ZSTD_REFERENCED: a window compressed with the payload of the last ZSTD window before it
# as its dictionary; its stored payload starts with the CRC-32 of that frame's stored payload.
STORED, ZLIB, ZSTD, ZSTD_REFERENCED = 0, 1, 2, 3
CODECS = (STORED, ZLIB, ZSTD, ZSTD_REFERENCED)
REFERENCE_EVERY = 10  # windows compressed with one reference (the first after each key is one)
REFERENCE_CRC = struct.Struct("<I")


@dataclass(frozen=True)
class FrameInfo:
    offset: int  # of its header in the file
    kind: int
    codec: int
    length: int  # of the payload as stored
    crc: int
    start: float  # wall-clock seconds its content covers
    end: float
    reference: FrameInfo | None = None  # ZSTD_REFERENCED: the last ZSTD window before it (None: lost)

    @property
    def payload_offset(self) -> int:
        return self.offset + FRAME_HEADER_SIZE


@dataclass(frozen=True)
class Scan:
    """What a pass over a recording found: its whole frames, and what it could not read."""

    frames: tuple[FrameInfo, ...]
    size: int  # of the file
    skipped: int  # bytes of damaged frames passed over (each to the next good frame)
    cut: int  # bytes after the last whole frame (a write cut short)

    @property
    def lost(self) -> int:
        return self.skipped + self.cut


def _header() -> bytes:
    head = struct.pack("<8sHH", MAGIC, VERSION, 0)
    return head + struct.pack("<I", zlib.crc32(head))


def frame_bytes(kind: int, payload: bytes, start: float, end: float, compress: bool = True,
                reference: tuple[bytes, int] | None = None) -> bytes:
    """One whole frame: its header and its payload, compressed when that makes it smaller (zstd
    when this Python has it, else zlib). reference: (the payload, the stored CRC-32) of the
    ZSTD window frame to compress with (ZSTD_REFERENCED)."""
    codec, stored = STORED, payload
    if compress and zstd.available:
        if reference is not None:
            codec, stored = ZSTD_REFERENCED, REFERENCE_CRC.pack(reference[1]) + zstd.compress(payload, reference[0])
        else:
            codec, stored = ZSTD, zstd.compress(payload)
    elif compress:
        codec, stored = ZLIB, zlib.compress(payload, 6)
    if len(stored) >= len(payload) and not (kind == WINDOW and codec == ZSTD):  # (a reference: kept so)
        codec, stored = STORED, payload
    if len(stored) > MAX_PAYLOAD:
        raise ValueError(f"a frame of {len(stored)} bytes is over the bound of {MAX_PAYLOAD}")
    head = FRAME.pack(FRAME_MAGIC, kind, codec, 0, len(stored), zlib.crc32(stored), start, end)
    return head + FRAME_CRC.pack(zlib.crc32(head)) + stored


class Writer:
    """Appends frames to a recording it holds an exclusive lock on (a second pytop recording to
    the same file is refused before anything of the first's is touched), and drops its oldest
    part when asked (`cut`: rotation)."""

    def __init__(self, path: str):
        """Raises errors.UsageError: a link, not a regular file, not writable, or being recorded."""
        fd = files.open_fd(path, append=True, read=True)  # (not emptied yet: it may be another pytop's)
        try:
            _lock(fd, path)
            os.ftruncate(fd, 0)
            os.write(fd, _header())
        except OSError as exc:
            os.close(fd)
            raise errors.UsageError(f"cannot write {path}: {exc.strerror}") from None
        except errors.UsageError:
            os.close(fd)
            raise
        self.path = path
        self._fd: int | None = fd
        self.size = HEADER.size
        self.keys: list[tuple[int, int, float]] = []  # the key frames in the file: offset, length, time
        self.front = HEADER.size  # where the frames a reader starts with begin (after a rotation's note)
        self.rotated = 0  # bytes of frames rotated away since the recording began
        # The ZSTD window the next windows are compressed with (its payload, its stored CRC),
        # and how many were.
        self._reference: tuple[bytes, int] | None = None
        self._referenced = 0

    def write(self, kind: int, payload: bytes, start: float, end: float) -> int:
        """Append one frame; returns its offset. Raises OSError as the disk says (ENOSPC), the
        frame cut short taken back off."""
        if self._fd is None:
            raise ValueError("the recording is closed")
        referenced = kind == WINDOW and self._reference is not None and self._referenced < REFERENCE_EVERY - 1
        data = frame_bytes(kind, payload, start, end, reference=self._reference if referenced else None)
        offset = self.size
        try:
            _write_all(self._fd, data)
        except OSError:
            # What was cut short goes (the file stays as whole frames, and the offsets rotation
            # copies from stay true); if even that fails, the reader passes over it.
            try:
                os.ftruncate(self._fd, offset)
            except OSError:
                self.size = os.fstat(self._fd).st_size
            raise
        self.size += len(data)
        if kind == KEY:
            self.keys.append((offset, len(data), end))
            self._reference = None  # (a reader may start at the key: the windows after it need none before it)
        elif kind == WINDOW and referenced:
            self._referenced += 1
        elif kind == WINDOW:
            _, _, codec, _, _, crc, _, _ = FRAME.unpack_from(data)
            if codec == ZSTD:
                self._reference, self._referenced = (payload, crc), 0
        return offset

    def cut(self, keep: int, note: Callable[[int, float], bytes]) -> int:
        """Rotation: the frames before the earliest key frame after which at most `keep` bytes
        lie are dropped, the file becoming a rotation note (`note(bytes rotated away since the
        recording began, when what is kept starts)`) and the frames from that key on. Returns
        the bytes dropped (0: no key frame to cut at). The new file is written whole and locked
        beside the old one, then takes its name: a reader, a crash or a full disk at any moment
        finds one whole recording under the name. Raises OSError (the old file is kept)."""
        if self._fd is None:
            raise ValueError("the recording is closed")
        at = next(((o, t) for o, _, t in self.keys if o > self.front and self.size - o <= keep), None)
        if at is None:
            return 0
        cut, since = at
        rotated = self.rotated + cut - self.front
        head = _header() + frame_bytes(NOTE, note(rotated, since), since, since)
        folder, name = os.path.split(self.path)
        fresh = os.path.join(folder, f".{name}.rotating-{os.getpid()}")
        try:
            fd = files.open_fd(fresh, new=True, append=True, read=True)
        except errors.UsageError as exc:
            raise OSError(errno.EIO, str(exc)) from None
        try:
            _lock(fd, fresh)
            _write_all(fd, head)
            at_byte = cut
            while at_byte < self.size:
                chunk = os.pread(self._fd, min(1 << 20, self.size - at_byte), at_byte)
                if not chunk:
                    raise OSError(errno.EIO, "the recording ended before its size")
                _write_all(fd, chunk)
                at_byte += len(chunk)
            os.replace(fresh, self.path)  # (a rename: the name's link, if one was put there, goes; none is followed)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(fresh)
            raise
        os.close(self._fd)
        self._fd = fd
        dropped, shift = cut - self.front, cut - len(head)
        self.keys = [(o - shift, n, t) for o, n, t in self.keys if o >= cut]
        self.front, self.rotated = len(head), rotated
        self.size -= shift
        return dropped

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # (the lock goes with it)
            self._fd = None


def _lock(fd: int, path: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise errors.UsageError(f"{path} is being recorded by another pytop") from None
        raise errors.UsageError(f"cannot lock {path}: {exc.strerror}") from None


def _write_all(fd: int, data: bytes) -> None:
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


def _frame_at(data: bytes | mmap.mmap, at: int, size: int) -> FrameInfo | None:
    """The frame whose header starts at `at` in `data` (read from the file), if it is one whose
    header is whole and sound and whose payload lies within the file."""
    if at + FRAME_HEADER_SIZE > len(data):
        return None
    magic, kind, codec, _, length, crc, start, end = FRAME.unpack_from(data, at)
    (head_crc,) = FRAME_CRC.unpack_from(data, at + FRAME.size)
    if magic != FRAME_MAGIC or head_crc != zlib.crc32(data[at:at + FRAME.size]):
        return None
    if kind not in KINDS or codec not in CODECS or length > MAX_PAYLOAD:
        return None
    if at + FRAME_HEADER_SIZE + length > size:
        return None
    return FrameInfo(at, kind, codec, length, crc, start, end)


def check_header(head: bytes, path: str) -> None:
    """Raises errors.UsageError when `head` is not a recording this pytop reads."""
    if len(head) < HEADER.size and MAGIC.startswith(head[:8]) and head:
        raise errors.UsageError(f"{path}: the recording was cut short before its first frame")
    if len(head) < HEADER.size or head[:8] != MAGIC:
        raise errors.UsageError(f"{path} is not a pytop recording")
    magic, version, _, crc = HEADER.unpack_from(head)
    if crc != zlib.crc32(head[:12]):
        raise errors.UsageError(f"{path}: its header is damaged")
    if version > VERSION:
        raise errors.UsageError(f"{path} is a recording of a newer format (version {version}; this pytop reads "
                                f"{VERSION}): a newer pytop reads it")


def scan(path: str) -> Scan:
    """Every whole, sound frame of the recording at `path`, in order; damaged stretches are
    passed over to the next sound frame header, a cut end is counted. Raises errors.UsageError
    for a file that is not a recording (or a newer one)."""
    try:
        with files.open_regular(path) as f:
            check_header(f.read(HEADER.size), path)
            if os.fstat(f.fileno()).st_size <= HEADER.size:
                return Scan((), HEADER.size, 0, 0)
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as data:  # (not read whole into memory)
                return scan_bytes(data)
    except OSError as exc:
        raise errors.UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def scan_bytes(data: bytes | mmap.mmap) -> Scan:
    """scan() of a recording's bytes (whose header was checked)."""
    size = len(data)
    frames = []
    at, skipped = HEADER.size, 0
    reference = None  # the last ZSTD window: the dictionary of the ZSTD_REFERENCED ones after it
    while at < size:
        found = _frame_at(data, at, size)
        body = data[found.payload_offset:found.payload_offset + found.length] if found is not None else b""
        if found is not None and zlib.crc32(body) == found.crc:
            if found.codec == ZSTD_REFERENCED:
                found = dataclasses.replace(found, reference=reference)
            elif found.kind == WINDOW and found.codec == ZSTD:
                reference = found
            frames.append(found)
            at = found.payload_offset + found.length
            continue
        following = data.find(FRAME_MAGIC, at + 1)  # resynchronise: the next sound frame header
        while following >= 0 and _frame_at(data, following, size) is None:
            following = data.find(FRAME_MAGIC, following + 1)
        if following < 0:
            return Scan(tuple(frames), size, skipped, size - at)
        skipped += following - at
        at = following
    return Scan(tuple(frames), size, skipped, 0)


def payload(f: BinaryIO, frame: FrameInfo) -> bytes:
    """A frame's payload from the open recording, checked and expanded; raises ValueError if it
    is damaged (it was sound when scanned: the file changed since)."""
    stored = _stored(f, frame)
    if frame.codec == STORED:
        return stored
    if frame.codec == ZSTD:
        return zstd.expand(stored, None, MAX_EXPANDED)
    if frame.codec == ZSTD_REFERENCED:
        # The reference it names, by its CRC: the last ZSTD window the scan found before it may
        # be another when the one it was compressed with was damaged.
        reference = frame.reference
        if reference is None or len(stored) < REFERENCE_CRC.size or \
                REFERENCE_CRC.unpack_from(stored)[0] != reference.crc or reference.codec != ZSTD:
            raise ValueError("the window it was compressed with is lost")
        return zstd.expand(stored[REFERENCE_CRC.size:], _expanded_reference(_stored(f, reference)), MAX_EXPANDED)
    inflater = zlib.decompressobj()
    expanded = inflater.decompress(stored, MAX_EXPANDED)
    if inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("the frame's payload does not expand whole within its bound")
    return expanded


# The last reference expanded, by its stored bytes: a replay reads the nine windows compressed with
# one in a row, and expanded it once, not nine times. (One tuple, replaced whole: safe to share
# between the view's thread and the replay's.)
_last_reference: tuple[bytes, bytes] | None = None


def _expanded_reference(stored: bytes) -> bytes:
    global _last_reference
    last = _last_reference
    if last is not None and last[0] == stored:
        return last[1]
    expanded = zstd.expand(stored, None, MAX_EXPANDED)
    _last_reference = (stored, expanded)
    return expanded


def _stored(f: BinaryIO, frame: FrameInfo) -> bytes:
    f.seek(frame.payload_offset)
    stored = f.read(frame.length)
    if len(stored) != frame.length or zlib.crc32(stored) != frame.crc:
        raise ValueError("the frame changed since it was scanned")
    return stored


def frames(path: str, found: Scan | None = None) -> Iterator[tuple[FrameInfo | None, bytes]]:
    """Each sound frame of the recording (of its scan, `found`) with its payload; a frame whose
    payload does not expand comes as (None, b"") (to be counted as damaged)."""
    found = found or scan(path)
    try:
        f = files.open_regular(path)
    except OSError as exc:
        raise errors.UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    with f:
        for frame in found.frames:
            try:
                data = payload(f, frame)
            except (ValueError, zlib.error):
                yield None, b""
                continue
            yield frame, data
