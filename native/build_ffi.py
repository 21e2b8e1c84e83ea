"""cffi build script (API mode) for pytop's native unwinder: the extension `pytop._native`.

The cdef is pytop.h itself, minus the preprocessor lines cffi does not read, so the public header
and the Python binding cannot drift apart. setup.py names this file in `cffi_modules`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
SOURCES = ["remote.c", "linetable.c", "text.c", "codes.c", "frames.c", "threads.c", "osstate.c", "unwinder.c"]
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]


def cdef_text() -> str:
    """pytop.h without include guards and #includes (cffi's cdef parses declarations only)."""
    lines = []
    for line in (NATIVE / "pytop.h").read_text().splitlines():
        if re.match(r"\s*#\s*(ifndef|endif|include|define\s+PYTOP_H\b)", line):
            continue
        lines.append(line)
    return "\n".join(lines)


def relative(path: Path) -> str:
    # setuptools wants source paths relative to the project root it runs from.
    return os.path.relpath(path, Path.cwd())


ffibuilder = FFI()
ffibuilder.cdef(cdef_text())
ffibuilder.set_source(
    "pytop._native",
    '#include "pytop.h"',
    sources=[relative(NATIVE / name) for name in SOURCES],
    include_dirs=[relative(NATIVE)],
    extra_compile_args=["-std=gnu11", "-O2", *WARNINGS, *os.environ.get("PYTOP_CFLAGS", "").split()],
    extra_link_args=os.environ.get("PYTOP_LDFLAGS", "").split(),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
