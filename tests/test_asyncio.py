"""asyncio tasks (CPython 3.14+): `--dump --async` against CPython's own `python -m asyncio
pstree` on the same target, from a running process and from a core file; `--async` in a run,
where each task's time must be its coroutine's; the offsets pytop keeps for asyncio's private
TaskObj against the `.AsyncioDebug` section each interpreter publishes; a clear error before
3.14."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

import cores
import helpers
from conftest import interpreters
from pytop.core import commands
from pytop.process.layouts import ASYNCIO_TASK, layout_for

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters

ASYNC = ["sid-3.14-loader", "sid-3.14-chroot", "sid-3.15-loader", "sid-3.15-chroot"]
TREE_CHARS = "│├└─ "


def _async_interp(name: str) -> dict[str, Any]:
    found, complaints = interpreters()
    if name not in found:
        if helpers.IN_CI:
            pytest.fail(f"{name} missing: {complaints}")
        pytest.skip(f"{name} is not provisioned")
    return found[name]


def cpython_pstree(interp: dict[str, Any], pid: int) -> dict[str, list[str]]:
    """CPython's own view of the target's tasks: task name -> its coroutines, outermost first,
    as "function file:line" (python -m asyncio pstree, run by the target's Python version; for
    a chroot's target from outside it, where /proc is)."""
    reader = _async_interp(interp["name"].replace("-chroot", "-loader"))
    result = subprocess.run([*reader["argv"], "-m", "asyncio", "pstree", str(pid)], capture_output=True,
                            text=True, timeout=60, env=helpers.target_env())
    assert result.returncode == 0, result.stderr
    chains: dict[str, list[str]] = {}
    current = None
    for line in result.stdout.splitlines():
        text = line.lstrip(TREE_CHARS)
        if text.startswith("(T) "):
            current = text[4:].strip()
            chains[current] = []
        elif text.strip() and current is not None:
            chains[current].append(" ".join(text.split()))
    return chains


def ours(document: dict[str, Any]) -> dict[str, list[str]]:
    """The same from pytop's JSON."""
    def where(frame: dict[str, Any]) -> str:
        return f"{frame['function']} {frame['filename']}:{frame['line']}"

    return {task["name"]: [where(f) for f in reversed(task["coroutines"])] for task in document["tasks"]}


def _parents(document: dict[str, Any]) -> dict[str, set[str]]:
    names = {task["address"]: task["name"] for task in document["tasks"]}
    return {task["name"]: {names[a] for a in task["awaited_by"] if a in names} for task in document["tasks"]}


def _check_graph(document: dict[str, Any]) -> None:
    parents = _parents(document)
    assert parents["crunch"] == parents["parent"] == {"Task-1"}, parents
    assert parents["child-1"] == parents["child-2"] == {"parent"}, parents
    assert parents["Task-1"] == set()
    running = [task["name"] for task in document["tasks"] if task["running"]]
    assert running in ([], ["crunch"]), running  # crunch runs most of the time, yields now and then


@pytest.mark.parametrize("name", ASYNC)
def test_dump_async_agrees_with_cpythons_pstree(name: str) -> None:
    interp = _async_interp(name)
    with helpers.running(interp, "async_tasks.py") as target:
        expected = cpython_pstree(interp, target.pid)
        result = helpers.run_pytop("--dump", "--async", "--json", str(target.pid))
        text = helpers.run_pytop("--dump", "--async", str(target.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    got = ours(document)
    assert set(got) == set(expected) >= set(target.info["tasks"]), (got, expected)
    for task, chain in expected.items():
        if task != "crunch":  # it runs: its line moves between the two looks
            assert got[task] == chain, task
    _check_graph(document)
    assert text.returncode == 0, text.stderr
    assert re.search(r"^Asyncio tasks: 7, [01] running$", text.stdout, re.M), text.stdout
    child = r"^    │   ├── child-1: child \(.*async_tasks.py:\d+\) > Event.wait"
    assert re.search(child, text.stdout, re.M), text.stdout


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-chroot"])
def test_every_interpreters_tasks_are_listed(name: str) -> None:
    """A loop in a subinterpreter as well as in the main one: --dump --async lists the tasks of
    both, each with its interpreter, a tree per interpreter; --async in a run shows the
    subinterpreter's running task. (The subinterpreter, created last, heads the runtime's list
    of interpreters: a reader of the head alone sees its tasks only.)"""
    interp = _async_interp(name)
    with helpers.running(interp, "subinterpreter_tasks.py") as target:
        result = helpers.run_pytop("--dump", "--async", "--json", str(target.pid))
        text = helpers.run_pytop("--dump", "--async", str(target.pid))
        run = helpers.run_pytop("--batch", "--async", "--json", "--duration", "1", str(target.pid))
    assert result.returncode == 0 and text.returncode == 0 and run.returncode == 0, result.stderr + text.stderr
    sub = target.info["sub_interpreter"]
    document = json.loads(result.stdout)
    names = sorted(t["name"] for t in document["tasks"])
    assert names == sorted(["Task-1", "Task-1", *target.info["main"], *target.info["sub"]]), names
    found: dict[int, set[str]] = {}
    for task in document["tasks"]:
        found.setdefault(task["interpreter_id"], set()).add(task["name"])
    assert found == {0: {"Task-1", *target.info["main"]}, sub: {"Task-1", *target.info["sub"]}}, found
    parents = {t["name"]: t for t in document["tasks"] if t["interpreter_id"] == sub}
    assert parents["sub-waiter"]["awaited_by"] == [parents["Task-1"]["address"]]
    assert re.search(r"^Interpreter 0: 3 tasks, 0 running$", text.stdout, re.M), text.stdout
    sub_tree = rf"^Interpreter {sub}: 3 tasks, [01] running\n└── Task-1: sub_main"
    assert re.search(sub_tree, text.stdout, re.M), text.stdout
    # named from the main interpreter's threading, which started it (the subinterpreter's own
    # knows it only as a "Dummy-1")
    assert re.search(rf'^Thread .*"sub-loop" in interpreter {sub}: ', text.stdout, re.M), text.stdout
    rows = {r["function"]: r for r in json.loads(run.stdout)["functions"]}
    assert rows.get("task sub-crunch", {}).get("total", 0) > 0, sorted(rows)


@pytest.mark.parametrize("name, factory", [("sid-3.14-loader", "plain"), ("sid-3.15-loader", "plain"),
                                           ("sid-3.15-loader", "eager")])
def test_task_graphs_of_cpythons_own_tests(name: str, factory: str) -> None:
    """The graphs of CPython's test_external_inspection, with its default and its eager task
    factory: a task awaited by three (a TaskGroup's and two that await it), a recursive
    coroutine, a task stepping an async generator (its chain goes on through the generator's
    frame, as CPython's pstree shows it), a name over 255 characters (cut there), and a loop in
    a thread of its own (its task is that thread's). Chains agree with CPython's pstree (whose 3.14
    misses the tasks of the loop in a thread)."""
    interp = _async_interp(name)
    with helpers.running(interp, "async_graph.py", *([factory] if factory == "eager" else [])) as target:
        expected = cpython_pstree(interp, target.pid)
        result = helpers.run_pytop("--dump", "--async", "--json", str(target.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    got = ours(document)
    # 3.14's pstree leaves out the tasks of a loop in a thread other than the main one
    assert {task: got.get(task) for task in expected} == expected
    assert set(got) - set(expected) <= {"worker task", "Task-1"}, set(got) - set(expected)
    main = next(task["name"] for task in document["tasks"] if task["coroutines"][-1]["function"] == "main")
    long_name = target.info["long_name"][:255]
    parents = _parents(document)
    assert parents["c2_root"] == {main, "sub_main_1", "sub_main_2"}, parents
    for task in ("sub_main_1", "sub_main_2", "recursive", "agen", long_name):
        assert parents[task] == {main}, (task, parents)
    assert [c.split()[0] for c in got["recursive"]][:4] == ["rec"] * 4
    assert [c.split()[0] for c in got["agen"]][:3] == ["agen", "gen", "gen_nested_call"]
    worker = next(task for task in document["tasks"] if task["name"] == "worker task")
    assert worker["thread"] == target.info["worker"]["native_id"]


def test_structures_deeper_than_the_bounds() -> None:
    """CPython's TestFrameChainLimits: a coroutine awaiting itself 1,538 deep is followed to
    its innermost await (the run of one link shown once, with its count); 16,385 tasks each
    awaiting the next are all listed, and the text tree stops at its depth saying how many it
    leaves out (it called that a cycle)."""
    interp = _async_interp("sid-3.15-loader")
    with helpers.running(interp, "deep_tasks.py") as target:
        result = helpers.run_pytop("--dump", "--async", "--json", str(target.pid))
        text = helpers.run_pytop("--dump", "--async", str(target.pid))
    assert result.returncode == 0 and text.returncode == 0, result.stderr + text.stderr
    tasks = json.loads(result.stdout)["tasks"]
    assert len(tasks) == target.info["tasks"] + 2  # and main's, and the recursive one's
    nested = next(task for task in tasks if task["name"] == "nested")
    assert [f["function"] for f in nested["coroutines"]] == ["Event.wait"] + ["nested"] * (target.info["depth"] + 1)
    assert not nested["coroutines_cut"]
    assert "nested (" in text.stdout and f") ×{target.info['depth']:,} > nested (" in text.stdout
    assert re.search(r"└── \.\.\. \([\d,]+ more tasks awaited below: the tree stops at 64 levels", text.stdout)
    assert "a cycle" not in text.stdout


def test_dump_async_of_a_core_file(tmp_path: Path) -> None:
    interp = _async_interp("sid-3.15-loader")
    with helpers.running(interp, "async_tasks.py", cwd=str(tmp_path)) as target:
        core = cores.kernel_core(target, interp, tmp_path)
    result = helpers.run_pytop("--dump", "--async", "--json", "--core", str(core))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert {t["name"] for t in document["tasks"]} >= set(target.info["tasks"])
    _check_graph(document)
    child = next(t for t in document["tasks"] if t["name"] == "child-1")
    assert [f["function"] for f in child["coroutines"]] == ["Event.wait", "child"]


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-chroot"])
def test_a_run_shows_each_task_with_its_coroutines_time(name: str) -> None:
    """--async: a row "task crunch" whose total is crunch()'s total (every sample in crunch
    runs under that task, and no other), and none without --async."""
    interp = _async_interp(name)
    with helpers.running(interp, "async_tasks.py") as target:
        shown = helpers.run_pytop("--batch", "--async", "--json", "--duration", "2", str(target.pid))
        hidden = helpers.run_pytop("--batch", "--json", "--duration", "1", str(target.pid))
    assert shown.returncode == 0 and hidden.returncode == 0, shown.stderr + hidden.stderr
    rows = {r["function"]: r for r in json.loads(shown.stdout)["functions"]}
    task, coroutine = rows["task crunch"], rows["crunch"]
    assert task["filename"] == "<asyncio task>"
    assert task["total"] == coroutine["total"] > 0
    assert task["total_time"] == pytest.approx(coroutine["total_time"], abs=0.002)
    assert rows["crunch_numbers"]["total"] <= task["total"]
    assert not any(f["filename"] == "<asyncio task>" for f in json.loads(hidden.stdout)["functions"])


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-loader"])
def test_task_offsets_are_the_ones_the_interpreter_publishes(name: str) -> None:
    """TaskObj is private to _asynciomodule.c: pytop keeps its offsets as data. Each 3.14+
    build says where they are in its `.AsyncioDebug` section (in the _asyncio extension when
    it is one, else in the interpreter); so do the thread and interpreter state fields."""
    interp = _async_interp(name)
    root = Path(interp["argv"][-1]).parent.parent.parent  # .../root/usr/bin/python3.X -> .../root
    version = tuple(int(p) for p in interp["version"].split("."))
    # This build's own extension (the debug build's, `cpython-314d-...`, sits beside it).
    abi = "cpython-" + interp["version"].replace(".", "") + "-"
    candidates = [Path(interp["argv"][-1]),
                  *root.glob(f"usr/lib/python{interp['version']}/lib-dynload/_asyncio.{abi}*.so")]
    for path in candidates:
        with open(path, "rb") as f:
            section = ELFFile(f).get_section_by_name(".AsyncioDebug")
            if section is not None:
                data = section.data()
                break
    else:
        pytest.fail(f"no .AsyncioDebug section in {candidates}")
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, 13 * 8, 8)]
    names = ["task_size", "task_name", "task_awaited_by", "task_is_task", "task_awaited_by_is_set", "task_coro",
             "task_node", "is_size", "is_asyncio_tasks_head", "ts_size", "ts_asyncio_running_loop",
             "ts_asyncio_running_task", "ts_asyncio_tasks_head"]
    published = dict(zip(names, words))
    layout = layout_for(version, interp["version"], 0)  # type: ignore[arg-type]
    for field in ASYNCIO_TASK[version]:  # type: ignore[index]
        assert layout[field] == published[field], field
    for field in ("is_asyncio_tasks_head", "ts_asyncio_running_loop", "ts_asyncio_running_task",
                  "ts_asyncio_tasks_head"):
        assert layout[field] == published[field], field


def test_async_before_314_says_so() -> None:
    interp = _async_interp("pyenv-3.12")
    with helpers.running(interp, "stacks.py") as target:
        dump = helpers.run_pytop("--dump", "--async", str(target.pid))
        run = helpers.run_pytop("--batch", "--async", "--duration", "1", str(target.pid))
    for result in (dump, run):
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert "--async needs CPython 3.14 or newer" in result.stderr, result.stderr


def test_the_a_key_shows_and_hides_tasks_with_their_history() -> None:
    """Tasks are recorded from the start whatever the view: shown later, "task crunch" has all
    of crunch()'s time since the start; hidden again, no task row is left."""
    from test_sampler import Collected, functions, wait_for

    from pytop.process.attach import attach
    from pytop.run import info_of
    from pytop.sampling.sampler import Sampler, Settings

    interp = _async_interp("sid-3.15-loader")
    with helpers.running(interp, "async_tasks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=500, delay=0.3))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 500)
            before = got.last
            sampler.send(commands.ShowTasks(True))
            shown = wait_for(got, lambda s: "task crunch" in functions(s))
            sampler.send(commands.ShowTasks(False))
            hidden = wait_for(got, lambda s: s is not shown and "task crunch" not in functions(s))
        target.close()
    assert "task crunch" not in functions(before)
    rows = functions(shown)
    assert rows["task crunch"].total_count == rows["crunch"].total_count > before.samples // 4
    assert not any(row.filename == "<asyncio task>" for row in hidden.rows)


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-chroot"])
def test_unnamed_tasks_are_told_by_their_coroutine(name: str) -> None:
    """A server's tasks have no names: --async shows the coroutine each one was started with,
    not one "(unnamed task)" for all of them."""
    interp = _async_interp(name)
    with helpers.running(interp, "unnamed_tasks.py") as target:
        shown = helpers.run_pytop("--batch", "--async", "--json", "--duration", "2", str(target.pid))
    assert shown.returncode == 0, shown.stderr
    rows = {r["function"]: r for r in json.loads(shown.stdout)["functions"]}
    assert rows.get("task (unnamed) handle_request", {}).get("total", 0) > 0, sorted(rows)
    assert "task (unnamed task)" not in rows, sorted(rows)


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-chroot"])
def test_a_task_whose_chain_moves_is_never_lost(name: str) -> None:
    """A task resumed every few microseconds (hop > climb > descend > sleep(0)) is caught mid-move
    by many reads; each read still lists it, with a chain the task really had (outermost first,
    a prefix of its await path), read again until whole or marked torn. (A read that met a stale
    pointer on a resuming coroutine's stack used to drop the task: 18% of reads.)"""
    from pytop.process.asyncio_tasks import TaskReader
    from pytop.process.attach import attach
    from pytop.process.memory import LiveProcess

    interp = _async_interp(name)
    path = ["hop", "climb", "descend", "sleep"]
    seen_chains: set[tuple[str, ...]] = set()
    with helpers.running(interp, "async_hopper.py") as t:
        target = attach(t.pid)
        reader = TaskReader(LiveProcess(t.pid), target.layout, target.unwinder)
        for _ in range(400):
            tasks = {task.name: task for task in reader.read(target.runtime.runtime_address)}
            assert set(tasks) == {"Task-1", *t.info["tasks"]}, sorted(tasks)
            chain = tuple(frame.function for frame in reversed(tasks["hopper"].coroutines))
            assert chain and chain == tuple(path[:len(chain)]), chain
            seen_chains.add(chain)
        target.close()
    assert len(seen_chains) > 1, seen_chains  # it did move under the reads
