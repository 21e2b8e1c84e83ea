"""Exports of a real run: collapsed stacks parse and add up to the time the table counted;
speedscope files load against the published schema (tests/data/)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import helpers
from pytop.core.tally import WALL
from pytop.process.attach import attach
from pytop.report import export
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings

SCHEMA = json.loads((Path(__file__).parent / "data" / "speedscope-file-format-schema.json").read_text())
FRAME_LABEL = re.compile(r"^.+ \(.+:-?\d+\)$")


def sampled(interp: dict[str, Any], tmp_path: Path) -> tuple[Sampler, dict[str, Any], tuple[str, ...]]:
    with helpers.running(interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, mode="wall"))
        with helpers.sampling(sampler, lambda snapshot: None):
            helpers.wait_samples(sampler, 300)
        paths = export.write_stamped(str(tmp_path), sampler.profile(), "wall")
    return sampler, t.info, paths


def parse_collapsed(text: str) -> dict[tuple[str, ...], int]:
    stacks = {}
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = tuple(stack.split(";"))
        assert all(FRAME_LABEL.match(frame) for frame in frames), line
        stacks[frames] = int(count)
    return stacks


def test_collapsed_stacks_add_up(some_interp: dict[str, Any], tmp_path: Path) -> None:
    sampler, info, (collapsed_path, _) = sampled(some_interp, tmp_path)
    stacks = parse_collapsed(Path(collapsed_path).read_text())
    micros = sum(tally[WALL] // 1000 for tally in sampler.profile().counts.stacks.values())
    table = sum(r.own_time for r in sampler.final_snapshot().rows)
    assert sum(stacks.values()) == micros
    assert sum(stacks.values()) / 1e6 == pytest.approx(table, abs=0.01)
    assert micros >= 3 * 1.3e6  # three threads (asleep ones too: wall mode) for 1.5 s
    main = tuple(f"{f['function']} ({f['filename']}:{f['line']})" for f in reversed(info["threads"]["main"]["frames"]))
    assert stacks[main] > 0  # the main thread's stack, outermost first, as the target reported it


def test_speedscope_file_loads(some_interp: dict[str, Any], tmp_path: Path) -> None:
    sampler, info, (_, speedscope_path) = sampled(some_interp, tmp_path)
    final = sampler.final_snapshot()
    sampled_for = final.sampled_until - final.sampled_from  # ~1.5 s, longer if the budget held the rate
    document = json.loads(Path(speedscope_path).read_text())
    jsonschema.validate(document, SCHEMA)
    names = {profile["name"].split(" (")[0] for profile in document["profiles"]}
    assert names == {"MainThread", "sleeper", "spinner"}
    frames = document["shared"]["frames"]
    for profile in document["profiles"]:
        assert len(profile["samples"]) == len(profile["weights"])
        assert all(0 <= i < len(frames) for sample in profile["samples"] for i in sample)
        # each thread's wall time is the run's: sampled from its first sample to its last
        assert profile["endValue"] == pytest.approx(sampled_for, rel=0.05), (profile["endValue"], sampled_for)
        assert profile["endValue"] > 1.0


def test_a_native_frame_is_labelled_by_its_library() -> None:
    """--native: a C function's "file" is its library and it has no line (0)."""
    from pytop.report.export import frame_label

    assert frame_label(("deflate", "libz.so.1.2.13", 0)) == "deflate (libz.so.1.2.13)"
    assert frame_label(("work", "app.py", 12)) == "work (app.py:12)"
    assert frame_label(("work", "app.py", -1)) == "work (app.py:-1)"  # a Python line not known
