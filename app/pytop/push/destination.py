"""Where --push sends, and under which names. Pure, but for the environment that credentials
come from (never the command line, which every user of the host can read in /proc).

The API is Grafana Pyroscope's HTTP ingest, as its server API reference describes it:
POST {URL}/ingest?name=...&from=...&until=...&format=pprof&spyName=pytop&sampleRate=..., the body
a gzipped pprof profile. `name` is "SERVICE{host=...,pid=...}": Pyroscope keeps SERVICE as the
service_name label, the labels as labels, and names the profile by its sample types
(process_cpu for cpu time, wall for wall time). Its rules, kept here: a service name of
[A-Za-z0-9_./-], label names of [A-Za-z0-9_.], a label value ends at ',' or '}'."""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from .. import errors

SPY_NAME = "pytop"
EVERY_SECONDS = 10.0  # how often each process's profile goes, as Pyroscope's own agents upload
TOKEN_ENV = "PYTOP_PUSH_TOKEN"  # a bearer token (Grafana Cloud: an access policy token)
USER_ENV, PASSWORD_ENV = "PYTOP_PUSH_USER", "PYTOP_PUSH_PASSWORD"  # basic auth (Grafana Cloud: its user id)
TENANT_ENV = "PYTOP_PUSH_TENANT"  # X-Scope-OrgID, for a multi-tenant server
MAX_SERVICE = 120  # characters: a command line cut to a name that still reads
NOT_IN_SERVICE = re.compile(r"[^A-Za-z0-9_./-]+")
NOT_IN_LABEL = re.compile(r"[,}{=\s\x00-\x1f\x7f]+")
LABEL_NAME = re.compile(r"^[A-Za-z0-9_.]{1,64}$")
RESERVED_LABELS = {"host", "pid", "service_name", "__name__"}
INTERPRETER = re.compile(r"^(python|pypy)[0-9.]*[dmu]*(-dbg)?$")
OPTIONS_WITH_VALUE = {"-W", "-X", "-Q"}  # the interpreter's options that take the next word


@dataclass(frozen=True)
class Destination:
    url: str  # the server, without a trailing '/': profiles go to {url}/ingest
    service: str | None  # --push-name; None: each process's program names it
    host: str  # this host, as a label
    headers: tuple[tuple[str, str], ...] = ()  # authorisation and tenant, from the environment
    every: float = EVERY_SECONDS  # seconds of samples in each profile
    labels: tuple[tuple[str, str], ...] = ()  # --push-label KEY=VALUE: on every profile, after host and pid

    @property
    def shown(self) -> str:
        """The server as the screen and the report name it: no path, no credentials."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    def ingest_url(self, service: str, pid: int, start: float, end: float, rate: float) -> str:
        """The request's URL for one process's profile of the wall-clock seconds [start, end]."""
        extra = "".join(f",{key}={value}" for key, value in self.labels)
        name = f"{service}{{host={label_value(self.host)},pid={pid}{extra}}}"
        query = {"name": name, "from": int(start), "until": max(int(end), int(start) + 1), "format": "pprof",
                 "spyName": SPY_NAME, "sampleRate": max(1, round(rate))}
        return f"{self.url}/ingest?{urlencode(query)}"


def destination(url: str, name: str | None, every: float = EVERY_SECONDS, labels: Sequence[str] = (),
                env: Mapping[str, str] = os.environ) -> Destination:
    """--push URL [--push-name NAME] [--push-interval SECONDS] [--push-label KEY=VALUE ...],
    checked; raises errors.UsageError."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise errors.UsageError(f"--push: {url!r} is not an http:// or https:// URL of a server")
    if parts.username is not None or parts.password is not None:
        raise errors.UsageError(f"--push: give no credentials in the URL (every user can read pytop's command "
                                f"line): set {TOKEN_ENV}, or {USER_ENV} and {PASSWORD_ENV}")
    if parts.query or parts.fragment:
        raise errors.UsageError("--push: the server's URL takes no query or fragment (pytop adds /ingest?...)")
    try:
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise errors.UsageError(f"--push: {url!r} has a port that is not a number") from None
    if name is not None and not service_name_ok(name):
        raise errors.UsageError(f"--push-name: {name!r} is not a service name Pyroscope takes: letters, digits "
                                f"and _ . / - only, at most {MAX_SERVICE} characters")
    base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return Destination(base, name, socket.gethostname() or "unknown", credentials(env), every, extra_labels(labels))


def extra_labels(given: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """--push-label KEY=VALUE, each: a label name Pyroscope takes, not one pytop sets, a value
    that its parser reads back whole."""
    labels: dict[str, str] = {}
    for text in given:
        key, eq, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not LABEL_NAME.match(key) or not value:
            raise errors.UsageError(f"--push-label: {text!r} is not KEY=VALUE with a key of letters, digits, _ and "
                                    ". (env=prod)")
        if key in RESERVED_LABELS or key.startswith("__"):
            raise errors.UsageError(f"--push-label: {key} is set by pytop or Pyroscope itself")
        if NOT_IN_LABEL.search(value):
            raise errors.UsageError(f"--push-label: the value of {key} holds a ',', a brace, a '=', a space or a "
                                    "control character, which Pyroscope's names cannot carry")
        labels[key] = value
    return tuple(labels.items())


def credentials(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    token, user, password = env.get(TOKEN_ENV), env.get(USER_ENV), env.get(PASSWORD_ENV)
    headers = []
    if token and (user or password):
        raise errors.UsageError(f"--push: {TOKEN_ENV} and {USER_ENV}/{PASSWORD_ENV} are both set: keep one")
    if token:
        headers.append(("Authorization", f"Bearer {token.strip()}"))
    elif user or password:
        if not (user and password):
            raise errors.UsageError(f"--push: basic auth needs both {USER_ENV} and {PASSWORD_ENV}")
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers.append(("Authorization", f"Basic {pair}"))
    tenant = env.get(TENANT_ENV)
    if tenant:
        headers.append(("X-Scope-OrgID", tenant.strip()))
    for key, value in headers:
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise errors.UsageError(f"--push: the {key} from the environment holds a control character")
    return tuple(headers)


def plain_text_credentials(dest: Destination) -> bool:
    """Credentials would cross the network unencrypted (http:// to a host that is not this one)."""
    parts = urlsplit(dest.url)
    if parts.scheme == "https" or not dest.headers:
        return False
    host = parts.hostname or ""
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host != "localhost"


def service_name_ok(name: str) -> bool:
    return 0 < len(name) <= MAX_SERVICE and not NOT_IN_SERVICE.search(name)


def service_name(command: str) -> str:
    """A process's program, as a service name: `python3 -m celery worker` -> celery, `python
    manage.py runserver` -> manage, `/srv/venv/bin/gunicorn app:app` -> gunicorn, a process title
    `gunicorn: worker [app]` -> gunicorn."""
    words = command.split()
    names = []
    if words:
        first = os.path.basename(words[0]).rstrip(":")
        if INTERPRETER.match(first):
            names.append(_script_of(words[1:]))
        names.append(first)
    for name in names:  # (a script named in another alphabet: the interpreter's name)
        cleaned = NOT_IN_SERVICE.sub("_", name).strip("_.-/")
        if cleaned:
            return cleaned[:MAX_SERVICE]
    return "python"


def _script_of(arguments: list[str]) -> str:
    """The module or script an interpreter's arguments run ('' for -c or none)."""
    skip = False
    for at, word in enumerate(arguments):
        if skip:
            skip = False
            continue
        if word == "-m":
            return arguments[at + 1] if at + 1 < len(arguments) else ""
        if word.startswith("-m") and len(word) > 2:
            return word[2:]
        if word == "-c" or word.startswith("-c"):
            return ""
        if word in OPTIONS_WITH_VALUE:
            skip = True
            continue
        if word.startswith("-"):
            continue
        name = os.path.basename(word)
        return name[:-3] if name.endswith(".py") else name
    return ""


def label_value(text: str) -> str:
    """A label's value that Pyroscope's parser reads back whole."""
    return NOT_IN_LABEL.sub("_", text).strip("_")[:MAX_SERVICE] or "unknown"
