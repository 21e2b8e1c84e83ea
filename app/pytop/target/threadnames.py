"""Thread names as `threading.enumerate()` shows them, read from the target's memory.

The path: each interpreter's sys.modules -> the `threading` module's dict -> `_active` (and
`_limbo`, threads between start() and registration): dicts of thread ident -> Thread object ->
its `_name` attribute. Reading an attribute means knowing where an instance keeps its values,
which changed in nearly every version:

  3.8-3.10  an instance __dict__ at tp_dictoffset
  3.11      a values array at obj-32 (keys in the type's ht_cached_keys), else a dict at obj-24
  3.12      one tagged word at obj-24: values pointer - 1 if odd, else a dict
  3.13      inline values right after the object header (obj+16), else the dict at obj-24
  3.14+     inline values at obj + tp_basicsize, else the dict at obj-24

This runs at refresh time, not per sample, so it is written in Python over single reads.
Remote memory is hostile: every count is bounded and every object's type is checked; a name
that cannot be read is simply unknown.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

from ..native import read_memory

MAX_DICT_ENTRIES = 1 << 16
MAX_NAME_CHARS = 256
REFRESH_SECONDS = 2.0  # names are re-read this often even if no thread came or went
MIN_REREAD_SECONDS = 0.25  # and no more often than this, even while a thread stays unnamed
INLINE_VALUES, MANAGED_DICT = 1 << 2, 1 << 4  # Py_TPFLAGS_* (3.13+, 3.11+)
_U64 = struct.Struct("<Q")


class Unreadable(Exception):
    pass


class Memory:
    """Reads of one target, each bounded and checked."""

    def __init__(self, pid: int, layout: dict[str, int], minor: int):
        self.pid = pid
        self.L = layout
        self.minor = minor
        self._type_names: dict[int, bytes] = {}

    def read(self, address: int, length: int) -> bytes:
        if address <= 0 or length > 1 << 20:
            raise Unreadable(f"bad read at {address:#x}")
        try:
            return read_memory(self.pid, address, length)
        except OSError as exc:
            raise Unreadable(str(exc)) from None

    def u64(self, address: int) -> int:
        return int(_U64.unpack(self.read(address, 8))[0])

    def i64(self, address: int) -> int:
        return int.from_bytes(self.read(address, 8), "little", signed=True)

    def type_of(self, obj: int) -> int:
        return self.u64(obj + self.L["ob_type"])

    def type_name(self, obj: int) -> bytes:
        """The name of `obj`'s type (type objects are cached: they outlive their instances)."""
        tp = self.type_of(obj)
        name = self._type_names.get(tp)
        if name is None:
            name = self.read(self.u64(tp + self.L["tp_name"]), 32).split(b"\0", 1)[0]
            self._type_names[tp] = name
        return name

    # ---- str and int ----------------------------------------------------------------------

    def text(self, obj: int) -> str:
        L = self.L
        header = self.read(obj, L["str_compact_size"])
        length = int.from_bytes(header[L["str_length"]:L["str_length"] + 8], "little", signed=True)
        state = header[L["str_state"]]  # only the low byte is the bit field
        kind = state >> L["str_kind_shift"] & 7
        compact = state >> L["str_compact_shift"] & 1
        ascii_only = state >> L["str_ascii_shift"] & 1
        if not 0 <= length <= MAX_NAME_CHARS * 4 or kind not in (1, 2, 4):
            raise Unreadable("not a str")
        count = min(length, MAX_NAME_CHARS)
        if compact:
            data = obj + (L["str_ascii_size"] if ascii_only else L["str_compact_size"])
        else:
            data = self.u64(obj + L["str_legacy_data"])
        raw = self.read(data, count * kind) if count else b""
        return raw.decode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind], "replace")

    def integer(self, obj: int) -> int:
        if self.type_name(obj) != b"int":
            raise Unreadable("not an int")
        if self.minor < 12:
            size = self.i64(obj + 16)
            ndigits, negative = abs(size), size < 0
        else:
            tag = self.u64(obj + 16)
            ndigits, negative = tag >> 3, tag & 3 == 2
        if ndigits > 4:
            raise Unreadable("not a thread ident")
        raw = self.read(obj + 24, 4 * ndigits) if ndigits else b""
        value = sum(int.from_bytes(raw[4 * i:4 * i + 4], "little") << (30 * i) for i in range(ndigits))
        return -value if negative else value

    # ---- dicts ----------------------------------------------------------------------------

    def _entries(self, keys: int) -> tuple[int, int, int, int, int]:
        """(first entry, entry count, entry size, key offset, value offset)."""
        if self.minor < 11:
            header = self.read(keys, 40)
            size, nentries = _U64.unpack_from(header, 8)[0], _U64.unpack_from(header, 32)[0]
            width = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4 if size <= 0xFFFFFFFF else 8
            if size > 1 << 30:
                raise Unreadable("dict too large")
            return keys + 40 + size * width, nentries, 24, 8, 16
        header = self.read(keys, 32)
        log2_size, log2_index_bytes, kind = header[8], header[9], header[10]
        nentries = _U64.unpack_from(header, 24)[0]
        if log2_size > 30 or not 0 <= log2_index_bytes - log2_size <= 3 or kind > 2:
            raise Unreadable("not a dict's keys")
        first = keys + 32 + (1 << log2_index_bytes)
        return (first, nentries, 24, 8, 16) if kind == 0 else (first, nentries, 16, 0, 8)

    def _values_base(self, values: int) -> int:
        # 3.13+ split values start with a 4-byte header (capacity, size, embedded, valid).
        return values + 8 if self.minor >= 13 else values

    def dict_items(self, d: int) -> Iterator[tuple[int, int]]:
        keys, values = self.u64(d + 32), self.u64(d + 40)
        first, nentries, size, key_at, value_at = self._entries(keys)
        if nentries > MAX_DICT_ENTRIES:
            raise Unreadable("dict too large")
        block = self.read(first, nentries * size) if nentries else b""
        split = self.read(self._values_base(values), 8 * nentries) if values and nentries else b""
        for i in range(nentries):
            key = _U64.unpack_from(block, i * size + key_at)[0]
            if not key:
                continue  # a deleted entry
            value = _U64.unpack_from(split, 8 * i)[0] if values else _U64.unpack_from(block, i * size + value_at)[0]
            if value:
                yield key, value

    def dict_get(self, d: int, name: str) -> int:
        for key, value in self.dict_items(d):
            if self.text(key) == name:
                return value
        return 0

    def shared_index(self, keys: int, name: str) -> int | None:
        first, nentries, size, key_at, _ = self._entries(keys)
        if nentries > MAX_DICT_ENTRIES:
            raise Unreadable("keys too large")
        block = self.read(first, nentries * size) if nentries else b""
        for i in range(nentries):
            key = _U64.unpack_from(block, i * size + key_at)[0]
            if key and self.text(key) == name:
                return i
        return None

    # ---- instance attributes --------------------------------------------------------------

    def attribute(self, obj: int, name: str) -> int:
        """Address of attribute `name` of a plain Python instance, or 0."""
        L = self.L
        tp = self.type_of(obj)
        flags = self.u64(tp + L["tp_flags"])
        if self.minor >= 11 and flags & MANAGED_DICT:
            values = self._managed_values(obj, tp, flags)
            if values:  # the instance's own values, in the order of its type's shared keys
                ix = self.shared_index(self.u64(tp + L["ht_cached_keys"]), name)
                in_range = ix is not None and (values[1] is None or ix < values[1])
                return self.u64(values[0] + 8 * ix) if in_range and ix is not None else 0
            instance_dict = self.u64(obj - 24)  # the managed dict pointer
            return self.dict_get(instance_dict, name) if instance_dict else 0
        offset = self.i64(tp + L["tp_dictoffset"])
        if offset < 0:  # var-sized instances: counted from their end
            items = abs(self.i64(obj + L["var_ob_size"]))
            offset += self.i64(tp + L["tp_basicsize"]) + items * self.i64(tp + L["tp_itemsize"])
            offset = (offset + 7) & ~7
        instance_dict = self.u64(obj + offset) if offset else 0
        return self.dict_get(instance_dict, name) if instance_dict else 0

    def _managed_values(self, obj: int, tp: int, flags: int) -> tuple[int, int | None] | None:
        """(address of values[0], capacity or None) of an instance's own values array."""
        if self.minor == 11:
            values = self.u64(obj - 32)
            return (values, None) if values else None
        if self.minor == 12:
            tagged = self.u64(obj - 24)
            return (tagged + 1, None) if tagged & 1 else None
        if not flags & INLINE_VALUES:
            return None
        at = obj + (16 if self.minor == 13 else self.i64(tp + self.L["tp_basicsize"]))
        capacity, _, _, valid = self.read(at, 4)
        return (at + 8, capacity) if valid else None


class ThreadNames:
    """Names by thread ident, re-read when a thread appears that has no name yet (its ident may
    be an earlier thread's: glibc reuses them) or every few seconds."""

    def __init__(self, pid: int, runtime_address: int, layout: dict[str, int], minor: int):
        self.memory = Memory(pid, layout, minor)
        self.runtime = runtime_address
        self.layout = layout
        self._names: dict[int, str] = {}
        self._read_at = -1e9

    def get(self, unnamed: set[int] | None = None) -> dict[int, str]:
        """Names of the target's threads; `unnamed`: idents of threads just seen that have no
        name yet, which asks for a fresh read."""
        age = time.monotonic() - self._read_at
        if age > REFRESH_SECONDS or (unnamed and age > MIN_REREAD_SECONDS):
            self._names = self.read()
            self._read_at = time.monotonic()
        return self._names

    def read(self) -> dict[int, str]:
        names: dict[int, str] = {}
        try:
            interp = self.memory.u64(self.runtime + self.layout["rt_interpreters_head"])
            for _ in range(64):
                if not interp:
                    break
                names.update(self._of_interpreter(interp))
                interp = self.memory.u64(interp + self.layout["is_next"])
        except Unreadable:
            pass  # keep what was found
        return names

    def _of_interpreter(self, interp: int) -> dict[int, str]:
        m = self.memory
        names: dict[int, str] = {}
        modules = m.u64(interp + self.layout["is_modules"])
        threading = m.dict_get(modules, "threading") if modules else 0
        if not threading or m.type_name(threading) != b"module":
            return names  # the program has not imported threading
        module_dict = m.u64(threading + 16)  # PyModuleObject.md_dict, NULL once torn down
        if not module_dict:
            return names
        for registry in ("_limbo", "_active"):
            table = m.dict_get(module_dict, registry)
            if not table or m.type_name(table) != b"dict":
                continue
            for key, thread in m.dict_items(table):
                try:
                    ident_obj = key if registry == "_active" else m.attribute(thread, "_ident")
                    name_obj = m.attribute(thread, "_name")
                    if ident_obj and name_obj and m.type_name(name_obj) == b"str":
                        names[m.integer(ident_obj)] = m.text(name_obj)
                except Unreadable:
                    continue  # this one thread changed under us, or has no ident yet
        return names
