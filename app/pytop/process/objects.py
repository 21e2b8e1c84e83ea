"""Plain objects of a target, read from its memory once, in Python: for one-shot reports
(`--dump --async`'s tasks, `--dump --locals`), not the sampling path.

Remote memory is hostile: every size is bounded, every count checked against its bound, and a
read that fails raises OSError for the caller to turn into "unreadable". Offsets come from the
target's layout (process/layouts), names of types from their tp_name.
"""

from __future__ import annotations

import struct

from ..native import decode_text
from .memory import MemorySource

MAX_DIGITS = 64  # an int of more 30-bit digits (~580 decimal ones) is shown by its size
TYPE_NAME_BYTES = 64
MAX_READ = 16 << 20  # no one read of an object is larger (the native reader's own bound)
ADDRESS_END = 1 << 64


class RemoteObjects:
    def __init__(self, source: MemorySource, layout: dict[str, int]):
        self.source = source
        self.L = layout
        self.tag_mask = ~max(layout.get("fr_executable_tag_bits", 0), 0) & 0xFFFFFFFFFFFFFFFF
        self._type_names: dict[int, str] = {}

    # ---- memory --------------------------------------------------------------------------

    def bytes_at(self, address: int, length: int) -> bytes:
        """`length` bytes at `address`, an address computed from what the target holds: a
        torn pointer plus an offset can pass 2**64, a torn size be negative or huge. Every
        such read is an OSError, the reprs' "unreadable", never another exception."""
        if not (0 < address and 0 <= length <= MAX_READ and address + length <= ADDRESS_END):
            raise OSError(14, f"cannot read {length} bytes at {address:#x}: not an address")
        return self.source.read(address, length)

    def u64(self, address: int) -> int:
        return int.from_bytes(self.bytes_at(address, 8), "little")

    def i64(self, address: int) -> int:
        return int.from_bytes(self.bytes_at(address, 8), "little", signed=True)

    def i32(self, address: int) -> int:
        return int.from_bytes(self.bytes_at(address, 4), "little", signed=True)

    def i8(self, address: int) -> int:
        return int.from_bytes(self.bytes_at(address, 1), "little", signed=True)

    # ---- objects -------------------------------------------------------------------------

    def type_flags(self, obj: int) -> int:
        return self.u64(self.u64(obj + self.L["ob_type"]) + self.L["tp_flags"])

    def type_name(self, obj: int) -> str:
        kind = self.u64(obj + self.L["ob_type"])
        if kind not in self._type_names:
            raw = self.bytes_at(self.u64(kind + self.L["tp_name"]), TYPE_NAME_BYTES)
            self._type_names[kind] = raw.split(b"\0", 1)[0].decode("ascii", "replace")
        return self._type_names[kind]

    def size(self, obj: int) -> int:
        """A variable-size object's item count (ob_size)."""
        return self.i64(obj + self.L["var_ob_size"])

    def text(self, obj: int, max_chars: int) -> str | None:
        """A str object's text, cut at `max_chars`; a 2.7 str's bytes as UTF-8, else Latin-1."""
        L = self.L
        if L["str_state"] < 0:
            raw = self.bytes_at(obj + L["bytes_sval"], max(0, min(self.size(obj), max_chars)))
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return raw.decode("latin-1")
        length = self.i64(obj + L["str_length"])
        state = int.from_bytes(self.bytes_at(obj + L["str_state"], 4), "little")

        def bits(name: str) -> int:
            return state >> L[f"str_{name}_shift"] & ((1 << L[f"str_{name}_width"]) - 1)

        kind, compact, ascii = bits("kind"), bits("compact"), bits("ascii")
        if length < 0 or kind not in (1, 2, 4) or not compact:
            return None
        count = min(length, max_chars)
        data = self.bytes_at(obj + (L["str_ascii_size"] if ascii else L["str_compact_size"]), count * kind)
        return decode_text(kind, data, count)

    def text_length(self, obj: int) -> int:
        return self.size(obj) if self.L["str_state"] < 0 else self.i64(obj + self.L["str_length"])

    def integer(self, obj: int, max_digits: int = MAX_DIGITS) -> int | None:
        """An int's value; None when it has more than `max_digits` digits (or makes no sense).
        3.12+ keep the digit count and sign in a tag word, earlier versions in ob_size; 2.7's
        small ints are PyIntObjects."""
        L = self.L
        if L.get("int_ival", -1) >= 0 and self.type_name(obj) in ("int", "bool"):  # 2.7's bool is an int
            return self.i64(obj + L["int_ival"])
        ndigits, negative = self.digit_count(obj)
        if ndigits > max_digits:
            return None
        shift = L["long_shift"]
        width = 4 if shift == 30 else 2
        raw = self.bytes_at(obj + L["long_digits"], width * ndigits)
        digits: tuple[int, ...] = struct.unpack(f"<{ndigits}{'I' if width == 4 else 'H'}", raw)
        value = sum(d << (shift * i) for i, d in enumerate(digits))
        return -value if negative else value

    def digit_count(self, obj: int) -> tuple[int, bool]:
        """An int's count of digits (of long_shift bits each) and whether it is negative: 3.12+
        keep them in a tag word, earlier versions in ob_size."""
        if self.L.get("long_tag", -1) >= 0:
            tag = self.u64(obj + self.L["long_tag"])
            return tag >> 3, tag & 3 == 2
        size = self.i64(obj + self.L["var_ob_size"])
        return abs(size), size < 0

    def real(self, obj: int) -> float:
        return float(struct.unpack("<d", self.bytes_at(obj + self.L["float_value"], 8))[0])
