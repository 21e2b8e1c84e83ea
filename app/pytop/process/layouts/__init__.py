"""The struct layout pytop's unwinder needs for one CPython version.

Offsets come from generated.py (made by tools/gen_layouts.py from each version's headers). For
3.13+ the target publishes its own offsets in `_Py_DebugOffsets` at the start of _PyRuntime;
those win over the table wherever the target has them, so a patch release that moved a field
is still read right.
"""

from __future__ import annotations

import platform
import struct

from ... import errors
from .generated import DEBUG_OFFSETS, LAYOUTS

SUPPORTED = tuple(sorted(LAYOUTS))
# asyncio's TaskObj is private to Modules/_asynciomodule.c (no header has it). These are its
# offsets as 3.14 and 3.15 publish them in their `.AsyncioDebug` section (the same in both,
# read off Debian's 3.14.10 and 3.15.2); tests/test_asyncio.py holds them to a live target's
# own section. The rest of what --async reads comes from the headers (generated.py).
ASYNCIO_TASK = {
    version: {"task_awaited_by": 96, "task_is_task": 108, "task_awaited_by_is_set": 109, "task_coro": 128,
              "task_name": 136, "task_node": 152}
    for version in ((3, 14), (3, 15))
}
# Where a suspended coroutine keeps the object it awaits: the top of its value stack in 3.14,
# one below in 3.15 (whose SEND leaves a null on top): _PyGen_yf's _PyFrame_StackPeek.
AWAITED_DEPTH = {(3, 14): 1, (3, 15): 2}
# glibc's pthread_cond_t, pthread_mutex_t and sem_t, in bytes, by machine (the target's: pytop
# reads processes of its own kind): the GIL's condition variables, mutexes and 2.7's lock.
GLIBC_SIZES = {"x86_64": (48, 40, 32), "aarch64": (48, 48, 32)}
FRAMES_OBJECTS, FRAMES_INTERPRETER = 1, 2
LINES_LNOTAB, LINES_310, LINES_LOCATIONS, LINES_LNOTAB_27 = 1, 2, 3, 4


def supported_range() -> str:
    """The versions read, e.g. "2.7 and 3.6 to 3.15" (a major version's minors are a run)."""
    runs = []
    for major in sorted({v[0] for v in SUPPORTED}):
        minors = [v for v in SUPPORTED if v[0] == major]
        first, last = minors[0], minors[-1]
        runs.append(f"{first[0]}.{first[1]}" if first == last else f"{first[0]}.{first[1]} to {last[0]}.{last[1]}")
    return " and ".join(runs)


def _model(version: tuple[int, int]) -> dict[str, int]:
    if version < (3, 0):  # 2.7: its lnotab's line increments are unsigned
        return {"frame_model": FRAMES_OBJECTS, "line_table": LINES_LNOTAB_27, "lasti_scale": 1}
    if version <= (3, 9):
        return {"frame_model": FRAMES_OBJECTS, "line_table": LINES_LNOTAB, "lasti_scale": 1}
    if version == (3, 10):
        return {"frame_model": FRAMES_OBJECTS, "line_table": LINES_310, "lasti_scale": 2}
    return {"frame_model": FRAMES_INTERPRETER, "line_table": LINES_LOCATIONS, "lasti_scale": 2}


def gil_waits(version: tuple[int, int], layout: dict[str, int], statics: dict[str, int] | None = None,
              machine: str | None = None) -> dict[str, int]:
    """Where threads block in the kernel to take the GIL (kthreads.c reads the word a thread
    waits on): 3.7+ the GIL's two condition variables and two mutexes, after its count of
    hand-overs; 3.6 the same as static variables, from the lowest to the highest (`statics`:
    their offsets, as build_layout makes them); 2.7 its lock, through the pointer at
    rt_gil_lock. Unknown (size 0) on a machine whose sizes are not known here."""
    sizes = GLIBC_SIZES.get(machine or platform.machine())
    waits = {"rt_gil_waits": -1, "is_gil_waits": -1, "rt_gil_lock": -1, "gil_waits_size": 0}
    if sizes is None:
        return waits
    cond, mutex, semaphore = sizes
    statics = statics or {}
    if version >= (3, 7):
        for prefix in ("rt", "is"):
            if layout[f"{prefix}_gil_switches"] >= 0:
                waits[f"{prefix}_gil_waits"] = layout[f"{prefix}_gil_switches"] + 8
        waits["gil_waits_size"] = 2 * (cond + mutex)
    elif version == (3, 6) and len(statics) == len(GIL_WAITS_36):
        waits["rt_gil_waits"] = min(statics.values())
        waits["gil_waits_size"] = max(statics.values()) + max(cond, mutex) - waits["rt_gil_waits"]
    elif version == (2, 7) and GIL_LOCK_27 in statics:
        waits["rt_gil_lock"] = statics[GIL_LOCK_27]
        waits["gil_waits_size"] = semaphore
    return waits


# 3.6's and 2.7's statics for gil_waits (local symbols, as locate.STATICS's).
GIL_WAITS_36 = ("gil_cond", "gil_mutex", "switch_cond", "switch_mutex")
GIL_LOCK_27 = "interpreter_lock"


def debug_offsets_size(version: tuple[int, int]) -> int:
    return DEBUG_OFFSETS[version]["size"] if version in DEBUG_OFFSETS else 0


# A patch release moves a field by a few words, not by pages: an offset further than this from
# where the version's headers put it is not believed (the block is not what it claims to be).
MAX_DRIFT = 4096


def from_debug_offsets(version: tuple[int, int], block: bytes) -> dict[str, int]:
    """Layout fields as the target's own _Py_DebugOffsets block states them, checked against
    the version's headers: remote memory is not trusted, not even the target's word on itself."""
    where = DEBUG_OFFSETS[version]
    if len(block) < where["size"]:
        raise errors.AttachFailed(f"the target's own offsets (_Py_DebugOffsets) are cut short: "
                                  f"{len(block)} bytes of {where['size']}")
    values = {name: struct.unpack_from("<Q", block, at)[0] for name, at in where.items() if name != "size"}
    if values.pop("free_threaded", 0):
        raise errors.UnsupportedVersion(
            "free-threaded (no-GIL) CPython builds are not supported yet")
    said = values.pop("version", None)
    if said is not None and (said >> 24, (said >> 16) & 0xFF) != version:
        raise errors.AttachFailed(f"the target's own offsets (_Py_DebugOffsets) are for version 0x{said:x}, "
                                  f"not {version[0]}.{version[1]}")
    gc, collecting = values.pop("is_gc", None), values.pop("gc_collecting", None)
    if gc is not None and collecting is not None:
        values["is_gc_collecting"] = gc + collecting
    table = LAYOUTS[version]
    wrong = [f"{name} {value} (headers: {table[name]})" for name, value in values.items()
             if name in table and table[name] >= 0 and abs(value - table[name]) > MAX_DRIFT]
    if wrong:
        raise errors.AttachFailed(f"the target's own offsets (_Py_DebugOffsets) make no sense for CPython "
                                  f"{version[0]}.{version[1]}: {', '.join(wrong[:4])}")
    return values


def layout_for(version: tuple[int, int], version_text: str, version_hex: int,
               debug_block: bytes | None = None) -> dict[str, int]:
    """Every pytop_layout field for this target."""
    if version not in LAYOUTS:
        raise errors.UnsupportedVersion(
            f"Python {version_text} is not supported: pytop reads CPython {supported_range()}")
    layout = dict(LAYOUTS[version])
    for name in ASYNCIO_TASK[(3, 14)]:
        layout[name] = ASYNCIO_TASK.get(version, {}).get(name, -1)
    layout["awaited_depth"] = AWAITED_DEPTH.get(version, -1)
    if debug_block is not None:
        layout.update(from_debug_offsets(version, debug_block))
        # _Py_DebugOffsets does not publish the GIL's count of hand-overs: it sits where the
        # headers put it from the GIL's `locked`, which the target does publish.
        table = LAYOUTS[version]
        if table["is_gil_switches"] >= 0:
            layout["is_gil_switches"] = layout["is_gil_locked"] + table["is_gil_switches"] - table["is_gil_locked"]
    layout.update(_model(version))
    layout.update(gil_waits(version, layout))
    layout["version_hex"] = version_hex
    layout["pthread_tid"] = -1
    return layout
