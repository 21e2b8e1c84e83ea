"""The host's Python processes as a report (`pytop --batch --all`): a table as text, or JSON."""

from __future__ import annotations

import json
from typing import Any

from ..core.model import PythonProcess
from ..core.pools import HostRow, fold
from . import format as fmt

HEADER = f"{'PID':>8}  {'USER':<10} {'PYTHON':<7} {'CPU%':>7} {'THREADS':>7} {'RSS':>10}  COMMAND"


def _row(p: PythonProcess) -> str:
    return (f"{p.pid:>8}  {p.user[:10]:<10} {p.version or '?':<7} {fmt.percent(p.cpu_pct):>7} {p.threads:>7} "
            f"{fmt.byte_size(p.rss):>10}  {p.described}")


def _pool_line(r: HostRow) -> str:
    return (f"{r.root:>8}  {fmt.percent(r.cpu_pct):>7} {r.threads:>7} {fmt.byte_size(r.rss):>10}  "
            f"{r.described} (pids {', '.join(str(m.pid) for m in r.members)})")


def as_text(processes: list[PythonProcess], seconds: float) -> str:
    busy = sum(p.cpu_pct for p in processes)
    lines = [f"{len(processes)} Python process{'' if len(processes) == 1 else 'es'}, "
             f"{fmt.percent(busy)} of a core between them over {fmt.seconds(seconds)} (the kernel's count)",
             HEADER, *map(_row, processes)]
    pools = [r for r in fold(processes) if r.pool]
    if pools:  # (pytop -s ROOT watches a pool whole)
        lines += ["", f"Pools: {len(pools)}", f"{'ROOT':>8}  {'CPU%':>7} {'THREADS':>7} {'RSS':>10}  WHAT",
                  *map(_pool_line, pools)]
    return "\n".join(lines) + "\n"


def _record(p: PythonProcess) -> dict[str, Any]:
    return {"pid": p.pid, "user": p.user, "python_version": p.version or None, "cpu_pct": round(p.cpu_pct, 3),
            "threads": p.threads, "rss": p.rss, "command": p.command, "pid_in_namespace": p.pid_inside,
            "problem": p.problem, "parent": p.parent}


def as_json(processes: list[PythonProcess], seconds: float) -> str:
    pools = [{"root": r.root, "pids": [m.pid for m in r.members], "cpu_pct": round(r.cpu_pct, 3),
              "threads": r.threads, "rss": r.rss, "busy": r.busy, "command": r.leader.command}
             for r in fold(processes) if r.pool]
    document = {"duration": round(seconds, 6), "processes": [_record(p) for p in processes], "pools": pools}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
