"""The target's memory maps (/proc/PID/maps) and how to open the files mapped there."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    inode: int  # -1: not known (a core file does not record inodes)
    path: str

    @property
    def is_file(self) -> bool:
        return self.inode != 0 and self.path.startswith("/")


def parse_maps(text: str) -> list[Mapping]:
    mappings = []
    for line in text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 5:
            continue
        start, _, end = parts[0].partition("-")
        path = parts[5] if len(parts) == 6 else ""
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        mappings.append(
            Mapping(int(start, 16), int(end, 16), parts[1], int(parts[2], 16), int(parts[4]), path)
        )
    return mappings


def read_maps(pid: int) -> list[Mapping]:
    with open(f"/proc/{pid}/maps") as f:
        return parse_maps(f.read())


def open_mapped_file(pid: int, mapping: Mapping) -> str:
    """A path on which this process can open the file behind `mapping`.

    Paths in maps are as the target sees them: in a chroot or a container they only make sense
    under /proc/PID/root. The inode from maps tells the right candidate from a namesake; the
    map_files entry is the exact file but needs privileges, so it comes last.
    """
    candidates = [f"/proc/{pid}/root{mapping.path}", mapping.path,
                  f"/proc/{pid}/map_files/{mapping.start:x}-{mapping.end:x}"]
    existing = []
    for candidate in candidates:
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):  # a FIFO put where a deleted file was would block its reader
            continue
        if st.st_ino == mapping.inode:
            return candidate
        existing.append(candidate)
    if existing:
        return existing[0]
    raise FileNotFoundError(mapping.path)


def files_in_order(mappings: list[Mapping]) -> dict[str, list[Mapping]]:
    """Mappings grouped by file, in the order files first appear."""
    by_file: dict[str, list[Mapping]] = {}
    for m in mappings:
        if m.is_file:
            by_file.setdefault(m.path, []).append(m)
    return by_file


def basename(path: str) -> str:
    return Path(path).name
