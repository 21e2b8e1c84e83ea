"""Messages from the sampler thread to the app."""

from __future__ import annotations

from textual.message import Message

from ..core.model import Snapshot


class SnapshotReady(Message):
    """A new snapshot; a newer one replaces it if the app has not got to it yet."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot
        """The figures to show."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotReady)
