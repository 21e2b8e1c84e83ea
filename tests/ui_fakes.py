"""A deterministic stand-in for the sampler, for UI tests only (the sampler itself is tested
against real targets in test_sampler.py)."""

from __future__ import annotations

from collections.abc import Callable

from pytop.model import FunctionRow, Snapshot, TargetInfo

TARGET = TargetInfo(4242, "python shop.py --port 8080", "3.12.1", "/srv/shop")

# (function, file, line, own%, total%, own s, total s)
FUNCTIONS = [
    ("is_prime", "/srv/shop/reports.py", 41, 35.0, 35.0, 12.5, 12.5),
    ("render_response", "/srv/shop/web.py", 88, 20.0, 42.0, 6.0, 14.2),
    ("JSONEncoder.iterencode", "/usr/lib/python3.12/json/encoder.py", 258, 12.0, 12.0, 8.1, 8.1),
    ("query_database", "/srv/shop/db.py", 17, 5.0, 5.0, 20.0, 20.0),
    ("handle_request", "/srv/shop/web.py", 52, 1.0, 63.0, 0.4, 30.0),
    ("Thread.run", "/usr/lib/python3.12/threading.py", 1010, 0.0, 98.0, 0.0, 50.1),
]


def rows(by_line: bool, scale: float = 1.0) -> tuple[FunctionRow, ...]:
    out = []
    for function, filename, line, own, total, own_t, total_t in FUNCTIONS:
        out.append(FunctionRow(
            key=(function, filename, line if by_line else 0), function=function, filename=filename,
            line=line if by_line else None, own_pct=own, total_pct=total,
            own_time=own_t * scale, total_time=total_t * scale,
            own_count=int(own_t * scale * 100), total_count=int(total_t * scale * 100)))
    return tuple(out)


def snapshot(by_line: bool = False, scale: float = 1.0, **changes: object) -> Snapshot:
    values: dict[str, object] = dict(
        target=TARGET, rows=rows(by_line, scale), by_line=by_line, samples=int(5012 * scale),
        elapsed=50.2 * scale, rate=99.8, errors=0, last_error=None, late=0, behind=0.0, gil_pct=61.5,
        active_pct=43.3, threads=6, cpu_pct=88.0, rss=73 << 20, settings={"rate": 100.0})
    values.update(changes)
    return Snapshot(**values)  # type: ignore[arg-type]


class FakeSource:
    """Answers the app's requests with fixed snapshots, at once, on the calling thread."""

    def __init__(self, first: Snapshot | None = None):
        self.first = first or snapshot()
        self.publish: Callable[[Snapshot], None] | None = None
        self.by_line = False
        self.resets = 0
        self.stopped = False

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        self.publish = publish
        publish(self.first)

    def stop(self) -> None:
        self.stopped = True

    def reset(self) -> None:
        self.resets += 1
        self._send(snapshot(self.by_line, scale=0.01))

    def refresh_now(self) -> None:
        self._send(snapshot(self.by_line))

    def set_by_line(self, by_line: bool) -> None:
        self.by_line = by_line
        self._send(snapshot(by_line))

    def _send(self, s: Snapshot) -> None:
        if self.publish is not None:
            self.publish(s)
