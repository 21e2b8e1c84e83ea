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


StacksNow = Callable[[int], tuple[ProcessStacks, "str | None"]]
"""Every thread's stack in a process now, with arguments, locals and C frames, and a note on
what could not be read (it blocks: the d panel calls it on a worker thread)."""
