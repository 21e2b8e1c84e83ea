"""The struct layout pytop's unwinder needs for one CPython version.

Offsets come from generated.py (made by tools/gen_layouts.py from each version's headers). For
3.13+ the target publishes its own offsets in `_Py_DebugOffsets` at the start of _PyRuntime;
those win over the table wherever the target has them, so a patch release that moved a field
is still read right.
"""

from __future__ import annotations

import struct

from ... import errors
from .generated import DEBUG_OFFSETS, LAYOUTS

SUPPORTED = tuple(sorted(LAYOUTS))
FRAMES_OBJECTS, FRAMES_INTERPRETER = 1, 2
LINES_LNOTAB, LINES_310, LINES_LOCATIONS = 1, 2, 3


def supported_range() -> str:
    first, last = SUPPORTED[0], SUPPORTED[-1]
    return f"{first[0]}.{first[1]} to {last[0]}.{last[1]}"


def _model(version: tuple[int, int]) -> dict[str, int]:
    if version <= (3, 9):
        return {"frame_model": FRAMES_OBJECTS, "line_table": LINES_LNOTAB, "lasti_scale": 1}
    if version == (3, 10):
        return {"frame_model": FRAMES_OBJECTS, "line_table": LINES_310, "lasti_scale": 2}
    return {"frame_model": FRAMES_INTERPRETER, "line_table": LINES_LOCATIONS, "lasti_scale": 2}


def debug_offsets_size(version: tuple[int, int]) -> int:
    return DEBUG_OFFSETS[version]["size"] if version in DEBUG_OFFSETS else 0


def from_debug_offsets(version: tuple[int, int], block: bytes) -> dict[str, int]:
    """Layout fields as the target's own _Py_DebugOffsets block states them."""
    where = DEBUG_OFFSETS[version]
    values = {name: struct.unpack_from("<Q", block, at)[0] for name, at in where.items() if name != "size"}
    if values.pop("free_threaded", 0):
        raise errors.UnsupportedVersion(
            "free-threaded (no-GIL) CPython builds are not supported yet")
    values.pop("version", None)
    gc, collecting = values.pop("is_gc", None), values.pop("gc_collecting", None)
    if gc is not None and collecting is not None:
        values["is_gc_collecting"] = gc + collecting
    return values


def layout_for(version: tuple[int, int], version_text: str, version_hex: int,
               debug_block: bytes | None = None) -> dict[str, int]:
    """Every pytop_layout field for this target."""
    if version not in LAYOUTS:
        raise errors.UnsupportedVersion(
            f"Python {version_text} is not supported: pytop reads CPython {supported_range()}")
    layout = dict(LAYOUTS[version])
    if debug_block is not None:
        layout.update(from_debug_offsets(version, debug_block))
    layout.update(_model(version))
    layout["version_hex"] = version_hex
    layout["pthread_tid"] = -1
    return layout
