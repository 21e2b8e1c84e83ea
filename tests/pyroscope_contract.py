"""A loopback server that keeps Grafana Pyroscope's published rules for its ingest API, for the
contract tests of --push (no Pyroscope can be installed here). The rules, from its server API
reference (configure-server/about-server-api) and its handler's parsing of `name`:

- POST /ingest, the profile in the body, metadata in the query;
- `name`, `from` and `until` are required (UNIX times: `from` not after `until`);
- `name` is SERVICE{key=value,...}: a service name of [A-Za-z0-9_./-], label names of
  [A-Za-z0-9_.] that are not reserved (__name__), a value ending at ',' or '}';
- format=pprof: the body is a (gzipped) pprof profile; `sampleRate` is a number when given;
- in multi-tenant mode, X-Scope-OrgID names the tenant (auth is a proxy's: here a token or a
  user and password the test sets).

The body is decoded with Google's protobuf runtime (a descriptor of profile.proto's fields, built
here), independent of pytop's encoder and of the tests' own reader."""

from __future__ import annotations

import base64
import gzip
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

SERVICE = re.compile(r"^[A-Za-z0-9_./-]+$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9_.]+$")

# profile.proto (github.com/google/pprof/proto/profile.proto), the fields a CPU profile uses.
PROFILE_PROTO = """
name: "profile.proto" package: "perftools.profiles" syntax: "proto3"
message_type { name: "Profile"
  field { name: "sample_type" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@ValueType" }
  field { name: "sample" number: 2 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@Sample" }
  field { name: "location" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@Location" }
  field { name: "function" number: 5 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@Function" }
  field { name: "string_table" number: 6 label: LABEL_REPEATED type: TYPE_STRING }
  field { name: "time_nanos" number: 9 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "duration_nanos" number: 10 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "period_type" number: 11 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: "@ValueType" }
  field { name: "period" number: 12 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "comment" number: 13 label: LABEL_REPEATED type: TYPE_INT64 }
  field { name: "default_sample_type" number: 14 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
message_type { name: "ValueType"
  field { name: "type" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "unit" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
message_type { name: "Sample"
  field { name: "location_id" number: 1 label: LABEL_REPEATED type: TYPE_UINT64 }
  field { name: "value" number: 2 label: LABEL_REPEATED type: TYPE_INT64 }
  field { name: "label" number: 3 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@Label" }
}
message_type { name: "Label"
  field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "str" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "num" number: 3 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
message_type { name: "Location"
  field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_UINT64 }
  field { name: "line" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: "@Line" }
}
message_type { name: "Line"
  field { name: "function_id" number: 1 label: LABEL_OPTIONAL type: TYPE_UINT64 }
  field { name: "line" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
message_type { name: "Function"
  field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_UINT64 }
  field { name: "name" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "system_name" number: 3 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "filename" number: 4 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
"""


def _profile_class() -> Any:
    pool = descriptor_pool.DescriptorPool()
    text = PROFILE_PROTO.replace("@", ".perftools.profiles.")
    pool.Add(text_format.Parse(text, descriptor_pb2.FileDescriptorProto()))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))


ProfileMessage = _profile_class()


@dataclass
class Decoded:
    """A profile as the server read it: its stacks (innermost first, as (function, filename,
    line)), values and labels per sample."""

    sample_types: list[tuple[str, str]]
    samples: list[tuple[tuple[tuple[str, str, int], ...], list[int], dict[str, Any]]]
    time_nanos: int
    duration_nanos: int
    period: int
    comments: list[str]


def decode(body: bytes) -> Decoded:
    data = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    p = ProfileMessage()
    p.ParseFromString(data)
    s = list(p.string_table)
    if not s or s[0] != "":
        raise ValueError("string_table[0] must be the empty string")
    functions = {f.id: (s[f.name], s[f.filename]) for f in p.function}
    locations = {}
    for loc in p.location:
        if len(loc.line) != 1:
            raise ValueError(f"location {loc.id} has {len(loc.line)} lines")
        name, filename = functions[loc.line[0].function_id]
        locations[loc.id] = (name, filename, loc.line[0].line)
    samples = []
    for sample in p.sample:
        if len(sample.value) != len(p.sample_type):
            raise ValueError("a sample's values do not match the sample types")
        labels = {s[lab.key]: (s[lab.str] if lab.str else lab.num) for lab in sample.label}
        samples.append((tuple(locations[i] for i in sample.location_id), list(sample.value), labels))
    return Decoded([(s[t.type], s[t.unit]) for t in p.sample_type], samples, p.time_nanos, p.duration_nanos,
                   p.period, [s[i] for i in p.comment])


def parse_name(name: str) -> tuple[str, dict[str, str]]:
    """SERVICE{k=v,...} as Pyroscope's parser reads it; raises ValueError where it refuses."""
    service, _, rest = name.partition("{")
    service = service.strip()
    if not SERVICE.match(service):
        raise ValueError(f"invalid service name: {service!r}")
    labels: dict[str, str] = {}
    if rest:
        body, _, _ = rest.partition("}")
        for pair in filter(None, body.split(",")):
            key, eq, value = pair.partition("=")
            key = key.strip()
            if not eq or not LABEL_NAME.match(key) or key == "__name__":
                raise ValueError(f"invalid label name: {key!r}")
            labels[key] = value.strip()
    return service, labels


@dataclass
class Received:
    service: str
    labels: dict[str, str]
    start: int
    end: int
    query: dict[str, str]
    headers: dict[str, str]
    profile: Decoded
    size: int = 0  # bytes of the body (the gzipped profile)


@dataclass
class Pyroscope:
    """The loopback server's state: what it took, what it refused, and how it behaves."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (status, why)
    fail_next: int = 0  # answer this many requests 503 first (a server that is down for a while)
    retry_after: str | None = None  # with those 503s
    token: str | None = None  # require "Authorization: Bearer <token>"
    basic: tuple[str, str] | None = None  # require basic auth
    tenant: str | None = None  # require X-Scope-OrgID
    hold: threading.Event | None = None  # when given: each request waits until it is set (a hung server)
    arrived: int = 0  # requests that reached the server (answered or not)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def taken(self) -> list[Received]:
        with self.lock:
            return list(self.received)


def _handler(state: Pyroscope) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._answer(405, "method not allowed")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with state.lock:
                state.arrived += 1
            if state.hold is not None:
                state.hold.wait(30)
            status, why = self._judge(body)
            if status != 200:
                with state.lock:
                    state.refused.append((status, why))
            self._answer(status, why)

        def _judge(self, body: bytes) -> tuple[int, str]:
            parts = urlsplit(self.path)
            if parts.path != "/ingest":
                return 404, "not found"
            with state.lock:
                if state.fail_next > 0:
                    state.fail_next -= 1
                    return 503, "ingester unavailable"
            auth = self.headers.get("Authorization")
            if state.token is not None and auth != f"Bearer {state.token}":
                return 401, "unauthorized"
            if state.basic is not None:
                pair = base64.b64encode(":".join(state.basic).encode()).decode()
                if auth != f"Basic {pair}":
                    return 401, "unauthorized"
            if state.tenant is not None and self.headers.get("X-Scope-OrgID") != state.tenant:
                return 401, "no org id"
            query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            for required in ("name", "from", "until"):
                if not query.get(required):
                    return 400, f"{required} is required"
            try:
                service, labels = parse_name(query["name"])
                start, end = int(query["from"]), int(query["until"])
                if "sampleRate" in query:
                    int(query["sampleRate"])
            except ValueError as exc:
                return 400, f"failed to parse request metadata: {exc}"
            if start > end:
                return 400, "from is after until"
            if query.get("format") != "pprof":
                return 400, "this server takes format=pprof only"
            try:
                profile = decode(body)
            except Exception as exc:  # what a real server would answer a profile it cannot parse
                return 422, f"failed to parse pprof: {exc}"
            with state.lock:
                state.received.append(Received(service, labels, start, end, query,
                                               {k: v for k, v in self.headers.items()}, profile, len(body)))
            return 200, ""

        def _answer(self, status: int, why: str) -> None:
            data = why.encode()
            self.send_response(status)
            if status == 503 and state.retry_after is not None:
                self.send_header("Retry-After", state.retry_after)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def pyroscope(**behaviour: Any) -> Iterator[Pyroscope]:
    """A contract server on a loopback port for the length of the block."""
    state = Pyroscope(**behaviour)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()
        server.shutdown()
        server.server_close()
