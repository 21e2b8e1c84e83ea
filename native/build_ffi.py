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
# In the order of internal.h's map: each file calls only the ones before it.
SOURCES = ["status.c", "guard.c", "demangle.c", "image.c", "remote.c", "linetable.c", "text.c", "objects.c", "names.c", "codes.c",
           "asyncio.c", "samplebuf.c", "frames.c", "kthreads.c", "pidns.c", "tracking.c", "blocking.c", "natives.c",
           "threads.c", "unwinder.c", "functions.c", "stacks.c", "aggregate.c", "weights.c", "schedule.c",
           "attribute.c", "account.c", "drain.c", "engine.c"]
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
