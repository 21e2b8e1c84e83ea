"""`pytop PID`: the live view, wired to a sampler on a real target."""

from __future__ import annotations

import json
import sys

import psutil

from . import priority
from .attach import Target, attach
from .model import TargetInfo
from .sampler import Sampler, Settings
from .threadnames import ThreadNames
from .unwinder import Unwinder


def info_of(target: Target) -> TargetInfo:
    try:
        cwd = psutil.Process(target.pid).cwd()
    except (psutil.Error, OSError):
        cwd = None
    return TargetInfo(target.pid, target.cmdline, str(target.version), cwd)


def attach_child(pid: int) -> tuple[Unwinder, ThreadNames]:
    """How --subprocesses starts watching a new descendant."""
    target = attach(pid)
    return target.unwinder, target.names


def notes_for(settings: Settings, child_log: str | None) -> tuple[str, ...]:
    notes = []
    if settings.idle:
        notes.append("[idle threads included]")
    if settings.gil_only:
        notes.append("[GIL holder only]")
    if child_log:
        notes.append(f"[its output: {child_log}]")
    return tuple(notes)


def run_live(target: Target, settings: Settings, *, sort: str, full_filenames: bool,
             child_log: str | None = None, stats_file: str | None = None, follow_children: bool = False) -> int:
    from .ui.app import PytopApp

    # The sampler thread shares this process's GIL with the UI: a short switch interval lets it
    # take the GIL within half a millisecond of waking, however busy the UI is redrawing.
    sys.setswitchinterval(0.0005)
    if settings.realtime:
        priority.raise_process()
    sampler = Sampler(target.unwinder, info_of(target), settings, target.names,
                      attach_child if follow_children else None)
    app = PytopApp(sampler, sort=sort, by_line=settings.by_line, full_filenames=full_filenames,
                   notes=notes_for(settings, child_log), handle_signals=True)
    try:
        app.run()
    finally:
        sampler.stop()
        target.close()
        if stats_file:
            with open(stats_file, "w") as f:
                json.dump(sampler.statistics(), f, indent=1)
    return 0
