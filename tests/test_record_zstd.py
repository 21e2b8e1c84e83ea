"""A recording's zstd (record/zstd.py) reads the same from the standard library's
`compression.zstd` (3.14 on) as from the `zstandard` package (before): a recording written by
pytop on one Python opens on another. The module is loaded alone into Debian's 3.14, whose
standard library has zstd, and each side expands what the other compressed, with a reference
and without."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import available
from pytop.record import zstd

MODULE = Path(zstd.__file__)
SIDE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("zstd", sys.argv[1])
zstd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zstd)
folder = sys.argv[2]
read = lambda name: open(f"{folder}/{name}", "rb").read()
reference, payload = read("reference"), read("payload")
assert zstd.expand(read("package-referenced"), reference, 1 << 20) == payload
assert zstd.expand(read("package-alone"), None, 1 << 20) == payload
open(f"{folder}/std-referenced", "wb").write(zstd.compress(payload, reference))
open(f"{folder}/std-alone", "wb").write(zstd.compress(payload))
print(zstd.backend)
"""


@pytest.mark.target
def test_the_standard_librarys_zstd_and_the_package_read_each_other(tmp_path: Path) -> None:
    if zstd.backend != "zstandard":
        pytest.skip("this Python's zstd is the standard library's: nothing to hold it against here")
    interp = available("sid-3.14-loader")
    reference = b"".join(b"thread-%d handle_request query_orders %d " % (t, t * 31) for t in range(200))
    payload = reference.replace(b"query", b"encode") + bytes(range(256))
    files = {"reference": reference, "payload": payload, "package-referenced": zstd.compress(payload, reference),
             "package-alone": zstd.compress(payload)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    done = subprocess.run([*interp["argv"], "-c", SIDE, str(MODULE), str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "compression.zstd", done.stderr
    assert zstd.expand((tmp_path / "std-referenced").read_bytes(), reference, 1 << 20) == payload
    assert zstd.expand((tmp_path / "std-alone").read_bytes(), None, 1 << 20) == payload
    with pytest.raises(ValueError):  # (its reference is its dictionary: without it, no payload)
        zstd.expand((tmp_path / "std-referenced").read_bytes(), None, 1 << 20)
