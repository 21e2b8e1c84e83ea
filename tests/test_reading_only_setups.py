"""The setups that run only the reading tests (helpers.READING_ONLY: CPython 3.6 and 3.7, the
3.14 and 3.15 debug builds) in a batch run and in the live view too, once each: the figures above
the unwinder are their twins' (3.8, the release builds), but the way through is their own."""

from __future__ import annotations

import json

import pytest

import helpers
from conftest import available

pytestmark = pytest.mark.target

SETUPS = sorted(helpers.READING_ONLY)


@pytest.mark.parametrize("name", SETUPS)
def test_batch(name: str) -> None:
    interp = available(name)
    with helpers.running(interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--duration", "1.5", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    top = max(document["functions"], key=lambda f: f["own_time"])
    assert top["function"] in ("Worker.spinning", "spinning"), top
    spinner = next(thread for thread in document["per_thread"] if thread["name"] == "spinner")
    assert top["own_time"] == pytest.approx(spinner["cpu_time"], rel=0.1)  # the kernel's count


@pytest.mark.parametrize("name", SETUPS)
async def test_live(name: str) -> None:
    """The real sampler and the app: the spinner's row on top, in the thread panel too."""
    from pytop.process.attach import attach
    from pytop.run import info_of
    from pytop.sampling.sampler import Sampler, Settings
    from pytop.ui.app import PytopApp
    from pytop.ui.threads import ThreadTable
    from pytop.ui.widgets import FunctionTable

    interp = available(name)
    with helpers.running(interp, "stacks.py") as t:
        target = attach(t.pid)
        app = PytopApp(Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=0.3)))
        try:
            async with app.run_test(size=(120, 30)) as pilot:
                await pilot.press("t")
                for _ in range(100):  # until the spinner leads (a busy machine takes longer)
                    await pilot.pause(0.1)
                    tables = app.screen.query(FunctionTable)  # (none while a loaded machine composes it)
                    if tables and tables.first().row_count and \
                            tables.first().row_text(0)[-1].startswith(("Worker.spinning", "spinning")):
                        break
                table = app.query_one(FunctionTable)
                assert table.row_count and table.row_text(0)[-1].startswith(("Worker.spinning", "spinning"))
                threads = app.query_one(ThreadTable)
                names = {threads.row_text(i)[0] for i in range(threads.row_count)}
                assert {"spinner", "sleeper", "MainThread"} <= names, names
        finally:
            target.close()


@pytest.mark.parametrize("name", ["pyenv-2.7", "pyenv-3.6"])
def test_launched(name: str) -> None:
    """`pytop -- python ...` of a version whose runtime is found by its statics' symbols: the
    program's executable is mapped before its libpython, which is not taken for a build stripped
    of its symbols (it was, in most runs), but waited for."""
    interp = available(name)
    result = helpers.run_pytop("--batch", "--duration", "0.5", "--json", "--", *interp["argv"], "-c",
                               "import time; time.sleep(30)")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["python_version"].startswith(interp["version"] + ".")


def test_every_reading_only_setup_is_expected() -> None:
    assert helpers.READING_ONLY <= set(helpers.EXPECTED)
    assert not helpers.READING_ONLY & set(helpers.SOME)
    # a launch twin's version is run by the modules of figures through another setup
    versions = {name.split("-")[1] for name in set(helpers.EXPECTED) - helpers.READING_ONLY - helpers.LAUNCH_TWINS}
    assert {name.split("-")[1] for name in helpers.LAUNCH_TWINS} <= versions
    assert not helpers.LAUNCH_TWINS & set(helpers.SOME)
