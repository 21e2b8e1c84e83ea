"""The host's Python processes folded into pools, as the host's table shows them. Pure.

A pool is what a server's operator thinks of as one program: the workers of a Python parent
(gunicorn's and uvicorn's masters, celery, a multiprocessing pool), with the parent itself; or
processes of one command line started by one other parent (a shell, a supervisor). A worker is
a child of the same command line (a fork) or one of multiprocessing's own (spawn's, forkserver's
and the resource tracker's `-c "from multiprocessing.X import ..."`): a Python parent's other
children (what pytest or supervisord start) are programs of their own.
Its row sums their CPU, threads and memory and counts the busy ones; `pytop -s ROOT` watches
them all at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Heat, PythonProcess

BUSY_PCT = 5.0  # a member using this much of a core counts as busy
SAMPLED = 8  # the busiest processes whose stacks the host's table samples (their hottest function, GIL)
SAMPLED_FROM_PCT = 1.0  # ... of those using at least this much of a core
MAX_ANCESTORS = 32  # how far up a family is followed (a loop in the parents is data too)
_MULTIPROCESSING = re.compile(r"from multiprocessing\.\w+ import")


@dataclass(frozen=True)
class HostRow:
    """A row of the host's table: one process, or a pool (its members, the first the leader)."""

    root: int  # the pid to watch: the process; a pool's Python parent, or the parent of its members
    members: tuple[PythonProcess, ...]

    @property
    def pool(self) -> bool:
        return len(self.members) > 1

    @property
    def leader(self) -> PythonProcess:
        return self.members[0]

    @property
    def cpu_pct(self) -> float:
        return sum(p.cpu_pct for p in self.members)

    @property
    def threads(self) -> int:
        return sum(p.threads for p in self.members)

    @property
    def rss(self) -> int:
        return sum(p.rss for p in self.members)

    @property
    def busy(self) -> int:
        return sum(p.cpu_pct >= BUSY_PCT for p in self.members)

    @property
    def described(self) -> str:
        if not self.pool:
            return self.leader.described
        return f"[pool of {len(self.members)}, {self.busy} busy] {self.leader.described}"


def _worker_of(child: PythonProcess, parent: PythonProcess) -> bool:
    return child.command == parent.command or bool(_MULTIPROCESSING.search(child.command))


def fold(processes: list[PythonProcess]) -> list[HostRow]:
    """Pools and lone processes, busiest first. A worker joins its parent's pool (and so its
    parent's parent's, while each is a worker of the next); processes of one command line under
    one other parent make a pool of their own (rooted at that parent)."""
    by_pid = {p.pid: p for p in processes}
    families: dict[int, list[PythonProcess]] = {}
    for p in processes:
        top = p
        for _ in range(MAX_ANCESTORS):
            parent = by_pid.get(top.parent)
            if parent is None or parent.pid == p.pid or not _worker_of(top, parent):
                break
            top = parent
        families.setdefault(top.pid, []).append(p)
    rows: list[HostRow] = []
    alone: dict[tuple[int, str], list[PythonProcess]] = {}
    for root, members in families.items():
        if len(members) > 1:  # the top ancestor first, then its descendants by pid
            members.sort(key=lambda m: (m.pid != root, m.pid))
            rows.append(HostRow(root, tuple(members)))
        else:
            alone.setdefault((members[0].parent, members[0].command), []).append(members[0])
    for (started_by, _), same in alone.items():
        same.sort(key=lambda m: m.pid)
        shared = len(same) > 1 and started_by > 1  # (1: init adopts every orphan; 0: none known)
        rows.extend([HostRow(started_by, tuple(same))] if shared else [HostRow(m.pid, (m,)) for m in same])
    return sorted(rows, key=lambda r: (-r.cpu_pct, r.root))


def merged_heat(pids: list[int], heats: dict[int, Heat], keep: int = 5) -> Heat | None:
    """The heat of several processes (a pool): their functions' CPU summed across them (a
    function is its name and file: the same code in every worker), the GIL's share of all their
    samples (each process has its own GIL). None if none of them was sampled."""
    known = [heats[pid] for pid in pids if pid in heats]
    return merge_heats(known, keep) if known else None


def merge_heats(heats: list[Heat], keep: int = 5) -> Heat:
    """Several heats as one (of a pool's processes, or of one process's looks over a time): each
    function's CPU summed, the hottest `keep` kept; the samples and the CPU summed."""
    if len(heats) == 1:
        return heats[0]
    summed: dict[tuple[str, str], float] = {}
    for heat in heats:
        for function, filename, seconds in heat.functions:
            summed[(function, filename)] = summed.get((function, filename), 0.0) + seconds
    hottest = sorted(summed.items(), key=lambda item: (-item[1], item[0]))[:keep]
    return Heat(tuple((function, filename, seconds) for (function, filename), seconds in hottest),
                sum(h.cpu_seconds for h in heats), sum(h.samples for h in heats), sum(h.gil_samples for h in heats))


def busiest(processes: list[PythonProcess], count: int = SAMPLED) -> list[int]:
    """The pids whose stacks the host's table samples: the busiest that pytop can read."""
    readable = [p for p in processes if p.problem is None and p.cpu_pct >= SAMPLED_FROM_PCT]
    return [p.pid for p in sorted(readable, key=lambda p: (-p.cpu_pct, p.pid))[:count]]
