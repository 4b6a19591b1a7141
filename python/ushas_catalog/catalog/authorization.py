"""Enforcement: every metastore call checks the caller's privilege in its own transaction.

The rules are declared once, in :data:`RULES`: public ``Metastore`` method -> the privilege it needs and
on which object (its name argument, or that name's parent for a create). :func:`guard_methods` wraps
those methods (``metastore.py`` calls it once); a wrapped call pushes its :class:`Requirement`, and
:meth:`MetastoreBase.run` checks the innermost one at the start of every transaction the call runs,
in that transaction (the name lookups the operation makes anyway, plus one point read of the policy
state: :mod:`ushas_catalog.governance.policy`). A transaction run by a caller with authorization on
and no declared requirement is refused (fail closed). A refused call raises
:class:`~ushas_catalog.errors.PermissionDenied` and writes nothing; the denial is audited in a
transaction of its own (:func:`audit_denied`).

Creating a catalog, database, table, view or function grants OWN on it to its creator, in the create's
transaction (when authorization is on).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import records as rec
from ..errors import NotFound, PermissionDenied
from ..governance import grants as grant_store
from ..governance.identity import Caller
from ..governance.policy import PROJECT_ID
from ..governance.privileges import CREATE, MANAGE, MODIFY, OWN, SELECT, USE, Securable, authorize
from ..keyspace.layout import DATABASE as DATABASE_DIR, DATABASE_ID, FUNCTION, FUNCTION_OBJECT_NAME, TABLE
from ..kv.base import Transaction
from ..model.names import CatalogName, DatabaseName, TableName
from ..records.store import RecordStore
from .branch_view import main_transaction
from .resolver import CheckedNames, Resolver, remember_checked

#: object kinds of a rule's target: the name argument is parsed as this kind's name
PROJECT, CATALOG, DATABASE, RELATION, FUNCTION_KIND = "project", "catalog", "database", "relation", "function"
#: a declared external location (by name; ``location:NAME`` as a grant's object)
LOCATION = "location"
#: the privilege of a call any caller may make (its own principals)
ANYONE = ""
#: a grant's object: ``project``, or 1, 2 or 3 name parts (a table / view, else a function of that name)
OBJECT = "object"


def object_name(value: Any) -> Any:
    """The catalog / database / table part of a metadata target (a name, its parts, or a resolved
    ``ObjectRef``): a column's object is its table."""
    from ..model.names import CatalogName, DatabaseName, TableName, split_name

    if isinstance(value, TableName):  # a name object: its parts (its ``name`` is only the last one)
        return (value.catalog, value.database, value.name)
    if isinstance(value, DatabaseName):
        return (value.catalog, value.database)
    if isinstance(value, CatalogName):
        return (value.catalog,)
    if isinstance(value, str):
        parts = split_name(value)
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        return object_name(getattr(value, "name", ""))
    return tuple(parts[:3]) if parts else None


def object_kind(tr: Transaction, resolver: Resolver, value: Any) -> tuple[str, Any]:
    """(kind, name) of a grant's object: ``"project"`` (or None) is the project; ``"function:c.d.f"``
    a function; else a catalog, database or relation by its number of name parts (a relation that
    does not exist but a function of that name does: the function)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "project"):
        return PROJECT, None
    if isinstance(value, str) and value.lower().startswith("function:"):
        return FUNCTION_KIND, value[len("function:"):]
    if isinstance(value, str) and value.lower().startswith("location:"):
        return LOCATION, value[len("location:"):]
    from ..model.names import parse_any

    name = parse_any(value)
    if isinstance(name, CatalogName):
        return CATALOG, name
    if isinstance(name, DatabaseName):
        return DATABASE, name
    try:
        db = resolver.database(tr, name.database_name, load=False)
    except NotFound:
        return RELATION, name
    if resolver.names(db.path.add(TABLE), "Table").load(tr, (name.name,)) is None and \
            RecordStore.of(db.path.add(FUNCTION), FUNCTION_OBJECT_NAME).load(tr, (name.name.lower(),)) is not None:
        return FUNCTION_KIND, name
    return RELATION, name


@dataclass(frozen=True)
class Requirement:
    """``privilege`` on the object ``name`` of kind ``kind`` (``relation``: a table or view);
    ``on_missing``: what a missing object needs on its deepest existing ancestor (USE: the call then
    fails with the object's ``NoSuch*`` error); ``creates``: the call creates that object (its creator
    gets OWN on it)."""

    privilege: str
    kind: str
    name: Any = None
    on_missing: str = USE
    creates: bool = False
    #: the calls made inside are covered by this requirement (not checked again)
    covers: bool = False
    #: another privilege that allows the call as well (on an existing object)
    alternative: str = ""


@dataclass(frozen=True)
class Rule:
    """How a method's arguments give its :class:`Requirement`: ``arg``: the argument holding the name
    (its position after ``self`` and its keyword); ``parent``: the object is the named object's parent."""

    privilege: str
    kind: str
    parent: bool = False
    on_missing: str = USE
    creates: bool = False
    arg: tuple[int, str] = (0, "name")

    def requirement(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Requirement:
        if self.kind == PROJECT:
            return Requirement(self.privilege, PROJECT, None, self.on_missing, self.creates)
        i, key = self.arg
        value = args[i] if len(args) > i else kwargs.get(key)
        if self.kind == OBJECT:
            value = object_name(value)
        if self.parent:
            value = ("parent", value)
        return Requirement(self.privilege, self.kind, value, self.on_missing, self.creates)


def _r(privilege: str, kind: str, **kw: Any) -> Rule:
    return Rule(privilege, kind, **kw)


#: public Metastore method -> its rule. ``tests/governance/test_rules.py`` fails on a public method
#: missing here (or in :data:`UNGUARDED`).
RULES: dict[str, Rule] = {
    # catalogs
    "create_catalog": _r(CREATE, CATALOG, parent=True, creates=True),
    "ensure_catalog": _r(USE, CATALOG, on_missing=CREATE, creates=True),
    "get_catalog": _r(USE, CATALOG), "catalog_exists": _r(USE, CATALOG),
    "alter_catalog": _r(MANAGE, CATALOG), "drop_catalog": _r(MANAGE, CATALOG),
    "undrop_catalog": _r(MANAGE, PROJECT), "purge_catalog": _r(MANAGE, PROJECT),
    "list_dropped_catalogs": _r(USE, PROJECT),
    "list_databases": _r(USE, CATALOG, arg=(0, "catalog")),
    # branches of a catalog (docs/branches.md): making, dropping and merging one manages the catalog
    "create_branch": _r(MANAGE, CATALOG, arg=(0, "catalog")), "drop_branch": _r(MANAGE, CATALOG, arg=(0, "catalog")),
    "merge_branch": _r(MANAGE, CATALOG, arg=(0, "catalog")), "list_branches": _r(USE, CATALOG, arg=(0, "catalog")),
    "require_branch": _r(ANYONE, PROJECT),  # whether the branch a catalog of the session is on still exists
    # databases
    "create_database": _r(CREATE, DATABASE, parent=True, creates=True),
    "get_database": _r(USE, DATABASE), "database_exists": _r(USE, DATABASE),
    "alter_database": _r(MANAGE, DATABASE), "drop_database": _r(MANAGE, DATABASE),
    "undrop_database": _r(MANAGE, DATABASE, parent=True), "purge_database": _r(MANAGE, DATABASE, parent=True),
    "list_dropped_databases": _r(USE, CATALOG, arg=(0, "catalog")),
    "list_relations": _r(USE, DATABASE, arg=(0, "database")),
    "list_tables": _r(USE, DATABASE, arg=(0, "database")),
    "list_views": _r(USE, DATABASE, arg=(0, "database")),
    "list_functions": _r(USE, DATABASE, arg=(0, "database")),
    "list_dropped_tables": _r(USE, DATABASE, arg=(0, "database")),
    "purge_functions": _r(MANAGE, DATABASE, arg=(0, "database")),
    # tables and views
    "create_table": _r(CREATE, RELATION, parent=True, creates=True),
    "create_view": _r(CREATE, RELATION, parent=True, creates=True),
    "replace_table": _r(MANAGE, RELATION, on_missing=CREATE, creates=True),
    "get_table": _r(USE, RELATION), "get_view": _r(USE, RELATION),
    "table_exists": _r(USE, RELATION), "view_exists": _r(USE, RELATION),
    "alter_table": _r(MANAGE, RELATION), "alter_view": _r(MANAGE, RELATION),
    "drop_table": _r(MANAGE, RELATION), "drop_view": _r(MANAGE, RELATION),
    "rename_table": _r(MANAGE, RELATION), "rename_view": _r(MANAGE, RELATION),
    "undrop_table": _r(MANAGE, RELATION, parent=True), "purge_table": _r(MANAGE, RELATION, parent=True),
    "evolve_view_schema": _r(SELECT, RELATION),
    "history": _r(SELECT, OBJECT),  # of a table or view, a database or a catalog
    "restore_table": _r(MODIFY, RELATION),
    "set_statistics": _r(MODIFY, RELATION),
    "touch_table": _r(MODIFY, RELATION),
    "write_table_files": _r(MODIFY, RELATION),
    "table_data_files": _r(SELECT, RELATION),
    "streams": _r(SELECT, RELATION),  # the streaming queries writing into a table (changes.streams)
    # reads as of a version and named versions (catalog.time_travel): a tag keeps files from purge
    "table_as_of": _r(SELECT, RELATION), "files_as_of": _r(SELECT, RELATION),
    "first_readable_version": _r(SELECT, RELATION), "list_tags": _r(SELECT, RELATION),
    "tagged_files": _r(SELECT, RELATION),
    # streaming reads (catalog.stream_source): the files each commit added
    "stream_commits": _r(SELECT, RELATION), "first_version_since": _r(SELECT, RELATION),
    "create_tag": _r(MODIFY, RELATION), "drop_tag": _r(MODIFY, RELATION),
    "mark_purged": _r(MODIFY, RELATION),
    # partitions
    "add_partitions": _r(MODIFY, RELATION), "drop_partitions": _r(MODIFY, RELATION),
    "replace_partitions": _r(MODIFY, RELATION),
    "get_partition": _r(SELECT, RELATION), "list_partitions": _r(SELECT, RELATION),
    "list_partition_keys": _r(SELECT, RELATION), "scan_partitions": _r(SELECT, RELATION),
    # partition tags (catalog.partition_tags): a tag change is a table commit, like a partition change
    "set_partition_tags": _r(MODIFY, RELATION), "unset_partition_tags": _r(MODIFY, RELATION),
    "partitions_by_tag": _r(SELECT, RELATION), "partition_tag_stats": _r(SELECT, RELATION),
    "tag_entries": _r(SELECT, RELATION),
    # row filters and column masks (catalog.row_policies): who may change them may change the table
    "set_row_filter": _r(MANAGE, RELATION), "drop_row_filter": _r(MANAGE, RELATION),
    "set_column_mask": _r(MANAGE, RELATION), "drop_column_mask": _r(MANAGE, RELATION),
    # functions
    "create_function": _r(CREATE, FUNCTION_KIND, parent=True, creates=True),
    "get_function": _r(USE, FUNCTION_KIND), "function_exists": _r(USE, FUNCTION_KIND),
    "function_history": _r(USE, FUNCTION_KIND), "drop_function": _r(MANAGE, FUNCTION_KIND),
    "undrop_function": _r(MANAGE, FUNCTION_KIND, parent=True),
    # declared external locations (catalog.locations): declaring one manages the project; the checks of a
    # placement or a path read check themselves
    "create_location": _r(MANAGE, PROJECT), "drop_location": _r(MANAGE, LOCATION),
    "get_location": _r(USE, LOCATION), "list_locations": _r(USE, PROJECT),
    "check_placement": _r(ANYONE, PROJECT), "check_warehouse": _r(ANYONE, PROJECT), "check_path_read": _r(ANYONE, PROJECT),
    "check_path_write": _r(ANYONE, PROJECT), "check_paths": _r(ANYONE, PROJECT),
    # the project
    "changes": _r(SELECT, PROJECT), "search": _r(USE, PROJECT), "stats": _r(OWN, PROJECT),
    "list_catalogs": _r(ANYONE, PROJECT),  # names only
    "may": _r(ANYONE, PROJECT),  # whether the caller holds a privilege: refuses nothing
    "garbage": _r(MANAGE, PROJECT), "forget_garbage": _r(MANAGE, PROJECT), "drop_project": _r(OWN, PROJECT),
}
#: public methods that run no operation of their own (plumbing) or list only names
UNGUARDED = frozenset({"branch", "close", "commit", "merge_index", "more_paths", "partition_record", "run", "open",
                       "wait_for_index"})

_REQUIRED: contextvars.ContextVar[tuple[Requirement, ...]] = contextvars.ContextVar("ushas_required", default=())


@contextlib.contextmanager
def requiring(req: Requirement) -> Iterator[None]:
    """Calls made inside need ``req`` (what servers use for reads outside the metastore's methods:
    metadata / system tables, lineage, procedures)."""
    token = _REQUIRED.set(_REQUIRED.get() + (req,))
    try:
        yield
    finally:
        _REQUIRED.reset(token)


def required() -> Requirement | None:
    stack = _REQUIRED.get()
    return stack[-1] if stack else None


#: USER metadata (``Metastore.metadata``: tags, properties, comments): what its methods need
METADATA_RULES: dict[str, Rule] = {
    "set": _r(MANAGE, OBJECT, arg=(0, "target")), "unset": _r(MANAGE, OBJECT, arg=(0, "target")),
    "tag": _r(MANAGE, OBJECT, arg=(0, "target")), "untag": _r(MANAGE, OBJECT, arg=(0, "target")),
    "get": _r(USE, OBJECT, arg=(0, "target")), "history": _r(USE, OBJECT, arg=(0, "target")),
}


#: versioned objects (``Metastore.objects``): privileges on the object's database
OBJECT_RULES: dict[str, Rule] = {
    "create": _r(CREATE, RELATION, parent=True),
    "get": _r(USE, RELATION, parent=True), "exists": _r(USE, RELATION, parent=True),
    "version": _r(SELECT, RELATION, parent=True), "versions": _r(SELECT, RELATION, parent=True),
    "history": _r(USE, RELATION, parent=True), "list": _r(USE, DATABASE, arg=(0, "database")),
    "alter": _r(MANAGE, RELATION, parent=True), "drop": _r(MANAGE, RELATION, parent=True),
    "undrop": _r(MANAGE, RELATION, parent=True), "purge": _r(MANAGE, DATABASE, arg=(0, "database")),
    "add_version": _r(MODIFY, RELATION, parent=True), "rollback": _r(MODIFY, RELATION, parent=True),
    "register_type": _r(MANAGE, RELATION, parent=True), "drop_type": _r(MANAGE, RELATION, parent=True),
    "types": _r(USE, RELATION, parent=True),
    "put": _r(MODIFY, RELATION, parent=True), "delete": _r(MODIFY, RELATION, parent=True),
    "read": _r(SELECT, RELATION, parent=True), "scan": _r(SELECT, RELATION, parent=True),
}


def guard_methods(cls: type, rules: dict[str, Rule] | None = None) -> type:
    """Wrap the methods of ``cls`` ``rules`` (default :data:`RULES`) names so each call pushes its
    requirement (an instance without ``caller()`` answers for its metastore ``ms``)."""
    for name, rule in (RULES if rules is None else rules).items():
        fn = getattr(cls, name, None)
        if fn is None or getattr(fn, "__guarded__", False):
            continue
        setattr(cls, name, _wrap(fn, rule))
    return cls


def _wrap(fn: Callable[..., Any], rule: Rule) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = required()
        owner = self if hasattr(self, "caller") else self.ms
        if not owner.caller().authorization or (outer is not None and outer.covers):
            return fn(self, *args, **kwargs)
        req = rule.requirement(args, kwargs)
        with requiring(req):
            out = fn(self, *args, **kwargs)
        if inspect.isgenerator(out):  # a streamed answer: its later batches are checked the same way
            return _streamed(out, req)
        return out

    guarded.__guarded__ = True  # type: ignore[attr-defined]
    return guarded


def _streamed(gen: Iterator[Any], req: Requirement) -> Iterator[Any]:
    while True:
        with requiring(req):
            try:
                item = next(gen)
            except StopIteration:
                return
        yield item


# --- resolving a requirement's object -------------------------------------------------------------
def _parent(kind: str, value: Any) -> tuple[str, Any]:
    """(kind, name) of the parent of the object named ``value`` whose own kind is ``kind``."""
    if kind == CATALOG:
        return PROJECT, None
    if kind == DATABASE:
        return CATALOG, DatabaseName.parse(value).catalog_name
    return DATABASE, TableName.parse(value).database_name


def _parent_of(resolver: Resolver, kind: str, value: Any, missing: Securable) -> Securable:
    """What :func:`securable` answers for the parent of the missing object ``value`` of ``kind``, from the id
    chain of ``missing`` (its securable: the chain stops at its deepest existing ancestor), reading nothing."""
    parent_kind, parent = _parent(kind, value)
    if parent_kind == PROJECT:
        return Securable.project(resolver.project)
    depth = 2 if parent_kind == CATALOG else 3
    shown = str(CatalogName.parse(parent)) if parent_kind == CATALOG else str(DatabaseName.parse(parent))
    return Securable(parent_kind, shown, missing.ids[:depth], exists=len(missing.ids) >= depth)


def securable(tr: Transaction, resolver: Resolver, kind: str, value: Any, *, remember: bool = False) -> Securable:
    """The object ``value`` names (of ``kind``) with its id chain; a missing object's chain stops at
    its deepest existing ancestor (``exists=False``). ``remember``: the database and relation names read are
    kept in ``tr`` for the guarded call's own first lookup of them (:class:`~.resolver.CheckedNames`)."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "parent":
        kind, value = _parent(kind, value[1])
    if kind == OBJECT:
        kind, value = object_kind(tr, resolver, value)
    if kind == PROJECT or value is None:
        return Securable.project(resolver.project)
    if kind == LOCATION:
        return _location(tr, resolver, str(value))
    if kind == CATALOG:
        cn = CatalogName.parse(value)
        chain: tuple[uuid.UUID, ...] = (PROJECT_ID,)
        try:
            return Securable("catalog", str(cn), chain + (resolver.catalog(tr, cn, load=False).id,))
        except NotFound:
            return Securable("catalog", str(cn), chain, exists=False)
    if kind == DATABASE:
        dn = DatabaseName.parse(value)
        ids, path = _database(tr, resolver, dn)
        if remember and path is not None:
            remember_checked(tr, CheckedNames(resolver, str(dn), ids[-1], path))
        return Securable("database", str(dn), ids, exists=len(ids) == 3)
    tn = TableName.parse(value)
    what = "function" if kind == FUNCTION_KIND else "table"
    ids, db_path = _database(tr, resolver, tn.database_name)
    if db_path is None:
        return Securable(what, str(tn), ids, exists=False)
    if kind == FUNCTION_KIND:
        fentry = RecordStore.of(db_path.add(FUNCTION), FUNCTION_OBJECT_NAME).load(tr, (tn.name.lower(),))
        if fentry is None:
            return Securable(what, str(tn), ids, exists=False)
        return Securable(what, str(tn), ids + (uuid.UUID(bytes=fentry.id),))
    rentry = _names(resolver, db_path, TABLE, "Table").load(tr, (tn.name,))
    if remember:  # found or not: the call's own lookup of it reads the same
        remember_checked(tr, CheckedNames(resolver, str(tn.database_name), ids[-1], db_path, str(tn), rentry))
    if rentry is None:
        return Securable(what, str(tn), ids, exists=False)
    what = "view" if rentry.kind == rec.ObjectKind.VIEW else "table"
    return Securable(what, str(tn), ids + (uuid.UUID(bytes=rentry.id),))


def _location(tr: Transaction, resolver: Resolver, name: str) -> Securable:
    """The declared external location ``name`` (its id under the project): one point read."""
    from ..keyspace.layout import ACCESS, LOCATION as LOCATION_RECORD

    found = RecordStore.of(resolver.catalogs.parent.add(ACCESS), LOCATION_RECORD).load(tr, (name,))
    if found is None:
        return Securable("location", name, (PROJECT_ID,), exists=False)
    return Securable("location", name, (PROJECT_ID, uuid.UUID(bytes=found.id)))


#: the key paths and record stores the checks build for the same objects call after call (immutable
#: values, keyed by their parent's key and the child's id or name): a bounded memo
_PATHS: dict[tuple[bytes, Any], Any] = {}


def _memo(key: tuple[bytes, Any], make: Callable[[], Any]) -> Any:
    found = _PATHS.get(key)
    if found is None:
        if len(_PATHS) >= 4096:
            _PATHS.clear()
        found = _PATHS[key] = make()
    return found


def _names(resolver: Resolver, parent: Any, directory: str, kind: str) -> Any:
    """``resolver.names(parent.add(directory), kind)``, kept in the memo for a plain resolver only: another one (a
    share's) filters the names it shows, per resolver, and the same keys must not be read unfiltered through it."""
    if type(resolver) is not Resolver:
        return resolver.names(parent.add(directory), kind)
    return _memo((parent.key(), kind), lambda: resolver.names(parent.add(directory), kind))


def _database(tr: Transaction, resolver: Resolver, dn: DatabaseName) -> tuple[tuple[uuid.UUID, ...], Any]:
    """The id chain of database ``dn`` (project, catalog, database; shorter: the deepest that exists)
    and its key path (None when it does not exist): two point reads."""
    try:
        cat = resolver.catalog(tr, dn.catalog_name, load=False)
    except NotFound:
        return (PROJECT_ID,), None
    parent = cat.path.key()
    names = _names(resolver, cat.path, DATABASE_DIR, "Database")
    entry = names.load(tr, (dn.database,))
    if entry is None:
        return (PROJECT_ID, cat.id), None
    did = uuid.UUID(bytes=entry.id)
    return (PROJECT_ID, cat.id, did), _memo((parent, did), lambda: cat.path.add(DATABASE_DIR).add(DATABASE_ID, did))


def check(tr: Transaction, ms: Any, caller: Caller, req: Requirement | None, *,
          remember: bool = False) -> Securable | None:
    """Raise PermissionDenied unless ``caller`` may make the call ``req`` describes (None: an
    undeclared call under authorization, refused). ``remember``: see :func:`securable`."""
    return _check(tr, ms, caller, req, remember)[0]


def _check(tr: Transaction, ms: Any, caller: Caller, req: Requirement | None,
           remember: bool = False) -> tuple[Securable | None, bool | None]:
    """:func:`check`, and for a create's requirement whether its object exists already (None: not known)."""
    if req is None:
        raise PermissionDenied(f"User {caller.user} may not make this call: it declares no privilege "
                               f"(authorization is on)", privilege="", object="", user=caller.user)
    if req.privilege == ANYONE and req.on_missing == USE:
        return None, None
    if req.creates and _is_parent(req.name):  # CREATE ... IF NOT EXISTS of an existing object: USE on it
        own = securable(tr, ms.resolver, req.kind, req.name[1], remember=remember)
        if own.exists:
            authorize(tr, ms.layout, ms.project, caller.user, USE, own)
            return own, True
        exists: bool | None = False
        target = _parent_of(ms.resolver, req.kind, req.name[1], own)  # its chain is the missing object's
    else:
        exists = None
        target = securable(tr, ms.resolver, req.kind, req.name, remember=remember)
    if exists is None and req.creates and req.name is not None:
        exists = target.exists  # the object itself (not its parent)
    wanted = req.privilege if target.exists or req.kind == PROJECT else req.on_missing
    if wanted == ANYONE:
        return target, exists
    if not target.exists and req.kind != PROJECT:
        parent_kind = ("project", "catalog", "database")[len(target.ids) - 1] if len(target.ids) <= 3 else "database"
        shown = Securable(parent_kind, _ancestor_name(target, parent_kind, ms.project), target.ids)
        authorize(tr, ms.layout, ms.project, caller.user, wanted, shown)
    else:
        authorize(tr, ms.layout, ms.project, caller.user, wanted, target, req.alternative if target.exists else "")
    return target, exists


def check_arrival(tr: Transaction, ms: Any, src: TableName, dst: TableName) -> None:
    """A table or view moving into another database (a rename; its MANAGE was checked): the caller needs
    CREATE on the target database, and OWN on the relation, since the target's grants then apply to it
    (MANAGE on a table must not become OWN by moving it into one's own database). In the rename's
    transaction; a refusal is audited like any other."""
    caller = ms.caller()
    target = securable(tr, ms.resolver, DATABASE, dst.database_name)
    if not target.exists:
        return  # the rename fails with the target database's NoSuchNamespace
    authorize(tr, ms.layout, ms.project, caller.user, CREATE, target)
    authorize(tr, ms.layout, ms.project, caller.user, OWN, securable(tr, ms.resolver, RELATION, src))


def _ancestor_name(target: Securable, kind: str, project: str) -> str:
    parts = target.name.split(".")
    return {"project": project, "catalog": ".".join(parts[:1]), "database": ".".join(parts[:2])}[kind]


def _is_parent(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and value[0] == "parent"


def _own_name(req: Requirement) -> Any:
    """The name of the object ``req`` is about (not its parent's)."""
    if isinstance(req.name, tuple) and len(req.name) == 2 and req.name[0] == "parent":
        return req.name[1]
    return req.name


def after_create(tr: Transaction, ms: Any, caller: Caller, req: Requirement) -> None:
    """The creator of a new object gets OWN on it, in the create's transaction. In a branch the object is
    the branch's, but grants are project-wide state: the grant is written to main's grants (in the same
    transaction, through the branch's), keyed by the new object's id — which a merge keeps, so the creator
    owns the merged object; a dropped branch leaves a grant on no object."""
    if not req.creates or req.name is None:
        return
    target = securable(tr, ms.resolver, req.kind, _own_name(req))
    if target.exists:
        main = main_transaction(tr) or tr
        event = grant_store.grant(main, ms.layout, ms.project, target, OWN, caller.principal, by=caller.principal)
        if event is not None:
            ms.hooks.removed(main, **event)


def _checked_before(tr: Transaction, caller: Caller, req: Requirement | None) -> bool:
    """Whether ``tr`` checked this very ``req`` for ``caller`` already (one Spark call is one transaction
    that runs several metastore calls under one requirement: it is checked once). A create's requirement
    is checked each time (its object's existence changes within the transaction)."""
    if req is None or req.creates:
        return False
    entry = getattr(tr, "ushas_checked", {}).get(id(req))
    return entry is not None and entry[1] is req and entry[0] == caller


def _remember_checked(tr: Transaction, caller: Caller, req: Requirement | None) -> None:
    """Records a passed check in ``tr`` (the requirement object is kept: its id stays its own)."""
    if req is None or req.creates:
        return
    try:
        done = tr.__dict__.setdefault("ushas_checked", {})
    except AttributeError:  # a transaction that takes no attributes: every call is checked
        return
    done[id(req)] = (caller, req)


def guarded_run(ms: Any, fn: Callable[[Transaction], Any]) -> Callable[[Transaction], Any]:
    """``fn`` preceded by the check of the current requirement and followed by the creator's OWN grant
    (what :meth:`MetastoreBase.run` runs when the caller's calls are checked)."""
    caller = ms.caller()
    req = required()

    def checked(tr: Transaction) -> Any:
        exists: bool | None = None
        if not _checked_before(tr, caller, req):  # a create's is checked every time: its object may appear
            exists = _check(tr, ms, caller, req, remember=True)[1]
            _remember_checked(tr, caller, req)
        new = req is not None and req.creates and not (
            exists if exists is not None else securable(tr, ms.resolver, req.kind, _own_name(req)).exists)
        try:
            out = fn(tr)
        finally:
            remember_checked(tr, None)
        if new:
            after_create(tr, ms, caller, req)
        return out

    return checked


def audit_denied(ms: Any, error: PermissionDenied) -> None:
    """Record a refused call in the change feed (its own transaction: the call itself wrote nothing)."""
    from ..errors import UshasError

    if getattr(error, "audited", False):
        return
    error.audited = True  # type: ignore[attr-defined]
    ms = getattr(ms, "parent", None) or ms  # a branch's refusals are audited in main's (project-wide) feed
    db = getattr(ms.db, "base", ms.db)  # inside a joined transaction (one per Spark call): its own one
    try:
        db.run(lambda tr: ms.hooks.removed(tr, **grant_store.denied_event(error)))
    except UshasError:  # a read-only store, a busy one: the refusal stands, unrecorded
        pass


__all__ = ["METADATA_RULES", "OBJECT_RULES", "RULES", "UNGUARDED", "Requirement", "Rule", "after_create", "audit_denied", "check",
           "check_arrival", "guard_methods",
           "guarded_run", "required", "requiring", "securable"]
