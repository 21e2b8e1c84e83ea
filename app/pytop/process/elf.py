"""What pytop needs from an ELF file at attach time: symbols, sections, load address, version.

The file's headers are read with `struct`: pytop needs the load segments, the section table and
two symbol tables of a 64-bit little-endian file, nothing more. pyelftools (which reads the core
files of `--core`) took 50-70 ms to import, a fifth of pytop's start-up, to do this. .dynsym is
searched before .symtab: it is small, and stripped binaries (Debian's /usr/bin/python3.X) keep
it because extension modules link against it.

The file is the target's, so its headers are data: every count and range is checked against
the file's size before it is read, and a file that does not hold together is a ValueError.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from typing import BinaryIO

from .. import files
from .procmaps import Mapping

PAGE = 4096
_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_PROGRAM = struct.Struct("<IIQQQQQQ")  # Elf64_Phdr: type, flags, offset, vaddr, paddr, filesz, memsz, align
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, align, entsize
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size
_MAGIC = b"\x7fELF\x02\x01"  # 64-bit, little-endian
_ET_DYN, _PT_LOAD, _SHT_NOBITS = 3, 1, 8
_SHN_XINDEX = 0xFFFF
_MAX_SECTIONS = 1 << 16  # extended numbering allows more; no real binary comes near
# PY_VERSION as the end of a C string (the linker may merge it into the tail of a longer one,
# such as an install path ending in "/3.9.18").
_VERSION_STRING = re.compile(rb"(?<![0-9.])([23])\.(\d{1,2})\.(\d{1,3})(?:[abrc]{1,2}\d{1,2})?\+?\x00")


@dataclass(frozen=True)
class Section:
    name: str
    kind: int  # sh_type
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


@dataclass
class ElfImage:
    path: str
    is_shared: bool
    loads: list[tuple[int, int]]  # (p_vaddr, p_offset) of PT_LOAD segments
    sections: dict[str, int] = field(default_factory=dict)  # name -> sh_addr
    _table: list[Section] = field(default_factory=list)
    _file: BinaryIO | None = None
    _size: int = 0

    @classmethod
    def open(cls, path: str) -> ElfImage:
        try:
            f = files.open_regular(path)
        except OSError as exc:
            raise ValueError(f"{path} is not a readable ELF file: {exc.strerror}") from exc
        try:
            size = os.fstat(f.fileno()).st_size
            header = _read(f, size, 0, _HEADER.size)
            (ident, e_type, _machine, _version, _entry, phoff, shoff, _flags, _ehsize,
             phentsize, phnum, shentsize, shnum, shstrndx) = _HEADER.unpack(header)
            if not ident.startswith(_MAGIC):
                raise ValueError("not a 64-bit little-endian ELF file")
            loads = [(vaddr, offset) for p_type, _, offset, vaddr, *_ in
                     _entries(f, size, phoff, phnum, phentsize, _PROGRAM) if p_type == _PT_LOAD]
            table = _sections(f, size, shoff, shnum, shentsize, shstrndx)
        except (OSError, ValueError, struct.error) as exc:
            f.close()
            raise ValueError(f"{path} is not a readable ELF file: {exc}") from exc
        return cls(path, e_type == _ET_DYN, loads, {s.name: s.addr for s in table}, table, f, size)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def section(self, name: str) -> Section | None:
        return next((s for s in self._table if s.name == name), None)

    def data(self, section: Section) -> bytes:
        """The section's bytes (none for one that takes no room in the file, such as .bss)."""
        if section.kind == _SHT_NOBITS:
            return b""
        assert self._file is not None
        return _read(self._file, self._size, section.offset, section.size)

    def symbols(self, names: tuple[str, ...]) -> dict[str, int]:
        """Addresses (unrelocated) of those of `names` the file defines. A table that does not
        fit the file is passed over."""
        found: dict[str, int] = {}
        for table_name in (".dynsym", ".symtab"):
            table = self.section(table_name)
            if table is None or table.entsize != _SYMBOL.size or table.link >= len(self._table):
                continue
            try:
                strings = self.data(self._table[table.link])
                entries = self.data(table)
            except ValueError:
                continue
            for name in names:
                value = found.get(name) or _defined(name.encode(), strings, entries)
                if value:
                    found[name] = value
            if len(found) == len(names):
                break
        return found

    def load_bias(self, mappings: list[Mapping]) -> int | None:
        """What to add to the file's addresses to get the process's, from its mappings."""
        if not self.is_shared:
            return 0
        for vaddr, offset in self.loads:
            for m in mappings:
                if m.offset == offset & ~(PAGE - 1):
                    return m.start - (vaddr & ~(PAGE - 1))
        return None

    def version_string(self, minor: int | None = None, major: int = 3) -> tuple[int, int] | None:
        """(minor, micro) of PY_VERSION in .rodata, for binaries without Py_Version (before
        3.11). With `minor` known (from the file name), only a version of that minor counts;
        without it, only 3.8-3.10 (the versions that have no Py_Version symbol). `major` 2 looks
        for 2.7's."""
        section = self.section(".rodata")
        try:
            data = self.data(section) if section is not None else b""
        except ValueError:
            return None
        # Each candidate minor's "X.Y." found with bytes.find, then checked by the pattern there:
        # the pattern tried at every byte of a ~1 MB .rodata took ~40 ms.
        found: tuple[int, tuple[int, int]] | None = None  # (where, version): the first in the file
        for candidate in [minor] if minor is not None else [8, 9, 10]:
            prefix = f"{major}.{candidate}.".encode()
            at = data.find(prefix)
            while at >= 0 and (found is None or at < found[0]):
                match = _VERSION_STRING.match(data, at)
                if match:
                    found = (at, (candidate, int(match.group(3))))
                    break
                at = data.find(prefix, at + 1)
        return found[1] if found else None


def _defined(name: bytes, strings: bytes, entries: bytes) -> int:
    """The value of the symbol `name` defined in a table (`entries`, its names in `strings`), or 0.

    Found by searching bytes rather than by reading each entry: a libpython's .symtab has
    ~20,000 of them, which cost 20-90 ms to unpack in Python. Each place `name` ends a string
    may be its st_name (the linker merges a name into the tail of a longer one), and each entry
    naming that place starts with it, at a multiple of the entry's size."""
    key = name + b"\0"
    at = strings.find(key)
    while at > 0:
        needle = at.to_bytes(4, "little")
        pos = entries.find(needle)
        while pos >= 0:
            if pos % _SYMBOL.size == 0 and pos + _SYMBOL.size <= len(entries):
                _name, _info, _other, shndx, value, _size = _SYMBOL.unpack_from(entries, pos)
                if value and shndx:
                    return int(value)
            pos = entries.find(needle, pos + 1)
        at = strings.find(key, at + 1)
    return 0


def _read(f: BinaryIO, file_size: int, offset: int, size: int) -> bytes:
    if offset < 0 or size < 0 or offset + size > file_size:
        raise ValueError(f"{size:,} bytes at {offset:,} are past the end of the file ({file_size:,} bytes)")
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("the file is shorter than its headers say")
    return data


def _entries(f: BinaryIO, file_size: int, offset: int, count: int, entsize: int,
             shape: struct.Struct) -> list[tuple[int, ...]]:
    """`count` table entries of `shape` (each `entsize` bytes apart: a newer ELF may make them longer)."""
    if count == 0:
        return []
    if entsize < shape.size:
        raise ValueError(f"table entries of {entsize} bytes, fewer than {shape.size}")
    data = _read(f, file_size, offset, count * entsize)
    return [shape.unpack_from(data, i * entsize) for i in range(count)]


def _sections(f: BinaryIO, file_size: int, offset: int, count: int, entsize: int, names_at: int) -> list[Section]:
    if offset == 0:
        return []
    if count == 0 or names_at == _SHN_XINDEX:  # extended numbering: the real figures are in section 0
        first = _entries(f, file_size, offset, 1, entsize, _SECTION)[0]
        count = count or first[5]
        names_at = first[6] if names_at == _SHN_XINDEX else names_at
    if count > _MAX_SECTIONS:
        raise ValueError(f"{count:,} sections")
    raw = _entries(f, file_size, offset, count, entsize, _SECTION)
    names = b""
    if names_at < len(raw) and raw[names_at][1] != _SHT_NOBITS:
        names = _read(f, file_size, raw[names_at][4], raw[names_at][5])
    table = []
    for name_at, kind, _flags, addr, sh_offset, size, link, _info, _align, sh_entsize in raw:
        end = names.find(b"\0", name_at)
        name = names[name_at:end if end >= 0 else len(names)].decode("utf-8", "replace")
        table.append(Section(name, kind, addr, sh_offset, size, link, sh_entsize))
    return table
