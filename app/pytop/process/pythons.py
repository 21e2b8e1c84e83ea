"""The machine's Python processes, as `top` sees processes: for the table that `pytop` without a
PID opens, and for `pytop --batch --all`.

Everything here is read from /proc, and cheaply enough to be read again every second on a host
of thousands of processes: each look reads one `stat` file a process (its CPU count, threads,
memory). Whether a process is Python is judged once per program (by its name, else by a
libpython or a python* file in its maps: embedded interpreters, one started through ld.so), not
at every look: py-spy's picker probed every process each time, "dozens of seconds" of CPU on a
busy host (its issue #561).
"""

from __future__ import annotations

import os
import pwd
import re
import time
from dataclasses import dataclass

from .. import errors
from ..core.model import PythonProcess
from ..core.visible import visible, visible_command
from .layouts import SUPPORTED, supported_range
from .locate import version_from_name
from .memory import own_number

_PYTHON_NAME = re.compile(r"^python\d*(\.\d+)?[a-z]*$")
_LIBPYTHON = re.compile(r"libpython(\d+\.\d+)")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_KERNEL_THREAD = 0x00200000  # PF_KTHREAD, in stat's flags


@dataclass(frozen=True)
class _Stat:
    """What one read of /proc/PID/stat says."""

    name: str
    state: str
    parent: int
    flags: int
    cpu_ticks: int
    threads: int
    started: int  # clock ticks after boot: with the pid, names one process whatever reuses the pid
    rss: int


@dataclass(frozen=True)
class _Program:
    """What is judged once per program (a pid, its start, its name: an exec changes the name)."""

    python: bool
    user: str
    command: str
    version: str
    pid_inside: int | None
    problem: str | None


def _read_stat(pid: int) -> _Stat | None:
    try:  # (os.open, not open(): a file object costs three times the read, on every process)
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:  # ended since the listing, or hidden (hidepid)
        return None
    # The name is in parentheses and may hold anything, parentheses and spaces too: the fields
    # come after the last ")".
    close = raw.rfind(b")")
    fields = raw[close + 2:].split()
    if close < 0 or len(fields) < 22:
        return None
    try:
        return _Stat(name=raw[raw.find(b"(") + 1:close].decode("utf-8", "replace"), state=fields[0].decode(),
                     parent=int(fields[1]), flags=int(fields[6]), cpu_ticks=int(fields[11]) + int(fields[12]),
                     threads=int(fields[17]), started=int(fields[19]), rss=int(fields[21]) * _PAGE)
    except (ValueError, UnicodeDecodeError):
        return None


def _user(pid: int) -> str:
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return "?"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _mapped_python(maps: str) -> str | None:
    """The version of a libpython, or of a program named python*, in a process's maps ("" if
    their names do not say it); None if none is mapped."""
    found = _LIBPYTHON.search(maps)
    if found:
        return found.group(1)
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        path = fields[5] if len(fields) == 6 else ""
        if path.startswith("/") and _PYTHON_NAME.match(os.path.basename(path)):
            named = version_from_name(path)
            return str(named) if named is not None else ""
    return None


def _read_maps(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


def _judge(pid: int, name: str, maps_left: list[int] | None = None) -> _Program | None:
    """Whether process `pid` (named `name` by the kernel) runs Python, and what it is. maps_left:
    how many maps files may still be read ([n], counted down; None: any); None if only its maps
    would say and none may be (a maps file costs half a millisecond: a first look at ten thousand
    processes spreads them over several looks)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        argv = []
    denied = False
    try:
        program = os.path.realpath(f"/proc/{pid}/exe", strict=True)
    except OSError as exc:
        program = ""
        denied = isinstance(exc, PermissionError)
    names = [name, os.path.basename(argv[0]) if argv else "", os.path.basename(program)]
    python = any(_PYTHON_NAME.match(n) for n in names)
    version = next((str(v) for v in map(version_from_name, names) if v is not None), "")
    if not python and maps_left is not None:
        if maps_left[0] <= 0:
            return None
        maps_left[0] -= 1
    if not python or not version:  # an embedded interpreter, one started by ld.so; or a version untold
        try:
            mapped = _mapped_python(_read_maps(pid))
            if mapped is not None:
                python, version = True, version or mapped
        except PermissionError:
            denied = True
        except OSError:
            pass
    inside = own_number(pid, pid)
    command = " ".join(argv) or f"[{name}]"
    problem = (_unsupported(version) or errors.refusal_expected(pid, denied)) if python else None
    return _Program(python, visible(_user(pid)), visible_command(command), version,
                    inside if inside != pid else None, problem)


def _unsupported(version: str) -> str | None:
    """Why pytop cannot read a Python of this version ("": unknown), if it cannot."""
    major, _, minor = version.partition(".")
    if not (major.isdigit() and minor.isdigit()) or (int(major), int(minor)) in SUPPORTED:
        return None
    return f"Python {version} is not supported: pytop reads CPython {supported_range()}"


def is_python(pid: int) -> bool:
    """Whether process `pid` runs Python (by its name, else a libpython in its maps)."""
    stat = _read_stat(pid)
    program = _judge(pid, stat.name) if stat is not None else None
    return program is not None and program.python


# A look judges at most this many processes by their maps (the ones whose names do not say
# Python): ~0.5 ms each, so a first look at 10,000 processes would take 5 s before any row.
MAPS_PER_LOOK = 150
# On a host of more processes than this, one that is not Python has its stat read again only
# every RECHECK_EVERY looks (in turn): reading every one is ~40 us a process, 0.4 s a look at
# 10,000. (A process that execs Python shows within that many looks.)
RECHECK_FROM = 2000
RECHECK_EVERY = 4


class PythonScan:
    """Looks at the machine's processes again and again; each look gives its Python processes,
    with the CPU share each used since the previous look."""

    def __init__(self) -> None:
        self._programs: dict[tuple[int, int, str], _Program] = {}
        self._ticks: dict[tuple[int, int], int] = {}  # (pid, start): CPU ticks at the last look
        # Kernel threads, by pid and /proc entry (a new process under an old pid has a new entry):
        # never Python, so not read again (hundreds of them on a big host).
        self._kernel: set[tuple[int, int]] = set()
        # Processes judged not Python, by pid and /proc entry: their program's key (for a host
        # large enough that they are read again only in turn).
        self._others: dict[tuple[int, int], tuple[int, int, str]] = {}
        self._looked_at = 0.0
        self._looks = 0
        self.unjudged = 0  # processes the last look left to judge later (their maps not read yet)
        self.seconds = 0.0  # what the last look's CPU shares are over (0: its first)

    def look(self, exclude: set[int] | None = None, maps: int | None = MAPS_PER_LOOK) -> list[PythonProcess]:
        """Python processes this user can see, busiest first (at the first look, none is busier).
        maps: how many processes whose names do not say Python may be judged by their maps this
        look (None: all; the others wait for a later look, counted in `unjudged`)."""
        skip = {os.getpid(), *(exclude or set())}
        now = time.monotonic()
        seconds = now - self._looked_at if self._looked_at else 0.0
        self._looked_at = now
        self.seconds = seconds
        programs: dict[tuple[int, int, str], _Program] = {}
        ticks: dict[tuple[int, int], int] = {}
        kernel: set[tuple[int, int]] = set()
        others: dict[tuple[int, int], tuple[int, int, str]] = {}
        found = []
        self._looks += 1
        entries = [e for e in os.scandir("/proc") if e.name.isdigit() and int(e.name) not in skip]
        maps_left, unjudged = [maps if maps is not None else len(entries)], 0
        in_turn = len(entries) > RECHECK_FROM
        for entry in entries:
            pid = int(entry.name)
            entry_id = (pid, entry.inode())
            if entry_id in self._kernel:
                kernel.add(entry_id)
                continue
            known_other = self._others.get(entry_id)
            if in_turn and known_other is not None and (pid + self._looks) % RECHECK_EVERY:
                others[entry_id] = known_other  # not Python when last read; read again in its turn
                programs[known_other] = self._programs[known_other]
                continue
            stat = _read_stat(pid)
            if stat is not None and stat.flags & _KERNEL_THREAD:
                kernel.add(entry_id)
            if stat is None or stat.flags & _KERNEL_THREAD or stat.state in ("Z", "X"):
                continue  # gone, a kernel thread, a zombie: no Python runs there now
            key = (pid, stat.started, stat.name)
            program = self._programs.get(key)
            if program is None:
                # (once no maps may be read, only a name that says Python is judged this look:
                # reading the others' command lines again would cost what their maps would)
                could = maps_left[0] > 0 or _PYTHON_NAME.match(stat.name)
                program = _judge(pid, stat.name, maps_left) if could else None
                if program is None:
                    unjudged += 1
                    continue
            programs[key] = program
            if not program.python:
                others[entry_id] = key
                continue
            before = self._ticks.get((pid, stat.started))
            ticks[(pid, stat.started)] = stat.cpu_ticks
            used = (stat.cpu_ticks - before) / _CLOCK_TICKS if before is not None else 0.0
            found.append(PythonProcess(pid, program.user, program.command,
                                       100.0 * used / seconds if seconds > 0 else 0.0, program.version,
                                       stat.threads, stat.rss, program.pid_inside, program.problem, stat.parent))
        self._programs, self._ticks, self._kernel = programs, ticks, kernel  # what ended is forgotten
        self._others, self.unjudged = others, unjudged
        return sorted(found, key=lambda p: (-p.cpu_pct, p.pid))


_SCAN = PythonScan()


def python_processes(exclude: set[int] | None = None) -> list[PythonProcess]:
    """Python processes this user can see, busiest first. CPU shares are since the previous
    call."""
    return _SCAN.look(exclude)
