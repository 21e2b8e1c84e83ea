"""record/gathering.py: a window's drains as a recording keeps them, their time gathered into the
last drain of each run. Pure: the figures taken in from the gathered drains are those taken in
from the drains as they came (a real target's windows are held to the live view's in
test_record_replay.py)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from pytop.core.intake import take_in
from pytop.core.records import Drain, FunctionFigures, Weight
from pytop.core.snapshot import Figures
from pytop.record.gathering import gathered
from record_fakes import drain


def plain(n: int, weights: list[tuple[int, int, int]], rows: list[tuple[int, int]], forgets: bool) -> Drain:
    d = drain(n)
    return replace(d, retired=(2,) if forgets else (), evicted=(9,) if forgets else (),
                   functions=d.functions if n == 1 else (), nodes=d.nodes if n == 1 else (),
                   weights=tuple(Weight(12 if s else 11, t, v, v, v * 1000, v * 2000, v * 10) for s, t, v in weights),
                   function_rows=tuple(FunctionFigures(3 + f, 0, (v,) * 12) for f, v in rows),
                   line_rows=tuple(FunctionFigures(3 + f, 30 + f, (v,) * 12) for f, v in rows))


def figures(drains: tuple[Drain, ...]) -> tuple[object, ...]:
    f = Figures()
    for d in drains:
        take_in(f, d)
    assert f.totals is not None
    return (list(f.total.stacks.items()), list(f.total.threads.items()), f.total.ticks, f.total.cpu_ns,
            f.total.first_at, f.total.last_at, f.total.slot_seconds,
            [(k, list(v)) for k, v in f.totals.by_function.items()],
            [(k, list(v)) for k, v in f.totals.by_line.items()],
            {k: (t.cpu_ns, t.samples, t.alive, t.ended) for k, t in f.threads.threads.items()})


def test_a_run_of_drains_gives_its_time_to_its_last_and_stops_before_one_that_forgets() -> None:
    ds = (plain(1, [(1, 7, 1)], [(0, 1)], True), plain(2, [(1, 7, 2), (0, 8, 1)], [(0, 2), (1, 3)], False),
          plain(3, [(0, 8, 4)], [(1, 1)], True), plain(4, [(1, 7, 5)], [(0, 5)], False))
    out = gathered(ds)
    assert [len(d.weights) for d in out] == [0, 2, 0, 2]
    assert out[1].weights == (Weight(12, 7, 3, 3, 3000, 6000, 30), Weight(11, 8, 1, 1, 1000, 2000, 10))
    assert out[1].function_rows == (FunctionFigures(3, 0, (3,) * 12), FunctionFigures(4, 0, (3,) * 12))
    assert out[3].weights == (Weight(11, 8, 4, 4, 4000, 8000, 40), Weight(12, 7, 5, 5, 5000, 10000, 50))
    assert not out[2].function_rows
    assert [d.threads for d in out] == [d.threads for d in ds] and [d.evicted for d in out] == [d.evicted for d in ds]
    assert figures(out) == figures(ds)


drains = st.lists(st.tuples(st.lists(st.tuples(st.booleans(), st.sampled_from([7, 8]), st.integers(1, 50)),
                                     max_size=4),
                            st.lists(st.tuples(st.integers(0, 2), st.integers(1, 50)), max_size=3),
                            st.booleans()), min_size=1, max_size=8)


Spec = list[tuple[list[tuple[bool, int, int]], list[tuple[int, int]], bool]]


@given(drains)
def test_the_figures_taken_in_are_those_of_the_drains_as_they_came(spec: Spec) -> None:
    ds = tuple(plain(n + 1, weights, rows, forgets) for n, (weights, rows, forgets) in enumerate(spec))
    assert figures(gathered(ds)) == figures(ds)
