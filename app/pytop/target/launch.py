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

    def __init__(self, argv: list[str], quiet: bool, log: str | None = None):
        """quiet: its output would scribble over the live view, so it goes to `log`, or to a
        temporary log file; otherwise it goes to pytop's stderr (pytop's stdout carries the
        report)."""
        self.argv = argv
        self.log_path: str | None = None
        self.temporary_log = False
        if quiet and log:
            try:
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise errors.UsageError(f"cannot write {log}: {exc.strerror}") from None
            self.log_path = log
        elif quiet:
            fd, self.log_path = tempfile.mkstemp(prefix="pytop-child-", suffix=".log")
            self.temporary_log = True
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

    def status(self, wait: float = 0.0) -> int | None:
        """Its exit status once it has ended by itself (-N: killed by signal N), else None.
        `wait`: how long to give a process that is ending (its memory gone, not yet reaped)."""
        try:
            return self.process.wait(wait) if wait else self.process.poll()
        except subprocess.TimeoutExpired:
            return None

    def finish_log(self) -> str | None:
        """Once it has ended: the file that holds its output, None if there is none to keep
        (an empty temporary log is removed)."""
        if self.log_path and self.temporary_log:
            try:
                if os.path.getsize(self.log_path) == 0:
                    os.unlink(self.log_path)
                    return None
            except OSError:
                return None
        return self.log_path

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
