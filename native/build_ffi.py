"""cffi build script (API mode) for pytop's native unwinder: the extension `pytop._native`.

The cdef is pytop.h itself, minus the preprocessor lines cffi does not read, so the public header
and the Python binding cannot drift apart. setup.py names `ffibuilder` in `cffi_modules`; the
sanitizer test calls make_builder() with its own flags.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
# In layer order, one subsystem a file: each calls only the files before it (no circles;
# tests/test_native_layering.py checks it over the compiled objects' symbols).
SOURCES = [
    "status.c",    # error text and status codes
    "guard.c",     # the terminal given back when pytop dies of a fatal signal
    "demangle.c",  # C++ symbols as people read them (the C++ runtime's demangler, loaded at run time)
    "image.c",     # a memory image (a core file's segments) read like a live process
    "remote.c",    # reading target memory: direct reads, the per-sample arena and prefetch
    "linetable.c", # line-table decoders (pure: bytes in, line ranges out)
    "text.c",      # CPython str objects to UTF-8 (pure decoding plus the remote read)
    "objects.c",   # other remote objects: ints, dicts, modules, instance attributes
    "names.c",     # thread names from the `threading` module's registry
    "codes.c",     # the code-object cache: remote address -> id, names, line ranges
    "asyncio.c",   # which asyncio task a thread runs (3.14+), as a pseudo-frame
    "samplebuf.c", # one sample's threads and frames, and the previous sample's
    "frames.c",    # walking one thread's frames (PyFrameObject or _PyInterpreterFrame)
    "image_id.c",  # which program a process runs (an exec replaces it)
    "kthreads.c",  # each thread as the kernel reports it (/proc/PID/task/TID): CPU time, state
    "pidns.c",     # a process in another PID namespace: its thread numbers as the host sees them
    "tracking.c",  # which thread is which from one sample to the next (serials)
    "blocking.c",  # --blocking: ptrace stops
    "natives.c",   # --native: each thread's C frames (libdw, loaded at run time), merged in
    "gil.c",       # the GIL's holder and its hand-overs, per sample
    "thread.c",    # one thread of a sample: its state, TID, kernel figures, frames, name, C frames
    "sparse.c",    # walking a thread list from the last full walk: only what moved is read
    "threads.c",   # one sample: interpreters, their thread lists, the GC flag; ids and lines resolved
    "unwinder.c",  # the unwinder's API in pytop.h
    "functions.c", # the engine's functions: (process, qualname, filename) -> id
    "stacks.c",    # the engine's stack tree: a node per frame of each distinct path, evicted when old
    "aggregate.c", # summing stacks' time over the tree: per function, per line, per node
    "weights.c",   # the engine's time per (stack, thread) since the last drain
    "schedule.c",  # when the engine samples: slots, jitter, skipping (schedule.h: no pytop
                   # headers, so that bench/floor.c builds on the same code)
    "budget.c",    # the CPU budget as an account: the rate at which pytop keeps within it
                   # (budget.h: no pytop headers, pure arithmetic on the clocks it is given)
    "thread_table.c",  # the engine's threads by (process, native, ident)
    "attribute.c", # where a thread's CPU time goes: only to its own stacks
    "account.c",   # the engine's per-thread bookkeeping: what each sample's time goes to
    "upkeep.c",    # the stack tree's upkeep: code references, eviction, dead code objects
    "drain.c",     # handing out what is new since the previous drain
    "engine.c",    # the engine's thread, CPU budget, lifecycle (its API in pytop.h)
]
CFLAGS = ["-std=gnu11", "-O2", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Wno-unused-parameter"]
# Warnings are errors in CI (and with PYTOP_WERROR=1), not in a user's `pip install`: a newer
# compiler's new warning, or CFLAGS such as -Wconversion, must not break the install.
if os.environ.get("CI") or os.environ.get("PYTOP_WERROR"):
    CFLAGS.append("-Werror")


def cdef_text() -> str:
    """pytop.h without include guards and #includes (cffi's cdef parses declarations only)."""
    lines = []
    for line in (NATIVE / "pytop.h").read_text().splitlines():
        if re.match(r"\s*#\s*(ifndef|endif|include|define\s+PYTOP_H\b)", line):
            continue
        lines.append(line)
    return "\n".join(lines)


def make_builder(absolute: bool = False, cflags: Sequence[str] = (), ldflags: Sequence[str] = ()) -> FFI:
    """setuptools wants source paths relative to the project root it runs from; a build in a
    temporary directory (ffi.compile(tmpdir=...)) needs them absolute."""

    def path(p: Path) -> str:
        return str(p) if absolute else os.path.relpath(p, Path.cwd())

    builder = FFI()
    builder.cdef(cdef_text())
    builder.set_source(
        "pytop._native",
        '#include "pytop.h"',
        sources=[path(NATIVE / name) for name in SOURCES],
        include_dirs=[path(NATIVE)],
        libraries=["dl"],  # natives.c loads libdw at run time (part of libc from glibc 2.34)
        extra_compile_args=[*CFLAGS, *cflags],
        extra_link_args=list(ldflags),
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
