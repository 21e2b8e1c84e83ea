"""`pytop --dump` and `pytop --dump --json` against real targets on every interpreter."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

import helpers

FRAME = {
    "type": "object",
    "required": ["function", "filename", "line"],
    "properties": {"function": {"type": "string"}, "filename": {"type": "string"}, "line": {"type": "integer"}},
}
DUMP_SCHEMA = {
    "type": "object",
    "required": ["pid", "python_version", "threads"],
    "properties": {
        "pid": {"type": "integer"},
        "python_version": {"type": "string", "pattern": r"^(2\.7|3\.\d+)\.\d+"},
        "threads": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["thread_id", "native_id", "name", "gil", "active", "frames"],
                "properties": {
                    "thread_id": {"type": "integer"},
                    "native_id": {"type": "integer"},
                    "name": {"type": ["string", "null"]},
                    "gil": {"type": "boolean"},
                    "active": {"type": "boolean"},
                    "frames": {"type": "array", "items": FRAME},
                },
            },
        },
    },
}


def check_sleepers(document: dict[str, Any], target: helpers.RunningTarget) -> dict[int, dict[str, Any]]:
    """A --dump --json document of stacks.py against what the target reported of itself: the
    main thread's and the sleeper's stacks, TIDs and names. Returns the threads by id."""
    jsonschema.validate(document, DUMP_SCHEMA)
    assert document["pid"] == target.pid
    assert document["python_version"] == ".".join(map(str, target.info["version"]))
    threads = {thread["thread_id"]: thread for thread in document["threads"]}
    for key in ("main", "sleeper"):
        expected = target.info["threads"][key]
        got = threads[expected["thread_id"]]
        assert got["frames"] == expected["frames"], key
        assert got["native_id"] == expected["native_id"]
        assert got["name"] == expected["name"]
    return threads


def test_dump_json(interp: dict[str, Any]) -> None:
    with helpers.running(interp, "stacks.py") as t:
        result = helpers.run_pytop("--dump", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    threads = check_sleepers(json.loads(result.stdout), t)
    for key in ("main", "sleeper"):
        got = threads[t.info["threads"][key]["thread_id"]]
        assert got["active"] is False and got["gil"] is False


def test_dump_text(interp: dict[str, Any]) -> None:
    with helpers.running(interp, "stacks.py") as t:
        result = helpers.run_pytop("--dump", str(t.pid))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Process {t.pid}: ")
    assert lines[1] == "Python v" + ".".join(map(str, t.info["version"]))
    main = t.info["threads"]["main"]
    header = f"Thread {main['thread_id']:#x} (TID {main['native_id']}) \"MainThread\""
    at = next(i for i, line in enumerate(lines) if line.startswith(header))
    assert "idle" in lines[at]
    for offset, frame in enumerate(main["frames"], start=1):
        assert lines[at + offset] == f"    {frame['function']} ({frame['filename']}:{frame['line']})"


def test_dump_locals(interp: dict[str, Any]) -> None:
    """--dump --locals: each frame's arguments (first, marked) and locals, with the reprs Python
    itself gives the values pytop shows whole; containers by their first items and size, long
    text and big ints by their size; a closure's cell by its contents (PyStack and py-spy show
    the same)."""
    with helpers.running(interp, "locals_target.py") as t:
        result = helpers.run_pytop("--dump", "--locals", "--json", str(t.pid))
        text = helpers.run_pytop("--dump", "--locals", str(t.pid))
    assert result.returncode == 0 and text.returncode == 0, result.stderr + text.stderr
    threads = {thread["thread_id"]: thread for thread in json.loads(result.stdout)["threads"]}

    def variables(key: str) -> dict[str, dict[str, Any]]:
        frame = threads[t.info["threads"][key]["thread_id"]]["frames"][0]
        return {v["name"]: v for v in frame["locals"]}

    waiter = variables("waiter")
    assert [[name, waiter[name]["value"]] for name, _ in t.info["expected"]["waiter"]] == t.info["expected"]["waiter"]
    assert [name for name, v in waiter.items() if v["argument"]] == ["cfg", "n", "rest", "options"]
    assert waiter["many"]["value"] == "[0, 1, 2, 3, 4, 5, 6, 7, ... (100 items)]"
    assert waiter["text"]["value"] == "'" + "z" * 100 + "...' (150 characters)"
    nested = variables("nested")
    assert nested["depth"] == {"name": "depth", "value": "2", "argument": True}
    assert nested["inner"]["value"] == "{'k': [1, <tuple of 2 items>], 'deep': {'a': <dict of 1 item>}}"
    assert re.fullmatch(r"<int of about 95\d digits>", nested["big"]["value"]), nested["big"]
    assert re.fullmatch(r"<function at 0x[0-9a-f]+>", nested["closure"]["value"]), nested["closure"]
    assert "        Arguments:\n          cfg: {'a': 1}\n          n: 5\n" in text.stdout
    assert "        Locals:\n          name: 'abc'\n" in text.stdout


def test_a_task_whose_waiter_was_not_read_says_so() -> None:
    """--dump --async under load: a task awaited by one that ended or moved while the tasks were
    read was printed as a root among the others, the tree partial without a word (1 in 10 on a
    loaded 3.14). The look reads the tasks again while one is so; a tree that keeps one marks it."""
    from pytop.core.records import AsyncTask, Frame, ProcessStacks
    from pytop.process.asyncio_tasks import orphans
    from pytop.report import dump as report_dump

    main = AsyncTask(1, "main", 7, 0, True, (Frame("main", "app.py", 3),), ())
    child = AsyncTask(2, "fetch", 7, 0, False, (Frame("fetch", "app.py", 9),), (1,))
    lost = AsyncTask(3, "parse", 7, 0, False, (Frame("parse", "app.py", 12),), (99,))  # its waiter: not read
    assert orphans([main, child]) == 0 and orphans([main, child, lost]) == 1
    text = report_dump.as_text(ProcessStacks(42, "python app.py", "3.14.0", False, (), tasks=(main, child, lost)))
    marked = [line for line in text.splitlines() if "parse" in line]
    assert marked and "awaited by a task not read" in marked[0], text
    assert not any("awaited by a task not read" in line for line in text.splitlines() if "fetch" in line or
                   "main" in line)
