"""Fuzz the whole unwinder for longer than the suite does: kernel cores of a real target on every
interpreter the suite provisions, each mutated for --seconds under AddressSanitizer and
UndefinedBehaviorSanitizer (see tests/core_fuzz.py). Prints iterations and outcomes per core; a
crash prints the sanitizer's report and the seed and iteration to replay.

    .venv/bin/python tools/fuzz_cores.py --seconds 60 [--only pyenv-3.12 ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from test_sanitizers import MEMORY, MEMORY_ENV, build_sanitized, compiler_file  # noqa: E402

import cores  # noqa: E402
import helpers  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="fuzzing time per core (default 60)")
    parser.add_argument("--only", nargs="*", help="interpreter names (default: every one provisioned)")
    args = parser.parse_args()
    found, complaints = helpers.provision()
    names = [n for n in helpers.EXPECTED if n in found and (not args.only or n in args.only)]
    if not names:
        print(f"no interpreters: {complaints}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pytop-fuzz-") as scratch:
        where = Path(scratch)
        build = build_sanitized(where, MEMORY)
        specs = []
        for name in names:
            interp = found[name]
            with helpers.running(interp, "stacks.py", cwd=str(where)) as target:
                core = cores.kernel_core(target, interp, where)
            specs.append(f"{core}={interp['root']}" if interp["launch"] == "chroot" else str(core))
            print(f"{name}: {core.name}", flush=True)
        progress = where / "progress"
        env = dict(os.environ, PYTHONPATH=str(build), LD_PRELOAD=compiler_file("libasan.so"), **MEMORY_ENV)
        result = subprocess.run([sys.executable, str(TESTS / "sanitized_driver.py"), "fuzz-core", str(args.seconds),
                                 str(progress), *specs], env=env, cwd=where)
        if result.returncode != 0:
            last = progress.read_text().splitlines()[-1] if progress.exists() else "?"
            print(f"FAILED (exit {result.returncode}); seed and iteration that ran last: {last}", file=sys.stderr)
        return result.returncode


if __name__ == "__main__":
    sys.exit(main())
