"""Find a process's Python runtime: which file holds it, where _PyRuntime is, which version.

Candidates are, in order, a mapped libpython*.so, a mapped file named python*, then whatever
/proc/PID/exe is (which is ld-linux for a python started through an explicit loader, hence the
name-based candidates first). For each, _PyRuntime comes from the `.PyRuntime` section (3.11+
builds that have it) or the `_PyRuntime` symbol; the version from the `_Py_DebugOffsets` cookie
at the start of _PyRuntime (3.13+), the `Py_Version` symbol (3.11+), the file name, or the
PY_VERSION string in .rodata, in that order.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field

from .. import errors
from . import layouts
from .elf import ElfImage
from .memory import LiveProcess, MemorySource
from .procmaps import Mapping, basename, files_in_order

DEBUG_COOKIE = b"xdebugpy"
_NAME_VERSION = re.compile(r"python([23])\.(\d+)")


@dataclass(frozen=True)
class PythonVersion:
    major: int
    minor: int
    micro: int | None = None  # None when only the file name told the version
    releaselevel: int = 0xF  # as in PY_VERSION_HEX: 0xA alpha, 0xB beta, 0xC candidate, 0xF final
    serial: int = 0

    @classmethod
    def from_hex(cls, value: int) -> PythonVersion:
        return cls(value >> 24 & 0xFF, value >> 16 & 0xFF, value >> 8 & 0xFF, value >> 4 & 0xF, value & 0xF)

    @property
    def hex(self) -> int:
        return (self.major << 24 | self.minor << 16 | (self.micro or 0) << 8
                | self.releaselevel << 4 | self.serial)

    @property
    def minor_key(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __str__(self) -> str:
        if self.micro is None:
            return f"{self.major}.{self.minor}"
        text = f"{self.major}.{self.minor}.{self.micro}"
        if self.releaselevel in (0xA, 0xB, 0xC):
            text += {0xA: "a", 0xB: "b", 0xC: "rc"}[self.releaselevel] + str(self.serial)
        return text


@dataclass(frozen=True)
class Runtime:
    """Where the target's Python runtime lives."""

    binary: str  # the file as the target maps it that holds the runtime (in messages)
    runtime_address: int
    version: PythonVersion
    # 3.6, 2.7: no _PyRuntime; where its static variables are (layout field -> address), and the
    # runtime address is the lowest of them and of gil_waits's, so that each is an offset from
    # it as in a struct.
    statics: dict[str, int] = field(default_factory=dict)
    # 3.6, 2.7: where threads wait to take the GIL (layouts.gil_waits's symbols -> address),
    # when the build names them.
    gil_waits: dict[str, int] = field(default_factory=dict)


# 3.6's static variables that stand for _PyRuntime's fields (pystate.c, ceval_gil.h, gcmodule.c):
# local symbols, in .symtab only (a build stripped of it cannot be read).
STATICS_36 = {"rt_interpreters_head": "interp_head", "rt_gil_locked": "gil_locked",
              "rt_gil_holder": "gil_last_holder", "rt_gil_switches": "gil_switch_number",
              "rt_gc_collecting": "collecting"}
# 2.7's (pystate.c, gcmodule.c): its GIL is a plain lock that names no holder and counts no
# hand-overs; the current thread state, set only while a thread holds the lock, names it
# (rt_gil_locked stays -1: the unwinder takes a current thread state as a held GIL).
STATICS_27 = {"rt_interpreters_head": "interp_head", "rt_gil_holder": "_PyThreadState_Current",
              "rt_gc_collecting": "collecting"}
STATICS = {(3, 6): STATICS_36, (2, 7): STATICS_27}
GIL_WAITS = {(3, 6): layouts.GIL_WAITS_36, (2, 7): (layouts.GIL_LOCK_27,)}


def _candidates(source: MemorySource, by_file: dict[str, list[Mapping]]) -> list[str]:
    libs = [p for p in by_file if basename(p).startswith("libpython")]
    named = [p for p in by_file if basename(p).startswith("python") and p not in libs]
    exe = source.executable()
    rest = [exe] if exe in by_file and exe not in libs + named else []
    return libs + named + rest


def version_from_name(path: str) -> PythonVersion | None:
    match = _NAME_VERSION.search(basename(path))
    return PythonVersion(int(match.group(1)), int(match.group(2))) if match else None


def _find_in(source: MemorySource, path: str, mappings: list[Mapping]) -> Runtime | None:
    try:
        image = ElfImage.open(source.open_file(mappings[0]))
    except (OSError, ValueError):
        return None
    try:
        bias = image.load_bias(mappings)
        if bias is None:
            return None
        symbols = {k: v + bias for k, v in image.symbols(("_PyRuntime", "Py_Version")).items()}
        runtime = symbols.get("_PyRuntime")
        if ".PyRuntime" in image.sections and image.sections[".PyRuntime"]:
            runtime = image.sections[".PyRuntime"] + bias
        if runtime is None:
            runtime = _scan_for_cookie(source, mappings)
        if runtime is None:
            return _runtime_from_statics(path, image, bias)
        return Runtime(path, runtime, _version(source, runtime, symbols, path, image))
    finally:
        image.close()


def _runtime_from_statics(path: str, image: ElfImage, bias: int) -> Runtime | None:
    """CPython 3.6 or 2.7, from its static variables' symbols (None: another file, or no symbols)."""
    named = version_from_name(path)
    wanted = STATICS.get(named.minor_key) if named else None
    if named is None or wanted is None:
        return None
    found = image.symbols(tuple(wanted.values()))
    if len(found) < len(wanted):
        return None
    statics = {field_name: found[symbol] + bias for field_name, symbol in wanted.items()}
    micro = image.version_string(named.minor, named.major)
    version = PythonVersion(named.major, named.minor, micro[1]) if micro else named
    waits = {symbol: address + bias for symbol, address in image.symbols(GIL_WAITS[named.minor_key]).items()}
    return Runtime(path, min([*statics.values(), *waits.values()]), version, statics, waits)


def _scan_for_cookie(source: MemorySource, mappings: list[Mapping]) -> int | None:
    """3.13+ without symbols or section: _PyRuntime starts with the debug cookie."""
    for m in mappings:
        if "w" not in m.perms or m.end - m.start > 64 << 20:
            continue
        try:
            data = source.read(m.start, m.end - m.start)
        except OSError:
            continue
        at = data.find(DEBUG_COOKIE)
        while at >= 0:
            if at % 8 == 0:
                return m.start + at
            at = data.find(DEBUG_COOKIE, at + 1)
    return None


def _version(source: MemorySource, runtime: int, symbols: dict[str, int], path: str,
             image: ElfImage) -> PythonVersion:
    head = source.read(runtime, 16)
    if head[:8] == DEBUG_COOKIE:
        return PythonVersion.from_hex(struct.unpack_from("<Q", head, 8)[0])
    if "Py_Version" in symbols:
        (value,) = struct.unpack("<I", source.read(symbols["Py_Version"], 4))
        return PythonVersion.from_hex(value)
    named = version_from_name(path)
    found = image.version_string(named.minor if named else None)
    if found:
        return PythonVersion(3, found[0], found[1])
    if named:
        return named
    raise errors.AttachFailed(f"found a Python runtime in {path} but could not tell its version")


def _exited(pid: int) -> bool:
    """Gone, or a zombie: exited, not yet reaped by its parent."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


_OLD_NAME = re.compile(r"^(?:lib)?python(2\.\d+|3\.[0-6])(?![0-9])")


def _older_python(source: MemorySource) -> str | None:
    """The version of a Python too old to have a _PyRuntime (2.x, 3.6 and before), from the name
    of its executable or library, if one says it."""
    for path in files_in_order(source.mappings()):
        match = _OLD_NAME.match(basename(path))
        if match:
            return match.group(1)
    return None


def _old_runtime_not_loaded(source: MemorySource, older: str) -> bool:
    """Whether a 3.6 or 2.7 process has not mapped its runtime (whole) yet, as a program just
    started has not, rather than being a build stripped of its symbols: no file that holds the
    interpreter (a libpython, or an executable that defines Py_Initialize) is mapped, or the one
    that is has the statics' symbols."""
    statics = STATICS[(int(older[0]), int(older[2:]))]
    files = files_in_order(source.mappings())
    exe = source.executable()
    holder_seen = False
    for path, mappings in files.items():
        if not basename(path).startswith("libpython") and path != exe:
            continue
        try:
            image = ElfImage.open(source.open_file(mappings[0]))
        except (OSError, ValueError):
            continue
        try:
            if len(image.symbols(tuple(statics.values()))) == len(statics):
                return True  # the symbols are there: its mappings are not all in place yet
            holds = basename(path).startswith("libpython") or bool(image.symbols(("Py_Initialize",)))
            holder_seen = holder_seen or holds
        finally:
            image.close()
    return not holder_seen


def find_runtime(source: MemorySource, mappings: list[Mapping] | None = None) -> Runtime | None:
    """The Python runtime in `source`'s files (its `mappings` if read already), or None. OSErrors
    other than a missing or unreadable file of one candidate (the process gone, permission)
    come out as they are."""
    for path in _candidates(source, files := files_in_order(source.mappings() if mappings is None else mappings)):
        try:
            found = _find_in(source, path, files[path])
        except (PermissionError, ProcessLookupError):
            raise
        except OSError:
            continue
        if found:
            return found
    return None


def locate_runtime(pid: int) -> Runtime:
    """Find the Python runtime of process `pid`, or raise a PytopError saying why not."""
    if not os.path.exists(f"/proc/{pid}"):
        raise errors.NoSuchProcess(f"no process with pid {pid}")
    if _exited(pid):
        raise errors.TargetExited(f"process {pid} has exited")
    source = LiveProcess(pid)
    try:
        # Read once for the search as well: a process of 2,000 threads maps 6,000 regions (~25 ms).
        mappings = source.mappings()
    except PermissionError:
        raise errors.permission_denied(pid, "reading the memory maps of") from None
    except (FileNotFoundError, ProcessLookupError):
        raise errors.NoSuchProcess(f"no process with pid {pid} (it has exited)") from None
    try:
        found = find_runtime(source, mappings)
    except PermissionError:
        raise errors.permission_denied(pid, "reading the memory of") from None
    except (ProcessLookupError, FileNotFoundError):
        raise errors.TargetExited(f"process {pid} exited while pytop was attaching") from None
    if found:
        return found
    if _exited(pid):
        raise errors.TargetExited(f"process {pid} exited while pytop was attaching")
    older = _older_python(source)
    if older in ("3.6", "2.7") and _old_runtime_not_loaded(source, older):
        # (pytop -- python2.7 ...: the executable is mapped, its libpython not yet; tried again)
        raise errors.AttachFailed(f"process {pid} runs Python {older}, whose runtime is not loaded yet")
    if older in ("3.6", "2.7"):
        raise errors.UnsupportedVersion(
            f"process {pid} runs Python {older} from a build stripped of its symbol table: pytop finds a {older} "
            "interpreter's threads and GIL by the symbols of its static variables (interp_head, "
            f"{'gil_locked' if older == '3.6' else 'collecting'}, ...), which only .symtab has (install the "
            "build's debug symbols, or use an unstripped build)")
    if older:
        from .layouts import supported_range

        raise errors.UnsupportedVersion(f"process {pid} runs Python {older}, which pytop does not read yet: it "
                                        f"reads CPython {supported_range()}")
    raise errors.NotPython(f"process {pid} does not look like a Python process "
                           "(no Python runtime found in its executable or libraries)")
