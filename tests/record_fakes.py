"""A recording made without a target: drains as the engine hands them over, of one process
whose thread spins in one function (tests of the replay's reading and of its screen)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from unittest import mock

from pytop.core.model import Circumstances, RecordStatus, TargetInfo
from pytop.core.records import Drain, Function, FunctionFigures, Node, ProcessUpdate, ThreadUpdate, Weight
from pytop.record import recorder as recorder_module
from pytop.record.keys import RunRecord
from pytop.record.recorder import Recorder

TARGET = TargetInfo(4242, "python app.py", "3.12.1")


def drain(n: int = 1) -> Drain:
    return Drain(
        processes=(ProcessUpdate(1, 4242, 0, 3, 10 * n, 0, 9, 1, 10, 0, 5_000_000, 0, None),),
        threads=(ThreadUpdate(7, 1, 140, 4243, 3, "wörker \udcff" if n == 1 else None, 4_000_000, 9_000_000, 0, 10, 9,
                              0, 0, 12, "R", 1000),),
        functions=(Function(3, 1, 0, False, "Worker.spin", "/srv/app.py"), Function(4, 1, 1, False, None, None),
                   Function(5, 1, 0, True, "task main", "<asyncio task>", False)),
        retired=(2,), evicted=(9, 10),
        nodes=(Node(11, 0, 0, 0, 1, 0, 0, 2, 0), Node(12, 11, 77, 30, 1, 3, 1, 6, 0)),
        weights=(Weight(12, 7, 10, 9, 4_000_000, 9_000_000, 8_000_000),),
        function_rows=(FunctionFigures(3, 0, tuple(range(12))),), line_rows=(FunctionFigures(3, 30, (1,) * 12),),
        ticks=10, late=1, skipped=0, slot_seconds=0.01, first_at=100.0 + n, last_at=100.009 + n, lag=0.0001,
        longest_delay=0.002, cpu_seconds=0.5, start_up_cpu=0.2, rate_now=1000.0, budget_limited=True, running=True,
        realtime=False, stacks_dropped=0, stacks_coarsened=2, stack_nodes=12, end=None)


CIRCUMSTANCES = Circumstances(window_seconds=0.98, elapsed=12.5, rate_asked=1000.0, skipped_share=0.1,
                              rate_held=250.0, cpu_budget=0.05, pytop_cpu_pct=4.2, rss=1 << 30, stopped=(4242,),
                              processes=(4242, 4250), sampler_cpu=0.5, stacks_coarsened=2,
                              last_error="process gone", window_number=13,
                              record=RecordStatus("/tmp/x.pytop", 100, 2))



def write_recording(path: Path, windows: int, cpu_ns: Sequence[int] = (), started: float | None = None) -> None:
    """A recording of `windows` windows of a second each, the first one's drain naming everything.
    Its queue holds them all: added faster than a disk takes them, windows past the recorder's
    own queue gave up their figures, 29 or 30 of 60 by how the writer's thread was scheduled, and
    the tests on it saw one recording or another. cpu_ns: the process's CPU in each window (5 ms
    in each if not given). started: the wall clock the recording starts at, its windows a second
    of it apart (else each is stamped with the moment it is written: all within milliseconds)."""
    with _clock(started):
        _write(path, windows, cpu_ns)


@contextlib.contextmanager
def _clock(started: float | None) -> Iterator[None]:
    if started is None:
        yield
        return
    ticks = itertools.count()

    class Clock:
        @staticmethod
        def time() -> float:  # the recorder's opening, then each window's end
            return started + next(ticks)

    with mock.patch.object(recorder_module, "time", Clock):
        yield


def _write(path: Path, windows: int, cpu_ns: Sequence[int]) -> None:
    recorder = Recorder(str(path), RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0), queue_windows=windows + 1)
    for n in range(windows):
        made = drain(n + 1)
        if cpu_ns:
            made = replace(made, processes=(made.processes[0]._replace(cpu_ns=cpu_ns[n]),))
        recorder.add(made if n == 0 else Drain(**{**made.__dict__, "functions": (), "nodes": (), "retired": (),
                                                  "evicted": ()}))
        recorder.window(Circumstances(window_seconds=1.0, elapsed=n + 1.0, rate_asked=1000.0, window_number=n + 1))
    recorder.close()
