"""`pytop --dump --core FILE`: the stacks of a process read from its core file, on every
supported interpreter, from cores the kernel wrote (a process killed by a signal) and cores
gdb's gcore wrote (a process left running); the stacks must be the ones the target reported
of itself before it was dumped. Bad cores give one clear line and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_dump import check_sleepers

import cores
import helpers
from conftest import available

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters


# gdb 13's gcore stops copying a mapping at its first unreadable page and leaves the rest of it
# zero; glibc 2.41+ (sid's) starts every thread stack with an unreadable guard region inside the
# stack's own mapping (MADV_GUARD_INSTALL), so gcore loses those threads' stacks. The kernel's
# cores of the same targets are read in full.
GCORE_LOSES_THREAD_STACKS = ("sid-",)


def _check_against_target(document: dict[str, Any], target: helpers.RunningTarget) -> None:
    threads = check_sleepers(document, target)
    spinner = threads[target.info["threads"]["spinner"]["thread_id"]]
    assert spinner["name"] == "spinner"
    assert spinner["frames"][0]["function"] == "Worker.spinning" or spinner["frames"][0]["function"] == "spinning"
    assert spinner["frames"][0]["line"] in target.info["spin_lines"]


@pytest.mark.parametrize("maker", ["kernel", "gcore"])
def test_dump_of_a_core_file(interp: dict[str, Any], maker: str, tmp_path: Path) -> None:
    if maker == "gcore" and interp["name"].startswith(GCORE_LOSES_THREAD_STACKS):
        pytest.skip("gcore loses the thread stacks of sid's glibc (see GCORE_LOSES_THREAD_STACKS)")
    with helpers.running(interp, "stacks.py", cwd=str(tmp_path)) as target:
        core = cores.kernel_core(target, interp, tmp_path) if maker == "kernel" else cores.gcore(target.pid, tmp_path)
    # A core of a process in a chroot written by the kernel names files as the process saw them.
    root = ["--sysroot", interp["root"]] if maker == "kernel" and interp["launch"] == "chroot" else []
    result = helpers.run_pytop("--dump", "--json", "--core", str(core), *root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    _check_against_target(document, target)
    assert document["core_file"] == str(core)
    tids = {t["native_id"] for t in document["threads"]}
    if maker == "kernel":
        assert document["core_signal"] == "SIGABRT" and document["core_signal_thread"] in tids
    else:
        assert document["core_signal"] is None

    text = helpers.run_pytop("--dump", "--core", str(core), *root)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"Process {target.pid}: " + document["command"]
    assert lines[1].startswith(f"From core file {core}")
    main = target.info["threads"]["main"]
    at = lines.index(next(line for line in lines if line.startswith(f"Thread {main['thread_id']:#x} ")))
    assert "idle" not in lines[at] and "active" not in lines[at]  # a core does not record it


@pytest.mark.parametrize("name", ["pyenv-2.7", "pyenv-3.8", "pyenv-3.12", "sid-3.15-loader"])
def test_locals_from_a_core_file(name: str, tmp_path: Path) -> None:
    """--dump --locals --core: the same arguments and locals as from the running process."""
    interp = available(name)
    with helpers.running(interp, "locals_target.py", cwd=str(tmp_path)) as target:
        live = helpers.run_pytop("--dump", "--locals", "--json", str(target.pid))
        core = cores.kernel_core(target, interp, tmp_path)
    result = helpers.run_pytop("--dump", "--locals", "--json", "--core", str(core))
    assert live.returncode == 0 and result.returncode == 0, live.stderr + result.stderr

    def waiter(document: str) -> list[dict[str, Any]]:
        threads = {t["thread_id"]: t for t in json.loads(document)["threads"]}
        return list(threads[target.info["threads"]["waiter"]["thread_id"]]["frames"][0]["locals"])

    assert waiter(result.stdout) == waiter(live.stdout)
    assert len(waiter(live.stdout)) >= 18  # (and on 2.7 the comprehension's k and v)


def test_a_core_of_a_program_that_is_not_python(tmp_path: Path) -> None:
    interp = {"launch": "direct", "root": "/"}
    proc = subprocess.Popen(["sleep", "600"], cwd=tmp_path)
    target = helpers.RunningTarget(proc.pid, {}, proc, "")  # type: ignore[arg-type]
    core = cores.kernel_core(target, interp, tmp_path)
    result = helpers.run_pytop("--dump", "--core", str(core))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "does not hold a Python process" in result.stderr


def test_files_that_are_no_core(tmp_path: Path) -> None:
    not_elf = tmp_path / "notes.txt"
    not_elf.write_text("hello\n")
    for path, says in ((not_elf, "is not a core file"), (Path("/bin/sh"), "is not a core file"),
                       (tmp_path / "missing", "cannot open the core file")):
        result = helpers.run_pytop("--dump", "--core", str(path))
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert says in result.stderr, result.stderr


def test_a_cut_off_core_reads_what_it_holds(tmp_path: Path) -> None:
    """A core cut short (a disk that filled up while the kernel wrote it): whatever is read gives
    a report or one clear line, never a traceback or a hang, whatever the cut; and either says
    it is truncated, with its size against what it needs (not the parser's "expected 4, found
    0")."""
    interp = next(iter(helpers.provision()[0].values()))
    with helpers.running(interp, "stacks.py", cwd=str(tmp_path)) as target:
        core = cores.gcore(target.pid, tmp_path)
    data = core.read_bytes()
    cut = tmp_path / "cut"
    for fraction in (0.001, 0.05, 0.3, 0.6, 0.9, 0.999):
        cut.write_bytes(data[:int(len(data) * fraction)])
        result = helpers.run_pytop("--dump", "--core", str(cut), timeout=60)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 0 or result.stderr.startswith("pytop: "), result.stderr
        said = result.stdout if result.returncode == 0 else result.stderr
        assert "truncated" in said and f"{len(cut.read_bytes()):,} bytes" in said, (fraction, said[:500])


def test_core_options_go_together() -> None:
    for args, says in ((["--core", "x"], "--core goes with --dump"),
                       (["--dump", "--executable", "x", "1"], "go with --core"),
                       (["--dump", "--core", "x", "1"], "give only one of"),
                       (["--dump", "--core", "x", "--blocking"], "--blocking is for a running process")):
        result = helpers.run_pytop(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert says in result.stderr, (args, result.stderr)


def test_executable_stands_in_for_a_moved_program(tmp_path: Path) -> None:
    """The program the core names has moved (a deploy replaced it): --executable says where it is.
    Without it, the mapped file is missing and pytop says what to do."""
    interp = helpers.provision()[0].get("debian-3.11")
    if interp is None:
        pytest.skip("Debian's python3.11 is not installed")
    moved = tmp_path / "bin" / "python3.11"
    moved.parent.mkdir()
    moved.write_bytes(Path(interp["argv"][0]).read_bytes())
    os.chmod(moved, 0o755)
    moved_interp = dict(interp, argv=[str(moved)])
    with helpers.running(moved_interp, "stacks.py", cwd=str(tmp_path)) as target:
        core = cores.gcore(target.pid, tmp_path)
    kept = tmp_path / "kept-python3.11"
    moved.rename(kept)
    result = helpers.run_pytop("--dump", "--core", str(core))
    assert result.returncode != 0 and "--executable" in result.stderr, result.stderr
    result = helpers.run_pytop("--dump", "--json", "--core", str(core), "--executable", str(kept))
    assert result.returncode == 0, result.stderr
    _check_against_target(json.loads(result.stdout), target)
