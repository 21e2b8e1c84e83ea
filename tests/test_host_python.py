"""pytop itself runs on the oldest Python that pyproject.toml admits.

The suite runs on one host Python; this installs pytop into a fresh virtual environment of the
oldest supported one (from `requires-python`), imports every module there (the UI included: an
annotation or a syntax newer than that Python fails at import), and samples a real target with it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import helpers

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters



def oldest_supported() -> tuple[int, int]:
    text = (helpers.ROOT / "pyproject.toml").read_text()
    found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', text, re.MULTILINE)
    assert found, "pyproject.toml states no lower bound for the host Python"
    return int(found.group(1)), int(found.group(2))


@pytest.fixture(scope="module")
def oldest_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    major, minor = oldest_supported()
    found, _ = helpers.provision()
    interp = found.get(f"pyenv-{major}.{minor}")
    if not interp:
        message = f"no Python {major}.{minor} to install pytop with"
        if helpers.IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path_factory.mktemp("oldest-host") / "venv"
    subprocess.run([interp["argv"][0], "-m", "venv", str(venv)], check=True, timeout=120)
    pip = str(venv / "bin" / "pip")
    # The pip an old Python comes with backtracks for minutes over releases it cannot use.
    subprocess.run([pip, "install", "-q", "pip>=25"], capture_output=True, check=True, timeout=300)
    install = subprocess.run([pip, "install", "-q", str(helpers.ROOT)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return venv


def test_every_module_imports_on_the_oldest_supported_python(oldest_venv: Path) -> None:
    script = ("import importlib, pkgutil, pytop\n"
              "names = [m.name for m in pkgutil.walk_packages(pytop.__path__, 'pytop.')]\n"
              "modules = [n for n in names if n != 'pytop.__main__']\n"
              "for name in modules: importlib.import_module(name)\n"
              "print(len(modules))")
    run = subprocess.run([str(oldest_venv / "bin" / "python"), "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    package = helpers.ROOT / "app" / "pytop"
    modules = [p for p in package.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert int(run.stdout.strip()) >= len(modules)  # every module was imported, not just the package


def test_pytop_on_the_oldest_supported_python_samples_a_target(oldest_venv: Path) -> None:
    found, _ = helpers.provision()
    target: dict[str, Any] = found.get("pyenv-3.12") or {"argv": [sys.executable]}
    busy = "import time\ndef spin():\n    t = time.time()\n    while time.time() - t < 4: pass\nspin()\n"
    run = subprocess.run([str(oldest_venv / "bin" / "pytop"), "--batch", "--json", "--duration", "1.5",
                          "--", *target["argv"], "-c", busy], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    top = max(report["functions"], key=lambda f: f["own_time"])
    assert top["function"] == "spin", top
