"""``Metastore.open("http(s)://host:port", token=...)``: the metastore API served by ``ushas serve``
(docs/service.md, "Remote mode"). The same public methods as the embedded :class:`~ushas_catalog.metastore.Metastore`
(:data:`SERVED`, each one HTTP call, ``POST /api/v1/metastore/call``: the service runs the embedded method as the token's
user, authorization on), the same values back (:mod:`.wire`) and the same exceptions (by type name, with
their message and details). What needs the store itself — ``run`` (raw transactions), ``db``, the
``metadata`` / ``objects`` / ``shares`` sub-APIs — is not offered: ``AttributeError`` names it.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import InvalidArgument, NotServed, UshasError, hierarchy
from . import wire
from .http import CLIENT, Client, Endpoint, resolve_token

CALL_PATH = "/api/v1/metastore/call"
DEFAULT_TIMEOUT_S = 60.0
#: the embedded Metastore's public methods a remote one has: exactly those the service offers
#: (``service.metastore_call_api.offered``: the ones authorization checks; a test keeps the two equal)
SERVED: frozenset[str] = frozenset({"add_partitions", "check_path_read", "check_path_write", "check_paths",
    "check_placement", "check_warehouse",
    "create_location", "drop_location", "get_location", "list_locations", "alter_catalog", "alter_database", "alter_table", "alter_view",
    "caller", "catalog_exists", "create_branch", "create_catalog", "create_database", "create_function", "create_role",
    "create_table", "create_tag", "create_view", "database_exists", "drop_branch", "drop_catalog", "drop_column_mask",
    "drop_database", "drop_function", "drop_partitions", "drop_project", "drop_role", "drop_row_filter", "drop_table",
    "drop_tag", "drop_view", "ensure_catalog", "evolve_view_schema", "files_as_of", "first_readable_version",
    "first_version_since",
    "forget_garbage", "function_exists", "function_history", "garbage", "get_catalog", "get_database", "get_function",
    "get_partition", "get_table", "get_view", "grant", "grant_role", "grants", "history", "list_branches",
    "list_catalogs", "list_databases", "list_dropped_catalogs", "list_dropped_databases", "list_dropped_tables",
    "list_functions", "list_partition_keys", "list_partitions", "list_relations", "list_tables", "list_tags",
    "list_views", "mark_purged", "may", "merge_branch", "partition_tag_stats", "partitions_by_tag", "principals_of",
    "purge_catalog", "purge_database", "purge_functions", "purge_table", "rename_table", "rename_view",
    "replace_partitions", "replace_table", "require_branch", "restore_table", "revoke", "revoke_role", "roles",
    "scan_partitions",
    "search", "set_column_mask", "set_partition_tags", "set_row_filter", "set_statistics", "stats", "stream_commits", "streams",
    "table_as_of", "table_data_files", "table_exists", "tag_entries", "tagged_files", "touch_table", "undrop_catalog",
    "undrop_database", "undrop_function", "undrop_table", "unset_partition_tags", "view_exists", "write_table_files"})


def call_method(client: Client, endpoint: Endpoint, path: str, token: str, timeout: float, method: str,
                args: Any, kwargs: dict[str, Any], fields: dict[str, Any]) -> Any:
    """One method call through the service (``POST path`` with the method, its wire-encoded arguments and
    ``fields``): its decoded result, or the service's error raised as the exception it names."""
    body = json.dumps({"method": method, "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs),
                       **fields}).encode()
    status, data = client.post(endpoint, path, token, body, timeout)
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise UshasError(f"the ushas service at {endpoint.url} answered HTTP {status} without JSON")
    if "error" in answer:
        raise error_from(answer["error"])
    return wire.decode(answer.get("result"))


def error_from(answer: dict[str, Any]) -> UshasError:
    """The exception an error answer names (its type by name, message and details), or a plain
    :class:`UshasError` subclass of that name when the type is unknown here."""
    kind = str(answer.get("type") or "UshasError")
    message = str(answer.get("message") or "")
    raw = answer.get("detail")
    detail: dict[str, Any] = raw if isinstance(raw, dict) else {}
    cls = next((c for c in hierarchy() if c.__name__ == kind), None)
    if cls is None:
        cls = type(kind, (UshasError,), {})
    exc = cls.__new__(cls)
    UshasError.__init__(exc, message, **detail)
    for key, value in detail.items():
        if not hasattr(exc, key):
            setattr(exc, key, value)
    return exc


class RemoteMetastore:
    """A metastore whose calls the catalog service at ``url`` runs, as the token's user."""

    authorization = True
    created = False

    def __init__(self, url: str, token: str, project: str = "default", *, branch: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S, client: Client | None = None) -> None:
        self.endpoint = Endpoint.parse(url)
        self._token = token
        self.project = project
        self.branch_name = branch
        self.timeout = timeout
        self._client = client or CLIENT
        self._user: str | None = None

    @classmethod
    def open(cls, url: str, project: str = "default", *, token: str | None = None, branch: str | None = None,
             timeout: float = DEFAULT_TIMEOUT_S) -> "RemoteMetastore":
        """Checks the service answers and knows the token (and serves ``project``) before answering."""
        ms = cls(url, resolve_token({"token": token}), project, branch=branch, timeout=timeout)
        who = ms.call("whoami")
        ms._user = str(who["user"])
        return ms

    @property
    def user(self) -> str:
        """The token's user: who every call of this metastore is."""
        if self._user is None:
            self._user = str(self.call("whoami")["user"])
        return self._user

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return call_method(self._client, self.endpoint, CALL_PATH, self._token, self.timeout, method, args, kwargs,
                           {"project": self.project, "branch": self.branch_name})

    def branch(self, name: str) -> "RemoteMetastore":
        """This metastore on branch ``name`` (docs/branches.md)."""
        view = RemoteMetastore(self.endpoint.url, self._token, self.project, branch=name, timeout=self.timeout,
                               client=self._client)
        view._user = self._user
        return view

    def close(self) -> None:
        """Nothing to close: connections are kept per thread and reused."""

    def __enter__(self) -> "RemoteMetastore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        raise NotServed(f"{name!r} is not available on a metastore served by a catalog service (it needs the "
                        f"store itself: run this with the store's own URI)")

    def __repr__(self) -> str:
        return f"RemoteMetastore({self.endpoint.url!r}, project={self.project!r})"


def _served(name: str) -> Callable[..., Any]:
    def method(self: RemoteMetastore, *args: Any, **kwargs: Any) -> Any:
        return self.call(name, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``Metastore.{name}``, run by the catalog service as the token's user."
    return method


for _name in SERVED:
    setattr(RemoteMetastore, _name, _served(_name))


def refuse_local_options(user: str | None, authorization: bool, root_prefix: bytes) -> None:
    """``Metastore.open`` of a service URL: who calls is the token's user, always checked."""
    if user is not None or authorization or root_prefix:
        raise InvalidArgument("a metastore served by a catalog service takes no user, authorization or root "
                              "prefix: the token decides who calls, and every call is checked")


__all__ = ["RemoteMetastore", "error_from", "refuse_local_options"]
