"""The live view's memory of its session without --record (record/private.py): a private
recording that is gone when pytop ends, and what the command line says of it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import helpers
from pytop import errors
from pytop.core.model import Circumstances
from pytop.record.keys import RunRecord
from pytop.record.private import FILE_NAME, PrivateHistory
from pytop.record.recording import open_recording
from record_fakes import TARGET, drain


def test_a_private_history_is_owned_bounded_and_gone_at_the_end(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # (TMPDIR read again)
    history = PrivateHistory(RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0), 1 << 20)
    folder = Path(history.folder)
    assert folder.parent == tmp_path and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert Path(history.path) == folder / FILE_NAME and stat.S_IMODE(os.stat(history.path).st_mode) == 0o600
    assert history.recorder.max_size == 1 << 20
    for n in (1, 2):
        history.recorder.add(drain(n))
        history.recorder.window(Circumstances(window_seconds=1.0, elapsed=float(n), rate_asked=1000.0))
    helpers.wait_until(lambda: history.recorder.written == 2, timeout=30)
    assert len(open_recording(history.path).windows) == 2
    status = history.close()
    assert status.private and status.windows == 2
    assert not folder.exists()


def test_no_temporary_folder_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(errors.UsageError, match="no temporary folder to keep it in"):
        PrivateHistory(RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0), None)


@pytest.mark.process
@pytest.mark.parametrize("args, said", [
    (["--no-history", "--batch", "--demo"], "--no-history is for a live view without --record"),
    (["--no-history", "--record", "x.pytop", "--demo"], "--no-history is for a live view without --record"),
    (["--record-max-size", "1G", "--batch", "--demo"], "--record-max-size goes with --record FILE, or the live"),
])
def test_the_history_options_asked_for_wrongly_say_so(tmp_path: Path, args: list[str], said: str) -> None:
    result = helpers.run_pytop(*args, cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr
