"""What the view needs from a sampler (a fake one in UI tests), and from what reads stacks now."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..core.commands import Command
from ..core.model import Snapshot
from ..core.records import ProcessStacks


class SnapshotSource(Protocol):
    """How the view gets its snapshots and sends what the keys ask for (a Sampler)."""

    def start(self, publish: Callable[[Snapshot], None]) -> None: ...
    def stop(self) -> None: ...
    def send(self, command: Command) -> None:
        """A view, a reset, a pace or an export (core/commands.py): a snapshot follows."""
        ...


StacksNow = Callable[[int, Callable[[], bool]], tuple[ProcessStacks, "str | None"]]
"""Every thread's stack in a process now, with arguments, locals and C frames, and a note on
what could not be read (it blocks: the d panel calls it on a worker thread). Its second
argument says when the panel has gone: the read then stops between two threads (errors.ReadStopped),
and lets the target's threads go (a read of 2,000 threads' C frames takes ~10 s, and pytop's
exit waited for it)."""
