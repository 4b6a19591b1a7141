"""The metastore's Python API: catalogs, databases, tables, views and partitions of one
project (tenant), each operation exactly one KV transaction (``Database.run``).

:class:`Metastore` is a facade: its calls are the per-object modules of
:mod:`ushas_catalog.catalog` (catalogs and databases, tables, table data, views, partitions,
history, drops, project), and it wires the layers that follow commits to its commit hook
(:class:`~ushas_catalog.catalog.commits.CommitHooks`): the metadata sync and search index
(:mod:`ushas_catalog.metadata`) and the change feed (:mod:`ushas_catalog.changes`).

Where things live is :mod:`ushas_catalog.keyspace.layout`; the records are
:mod:`ushas_catalog.records`. In short:

- Names map to UUIDs in ``*ObjectName``; tables and views share ``TableObjectName``; one
  resolver (:class:`~ushas_catalog.catalog.resolver.Resolver`, ``Metastore.resolver``) reads them.
- A table is its ``TableReference`` (version, current schema id: every mutation reads
  and writes it, so concurrent writers of one table serialize), ``TableSchema``,
  ``TableStorage``, ``TableProperties`` and its partitions in ``TablePartition``.
- Every mutation goes through ``Metastore._commit``, the one bookkeeping function
  (version bump, ``*Commit`` record, history entry, previous head records into
  ``*History``), then the commit hook's subscribers, in the same transaction.
- Drop moves the name to ``Dropped*ObjectName`` (the object's keys stay, invisible,
  so undrop works until purge); purge (or ``drop(purge=True)``) is one ``clear_range``
  of the object's id prefix plus clearing its name entries, in the same transaction.
- ``get_table(name, as_of=v)`` reads a head record as it was at version ``v``: the
  first ``*History`` entry after ``v`` (the value replaced later), else the current one.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import bulk, bulk_ctas  # noqa: F401 - bulk_ctas registers how a dead hidden CTAS rolls back
from .catalog import partition_tags
from .catalog.authorization import guard_methods
from .catalog.commits import Mutation
from .catalog.core import CatalogCore
from .catalog.partitions import PARTITION_BATCH
from .catalog.values import FORMATS, RESERVED_PROPERTIES, UNSET
from .changes import streams as stream_progress
from .changes.feed import Change, ChangeFeed
from .errors import UshasError
from .keyspace.layout import Layout
from .model.names import NameLike, TableName
from .keyspace.tree import KeySpacePath
from .kv import Database, Transaction
from .metadata import sync as metadata_sync
from .metadata import store as metadata_store
from .metadata.store import INDEX_MERGE_AT, MetadataKeys, MetadataStore

if TYPE_CHECKING:
    from .catalog.objects import Objects

__all__ = ["Metastore", "Mutation", "UNSET", "FORMATS", "RESERVED_PROPERTIES", "PARTITION_BATCH"]

log = logging.getLogger(__name__)

#: seconds :meth:`Metastore.close` waits for a background index merge (left pending after that)
CLOSE_WAIT_S = 30.0


class Metastore(CatalogCore):
    """Catalog operations of one project. ``Metastore.open("sqlite:///tmp/u.db", project="acme")``."""

    def __init__(self, db: Database, project: str = "default", *, layout: Layout | None = None,
                 user: str | None = None, authorization: bool = False) -> None:
        super().__init__(db, project, layout=layout, user=user, authorization=authorization)
        #: the project's ordered log of mutations (a commit-hook subscriber)
        self.change_feed = ChangeFeed(self)
        #: one create in this many (on average) runs :meth:`merge_index` after its commit (1:
        #: every create, 0: no pending entries; see :mod:`ushas_catalog.metadata.store`, "Pending
        #: index entries")
        self.index_merge_at = INDEX_MERGE_AT
        #: where a due index merge runs: "inline" (after the operation's transaction, before it
        #: returns) or "background" (a thread of this instance: the caller never waits for it;
        #: what the Spark bridge uses). Searches read pending entries too, so either way a search
        #: finds the same objects.
        self.index_merges = "inline"
        self._merge_due = False
        self._merger: threading.Thread | None = None
        self._merge_lock = threading.Lock()
        self._merge_again = False
        self._merging = False
        # the commit hook: metadata first, then the change feed (the order of the bookkeeping)
        self.hooks.on_commit(partition_tags.index_commit)
        self.hooks.on_commit(lambda tr, m: self._metadata_commit(tr, m))
        self.hooks.on_commit(lambda tr, m: self.change_feed.record(tr, m))
        # a micro-batch of a streaming write commits once (ushas_catalog.changes.streams)
        self.hooks.on_commit(lambda tr, m: stream_progress.record(tr, self.project_path, m, self.user))
        self.hooks.on_purge(lambda tr, path: stream_progress.on_purge(tr, self.project_path, path))
        self.hooks.on_removal(lambda tr, **event: self.change_feed.record_removal(tr, **event))
        self.hooks.on_purge(lambda tr, path: self._metadata_purge(tr, path))
        self.hooks.after_run(self._after_run)
        #: operations bigger than one transaction: staged or chunked, resumable (ushas_catalog.bulk)
        self.big = bulk

    def close(self) -> None:
        self.wait_for_index(CLOSE_WAIT_S)  # a background merge finishes first (bounded: closing never hangs)
        super().close()

    # ---- change feed (issue 7) ------------------------------------------------------
    def changes(self, since: str | None = None, follow: bool = False, poll_interval: float = 1.0,
                batch: int = 500, stop: Callable[[], bool] | None = None) -> Iterator[Change]:
        """The project's change events after cursor ``since``, in commit order (see
        :mod:`ushas_catalog.changes.feed`); ``follow`` keeps polling for new ones."""
        return self.change_feed.changes(since, follow=follow, poll_interval=poll_interval, batch=batch, stop=stop)

    # ---- streaming writers (ushas_catalog.changes.streams) --------------------------------------
    def streams(self, name: NameLike) -> list[stream_progress.StreamProgress]:
        """The streaming queries that committed micro-batches into table ``name``, each with its last
        committed batch (the batch a restarted query skips up to)."""
        tn = TableName.parse(name)
        return self.run(lambda tr: stream_progress.list_progress(tr, self.project_path,
                                                                 self.resolver.table(tr, tn).id))

    # ---- metadata & search (issue 6): SYSTEM metadata, Spark-mirrored USER metadata, index --
    def _metadata_commit(self, tr: Transaction, m: Mutation) -> None:
        if metadata_sync.on_commit(self, tr, m):
            self._merge_due = True

    def _metadata_purge(self, tr: Transaction, path: KeySpacePath) -> None:
        """Before the keys of the object at ``path`` are cleared (purge, drop view)."""
        metadata_sync.on_purge(self, tr, path)

    @property
    def shares(self) -> Any:
        """Shares with other projects and the shares this project mounts: a
        :class:`ushas_catalog.catalog.shares.Shares` (docs/governance.md, "Shares")."""
        from .catalog.shares import Shares

        return Shares(self)

    @property
    def objects(self) -> "Objects":
        """Versioned objects (volumes, models, files) and their user-defined subspaces: a
        :class:`ushas_catalog.catalog.objects.Objects` (docs/objects.md)."""
        from .catalog.objects import Objects

        return Objects(self)

    @property
    def metadata(self) -> MetadataStore:
        """USER / SYSTEM properties and tags of this project's objects: a
        :class:`ushas_catalog.metadata.store.MetadataStore`."""
        return MetadataStore(self)

    def search(self, query: str, **options: Any) -> Any:
        """Search metadata, tags and schema field names: see :func:`ushas_catalog.metadata.search.search`."""
        from .metadata.search import search

        return search(self, query, **options)

    # ---- search index merges: never inside an operation's transaction -----------------
    def merge_index(self) -> int:
        """Move the pending search index entries into the index (each transaction at most
        :data:`~ushas_catalog.metadata.store.MERGE_BATCH_BYTES` of them); returns the objects moved.
        Runs by itself after about one create in ``index_merge_at`` (see ``index_merges``);
        searches read pending entries too, so this changes how fast the index is written and
        read, never what a search finds."""
        keys = MetadataKeys(self.project_path)
        total, more = 0, True
        while more:
            merged, more = self.db.run(lambda tr: metadata_store.merge_pending(tr, keys))
            total += merged
        return total

    def _after_run(self) -> None:
        if not self._merge_due:
            return
        self._merge_due = False
        if self.index_merges == "background":
            self._merge_in_background()
        else:
            self._merge_logged()

    def _merge_logged(self) -> None:
        try:
            self.merge_index()
        except UshasError as e:  # the operation committed: its caller must not see this; the next merge retries
            log.warning("search index merge failed, left pending: %s", e)

    def _merge_in_background(self) -> None:
        with self._merge_lock:
            if self._merging:
                self._merge_again = True  # the running merge goes round once more
                return
            self._merging = True
            self._merger = threading.Thread(target=self._merge_loop, name="ushas-index-merge", daemon=True)
            self._merger.start()

    def _merge_loop(self) -> None:
        while True:
            self._merge_logged()
            with self._merge_lock:
                if not self._merge_again:
                    self._merging = False
                    return
                self._merge_again = False

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait until a background index merge of this instance finished; False on timeout."""
        merger = self._merger
        if merger is not None:
            merger.join(timeout)
            return not merger.is_alive()
        return True


guard_methods(Metastore)  # every public call checks the caller's privilege when authorization is on
