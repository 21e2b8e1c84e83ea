"""--push: profiles sent on to Grafana Pyroscope's ingest API. No Pyroscope server can be
installed here: these are CONTRACT TESTS against a loopback server written to Pyroscope's
published rules (pyroscope_contract.py), which decodes each profile with Google's protobuf
runtime and refuses what Pyroscope refuses. What it received is held against what pytop sampled
(the report's table of the same run) and against the kernel."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import helpers
import pyroscope_contract as contract
from pytop import errors
from pytop.core.model import PushStatus
from pytop.core.profile import Sample, Upload
from pytop.push import destination as dest_module
from pytop.push.destination import Destination, destination, label_value, service_name
from pytop.push.sender import Pusher
from pytop.report import format as fmt


def upload(pid: int = 4242, seconds: float = 10.0, command: str = "python3 checkout.py") -> Upload:
    end = time.time()
    samples = (
        Sample((("handle", "/srv/app.py", 12), ("main", "/srv/app.py", 30)), pid, 101, "MainThread", 900, 9_000_000),
        Sample((("hash", "/srv/crypto.py", 7), ("main", "/srv/app.py", 31)), pid, 102, "worker;1", 100, 1_000_000),
    )
    return Upload(pid, command, samples, end - seconds, end, 100.0, "cpu")


def served(server: contract.Pyroscope, **kwargs: Any) -> Destination:
    return destination(server.url, kwargs.pop("name", None), env=kwargs.pop("env", {}))


def sent_until(pusher: Pusher, test: Any) -> PushStatus:
    helpers.wait_until(lambda: test(pusher.status()), timeout=30, what=pusher.status)
    return pusher.status()


# ---- what the server receives ----------------------------------------------------------------

def test_contract_a_profile_arrives_as_pyroscope_reads_it() -> None:
    """The request keeps the ingest API's rules, and the profile decodes (protobuf's own
    runtime) to the frames, values and labels pytop sent."""
    with contract.pyroscope() as server:
        pusher = Pusher(served(server))
        pusher.start()
        sent = upload()
        pusher.put([sent])
        sent_until(pusher, lambda s: s.sent == 1)
        status = pusher.close()
    assert status.sent == 1 and not status.lost and server.refused == []
    (got,) = server.taken()
    assert got.service == "checkout" and got.labels == {"host": label_value(socket.gethostname()), "pid": "4242"}
    assert got.query["format"] == "pprof" and got.query["spyName"] == "pytop" and got.query["sampleRate"] == "100"
    assert got.start == int(sent.start) and got.end >= got.start and got.end - got.start in (9, 10, 11)
    assert got.headers["Content-Type"] == "application/octet-stream" and "Authorization" not in got.headers
    p = got.profile
    assert p.sample_types == [("samples", "count"), ("cpu", "nanoseconds")]
    assert p.comments == ["pytop: pid 4242, python3 checkout.py"]
    assert abs(p.time_nanos - sent.start * 1e9) < 1e3 and abs(p.duration_nanos - 10e9) < 1e3
    got_samples = [(frames, values, labels["thread_id"], labels["thread_name"]) for frames, values, labels in p.samples]
    assert sorted(got_samples) == sorted((s.frames, [s.samples, s.nanoseconds], s.tid, s.thread_name)
                                         for s in sent.samples)


def test_contract_credentials_come_from_the_environment() -> None:
    """A bearer token, or a user and password, and the tenant: as the server's proxy wants them."""
    with contract.pyroscope(token="s3cret", tenant="team-a") as server:
        pusher = Pusher(destination(server.url, None, env={"PYTOP_PUSH_TOKEN": "s3cret",
                                                           "PYTOP_PUSH_TENANT": "team-a"}))
        pusher.start()
        pusher.put([upload()])
        assert sent_until(pusher, lambda s: s.sent or s.refused).sent == 1
        pusher.close()
    with contract.pyroscope(basic=("12345", "glc_token")) as server:
        pusher = Pusher(destination(server.url, None, env={"PYTOP_PUSH_USER": "12345",
                                                           "PYTOP_PUSH_PASSWORD": "glc_token"}))
        pusher.start()
        pusher.put([upload()])
        assert sent_until(pusher, lambda s: s.sent or s.refused).sent == 1
        pusher.close()


def test_contract_a_refusal_is_said_and_not_sent_again() -> None:
    """401 (no token): refused, counted, its reason kept; the next profile is still tried."""
    with contract.pyroscope(token="s3cret") as server:
        pusher = Pusher(served(server))
        pusher.start()
        pusher.put([upload(), upload()])
        status = sent_until(pusher, lambda s: s.refused == 2)
        assert status.sent == 0 and status.last_refusal == "HTTP 401: unauthorized" and status.failing is None
        assert len(server.refused) == 2  # each tried once
        status = pusher.close()
    assert status.lost == 2 and "2 refused by the server (HTTP 401: unauthorized)" in fmt.push_summary(status)


def test_contract_a_server_that_is_down_for_a_while_gets_everything_later() -> None:
    """503 twice: the same profile is tried again (after a backoff), none is lost, and while it
    fails the status says so."""
    with contract.pyroscope(fail_next=2) as server:
        pusher = Pusher(served(server))
        pusher.start()
        pusher.put([upload(pid=1), upload(pid=2)])
        failing = sent_until(pusher, lambda s: s.failing is not None)
        assert failing.failing == "HTTP 503: ingester unavailable" and failing.waiting == 2
        status = sent_until(pusher, lambda s: s.sent == 2)
        pusher.close()
    assert status.failing is None and not status.lost
    assert [r.labels["pid"] for r in server.taken()] == ["1", "2"]  # in order, each once


def test_contract_a_hung_server_never_holds_sampling_and_the_queue_is_bounded() -> None:
    """A server that does not answer: put() returns at once however much waits, the oldest
    profiles go first when the queue is full, and the end waits only its few seconds."""
    hold = threading.Event()
    with contract.pyroscope(hold=hold) as server:
        pusher = Pusher(served(server), capacity=3)
        pusher.start()
        pusher.put([upload(pid=1)])
        helpers.wait_until(lambda: server.arrived == 1)  # the first is in the server's hands
        for pid in range(2, 12):  # (a put that waited would hang this test: pytest-timeout ends it)
            pusher.put([upload(pid=pid)])
        status = pusher.status()
        assert status.dropped == 7 and status.waiting == 4 and status.sent == 0
        status = pusher.close(flush_seconds=0.5)
        hold.set()
    assert status.closed and status.unsent == 4 and status.dropped == 7 and status.lost == 11
    said = fmt.push_summary(status)
    assert "7 dropped for room" in said and "4 not sent by the end" in said


def test_the_queue_is_bounded_by_the_frames_it_holds_too() -> None:
    """Deep stacks make big profiles: the queue keeps at most its frames' worth (the newest)."""
    hold = threading.Event()
    with contract.pyroscope(hold=hold) as server:
        pusher = Pusher(served(server), frames=10)  # each upload() holds 4 frames
        pusher.start()
        pusher.put([upload(pid=1)])
        helpers.wait_until(lambda: server.arrived == 1)
        pusher.put([upload(pid=pid) for pid in range(2, 7)])
        status = pusher.status()
        pusher.close(flush_seconds=0.2)
        hold.set()
    assert status.dropped == 3 and status.waiting == 3  # two queued (8 frames) and the one being sent


def test_contract_a_redirect_is_not_followed() -> None:
    """Following it would send the profile (and credentials) elsewhere, or turn the POST into a
    GET without it: refused, saying where the server points."""

    class Redirecting(contract.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", "http://elsewhere.example/ingest")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = contract.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        pusher = Pusher(destination(f"http://127.0.0.1:{server.server_address[1]}", None, env={}))
        pusher.start()
        pusher.put([upload()])
        status = sent_until(pusher, lambda s: s.refused == 1)
        pusher.close()
    finally:
        server.shutdown()
        server.server_close()
    assert "redirects to http://elsewhere.example/ingest" in (status.last_refusal or "")


def test_contract_the_server_refuses_what_pyroscope_refuses() -> None:
    """The loopback server is only worth its tests if it refuses as Pyroscope does."""
    with contract.pyroscope() as server:
        import urllib.error
        import urllib.request

        body = b""
        for query, why in (("from=1&until=2", "name is required"), ("name=a&until=2", "from is required"),
                           ("name=a&from=1", "until is required"), ("name=a%20b&from=1&until=2&format=pprof",
                                                                    "invalid service name"),
                           ("name=a%7B__name__%3Dx%7D&from=1&until=2&format=pprof", "invalid label name")):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(urllib.request.Request(f"{server.url}/ingest?{query}", data=body), timeout=10)
            assert caught.value.code == 400 and why in caught.value.read().decode()


# ---- names and checks (pure) -----------------------------------------------------------------

@pytest.mark.parametrize(("command", "service"), [
    ("python3 -m celery -A proj worker", "celery"),
    ("/usr/bin/python3.12 -X dev -u manage.py runserver", "manage"),
    ("/srv/venv/bin/gunicorn app:app -w 4", "gunicorn"),
    ("gunicorn: worker [app:app]", "gunicorn"),
    ("python -c  ⏎ import time", "python"),
    ("python", "python"),
    ("/opt/py/bin/python3.13d -W ignore /srv/jobs/nightly-report.py --since 1d", "nightly-report"),
    ("python3 /srv/jobs/日次.py", "python3"),
    ("uwsgi --ini app.ini", "uwsgi"),
    ("", "python"),
])
def test_a_process_is_named_by_its_program(command: str, service: str) -> None:
    assert service_name(command) == service


@given(st.text(max_size=200))
def test_any_command_names_a_service_pyroscope_takes(command: str) -> None:
    name = service_name(command)
    assert contract.parse_name(name + "{}") == (name, {})


@given(st.text(max_size=200), st.integers(min_value=1, max_value=2**22))
def test_any_host_and_pid_make_a_name_pyroscope_reads_back(host: str, pid: int) -> None:
    url = Destination("http://h:4040", None, host).ingest_url("svc", pid, 100.0, 110.0, 100.0)
    from urllib.parse import parse_qs, urlsplit
    name = parse_qs(urlsplit(url).query)["name"][0]
    service, labels = contract.parse_name(name)
    assert service == "svc" and labels == {"host": label_value(host), "pid": str(pid)}


def test_contract_labels_given_arrive_on_every_profile() -> None:
    with contract.pyroscope() as server:
        pusher = Pusher(destination(server.url, "shop", labels=["env=prod", "region=eu-west-1", "env=staging"],
                                    env={}))
        pusher.start()
        pusher.put([upload()])
        sent_until(pusher, lambda s: s.sent == 1)
        pusher.close()
    (got,) = server.taken()
    assert got.service == "shop" and got.labels == {"host": label_value(socket.gethostname()), "pid": "4242",
                                                    "env": "staging", "region": "eu-west-1"}


@pytest.mark.parametrize(("labels", "said"), [
    (["env"], "is not KEY=VALUE"), (["=prod"], "is not KEY=VALUE"), (["env="], "is not KEY=VALUE"),
    (["my-env=prod"], "is not KEY=VALUE"), (["pid=1"], "set by pytop or Pyroscope"),
    (["__name__=x"], "set by pytop or Pyroscope"), (["team=a,b"], "cannot carry"), (["team=a}b"], "cannot carry"),
])
def test_a_bad_label_is_one_clear_line(labels: list[str], said: str) -> None:
    with pytest.raises(errors.UsageError, match=said):
        destination("http://h:4040", None, labels=labels, env={})


@pytest.mark.parametrize(("url", "env", "said"), [
    ("ftp://h:4040", {}, "not an http:// or https:// URL"),
    ("http://", {}, "not an http:// or https:// URL"),
    ("http://user:pw@h:4040", {}, "give no credentials in the URL"),
    ("http://h:4040/?x=1", {}, "takes no query"),
    ("http://h:port", {}, "port that is not a number"),
    ("http://h:4040", {"PYTOP_PUSH_TOKEN": "t", "PYTOP_PUSH_USER": "u"}, "both set"),
    ("http://h:4040", {"PYTOP_PUSH_USER": "u"}, "needs both"),
    ("http://h:4040", {"PYTOP_PUSH_TOKEN": "t\r\nX-Evil: 1"}, "control character"),
])
def test_a_bad_destination_is_one_clear_line(url: str, env: dict[str, str], said: str) -> None:
    with pytest.raises(errors.UsageError, match=said):
        destination(url, None, env=env)


def test_the_url_keeps_a_path_prefix_and_names_the_server_plainly() -> None:
    d = destination("https://profiles.example.net/pyroscope/", None, env={"PYTOP_PUSH_TOKEN": "t"})
    assert d.url == "https://profiles.example.net/pyroscope" and d.shown == "https://profiles.example.net"
    assert d.ingest_url("svc", 7, 100.4, 110.9, 99.6).startswith("https://profiles.example.net/pyroscope/ingest?")
    assert d.headers == (("Authorization", "Bearer t"),) and not dest_module.plain_text_credentials(d)
    assert dest_module.plain_text_credentials(destination("http://pyro:4040", None, env={"PYTOP_PUSH_TOKEN": "t"}))
    assert not dest_module.plain_text_credentials(destination("http://127.0.0.1:4040", None,
                                                              env={"PYTOP_PUSH_TOKEN": "t"}))


@pytest.mark.process  # pytop run as its users run it
@pytest.mark.parametrize(("argv", "said"), [
    (("--batch", "--push-name", "svc", "1"), "--push-name goes with --push URL"),
    (("--batch", "--push-interval", "5", "1"), "--push-interval goes with --push URL"),
    (("--batch", "--push-label", "env=prod", "1"), "--push-label goes with --push URL"),
    (("--batch", "--push", "http://h:4040", "--push-label", "a b=c", "1"), "is not KEY=VALUE"),
    (("--dump", "--push", "http://h:4040", "1"), "not with --dump"),
    (("--batch", "--all", "--push", "http://h:4040"), "--all --batch only lists"),
    (("--batch", "--push", "http://h:4040", "--push-name", "my app", "1"), "not a service name"),
    (("--batch", "--push", "http://u:p@h:4040", "1"), "give no credentials in the URL"),
    (("--batch", "--push", "http://h:4040", "--push-interval", "0.2", "1"), "from 1 to 3600 seconds"),
])
def test_push_usage_errors(argv: tuple[str, ...], said: str) -> None:
    result = helpers.run_pytop(*argv)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


# ---- a real run: what was pushed is what was sampled ---------------------------------------

def pushed_by_thread(received: list[contract.Received]) -> dict[int, int]:
    by_thread: dict[int, int] = defaultdict(int)
    for r in received:
        for _, values, labels in r.profile.samples:
            by_thread[labels.get("thread_id", 0)] += values[1]
    return by_thread


def test_contract_a_batch_run_pushes_what_its_table_shows(some_interp: dict[str, Any]) -> None:
    """Every profile of the run, one per interval, back to back; their CPU, thread by thread,
    is the report's own; the name is --push-name's, the labels the host's and the pid."""
    with contract.pyroscope() as server, helpers.running(some_interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--json", "--duration", "5", "--push", server.url, "--push-name",
                                   "orders-api", "--push-interval", "2", str(t.pid))
        received = server.taken()
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["push"]["sent"] == len(received) >= 3 and document["push"]["unsent"] == 0
    assert f"pushed {len(received)} profiles to {server.url}" in result.stderr
    assert {(r.service, r.labels["pid"]) for r in received} == {("orders-api", str(t.pid))}
    spans = sorted((r.profile.time_nanos, r.profile.duration_nanos) for r in received)
    for (start, length), (next_start, _) in zip(spans, spans[1:]):
        assert abs(start + length - next_start) < 1e6  # back to back: no time lost between them
    pushed = pushed_by_thread(received)
    for thread in document["per_thread"]:
        assert abs(pushed.get(thread["native_id"], 0) / 1e9 - thread["own_time"]) < 2e-6 * len(received), thread
    assert abs(sum(pushed.values()) / 1e9 - document["attributed_time"]) < 1e-5 * len(received)
    spinner = [frames for r in received for frames, values, labels in r.profile.samples
               if labels.get("thread_name") == "spinner" and values[1]]
    assert spinner and all(frames[0][1].endswith("stacks.py") for frames in spinner)


def test_contract_each_process_of_a_family_is_its_own_profile(target_interp: dict[str, Any]) -> None:
    """-s: each process's samples go in a profile of its own, labelled with its pid and named
    by its program."""
    with contract.pyroscope() as server, helpers.running(target_interp, "parent.py", "2") as t:
        result = helpers.run_pytop("-s", "--batch", "--json", "--duration", "3", "--push", server.url,
                                   "--push-interval", "2", str(t.pid))
        received = server.taken()
    assert result.returncode == 0, result.stderr
    pids = {int(r.labels["pid"]) for r in received}
    assert t.pid in pids and len(pids) == 3, pids
    for r in received:
        assert {labels["pid"] for _, _, labels in r.profile.samples} == {int(r.labels["pid"])}
        assert r.service == "parent"
    work = [r for r in received if any(frames[0][0] == "child_work" for frames, _, _ in r.profile.samples)]
    assert {int(r.labels["pid"]) for r in work} == pids - {t.pid}


def test_contract_a_run_that_could_not_push_says_so_and_fails(target_interp: dict[str, Any]) -> None:
    """Nothing listens: the report is printed, the line says what was lost and why, and the exit
    status tells a script that the server lacks the run."""
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{spare.getsockname()[1]}"  # bound, not listening: refused
        with helpers.running(target_interp, "stacks.py") as t:
            result = helpers.run_pytop("--batch", "--duration", "2", "--push", url, "--push-interval", "1",
                                       str(t.pid))
    assert result.returncode == 1 and "Function (filename)" in result.stdout
    assert f"pytop: pushed 0 profiles to {url}" in result.stderr and "not sent by the end" in result.stderr
    assert "Connection refused" in result.stderr and "Traceback" not in result.stderr


async def test_contract_the_live_view_says_how_pushing_goes(target_interp: dict[str, Any]) -> None:
    """The header counts what the server took; a server that refuses gets a banner saying why,
    while sampling and the table go on."""
    from dataclasses import replace

    from pytop.process.attach import attach
    from pytop.run import info_of
    from pytop.sampling.sampler import Sampler, Settings
    from pytop.ui.app import PytopApp
    from pytop.ui.widgets import ProcessHeader

    for token, expected in ((None, ""), ("s3cret", "refused by the server (HTTP 401: unauthorized)")):
        with contract.pyroscope(token=token) as server, helpers.running(target_interp, "stacks.py") as t:
            target = attach(t.pid)
            pusher = Pusher(replace(served(server), every=1.0))
            pusher.start()
            sampler = Sampler(target.unwinder, info_of(target), Settings(), pusher=pusher)
            app = PytopApp(sampler)
            async with app.run_test(size=(140, 30)) as pilot:
                while not (pusher.status().sent >= 2 or pusher.status().refused >= 2):
                    await pilot.pause(0.1)
                await pilot.pause(1.2)  # a refresh shows it
                header = str(app.query_one(ProcessHeader).render())
                banner = app.query_one("#push-banner")
                shown = str(banner.render()) if banner.display else ""
                assert sampler.running
            sampler.stop()
            status = pusher.close()
            target.close()
        if token is None:
            assert re.search(r"pushed [1-9]", header) and not shown and status.sent >= 2 and not status.lost, \
                (header, status)
        else:
            assert expected in shown and status.sent == 0, (shown, status)
