"""A frame's arguments and local variables, with short, safe reprs of their values
(`pytop --dump --locals`).

Names are the code object's (co_localsplusnames from 3.11, co_varnames before), values the
frame's fast locals, right after its header: a _PyInterpreterFrame's `localsplus` from 3.11
(tagged stack references from 3.14), a PyFrameObject's `f_localsplus` before. A module's frame
keeps its variables in a dict, not here: it has none to show. Cells (variables that inner
functions close over) are shown by their contents; variables not bound yet are left out.

A value's repr is built here, never by the target: None, bool, int, float, str, bytes in full
up to a bound; tuple, list, dict, set and frozenset by their first items and their size; any
other object as `<type at 0x...>`. Every read is bounded, and what cannot be read says so.
"""

from __future__ import annotations

from ..core.records import LocalVariable
from ..core.visible import visible
from .memory import MemorySource
from .objects import RemoteObjects

MAX_LOCALS = 4096  # names a code object may have (CPython's own limit is far above real code)
MAX_TEXT = 100  # characters of a str or bytes value shown
MAX_ITEMS = 8  # items of a container shown
MAX_NESTING = 2  # containers inside containers shown by their items
MAX_SLOTS = 1 << 20  # hash-table slots walked for a dict or set's first items
CELL = 0x40  # before 3.11, pytop's own mark for a slot that holds a cell (3.11+ have CO_FAST_CELL)


class FrameLocals(RemoteObjects):
    def __init__(self, source: MemorySource, layout: dict[str, int]):
        super().__init__(source, layout)

    def locals_of(self, frame: int) -> tuple[LocalVariable, ...]:
        """The arguments (first) and locals of the frame at `frame`; () when it has none (a
        pseudo-frame's address is 0), or when they cannot be read (the frame went away)."""
        if not frame:
            return ()
        try:
            return self._locals_of(frame)
        except (OSError, ValueError, UnicodeDecodeError):
            return (LocalVariable("(locals)", "<unreadable: the frame changed while it was read>", False),)

    def _locals_of(self, frame: int) -> tuple[LocalVariable, ...]:
        L = self.L
        code = self.u64(frame + L["fr_code"]) & self.tag_mask
        flags = self.i32(code + L["co_flags"])
        arguments = self.i32(code + L["co_argcount"])
        if L["co_kwonlyargcount"] >= 0:
            arguments += self.i32(code + L["co_kwonlyargcount"])
        arguments += bool(flags & L["co_flag_varargs"]) + bool(flags & L["co_flag_varkeywords"])
        if L["co_localsplusnames"] >= 0:
            names_tuple = self.u64(code + L["co_localsplusnames"])
            kinds_object = self.u64(code + L["co_localspluskinds"])
            count = self.size(names_tuple)
            kinds = self.bytes_at(kinds_object + L["bytes_sval"], max(0, min(count, MAX_LOCALS)))
            names = [(names_tuple, i) for i in range(len(kinds))]
        elif flags & L["co_flag_optimized"]:  # before 3.11: locals, then cells, then free variables
            tuples = [self.u64(code + L[field]) for field in ("co_varnames", "co_cellvars", "co_freevars")]
            sizes = [self.i32(code + L["co_nlocals"]), self.size(tuples[1]), self.size(tuples[2])]
            if not all(0 <= n <= MAX_LOCALS for n in sizes):
                raise OSError(f"a code object with {sizes} locals, cells and free variables")
            names = [(names_tuple, i) for names_tuple, n in zip(tuples, sizes) for i in range(n)]
            count = len(names)
            kinds = bytes(sizes[0]) + bytes([CELL]) * (sizes[1] + sizes[2])
        else:
            return ()  # a module or class body: its variables are in a dict
        if not 0 <= count <= MAX_LOCALS or count != len(kinds):
            raise OSError(f"a code object with {count} locals")
        values = self.bytes_at(frame + L["fr_header_size"], 8 * count) if count else b""
        hidden = max(L.get("fast_kind_hidden", -1), 0)
        cells = L["fast_kind_cell"] | L["fast_kind_free"] if L.get("fast_kind_cell", -1) >= 0 else CELL
        found: list[LocalVariable] = []
        for i in range(count):
            value = int.from_bytes(values[8 * i:8 * i + 8], "little") & self.tag_mask
            if not value or kinds[i] & hidden:
                continue  # not bound yet; a comprehension's variable inlined into its function
            if kinds[i] & cells and self.type_name(value) == "cell":
                value = self.u64(value + L["cell_ref"])
                if not value:
                    continue
            names_tuple, at = names[i]
            name = visible(self.text(self.u64(names_tuple + L["tuple_items"] + 8 * at), MAX_TEXT) or "?")
            found.append(LocalVariable(name, self.repr(value), i < arguments))
        return tuple(found)

    # ---- values --------------------------------------------------------------------------

    def repr(self, obj: int, nesting: int = 0) -> str:
        try:
            return self._repr(obj, nesting)
        except (OSError, ValueError, UnicodeDecodeError):
            return f"<unreadable at {obj:#x}>"

    def _repr(self, obj: int, nesting: int) -> str:
        kind = self.type_name(obj)
        if kind == "NoneType":
            return "None"
        if kind == "bool":
            return "True" if self.integer(obj) else "False"
        if kind in ("int", "long"):
            value = self.integer(obj)
            if value is None:  # too long to show: its size, from its count of binary digits
                digits = int(self.digit_count(obj)[0] * self.L["long_shift"] * 0.30103) + 1
                return f"<int of about {digits:,} digits>"
            return str(value)
        if kind == "float":
            return repr(self.real(obj))
        if kind == "str":
            text = self.text(obj, MAX_TEXT)
            return f"<str at {obj:#x}>" if text is None else self._cut(repr(text), self.text_length(obj))
        if kind == "bytes":
            size = self.size(obj)
            return self._cut(repr(self.bytes_at(obj + self.L["bytes_sval"], max(0, min(size, MAX_TEXT)))), size)
        if kind in ("tuple", "list", "dict", "set", "frozenset"):
            return self._container(obj, kind, nesting)
        return f"<{kind} at {obj:#x}>"

    @staticmethod
    def _cut(shown: str, length: int) -> str:
        return shown if length <= MAX_TEXT else f"{shown[:-1]}...{shown[-1]} ({length:,} characters)"

    def _container(self, obj: int, kind: str, nesting: int) -> str:
        L = self.L
        if kind == "tuple":
            size, items = self.size(obj), obj + L["tuple_items"]
        elif kind == "list":
            size, items = self.size(obj), self.u64(obj + L["list_items"])
        elif kind == "dict":
            size = self.i64(obj + L["dict_ma_used"])
        else:
            size = self.i64(obj + L["set_used"])
        if size < 0:
            raise OSError(f"a {kind} of {size} items")
        if nesting >= MAX_NESTING:
            return f"<{kind} of {size:,} item{'' if size == 1 else 's'}>"
        shown = min(size, MAX_ITEMS)
        if kind in ("tuple", "list"):
            raw = self.bytes_at(items, 8 * shown) if shown else b""
            parts = [self.repr(int.from_bytes(raw[8 * i:8 * i + 8], "little"), nesting + 1) for i in range(shown)]
        elif kind == "dict":
            parts = [f"{self.repr(key, nesting + 1)}: {self.repr(value, nesting + 1)}"
                     for key, value in self._dict_items(obj, shown)]
        else:
            parts = [self.repr(key, nesting + 1) for key in self._set_keys(obj, shown)]
        more = f", ... ({size:,} items)" if size > len(parts) else ""
        body = ", ".join(parts) + more
        if kind == "tuple":
            return f"({body},)" if size == 1 else f"({body})"
        if kind == "list":
            return f"[{body}]"
        if kind == "dict":
            return f"{{{body}}}"
        if not size:
            return f"{kind}()"
        return f"{{{body}}}" if kind == "set" else f"frozenset({{{body}}})"

    def _set_keys(self, obj: int, wanted: int) -> list[int]:
        L = self.L
        mask, table = self.i64(obj + L["set_mask"]), self.u64(obj + L["set_table"])
        if not 0 <= mask < MAX_SLOTS:
            raise OSError(f"a set of {mask + 1} slots")
        size = L["set_entry_size"]
        keys: list[int] = []
        for slot in range(mask + 1):
            if len(keys) >= wanted:
                break
            entry = self.bytes_at(table + slot * size, size)
            key = int.from_bytes(entry[L["set_entry_key"]:L["set_entry_key"] + 8], "little")
            hashed = int.from_bytes(entry[L["set_entry_hash"]:L["set_entry_hash"] + 8], "little", signed=True)
            if key and hashed != -1:  # -1: a dummy left by a removed key
                keys.append(key)
        return keys

    def _dict_items(self, obj: int, wanted: int) -> list[tuple[int, int]]:
        """The first `wanted` (key, value) pairs, in insertion order (2.7: table order)."""
        L = self.L
        if L["dict_ma_keys"] < 0:  # 2.7: one table of (hash, key, value), ma_mask + 1 long
            mask, table = self.i64(obj + L["dict_ma_mask"]), self.u64(obj + L["dict_ma_table"])
            return self._entries(table, 0, mask + 1, L["dict_entry_size"], L["dict_entry_key"],
                                 L["dict_entry_value"], 0, wanted)
        keys, values = self.u64(obj + L["dict_ma_keys"]), self.u64(obj + L["dict_ma_values"])
        if L["dk_log2_size"] >= 0:  # 3.11+
            log2_size = self.bytes_at(keys + L["dk_log2_size"], 1)[0]
            log2_index_bytes = self.bytes_at(keys + L["dk_log2_index_bytes"], 1)[0]
            unicode_keys = self.bytes_at(keys + L["dk_kind"], 1)[0] != 0
            if log2_size > 30 or log2_index_bytes > 33:
                raise OSError("a dict of impossible size")
            entries = keys + L["dk_indices"] + (1 << log2_index_bytes)
            prefix = "dict_unicode_entry_" if unicode_keys else "dict_entry_"
            count = self.i64(keys + L["dk_nentries"])
        else:  # 3.6-3.10: indices of 1, 2, 4 or 8 bytes, as the table is large
            slots = self.i64(keys + L["dk_size"])
            if not 0 < slots <= MAX_SLOTS:
                raise OSError(f"a dict of {slots} slots")
            width = 1 if slots <= 0xFF else 2 if slots <= 0xFFFF else 4
            entries = keys + L["dk_indices"] + slots * width
            prefix = "dict_entry_"
            count = self.i64(keys + L["dk_nentries"])
        if not 0 <= count <= MAX_SLOTS:
            raise OSError(f"a dict of {count} entries")
        split = values + L["dict_values_values"] if values and L.get("dict_values_values", -1) >= 0 else values
        return self._entries(entries, 0, count, L[prefix + "size"], L[prefix + "key"], L[prefix + "value"], split,
                             wanted)

    def _entries(self, table: int, first: int, count: int, size: int, key_at: int, value_at: int, split: int,
                 wanted: int) -> list[tuple[int, int]]:
        """Walk entries of `size` bytes from `table`, keeping (key, value) pairs with both set; a
        split dict's values are in their own array (`split`), by entry index."""
        found: list[tuple[int, int]] = []
        for i in range(first, count):
            if len(found) >= wanted:
                break
            entry = self.bytes_at(table + i * size, size)
            key = int.from_bytes(entry[key_at:key_at + 8], "little")
            value = self.u64(split + 8 * i) if split else int.from_bytes(entry[value_at:value_at + 8], "little")
            if key and value:
                found.append((key, value))
        return found
