"""Where the benchmarks find the peers they run beside pytop."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def py_spy() -> str | None:
    """py-spy on the PATH or beside this Python (a virtual environment's bin); None if neither
    (`pip install py-spy` puts it there)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)
