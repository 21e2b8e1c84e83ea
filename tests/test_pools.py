"""The host's processes folded into pools (core/pools.py): pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytop.core.model import PythonProcess
from pytop.core.pools import fold


def process(pid: int, parent: int, command: str = "python app.py", cpu: float = 0.0) -> PythonProcess:
    return PythonProcess(pid, "u", command, cpu, "3.12", threads=2, rss=1000, parent=parent)


def test_a_python_parent_and_its_workers_are_one_pool() -> None:
    master = process(100, 1, "gunicorn app:wsgi")
    workers = [process(101 + i, 100, "gunicorn app:wsgi", cpu=50.0 if i < 2 else 0.0) for i in range(4)]
    lone = process(300, 1, "python other.py", cpu=10.0)
    rows = fold([*workers, lone, master])
    assert [(r.root, [m.pid for m in r.members]) for r in rows] == [(100, [100, 101, 102, 103, 104]), (300, [300])]
    pool = rows[0]
    assert pool.pool and pool.cpu_pct == 100.0 and pool.busy == 2 and pool.threads == 10 and pool.rss == 5000
    assert pool.described == "[pool of 5, 2 busy] gunicorn app:wsgi"
    assert not rows[1].pool and rows[1].described == "python other.py"


def test_forkservers_workers_join_the_program_that_started_the_server() -> None:
    server = "python -c from multiprocessing.forkserver import main; main(5, 6, ['__main__'])"
    rows = fold([process(10, 1, "python job.py"), process(11, 10, server), process(12, 11, server),
                 process(13, 10, "python -c from multiprocessing.resource_tracker import main;main(7)")])
    assert [(r.root, [m.pid for m in r.members]) for r in rows] == [(10, [10, 11, 12, 13])]


def test_a_python_parents_other_programs_are_their_own() -> None:
    """What pytest, supervisord or a Python shell start are not its workers."""
    rows = fold([process(10, 1, "supervisord"), process(11, 10, "python web.py"), process(12, 10, "python cron.py")])
    assert sorted((r.root, len(r.members)) for r in rows) == [(10, 1), (11, 1), (12, 1)]


def test_one_command_under_one_other_parent_is_a_pool_rooted_at_that_parent() -> None:
    """A shell or a supervisor (not Python, so not listed) that started four workers."""
    rows = fold([process(20 + i, 7, "celery worker") for i in range(4)] + [process(30, 7, "python cron.py")])
    assert sorted((r.root, len(r.members)) for r in rows) == [(7, 4), (30, 1)]


def test_orphans_of_init_are_not_a_pool() -> None:
    rows = fold([process(40, 1), process(41, 1)])
    assert sorted(r.root for r in rows) == [40, 41] and not any(r.pool for r in rows)


def test_a_loop_in_the_parents_ends() -> None:
    """Parents are read at different moments (a pid reused meanwhile): a cycle is data too."""
    rows = fold([process(50, 51), process(51, 50)])
    assert sorted(m.pid for r in rows for m in r.members) == [50, 51]


@given(st.lists(st.tuples(st.integers(2, 40), st.integers(0, 40), st.sampled_from("ab"),
                          st.floats(0, 100)), max_size=30, unique_by=lambda t: t[0]))
def test_every_process_is_in_one_row_and_the_sums_hold(spec: list[tuple[int, int, str, float]]) -> None:
    processes = [process(pid, parent, command, cpu) for pid, parent, command, cpu in spec]
    rows = fold(processes)
    assert sorted(m.pid for r in rows for m in r.members) == sorted(p.pid for p in processes)
    assert abs(sum(r.cpu_pct for r in rows) - sum(p.cpu_pct for p in processes)) < 1e-6
    assert [r.cpu_pct for r in rows] == sorted((r.cpu_pct for r in rows), reverse=True)


def test_the_busiest_readable_are_sampled_up_to_a_count() -> None:
    from dataclasses import replace

    from pytop.core.pools import busiest

    procs = [process(1, 0, cpu=50.0), process(2, 0, cpu=0.5), process(3, 0, cpu=90.0),
             replace(process(4, 0, cpu=99.0), problem="another user's"), process(5, 0, cpu=20.0)]
    assert busiest(procs) == [3, 1, 5] and busiest(procs, count=2) == [3, 1]


@given(st.lists(st.tuples(st.sampled_from(["f", "g", "h", "k"]), st.floats(0, 5)), max_size=6),
       st.lists(st.tuples(st.sampled_from(["f", "g", "h", "k"]), st.floats(0, 5)), max_size=6))
def test_a_pools_heat_is_its_members_summed(one: list[tuple[str, float]], two: list[tuple[str, float]]) -> None:
    from pytop.core.model import Heat
    from pytop.core.pools import merged_heat

    def heat(functions: list[tuple[str, float]]) -> Heat:
        summed: dict[str, float] = {}
        for name, seconds in functions:
            summed[name] = summed.get(name, 0.0) + seconds
        return Heat(tuple((n, "app.py", s) for n, s in summed.items()), 10.0, 100, 30)

    a, b = heat(one), heat(two)
    merged = merged_heat([1, 2, 3], {1: a, 2: b})
    assert merged is not None and merged.cpu_seconds == 20.0 and merged.samples == 200 and merged.gil_pct == 30.0
    expected: dict[str, float] = {}
    for h in (a, b):
        for name, _, seconds in h.functions:
            expected[name] = expected.get(name, 0.0) + seconds
    assert {n: s for n, _, s in merged.functions} == expected
    assert [s for _, _, s in merged.functions] == sorted((s for _, _, s in merged.functions), reverse=True)
    assert merged_heat([3], {1: a}) is None and merged_heat([1], {1: a}) is a
