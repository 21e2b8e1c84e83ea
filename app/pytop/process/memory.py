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
        """The kernel ids of the target's threads, as the target itself knows them (in its own
        PID namespace: a process in a container has numbers of its own)."""

    def own_pid(self) -> int:
        """The target's process id as it knows it (see task_ids)."""


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
        return {own_number(self.pid, int(t)) for t in os.listdir(f"/proc/{self.pid}/task")}

    def own_pid(self) -> int:
        return own_number(self.pid, self.pid)


def own_number(pid: int, tid: int) -> int:
    """Task `tid` of process `pid` by the number its own PID namespace gives it: the last of the
    NSpid line of its status (ours first, then each namespace down to its own); `tid` itself if
    the line is missing (a kernel before 4.1) or the task is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return tid
