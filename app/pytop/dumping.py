"""--dump: every thread's stack once, from a running process (and its Python descendants) or
from a core file, as text or JSON."""

from __future__ import annotations

import psutil

from . import errors
from .core.records import ProcessStacks
from .delivery import write_report
from .process.attach import attach, attach_core
from .process.stacks import read_stacks
from .report import dump as report_dump


def dump(pid: int | None, as_json: bool, blocking: bool = False, core: str | None = None,
         executable: str | None = None, sysroot: str | None = None, tasks: bool = False,
         subprocesses: bool = False, with_locals: bool = False, native: bool = False) -> int:
    """Every thread's stack once, from process `pid` or from a core file; with `tasks`, every
    asyncio task too; with `with_locals`, each frame's arguments and locals; with `subprocesses`,
    the same of each Python descendant of `pid` (each once, the target's first; a target that is
    not Python is passed over when it has some)."""
    if core or not subprocesses:
        stacks = [read_stacks(attach_core(core, executable, sysroot) if core else attach(pid or 0),
                       f"core file {core}" if core else f"process {pid}", blocking, tasks, with_locals, native)]
    else:
        stacks = _dump_family(pid or 0, blocking, tasks, with_locals, native)
    if len(stacks) == 1 and not subprocesses:
        text = report_dump.as_json(stacks[0]) if as_json else report_dump.as_text(stacks[0])
    else:
        text = report_dump.as_json_of_processes(stacks) if as_json else "\n".join(map(report_dump.as_text, stacks))
    write_report((text if text.endswith("\n") else text + "\n").encode())
    return 0


def _dump_family(pid: int, blocking: bool, tasks: bool, with_locals: bool, native: bool) -> list[ProcessStacks]:
    """The target's stacks and its Python descendants', in the order they were started."""
    try:
        descendants = sorted(psutil.Process(pid).children(recursive=True), key=lambda p: (p.create_time(), p.pid))
    except psutil.NoSuchProcess:
        raise errors.NoSuchProcess(f"no process with pid {pid}") from None
    except psutil.Error:
        descendants = []
    found: list[ProcessStacks] = []
    refusal: errors.PytopError | None = None
    for number in [pid, *(child.pid for child in descendants)]:
        try:
            found.append(read_stacks(attach(number), f"process {number}", blocking, tasks, with_locals, native))
        except (errors.NotPython, errors.UnsupportedVersion) as exc:
            if number == pid:
                refusal = exc  # a shell, a supervisor: its Python children are what is asked for
        except (errors.TargetExited, errors.NoSuchProcess):
            if number == pid:
                raise
            # a child that ended meanwhile: nothing to show of it
    if not found:
        raise refusal or errors.NotPython(f"process {pid} is not Python and has no Python descendant")
    return found
