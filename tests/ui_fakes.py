"""A deterministic stand-in for the sampler, for UI tests only (the sampler itself is tested
against real targets in test_sampler.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pytop.core import commands
from pytop.core.model import (
    CallGraph,
    Circumstances,
    FunctionRow,
    Neighbour,
    Snapshot,
    TargetInfo,
    ThreadRow,
    TreeNode,
)
from pytop.core.records import Frame, LocalVariable, ProcessStacks, ThreadStack

TARGET = TargetInfo(4242, "python shop.py --port 8080", "3.12.1", "/srv/shop")

# (function, file, line, own%, total%, own s, total s)
FUNCTIONS = [
    ("is_prime", "/srv/shop/reports.py", 41, 35.0, 35.0, 12.5, 12.5),
    ("render_response", "/srv/shop/web.py", 88, 20.0, 42.0, 6.0, 14.2),
    ("JSONEncoder.iterencode", "/usr/lib/python3.12/json/encoder.py", 258, 12.0, 12.0, 8.1, 8.1),
    ("query_database", "/srv/shop/db.py", 17, 5.0, 5.0, 20.0, 20.0),
    ("handle_request", "/srv/shop/web.py", 52, 1.0, 63.0, 0.4, 30.0),
    ("Thread.run", "/usr/lib/python3.12/threading.py", 1010, 0.0, 98.0, 0.0, 50.1),
]


def rows(by_line: bool, scale: float = 1.0) -> tuple[FunctionRow, ...]:
    out = []
    for function, filename, line, own, total, own_t, total_t in FUNCTIONS:
        out.append(FunctionRow(
            key=(function, filename, line if by_line else 0, 4242), function=function, filename=filename,
            line=line if by_line else None, pid=4242, own_pct=own, total_pct=total,
            own_time=own_t * scale, total_time=total_t * scale,
            own_count=int(own_t * scale * 100), total_count=int(total_t * scale * 100)))
    return tuple(out)


THREADS = (
    ThreadRow(1, 4242, 0x7F01, 4242, "MainThread", 5012, 2.0, 1.5, "Event.wait", True, cpu_time=1.0),
    ThreadRow(2, 4242, 0x7F02, 4250, "handler-0", 5012, 62.0, 40.1, "render_response", True, cpu_time=31.1),
    ThreadRow(3, 4242, 0x7F03, 4251, "handler-1", 5012, 58.3, 37.9, "handle_request", True, cpu_time=29.2,
              errors=3, last_error="inconsistent memory"),
    ThreadRow(4, 4242, 0x7F04, 4252, "reports", 5012, 35.0, 34.7, "is_prime", True, cpu_time=17.5),
    ThreadRow(5, 4242, 0x7F05, 4253, "cache-janitor", 5012, 0.4, 0.2, "Event.wait", True, cpu_time=0.2,
              unplaced_time=0.05),
    ThreadRow(6, 4242, 0x7F06, 4260, "Thread-7 (process_request_thread)", 120, 80.0, 10.0, None, False,
              cpu_time=0.9),
)
KEY_RENDER = ("render_response", "/srv/shop/web.py", 0, 4242)
GRAPHS = {
    KEY_RENDER: CallGraph(KEY_RENDER, 14.2,
                          callers=(Neighbour(("handle_request", "/srv/shop/web.py", 0, 4242), 14.2, 1.0),),
                          callees=(Neighbour(("JSONEncoder.iterencode", "/usr/lib/python3.12/json/encoder.py", 0, 4242),
                                             8.1, 0.57),
                                   Neighbour(("(itself)", "", 0, 0), 6.0, 0.42))),
    ("handle_request", "/srv/shop/web.py", 0, 4242): CallGraph(
        ("handle_request", "/srv/shop/web.py", 0, 4242), 30.0,
        callers=(Neighbour(("Thread.run", "/usr/lib/python3.12/threading.py", 0, 4242), 30.0, 1.0),),
        callees=(Neighbour(("query_database", "/srv/shop/db.py", 0, 4242), 15.4, 0.51),
                 Neighbour(KEY_RENDER, 14.2, 0.47))),
}


def snapshot(by_line: bool = False, scale: float = 1.0, **changes: object) -> Snapshot:
    """The fake snapshot; `changes` may name a Snapshot's fields or its Circumstances' (`run`)."""
    run: dict[str, object] = dict(window_seconds=1.0, elapsed=50.2 * scale, rate_asked=100.0, rss=73 << 20,
                                  processes=(4242,))
    values: dict[str, object] = dict(
        target=TARGET, rows=rows(by_line, scale), by_line=by_line, samples=int(5012 * scale), rate=99.8, errors=0,
        late=0, gil_pct=61.5, active_pct=43.3, threads=6, cpu_pct=88.0, mode="cpu", thread_rows=THREADS, gc_pct=1.2)
    for name, value in changes.items():
        (run if name in CIRCUMSTANCES else values)[name] = value
    return Snapshot(**values, run=Circumstances(**run))  # type: ignore[arg-type]


CIRCUMSTANCES = {f.name for f in dataclasses.fields(Circumstances)}



def node(function: str, filename: str, total: float, own: float, *children: TreeNode) -> TreeNode:
    return TreeNode((function, filename, 0, 4242), total, own, children)


# Thread.run -> handle_request -> {query_database, render_response -> iterencode}; is_prime; ...
TREE = TreeNode(("(all threads)", "", 0, 0), 50.1, 0.0, (
    node("Thread.run", "/usr/lib/python3.12/threading.py", 50.1, 0.0,
         node("handle_request", "/srv/shop/web.py", 30.0, 0.4,
              node("query_database", "/srv/shop/db.py", 15.4, 15.4),
              node("render_response", "/srv/shop/web.py", 14.2, 6.1,
                   node("JSONEncoder.iterencode", "/usr/lib/python3.12/json/encoder.py", 8.1, 8.1))),
         node("is_prime", "/srv/shop/reports.py", 12.5, 12.5),
         node("query_database", "/srv/shop/db.py", 4.6, 4.6),
         TreeNode(("(smaller calls)", "", 0, 0), 3.0, 3.0, ())),
))


class FakeSource:
    """Answers the app's requests with fixed snapshots, at once, on the calling thread."""

    def __init__(self, first: Snapshot | None = None):
        self.first = first or snapshot()
        self.publish: Callable[[Snapshot], None] | None = None
        self.by_line = False
        self.mode = "cpu"
        self.resets = 0
        self.stopped = False
        self.thread: object = None
        self.focus: object = None
        self.process: object = None
        self.exports: list[str] = []
        self.delays: list[float] = []
        self.tree = False
        self.looked: int | None = None
        self.threads_shown = True
        self.tasks = False
        self.seeks: list[commands.Seek] = []

    def stacks_now(self, pid: int, stopped: Callable[[], bool]) -> tuple[ProcessStacks, str | None]:
        """A process of one thread, asleep in wait(timeout=5) under main()."""
        self.looked = pid
        frames = (Frame("wait", "/srv/app.py", 12), Frame("main", "/srv/app.py", 30))
        variables = ((LocalVariable("timeout", "5", True), LocalVariable("left", "4.5", False)), ())
        thread = ThreadStack(1, 2, "MainThread", False, False, "S", 0, None, False, frames, variables)
        return ProcessStacks(pid, "python app.py", "3.12.1", False, (thread,)), None

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        self.publish = publish
        publish(self.first)

    def stop(self) -> None:
        self.stopped = True

    def send(self, command: commands.Command) -> None:
        """As the sampler does: remembered, and a snapshot in the view asked for follows."""
        if isinstance(command, commands.Reset):
            self.resets += 1
            self._send(snapshot(self.by_line, scale=0.01, mode=self.mode))  # the mode stays
            return
        if isinstance(command, commands.Delay):
            self.delays.append(command.seconds)
            return
        if isinstance(command, commands.ChangeMode):
            self.mode = command.mode
        elif isinstance(command, commands.ByLine):
            self.by_line, self.focus = command.by_line, None
        elif isinstance(command, commands.NarrowToThread):
            self.thread = command.key
        elif isinstance(command, commands.NarrowToProcess):
            self.process = command.pid
        elif isinstance(command, commands.Focus):
            self.focus = command.key
        elif isinstance(command, commands.ShowTree):
            self.tree = command.shown
        elif isinstance(command, commands.ShowThreads):
            self.threads_shown = command.shown  # the fake's snapshots carry every thread's row anyway
            return
        elif isinstance(command, commands.ShowTasks):
            self.tasks = command.shown
            return
        elif isinstance(command, commands.Seek):
            self.seeks.append(command)
            return
        elif isinstance(command, commands.Export):
            self.exports.append(command.directory)
            self._send(self.current(exported=(f"{command.directory}/pytop-4242.collapsed.txt",
                                              f"{command.directory}/pytop-4242.speedscope.json")))
            return
        self._send(self.current())

    def current(self, **changes: object) -> Snapshot:
        thread = next((t for t in THREADS if t.key == self.thread), None)
        graph = GRAPHS.get(self.focus) if self.focus else None  # type: ignore[call-overload]
        return snapshot(self.by_line, thread_filter=thread, call_graph=graph, mode=self.mode,
                        call_tree=TREE if self.tree else None, **changes)

    def _send(self, s: Snapshot) -> None:
        if self.publish is not None:
            self.publish(s)


async def shown(app: Any, pilot: Any, text: str, seconds: float = 4.0) -> str:
    """The header, once it says `text` (a replay's thread answers a key in a moment; a live
    target's sampler, in a few windows)."""
    for _ in range(round(seconds / 0.02)):
        await pilot.pause(0.02)
        header = str(app.main.query_one("#header").render())
        if text in header:
            return header
    raise AssertionError(f"the header never said {text!r}: {header}")
