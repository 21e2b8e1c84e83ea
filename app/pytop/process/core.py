"""A core file as a stand-in for the process it was dumped from (`pytop --dump --core FILE`).

An ELF core holds the process's memory as PT_LOAD segments, the files it had mapped (NT_FILE),
one NT_PRSTATUS note per thread (its TID) and one NT_PRPSINFO (pid, command). Segments a dumper
left out (gdb's gcore, and the kernel by default, skip read-only file-backed ones such as code
and constants) are read from the mapped files themselves, as the process saw them: the same
paths, or `--executable` for the program when it has moved.

The memory comes to the native unwinder as (address, bytes) regions over mmaps of the core
and of those files: nothing is copied, and the unwinder's reads never leave them. A core of a
process in a chroot or a container names its files as that process saw them: `--sysroot`
says where that root is now.
"""

from __future__ import annotations

import bisect
import mmap
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import errors, files
from ..core.visible import visible_command
from .procmaps import Mapping

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

PF_X, PF_W, PF_R = 1, 2, 4
MAX_FILE_MAPPINGS = 1 << 16


@dataclass(frozen=True)
class Region:
    """`size` bytes the process had at `address`, found at `offset` in `buffer`."""

    address: int
    size: int
    buffer: mmap.mmap | bytearray
    offset: int

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass(frozen=True)
class _Load:
    address: int
    size: int  # in memory
    offset: int  # in the core file
    stored: int  # bytes the core holds (0: left out)
    perms: str


def _perms(flags: int) -> str:
    return ("r" if flags & PF_R else "-") + ("w" if flags & PF_W else "-") + ("x" if flags & PF_X else "-") + "p"


def _cut(start: int, end: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [start, end) outside the sorted, disjoint `covered` ranges."""
    pieces = []
    at = start
    for lo, hi in covered:
        if hi <= at or lo >= end:
            continue
        if lo > at:
            pieces.append((at, lo))
        at = max(at, hi)
    if at < end:
        pieces.append((at, end))
    return pieces


PT_NOTE = 4
PSARGS_KEPT = 80  # bytes of the command line a core's NT_PRPSINFO holds (ELF_PRARGSZ), its NUL included


class Truncated(ValueError):
    """The file ends before what its headers say it holds."""


class CoreFile:
    """A `MemorySource` (see memory.py) read from a core file."""

    def __init__(self, path: str, executable: str | None = None, sysroot: str | None = None):
        # Imported here: pyelftools takes 50-70 ms to import, and only a core needs it.
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        self.path = path
        self._executable_override = executable
        self._sysroot = sysroot.rstrip("/") if sysroot else ""
        self._files: dict[str, mmap.mmap | None] = {}
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block for ever
            raise errors.AttachFailed(f"{path} is not a core file: not a regular file")
        if sysroot and not os.path.isdir(sysroot):
            raise errors.UsageError(f"--sysroot: {sysroot} is not a directory")
        try:
            self._file = files.open_regular(path)
        except OSError as exc:
            raise errors.AttachFailed(f"cannot open the core file {path}: {exc.strerror}") from None
        try:
            self._core = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self._check_headers_whole()
            self._parse(ELFFile(self._file))
        except Truncated as exc:
            self.close()
            raise errors.AttachFailed(f"the core file {path} is truncated: {exc}") from None
        except (ELFError, ValueError, OSError, KeyError, TypeError) as exc:
            self.close()
            raise errors.AttachFailed(f"{path} is not a core file pytop can read ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - pyelftools on a damaged file: a message, not a traceback
            self.close()
            raise errors.AttachFailed(f"{path} is a damaged core file ({type(exc).__name__}: {exc})") from None
        self.regions = self._build_regions()
        self._starts = [r.address for r in self.regions]

    # ---- parsing ----------------------------------------------------------------------------

    def _check_headers_whole(self) -> None:
        """A core cut short (a disk that filled up while it was written) is said to be cut, with
        its size against what its program headers need, not left to the parser's words: cut
        before the end of its headers or in its notes (the threads, the mapped files), nothing
        of the process can be read; cut in its memory, what lies before the cut is read, and
        the rest where the mapped files have it (`self.cut`)."""
        self.cut: tuple[int, int] | None = None  # (its size, what its headers need)
        size = len(self._core)
        if size < 4 or self._core[:4] != b"\x7fELF":
            return  # not ELF at all: the parser says so
        if size < 64:
            raise Truncated(f"{size} bytes, less than an ELF header")
        phoff = int.from_bytes(self._core[32:40], "little")
        phentsize = int.from_bytes(self._core[54:56], "little")
        phnum = int.from_bytes(self._core[56:58], "little")
        if phoff + phentsize * phnum > size:
            raise Truncated(f"{size:,} bytes, cut before the end of its program headers (at "
                            f"{phoff + phentsize * phnum:,}); the disk may have filled up while it was written")
        needed, notes_end = 0, 0
        for i in range(phnum if phentsize >= 56 else 0):
            at = phoff + i * phentsize
            kind = int.from_bytes(self._core[at:at + 4], "little")
            offset = int.from_bytes(self._core[at + 8:at + 16], "little")
            stored = int.from_bytes(self._core[at + 32:at + 40], "little")
            needed = max(needed, offset + stored)
            if kind == PT_NOTE:
                notes_end = max(notes_end, offset + stored)
        if notes_end > size:
            raise Truncated(f"{size:,} bytes of the {needed:,} its program headers need, cut in its notes (the "
                            "threads and the files it had mapped): nothing of the process can be read; the disk "
                            "may have filled up while it was written")
        if needed > size:
            self.cut = (size, needed)

    def _parse(self, elf: ELFFile) -> None:
        from elftools.elf.segments import NoteSegment

        if elf["e_type"] != "ET_CORE":
            raise ValueError("not an ELF core file")
        if elf.elfclass != 64 or elf["e_machine"] != "EM_X86_64":
            raise ValueError("pytop reads x86-64 cores only")
        self._loads: list[_Load] = []
        self._mappings: list[Mapping] = []
        self._tids: list[int] = []
        self.pid = 0
        self.command = ""
        self.signal = 0  # the signal the first thread listed had when dumped (the one that crashed)
        notes: list[NoteSegment] = []
        for segment in elf.iter_segments():
            if segment["p_type"] == "PT_LOAD" and segment["p_memsz"]:
                stored = min(segment["p_filesz"], segment["p_memsz"], max(0, len(self._core) - segment["p_offset"]))
                self._loads.append(_Load(segment["p_vaddr"], segment["p_memsz"], segment["p_offset"], stored,
                                         _perms(segment["p_flags"])))
            elif isinstance(segment, NoteSegment):
                notes.append(segment)
        self._loads.sort(key=lambda load: load.address)
        if not self._loads:
            raise ValueError("no memory segments")
        for segment in notes:  # after the segments: a mapping takes its permissions from them
            for note in segment.iter_notes():
                self._note(note["n_type"], note["n_desc"])

    def _note(self, kind: str, desc: object) -> None:
        if kind == "NT_PRSTATUS" and isinstance(desc, bytes) and len(desc) >= 36:
            if not self._tids:
                self.signal = int.from_bytes(desc[12:14], "little")  # pr_cursig
            self._tids.append(int.from_bytes(desc[32:36], "little", signed=True))  # pr_pid
        elif kind == "NT_PRPSINFO":
            self.pid = int(desc["pr_pid"])  # type: ignore[index]
            raw = bytes(desc["pr_psargs"])  # type: ignore[index]
            self.command = visible_command(raw.split(b"\0", 1)[0].decode(errors="replace").strip())
            if len(raw.split(b"\0", 1)[0]) >= PSARGS_KEPT - 1:  # the kernel keeps this much, cut without a mark
                self.command += f" … (a core keeps the first {PSARGS_KEPT - 1} characters of a command line)"
        elif kind == "NT_FILE":
            page = int(desc["page_size"])  # type: ignore[index]
            entries = desc["Elf_Nt_File_Entry"][:MAX_FILE_MAPPINGS]  # type: ignore[index]
            names = desc["filename"]  # type: ignore[index]
            for entry, name in zip(entries, names):
                start, end = int(entry["vm_start"]), int(entry["vm_end"])
                if end > start:
                    path = bytes(name).decode(errors="surrogateescape").removesuffix(" (deleted)")
                    self._mappings.append(Mapping(start, end, self._perms_at(start), int(entry["page_offset"]) * page,
                                                  -1, path))

    def _perms_at(self, address: int) -> str:
        for load in self._loads:
            if load.address <= address < load.address + load.size:
                return load.perms
        return "r--p"  # not in any segment: a read-only mapping the dumper left out

    # ---- memory -----------------------------------------------------------------------------

    def _build_regions(self) -> list[Region]:
        """The core's stored bytes first; what it left out, from the mapped files."""
        regions = [Region(load.address, load.stored, self._core, load.offset) for load in self._loads if load.stored]
        stored = [(r.address, r.end) for r in regions]
        for m in sorted(self._mappings, key=lambda m: m.start):
            data = self._mapped(m)
            if data is None:
                continue
            for lo, hi in _cut(m.start, m.end, stored):
                at = m.offset + (lo - m.start)
                size = min(hi - lo, len(data) - at)  # a mapping can run past the file's end
                if size > 0:
                    regions.append(Region(lo, size, data, at))
        regions.sort(key=lambda r: r.address)
        return regions

    def _mapped(self, mapping: Mapping) -> mmap.mmap | None:
        path = self._local_path(mapping.path)
        if path not in self._files:
            try:
                with files.open_regular(path) as f:  # a FIFO or a device: never waited on
                    self._files[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self._files[path] = None  # gone or empty: its bytes are simply not there
        return self._files[path]

    def _local_path(self, path: str) -> str:
        if self._executable_override and path == self.executable():
            return self._executable_override
        return self._sysroot + path

    def read(self, address: int, length: int) -> bytes:
        out = bytearray()
        at = address
        while len(out) < length:
            i = bisect.bisect_right(self._starts, at) - 1
            region = self.regions[i] if i >= 0 else None
            if region is None or at >= region.end:
                raise OSError(14, f"cannot read {length} bytes at {address:#x}: not in the core file")
            n = min(region.end - at, length - len(out))
            start = region.offset + (at - region.address)
            out += region.buffer[start:start + n]
            at += n
        return bytes(out)

    # ---- the rest of a MemorySource -----------------------------------------------------------

    def describe(self) -> str:
        return f"core file {self.path}"

    def mappings(self) -> list[Mapping]:
        return list(self._mappings)

    def open_file(self, mapping: Mapping) -> str:
        path = self._local_path(mapping.path)
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        return path

    def executable(self) -> str:
        """The program: the file mapped first (the kernel and gdb list the executable first)."""
        return self._mappings[0].path if self._mappings else ""

    def task_ids(self) -> set[int]:
        return set(self._tids)

    def own_pid(self) -> int:
        return self.pid

    @property
    def core_bytes(self) -> mmap.mmap:
        """The core file itself, as the regions of the memory it holds point into it."""
        return self._core

    @property
    def first_tid(self) -> int:
        """The thread listed first: the one that took the signal, in a kernel's core."""
        return self._tids[0] if self._tids else 0

    def close(self) -> None:
        for data in self._files.values():
            if data is not None:
                data.close()
        self._files.clear()
        core = getattr(self, "_core", None)
        if core is not None:
            core.close()
        self._file.close()
