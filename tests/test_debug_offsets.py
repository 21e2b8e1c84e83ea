"""A target's own _Py_DebugOffsets (3.13+) are read from its memory: believed only when they
make sense for the version (pure: blocks made here, no target)."""

from __future__ import annotations

import struct

import pytest

from pytop import errors
from pytop.process import layouts
from pytop.process.layouts.generated import DEBUG_OFFSETS, LAYOUTS

VERSIONS = sorted(DEBUG_OFFSETS)


def block_for(release: tuple[int, int], **changes: int) -> bytearray:
    """A block as the release's headers would have it, with `changes` made."""
    where = DEBUG_OFFSETS[release]
    block = bytearray(where["size"])
    table = LAYOUTS[release]
    values = {"version": release[0] << 24 | release[1] << 16, "free_threaded": 0, "is_gc": 0,
              "gc_collecting": table.get("is_gc_collecting", 0)}
    values.update({name: table[name] for name in where if name in table and table[name] >= 0})
    values.update(changes)
    for name, at in where.items():
        if name != "size" and name in values:
            struct.pack_into("<Q", block, at, values[name])
    return block


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"{v[0]}.{v[1]}")
def test_a_block_as_the_headers_have_it_is_taken(version: tuple[int, int]) -> None:
    layout = layouts.layout_for(version, "x", 0, bytes(block_for(version)))
    assert all(layout[name] == value for name, value in LAYOUTS[version].items()
               if name in DEBUG_OFFSETS[version] and value >= 0)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"{v[0]}.{v[1]}")
def test_a_patch_release_that_moved_a_field_is_followed(version: tuple[int, int]) -> None:
    name = next(n for n in DEBUG_OFFSETS[version] if n.startswith("ts_") and LAYOUTS[version].get(n, -1) >= 0)
    moved = LAYOUTS[version][name] + 16
    assert layouts.layout_for(version, "x", 0, bytes(block_for(version, **{name: moved})))[name] == moved


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"{v[0]}.{v[1]}")
def test_nonsense_is_refused_with_a_message(version: tuple[int, int]) -> None:
    name = next(n for n in DEBUG_OFFSETS[version] if n.startswith("fr_") and LAYOUTS[version].get(n, -1) >= 0)
    with pytest.raises(errors.AttachFailed, match=name):
        layouts.layout_for(version, "x", 0, bytes(block_for(version, **{name: 1 << 40})))
    with pytest.raises(errors.AttachFailed, match="version"):
        layouts.layout_for(version, "x", 0, bytes(block_for(version, version=0x030A0000)))
    with pytest.raises(errors.AttachFailed, match="cut short"):
        layouts.layout_for(version, "x", 0, bytes(block_for(version))[:16])
