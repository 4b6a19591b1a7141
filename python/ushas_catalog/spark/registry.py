"""The ONE registry of the bridge: opened metastores by (uri, project), each with its bridge-side
caches (:class:`ushas_catalog.spark.cache.BridgeCache`, one per Spark catalog instance), and the
extensions' services of this process (the lineage capture hub: :data:`ushas_catalog.extensions.Extensions.process_services`)."""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Opened:
    metastore: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    caches: dict[str, Any] = field(default_factory=dict)  # Spark catalog name -> cache.BridgeCache
    branches: dict[str, "Opened"] = field(default_factory=dict)  # branch name -> its metastore (docs/branches.md)

    def on_branch(self, name: str | None) -> "Opened":
        """This store on branch ``name`` (``main`` or None: itself): its own metastore view and caches (a
        branch's objects have main's ids with other contents), the same lock."""
        if not name or name.strip().lower() == "main":
            return self
        found = self.branches.get(name)
        if found is None:
            found = self.branches[name] = Opened(self.metastore.branch(name), self.lock)
        return found

    @contextlib.contextmanager
    def held(self, op: str, deadline_ms: Any) -> Iterator[None]:
        """The body under the caller's deadline (``deadline_ms``, epoch ms), holding this store's lock: one
        bridge call at a time per store. The deadline bounds the wait for the lock too: an abandoned call ends
        (:class:`~ushas_catalog.errors.CallAbandoned`) without running."""
        from ..errors import CallAbandoned
        from ..kv import deadline

        with deadline.until(deadline_ms):
            left = deadline.remaining()
            if not self.lock.acquire(timeout=-1 if left is None else max(0.0, left)):
                raise CallAbandoned(f"the caller stopped waiting: '{op}' was abandoned while the calls before "
                                    f"it on this store still ran")
            try:
                yield
            finally:
                self.lock.release()

    def cache(self, spark_catalog: str) -> Any:
        """The bridge-side cache of one Spark catalog instance on this store (its own settings)."""
        found = self.caches.get(spark_catalog)
        if found is None:
            from .cache import BridgeCache

            found = self.caches[spark_catalog] = BridgeCache()
        return found


class Registry:
    """Opened metastores by (uri, project); each used under its own lock (Py4J answers
    callbacks on several threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened: dict[tuple[str, str], Opened] = {}
        self._services: dict[str, Any] = {}  # an extension's process services, made at first use

    def service(self, name: str) -> Any:
        """The process service ``name`` an extension provides (made at the first call, closed by :meth:`close`)."""
        with self._lock:
            found = self._services.get(name)
            if found is None:
                from ..errors import InvalidArgument
                from ..extensions import extensions

                factory = extensions().process_services.get(name)
                if factory is None:
                    raise InvalidArgument(f"no installed extension provides the process service {name!r}")
                found = self._services[name] = factory.load()()
            return found

    def lineage(self) -> Any:
        """The lineage capture hub of this process (queues of the lineage listener's events): the lineage
        extension's process service ``lineage``."""
        return self.service("lineage")

    def get(self, uri: str, project: str, create: bool = True, spark_catalog: str | None = None) -> Opened:
        """The metastore of (``uri``, ``project``), opened at the first call. ``create=False`` (a Spark catalog
        configured without ``.create=true``): a missing store is :class:`~ushas_catalog.errors.StoreNotFound`
        naming the uri and the settings that would help, and nothing is created."""
        key = (uri, project)
        with self._lock:
            opened = self._opened.get(key)
            if opened is None:
                from ..errors import StoreNotFound
                from ..metastore import Metastore

                try:
                    ms = Metastore.open(uri, project=project, create=create)
                except StoreNotFound as exc:
                    option = f"spark.sql.catalog.{spark_catalog or '<name>'}"
                    raise StoreNotFound(f"could not open the store {uri} ({exc.message}): check {option}.uri, "
                                        f"or create the store with 'ushas --uri {uri} init' or by setting "
                                        f"{option}.create=true", uri=uri) from None
                opened = Opened(ms)
                opened.metastore.index_merges = "background"  # a Spark call never waits for an index merge
                if opened.metastore.created:  # Spark creates the store it is configured with: say so
                    logging.getLogger("ushas.bridge").warning("ushas: created a new store at %s", uri)
                self._opened[key] = opened
            return opened

    def close(self) -> None:
        with self._lock:
            services, self._services = self._services, {}
        for service in services.values():
            service.close()
        with self._lock:
            for opened in self._opened.values():
                try:
                    opened.metastore.close()
                except Exception:  # noqa: BLE001 - closing is best effort at shutdown
                    pass
            self._opened.clear()


REGISTRY = Registry()
