"""`pytop --batch --all`: the host's Python processes, as the kernel counts them, each with its
version, threads and memory; and what is not a Python process left out."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import helpers
from conftest import available
from pytop.process.layouts import supported_range
from pytop.process.pythons import PythonScan

pytestmark = pytest.mark.process  # pytop run as its users run it
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def host_table(*options: str) -> dict[str, Any]:
    done = helpers.run_pytop("--batch", "--all", "--json", *options)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def rows_by_pid(table: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {row["pid"]: row for row in table["processes"]}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def started(*argv: str) -> subprocess.Popen[bytes]:
    """A program that says "ready" once it runs (so that its name and maps are its own)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline()
    return process


def ended(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        process.kill()
        process.wait()


def test_every_setups_python_is_listed_with_its_version(interp: dict[str, Any]) -> None:
    """Whether by its name, through ld.so (the loader setups), in a chroot or a static build."""
    with helpers.running(interp, "stacks.py") as t:
        row = rows_by_pid(host_table("--duration", "0.2")).get(t.pid)
    assert row is not None, f"pid {t.pid} not listed"
    assert row["python_version"] == interp["version"], row
    assert row["threads"] == 3 and row["rss"] > 1 << 20 and "stacks.py" in row["command"], row
    assert row["problem"] is None, row


@pytest.mark.target  # an interpreter's library to embed
def test_an_embedded_interpreter_is_listed(tmp_path: Path) -> None:
    """A program of another name that runs Python through libpython."""
    prefix = Path(available("pyenv-3.12")["argv"][0]).parent.parent
    source = tmp_path / "embedder.c"
    source.write_text(textwrap.dedent("""\
        #include <Python.h>
        int main(void) {
            Py_Initialize();
            return PyRun_SimpleString("import time; print('ready', flush=True); time.sleep(60)");
        }
        """))
    program = tmp_path / "embedder"
    subprocess.run(["gcc", "-o", str(program), str(source), f"-I{prefix}/include/python3.12", f"-L{prefix}/lib",
                    f"-Wl,-rpath,{prefix}/lib", "-lpython3.12"], check=True)
    embedder = started(str(program))
    try:
        row = rows_by_pid(host_table("--duration", "0.2")).get(embedder.pid)
    finally:
        ended(embedder)
    assert row is not None and row["python_version"] == "3.12" and "embedder" in row["command"], row


@pytest.mark.target  # (a chroot has no /dev/shm for multiprocessing's semaphores)
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_multiprocessing_pool_is_one_pool(method: str) -> None:
    """A parent and its workers (forkserver's are its server's children): one pool, rooted at
    the parent, which `pytop -s` watches whole; the unreaped zombie is not in it."""
    with helpers.running(available("pyenv-3.12"), "mp_family.py", method) as t:
        table = host_table("--duration", "0.5")
    pools = [pool for pool in table["pools"] if pool["root"] == t.pid]
    assert len(pools) == 1, table["pools"]
    pids = set(pools[0]["pids"])
    assert {t.pid, *t.info["workers"]} <= pids and t.info["zombie"] not in pids, (pids, t.info)
    assert pools[0]["cpu_pct"] == pytest.approx(sum(rows_by_pid(table)[pid]["cpu_pct"] for pid in pids), abs=0.01)


def test_the_busiest_comes_first_with_the_kernels_count() -> None:
    busy = started(sys.executable, "-c", "print('ready', flush=True)\nwhile True: pass")
    idle = started(sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    try:
        before = cpu_seconds(busy.pid)
        table = host_table("--duration", "1")
        used = cpu_seconds(busy.pid) - before
    finally:
        ended(busy, idle)
    order = [row["pid"] for row in table["processes"]]
    rows = rows_by_pid(table)
    assert order.index(busy.pid) < order.index(idle.pid), order
    assert rows[idle.pid]["cpu_pct"] == 0.0, rows[idle.pid]
    # The kernel's count over pytop's span, which lies inside the test's (a tick each end).
    shown = rows[busy.pid]["cpu_pct"] / 100 * table["duration"]
    assert 0 < shown <= used + 2 / CLOCK_TICKS, (shown, used, table["duration"])


def test_what_runs_no_python_now_is_left_out() -> None:
    """A zombie (a Python that ended, not yet reaped), a program of another name, kernel threads."""
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        listed = rows_by_pid(host_table("--duration", "0.1"))
    finally:
        sleeper.kill()
        sleeper.wait()
        zombie.wait()
    assert zombie.pid not in listed and sleeper.pid not in listed and 2 not in listed  # 2: kthreadd


def test_a_program_that_execs_python_is_listed_once_it_has() -> None:
    """Judged once per program, not once per pid: a shell that execs Python (a container's
    entry point) is looked at again when its name changes."""
    scan = PythonScan()
    shell = subprocess.Popen(["sh", "-c", f"read go; exec {sys.executable} -c "
                              "\"import time; print('ready', flush=True); time.sleep(60)\""],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert shell.stdin is not None and shell.stdout is not None
        before = {p.pid for p in scan.look()}
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        assert shell.stdout.readline()
        after = {p.pid for p in scan.look()}
    finally:
        ended(shell)
    assert shell.pid not in before and shell.pid in after


def test_processes_that_come_and_go_while_looked_at() -> None:
    """A pool whose workers end as fast as they start: a process that ends between the listing
    and the read, or is a zombie for a moment, gets a row or none; the parent is always there."""
    churn = started(sys.executable, "-c", textwrap.dedent("""\
        import os, time
        print("ready", flush=True)
        while True:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            time.sleep(0.001)
            os.waitpid(pid, 0)
        """))
    scan = PythonScan()
    try:
        seen = [churn.pid in {p.pid for p in scan.look()} for _ in range(100)]
    finally:
        ended(churn)
    assert all(seen)


def test_a_name_with_parentheses_and_spaces() -> None:
    """/proc/PID/stat gives the name in parentheses, whatever it holds: the fields after it are
    found from the last one."""
    renamed = started(sys.executable, "-c", textwrap.dedent("""\
        import time
        with open("/proc/self/comm", "w") as f:
            f.write("x) (y 9 Z")
        print("ready", flush=True)
        time.sleep(60)
        """))
    try:
        row = rows_by_pid(host_table("--duration", "0.1")).get(renamed.pid)
    finally:
        ended(renamed)
    assert row is not None and row["threads"] == 1 and row["rss"] > 1 << 20, row


def problems_seen_as_nobody(pid: int) -> list[str | None]:
    """What a look by user `nobody` says of process `pid`: in a forked child of this process,
    which drops root and uses the scanner already imported (nobody can run no Python of this
    machine's but Debian's, and the installed pytop may not be where Debian's would find it)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            problems = [p.problem for p in PythonScan().look() if p.pid == pid]
            os.write(write_end, json.dumps(problems).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        said = f.read()
    os.waitpid(child, 0)
    return json.loads(said)  # type: ignore[no-any-return]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to look as another user")
def test_a_process_that_cannot_be_read_says_why() -> None:
    """Seen by another user, root's Python is listed, with what would let pytop read it."""
    python = started(sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    try:
        seen = problems_seen_as_nobody(python.pid)
    finally:
        ended(python)
    assert len(seen) == 1 and seen[0] is not None, seen
    assert "another user" in seen[0] and "sudo" in seen[0], seen


def test_a_version_pytop_does_not_read_says_so(tmp_path: Path) -> None:
    """A program that calls itself python3.5 (a link to sleep, named so: none is installed
    here) is listed with why it cannot be watched."""
    (tmp_path / "python3.5").symlink_to("/bin/sleep")
    old = subprocess.Popen([str(tmp_path / "python3.5"), "60"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{old.pid}/comm").read_text().strip() != "python3.5":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        row = rows_by_pid(host_table("--duration", "0.1")).get(old.pid)
    finally:
        old.kill()
        old.wait()
    assert row is not None and row["python_version"] == "3.5", row
    assert row["problem"] == f"Python 3.5 is not supported: pytop reads CPython {supported_range()}", row


def test_ctrl_c_prints_the_table_so_far() -> None:
    pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--all", "--json", "--duration", "inf"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # its imports and its first look
    pytop.send_signal(signal.SIGINT)
    out, err = pytop.communicate(timeout=60)
    assert pytop.returncode == 0, err
    assert json.loads(out)["duration"] > 0


def test_the_text_table() -> None:
    idle = started(sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    try:
        done = helpers.run_pytop("--batch", "--all", "--duration", "0.1")
    finally:
        ended(idle)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Python process" in lines[0] and lines[1].split() == ["PID", "USER", "PYTHON", "CPU%", "GIL%", "THREADS",
                                                                  "RSS", "HOTTEST", "COMMAND"]
    assert any(line.split()[0] == str(idle.pid) and "time.sleep(60)" in line for line in lines[2:]), lines


@pytest.mark.parametrize("options, phrase", [
    (("--batch", "--all", "123"), "give no PID"),
    (("--dump", "--all"), "--all goes with --batch"),
    (("--batch", "--all", "--format", "pprof"), "--format text or json"),
    (("--batch", "--all", "-s"), "is for one process"),
])
def test_what_does_not_go_with_all(options: tuple[str, ...], phrase: str) -> None:
    done = helpers.run_pytop(*options)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == "", done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("pytop: ") and phrase in done.stderr, done.stderr


def test_the_busiest_say_their_hottest_function_and_gil(target_interp: dict[str, Any]) -> None:
    """The busiest processes' stacks are sampled: each says the function its CPU goes to (the
    whole of it: it spins there, beside a thread that naps) and how often its GIL was held;
    what the samples found is within what the kernel counted; an idle process is not sampled."""
    idle = started(sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    try:
        with helpers.running(target_interp, "hot_spinner.py", "crunch_numbers") as one, \
                helpers.running(target_interp, "hot_spinner.py", "parse_logs") as two:
            before = {pid: cpu_seconds(pid) for pid in (one.pid, two.pid)}
            table = host_table("--duration", "4")
            used = {pid: cpu_seconds(pid) - before[pid] for pid in before}
    finally:
        ended(idle)
    rows = rows_by_pid(table)
    for pid, function in ((one.pid, "crunch_numbers"), (two.pid, "parse_logs")):
        row = rows[pid]
        assert row["hottest"] and row["hottest"][0]["function"] == function, row
        assert 0 < row["hottest"][0]["cpu_time"] <= row["sampled_cpu_time"] <= used[pid] + 2 / CLOCK_TICKS, \
            (row, used[pid])
        assert row["hottest"][0]["cpu_time"] >= 0.8 * row["sampled_cpu_time"], row  # (its nap thread's is little)
        assert row["gil_pct"] >= 80, row
    assert rows[idle.pid]["hottest"] is None and rows[idle.pid]["gil_pct"] is None


def test_a_pools_hottest_function_is_its_workers(target_interp: dict[str, Any]) -> None:
    """A parent and three forked workers spinning in one function: the pool's row sums their
    samples, and its hottest function is theirs."""
    with helpers.running(target_interp, "hot_spinner.py", "serve_request", "3") as t:
        table = host_table("--duration", "3")
    (pool,) = [p for p in table["pools"] if p["root"] == t.pid]
    assert set(pool["pids"]) == {t.pid, *t.info["children"]}, pool
    assert pool["hottest"][0]["function"] == "serve_request" and pool["gil_pct"] >= 80, pool
    members = [rows_by_pid(table)[pid] for pid in pool["pids"]]
    assert pool["sampled_cpu_time"] == pytest.approx(sum(m["sampled_cpu_time"] or 0 for m in members), abs=1e-5)


def test_a_host_of_thousands_is_judged_a_few_at_a_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a process whose names do not say Python runs it is read in its maps, half a
    millisecond each: a look reads at most so many (the first look at 10,000 processes took 5 s
    of CPU before a row), the rest wait for the next looks; one named python is judged at once,
    and a report (`maps=None`) judges every one."""
    from pytop.process import pythons

    program = tmp_path / "svc-runner"  # a Python under another name: only its maps say (libpython)
    shutil.copy(os.path.realpath(sys.executable), program)
    reads: list[int] = []
    real = pythons._read_maps
    monkeypatch.setattr(pythons, "_read_maps", lambda pid: reads.append(pid) or real(pid))
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(300)]
    named = started(sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    hidden = started(str(program), "-c", "import time; print('ready', flush=True); time.sleep(60)")
    try:
        scan = PythonScan()
        looks = []
        for _ in range(12):
            reads.clear()
            listed = {p.pid for p in scan.look(maps=40)}
            looks.append((len(reads), named.pid in listed, hidden.pid in listed, scan.unjudged))
        everything = {p.pid for p in PythonScan().look(maps=None)}
    finally:
        ended(named, hidden)
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert all(count <= 40 for count, *_ in looks), looks
    assert all(seen for _, seen, _, _ in looks), looks  # named python: from the first look
    assert looks[0][3] > 200 and looks[-1][3] == 0 and looks[-1][2], looks  # the hidden one, once judged
    assert {named.pid, hidden.pid} <= everything


def test_on_a_big_host_others_are_read_again_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past RECHECK_FROM processes, one that is not Python is read again only every few looks,
    each in its turn: a shell that then execs Python shows within that many looks."""
    from pytop.process import pythons

    monkeypatch.setattr(pythons, "RECHECK_FROM", 10)
    read: list[int] = []
    real = pythons._read_stat
    monkeypatch.setattr(pythons, "_read_stat", lambda pid: read.append(pid) or real(pid))
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(20)]
    shell = subprocess.Popen(["sh", "-c", f"read go; exec {sys.executable} -c "
                              "\"import time; print('ready', flush=True); time.sleep(60)\""],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert shell.stdin is not None and shell.stdout is not None
        # (every look judges whatever else is new on the host whole: tests beside this one start
        # hundreds of processes, and one left unjudged by a look is read again at the next)
        scan = PythonScan()
        scan.look(maps=None)
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        assert shell.stdout.readline()
        seen_at = next((n for n in range(1, 2 * pythons.RECHECK_EVERY + 1)
                        if shell.pid in {p.pid for p in scan.look(maps=None)}), None)
        read.clear()
        for _ in range(pythons.RECHECK_EVERY):
            scan.look(maps=None)
        times = [read.count(sleeper.pid) for sleeper in sleepers]
    finally:
        ended(shell)
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert seen_at is not None and seen_at <= pythons.RECHECK_EVERY, seen_at
    assert times == [1] * len(sleepers), times  # each once in RECHECK_EVERY looks, in its turn
