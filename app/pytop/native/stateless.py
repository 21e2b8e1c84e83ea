"""The native calls that need no handle: one read of a process's memory, and the decoders of line
tables and str data (tests hold them against CPython's own reading)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from .._native import ffi, lib
from .status import STATUS_ERRNO

MAX_READ = 16 << 20  # as the native reader's MAX_READ_BYTES: a larger read is refused


def read_memory(pid: int, address: int, length: int) -> bytes:
    """`length` bytes at `address` in process `pid`. Raises OSError: ProcessLookupError when
    the process is gone, PermissionError when not allowed, plain OSError otherwise."""
    if not (0 <= address < 1 << 64 and 0 <= length <= MAX_READ and address + length <= 1 << 64):
        raise OSError(errno.EFAULT, f"cannot read {length} bytes at {address:#x} in process {pid}: not an address")
    buf = ffi.new("char[]", length)
    status = lib.pytop_read_memory(pid, address, buf, length)
    if status != lib.PYTOP_OK:
        raise OSError(STATUS_ERRNO.get(status, errno.EFAULT),
                      f"cannot read {length} bytes at {address:#x} in process {pid}")
    return bytes(ffi.buffer(buf, length))


def decode_line(table_format: int, table: bytes, firstlineno: int, offset: int) -> int:
    """The line of bytecode byte `offset` per a line table, as the native decoder reads it
    (-1: no line). Exposed for tests that hold it against CPython's own reading."""
    return int(lib.pytop_decode_line(table_format, table, len(table), firstlineno, offset))


def decode_text(kind: int, data: bytes, count: int, capacity: int = 1 << 16) -> str | None:
    """`count` characters of `kind` bytes each, as the native str decoder turns them to UTF-8."""
    out = ffi.new("char[]", capacity)
    n = lib.pytop_decode_text(kind, data, len(data), count, out, capacity)
    return None if n < 0 else ffi.buffer(out, n)[:].decode("utf-8")


@contextlib.contextmanager
def terminal_guarded(fd: int) -> Iterator[None]:
    """While the block runs, a fatal signal (an assertion in a C library, a crash) gives the
    terminal on `fd` back as it is now before pytop dies (native/guard.c)."""
    guarded = lib.pytop_guard_terminal(fd) == lib.PYTOP_OK
    try:
        yield
    finally:
        if guarded:
            lib.pytop_unguard_terminal()


def demangled(symbol: str) -> str:
    """A C++ symbol as people read it ("void svd_wrapper<double>(char, ...) [clone .constprop.1]");
    any other name as it is."""
    if not symbol.startswith("_Z"):
        return symbol
    out = ffi.new("char[]", 4096)
    if lib.pytop_demangle(symbol.encode(), out, 4096) != lib.PYTOP_OK:
        return symbol
    return str(ffi.string(out).decode("utf-8", "replace"))
