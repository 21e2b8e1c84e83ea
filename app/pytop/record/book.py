"""What a reader starting at a key frame needs to know, kept by the recorder's writer thread as
windows are written: the functions and stack nodes still live, the threads and processes, and the
session's clock. A reader learns them from the key instead of from every window before it, so a
recording can be read from any key frame: a seek into a long recording starts there, and a
recording whose oldest part was rotated away (--record-max-size) still reads whole.

It mirrors what a replay learns from windows it does not sum (core.intake.learn, the thread
book's reset at a range's start): a range that starts at or after a key shows, figure by figure,
what it shows when every window before it is read (tests/test_record_rotation.py holds them
against each other). Pure: no I/O."""

from __future__ import annotations

from typing import NamedTuple

from ..core.records import DRAIN_ALIVE, DRAIN_NATIVE, Drain, Function, Node, ProcessUpdate, ThreadUpdate

LATE_WINDOWS = 10  # an ended thread's last figures come within a drain or two: its name is kept this long


class SessionClock(NamedTuple):
    """The session's seconds as the live view counted them (its elapsed starts again at a view
    reset): what a replay measures a range's time by."""

    clock: float = 0.0  # the session's seconds at the last window's close
    offset: float = 0.0  # ... at the view's last reset
    elapsed_live: float = 0.0  # the last window's elapsed, as the live view said (since its reset)

    def after(self, elapsed: float, reset: bool) -> SessionClock:
        """The clock once a window closed whose live view said `elapsed` (reset: the view's
        figures were reset at its start)."""
        offset = self.clock if reset or elapsed < self.elapsed_live else self.offset
        return SessionClock(offset + elapsed, offset, elapsed)


def _without_figures(t: ThreadUpdate) -> ThreadUpdate:
    return t._replace(cpu_ns=0, wall_ns=0, wait_ns=0, samples=0, gil_samples=0, errors=0, last_error=0,
                      unplaced_ns=0)


class RecordedBook:
    def __init__(self) -> None:
        self.pids: dict[int, int] = {}  # the engine's process key -> its pid (as a replay keeps it)
        self.functions: dict[int, Function] = {}
        self.nodes: dict[int, Node] = {}
        self.threads: dict[int, ThreadUpdate] = {}  # merged: every id and name it was given
        self.clock = SessionClock()
        self.windows = 0  # windows learned
        self._ended_at: dict[int, int] = {}  # a thread seen ended -> the window it was seen so

    def learn(self, drains: tuple[Drain, ...], elapsed: float | None, reset: bool) -> None:
        """A window was written (elapsed: what its live view said; None for a window whose
        figures were lost: only what later windows refer to of it is in the file)."""
        for d in drains:
            for p in d.processes:
                self.pids.setdefault(p.process, p.pid)
            for function in d.retired:  # (in the order the stack book learns them)
                self.functions.pop(function, None)
            for f in d.functions:
                self.functions[f.function] = f
            for node in d.evicted:
                self.nodes.pop(node, None)
            for n in d.nodes:
                self.nodes[n.node] = n
            for u in d.threads:
                self._thread(u)
            for p in d.processes:
                if p.status:  # its process ended: so did its threads
                    for key, t in self.threads.items():
                        if t.process == p.process and t.alive:
                            self.threads[key] = t._replace(flags=t.flags & ~DRAIN_ALIVE)
                            self._ended_at.setdefault(key, self.windows)
        self.windows += 1
        if elapsed is not None:
            self.clock = self.clock.after(elapsed, reset)

    def _thread(self, u: ThreadUpdate) -> None:
        if not u.alive:
            self._ended_at.setdefault(u.thread, self.windows)
        t = self.threads.get(u.thread)
        if t is None:
            self.threads[u.thread] = _without_figures(u)
            return
        native = t.flags & DRAIN_NATIVE  # (a thread's row is native or not from its first update)
        thread_id, native_id = u.thread_id or t.thread_id, u.native_id or t.native_id
        flags, name, stack = (u.flags & ~DRAIN_NATIVE) | native, u.name or t.name, u.stack or t.stack
        if (thread_id, native_id, flags, name, stack, u.os_state) == (t.thread_id, t.native_id, t.flags, t.name,
                                                                        t.stack, t.os_state):
            return  # (most of a pool's 2,000 updates a window: a row made again for each was 1.6 us)
        self.threads[u.thread] = t._replace(thread_id=thread_id, native_id=native_id, flags=flags, name=name,
                                            stack=stack, os_state=u.os_state)

    def key_drain(self) -> Drain:
        """Everything a reader starting here needs, as one drain without time (nodes parents
        first, as a stack book learns them), then the threads that had ended are let go: a
        range that starts after this key drops them (a thread's row lives from its range's
        start). Those that ended in the last LATE_WINDOWS windows are still in it (a late
        update of one finds its name); older ones are not (a thread-per-request server's key
        said every thread since the key before: half of its bytes)."""
        processes = tuple(ProcessUpdate(process, pid, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, None)
                          for process, pid in self.pids.items())
        recent = self.windows - LATE_WINDOWS
        threads = tuple(t for key, t in self.threads.items() if t.alive or self._ended_at.get(key, recent) >= recent)
        nodes = tuple(sorted(self.nodes.values(), key=lambda n: (n.depth, n.node)))
        self.threads = {key: t for key, t in self.threads.items() if t.alive}
        self._ended_at = {}
        return Drain(processes=processes, threads=threads, functions=tuple(self.functions.values()), retired=(),
                     evicted=(), nodes=nodes, weights=(), function_rows=(), line_rows=(), ticks=0, late=0,
                     skipped=0, slot_seconds=0.0, first_at=0.0, last_at=0.0, lag=0.0, longest_delay=0.0,
                     cpu_seconds=0.0, start_up_cpu=0.0, rate_now=0.0, budget_limited=False, running=True,
                     realtime=False, stacks_dropped=0, stacks_coarsened=0, stack_nodes=len(nodes), end=None)
