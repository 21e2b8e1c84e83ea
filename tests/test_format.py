"""Screen and report formatting: pure functions."""

from __future__ import annotations

from dataclasses import fields, replace

from pytop.core.model import Circumstances, Snapshot, TargetInfo
from pytop.report import format as fmt


def snapshot(**changes: object) -> Snapshot:
    """`changes` may name a Snapshot's fields or its Circumstances' (`run`)."""
    names = {f.name for f in fields(Circumstances)}
    run = replace(Circumstances(window_seconds=1.0, elapsed=10.0, rate_asked=0.0, rss=50 << 20),
                  **{k: v for k, v in changes.items() if k in names})  # type: ignore[arg-type]
    base = Snapshot(target=TargetInfo(42, "python app.py", "3.12.1", "/srv/app"), rows=(), by_line=False,
                    samples=1000, rate=100.0, errors=0, late=0, gil_pct=50.0, active_pct=25.0, threads=4,
                    cpu_pct=80.0, run=run)
    return replace(base, **{k: v for k, v in changes.items() if k not in names})  # type: ignore[arg-type]


def test_short_filenames() -> None:
    assert fmt.short_filename("/usr/lib/python3.11/json/decoder.py") == "json/decoder.py"
    assert fmt.short_filename("/venv/lib/python3.12/site-packages/requests/api.py") == "requests/api.py"
    assert fmt.short_filename("/usr/lib/python3/dist-packages/yaml/main.py") == "yaml/main.py"
    assert fmt.short_filename("/srv/app/web/views.py", "/srv/app") == "web/views.py"
    assert fmt.short_filename("/srv/application/x.py", "/srv/app") == "/srv/application/x.py"
    assert fmt.short_filename("<frozen runpy>") == "<frozen runpy>"


def test_error_banner_needs_one_percent_after_a_hundred_samples() -> None:
    assert fmt.error_banner(snapshot(samples=50, errors=10)) is None  # too early to tell
    assert fmt.error_banner(snapshot(samples=1000, errors=5)) is None  # 0.5%
    text = fmt.error_banner(snapshot(samples=990, errors=10, last_error="torn read"))
    assert text == "Error rate 1.0% (last: torn read)"


def test_behind_banner() -> None:
    assert fmt.behind_banner(snapshot()) is None
    assert fmt.behind_banner(snapshot(skipped_share=0.05)) is None  # a few skipped: the header's late figure says it
    text = fmt.behind_banner(snapshot(skipped_share=0.25))
    # (the header says how many were taken late, apart: "not taken late" beside "23.9% late" read as a contradiction)
    assert text == ("Behind on a busy machine: 25% of samples skipped lately (never made up in a burst); times stay "
                    "the kernel's.")


def test_exited_banner() -> None:
    assert fmt.exited_banner(snapshot()) is None
    text = fmt.exited_banner(snapshot(exited=True, exit_reason="process 42 has exited"))
    assert text == "Process 42 has exited. The results below are final; press q to quit."
    text = fmt.exited_banner(snapshot(exited=True, exit_reason="permission denied"))
    assert text is not None and text.startswith("Sampling stopped: permission denied")
    text = fmt.exited_banner(snapshot(exited=True, failure="RuntimeError: figures broke"))
    assert text == "pytop failed: RuntimeError: figures broke. The results below are the last it had; press q to quit."


def test_a_stopped_process_is_said_to_be_stopped() -> None:
    text = fmt.exited_banner(snapshot(stopped=(42,)))
    assert text is not None and text.startswith("Process 42 is stopped") and "kill -CONT 42" in text
    assert fmt.exited_banner(snapshot(stopped=(42,), exited=True, exit_reason="process 42 has exited")) == (
        "Process 42 has exited. The results below are final; press q to quit.")


def test_header_lines() -> None:
    s = snapshot(rate_asked=100.0)
    assert fmt.threads_line(s) == "Mode: cpu, GIL: 50.0%, Active: 25.0%, Threads: 4"
    assert fmt.samples_line(s) == "Samples: 1,000 in 00:00:10 (100/s of 100/s), Errors: 0.0%"
    assert fmt.usage_line(s) == "CPU: 80%, RSS: 50.0 MiB"
    late = snapshot(rate_asked=100.0, late=30, skipped=20)  # taken late, and skipped: said apart
    assert fmt.samples_line(late) == ("Samples: 1,000 in 00:00:10 (100/s of 100/s, 2.9% late, 2.0% skipped), "
                                      "Errors: 0.0%")
    stalled = snapshot(rate_asked=100.0, late=30, longest_delay=0.0456)
    assert fmt.samples_line(stalled) == ("Samples: 1,000 in 00:00:10 (100/s of 100/s, 3.0% late, a 46 ms stall), "
                                         "Errors: 0.0%")
    assert fmt.samples_line(snapshot(rate_asked=100.0, longest_delay=0.019)) == fmt.samples_line(s)


def test_numbers() -> None:
    assert fmt.seconds(1.234) == "1.23s"
    assert fmt.seconds(123.4) == "123s"
    assert fmt.seconds(7200) == "2.0h"
    assert fmt.percent(12.345) == "12.3%"
    assert fmt.byte_size(512) == "512 B"
    assert fmt.clock(3725) == "01:02:05"
