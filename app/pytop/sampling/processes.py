"""The processes pytop watches: the target, and with --subprocesses its Python descendants as
they come and go, and a process that exec'd another program. Used from the sampler's thread
only; the engine owns their unwinders.

An exec keeps the pid and replaces the whole memory: the unwinder's addresses then name
nothing. It is told by the process's auxiliary vector (/proc/PID/auxv), which the kernel writes
anew at every exec (with the stack's random bytes and the new program's entry point)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import psutil

from .. import errors
from ..core.model import TargetInfo
from ..core.visible import visible_command
from ..native import Unwinder, process_image
from ..process.pythons import is_python

HINT_EVERY = 3.0  # seconds between looks at whether the work runs in a child (without -s)
BUSY_CHILD_PCT = 5.0  # a child using this much of a core is at work
IDLE_ROOT_PCT = 2.0  # ... while the process watched uses less

Attach = Callable[[int], Unwinder]
Follow = Callable[[int], "tuple[Unwinder, TargetInfo]"]  # the program a process exec'd, if Python


def command_of(pid: int) -> str:
    try:
        return visible_command(" ".join(psutil.Process(pid).cmdline())) or f"pid {pid}"
    except psutil.Error:
        return f"pid {pid}"


def _started_after(process: psutil.Process, when: float) -> bool:
    """Whether `process` started after `when` (wall-clock seconds; the kernel counts start times
    in clock ticks: a process started in the same tick is not)."""
    try:
        return process.create_time() > when + 0.02
    except psutil.Error:
        return False


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


class ProcessSet:
    def __init__(self, root: int, attach: Attach | None = None, follow: Follow | None = None,
                 since_start: bool = False, image: bytes | None = None):
        """attach: how to start watching a new descendant (None: only the root is watched).
        follow: how to read the program a watched process exec'd (None: it is not followed).
        since_start: the run began when the root did (pytop started it), not now.
        image: the program the root's unwinder was opened on (None: the one it runs now)."""
        self.root = root
        self._kids: dict[int, psutil.Process] = {}  # children looked at for where the work runs
        self._next_look = 0.0
        self.hint: str | None = None  # the latest work_elsewhere()
        self.made_at = time.time()
        if since_start:
            with contextlib.suppress(psutil.Error):
                self.made_at = min(self.made_at, psutil.Process(root).create_time() - 0.02)
        self.attach = attach
        self.follow = follow
        self.watched: dict[int, psutil.Process | None] = {root: _process(root)}
        self._images: dict[int, bytes | None] = {root: image if image is not None else process_image(root)}
        self._gone: set[int] = set()
        self._not_python: set[int] = set()

    @property
    def alive(self) -> tuple[int, ...]:
        return tuple(sorted(pid for pid in self.watched if pid not in self._gone))

    def gone(self, pid: int) -> None:
        self._gone.add(pid)

    def root_alive(self) -> bool:
        """Whether the root process still runs (a zombie has ended: its parent has yet to reap it)."""
        root = self.watched.get(self.root)
        try:
            return root is not None and root.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def discover(self) -> list[tuple[int, Unwinder, bool]]:
        """Attach to descendants that are new and Python; returns them, each with whether it
        started since the run began (all its CPU time is then the run's: a worker that computed
        before it was found is counted whole, not from then on)."""
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
            self._images[pid] = unwinder.image
            found.append((pid, unwinder, _started_after(child, self.made_at)))
        return found

    def work_elsewhere(self) -> str | None:
        """Without -s: when the process watched idles while a Python child of it computes (Django's
        autoreloader runs the server in a child; a supervisor forks its workers), where the work
        is and how to see it: the table would stay empty for ever without a word."""
        if self.attach is not None:
            return None
        now = time.monotonic()
        if now < self._next_look:
            return self.hint
        self._next_look = now + HINT_EVERY
        root = self.watched.get(self.root)
        try:
            idle = root is None or root.cpu_percent(None) < IDLE_ROOT_PCT
            children = psutil.Process(self.root).children(recursive=True)
        except psutil.Error:
            return None
        busy: list[tuple[float, int]] = []
        for child in children:
            known = self._kids.setdefault(child.pid, child)
            try:
                cpu = known.cpu_percent(None)  # since the last look (0 at the first)
            except psutil.Error:
                continue
            if cpu >= BUSY_CHILD_PCT and is_python(child.pid):
                busy.append((cpu, child.pid))
        self._kids = {child.pid: self._kids[child.pid] for child in children if child.pid in self._kids}
        self.hint = None
        if idle and busy:
            cpu, pid = max(busy)
            self.hint = (f"pid {self.root} is idle, and its child {pid} ({command_of(pid)}) uses {cpu:.0f}% of a "
                          f"core: the work runs there. pytop -s {self.root} watches both, pytop {pid} the child.")
        return self.hint

    def execs(self) -> list[tuple[int, tuple[Unwinder, TargetInfo] | None, str]]:
        """The watched processes that exec'd a program since the last look: (pid, the new
        program ready to sample if pytop can read it, why the old program's run ended)."""
        found = []
        for pid in self._execed():
            followed = self._following(pid)
            if followed is not None and followed[0].image is not None:
                self._images[pid] = followed[0].image  # (an exec again since: followed next time)
            why = f"pid {pid} exec'd {command_of(pid)}" + (
                ": following it" if followed else ", which is not a Python program pytop can read")
            found.append((pid, followed, why))
        return found

    def _execed(self) -> list[int]:
        """The live watched processes that exec'd a program since the last look."""
        found = []
        for pid in self.alive:
            now = process_image(pid)
            if now is None:
                continue  # gone, or not ours to read: the engine says so
            if self._images.get(pid) not in (None, now):
                found.append(pid)
                self.watched[pid] = _process(pid)
            self._images[pid] = now
        return found

    def _following(self, pid: int) -> tuple[Unwinder, TargetInfo] | None:
        """The program `pid` exec'd, ready to sample if pytop can read it; else None."""
        if self.follow is None:
            return None
        try:
            return self.follow(pid)
        except errors.PytopError:
            return None

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
