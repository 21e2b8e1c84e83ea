"""The sender: a thread of its own that encodes each process's profile and POSTs it to the
server. Sampling hands profiles over with put(), which never waits: the queue is bounded and
drops its oldest profile to make room (counted and said). A failure that may pass (no
connection, a timeout, 429, 5xx) is tried again after a backoff that doubles to a minute; a
profile the server refuses (another 4xx) is not sent again. At the end, close() gives what is
queued a few seconds to go, and says what did not."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import replace
from http.client import HTTPException

from ..core.model import PushStatus
from ..core.profile import Upload
from ..core.visible import visible
from ..report import pprof
from .destination import Destination, service_name

QUEUE_PROFILES = 120  # profiles waiting to go: 20 minutes of one process
# ... and frames in them: a deep recursion's profile holds thousands of stacks of thousands of
# frames, and a server that is down for long must not make pytop big.
QUEUE_FRAMES = 1_000_000
TIMEOUT_SECONDS = 10.0  # one request
BACKOFF_FIRST, BACKOFF_MOST = 1.0, 60.0  # seconds between tries of a failing server
FLUSH_SECONDS = 5.0  # at the end: how long what is queued may take to go
REASON_CHARACTERS = 160  # of a server's answer, said on screen


class Failure(Exception):
    def __init__(self, reason: str, again: bool, wait: float | None = None):
        super().__init__(reason)
        self.again = again  # may pass: try again later
        self.wait = wait  # seconds the server asked for (Retry-After)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is a failure: following one would send the profile (and its credentials) to
    another address, or turn the POST into a GET without it."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


class Pusher:
    def __init__(self, destination: Destination, capacity: int = QUEUE_PROFILES, frames: int = QUEUE_FRAMES):
        self.destination = destination
        self._capacity = capacity
        self._most_frames = frames
        self._frames = 0  # in the queue
        self._queue: deque[Upload] = deque()
        self._lock = threading.Lock()
        self._news = threading.Condition(self._lock)
        self._closing_at: float | None = None  # CLOCK_MONOTONIC deadline once closing
        self._status = PushStatus(destination.shown)
        self._current = 0  # 1 while a profile is being tried
        self._opener = urllib.request.build_opener(NoRedirects())
        self._thread = threading.Thread(target=self._run, name="pytop-push", daemon=True)

    # ---- any thread -------------------------------------------------------------------------

    @property
    def every(self) -> float:
        return self.destination.every

    def start(self) -> None:
        self._thread.start()

    def put(self, uploads: list[Upload]) -> None:
        """Queue profiles to send; never waits (the oldest queued go to make room)."""
        if not uploads:
            return
        with self._lock:
            if self._closing_at is not None:
                return
            dropped = 0
            for upload in uploads:
                size = frames_in(upload)
                self._queue.append(upload)
                self._frames += size
                while len(self._queue) > self._capacity or (self._frames > self._most_frames and len(self._queue) > 1):
                    self._frames -= frames_in(self._queue.popleft())
                    dropped += 1
            self._update(dropped=self._status.dropped + dropped)
            self._news.notify()

    def status(self) -> PushStatus:
        with self._lock:
            return self._status

    def close(self, flush_seconds: float = FLUSH_SECONDS) -> PushStatus:
        """Send what is queued within `flush_seconds`, then stop; what did not go is dropped."""
        with self._lock:
            self._closing_at = time.monotonic() + flush_seconds
            self._news.notify()
        if self._thread.is_alive():
            self._thread.join(flush_seconds + 1.0)
        with self._lock:
            left = len(self._queue) + self._current
            self._queue.clear()
            self._frames = 0
            self._current = 0
            self._update(unsent=self._status.unsent + left, closed=True)
            return self._status

    # ---- the sender's thread ----------------------------------------------------------------

    def _update(self, **changes: object) -> None:
        """(lock held)"""
        self._status = replace(self._status, **changes, waiting=len(self._queue) + self._current)  # type: ignore[arg-type]

    def _run(self) -> None:
        try:
            self._send_all()
        except Exception as exc:  # a bug in pytop: said where pushing is said, never a traceback on screen
            with self._lock:
                said = visible(f"pytop's sender stopped: {type(exc).__name__}: {exc}")
                self._update(failing=said[:REASON_CHARACTERS])

    def _send_all(self) -> None:
        backoff = BACKOFF_FIRST
        while True:
            with self._lock:
                while not self._queue and self._closing_at is None:
                    self._news.wait()
                if not self._queue or self._past_deadline():
                    return
                upload = self._queue.popleft()
                self._frames -= frames_in(upload)
                self._current = 1
                self._update()
            body = encoded(upload)
            while True:
                try:
                    self._send(upload, body)
                except Failure as failure:
                    with self._lock:
                        if not failure.again:
                            self._current = 0
                            self._update(refused=self._status.refused + 1, last_refusal=str(failure), failing=None)
                            break
                        self._update(failing=str(failure))
                        wait = min(failure.wait if failure.wait is not None else backoff, BACKOFF_MOST)
                        backoff = min(backoff * 2, BACKOFF_MOST)
                        if not self._wait(wait):  # the end came first: close() counts it unsent
                            return
                    continue
                with self._lock:
                    self._current = 0
                    self._update(sent=self._status.sent + 1, failing=None)
                backoff = BACKOFF_FIRST
                break

    def _past_deadline(self) -> bool:
        """(lock held)"""
        return self._closing_at is not None and time.monotonic() >= self._closing_at

    def _wait(self, seconds: float) -> bool:
        """(lock held) Wait before trying again; False if the end comes first."""
        until = time.monotonic() + seconds
        while True:
            if self._closing_at is not None:
                until = min(until, self._closing_at)
            left = until - time.monotonic()
            if left <= 0:
                return not self._past_deadline()
            self._news.wait(left)

    def _timeout(self) -> float:
        with self._lock:
            if self._closing_at is None:
                return TIMEOUT_SECONDS
            return max(0.1, min(TIMEOUT_SECONDS, self._closing_at - time.monotonic()))

    def _send(self, upload: Upload, body: bytes) -> None:
        service = self.destination.service or service_name(upload.command)
        url = self.destination.ingest_url(service, upload.pid, upload.start, upload.end, upload.rate)
        request = urllib.request.Request(url, data=body, method="POST")
        request.add_header("Content-Type", "application/octet-stream")
        request.add_header("User-Agent", "pytop")
        for key, value in self.destination.headers:
            request.add_header(key, value)
        try:
            with self._opener.open(request, timeout=self._timeout()) as response:
                response.read(1 << 16)
        except urllib.error.HTTPError as exc:
            raise refusal(exc) from None
        except (urllib.error.URLError, OSError, HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise Failure(visible(f"cannot reach {self.destination.shown}: {reason}")[:REASON_CHARACTERS],
                          again=True) from None


def frames_in(upload: Upload) -> int:
    return sum(len(sample.frames) for sample in upload.samples)


def encoded(upload: Upload) -> bytes:
    duration = max(0, int((upload.end - upload.start) * 1e9))
    return pprof.encode(upload.samples, upload.mode, upload.rate, int(upload.start * 1e9), duration,
                        f"pytop: pid {upload.pid}, {upload.command}")


def refusal(exc: urllib.error.HTTPError) -> Failure:
    """An HTTP error as a Failure: 408, 429 and 5xx may pass; another 4xx will not."""
    try:
        text = exc.read(REASON_CHARACTERS * 4).decode("utf-8", "replace")
    except (OSError, HTTPException):
        text = ""
    finally:
        exc.close()
    said = " ".join(text.split())
    if 300 <= exc.code < 400:  # (not followed: see NoRedirects)
        said = f"the server redirects to {exc.headers.get('Location', '?') if exc.headers else '?'}: push there"
    reason = visible(f"HTTP {exc.code}" + (f": {said}" if said else f" {exc.reason}"))[:REASON_CHARACTERS]
    again = exc.code in (408, 429) or exc.code >= 500
    wait = None
    retry_after = exc.headers.get("Retry-After") if exc.headers else None
    if retry_after and retry_after.strip().isdigit():
        wait = float(retry_after.strip())
    return Failure(reason, again=again, wait=wait)
