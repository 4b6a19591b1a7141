"""What every API module gets: the store handles (shared with the UI's app), the store-path
redactor, and :meth:`ServiceState.endpoint`, the wrapper that turns a function returning JSON-able
data into a Flask view (one lock around store calls, typed errors as JSON)."""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from flask import Response

from ..errors import UshasError
from .auth import request_user
from .routing import error_response, json_response, status_of

LOG = logging.getLogger("ushas.service")


class Stores(Protocol):
    """The store handles of one service (``ushas_catalog.ui.app.Stores`` is one)."""

    uri: str
    project: str
    lock: threading.Lock

    @property
    def metastore(self) -> Any: ...

    @property
    def lineage(self) -> Any: ...

    def close(self) -> None: ...


@dataclass
class OwnStores:
    """Store handles opened on first use, used under one lock (the UI app's, and the API's without it)."""

    uri: str
    project: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: ``ushas serve --authorization``: every request is checked as its token's user (``anonymous``
    #: without a token), and anything else as ``anonymous`` (docs/governance.md)
    authorization: bool = False
    #: ``ushas serve --warehouse``: the managed warehouse of remote Spark catalogs (None: each client's own)
    warehouse: str | None = None
    _metastore: Any = None
    _opened: dict[str, Any] = field(default_factory=dict)  # extension stores by name (``lineage``)

    @property
    def metastore(self) -> Any:
        if self._metastore is None:
            from ..metastore import Metastore

            self._metastore = Metastore.open(self.uri, project=self.project, create=False,
                                             user=ANONYMOUS if self.authorization else None,
                                             authorization=self.authorization)
        return self._metastore

    def store(self, name: str) -> Any:
        """The handle an extension opens on this store (:data:`~ushas_catalog.extensions.Extensions.service_stores`),
        opened at first use."""
        found = self._opened.get(name)
        if found is None:
            from ..errors import InvalidArgument
            from ..extensions import extensions

            opener = extensions().service_stores.get(name)
            if opener is None:
                raise InvalidArgument(f"this service has no {name} (no installed extension provides it)")
            found = self._opened[name] = opener.load()(self.uri, self.project)
        return found

    @property
    def lineage(self) -> Any:
        """The lineage queries of the store (the lineage extension's ``lineage.query.LineageQueries``)."""
        return self.store("lineage")

    def close(self) -> None:
        if self._metastore is not None:
            self._metastore.close()
            self._metastore = None
        opened, self._opened = self._opened, {}
        for handle in opened.values():
            handle.close()


def redactor(uri: str) -> Callable[[str], str]:
    """A function that removes the store's URI and file path from a message (for a ``postgresql://``
    store also its host, port, database and schema, as the engine's messages name them)."""
    from urllib.parse import parse_qs, unquote, urlsplit

    secrets = {uri}
    try:
        parts = urlsplit(uri)
        path = unquote(parts.path)
        if parts.scheme in ("postgresql", "postgres"):
            host, port = parts.hostname or "", parts.port
            schema = parse_qs(parts.query).get("schema", ["ushas"])[-1]
            secrets.update({f"{host}:{port or 5432}{path} schema {schema}", f"{host}:{port or 5432}{path}",
                            parts.netloc, f"{host}:{port}" if port else host, host, f"schema {schema}",
                            f"{schema}.", f"port {port or 5432}"})
    except ValueError:
        path = ""
    if path.strip("/"):
        secrets.update({path, "/" + path.lstrip("/")})
    secrets = {s for s in secrets if len(s) > 1}

    def redact(message: str) -> str:
        for secret in sorted(secrets, key=len, reverse=True):
            message = message.replace(secret, "<store>")
        return message

    return redact


def store_kind(uri: str) -> str:
    """What kind of store a URI names (``sqlite``, ``fdb``, ``memory``), without its location."""
    scheme, sep, _ = uri.partition(":")
    return scheme.lower() if sep and scheme.isalnum() else "store"


@contextmanager
def acting_as(stores: Any, user: str | None) -> Iterator[None]:
    """The metastore's commits record ``user`` (the request's token name) while a request runs; the
    caller holds the stores' lock, so no other request sees the change."""
    if user is None:
        yield
        return
    ms = stores.metastore
    before = ms.user
    ms.user = user
    try:
        yield
    finally:
        ms.user = before


#: who a request without a token is, under ``--authorization``
ANONYMOUS = "anonymous"


@contextmanager
def checked_as(stores: Any, user: str | None, need: str | None) -> Iterator[None]:
    """Under ``--authorization``: the request's calls run as its user, checked; an endpoint with a ``need``
    (the lineage and runs endpoints, which read the lineage store, not the metastore's checked calls: SELECT;
    the OpenLineage receiver: MODIFY) needs that privilege on the project, checked before it runs."""
    if not getattr(stores, "authorization", False):
        yield
        return
    from ..catalog.authorization import PROJECT, Requirement, requiring
    from ..governance.identity import Caller, calling

    with calling(Caller(user or ANONYMOUS, True)):
        if need is None:
            yield
            return
        with requiring(Requirement(need, PROJECT, covers=True)):
            stores.metastore.run(lambda tr: None)
            yield


@dataclass
class ServiceState:
    stores: Any  # a Stores
    redact: Callable[[str], str]
    #: the privilege on the project every endpoint made by :meth:`endpoint` needs under authorization (None:
    #: its calls are checked by the metastore); set per resource module (``dataclasses.replace``)
    need: str | None = None

    @property
    def metastore(self) -> Any:
        return self.stores.metastore

    @property
    def lineage(self) -> Any:
        return self.stores.lineage

    def endpoint(self, fn: Callable[..., Any], *, status: int = 200) -> Callable[..., Any]:
        """``fn(**route_args)`` -> JSON-able data, as a view: under the stores' lock, a
        :class:`UshasError` answered as JSON with its status (:func:`.routing.status_of`)."""

        def view(**kw: Any) -> Response:
            try:
                with self.stores.lock, acting_as(self.stores, request_user()), \
                        checked_as(self.stores, request_user(), self.need):
                    data = fn(**kw)
            except UshasError as exc:
                return error_response(exc.type, self.redact(exc.message), status_of(exc))
            return data if isinstance(data, Response) else json_response(data, status)

        view.__name__ = fn.__name__
        view.__doc__ = fn.__doc__
        return view


__all__ = ["ANONYMOUS", "LOG", "acting_as", "checked_as", "OwnStores", "ServiceState", "Stores", "redactor", "store_kind"]
