#!/usr/bin/env python3
"""Find or fetch every CPython that pytop's tests run targets on, and say how to start each.

The pyenv builds (3.8-3.13, shared libpython with symbols) and Debian's own static, stripped
/usr/bin/python3.11 are used where they are installed. CPython 3.14 and 3.15 come from Debian sid:
their packages are downloaded with apt against a private sources list, lists and cache (the
system's apt state is never touched) and unpacked with `dpkg -x` into a cache folder that then
holds a small root file system. Each sid build is offered in two launch styles:

- ``chroot``: the target runs inside that folder, like a process in a container, so pytop must
  read its binaries through /proc/PID/root;
- ``loader``: the target runs on the host through the unpacked ``ld-linux-x86-64.so.2
  --library-path``, so /proc/PID/exe is the loader, not python.

Usage: ``provision_interpreters.py [--json] [--cache DIR] [--only pyenv|system|sid]``. With
``--json`` it prints one JSON list of interpreters (name, version, argv, launch, root); a version
that cannot be provided is reported on stderr and the exit status is 1.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PYENV_VERSIONS = ("2.7.18", "3.6.15", "3.7.16", "3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")
SID_VERSIONS = ("3.14", "3.15")
DEBIAN_SYSTEM_PYTHON = Path("/usr/bin/python3.11")
SID_SOURCE = (
    "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian sid main\n"
)
MULTIARCH = "x86_64-linux-gnu"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("PYTOP_INTERPRETER_CACHE", Path(base) / "pytop" / "interpreters"))


def minor_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def pyenv_root() -> Path:
    root = os.environ.get("PYENV_ROOT")
    if root:
        return Path(root)
    try:
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True)
        return Path(out.stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return Path.home() / ".pyenv"


def pyenv_interpreters() -> list[dict]:
    found = []
    root = pyenv_root()
    for full in PYENV_VERSIONS:
        exe = root / "versions" / full / "bin" / "python"
        if exe.exists():
            short = minor_of(full)
            # python3.7m before 3.8 (the ABI flags were in the name)
            include = next((root / "versions" / full / "include").glob(f"python{short}*"))
            found.append(
                {
                    "name": f"pyenv-{short}",
                    "version": short,
                    "argv": [str(exe)],
                    "launch": "direct",
                    "root": "/",
                    "include": [str(include)],
                }
            )
    return found


def system_interpreters() -> list[dict]:
    if not DEBIAN_SYSTEM_PYTHON.exists():
        return []
    return [
        {
            "name": "debian-3.11",
            "version": "3.11",
            "argv": [str(DEBIAN_SYSTEM_PYTHON)],
            "launch": "direct",
            "root": "/",
            "include": [],
        }
    ]


class PrivateApt:
    """apt-get and apt-cache pointed at a private sources list, lists dir, cache and status."""

    def __init__(self, state: Path):
        self.state = state
        for sub in ("lists/partial", "cache/archives/partial", "state", "etc"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        (state / "etc" / "sources.list").write_text(SID_SOURCE)
        (state / "empty-status").touch()

    def options(self) -> list[str]:
        s = self.state
        return [
            f"-oDir::Etc::SourceList={s / 'etc' / 'sources.list'}",
            "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State={s / 'state'}",
            f"-oDir::State::Lists={s / 'lists'}",
            f"-oDir::State::status={s / 'empty-status'}",
            f"-oDir::Cache={s / 'cache'}",
            "-oDebug::NoLocking=1",
            "-oAPT::Architecture=amd64",
            "-oAPT::Architectures=amd64",
            "-oAcquire::Retries=3",
        ]

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        cmd = [tool, *self.options(), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:1] + list(args))} failed:\n{proc.stderr.strip()}")
        return proc.stdout

    def closure(self, packages: list[str]) -> list[str]:
        """Every package a fresh system needs for `packages` (the status file is empty)."""
        out = self.run("apt-get", "install", "--print-uris", "-qq", "--no-install-recommends", *packages)
        names = []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[1].endswith(".deb"):
                names.append(fields[1].split("_", 1)[0])
        return names


def sid_root_ready(root: Path, short: str) -> bool:
    return (root / "usr" / "bin" / f"python{short}").exists() and (root / "usr" / "bin" / f"python{short}d").exists() \
        and (root / "usr" / "include" / f"python{short}" / "internal").is_dir()


def provision_sid(cache: Path, short: str) -> Path:
    """Unpack python{short} from Debian sid into cache/sid-{short}/root and return that root."""
    home = cache / f"sid-{short}"
    root = home / "root"
    if sid_root_ready(root, short):
        return root
    apt = PrivateApt(home / "apt")
    apt.run("apt-get", "update", "-qq")
    # The debug build (python{short}d, Py_DEBUG) beside the release one: same stdlib, its own
    # libpython and extension modules.
    wanted = apt.closure([f"python{short}-minimal", f"libpython{short}-stdlib", f"python{short}-dbg"])
    # The -dev package is only unpacked for its headers; its own dependencies are not needed.
    wanted.append(f"libpython{short}-dev")
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        debs = Path(tmp)
        os.chmod(debs, 0o755)  # apt's download user must be able to write here
        apt.run("apt-get", "download", "-qq", *wanted, cwd=debs)
        staging = home / "root.partial"
        shutil.rmtree(staging, ignore_errors=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
    make_root_usable(staging)
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return root


def make_root_usable(root: Path) -> None:
    """Merged-/usr symlinks and the few directories a chrooted python expects."""
    for name in ("bin", "lib", "lib64", "sbin"):
        link = root / name
        if not link.exists() and not link.is_symlink():
            (root / "usr" / name).mkdir(parents=True, exist_ok=True)
            link.symlink_to(f"usr/{name}")
    for name in ("tmp", "dev", "proc"):
        (root / name).mkdir(exist_ok=True)
    os.chmod(root / "tmp", 0o1777)


def sid_interpreters(cache: Path, short: str) -> list[dict]:
    root = provision_sid(cache, short)
    include = [str(root / "usr" / "include" / f"python{short}"), str(root / "usr" / "include")]
    libdir = root / "usr" / "lib" / MULTIARCH
    return [
        {
            "name": f"sid-{short}-chroot",
            "version": short,
            "argv": ["chroot", str(root), f"/usr/bin/python{short}"],
            "launch": "chroot",
            "root": str(root),
            "include": include,
        },
        {
            "name": f"sid-{short}-loader",
            "version": short,
            "argv": [
                str(libdir / "ld-linux-x86-64.so.2"),
                "--library-path",
                str(libdir),
                str(root / "usr" / "bin" / f"python{short}"),
            ],
            "launch": "loader",
            "root": "/",
            "include": include,
        },
        {
            "name": f"sid-{short}-dbg",
            "version": short,
            "argv": [
                str(libdir / "ld-linux-x86-64.so.2"),
                "--library-path",
                str(libdir),
                str(root / "usr" / "bin" / f"python{short}d"),
            ],
            "launch": "loader",
            "root": "/",
            "include": include,
            "debug": True,
        },
    ]


def provision(cache: Path, only: str | None = None) -> tuple[list[dict], list[str]]:
    interpreters: list[dict] = []
    problems: list[str] = []
    if only in (None, "pyenv"):
        interpreters += pyenv_interpreters()
        have = {i["version"] for i in interpreters}
        problems += [f"pyenv {v} not installed" for v in PYENV_VERSIONS if minor_of(v) not in have]
    if only in (None, "system"):
        system = system_interpreters()
        interpreters += system
        if not system:
            problems.append(f"{DEBIAN_SYSTEM_PYTHON} not installed")
    if only in (None, "sid"):
        for short in SID_VERSIONS:
            try:
                interpreters += sid_interpreters(cache, short)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                problems.append(f"python{short} from Debian sid: {exc}")
    return interpreters, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the interpreters as JSON")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="download cache folder")
    parser.add_argument("--only", choices=("pyenv", "system", "sid"))
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    # Two suites on one machine, or two workers of one suite, provision at the same moment: one
    # unpacks while the other waits, then finds the root ready.
    with open(args.cache / ".provisioning.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        interpreters, problems = provision(args.cache, args.only)
    for problem in problems:
        print(f"provision_interpreters: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(interpreters, indent=1))
    else:
        for interp in interpreters:
            print(f"{interp['name']:<18} {' '.join(interp['argv'])}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
