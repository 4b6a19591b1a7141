"""Who may do what (docs/service.md, "Security").

- Writes (every POST / PUT / PATCH / DELETE of ``/api/v1``, the OpenLineage receiver included)
  always need a **write token** — on 127.0.0.1 too: ``Authorization: Bearer <token>``, or a
  browser session signed in with one (``POST /api/v1/session``) plus the session's CSRF token in
  the ``X-CSRF-Token`` header (a cross-site page can neither read that token nor set the header).
- Reads are open on a loopback bind and need a read (or write) token otherwise
  (``require_read_token``); ``/info``, ``/openapi.json`` and ``/session`` are always open.
- Sessions: a random id in an HttpOnly, SameSite=Strict cookie, kept in memory (a restart signs
  everyone out), checked against the store's tokens on every request (revoking a token ends its
  sessions), at most :data:`MAX_SESSIONS` (the oldest go first).
"""
from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, g, request

from ..errors import Forbidden, InvalidArgument, Unauthorized, UshasError
from .routing import API_PREFIX, body_object, error_response, json_response
from .tokens import TokenInfo, TokenStore

COOKIE = "ushas_session"
CSRF_HEADER = "X-CSRF-Token"
MAX_SESSIONS = 10_000
SESSION_TTL_S = 12 * 3600
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OPEN_PATHS = frozenset({API_PREFIX + "/info", API_PREFIX + "/openapi.json", API_PREFIX + "/session"})
#: the Spark shim's op table over HTTP (remote mode): bearer tokens only, never a browser session
CATALOG_OPS = API_PREFIX + "/catalog/ops/"
#: the metastore API over HTTP (Metastore.open("http://..."), ushas --uri http://...): the same rule
METASTORE_CALL = API_PREFIX + "/metastore/call"
#: a remote-mode Spark driver's lineage capture (lineage.remote_store): the same rule
LINEAGE_INGEST = API_PREFIX + "/catalog/lineage"


def user_of(info: TokenInfo) -> str:
    """The user a token's requests act as: its name, ``token:<id>`` when unnamed."""
    return info.name or f"token:{info.id}"


def request_user() -> str | None:
    """The user a request acts as: the name of the token it presented (None: no token, or no request)."""
    return g.get("ushas_user") if g else None


@dataclass
class Session:
    token: str
    csrf: str
    created: float


class AccessControl:
    def __init__(self, stores: Any, *, require_read_token: bool) -> None:
        self.stores = stores
        self.require_read_token = require_read_token
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.lock = threading.Lock()

    # ---- identities -------------------------------------------------------------------------------------
    def token_info(self, token: str) -> TokenInfo | None:
        """The token a token text is (None: unknown, revoked or mistyped), read from the store at every
        call: a revocation holds from the next request on."""
        from ..catalog.authorization import ANYONE, PROJECT, Requirement, requiring

        with self.stores.lock, requiring(Requirement(ANYONE, PROJECT, covers=True)):  # who calls: anyone may ask
            return TokenStore(self.stores.metastore).identify(token)

    def bearer(self, header: str) -> TokenInfo:
        """The token an ``Authorization`` header presents; :class:`Unauthorized` when it presents none that
        is valid."""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("Authorization must be 'Bearer <token>'")
        info = self.token_info(token.strip())
        if info is None:
            raise Unauthorized("the token is not valid (unknown, revoked or mistyped)")
        return info

    def token_access(self, token: str) -> str | None:
        """The access a token grants; the request's user becomes the token's name (its id when unnamed),
        which the service's writes record as their user (:func:`request_user`)."""
        info = self.token_info(token)
        if info is None:
            return None
        g.ushas_user = user_of(info)
        g.ushas_access = info.access
        return info.access

    def session(self) -> Session | None:
        sid = request.cookies.get(COOKIE)
        if not sid:
            return None
        with self.lock:
            s = self.sessions.get(sid)
            if s is not None and time.time() - s.created > SESSION_TTL_S:
                del self.sessions[sid]
                s = None
        return s

    def identify(self) -> tuple[str | None, Session | None]:
        """(access, session): from the bearer token, else the session cookie."""
        header = request.headers.get("Authorization", "")
        if header:
            info = self.bearer(header)
            g.ushas_user = user_of(info)
            g.ushas_access = info.access
            return info.access, None
        s = self.session()
        if s is None:
            return None, None
        access = self.token_access(s.token)
        if access is None:  # its token was revoked
            with self.lock:
                self.sessions.pop(request.cookies.get(COOKIE, ""), None)
            return None, None
        return access, s

    # ---- the check before every API request --------------------------------------------------------------
    def check(self) -> Response | None:
        try:
            self._check()
        except UshasError as exc:
            return error_response(exc.type, exc.message, 401 if isinstance(exc, Unauthorized) else 403)
        return None

    def _check(self) -> None:
        path = request.path
        if path in OPEN_PATHS:
            return
        if path.startswith(CATALOG_OPS) or path in (METASTORE_CALL, LINEAGE_INGEST):  # remote mode: a bearer token always (its user is the caller)
            if not request.headers.get("Authorization"):
                raise Unauthorized("the catalog ops need a token: Authorization: Bearer <token> "
                                   "(ushas tokens create)")
            self.identify()  # a bad or revoked token: 401; a read token's ops are limited by the endpoint
            return
        write = request.method in WRITE_METHODS
        access, session = self.identify()
        if write:
            if access is None:
                raise Unauthorized("writes need a write token: Authorization: Bearer <token> "
                                   "(ushas tokens create --write)")
            if access != "write":
                raise Forbidden("this token may only read")
            if session is not None:
                given = request.headers.get(CSRF_HEADER, "")
                if not given or not hmac.compare_digest(given, session.csrf):
                    raise Forbidden(f"a write from a browser session needs its {CSRF_HEADER} header")
        elif self.require_read_token and access is None:
            raise Unauthorized("this service needs a token: Authorization: Bearer <token> "
                               "(ushas tokens create --read)")

    # ---- /api/v1/session ---------------------------------------------------------------------------------
    def register(self, bp: Blueprint) -> None:
        @bp.get("/session")
        def get_session() -> Any:
            try:
                access, s = self.identify()
            except Unauthorized:
                access, s = None, None
            return json_response({"access": access or "none", "csrf": s.csrf if s is not None else None,
                                  "auth_required": self.require_read_token})

        @bp.post("/session")
        def login() -> Any:
            try:
                token = body_object().get("token")
                if not isinstance(token, str) or not token.strip():
                    raise InvalidArgument("the body needs token: a token of ushas tokens create")
            except InvalidArgument as exc:
                return error_response(exc.type, exc.message, 400)
            access = self.token_access(token.strip())
            if access is None:
                return error_response("Unauthorized", "the token is not valid (unknown, revoked or mistyped)", 401)
            sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
            with self.lock:
                self.sessions[sid] = Session(token.strip(), csrf, time.time())
                while len(self.sessions) > MAX_SESSIONS:
                    self.sessions.popitem(last=False)
            out = json_response({"access": access, "csrf": csrf, "auth_required": self.require_read_token})
            out.set_cookie(COOKIE, sid, httponly=True, samesite="Strict", path="/", max_age=SESSION_TTL_S,
                           secure=request.is_secure)
            return out

        @bp.delete("/session")
        def logout() -> Any:
            sid = request.cookies.get(COOKIE)
            if sid:
                with self.lock:
                    self.sessions.pop(sid, None)
            out = json_response({"access": "none", "csrf": None, "auth_required": self.require_read_token})
            out.delete_cookie(COOKIE, path="/")
            return out


__all__ = ["request_user", "user_of", "AccessControl", "Forbidden", "Unauthorized", "COOKIE", "CSRF_HEADER"]
