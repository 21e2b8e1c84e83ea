"""zstd for a recording's frames: the standard library's (`compression.zstd`, Python 3.14 on),
else the `zstandard` package (a dependency before 3.14). Both write and read the same frames
(RFC 8878), so a recording moves between Pythons.

A window is compressed with a reference: the payload of an earlier window, as a raw-content
dictionary. Windows a few seconds apart name the same threads, stacks and functions in the same
columns, and zstd finds those runs in the reference where a frame compressed alone must spell
them out (seven minutes of a churning server: 14% smaller than with zlib, a frame alone).

Imports nothing of pytop's: a test loads this file alone into a 3.14 interpreter to hold the
standard library's side against the package's."""

from __future__ import annotations

from typing import Any

LEVEL = 9  # 12 and 15 took 3 and 5 times the CPU for 1 and 3 points more

_std: Any = None
_pkg: Any = None
try:
    from compression import zstd as _std  # type: ignore[import-not-found,no-redef]
except ImportError:
    try:
        import zstandard as _pkg
    except ImportError:  # (installed without its dependencies: recordings are written with zlib)
        pass

available = _std is not None or _pkg is not None
backend = "compression.zstd" if _std is not None else "zstandard" if _pkg is not None else None


def compress(data: bytes, reference: bytes | None = None, level: int = LEVEL) -> bytes:
    if _std is not None:
        shared = _std.ZstdDict(reference, is_raw=True) if reference else None
        return bytes(_std.compress(data, level=level, zstd_dict=shared))
    if _pkg is None:
        raise RuntimeError("no zstd here")
    shared = _pkg.ZstdCompressionDict(reference, dict_type=_pkg.DICT_TYPE_RAWCONTENT) if reference else None
    return bytes(_pkg.ZstdCompressor(level=level, dict_data=shared).compress(data))


def expand(data: bytes, reference: bytes | None, limit: int) -> bytes:
    """One zstd frame, expanded (with `reference`, the dictionary it was compressed with);
    raises ValueError when it does not expand whole within `limit` bytes (a crafted frame may
    claim any size), or is not zstd, or needs a reference it was not given."""
    try:
        if _std is not None:
            shared = _std.ZstdDict(reference, is_raw=True) if reference else None
            inflater = _std.ZstdDecompressor(zstd_dict=shared)
            out = inflater.decompress(data, max_length=limit)
            if not inflater.eof:
                raise ValueError("the frame's payload does not expand whole within its bound")
            return bytes(out)
        if _pkg is None:
            raise ValueError("a zstd frame, and no zstd here: install the zstandard package")
        # The size the frame declares bounds what is made (frames pytop writes declare it); the
        # library fails a frame that does not expand whole to it.
        size = _pkg.frame_content_size(data)
        if size < 0 or size > limit:
            raise ValueError("the frame's payload does not expand whole within its bound")
        shared = _pkg.ZstdCompressionDict(reference, dict_type=_pkg.DICT_TYPE_RAWCONTENT) if reference else None
        return bytes(_pkg.ZstdDecompressor(dict_data=shared).decompress(data))
    except ValueError:
        raise
    except Exception as exc:  # each library's own error (ZstdError) for a frame that is not sound
        raise ValueError(f"the frame's payload is not sound zstd: {exc}") from None
