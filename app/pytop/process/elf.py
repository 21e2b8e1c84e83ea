"""What pytop needs from an ELF file at attach time: symbols, sections, load address, version.

pyelftools does the parsing. .dynsym is searched before .symtab: it is small, and stripped
binaries (Debian's /usr/bin/python3.X) keep it because extension modules link against it.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .. import files
from .procmaps import Mapping

PAGE = 4096
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size
# PY_VERSION as the end of a C string (the linker may merge it into the tail of a longer one,
# such as an install path ending in "/3.9.18").
_VERSION_STRING = re.compile(rb"(?<![0-9.])([23])\.(\d{1,2})\.(\d{1,3})(?:[abrc]{1,2}\d{1,2})?\+?\x00")


@dataclass
class ElfImage:
    path: str
    is_shared: bool
    loads: list[tuple[int, int]]  # (p_vaddr, p_offset) of PT_LOAD segments
    sections: dict[str, int] = field(default_factory=dict)  # name -> sh_addr
    _elf: ELFFile | None = None
    _file: object = None

    @classmethod
    def open(cls, path: str) -> ElfImage:
        try:
            f = files.open_regular(path)
        except OSError as exc:
            raise ValueError(f"{path} is not a readable ELF file: {exc.strerror}") from exc
        try:
            elf = ELFFile(f)
            loads = [(s["p_vaddr"], s["p_offset"]) for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            sections = {s.name: s["sh_addr"] for s in elf.iter_sections()}
        except (ELFError, OSError, ValueError) as exc:
            f.close()
            raise ValueError(f"{path} is not a readable ELF file: {exc}") from exc
        return cls(path, elf["e_type"] == "ET_DYN", loads, sections, elf, f)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()  # type: ignore[attr-defined]
            self._file = None

    def symbols(self, names: tuple[str, ...]) -> dict[str, int]:
        """Addresses (unrelocated) of those of `names` the file defines.

        The tables are scanned directly: pyelftools parses each of a libpython's ~20,000
        symbols into a Python object, which took seconds; a struct scan takes milliseconds."""
        found: dict[str, int] = {}
        assert self._elf is not None
        wanted = {name.encode() + b"\0": name for name in names}
        for table in (".dynsym", ".symtab"):
            section = self._elf.get_section_by_name(table)
            if section is None or section["sh_entsize"] != _SYMBOL.size:
                continue
            strings = self._elf.get_section(section["sh_link"]).data()
            for st_name, _info, _other, shndx, value, _size in _SYMBOL.iter_unpack(section.data()):
                if value and shndx and strings[st_name:st_name + 1] != b"\0":
                    for key, name in wanted.items():
                        if name not in found and strings.startswith(key, st_name):
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
        assert self._elf is not None
        section = self._elf.get_section_by_name(".rodata")
        if section is None:
            return None
        for match in _VERSION_STRING.finditer(section.data()):
            if int(match.group(1)) != major:
                continue
            found = (int(match.group(2)), int(match.group(3)))
            if found[0] == minor or (minor is None and 8 <= found[0] <= 10):
                return found
        return None
