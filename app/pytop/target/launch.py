"""Starting a command for pytop to watch (`pytop -- python app.py`, `pytop --demo`), and
attaching once its Python runtime is up."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from .. import errors
from .attach import Target, attach

STARTUP_TIMEOUT = 15.0


class Child:
    """A command pytop started; ended (politely, then not) when pytop is done with it."""

    def __init__(self, argv: list[str], quiet: bool):
        """quiet: its output would scribble over the live view, so it goes to a log file;
        otherwise it goes to pytop's stderr (pytop's stdout carries the report)."""
        self.argv = argv
        self.log_path: str | None = None
        if quiet:
            fd, self.log_path = tempfile.mkstemp(prefix="pytop-child-", suffix=".log")
        else:
            fd = os.dup(sys.stderr.fileno())
        try:
            self.process = subprocess.Popen(argv, stdout=fd, stderr=fd, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise errors.UsageError(f"cannot start {argv[0]}: {exc.strerror}") from None
        finally:
            os.close(fd)

    @property
    def pid(self) -> int:
        return self.process.pid

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def attach_when_ready(child: Child, timeout: float = STARTUP_TIMEOUT) -> Target:
    """Attach as soon as the child's Python runtime can be read."""
    deadline = time.monotonic() + timeout
    last: errors.PytopError | None = None
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            raise errors.TargetExited(
                f"{child.argv[0]} exited (status {child.process.returncode}) before pytop could attach")
        try:
            target = attach(child.pid)
        except (errors.NotPython, errors.AttachFailed, errors.NoSuchProcess) as exc:
            last = exc  # not loaded or not initialised yet
            time.sleep(0.05)
            continue
        if _interpreter_ready(target):
            return target
        target.close()
        time.sleep(0.05)
    raise last or errors.AttachFailed(f"{child.argv[0]} did not start Python within {timeout:.0f} s")


def _interpreter_ready(target: Target) -> bool:
    from ..native import SampleError

    try:
        return bool(target.unwinder.sample().threads)
    except SampleError:
        return False


def demo_command() -> list[str]:
    return [sys.executable, "-m", "pytop.demo"]
