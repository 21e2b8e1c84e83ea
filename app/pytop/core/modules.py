"""Where a file lives, said from its installation or its project on: "json/decoder.py",
"app/views.py". The table shows files so, and a comparison matches two runs' functions by it,
so that two checkouts, or two virtual environments, compare."""

from __future__ import annotations

import re

# Inside an installation: from there on.
_INSTALL_PREFIX = re.compile(r".*/(?:site-packages|dist-packages|lib/python\d+\.\d+t?)/")


def module_relative(path: str, cwd: str | None = None) -> str:
    """A file name as short as it can be while still telling files apart: from its
    installation's root, else from the process's working directory, else whole."""
    if path.startswith("<"):
        return path  # <frozen importlib._bootstrap>, <string>, ...
    shortened = _INSTALL_PREFIX.sub("", path)
    if shortened != path:
        return shortened
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path
