"""What every catalog operation module builds on: the store, the project, the resolver, the
commit hook, one transaction per call (:meth:`MetastoreBase.run`), fenced writes and the
relation moves tables and views share."""
from __future__ import annotations

import uuid
from typing import Any, Callable, TypeVar, cast

from .. import records as rec
from ..errors import InvalidArgument, OperationInProgress, PermissionDenied, TableAlreadyExists
from ..governance.identity import Caller, current as current_caller
from ..keyspace.layout import DEFAULT_LAYOUT, Layout
from ..keyspace.tree import KeySpacePath
from ..kv import Database, Transaction, open_database
from ..model.names import DatabaseName, NameLike, TableName, validate_project
from ..model.objects import RelationSummary, micros_to_datetime
from .branch_view import KeepingDatabase
from .commits import CommitHooks, Mutation, record_commit
from .resolver import Resolver
from .values import default_user, exists_message
from .visibility import BigOperations
from ..keyspace.layout import TABLE

T = TypeVar("T")


class MetastoreBase:
    """The state one metastore instance holds; the operation modules are mixins over it."""

    def __init__(self, db: Database, project: str = "default", *, layout: Layout | None = None,
                 user: str | None = None, authorization: bool = False) -> None:
        self.project = validate_project(project)
        self.layout = layout or DEFAULT_LAYOUT
        #: the store; every transaction keeps, for live branches, what a write changes (catalog.branch_view)
        self.db: Database = db if getattr(db, "branching", False) else \
            cast(Database, KeepingDatabase(db, self.layout, self.project))
        self._user = user or default_user()
        #: whether this metastore's own calls are checked (docs/governance.md); a server says per call
        #: who calls and whether it is checked (``governance.identity.calling``)
        self.authorization = authorization
        self.project_path = self.layout.project(self.project)
        #: name -> id -> head record, for every module that resolves names
        self.resolver = Resolver(self.project_path, self.project)
        #: subscribers to this instance's commits (see :class:`~.commits.CommitHooks`)
        self.hooks = CommitHooks()
        #: operations bigger than one transaction (:mod:`ushas_catalog.bulk`, which sits above the
        #: metadata layer it also maintains, so the facade wires it in); None: every operation in one
        self.big: BigOperations | None = None
        #: recorded data files purges found outside their table's and partitions' locations: kept, never
        #: deleted (:func:`ushas_catalog.data.purge.bounded`); ``ushas purge`` reports and clears them
        self.kept_paths: list[str] = []

    @classmethod
    def open(cls: type[T], uri: str, project: str = "default", *, root_prefix: bytes = b"",
             user: str | None = None, create: bool = True, authorization: bool = False,
             branch: str | None = None, token: str | None = None) -> T:
        """The metastore of ``project`` in the store at ``uri``. ``create=False`` (what every
        read-only caller passes: CLI reads, the UI) never creates a store: a missing one is
        ``StoreNotFound``. Opening never waits for another process's write; a store whose file
        is not writable opens read-only (its writes are ``StoreReadOnly``). ``branch``: the metastore on
        that branch of the catalogs it touches (docs/branches.md; None or ``main``: the catalogs themselves).
        ``uri`` ``http(s)://host:port``: the metastore the catalog service (``ushas serve``) serves, as the
        user of ``token`` (default ``USHAS_TOKEN``), every call checked (:mod:`ushas_catalog.remote.metastore`)."""
        from ..remote.http import is_remote

        if is_remote(uri):
            from ..remote.metastore import RemoteMetastore, refuse_local_options

            refuse_local_options(user, authorization, root_prefix)
            return cast(T, RemoteMetastore.open(uri, project, token=token, branch=branch))
        layout = DEFAULT_LAYOUT if not root_prefix else Layout(prefix=root_prefix)
        ms = cls(open_database(uri, create=create), project, layout=layout, user=user,  # type: ignore[call-arg]
                 authorization=authorization)
        if branch is None:
            return ms
        try:
            view = ms.branch(branch)  # type: ignore[attr-defined]  # catalog.branches.BranchOps
        except Exception:
            ms.close()
            raise
        if view is not ms:
            view.close = ms.close  # closing the branch closes the store it was opened on
        return cast(T, view)

    @property
    def created(self) -> bool:
        """Whether opening this metastore created its store."""
        return bool(getattr(self.db, "created", False))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def user(self) -> str:
        """Who calls: the current caller's user (recorded on commits), else the configured one."""
        c = current_caller()
        return c.user if c is not None else self._user

    @user.setter
    def user(self, value: str) -> None:
        self._user = value

    def caller(self) -> Caller:
        """The current caller: set per call by a server (``governance.identity.calling``), else this
        metastore's user and authorization setting."""
        c = current_caller()
        return c if c is not None else Caller(self._user, self.authorization)

    def run(self, fn: Callable[[Transaction], T]) -> T:
        """``fn`` in one transaction (retried on conflicts), then the ``after_run`` subscribers. When the
        caller's calls are checked, the transaction first checks the call's privilege
        (:mod:`.authorization`)."""
        if self.caller().authorization:
            from .authorization import audit_denied, guarded_run

            try:
                return self._run(guarded_run(self, fn))
            except PermissionDenied as e:
                audit_denied(self, e)
                raise
        return self._run(fn)

    def _run(self, fn: Callable[[Transaction], T]) -> T:
        try:
            result = self.db.run(fn)
        except OperationInProgress as e:  # a bulk operation whose process died is finished first
            if self.big is None or not self.big.finish_for(self, e.detail.get("operations", [])):
                raise
            result = self.db.run(fn)
        self.hooks.ran()
        return result

    def more_paths(self, out: list[str] | None) -> None:
        """Runs the chunked work the call's transaction left (a big drop or purge: see
        :attr:`big`); the data paths its purges found go to ``out``."""
        if self.big is None or getattr(self.db, "nested", False):  # one transaction for a whole Spark
            return                                                  # call: after its commit
        if self.big.has_after(self):
            found = self.big.run_after(self)
            if out is not None:
                out.extend(found)

    def _fenced(self, write_id: str | None, deadline_ms: int | None, tn: TableName,
                fn: Callable[[Transaction], T], encode: Callable[[T], tuple[dict[str, Any], int | None]],
                decode: Callable[[dict[str, Any]], T]) -> T:
        """``self.run(fn)``, as fenced write ``write_id`` when given (:mod:`ushas_catalog.data.write_fence`)."""
        from ..data.write_fence import WriteFence, Writer, run_fenced

        return run_fenced(self.run, self.project_path, WriteFence.of(write_id, deadline_ms), str(tn), fn,
                          encode, decode, Writer.of(self))

    def commit(self, tr: Transaction, m: Mutation) -> int:
        """:meth:`_commit` for the modules that run operations in chunks (:mod:`ushas_catalog.bulk`)."""
        return self._commit(tr, m)

    def _commit(self, tr: Transaction, m: Mutation) -> int:
        """Record mutation ``m`` (:func:`~.commits.record_commit`) and tell the commit subscribers,
        in the same transaction."""
        v = record_commit(tr, m, self.user)
        self.hooks.committed(tr, m)
        return v

    # ---- relations (tables and views share the name space) ------------------------------
    def _list_relations(self, database: NameLike, kind: int | None) -> list[RelationSummary]:
        dn = DatabaseName.parse(database)

        def fn(tr: Transaction) -> list[RelationSummary]:
            db = self.resolver.database(tr, dn, load=False)
            return [RelationSummary(dn.catalog, dn.database, r.key[0], rec.ObjectKind.Name(r.record.kind),
                                    str(uuid.UUID(bytes=r.record.id)), micros_to_datetime(r.record.created_at_micros))
                    for r in self.resolver.names(db.path.add(TABLE), "Table").scan(tr)
                    if kind is None or r.record.kind == kind]

        return self.run(fn)

    def _move_relation(self, tr: Transaction, src: TableName, dst: TableName, oid: uuid.UUID, path: KeySpacePath,
                       kind: int) -> KeySpacePath:
        if src.catalog != dst.catalog:
            raise InvalidArgument(f"cannot rename {src} to {dst}: a rename stays in its catalog")
        if self.caller().authorization and src.database_name != dst.database_name:
            from .authorization import check_arrival

            check_arrival(tr, self, src, dst)
        dst_db, existing = self.resolver.relation(tr, dst)
        if existing is not None:
            raise TableAlreadyExists(exists_message(dst, existing), table=str(dst))
        self.resolver.refuse_object_name(tr, dst_db.path, dst)
        src_db, entry = self.resolver.relation(tr, src)
        assert entry is not None
        self.resolver.names(src_db.path.add(TABLE), "Table").delete(tr, (src.name,))
        self.resolver.names(dst_db.path.add(TABLE), "Table").save(tr, (dst.name,), entry, new=True)
        if dst_db.id == src_db.id:
            return path
        new_path = (Layout.table if kind == rec.ObjectKind.TABLE else Layout.view)(dst_db.path, oid)
        old_prefix, new_prefix = path.key(), new_path.key()
        for kv in tr.get_range(*path.range()):
            tr.set(new_prefix + kv.key[len(old_prefix):], kv.value)
        tr.clear_range(*path.range())
        return new_path
