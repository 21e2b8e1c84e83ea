"""Plain records shared by every part: what a stack is made of. No native code, no I/O.

A stack is packed (code id: uint32, line: int32) pairs, innermost first, in one `bytes` object
that doubles as a hashable key. Code ids are the native unwinder's, per process; names come
once per id.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FRAME = struct.Struct("<Ii")


@dataclass(frozen=True)
class Frame:
    function: str  # qualified name where the version has one
    filename: str
    line: int  # -1 when the line table has none for the instruction


@dataclass(frozen=True)
class ThreadStack:
    """One thread as a single sample saw it, names resolved (what `pytop --dump` prints)."""

    thread_id: int  # Python's thread id (threading.get_ident())
    native_id: int  # kernel TID, 0 when unknown
    name: str | None  # as threading.enumerate() has it
    gil: bool  # holds the GIL
    active: bool  # the kernel reports it running
    os_state: str  # the kernel's state letter, "?" when unknown
    interpreter_id: int
    error: str | None  # why the stack is incomplete, if it is
    truncated: bool  # cut at the depth limit
    frames: tuple[Frame, ...]  # innermost first


@dataclass(frozen=True)
class ProcessStacks:
    pid: int
    command: str
    python_version: str
    gc_collecting: bool | None
    threads: tuple[ThreadStack, ...]
