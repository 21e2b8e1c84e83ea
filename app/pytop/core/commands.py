"""What the UI asks of the sampler, one type each: sent (Sampler.send) from any thread,
applied on the sampler's thread between drains (and a snapshot follows at once).

Most change the view (what the next snapshot shows), each by `applied(view)`; the others
reset the figures, change the pace of refreshes, write an export, or only wake the thread."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from .model import Mode, RowKey, ThreadKey
from .snapshot import View


class ViewChange:
    def applied(self, view: View) -> View:
        raise NotImplementedError


@dataclass(frozen=True)
class ByLine(ViewChange):
    by_line: bool

    def applied(self, view: View) -> View:
        return replace(view, by_line=self.by_line, focus=None)  # a function's key is not a line's


@dataclass(frozen=True)
class ChangeMode(ViewChange):
    mode: Mode

    def applied(self, view: View) -> View:
        return replace(view, mode=self.mode)


@dataclass(frozen=True)
class NarrowToThread(ViewChange):
    key: ThreadKey | None  # None: every thread

    def applied(self, view: View) -> View:
        return replace(view, thread=self.key)


@dataclass(frozen=True)
class NarrowToProcess(ViewChange):
    pid: int | None  # None: every process

    def applied(self, view: View) -> View:
        return replace(view, process=self.pid, thread=None)


@dataclass(frozen=True)
class Focus(ViewChange):
    key: RowKey | None  # the function whose callers and callees to show, None: no panel

    def applied(self, view: View) -> View:
        return replace(view, focus=self.key)


@dataclass(frozen=True)
class ShowTree(ViewChange):
    shown: bool

    def applied(self, view: View) -> View:
        return replace(view, tree=self.shown)


@dataclass(frozen=True)
class ShowThreads(ViewChange):
    shown: bool  # the thread panel: its rows are built only while it shows

    def applied(self, view: View) -> View:
        return replace(view, threads=self.shown)


@dataclass(frozen=True)
class ShowTasks(ViewChange):
    shown: bool

    def applied(self, view: View) -> View:
        return replace(view, tasks=self.shown, focus=None)  # a task's row may be gone


@dataclass(frozen=True)
class Reset:
    """Throw the figures away and count from now."""


@dataclass(frozen=True)
class Delay:
    seconds: float  # between refreshes


@dataclass(frozen=True)
class Export:
    directory: str


@dataclass(frozen=True)
class Seek:
    """A recording shown again: move its time cursor by `windows`, or by `seconds`, or to its
    first (edge -1) or last (edge 1) window, or to the window of a moment (`to`: wall-clock
    seconds), or to window `index` (a click on a recording's time axis). The live view has no
    cursor: it ignores this."""

    windows: int = 0
    seconds: float = 0.0
    edge: int = 0
    to: float | None = None
    index: int | None = None

    @property
    def back(self) -> bool:
        """Does it go into the past from a live view's present (any jump may)?"""
        return self.windows < 0 or self.seconds < 0 or self.edge < 0 or self.to is not None or self.index is not None


@dataclass(frozen=True)
class Wake:
    """Nothing to do: the thread looks at its stop flag."""


Command = Union[ViewChange, Reset, Delay, Export, Seek, Wake]
