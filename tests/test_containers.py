"""Targets as containers run them (austin's test_attach_container_like): in a PID namespace of
their own, where threads have numbers of that namespace's, and with their executable and
libpython deleted after start (an image replaced under a running service)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import helpers
from conftest import available

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters

UNSHARE = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
# 2.7, 3.6 and 3.7 find a thread's TID in its struct pthread without knowing the main thread,
# 3.8 knowing it, 3.12 and 3.15 read it from the thread state.
NAMESPACED = ["pyenv-2.7", "pyenv-3.6", "pyenv-3.7", "pyenv-3.8", "pyenv-3.12", "sid-3.15-loader"]


def own_numbers(pid: int) -> dict[int, int]:
    """{the target's own number for a thread: ours}, from each task's NSpid line."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("NSpid:"):
                found[int(line.split()[-1])] = int(task.name)
    return found


def _namespaces_work() -> bool:
    try:
        return subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("name", NAMESPACED)
def test_a_target_in_a_pid_namespace_of_its_own(name: str) -> None:
    """Its thread states hold its own namespace's TIDs (1, 2, 3...): pytop shows each thread
    under the TID /proc here knows it by, with its OS state and its CPU time (they were all
    unknown, the CPU put on "(thread without Python)" rows)."""
    interp = available(name)
    if not _namespaces_work():
        pytest.skip("this machine cannot make PID namespaces (unshare --pid failed)")
    with helpers.running(interp, "stacks.py", wrapper=UNSHARE) as t:
        ours = own_numbers(t.pid)
        dump = helpers.run_pytop("--dump", "--json", str(t.pid))
        run = helpers.run_pytop("--batch", "--duration", "1", "--json", str(t.pid))
    assert dump.returncode == 0 and run.returncode == 0, dump.stderr + run.stderr
    assert set(ours) != set(ours.values())  # the target's numbers are not ours
    expected = {info["thread_id"]: ours[info["native_id"]] for info in t.info["threads"].values()}
    got = {thread["thread_id"]: thread["native_id"] for thread in json.loads(dump.stdout)["threads"]}
    assert got == expected
    document = json.loads(run.stdout)
    rows = {row["function"].rsplit(".", 1)[-1]: row for row in document["functions"]}
    assert rows["spinning"]["own_time"] > 0 and "(thread without Python)" not in rows, sorted(rows)
    spinner = next(th for th in document["per_thread"] if th["name"] == "spinner")
    assert spinner["native_id"] == ours[t.info["threads"]["spinner"]["native_id"]] and spinner["cpu_time"] > 0


@pytest.mark.parametrize("name", ["pyenv-3.8", "pyenv-3.12"])
def test_a_target_whose_executable_and_libpython_were_deleted(name: str, tmp_path: Path) -> None:
    """The files behind its maps are gone ("(deleted)"): their symbols are read through the
    process's own maps of them."""
    interp = available(name)
    prefix = Path(interp["argv"][0]).resolve().parent.parent
    library = next((prefix / "lib").glob("libpython3.*.so.1.0"))
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    shutil.copy2(interp["argv"][0], tmp_path / "bin" / "python")
    shutil.copy2(library, tmp_path / "lib" / library.name)
    copy = {**interp, "argv": [str(tmp_path / "bin" / "python")]}
    environment = {"PYTHONHOME": str(prefix), "LD_LIBRARY_PATH": str(tmp_path / "lib")}
    with helpers.running(copy, "stacks.py", env=environment) as t:
        shutil.rmtree(tmp_path / "bin")
        shutil.rmtree(tmp_path / "lib")
        maps = Path(f"/proc/{t.pid}/maps").read_text()
        assert f"{tmp_path}/lib/{library.name} (deleted)" in maps and f"{tmp_path}/bin/python (deleted)" in maps
        dump = helpers.run_pytop("--dump", "--json", str(t.pid))
    assert dump.returncode == 0, dump.stderr
    threads = {thread["thread_id"]: thread for thread in json.loads(dump.stdout)["threads"]}
    sleeper = t.info["threads"]["sleeper"]
    frames = [{k: f[k] for k in ("function", "filename", "line")} for f in threads[sleeper["thread_id"]]["frames"]]
    assert frames == sleeper["frames"]
