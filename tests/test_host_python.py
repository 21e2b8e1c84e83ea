"""pytop itself runs on every Python that pyproject.toml admits, from its one wheel.

The suite runs on one host Python (and .ci/run builds pytop from source for it); this builds the
wheel users get (tools/build_wheel.py: cp39-abi3, manylinux_2_17), installs it with no compiler
into fresh virtual environments of the oldest supported Python (from `requires-python`) and of
the newest pyenv one, imports every module there (the UI included: an annotation or a syntax
newer than that Python fails at import), and samples a real target with it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import helpers

pytestmark = [pytest.mark.target,  # real target processes, from the provisioned interpreters
              pytest.mark.xdist_group("wheel-build")]  # its tests share the wheel and the venvs: one worker



def oldest_supported() -> tuple[int, int]:
    text = (helpers.ROOT / "pyproject.toml").read_text()
    found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', text, re.MULTILINE)
    assert found, "pyproject.toml states no lower bound for the host Python"
    return int(found.group(1)), int(found.group(2))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, str(helpers.ROOT / "tools" / "build_wheel.py"), "--out", str(out)],
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    built = Path(build.stdout.strip().splitlines()[-1])
    assert "-cp39-abi3-" in built.name and "manylinux_2_17_x86_64" in built.name, built.name
    return built


NEWEST_HOST = "pyenv-3.13"  # the newest provisioned Python with pip and venv of its own


def host_pythons() -> list[str]:
    major, minor = oldest_supported()
    return [f"pyenv-{major}.{minor}", NEWEST_HOST]


@pytest.fixture(scope="module", params=host_pythons())
def host_venv(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    found, _ = helpers.provision()
    interp = found.get(request.param)
    if not interp:
        message = f"no {request.param} to install pytop with"
        if helpers.IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path_factory.mktemp("host") / "venv"
    subprocess.run([interp["argv"][0], "-m", "venv", str(venv)], check=True, timeout=120)
    pip = str(venv / "bin" / "pip")
    # The pip an old Python comes with backtracks for minutes over releases it cannot use.
    subprocess.run([pip, "install", "-q", "pip>=25"], capture_output=True, check=True, timeout=300)
    # No compiler: nothing may be built from source, pytop least of all.
    no_compiler = {**os.environ, "PIP_ONLY_BINARY": ":all:", "CC": "false", "CXX": "false"}
    install = subprocess.run([pip, "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600,
                             env=no_compiler)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return venv


def test_every_module_imports_on_each_host_python(host_venv: Path) -> None:
    script = ("import importlib, pkgutil, pytop\n"
              "names = [m.name for m in pkgutil.walk_packages(pytop.__path__, 'pytop.')]\n"
              "modules = [n for n in names if n != 'pytop.__main__']\n"
              "for name in modules: importlib.import_module(name)\n"
              "print(len(modules))")
    run = subprocess.run([str(host_venv / "bin" / "python"), "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    package = helpers.ROOT / "app" / "pytop"
    modules = [p for p in package.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert int(run.stdout.strip()) >= len(modules)  # every module was imported, not just the package


def test_pytop_on_each_host_python_samples_a_target(host_venv: Path) -> None:
    found, _ = helpers.provision()
    target: dict[str, Any] = found.get("pyenv-3.12") or {"argv": [sys.executable]}
    busy = "import time\ndef spin():\n    t = time.time()\n    while time.time() - t < 4: pass\nspin()\n"
    run = subprocess.run([str(host_venv / "bin" / "pytop"), "--batch", "--json", "--duration", "1.5",
                          "--", *target["argv"], "-c", busy], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    top = max(report["functions"], key=lambda f: f["own_time"])
    assert top["function"] == "spin", top
