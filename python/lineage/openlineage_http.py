"""The OpenLineage HTTP transport of automatic capture: every captured run is also POSTed, as
its START and COMPLETE / FAIL RunEvents, to ``<url><endpoint>`` (default endpoint
``/api/v1/lineage``, what Marquez, DataHub and ``ushas serve`` accept), with an optional
``Authorization: Bearer <apiKey>``.

Configured by ``spark.ushas.lineage.openlineage.url`` (+ ``.apiKey``, ``.timeout`` seconds,
``.endpoint``); the listener passes them to Python with every action. Like the store, it is
asynchronous with a bounded queue: :meth:`OpenLineageSender.submit` only appends, one worker
thread posts, an event that does not fit the queue or that the receiver does not take (after
one retry) is dropped and counted exactly; drops are logged (at most one WARNING a minute) and
reported in the listener's line at application end. No query waits for it.
"""
from __future__ import annotations

import logging
import threading
import time
import http.client
import urllib.parse
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

from ushas_catalog.errors import InvalidArgument

from .drop_warnings import DropWarnings

log = logging.getLogger("ushas.lineage.openlineage")

DEFAULT_ENDPOINT = "/api/v1/lineage"
DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class OpenLineageSettings:
    url: str
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    endpoint: str = DEFAULT_ENDPOINT

    @property
    def target(self) -> str:
        return self.url.rstrip("/") + "/" + self.endpoint.lstrip("/")

    @staticmethod
    def from_options(options: Mapping[str, Any]) -> OpenLineageSettings:
        """From the listener's ``openlineage`` object (``url``, ``api_key``, ``timeout``, ``endpoint``)."""
        url = str(options.get("url") or "").strip()
        if not url.startswith(("http://", "https://")):
            raise InvalidArgument(f"spark.ushas.lineage.openlineage.url must be an http(s) URL, not {url!r}")
        try:
            timeout = float(options.get("timeout") or DEFAULT_TIMEOUT_S)
        except (TypeError, ValueError):
            raise InvalidArgument("spark.ushas.lineage.openlineage.timeout must be a number of seconds, not "
                                  f"{options.get('timeout')!r}") from None
        if timeout <= 0:
            raise InvalidArgument("spark.ushas.lineage.openlineage.timeout must be positive")
        endpoint = str(options.get("endpoint") or DEFAULT_ENDPOINT)
        return OpenLineageSettings(url=url, api_key=(str(options["api_key"]) if options.get("api_key") else None),
                                   timeout_s=timeout, endpoint=endpoint)


@dataclass(frozen=True)
class SenderStats:
    sent: int
    dropped: int
    pending: int


_STOP = object()


class OpenLineageSender:
    """A bounded queue of serialized events and one thread POSTing them in order."""

    def __init__(self, settings: OpenLineageSettings, max_pending: int = 10_000, retry_delay_s: float = 0.2) -> None:
        self.settings = settings
        self.max_pending = max(1, max_pending)
        self.retry_delay_s = retry_delay_s
        self._cond = threading.Condition()
        self._queue: deque[Any] = deque()
        self._pending = 0
        self._sent = 0
        self._dropped = 0
        self._closed = False
        self._drop_warnings = DropWarnings("OpenLineage event(s)")
        self._conn: http.client.HTTPConnection | None = None  # used by the worker thread only
        url = urllib.parse.urlsplit(settings.target)
        self._path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        self._worker = threading.Thread(target=self._run, name="ushas-openlineage-sender", daemon=True)
        self._worker.start()

    def submit(self, events: list[str]) -> int:
        """Queue the JSON events of one run (all or none); the number dropped (0 when queued)."""
        with self._cond:
            if self._closed or self._pending + len(events) > self.max_pending:
                why = "sender closed" if self._closed else f"{self._pending} events pending"
                accepted = False
            else:
                self._pending += len(events)
                self._queue.extend(events)
                self._cond.notify_all()
                accepted = True
        if accepted:
            return 0
        self._drop(len(events), why)
        return len(events)

    def drop(self, count: int, why: str) -> None:
        """Count ``count`` events that could not even be queued (e.g. they could not be built)."""
        self._drop(count, why)

    def stats(self) -> SenderStats:
        with self._cond:
            return SenderStats(self._sent, self._dropped, self._pending)

    def flush(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0 or not self._worker.is_alive():
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Send what is queued (up to ``timeout``), then stop; what is left is counted as dropped."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
        self.flush(timeout)
        with self._cond:
            left = len(self._queue)
            self._queue.clear()
            self._pending -= left
            self._queue.append(_STOP)
            self._cond.notify_all()
        if left:
            self._drop(left, "sender closed before they were sent")
        self._worker.join(timeout=max(1.0, timeout))

    # ---- the worker ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait(0.5)
                item = self._queue.popleft()
            if item is _STOP:
                self._close_connection()
                return
            try:
                error = self._post(item)
                if error is not None:
                    time.sleep(self.retry_delay_s)
                    error = self._post(item)
                if error is None:
                    with self._cond:
                        self._sent += 1
                else:
                    self._drop(1, f"{self.settings.target} did not take it ({error})")
            except Exception as exc:  # noqa: BLE001 - the worker never dies
                self._drop(1, f"unexpected error ({type(exc).__name__}: {exc})")
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()

    def _post(self, body: str) -> str | None:
        """None when the receiver answered 2xx, else what went wrong. One connection is kept open
        between events (HTTP/1.1 keep-alive) and opened again after any failure."""
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        data = body.encode("utf-8")
        for fresh in ((False, True) if self._conn is not None else (True,)):
            try:
                if self._conn is None:
                    self._conn = self._connect()
                self._conn.request("POST", self._path, body=data, headers=headers)
                answer = self._conn.getresponse()
                answer.read()
                if answer.will_close:
                    self._close_connection()
                return None if 200 <= answer.status < 300 else f"HTTP {answer.status}"
            except (OSError, ValueError, http.client.HTTPException) as exc:
                self._close_connection()  # a kept-alive connection the receiver closed: once more, anew
                if fresh:
                    return f"{type(exc).__name__}: {exc}"
        return "no answer"

    def _connect(self) -> http.client.HTTPConnection:
        url = urllib.parse.urlsplit(self.settings.target)
        cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        return cls(url.hostname or "localhost", url.port, timeout=self.settings.timeout_s)

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    def _drop(self, count: int, why: str) -> None:
        with self._cond:
            self._dropped += count
            total = self._dropped
            loud, earlier = self._drop_warnings.note(count)
        self._drop_warnings.log(log, count, why, total, loud, earlier)


__all__ = ["DEFAULT_ENDPOINT", "OpenLineageSender", "OpenLineageSettings", "SenderStats"]
