"""The live view's memory of its session when nothing is recorded (no --record): the same
recording, written to a private temporary folder and taken away when pytop ends, so that the
time keys step back into the past of any live view. A spike that passed before anyone looked
at the screen can be looked at again.

The folder is made by tempfile.mkdtemp (0700, a name no other user can guess or take), the file
in it is 0600 and opened without following a link, as every file pytop writes. It is bounded as
--record-max-size bounds a recording (the oldest part goes): the memory it takes is the disk's
(or the tmpfs's), never pytop's own. When it cannot be made (no writable temporary folder), the
live view goes on without a past and says why."""

from __future__ import annotations

import contextlib
import os
import tempfile

from .. import errors
from ..core.model import RecordStatus
from .keys import RunRecord
from .recorder import Recorder

FILE_NAME = "session.pytop"


class PrivateHistory:
    def __init__(self, run: RunRecord, max_size: int | None):
        """Raises errors.UsageError when no private recording can be made (the reason said)."""
        try:
            self.folder = tempfile.mkdtemp(prefix="pytop-history-")
        except OSError as exc:
            raise errors.UsageError(f"no temporary folder to keep it in ({exc.strerror or exc})") from None
        self.path = os.path.join(self.folder, FILE_NAME)
        try:
            self.recorder = Recorder(self.path, run, max_size=max_size, private=True)
        except errors.UsageError:
            self._remove()
            raise

    def close(self) -> RecordStatus:
        """Once sampling has stopped: the file and its folder are gone."""
        try:
            return self.recorder.close()
        finally:
            self._remove()

    def _remove(self) -> None:
        for name in os.listdir(self.folder) if os.path.isdir(self.folder) else ():
            # (only what pytop put there: the recording, and a rotation's file if one was cut short)
            if name == FILE_NAME or name.startswith(f".{FILE_NAME}.rotating-"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.folder, name))
        with contextlib.suppress(OSError):
            os.rmdir(self.folder)
