"""The host's Python processes as a report (`pytop --batch --all`): a table as text, or JSON."""

from __future__ import annotations

import json
from typing import Any

from ..core.model import Heat, PythonProcess
from ..core.pools import HostRow, fold, merged_heat
from ..core.visible import visible
from . import format as fmt

HOTTEST_WIDTH = 30
POOL_HEADER = (f"{'ROOT':>8}  {'CPU%':>7} {'GIL%':>5} {'THREADS':>7} {'RSS':>10}  {'HOTTEST':<{HOTTEST_WIDTH}}  "
               "WHAT")
HEADER = (f"{'PID':>8}  {'USER':<10} {'PYTHON':<7} {'CPU%':>7} {'GIL%':>5} {'THREADS':>7} {'RSS':>10}  "
          f"{'HOTTEST':<{HOTTEST_WIDTH}}  COMMAND")


def gil(heat: Heat | None) -> str:
    return "" if heat is None or heat.gil_pct is None else f"{heat.gil_pct:.0f}%"


def hottest(heat: Heat | None) -> str:
    """`spin 97%`: the function with the most of the CPU, and its share; '' if not sampled."""
    top = heat.hottest if heat is not None else None
    if top is None:
        return "idle" if heat is not None and heat.samples else ""
    name = visible(top[0])
    if len(name) > HOTTEST_WIDTH - 5:
        name = name[:HOTTEST_WIDTH - 6] + "…"
    return f"{name} {100 * top[2]:.0f}%"


def _row(p: PythonProcess, heats: dict[int, Heat]) -> str:
    heat = heats.get(p.pid)
    return (f"{p.pid:>8}  {p.user[:10]:<10} {p.version or '?':<7} {fmt.percent(p.cpu_pct):>7} {gil(heat):>5} "
            f"{p.threads:>7} {fmt.byte_size(p.rss):>10}  {hottest(heat):<{HOTTEST_WIDTH}}  {p.described}")


def _pool_line(r: HostRow, heats: dict[int, Heat]) -> str:
    heat = merged_heat([m.pid for m in r.members], heats)
    return (f"{r.root:>8}  {fmt.percent(r.cpu_pct):>7} {gil(heat):>5} {r.threads:>7} {fmt.byte_size(r.rss):>10}  "
            f"{hottest(heat):<{HOTTEST_WIDTH}}  {r.described} (pids {', '.join(str(m.pid) for m in r.members)})")


def as_text(processes: list[PythonProcess], seconds: float, heats: dict[int, Heat] | None = None) -> str:
    """heats: what the busiest processes' samples said (their GIL share, their hottest function)."""
    heats = heats or {}
    busy = sum(p.cpu_pct for p in processes)
    lines = [f"{len(processes)} Python process{'' if len(processes) == 1 else 'es'}, "
             f"{fmt.percent(busy)} of a core between them over {fmt.seconds(seconds)} (the kernel's count)",
             HEADER, *(_row(p, heats) for p in processes)]
    pools = [r for r in fold(processes) if r.pool]
    if pools:  # (pytop -s ROOT watches a pool whole)
        lines += ["", f"Pools: {len(pools)}",
                  POOL_HEADER,
                  *(_pool_line(r, heats) for r in pools)]
    return "\n".join(lines) + "\n"


def heat_record(heat: Heat | None) -> dict[str, Any]:
    """The sampled figures: null where the process was not sampled."""
    if heat is None:
        return {"gil_pct": None, "sampled_cpu_time": None, "hottest": None}
    return {"gil_pct": None if heat.gil_pct is None else round(heat.gil_pct, 3),
            "sampled_cpu_time": round(heat.cpu_seconds, 6),
            "hottest": [{"function": f, "filename": filename, "cpu_time": round(seconds, 6)}
                        for f, filename, seconds in heat.functions]}


def _record(p: PythonProcess, heats: dict[int, Heat]) -> dict[str, Any]:
    return {"pid": p.pid, "user": p.user, "python_version": p.version or None, "cpu_pct": round(p.cpu_pct, 3),
            "threads": p.threads, "rss": p.rss, "command": p.command, "pid_in_namespace": p.pid_inside,
            "problem": p.problem, "parent": p.parent, **heat_record(heats.get(p.pid))}


def as_json(processes: list[PythonProcess], seconds: float, heats: dict[int, Heat] | None = None) -> str:
    heats = heats or {}
    pools = [{"root": r.root, "pids": [m.pid for m in r.members], "cpu_pct": round(r.cpu_pct, 3),
              "threads": r.threads, "rss": r.rss, "busy": r.busy, "command": r.leader.command,
              **heat_record(merged_heat([m.pid for m in r.members], heats))}
             for r in fold(processes) if r.pool]
    document = {"duration": round(seconds, 6), "processes": [_record(p, heats) for p in processes], "pools": pools}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
