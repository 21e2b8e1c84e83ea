"""The processes a run watches: a process that exec'd is told by its program's auxiliary
vector, compared with the one its unwinder was opened on (taken before the engine's own digest:
an exec in between is seen by both, never by the engine alone, which stops reading a replaced
program and would wait for ever for it to be followed)."""

from __future__ import annotations

import os
from typing import Any

from pytop import errors
from pytop.native import process_image
from pytop.sampling.processes import ProcessSet


def followed_by(image: bytes | None) -> tuple[list[int], list[Any]]:
    asked: list[int] = []

    def follow(pid: int) -> tuple[object, object]:
        asked.append(pid)
        raise errors.NotPython(f"pid {pid}: not here")

    processes = ProcessSet(os.getpid(), follow=follow, image=image)  # type: ignore[arg-type]
    return asked, processes.execs()


def test_a_program_other_than_the_one_opened_on_is_an_exec() -> None:
    asked, execs = followed_by(b"the auxiliary vector of the program before the exec")
    assert asked == [os.getpid()]
    assert [(pid, new) for pid, new, _ in execs] == [(os.getpid(), None)]
    assert "which is not a Python program pytop can read" in execs[0][2]


def test_the_program_opened_on_is_no_exec() -> None:
    image = process_image(os.getpid())
    assert image  # this process's own vector can be read
    assert followed_by(image) == ([], [])
    assert followed_by(None) == ([], [])  # not told: the one it runs now
