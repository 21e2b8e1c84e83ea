"""pytop's ELF reader (process/elf.py), which finds a runtime's symbols, sections and version at
attach time.

- Against pyelftools, an independent reader (pytop still uses it for cores), on the files every
  supported setup maps: its interpreter executable and libpython.
- On a file built here whose contents are known: a name merged into the tail of a longer one,
  an undefined symbol of the same name, a section numbering in section 0 (over 65,279 sections).
- On that file damaged at random and cut anywhere: a ValueError or an answer, nothing else (a
  target's files are its own to write, and a reader that raised a struct.error or IndexError
  ended pytop with a traceback).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers
from pytop.process.elf import ElfImage

# Every symbol pytop looks for (locate.py: the runtime, its version, 3.6's and 2.7's statics),
# and one it does not.
NAMES = ("_PyRuntime", "Py_Version", "Py_Initialize", "interp_head", "_PyThreadState_Current", "gil_locked",
         "gil_last_holder", "gil_switch_number", "collecting", "_PyGC_generation0")
SYMBOL = struct.Struct("<IBBHQQ")
OLD_VERSION_PATTERN = re.compile(rb"(?<![0-9.])([23])\.(\d{1,2})\.(\d{1,3})(?:[abrc]{1,2}\d{1,2})?\+?\x00")


# ---- a file built here ---------------------------------------------------------------------

def build_elf(*, extended: bool = False, shared: bool = True) -> bytes:
    """A small 64-bit ELF: a load segment, .dynsym/.dynstr, .symtab/.strtab, .rodata, .bss and
    .PyRuntime sections. "_PyRuntime" ends the string "Merged_PyRuntime" (a merged name);
    "Py_Version" is undefined in .dynsym and defined in .symtab."""
    dynstr = b"\0Merged_PyRuntime\0Py_Version\0"
    strtab = b"\0Py_Version\0Py_Initialize\0"
    merged_at = dynstr.index(b"_PyRuntime")
    dynsym = SYMBOL.pack(0, 0, 0, 0, 0, 0) + SYMBOL.pack(1, 0x11, 0, 7, 0x1000, 8) \
        + SYMBOL.pack(merged_at, 0x11, 0, 7, 0x5000, 64) + SYMBOL.pack(dynstr.index(b"Py_Version"), 0x11, 0, 0, 0, 0)
    symtab = SYMBOL.pack(0, 0, 0, 0, 0, 0) + SYMBOL.pack(strtab.index(b"Py_Version"), 0x11, 0, 4, 0x3000, 4) \
        + SYMBOL.pack(strtab.index(b"Py_Initialize"), 0x12, 0, 9, 0x4000, 16)
    rodata = b"x\0/usr/lib/python3.9.18\0" + b"13.9.1\0"
    shstrtab = b"\0.dynsym\0.dynstr\0.symtab\0.strtab\0.rodata\0.bss\0.PyRuntime\0.shstrtab\0"
    blobs = [(".dynsym", 11, dynsym, 2, 24), (".dynstr", 3, dynstr, 0, 0), (".symtab", 2, symtab, 4, 24),
             (".strtab", 3, strtab, 0, 0), (".rodata", 1, rodata, 0, 0), (".bss", 8, b"", 0, 0),
             (".PyRuntime", 1, b"\0" * 16, 0, 0), (".shstrtab", 3, shstrtab, 0, 0)]
    body = bytearray(b"\0" * 64)
    phoff = len(body)
    body += struct.pack("<IIQQQQQQ", 1, 5, 0, 0x0, 0x0, 0x100, 0x100, 0x1000)
    body += struct.pack("<IIQQQQQQ", 1, 6, 0x2000, 0x3000, 0x3000, 0x100, 0x100, 0x1000)
    headers = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, len(blobs) + 1 if extended else 0,
                           len(blobs) if extended else 0, 0, 0, 0)]
    for i, (name, kind, data, link, entsize) in enumerate(blobs):
        offset = len(body)
        body += data
        headers.append(struct.pack("<IIQQQQIIQQ", shstrtab.index(name.encode() + b"\0"), kind, 0,
                                   0x6000 + 0x100 * i, offset, len(data) if kind != 8 else 4096, link, 0, 8,
                                   entsize))
    shoff = len(body)
    body += b"".join(headers)
    count, names_at = (0, 0xFFFF) if extended else (len(headers), len(blobs))
    body[:64] = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\0" * 9, 3 if shared else 2, 62, 1,
                            0, phoff, shoff, 0, 64, 56, 2, 64, count, names_at)
    return bytes(body)


def open_bytes(tmp_path: Path, data: bytes, name: str = "lib.so") -> ElfImage:
    path = tmp_path / name
    path.write_bytes(data)
    return ElfImage.open(str(path))


@pytest.mark.parametrize("extended", [False, True], ids=["plain", "numbering-in-section-0"])
def test_a_built_file_reads_as_built(tmp_path: Path, extended: bool) -> None:
    image = open_bytes(tmp_path, build_elf(extended=extended))
    try:
        assert image.is_shared
        assert image.loads == [(0x0, 0x0), (0x3000, 0x2000)]
        assert image.sections[".PyRuntime"] == 0x6600 and image.sections[".bss"] == 0x6500
        assert image.symbols(NAMES) == {"_PyRuntime": 0x5000, "Py_Version": 0x3000, "Py_Initialize": 0x4000}
        assert image.symbols(("Merged_PyRuntime", "nowhere")) == {"Merged_PyRuntime": 0x1000}
        assert image.version_string(9) == (9, 18)  # not "13.9.1": a digit before it
        assert image.version_string() == (9, 18)
        assert image.version_string(8) is None and image.version_string(9, major=2) is None
        section = image.section(".bss")
        assert section is not None and image.data(section) == b""  # no room in the file
    finally:
        image.close()
    with pytest.raises(ValueError, match="not a readable ELF file"):
        open_bytes(tmp_path, b"\x7fELF\x01\x01" + build_elf()[6:])  # 32-bit: not a file pytop reads


def test_an_executable_has_no_load_bias(tmp_path: Path) -> None:
    image = open_bytes(tmp_path, build_elf(shared=False))
    assert not image.is_shared and image.load_bias([]) == 0
    image.close()


def answers_or_refuses(tmp_path: Path, data: bytes) -> None:
    try:
        image = open_bytes(tmp_path, data)
    except ValueError:
        return
    try:
        image.symbols(NAMES)
        image.version_string()
        image.version_string(9)
    finally:
        image.close()


HEADER_FIELDS = st.sampled_from([4, 5, 16, 32, 40, 54, 56, 58, 60, 62])  # class, data, type, offsets, sizes, counts


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(st.sampled_from(["file header", "section headers", "anywhere"]),
                                  st.integers(0, 4000), HEADER_FIELDS, st.integers(0, 255)),
                        min_size=1, max_size=12),
       extended=st.booleans())
def test_a_damaged_file_is_refused_or_read(tmp_path: Path, changes: list[tuple[str, int, int, int]],
                                           extended: bool) -> None:
    """Damage aimed at the file's header fields and its section headers half the time: a byte
    changed anywhere mostly lands in a table's data."""
    data = bytearray(build_elf(extended=extended))
    section_headers = int.from_bytes(data[40:48], "little")
    for where, at, field, value in changes:
        if where == "file header":
            at = field + at % 2
        elif where == "section headers":
            at = section_headers + at % (len(data) - section_headers)
        data[at % len(data)] = value
    answers_or_refuses(tmp_path, bytes(data))


def test_a_file_cut_anywhere_is_refused_or_read(tmp_path: Path) -> None:
    whole = build_elf()
    for size in range(len(whole)):
        answers_or_refuses(tmp_path, whole[:size])


# ---- the interpreters' own files, against pyelftools ----------------------------------------

def mapped_elf_files(pid: int) -> list[Path]:
    """The interpreter's executable and libpython a running target maps (as this process sees
    them: a chroot's, under its root)."""
    paths = {line.split(None, 5)[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
             if len(line.split(None, 5)) == 6}
    wanted = sorted(p for p in paths if re.search(r"/(lib)?python[0-9.]*[dm]*(\.so[0-9.]*)?$", p))
    return [Path(p) for p in wanted]


def pyelftools_view(path: Path) -> tuple[bool, list[tuple[int, int]], dict[str, int], dict[str, int], bytes]:
    """What pytop's reader should find, read by pyelftools (and the symbol scan it used to do)."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        loads = [(s["p_vaddr"], s["p_offset"]) for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        sections = {s.name: s["sh_addr"] for s in elf.iter_sections()}
        symbols: dict[str, int] = {}
        for table in (".dynsym", ".symtab"):
            section = elf.get_section_by_name(table)
            if section is None:
                continue
            strings = elf.get_section(section["sh_link"]).data()
            for st_name, _info, _other, shndx, value, _size in SYMBOL.iter_unpack(section.data()):
                end = strings.find(b"\0", st_name)
                name = strings[st_name:end].decode()
                if name in NAMES and value and shndx and name not in symbols:
                    symbols[name] = value
        rodata = elf.get_section_by_name(".rodata")
        return elf["e_type"] == "ET_DYN", loads, sections, symbols, rodata.data() if rodata else b""


def old_version_string(rodata: bytes, minor: int | None, major: int) -> tuple[int, int] | None:
    for match in OLD_VERSION_PATTERN.finditer(rodata):
        found = (int(match.group(2)), int(match.group(3)))
        if int(match.group(1)) == major and (found[0] == minor or (minor is None and 8 <= found[0] <= 10)):
            return found
    return None


def test_the_interpreters_files_read_as_pyelftools_reads_them(interp: dict[str, Any]) -> None:
    with helpers.running(interp, "stacks.py") as target:
        files = mapped_elf_files(target.pid)
        check_files(interp, files)


def check_files(interp: dict[str, Any], files: list[Path]) -> None:
    assert files, "no interpreter file mapped"
    major, minor = (int(part) for part in interp["version"].split("."))
    runtime_named = False
    for path in files:
        shared, loads, sections, symbols, rodata = pyelftools_view(path)
        image = ElfImage.open(str(path))
        try:
            assert (image.is_shared, image.loads, image.sections) == (shared, loads, sections), path
            assert image.symbols(NAMES) == symbols, path
            runtime_named = runtime_named or bool({"_PyRuntime", "interp_head"} & set(symbols))
            for asked in (minor, None):
                assert image.version_string(asked, major) == old_version_string(rodata, asked, major), (path, asked)
        finally:
            image.close()
    assert runtime_named, files  # the comparison saw the symbols pytop looks for
