"""The layout shows the design, and this test keeps it so: each part of the package imports only
the parts below it. Read from the source with `ast`, so it holds for imports inside functions too.

    core      pure figures and records: nothing else of pytop (no native code, no screen)
    native    the one FFI boundary: core only
    process   the process being read, or its core: finding its runtime, attaching, its layouts,
              reading its stacks and objects: native, core
    report    text, JSON and export formats: core only
    push      sending profiles on to a server (--push): report's encodings, core
    record    recordings (their container): core
    sampling  the sampling thread and snapshot publishing: native, core, and process's list
              of processes (what looks like Python); attaching, reading stacks now, writing
              exports and sending profiles on are handed to it (run.py wires them)
    ui        the Textual app: core, report, and process's list of processes for the picker
    (errors, the exceptions pytop raises, and files, how pytop writes a file: any part but core
    may import them)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import helpers

PACKAGE = helpers.ROOT / "app" / "pytop"
ALLOWED = {
    "core": {"core"},
    "native": {"native", "_native", "core", "errors"},
    "process": {"process", "native", "core", "errors", "files"},
    "report": {"report", "core", "errors", "files"},
    "push": {"push", "report", "core", "errors"},
    "record": {"record", "core", "errors", "files"},
    "sampling": {"sampling", "native", "process.pythons", "core", "errors", "files"},
    "ui": {"ui", "core", "report", "process.pythons", "errors", "files"},
}


def part_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def imported_parts(path: Path) -> set[str]:
    """pytop modules `path` imports, as dotted names below `pytop` ("core.model", "native")."""
    module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names = [".".join([*base, node.module]) if node.module else ".".join([*base, alias.name])
                         for alias in node.names]
            elif node.module and (node.module == "pytop" or node.module.startswith("pytop.")):
                names = [node.module.removeprefix("pytop").lstrip(".") or alias.name for alias in node.names]
            else:
                continue
            found.update(name for name in names if name)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("pytop.") for a in node.names if a.name.startswith("pytop."))
    return found


def allowed(importer: str, imported: str) -> bool:
    rules = ALLOWED[importer]
    return any(imported == rule or imported.startswith(rule + ".") for rule in rules) or imported == "__version__"


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if part_of(p) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_parts_import_only_what_they_may(path: Path) -> None:
    importer = part_of(path)
    wrong = sorted(name for name in imported_parts(path) if not allowed(importer, name))
    assert not wrong, f"{path.relative_to(PACKAGE)} ({importer}) imports {wrong}"


def test_the_rules_catch_a_bad_import(tmp_path: Path) -> None:
    """The parser sees relative imports of other parts, inside functions too."""
    ui = PACKAGE / "ui" / "screen.py"
    names = imported_parts(ui)
    assert "core.model" in names and ("report.format" in names or "report" in names), names
    fake = PACKAGE / "ui" / "_probe_for_test.py"
    try:
        fake.write_text("def f():\n    from ..native import Unwinder\n    from ..sampling import sampler\n")
        found = imported_parts(fake)
    finally:
        fake.unlink()
    assert {"native", "sampling"} <= {name.split(".")[0] for name in found}
    assert not allowed("ui", "native") and not allowed("core", "native") and not allowed("sampling", "ui")
