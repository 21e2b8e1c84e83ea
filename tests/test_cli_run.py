"""The command line's ways to run: --batch (text and JSON), launching a command, the demo,
and the live view's refusal to start without a terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import jsonschema
import psutil
import pytest

import helpers
import profile_proto
from conftest import available

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters

BATCH_SCHEMA = {
    "type": "object",
    "required": ["samples", "errors", "duration", "gil_pct", "active_pct", "functions"],
    "properties": {
        "samples": {"type": "integer", "minimum": 1},
        "errors": {"type": "integer", "minimum": 0},
        "duration": {"type": "number"},
        "gil_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "active_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "functions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["function", "filename", "pid", "own", "total", "own_time", "total_time"],
                "properties": {
                    "function": {"type": "string"}, "filename": {"type": "string"}, "pid": {"type": "integer"},
                    "line": {"type": "integer"}, "own": {"type": "integer"}, "total": {"type": "integer"},
                    "own_time": {"type": "number"}, "total_time": {"type": "number"},
                },
            },
        },
    },
}


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["function"]: f for f in document["functions"]}


def test_batch_json(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--duration", "1.5", "--rate", "200", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, BATCH_SCHEMA)
    # Every slot of the schedule is taken or skipped (a busy machine skips, it never makes up):
    # that count follows the time, whatever the load; the samples alone do not.
    assert 200 <= document["samples"] + document["skipped"] <= 400, (document["samples"], document["skipped"])
    # Never more than the rate asked, over the span actually sampled (a stop that a busy machine
    # delays a few milliseconds past 1.5 s samples on in the meantime, at the same rate).
    span = document["sampled_until"] - document["sampled_from"]
    assert 0 < document["samples"] <= span * 200 * 1.001 + 1, (document["samples"], span)
    assert 0 <= document["longest_delay_ms"] < 1500
    functions = by_name(document)
    spinning = functions.get("Worker.spinning") or functions["spinning"]
    assert spinning["own"] > document["samples"] * 0.5
    # Its time is the spinner thread's CPU time as the kernel counts it (however busy the machine).
    spinner = next(thread for thread in document["per_thread"] if thread["name"] == "spinner")
    assert spinner["cpu_time"] > 0.1 and spinning["own_time"] == pytest.approx(spinner["cpu_time"], rel=0.1)
    assert "line" not in spinning
    assert "level_two" not in functions  # asleep: left out without --idle
    # No thread ended: no row for threads that ended between samples (a running thread's count
    # lagging the process clock by a tick made one, with a few ms).
    assert document["unseen_cpu_time"] == 0, document["per_thread"]
    assert all(thread["name"] != "threads that ended between samples" for thread in document["per_thread"])


def test_a_running_pool_read_whole_at_first_has_no_ended_threads(target_interp: dict[str, Any]) -> None:
    """A thousand threads, attached while they run (not frozen, as in test_truth): the first read
    names every one of them and takes a good part of a second, and each thread's count is first
    read somewhere inside it. What they used before their own first reads was in the process
    clock and in no thread's count, and showed as a row of threads that ended between samples
    (0.14 s of a 6 s run, 2.4%), though none ended."""
    with helpers.running(target_interp, "bursty_pool.py", "1000", "2") as t:
        result = helpers.run_pytop("--batch", "--duration", "3", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["threads"] == 1001
    assert document["unseen_cpu_time"] == 0, document["unseen_cpu_time"]
    assert all(thread["name"] != "threads that ended between samples" for thread in document["per_thread"])


def test_a_running_pool_on_a_saturated_machine_is_counted_within_its_cpu(target_interp: dict[str, Any]) -> None:
    """The same pool with every core busy besides: a close reads a thousand threads' counts over
    a second or more, each after the process clock the period ends at, so the counts lead the
    clock by what the threads used meanwhile. The lead was carried at most a second, and the
    clock catching up showed as threads that ended between samples (0.28-0.50 s, one run in
    six); at the run's last close nothing took it back, and the figures summed to more than the
    process used (5.74 s against 4.56 s). Both are within the process's CPU now."""
    import kernel

    with helpers.running(target_interp, "bursty_pool.py", "1000", "2") as t, kernel.saturated():
        before = kernel.process_cpu(t.pid)
        result = helpers.run_pytop("--batch", "--duration", "3", "--json", str(t.pid))
        used = kernel.process_cpu(t.pid) - before
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["unseen_cpu_time"] == 0, document["unseen_cpu_time"]
    figures, cpu = document["attributed_time"], document["cpu_time"]
    assert figures <= cpu + 0.02, (figures, cpu)
    assert document["cpu_time"] <= used, (document["cpu_time"], used)  # within pytop's whole run


def test_batch_text_by_line_with_idle_threads(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--duration", "1", "--idle", "--by-line", "--sort", "total", str(t.pid))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"pytop: pid {t.pid}, ")
    assert lines[2].startswith("Mode: wall, GIL: ")
    main = t.info["threads"]["main"]["frames"][0]
    assert any("level_two (" in line and f"stacks.py:{main['line']})" in line for line in lines)


def test_launching_a_command_and_ending_it(some_interp: dict[str, Any]) -> None:
    """Ended (Ctrl-C) once the program is at work (its ready line, on pytop's stderr) and pytop
    samples it, not after a time: on a busy machine a one-second run saw only its imports."""
    script = helpers.stage(some_interp, "stacks.py")
    # (without a CPU budget: the rate held stays the 1,000/s asked, so that each sleep of the
    # sampling thread that sampled_for_a_while counts is a sample; see there)
    with subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", "inf", "--cpu-budget", "0", "--json", "--",
                           *some_interp["argv"], script], cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as pytop:
        try:
            assert pytop.stderr is not None
            said = [pytop.stderr.readline()]
            while said[-1] and not said[-1].startswith("{"):  # the program's ready line
                said.append(pytop.stderr.readline())
            assert said[-1], said
            helpers.sampled_for_a_while(pytop.pid)  # (a clean-clone CI run's SIGINT came after the first read alone)
            pytop.send_signal(signal.SIGINT)
            out, err = pytop.communicate(timeout=120)
        finally:
            if pytop.poll() is None:
                pytop.kill()
    assert pytop.returncode == 0, err
    document = json.loads(out)
    assert set(by_name(document)) & {"Worker.spinning", "spinning"}
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{document['pid']}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{document['pid']}"), "pytop left its child running"


@pytest.mark.parametrize("status, expected", [(3, 3), (-9, 128 + 9)], ids=["exit-3", "killed"])
def test_a_started_programs_exit_status_is_pytops(some_interp: dict[str, Any], status: int, expected: int) -> None:
    script = helpers.stage(some_interp, "exiting.py")
    result = helpers.run_pytop("--batch", "--duration", "60", "--json", "--", *some_interp["argv"], script, "1",
                               str(status), cwd="/")
    assert result.returncode == expected, result.stderr
    document = json.loads(result.stdout)
    assert document["exited"] and document["exit_status"] == status
    assert "churn" in by_name(document)
    text = helpers.run_pytop("--batch", "--duration", "60", "--", *some_interp["argv"], script, "0.5", str(status),
                             cwd="/")
    assert text.returncode == expected
    how = "exited with status 3" if status == 3 else "was killed by SIGKILL"
    assert f"The process {how} during the run." in text.stdout


def test_demo_in_batch() -> None:
    result = helpers.run_pytop("--demo", "--batch", "--duration", "2", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert {"is_prime", "handle_request"} <= set(by_name(document))
    assert document["threads"] == 6


def test_launching_something_that_is_not_python() -> None:
    result = helpers.run_pytop("--batch", "--duration", "1", "--", "sleep", "30", timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "does not look like a Python process" in result.stderr


def test_live_view_needs_a_terminal() -> None:
    result = helpers.run_pytop("1", stdin=open(os.devnull))
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr and "--batch" in result.stderr


def test_no_target_given() -> None:
    result = helpers.run_pytop()
    assert result.returncode == 2
    assert "which process?" in result.stderr


def test_batch_writes_collapsed_and_speedscope_files(some_interp: dict[str, Any], tmp_path: Any) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        for form in ("collapsed", "speedscope", "json"):
            out = tmp_path / f"report.{form}"
            result = helpers.run_pytop("--batch", "--duration", "1", "--format", form, "--output", str(out), str(t.pid))
            assert result.returncode == 0, result.stderr
            assert result.stdout == "" and f"wrote {out}" in result.stderr
    lines = (tmp_path / "report.collapsed").read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert json.loads((tmp_path / "report.speedscope").read_text())["profiles"]
    document = json.loads((tmp_path / "report.json").read_text())
    assert {t["name"] for t in document["per_thread"]} == {"MainThread", "sleeper", "spinner"}


def test_batch_options_that_do_not_go_together() -> None:
    result = helpers.run_pytop("--format", "collapsed", "1")
    assert result.returncode == 2 and "go with --batch" in result.stderr
    result = helpers.run_pytop("--batch", "--json", "--format", "collapsed", "1")
    assert result.returncode == 2 and "disagree" in result.stderr


def test_a_started_programs_log_is_kept_only_when_it_holds_something(tmp_path: Any) -> None:
    from pytop.process.launch import Child

    silent = Child(["true"], quiet=True)
    assert silent.status(wait=10) == 0 and silent.log_path is not None
    assert silent.finish_log() is None and not os.path.exists(silent.log_path)
    chosen = tmp_path / "out.log"
    talking = Child([sys.executable, "-c", "print('hello'); raise SystemExit(4)"], quiet=True, log=str(chosen))
    assert talking.status(wait=10) == 4
    assert talking.finish_log() == str(chosen) and chosen.read_text() == "hello\n"


def test_batch_pprof(some_interp: dict[str, Any], tmp_path: Any) -> None:
    out = tmp_path / "profile.pb.gz"
    began = time.time_ns()
    with helpers.running(some_interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--duration", "1.5", "--rate", "200", "--format", "pprof", "--output",
                                   str(out), str(t.pid))
    assert result.returncode == 0, result.stderr
    p = profile_proto.read(out.read_bytes())
    assert p.strings[0] == "" and p.sample_types == [("samples", "count"), ("cpu", "nanoseconds")]
    assert p.period_type == ("cpu", "nanoseconds") and p.period == 5_000_000
    assert began <= p.time_nanos <= time.time_ns() and 1.4e9 <= p.duration_nanos <= 3e9
    assert p.comments and p.comments[0].startswith(f"pytop: pid {t.pid}")
    spinner = [(frames, values) for frames, values, labels in p.samples if labels.get("thread_name") == "spinner"]
    assert spinner and all(labels["pid"] == t.pid for _, _, labels in p.samples)
    frames, values = max(spinner, key=lambda item: item[1][1])
    assert frames[0][0] in ("Worker.spinning", "spinning") and frames[0][1].endswith("stacks.py")
    assert frames[-1][0] in ("Thread._bootstrap", "_bootstrap")  # innermost first, the thread's start last
    assert values[0] > 100 and values[1] > 0.1e9  # samples, and CPU nanoseconds
    assert all(labels.get("thread_id") for _, _, labels in p.samples if labels.get("thread_name"))


def descendants_of(pid: int) -> set[int]:
    """Every process whose ancestry, read from /proc, leads to `pid` (orphans are re-parented to
    1 and so are not: see survivors)."""
    found, parents = set(), {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in found]
        found.update(children)
        frontier.extend(children)
    return found


def survivors(marker: str) -> list[int]:
    """Processes still running whose command line holds `marker`."""
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        with open(f"/proc/{entry}/stat") as s:
                            if s.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                                alive.append(int(entry))
            except OSError:
                continue
    return alive


def wait_gone(marker: str, timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return survivors(marker)


def test_a_started_programs_children_end_with_the_run(tmp_path: Any) -> None:
    """-s --batch on a parent that starts children which would outlive it (they do not watch
    for their parent): when the run ends, the whole family does."""
    interp = helpers.provision()[0].get("pyenv-3.12") or next(iter(helpers.provision()[0].values()))
    if interp["launch"] == "chroot":
        pytest.skip("the family runs outside any chroot")
    marker = f"family-{tmp_path.name}"
    script = tmp_path / "family.py"
    script.write_text("import subprocess, sys, time\n"
                      f"children = [subprocess.Popen(['sh', '-c', 'sleep 600; echo {marker}']) for _ in range(2)]\n"
                      "time.sleep(600)\n")
    result = helpers.run_pytop("-s", "--batch", "--duration", "2", "--", *interp["argv"], str(script), cwd="/")
    assert result.returncode == 0, result.stderr
    assert wait_gone(marker) == [], "pytop left part of the program running"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_start_up_ends_the_started_program(sig: str) -> None:
    """pytop waits for Python in the program it started (here a shell that never starts it); a
    signal then ends pytop the normal way, and the program (the shell and its sleep) with it."""
    import signal
    import subprocess

    pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--", "sh", "-c", "sleep 30; sleep 30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    family: set[int] = set()
    while len(family) < 2 and time.monotonic() < deadline:  # the shell, and its sleep
        time.sleep(0.05)
        family = descendants_of(pytop.pid)
    assert len(family) >= 2, "the program never started"
    pytop.send_signal(getattr(signal, sig))
    _, err = pytop.communicate(timeout=60)
    assert pytop.returncode == 128 + getattr(signal, sig), err
    assert "Traceback" not in err and f"ended by {sig}" in err
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in family) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in family), "the started program outlived pytop"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_signal_while_sampling_still_writes_the_report(some_interp: dict[str, Any], sig: str) -> None:
    """`--batch --duration inf` ends at Ctrl-C, which a script's background job ignores (the
    shell starts it so): SIGTERM or SIGHUP was its only way to end, and it wrote nothing. Now
    the report of what was sampled is written, then pytop ends as the signal asks (128 + N)."""
    import signal
    import subprocess

    with helpers.running(some_interp, "stacks.py") as t:
        pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", "inf", "--cpu-budget", "0", "--json",
                                  str(t.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            helpers.sampled_for_a_while(pytop.pid)
            pytop.send_signal(getattr(signal, sig))
            out, err = pytop.communicate(timeout=60)
        finally:
            if pytop.poll() is None:
                pytop.kill()
    assert pytop.returncode == 128 + getattr(signal, sig), err
    assert "Traceback" not in err and f"ended by {sig}" in err
    document = json.loads(out)
    jsonschema.validate(document, BATCH_SCHEMA)
    functions = by_name(document)
    assert (functions.get("Worker.spinning") or functions["spinning"])["own"] > 0, sorted(functions)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_batch_json_with_subprocesses_says_whose_each_row_is(some_interp: dict[str, Any]) -> None:
    """-s: two children doing the same work give a row each, told apart by their pids."""
    with helpers.running(some_interp, "parent.py", "2") as t:
        result = helpers.run_pytop("-s", "--batch", "--duration", "2", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    work = [row for row in document["functions"] if row["function"] == "child_work"]
    assert len(work) == 2 and len({row["pid"] for row in work}) == 2, work
    assert all(row["pid"] != t.pid for row in work)
    assert {thread["pid"] for thread in document["per_thread"]} >= {row["pid"] for row in work} | {t.pid}


def test_dump_with_subprocesses_shows_each_process_once(some_interp: dict[str, Any]) -> None:
    """--dump -s: the target and each Python child, each once (py-spy's
    test_dump_subprocesses_no_duplication); --json gives a document per process."""
    with helpers.running(some_interp, "parent.py", "2") as t:
        children = [child.pid for child in psutil.Process(t.pid).children()]
        text = helpers.run_pytop("--dump", "-s", str(t.pid))
        document = helpers.run_pytop("--dump", "-s", "--json", str(t.pid))
    assert text.returncode == 0 and document.returncode == 0, text.stderr + document.stderr
    headings = [line.split(":")[0] for line in text.stdout.splitlines() if line.startswith("Process ")]
    assert sorted(headings) == sorted(f"Process {pid}" for pid in [t.pid, *children]), text.stdout
    processes = json.loads(document.stdout)["processes"]
    assert [p["pid"] for p in processes][0] == t.pid and sorted(p["pid"] for p in processes[1:]) == sorted(children)
    assert all(p["threads"][0]["frames"][-1]["function"] == "<module>" for p in processes)


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_subprocesses_that_multiprocessing_starts(method: str) -> None:
    """-s on children that are forked, not exec'd (multiprocessing's fork, and forkserver's,
    whose workers are grandchildren), beside a child that exits at once and one unreaped: each
    worker is sampled under its own pid, and the run ends cleanly (as py-spy's and austin's
    tests of multiprocessing targets ask)."""
    interp = available("pyenv-3.12")
    with helpers.running(interp, "mp_family.py", method) as t:
        result = helpers.run_pytop("-s", "--batch", "--duration", "2", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    work = {row["pid"] for row in document["functions"] if row["function"] == "child_work" and row["total"]}
    assert work == set(t.info["workers"]), (work, t.info)


def batch_across_exec(interp: dict[str, Any], then: str, seconds: int) -> dict[str, Any]:
    """pytop --batch --json on execs.py, which execs `then` once pytop has attached."""
    import signal
    import subprocess

    with helpers.running(interp, "execs.py", then) as t:
        pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", str(seconds), "--json", str(t.pid)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        helpers.sampling_started(pytop.pid)  # attached: the exec comes after
        os.kill(t.pid, signal.SIGUSR1)
        out, err = pytop.communicate(timeout=120)
    assert pytop.returncode == 0, err
    return dict(json.loads(out))


def test_a_target_that_execs_python_is_followed(some_interp: dict[str, Any]) -> None:
    """An exec keeps the pid and replaces the program: its old stacks end there, and the new
    Python program is sampled from then on (it was sampled under the old one's addresses, with
    44-72% of the samples failing). The attempts between the exec and the follow are not errors:
    the engine sees the program was replaced and waits (they were 5.5% of a CI run's samples)."""
    document = batch_across_exec(some_interp, "python", 4)
    functions = by_name(document)
    assert functions["after_exec"]["own_time"] > 0, functions
    assert document["command"].endswith("after"), document["command"]  # the program it is now
    assert document["errors"] <= 0.01 * document["samples"], document


def test_a_target_that_execs_something_else_ends_the_run_saying_so(some_interp: dict[str, Any]) -> None:
    if some_interp["launch"] == "chroot":
        pytest.skip("the chroot has no program but Python's")
    document = batch_across_exec(some_interp, "sleep", 30)
    assert document["exited"], document  # long before the 30 s asked
    assert "exec'd sleep 600, which is not a Python program" in document["exit_reason"], document


CHILD_SPIN = ("import time\n"
              "def child_spin():\n"
              "    end = time.process_time() + 1.0\n"  # a second of CPU, however busy the machine
              "    while time.process_time() < end:\n"
              "        pass\n"
              "child_spin()\n")


def test_subprocesses_of_a_program_that_is_not_python(some_interp: dict[str, Any], tmp_path: Any) -> None:
    """-s on a shell script that starts Python later (py-spy follows such children): pytop
    watches the shell, samples the Python program it starts, and ends when the shell does."""
    import shlex
    import subprocess

    go = tmp_path / "go"
    python = shlex.join([*some_interp["argv"], "-c", CHILD_SPIN])
    shell = subprocess.Popen(["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; {python}; sleep 0.2"])
    try:
        pytop = subprocess.Popen([*helpers.PYTOP, "-s", "--batch", "--duration", "600", "--json", str(shell.pid)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        helpers.sampling_started(pytop.pid)
        go.touch()  # Python starts only now: pytop has taken the shell for what it is
        out, err = pytop.communicate(timeout=300)
    finally:
        shell.kill()
        shell.wait()
    assert pytop.returncode == 0, err
    document = json.loads(out)
    assert "not Python" in document["python_version"]
    spin = [row for row in document["functions"] if row["function"] == "child_spin"]
    assert len(spin) == 1 and spin[0]["pid"] != shell.pid, document["functions"]
    assert spin[0]["own_time"] >= 0.5  # most of its second of CPU, counted by the kernel
    assert document["exit_reason"], "the run ends when the shell does, not at --duration"


def test_subprocesses_of_a_started_program_that_never_runs_python() -> None:
    """-s -- COMMAND where the command never starts Python: the run ends with it and says so."""
    result = helpers.run_pytop("-s", "--batch", "--duration", "600", "--", "sh", "-c", "sleep 1.5; exit 3")
    assert result.returncode == 3, result.stderr  # the program's status: the run ended with it
    assert "not Python" in result.stdout and "exited with status 3" in result.stdout, result.stdout


def test_subprocesses_are_counted_from_their_start(some_interp: dict[str, Any], tmp_path: Any) -> None:
    """-s on a program whose children compute from their first moment: each child's CPU counts
    whole, from its start, not from when pytop found it (a second later at most: gunicorn's
    workers and Django's autoreloaded child were 6-10% short; these children, 1.5 s each, were
    a third short). The kernel's count of the whole family is the program's own (os.times of
    itself and its reaped children)."""
    if some_interp["launch"] == "chroot":
        pytest.skip("the family writes its count outside any chroot")
    out = tmp_path / "family-cpu"
    result = helpers.run_pytop("-s", "--batch", "--json", "--cpu-budget", "0", "--duration", "inf", "--",
                               *some_interp["argv"], str(helpers.TARGETS / "family_cpu.py"), str(out), "2", "1.5")
    assert result.returncode == 0, result.stderr
    family = float(out.read_text())
    document = json.loads(result.stdout)
    assert document["attributed_time"] == pytest.approx(family, rel=0.10), (document["attributed_time"], family)
    work = [row for row in document["functions"] if row["function"] == "child_compute"]
    assert len({row["pid"] for row in work}) == 2, work


def test_subprocess_runs_name_the_process_in_every_report(some_interp: dict[str, Any]) -> None:
    """-s: the text report's rows say whose they are (two children's child_work were two rows
    that looked the same), and collapsed stacks start with their process, as py-spy's do, even
    when one process was seen."""
    with helpers.running(some_interp, "parent.py", "2") as t:
        text = helpers.run_pytop("-s", "--batch", "--duration", "2", str(t.pid))
    assert text.returncode == 0, text.stderr
    work = [line for line in text.stdout.splitlines() if "child_work" in line]
    assert len(work) == 2 and len({line.split("[", 1)[1].split("]")[0] for line in work}) == 2, work
    with helpers.running(some_interp, "stacks.py") as t:  # no child: one process
        collapsed = helpers.run_pytop("-s", "--batch", "--duration", "1", "--format", "collapsed", str(t.pid))
    assert collapsed.returncode == 0, collapsed.stderr
    lines = collapsed.stdout.splitlines()
    assert lines and all(line.startswith(f"process {t.pid};") for line in lines), lines[:3]


def test_a_process_whose_work_runs_in_a_child_says_so(some_interp: dict[str, Any]) -> None:
    """pytop PID on a parent that idles while its Python children compute (Django's autoreloader
    runs the server in a child): the table would stay empty for ever without a word; it says
    where the work is and how to see it."""
    with helpers.running(some_interp, "parent.py", "1") as t:
        result = helpers.run_pytop("--batch", "--duration", "6", str(t.pid))
        child = t.info["children"][0]
    assert result.returncode == 0, result.stderr
    assert f"pid {t.pid} is idle, and its child {child}" in result.stdout, result.stdout[:1500]
    assert f"pytop -s {t.pid} watches both, pytop {child} the child" in result.stdout
