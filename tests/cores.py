"""Core files of real targets, made by the tests themselves: by the kernel (the process killed
with SIGABRT under a raised core limit: what a crash leaves) or by gdb's gcore (a running
process, left running). gdb comes from Debian's packages when the machine lacks it."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

import helpers

CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


def _fail_or_skip(why: str) -> None:
    if helpers.IN_CI:
        pytest.fail(why)
    pytest.skip(why)


def gcore_command() -> str:
    """gdb's gcore, installed from Debian's packages if missing (root, apt)."""
    found = shutil.which("gcore")
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "gdb"], capture_output=True, timeout=900,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        found = shutil.which("gcore")
    if not found:
        _fail_or_skip("gdb's gcore is not installed and could not be (apt-get install gdb)")
    return str(found)


def gcore(pid: int, directory: Path) -> Path:
    """A core of running process `pid`, which goes on running."""
    prefix = directory / "gcore"
    result = subprocess.run([gcore_command(), "-o", str(prefix), str(pid)], capture_output=True, text=True,
                            timeout=300)
    path = Path(f"{prefix}.{pid}")
    assert path.exists(), f"gcore made no core of {pid}: {result.stdout[-2000:]} {result.stderr[-2000:]}"
    return path


def kernel_core(target: helpers.RunningTarget, interp: dict[str, Any], directory: Path) -> Path:
    """Kill the target with SIGABRT and take the core the kernel leaves in its working directory
    (the chroot's root for a chroot's target; `directory` for the others, started there)."""
    pattern = CORE_PATTERN.read_text().strip()
    if pattern.startswith("|") or "/" in pattern or "%" in pattern.replace("%p", ""):
        _fail_or_skip(f"the kernel's core_pattern is {pattern!r}: its cores do not land in the process's directory")
    where = Path(interp["root"]) if interp["launch"] == "chroot" else directory
    for old in where.glob("core*"):
        if old.is_file():
            old.unlink()
    resource.prlimit(target.pid, resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    os.kill(target.pid, signal.SIGABRT)
    status = target.process.wait(timeout=120)
    made = [p for p in where.glob("core*") if p.is_file()]
    assert status == -signal.SIGABRT and len(made) == 1, f"no core from the kernel (status {status}, {made})"
    path = directory / f"kernel-core.{target.pid}"
    shutil.move(str(made[0]), path)
    return path
