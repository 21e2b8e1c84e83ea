"""The native core's layers, read from what the compiler made, not from a map kept by hand: each
C file is compiled on its own, and every symbol it needs from another file must be defined by a
file before it in native/build_ffi.py's SOURCES (the order the build and the reader share). A
call the other way round, or a file left out of SOURCES, fails here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import helpers

NATIVE = helpers.ROOT / "native"
sys.path.insert(0, str(NATIVE))
import build_ffi  # noqa: E402

pytestmark = [pytest.mark.process,  # the C compiler and nm
              pytest.mark.xdist_group("native-objects")]  # its tests share the compiled objects: one worker


def symbols(obj: Path, *options: str) -> set[str]:
    out = subprocess.run(["nm", "-g", "--format=posix", *options, str(obj)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or shutil.which("nm") is None:
        pytest.fail("a C compiler and nm are needed (Debian: apt install gcc binutils)")
    where = tmp_path_factory.mktemp("objects")
    made = {}
    for name in build_ffi.SOURCES:
        obj = where / (name + ".o")
        subprocess.run([compiler, "-c", "-std=gnu11", "-O0", "-I", str(NATIVE), str(NATIVE / name), "-o", str(obj)],
                       check=True, capture_output=True, text=True)
        made[name] = obj
    return made


def test_every_c_file_is_in_the_order() -> None:
    files = {path.name for path in NATIVE.glob("*.c")}
    assert files == set(build_ffi.SOURCES), (sorted(files - set(build_ffi.SOURCES)),
                                             sorted(set(build_ffi.SOURCES) - files))


def wrong_calls(objects: dict[str, Path], order: list[str]) -> list[str]:
    """Every call from a file to one after it in `order`, as text."""
    defined_in: dict[str, str] = {}
    for name, obj in objects.items():
        for symbol in symbols(obj, "--defined-only"):
            assert symbol not in defined_in, f"{symbol} is defined in {defined_in[symbol]} and {name}"
            defined_in[symbol] = name
    rank = {name: i for i, name in enumerate(order)}
    wrong = []
    for name, obj in objects.items():
        for symbol in sorted(symbols(obj, "--undefined-only")):
            owner = defined_in.get(symbol)  # None: libc, libdl, the compiler's runtime
            if owner is not None and rank[owner] > rank[name]:
                wrong.append(f"{name} calls {symbol} of {owner}, which comes after it")
    return wrong


def test_each_file_calls_only_the_files_before_it(objects: dict[str, Path]) -> None:
    wrong = wrong_calls(objects, build_ffi.SOURCES)
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_call_the_wrong_way(objects: dict[str, Path], tmp_path: Path) -> None:
    """A file first in the order that calls the engine is caught."""
    probe = tmp_path / "probe.c"
    probe.write_text('#include "internal.h"\nvoid probe(void) { pytop_engine_free(NULL); }\n')
    obj = tmp_path / "probe.o"
    subprocess.run(["cc", "-c", "-std=gnu11", "-I", str(NATIVE), str(probe), "-o", str(obj)], check=True)
    wrong = wrong_calls({"probe.c": obj, **objects}, ["probe.c", *build_ffi.SOURCES])
    assert "probe.c calls pytop_engine_free of engine.c, which comes after it" in wrong, wrong
