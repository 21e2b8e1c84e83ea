"""Where attach-time reads come from: a live process, or a core file standing in for one.

Finding the runtime and building the layout need the same few things of either: memory, the
memory map, the files behind it, the executable's path and the threads' kernel ids. A
`MemorySource` gives them; `LiveProcess` asks the running process (process_vm_readv and /proc),
`core.CoreFile` reads them out of a core file.
"""

from __future__ import annotations

import os
from typing import Protocol

from ..native import read_memory
from .procmaps import Mapping, open_mapped_file, read_maps


class MemorySource(Protocol):
    pid: int

    def describe(self) -> str:
        """How messages name it: "process 123" or "core file core.123"."""

    def read(self, address: int, length: int) -> bytes:
        """`length` bytes at `address`; OSError when they cannot be read."""

    def mappings(self) -> list[Mapping]: ...

    def open_file(self, mapping: Mapping) -> str:
        """A path this process can open for the file behind `mapping` (FileNotFoundError if none)."""

    def executable(self) -> str:
        """The main program's path as the target knew it ("" when unknown)."""

    def task_ids(self) -> set[int]:
        """The kernel ids of the target's threads."""


class LiveProcess:
    def __init__(self, pid: int):
        self.pid = pid

    def describe(self) -> str:
        return f"process {self.pid}"

    def read(self, address: int, length: int) -> bytes:
        return read_memory(self.pid, address, length)

    def mappings(self) -> list[Mapping]:
        return read_maps(self.pid)

    def open_file(self, mapping: Mapping) -> str:
        return open_mapped_file(self.pid, mapping)

    def executable(self) -> str:
        try:
            return os.readlink(f"/proc/{self.pid}/exe").removesuffix(" (deleted)")
        except OSError:
            return ""

    def task_ids(self) -> set[int]:
        return {int(t) for t in os.listdir(f"/proc/{self.pid}/task")}
