"""Calling a hook: an HTTP POST of the event JSON, or a Python function.

An attempt ends in one of three :class:`Outcome` s:

- ``delivered``: HTTP 2xx; the Python function returned.
- ``failed`` (counted): the receiver answered and refused: another HTTP status, or the Python
  function raised. After ``max_attempts`` counted failures the event goes to the dead-letter list.
- ``unavailable`` (not counted): the receiver could not be reached or asked to come back later:
  connection refused / reset, a timeout, HTTP 408, 429, 502, 503, 504; the Python function raised
  :class:`HookUnavailable`, ``ConnectionError`` or ``TimeoutError``, or cannot be imported. The
  event is retried with backoff and never dead-lettered for it: a receiver down for a day gets
  every event when it is back.

HTTP requests carry ``Content-Type: application/json``, ``Idempotency-Key`` and
``Ushas-Delivery-Id`` (the event's delivery id: the same on every redelivery), ``Ushas-Hook``,
``Ushas-Event-Type``, ``User-Agent: ushas-hooks/1``. Redirects are not followed.
"""
from __future__ import annotations

import http.client
import importlib
import importlib.util
import json
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import InvalidArgument

#: HTTP statuses that mean "come back later" (not counted towards the dead-letter list)
UNAVAILABLE_STATUSES = frozenset({408, 425, 429, 502, 503, 504})
#: characters of an error kept in the hook's state
ERROR_CHARS = 500


class HookUnavailable(Exception):
    """Raised by a Python hook: the downstream system is not available now; retry later, do not
    count the attempt (the event is never dead-lettered for it)."""


@dataclass(frozen=True)
class Outcome:
    status: str            # delivered, failed, unavailable
    error: str = ""

    @property
    def delivered(self) -> bool:
        return self.status == "delivered"


DELIVERED = Outcome("delivered")


def check_url(url: str) -> str:
    u = url.strip()
    try:
        parts = urllib.parse.urlsplit(u)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or len(u) > 2000:
        raise InvalidArgument(f"invalid --url {url[:80]!r}: expected http://HOST[:PORT]/PATH or https://...")
    return u


def check_target(target: str) -> str:
    """``module:function`` or ``/path/file.py:function`` (a file given relative is made absolute)."""
    module, sep, function = target.strip().rpartition(":")
    if not sep or not module or not function.isidentifier():
        raise InvalidArgument(f"invalid --python {target[:80]!r}: expected module:function or /path/file.py:function")
    if module.endswith(".py"):
        path = Path(module).expanduser().resolve()
        if not path.is_file():
            raise InvalidArgument(f"--python {target[:80]!r}: no such file {module!r}")
        return f"{path}:{function}"
    if not all(part.isidentifier() for part in module.split(".")):
        raise InvalidArgument(f"invalid --python {target[:80]!r}: {module!r} is not a module name")
    return f"{module}:{function}"


def load_function(target: str) -> Callable[[dict[str, Any]], Any]:
    """The function ``target`` names (importing its module or file)."""
    module_name, _, function = target.rpartition(":")
    if module_name.endswith(".py"):
        name = "ushas_hook_" + Path(module_name).stem
        module = sys.modules.get(name)
        if module is None or getattr(module, "__file__", None) != module_name:
            spec = importlib.util.spec_from_file_location(name, module_name)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    fn = getattr(module, function)
    if not callable(fn):
        raise TypeError(f"{target} is not callable")
    return fn  # type: ignore[no-any-return]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS - 1] + "…"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(url: str, event: dict[str, Any], timeout: float) -> Outcome:
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "ushas-hooks/1",
        "Idempotency-Key": event["delivery_id"], "Ushas-Delivery-Id": event["delivery_id"],
        "Ushas-Hook": event["hook"], "Ushas-Event-Type": event["type"]})
    try:
        with _OPENER.open(req, timeout=timeout) as answer:
            answer.read(65536)
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
        try:
            text = exc.read(300).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            text = ""
        exc.close()
        what = "unavailable" if status in UNAVAILABLE_STATUSES else "failed"
        return Outcome(what, _short(f"HTTP {status} {exc.reason}: {text}".rstrip(": ")))
    except (urllib.error.URLError, OSError, http.client.HTTPException, socket.timeout) as exc:
        reason = getattr(exc, "reason", exc)
        return Outcome("unavailable", _short(f"{type(reason).__name__}: {reason}"))
    if 200 <= status < 300:
        return DELIVERED
    what = "unavailable" if status in UNAVAILABLE_STATUSES else "failed"
    return Outcome(what, f"HTTP {status}")


def call(target: str, event: dict[str, Any]) -> Outcome:
    try:
        fn = load_function(target)
    except Exception as exc:  # noqa: BLE001 - the hook's code is not installed here: wait for it
        return Outcome("unavailable", _short(f"cannot load {target}: {type(exc).__name__}: {exc}"))
    try:
        fn(event)
    except (HookUnavailable, ConnectionError, TimeoutError) as exc:
        return Outcome("unavailable", _short(f"{type(exc).__name__}: {exc}"))
    except Exception as exc:  # noqa: BLE001 - any failure of the hook is a counted failure
        return Outcome("failed", _short(f"{type(exc).__name__}: {exc}"))
    return DELIVERED


__all__ = ["DELIVERED", "ERROR_CHARS", "HookUnavailable", "Outcome", "UNAVAILABLE_STATUSES", "call", "check_target",
           "check_url", "load_function", "post"]
