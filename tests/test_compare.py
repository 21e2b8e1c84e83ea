"""Comparing two spans (core/compare.py, report/compare.py, `pytop --diff`): pure logic on made
rows, then two real recordings of a target whose work moves from one function to another, run
from two checkouts in different directories."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from pytop.core.compare import CannotCompare, Span, compare, ordered
from pytop.core.model import FunctionRow
from pytop.record.ranges import RecordedSpan, parse_span, parse_when
from pytop.report import compare as report


def row(function: str, filename: str, own: float, total: float | None = None, line: int | None = None,
        pid: int = 1) -> FunctionRow:
    total = own if total is None else total
    return FunctionRow((function, filename, line or 0, pid), function, filename, line, pid, 0.0, 0.0, own, total,
                       0, 0)


def span(*rows: FunctionRow, seconds: float = 10.0, cwd: str | None = None, **kwargs: Any) -> Span:
    return Span(tuple(rows), seconds, kwargs.pop("mode", "cpu"), cwd=cwd, label=kwargs.pop("label", "x"), **kwargs)


def by_name(comparison: Any) -> dict[str, Any]:
    return {c.function: c for c in comparison.changes}


def test_figures_are_per_second_of_each_span_not_counts() -> None:
    """A baseline of 10 s and a span of 2 s: 5 s in 10 s is 0.5 a second, 1.5 s in 2 s is 0.75."""
    c = by_name(compare(span(row("f", "/a/x.py", 5.0, 6.0), seconds=10.0),
                        span(row("f", "/a/x.py", 1.5, 1.8), seconds=2.0)))["f"]
    assert (c.base_own, c.own, c.base_total, c.total) == pytest.approx((0.5, 0.75, 0.6, 0.9))
    assert c.own_change == pytest.approx(0.25) and c.total_change == pytest.approx(0.3) and c.status == ""


def test_new_and_gone_functions() -> None:
    c = by_name(compare(span(row("old", "/a/x.py", 1.0), row("both", "/a/x.py", 1.0)),
                        span(row("new", "/a/x.py", 2.0), row("both", "/a/x.py", 1.0))))
    assert c["old"].status == "gone" and c["old"].own == 0 and c["old"].own_change == pytest.approx(-0.1)
    assert c["new"].status == "new" and c["new"].base_own == 0 and c["new"].own_change == pytest.approx(0.2)
    assert c["both"].status == "" and c["both"].own_change == 0


def test_two_checkouts_and_two_virtual_environments_compare() -> None:
    """Files below each run's working directory match from there; installed files from their
    installation's root, whichever Python and environment they came from."""
    base = span(row("view", "/srv/app-v1/app/views.py", 1.0), row("loads", "/venv1/lib/python3.11/site-packages/"
                "orjson/api.py", 1.0), row("dumps", "/usr/lib/python3.11/json/encoder.py", 1.0), cwd="/srv/app-v1")
    now = span(row("view", "/home/ci/checkout/app/views.py", 2.0), row("loads", "/opt/venv/lib/python3.12/"
               "site-packages/orjson/api.py", 2.0), row("dumps", "/root/.pyenv/versions/3.12.1/lib/python3.12/json/"
               "encoder.py", 2.0), cwd="/home/ci/checkout")
    changes = compare(base, now).changes
    assert len(changes) == 3 and all(c.status == "" for c in changes), changes
    assert {c.module for c in changes} == {"app/views.py", "orjson/api.py", "json/encoder.py"}


def test_a_moved_file_matches_by_its_longest_shared_tail_when_that_is_unique() -> None:
    """No working directory to go by: /x/one/pkg/mod.py matches /y/two/pkg/mod.py (pkg/mod.py
    shared) rather than /y/pkg2/mod.py; two candidates as alike are not told apart."""
    c = compare(span(row("f", "/x/one/pkg/mod.py", 1.0)),
                span(row("f", "/y/two/pkg/mod.py", 2.0), row("f", "/y/pkg2/mod.py", 3.0)))
    matched = [x for x in c.changes if not x.status]
    assert len(matched) == 1 and matched[0].filename == "/y/two/pkg/mod.py"
    tied = compare(span(row("f", "/x/a/mod.py", 1.0)), span(row("f", "/y/b/mod.py", 2.0), row("f", "/y/c/mod.py", 3.0)))
    assert sorted(x.status for x in tied.changes) == ["gone", "new", "new"]


def test_rows_of_several_processes_are_one_function() -> None:
    c = by_name(compare(span(row("work", "/a/w.py", 1.0, pid=10), row("work", "/a/w.py", 3.0, pid=11)),
                        span(row("work", "/a/w.py", 2.0, pid=20))))
    assert len(c) == 1 and c["work"].base_own == pytest.approx(0.4) and c["work"].own == pytest.approx(0.2)


def test_lines_match_lines() -> None:
    c = compare(span(row("f", "/a/x.py", 1.0, line=3), by_line=True), span(row("f", "/a/x.py", 1.0, line=4),
                                                                             by_line=True))
    assert sorted(x.status for x in c.changes) == ["gone", "new"]


@pytest.mark.parametrize("base, now, said", [
    ({"mode": "wall"}, {"mode": "cpu"}, "same --mode"),
    ({"by_line": True}, {}, "by line with one by function"),
])
def test_what_measures_something_else_is_refused(base: dict[str, Any], now: dict[str, Any], said: str) -> None:
    with pytest.raises(CannotCompare, match=said):
        compare(span(row("f", "/a.py", 1.0), **base), span(row("f", "/a.py", 1.0), **now))


def test_a_span_of_no_time_is_refused() -> None:
    with pytest.raises(CannotCompare, match="covers no time"):
        compare(span(row("f", "/a.py", 1.0), seconds=0.0), span(row("f", "/a.py", 1.0)))


def test_the_live_view_waits_for_a_span_long_enough_to_take_per_second() -> None:
    # The first refresh after B: 3 ms since the totals started again, 0.1 s of CPU already
    # attributed (the kernel's counts move at its ticks) would read +3,333%.
    from pytop.ui.baseline import compared_spans

    base = span(row("f", "/a.py", 5.0), seconds=10.0)
    said = compared_spans(base, span(row("f", "/a.py", 0.1), seconds=0.003))
    assert isinstance(said, str) and "covers 0.00 s" in said and "at least 0.5 s" in said
    assert isinstance(compared_spans(span(row("f", "/a.py", 0.1), seconds=0.2), base), str)
    assert by_name(compared_spans(base, span(row("f", "/a.py", 0.6), seconds=0.6)))["f"].own == pytest.approx(1.0)


def test_orders() -> None:
    c = compare(span(row("up", "/a.py", 1.0), row("down", "/a.py", 5.0), row("same", "/a.py", 2.0)),
                span(row("up", "/a.py", 4.0), row("down", "/a.py", 1.0), row("same", "/a.py", 2.0)))
    assert [x.function for x in ordered(c.changes)] == ["up", "same", "down"]  # grew most first
    assert [x.function for x in ordered(c.changes, "own")] == ["up", "same", "down"]
    assert [x.function for x in ordered(c.changes, "base_own")] == ["down", "same", "up"]
    with pytest.raises(ValueError):
        ordered(c.changes, "nonsense")


def test_the_text_and_json_reports() -> None:
    c = compare(span(row("old", "/a/x.py", 1.0), row("both", "/a/x.py", 1.0), label="base.rec"),
                span(row("new\x1b[31m", "/a/x.py", 2.0), row("both", "/a/x.py", 3.0), label="now.rec"))
    text = report.as_text(c)
    assert "against the baseline base.rec" in text and "\x1b" not in text  # names from a target are data
    lines = text.splitlines()
    assert "+20.0%" in lines[5] and "[new]" in lines[5]  # both grew as much: "both" sorts by total change
    assert any("-10.0%" in line and "old" in line and "[gone]" in line for line in lines)
    document = json.loads(report.as_json(c))
    assert document["baseline"] == {"label": "base.rec", "seconds": 10.0}
    entries = {f["function"]: f for f in document["functions"]}
    assert entries["both"]["own_change"] == pytest.approx(0.2) and entries["both"]["status"] == "both"
    assert entries["old"]["status"] == "gone" and entries["new\x1b[31m"]["status"] == "new"


def test_a_change_sign() -> None:
    assert [report.signed_percent(v) for v in (12.5, -3.0, 0.0, -0.01, 1500.0)] == [
        "+12.5%", "-3.0%", "0.0%", "0.0%", "+1500%"]


def test_a_recorded_span_is_parsed() -> None:
    exists = {"a.rec", "dir:with:colons/b.rec"}.__contains__
    assert parse_span("a.rec", exists) == RecordedSpan("a.rec")
    assert parse_span("a.rec:1m-2m", exists) == RecordedSpan("a.rec", parse_when("1m"), parse_when("2m"))
    assert parse_span("a.rec:14:05-14:10:30", exists) == RecordedSpan("a.rec", parse_when("14:05"),
                                                                      parse_when("14:10:30"))
    assert parse_span("a.rec:90-", exists) == RecordedSpan("a.rec", parse_when("90"), None)
    assert parse_span("a.rec:-5m", exists) == RecordedSpan("a.rec", None, parse_when("5m"))
    assert parse_span("dir:with:colons/b.rec:1-2", exists).path == "dir:with:colons/b.rec"
    for wrong, said in (("a.rec:5", "a range is FROM-TO"), ("b.rec", "no such recording"),
                        ("a.rec:x-y", "not a time")):
        with pytest.raises(ValueError, match=said):
            parse_span(wrong, exists)


# ---- two real runs ------------------------------------------------------------------------------

def record_run(interp: dict[str, Any], checkout: Path, times: int, path: Path) -> None:
    """shifting_work.py, run from `checkout` (its own copy of the file, its working directory),
    recorded for 3 s."""
    record_runs(interp, [(checkout, times, path)])


def record_runs(interp: dict[str, Any], runs: list[tuple[Path, int, Path]]) -> None:
    """Each (checkout, times, path) as record_run, all at once: runs compared per second of CPU
    then had the same machine (one after the other, a busy machine could give the second less
    CPU than the first, and a function that does four times the work showed less time)."""
    procs = []
    try:
        for checkout, times, _ in runs:
            script = checkout / "app" / "shifting_work.py"
            script.parent.mkdir(parents=True)
            shutil.copy(helpers.TARGETS / "shifting_work.py", script)
            procs.append(subprocess.Popen([*interp["argv"], str(script), str(times)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, cwd=checkout))
        for proc in procs:
            assert helpers.read_line(proc, 60), "the target never became ready"
        recorders = [subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", "3", "--rate", "200", "--cpu-budget",
                                       "0", "--record", str(path), str(proc.pid)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
                     for proc, (_, _, path) in zip(procs, runs)]
        for recorder in recorders:
            _, err = recorder.communicate(timeout=120)
            assert recorder.returncode == 0, err
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


def functions_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_two_recorded_runs_compared(target_interp: dict[str, Any], tmp_path: Path) -> None:
    """A baseline whose two functions take half each, a run where one does four times the work:
    the change says which grew and which shrank, which function is new and which is gone; each
    side's figures are its replay's, per second of its span; the two checkouts' files match."""
    base, now = tmp_path / "base.pytop", tmp_path / "now.pytop"
    record_runs(target_interp, [(tmp_path / "checkout-a", 1, base), (tmp_path / "elsewhere" / "checkout-b", 4, now)])
    diff = functions_of(helpers.run_pytop("--batch", "--json", "--diff", str(base), str(now)))
    changes = {f["function"]: f for f in diff["functions"]}
    assert changes["grown"]["module"] == "app/shifting_work.py" and changes["grown"]["status"] == "both"
    assert changes["grown"]["own_change"] > 0 > changes["steady"]["own_change"], changes
    assert changes["grown"]["own_per_second"] > 2 * changes["steady"]["own_per_second"], changes  # 4 to 1
    assert changes["steady"]["base_own_per_second"] < 2 * changes["grown"]["base_own_per_second"], changes  # 1 to 1
    assert changes["retired"]["status"] == "gone" and changes["introduced"]["status"] == "new", changes
    assert diff["functions"][0]["function"] == "grown"  # what grew most, on top
    # Each side is its replay's table, per second of the span.
    for side, path, key in (("baseline", base, "base_own_per_second"), ("compared", now, "own_per_second")):
        replayed = functions_of(helpers.run_pytop("--batch", "--json", str(path)))
        seconds = diff[side]["seconds"]
        for entry in replayed["functions"]:
            if entry["function"] in changes:
                assert changes[entry["function"]][key] * seconds == pytest.approx(entry["own_time"], abs=1e-4)
    # A range of each, the text report, and the differential collapsed file.
    text = helpers.run_pytop("--batch", "--diff", f"{base}:1-", f"{now}:-2s")
    assert text.returncode == 0 and "against the baseline" in text.stdout and "[new]" in text.stdout, text.stderr
    folded = helpers.run_pytop("--batch", "--format", "collapsed", "--diff", str(base), str(now))
    assert folded.returncode == 0, folded.stderr
    lines = {line.rsplit(" ", 2)[0]: line.rsplit(" ", 2)[1:] for line in folded.stdout.splitlines()}
    grown = [counts for stack, counts in lines.items() if stack.endswith("grown (app/shifting_work.py)")]
    assert len(grown) == 1 and int(grown[0][1]) > int(grown[0][0]) > 0, lines


@pytest.mark.process
@pytest.mark.parametrize("args, said", [
    (["--diff", "nope.pytop", "other.pytop"], "no such recording"),
    (["--diff", "one.pytop", "one.pytop:5"], "a range is FROM-TO"),
    (["--diff", "one.pytop", "one.pytop", "--from", "1"], "give a range as FILE:FROM-TO"),
    (["--diff", "one.pytop", "one.pytop", "--format", "pprof"], "--diff prints as text, json or collapsed"),
    (["--diff", "one.pytop", "one.pytop", "123"], "not with a PID"),
    (["--sort", "change", "123"], "--sort change goes with --diff"),
    (["--diff", "one.pytop", "notes.txt"], "is not a pytop recording"),
    (["--baseline", "one.pytop", "123"], "--baseline goes with the live view: not with --batch"),
])
def test_a_diff_asked_for_wrongly_says_so(tmp_path: Path, args: list[str], said: str) -> None:
    from pytop.core.model import Circumstances, TargetInfo
    from pytop.record.keys import RunRecord
    from pytop.record.recorder import Recorder

    recorder = Recorder(str(tmp_path / "one.pytop"), RunRecord(TargetInfo(1, "python x.py", "3.12.1"), 100.0, 0.05,
                                                               "cpu", 1000.0))
    recorder.window(Circumstances(window_seconds=1.0, elapsed=1.0, rate_asked=100.0))
    recorder.close()
    (tmp_path / "notes.txt").write_text("hello\n" * 10)
    result = helpers.run_pytop("--batch", *args, cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_pseudo_function_has_no_file_to_say() -> None:
    text = report.as_text(compare(span(row("(no Python frame)", "", 1.0)), span(row("(no Python frame)", "", 2.0))))
    assert text.splitlines()[-1].endswith("(no Python frame)"), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab.:-0123456789hms/ ", max_size=30))
def test_any_span_text_parses_or_says_why(text: str) -> None:
    """Whatever is typed after --diff: a span, or a ValueError with a message, nothing else."""
    try:
        parsed = parse_span(text, {"a.rec", "b:c.rec"}.__contains__)
    except ValueError as exc:
        assert str(exc)
    else:
        assert parsed.path in ("a.rec", "b:c.rec")


@pytest.mark.process
def test_a_baseline_needs_a_view_to_compare() -> None:
    """Without a process or a recording there is nothing to compare with it (the host's table
    would have taken it silently)."""
    result = helpers.run_pytop("--baseline", "one.pytop")
    assert result.returncode == 2 and "--baseline goes with the view of a process" in result.stderr, result.stderr


names = st.sampled_from(["f", "g", "h"])
paths = st.sampled_from(["/a/x.py", "/b/x.py", "/a/pkg/x.py", "/b/pkg/x.py", "/a/y.py", "<string>", ""])
rows_of = st.lists(st.tuples(names, paths, st.floats(0, 100), st.integers(1, 3)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(rows_of, rows_of, st.floats(0.5, 100), st.floats(0.5, 100))
def test_no_time_is_lost_or_counted_twice(base_rows: list[Any], now_rows: list[Any], base_seconds: float,
                                          now_seconds: float) -> None:
    """However names and files collide: each side's time per second is all there, once, and
    every change is the difference of its two sides."""
    base = span(*(row(f, p, own, pid=pid) for f, p, own, pid in base_rows), seconds=base_seconds)
    now = span(*(row(f, p, own, pid=pid) for f, p, own, pid in now_rows), seconds=now_seconds)
    c = compare(base, now)
    base_sum, now_sum = c.added_up()
    assert base_sum == pytest.approx(sum(r[2] for r in base_rows) / base_seconds, abs=1e-9)
    assert now_sum == pytest.approx(sum(r[2] for r in now_rows) / now_seconds, abs=1e-9)
    keys = [(x.function, x.module, x.line, x.status) for x in c.changes]
    assert len(keys) == len(set(keys))
    for x in c.changes:
        assert x.own_change == x.own - x.base_own
        assert (x.status == "new") == (not x.in_base) and (x.status == "gone") == (not x.in_now)
