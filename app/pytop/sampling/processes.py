"""The processes pytop watches: the target, and with --subprocesses its Python descendants as
they come and go. Used from the sampler's aggregating thread only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psutil

from .. import errors
from ..native import Unwinder
from ..target.threadnames import ThreadNames

Attach = Callable[[int], tuple[Unwinder, ThreadNames | None]]


@dataclass
class Watched:
    pid: int
    unwinder: Unwinder
    names: ThreadNames | None
    process: psutil.Process | None  # for CPU and memory figures
    alive: bool = True


def _process(pid: int) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        process.cpu_percent(None)  # start the measurement
        return process
    except psutil.Error:
        return None


class ProcessSet:
    def __init__(self, root: int, unwinder: Unwinder, names: ThreadNames | None,
                 attach: Attach | None = None):
        """attach: how to start watching a new descendant (None: only the root is watched)."""
        self.root = root
        self.attach = attach
        self.watched: dict[int, Watched] = {root: Watched(root, unwinder, names, _process(root))}
        self._not_python: set[int] = set()

    @property
    def alive(self) -> tuple[int, ...]:
        return tuple(sorted(pid for pid, w in self.watched.items() if w.alive))

    def unwinder(self, pid: int) -> Unwinder:
        return self.watched[pid].unwinder

    def gone(self, pid: int) -> None:
        if pid in self.watched:
            self.watched[pid].alive = False

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
                unwinder, names = self.attach(pid)
            except (errors.NotPython, errors.UnsupportedVersion, errors.PermissionDenied):
                self._not_python.add(pid)
                continue
            except errors.PytopError:
                continue  # exited, or not started far enough yet: try again next time
            self.watched[pid] = Watched(pid, unwinder, names, _process(pid))
            found.append((pid, unwinder))
        return found

    def names(self, unnamed: dict[int, set[int]]) -> dict[tuple[int, int], str]:
        """Thread names by (pid, thread id); unnamed: per pid, the ids of live threads that
        have no name yet (see ThreadNames.get)."""
        out: dict[tuple[int, int], str] = {}
        for pid, w in self.watched.items():
            if w.alive and w.names is not None:
                for ident, name in w.names.get(unnamed.get(pid, set())).items():
                    out[(pid, ident)] = name
        return out

    def usage(self) -> tuple[float | None, int | None]:
        """CPU % and resident memory, summed over the live processes."""
        cpu = rss = None
        for w in self.watched.values():
            if not w.alive or w.process is None:
                continue
            try:
                with w.process.oneshot():
                    cpu = (cpu or 0.0) + w.process.cpu_percent(None)
                    rss = (rss or 0) + w.process.memory_info().rss
            except psutil.Error:
                continue
        return cpu, rss

    def close(self) -> None:
        for pid, w in self.watched.items():
            if pid != self.root:  # the root's unwinder belongs to whoever attached to it
                w.unwinder.close()
