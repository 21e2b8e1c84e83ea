"""The processes pytop watches: the target, and with --subprocesses its Python descendants as
they come and go. Used from the sampler's thread only; the engine owns their unwinders."""

from __future__ import annotations

from collections.abc import Callable

import psutil

from .. import errors
from ..native import Unwinder

Attach = Callable[[int], Unwinder]


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


class ProcessSet:
    def __init__(self, root: int, attach: Attach | None = None):
        """attach: how to start watching a new descendant (None: only the root is watched)."""
        self.root = root
        self.attach = attach
        self.watched: dict[int, psutil.Process | None] = {root: _process(root)}
        self._gone: set[int] = set()
        self._not_python: set[int] = set()

    @property
    def alive(self) -> tuple[int, ...]:
        return tuple(sorted(pid for pid in self.watched if pid not in self._gone))

    def gone(self, pid: int) -> None:
        self._gone.add(pid)

    def discover(self) -> list[tuple[int, Unwinder]]:
        """Attach to descendants that are new and Python; returns them."""
        if self.attach is None:
            return []
        try:
            children = psutil.Process(self.root).children(recursive=True)
        except psutil.Error:
            return []
        found = []
        for child in children:
            pid = child.pid
            if pid in self.watched or pid in self._not_python:
                continue
            try:
                unwinder = self.attach(pid)
            except (errors.NotPython, errors.UnsupportedVersion, errors.PermissionDenied):
                self._not_python.add(pid)
                continue
            except errors.PytopError:
                continue  # exited, or not started far enough yet: try again next time
            self.watched[pid] = _process(pid)
            found.append((pid, unwinder))
        return found

    def stopped(self) -> tuple[int, ...]:
        """The live processes that are stopped (SIGSTOP, a debugger): nothing of theirs runs."""
        found = []
        for pid, process in self.watched.items():
            if pid in self._gone or process is None:
                continue
            try:
                if process.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
                    found.append(pid)
            except psutil.Error:
                continue
        return tuple(found)

    def rss(self) -> int | None:
        """Resident memory, summed over the live processes."""
        total = None
        for pid, process in self.watched.items():
            if pid in self._gone or process is None:
                continue
            try:
                total = (total or 0) + process.memory_info().rss
            except psutil.Error:
                continue
        return total
