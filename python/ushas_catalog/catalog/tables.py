"""Tables: create, replace, get (now or as of a version), list, alter, rename, drop, undrop, purge."""
from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import uuid
from typing import Any, Iterator, Mapping, Sequence

from google.protobuf.message import Message

from .. import records as rec
from ..errors import Conflict, InvalidArgument, InvalidPolicy, NoSuchCatalog, NoSuchNamespace, NoSuchTable, TableAlreadyExists
from ..keyspace.layout import Layout
from ..kv import Transaction
from ..data.locations import location_in_use, normalized, overlaps
from ..model.bucketing import Bucketing
from ..model.names import DatabaseName, NameLike, TableName, new_table_name
from ..model.objects import DroppedObject, RelationSummary, TableInfo
from ..model.partitions import PartitionScheme
from ..model.schema import check_column_names, parse_schema, struct_from_proto, struct_to_proto
from ..model.table_changes import (COLUMN_CHANGES, RemoveProperty, SchemaState, SetComment, SetLocation, SetOwner,
                                   SetProperty, TableChange, change_to_json)
from ..records.store import RecordStore
from .commits import Mutation
from .infos import bucketing_of, table_info
from .resolver import ResolvedObject, ResolvedTable
from .values import (RESERVED_PROPERTIES, check_expected, check_format, check_props, check_str, copy_record,
                     cutoff_micros, exists_message, expect_version, give_paths, now_micros)
from .drops import DropOps
from .row_policies import keep_policies
from .history import HistoryOps
from .table_data import TableDataOps, init_table_files
from ..keyspace.layout import DATABASE_RECORD, TABLE, TABLE_ID, TABLE_STORAGE


#: (table name, id) while :func:`creating_at` runs: the create of that name takes that id
_AT: contextvars.ContextVar[tuple[str, uuid.UUID] | None] = contextvars.ContextVar("ushas_create_at", default=None)


@contextlib.contextmanager
def creating_at(name: TableName, table_id: uuid.UUID) -> Iterator[None]:
    """Inside it, creating table ``name`` gives it id ``table_id``: the publish of a CTAS bigger than one
    transaction (:mod:`ushas_catalog.bulk_ctas`) creates its table where its partitions were staged, with
    the same checks as any create. In-process only: no surface (SQL, REST, CLI) can name an id."""
    token = _AT.set((str(name), table_id))
    try:
        yield
    finally:
        _AT.reset(token)


class TableOps(TableDataOps, HistoryOps, DropOps):
    """Tables: create / replace, get, list, alter, rename, drop / undrop / purge."""

    def _table_records(self, tn: TableName, db_record: rec.DatabaseRecord, schema: Any, partition_by: Sequence[str],
                       format: str | None, location: str | None, properties: Mapping[str, str] | None,
                       comment: str | None, owner: str | None, external: bool, schema_id: int,
                       now: int, bucketing: Bucketing | None = None,
                       ) -> tuple[rec.TableSchema, rec.TableStorage, rec.TableProperties]:
        struct = parse_schema(schema)
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        scheme = PartitionScheme.of(struct, partition_by)
        props = check_props(properties, "table properties")
        reserved = {k: props.pop(k) for k in list(props) if k in RESERVED_PROPERTIES}
        location = check_str(location, "location") or reserved.get("location")
        comment = check_str(comment, "comment") if comment is not None else reserved.get("comment")
        owner = check_str(owner, "owner") or reserved.get("owner") or self.user
        if format is None or (format == "parquet" and "provider" in reserved):
            format = reserved.get("provider", "parquet")
        external = bool(external) or reserved.get("external", "").lower() == "true"
        if not location and db_record.location:
            location = db_record.location.rstrip("/") + "/" + tn.name
        if external and not location:
            raise InvalidArgument(f"external table {tn} needs a location")
        check_column_names(struct, check_format(format))
        schema_rec = rec.TableSchema(schema_id=schema_id, schema=struct_to_proto(struct),
                                     partition_columns=list(scheme.names), created_at_micros=now)
        if bucketing is not None:
            b = bucketing.check([f.name for f in struct.fields], scheme.names)
            schema_rec.num_buckets = b.num_buckets
            schema_rec.bucket_columns.extend(b.columns)
            schema_rec.sort_columns.extend(b.sort_columns)
        storage = rec.TableStorage(format=check_format(format), location=location or "", external=external)
        props_rec = rec.TableProperties(properties=props, owner=owner)
        if comment is not None:
            props_rec.comment = comment
        return schema_rec, storage, props_rec

    def create_table(self, name: NameLike, schema: Any, partition_by: Sequence[str] = (), format: str = "parquet",
                     location: str | None = None, properties: Mapping[str, str] | None = None,
                     comment: str | None = None, owner: str | None = None, external: bool = False, *,
                     default_location: bool | None = None, bucketing: Bucketing | None = None) -> TableInfo:
        """Create a table. ``schema``: Spark StructType JSON, a DDL column list or a
        StructType. Spark's reserved properties (location, comment, owner, provider,
        external) in ``properties`` fill the matching arguments left out. Without a
        location the table goes under the database's location, if it has one.
        ``default_location``: the location is the table's default one, not one the user
        chose (default: no location given); it must then not overlap another table's
        location in the database (:class:`~ushas_catalog.errors.LocationInUse`)."""
        tn = new_table_name(name)
        schema = parse_schema(schema)  # outside the transaction: a wide DDL takes a while to parse
        if default_location is None:
            default_location = not location and "location" not in (properties or {})
        placed = location or (properties or {}).get("location")
        checked = bool(placed and not default_location and self.caller().authorization)  # every surface (REST's too)

        def fn(tr: Transaction) -> TableInfo:
            db, entry = self.resolver.relation(tr, tn)
            if entry is not None:
                raise TableAlreadyExists(exists_message(tn, entry), table=str(tn))
            if checked:  # in the create's transaction, after its CREATE check: catalog.locations
                self._check_placement(tr, placed, tn)  # type: ignore[attr-defined]
            return self._create_in(tr, tn, db, schema, partition_by, format, location, properties, comment, owner,
                                   external, default_location=default_location, bucketing=bucketing)

        return self.run(fn)

    def replace_table(self, name: NameLike, schema: Any, partition_by: Sequence[str] = (), format: str = "parquet",
                      location: str | None = None, properties: Mapping[str, str] | None = None,
                      comment: str | None = None, owner: str | None = None, external: bool = False, *,
                      expected_version: int | None = None, bucketing: Bucketing | None = None) -> TableInfo:
        """CREATE OR REPLACE TABLE in one transaction. An existing table keeps its id and
        history: the new definition is the next version (new schema id) and its
        partitions are removed; a missing table is created (unless ``expected_version``
        is given: then it must exist at that version)."""
        tn = new_table_name(name)
        schema = parse_schema(schema)  # outside the transaction
        check_expected(expected_version)
        placed = location or (properties or {}).get("location")
        checked = bool(placed and self.caller().authorization)  # a chosen location: as create_table checks it

        def fn(tr: Transaction) -> TableInfo:
            db, entry = self.resolver.relation(tr, tn)
            if entry is None:
                if expected_version is not None:
                    raise Conflict(f"table {tn} does not exist, not at the expected version {expected_version}",
                                   table=str(tn), expected_version=expected_version)
                return None  # type: ignore[return-value]
            if entry.kind != rec.ObjectKind.TABLE:
                raise TableAlreadyExists(exists_message(tn, entry), table=str(tn))
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            db_record = RecordStore.at(db.path.add(DATABASE_RECORD)).load(tr, ())
            now = now_micros()
            old = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            if checked and normalized(str(placed)) != normalized(old["TableStorage"].location or ""):
                self._check_placement(tr, placed, tn)  # type: ignore[attr-defined]  # moved: catalog.locations
            records = self._table_records(tn, db_record, schema, partition_by, format, location, properties, comment,
                                          owner, external, old["TableSchema"].schema_id + 1, now, bucketing)
            keep_policies(old["TableProperties"], records[2])  # they stay with the table, like its grants
            self._release_table_data(tr, t, tn, old["TableSchema"], old["TableStorage"], "REPLACE TABLE", now)
            for sub, r in zip(("TableSchema", "TableStorage", "TableProperties"), records):
                t.store(sub).save(tr, (), r)
            tr.clear_range(*t.store("TablePartition", ()).path.range())
            init_table_files(t.path, tr, records, t.ref.version + 1)
            ref = copy_record(t.ref)
            ref.schema_id = records[0].schema_id
            self._commit(tr, Mutation("table", str(tn), t.path, "REPLACE TABLE", t.ref.version + 1, ref,
                                      time_micros=now, previous=old, partitions_cleared=True,
                                      changed=("TableSchema", "TableStorage", "TableProperties", "TablePartition"),
                                      detail={"format": records[1].format,
                                              "partition_by": list(records[0].partition_columns)}))
            return table_info(tn, t.id, ref, *records)

        # one transaction: replace, or (table missing) create in the same retry loop
        def replace_or_create(tr: Transaction) -> TableInfo:
            info = fn(tr)
            if info is not None:
                return info
            db, _ = self.resolver.relation(tr, tn)
            if checked:  # after the call's CREATE check, in its transaction, as create_table
                self._check_placement(tr, placed, tn)  # type: ignore[attr-defined]
            return self._create_in(tr, tn, db, schema, partition_by, format, location, properties, comment, owner,
                                   external, bucketing=bucketing,
                                   default_location=not location and "location" not in (properties or {}))

        return self.run(replace_or_create)

    def _create_in(self, tr: Transaction, tn: TableName, db: ResolvedObject, *args: Any,
                   default_location: bool = False, bucketing: Bucketing | None = None) -> TableInfo:
        """Create table ``tn`` (its name known to be free) in database ``db``."""
        self.resolver.refuse_object_name(tr, db.path, tn)
        db_record = RecordStore.at(db.path.add(DATABASE_RECORD)).load(tr, ())
        now = now_micros()
        records = self._table_records(tn, db_record, *args, 1, now, bucketing)
        if default_location:
            self._check_location_free(tr, db, tn, records[1].location)
            self._check_default_placement(tr, records[1].location, tn)  # type: ignore[attr-defined]
        at = _AT.get()
        tid = at[1] if at is not None and at[0] == str(tn) else uuid.uuid4()
        path = Layout.table(db.path, tid)
        self.resolver.names(db.path.add(TABLE), "Table").save(tr, (tn.name,), rec.ObjectName(
            id=tid.bytes, kind=rec.ObjectKind.TABLE, created_at_micros=now), new=True)
        for sub, r in zip(("TableSchema", "TableStorage", "TableProperties"), records):
            RecordStore.at(path.add(sub)).save(tr, (), r, new=True)
        init_table_files(path, tr, records, 1)
        ref = rec.TableReference(schema_id=1, created_at_micros=now)
        self._commit(tr, Mutation("table", str(tn), path, "CREATE TABLE", 1, ref, time_micros=now,
                                  changed=("TableSchema", "TableStorage", "TableProperties"),
                                  detail={"format": records[1].format,
                                          "partition_by": list(records[0].partition_columns)}))
        return table_info(tn, tid, ref, *records)

    def get_table(self, name: NameLike, as_of: int | dt.datetime | None = None) -> TableInfo:
        """The table now, or as it was at version ``as_of`` (an int) or at time ``as_of``
        (a datetime; naive means UTC)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> TableInfo:
            t = self.resolver.table(tr, tn)
            current = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            if as_of is None:
                return table_info(tn, t.id, t.ref, current["TableSchema"], current["TableStorage"],
                                  current["TableProperties"])
            version = self._resolve_as_of(tr, t, as_of)
            past = {sub: self._head_at(tr, t, sub, version, r) for sub, r in current.items()}
            commit = t.store("TableCommit").load(tr, (version,))
            ref = rec.TableReference(version=version, schema_id=past["TableSchema"].schema_id,
                                     created_at_micros=t.ref.created_at_micros,
                                     updated_at_micros=commit.committed_at_micros)
            return table_info(tn, t.id, ref, past["TableSchema"], past["TableStorage"],
                              past["TableProperties"])

        return self.run(fn)

    def table_exists(self, name: NameLike) -> bool:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                _, entry = self.resolver.relation(tr, tn)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return entry is not None and entry.kind == rec.ObjectKind.TABLE

        return self.run(fn)

    def list_tables(self, database: NameLike) -> list[RelationSummary]:
        """Tables of a database, by name (views are listed by :meth:`list_views`)."""
        return self._list_relations(database, rec.ObjectKind.TABLE)

    def list_relations(self, database: NameLike) -> list[RelationSummary]:
        """Tables and views of a database, by name."""
        return self._list_relations(database, None)

    def alter_table(self, name: NameLike, changes: Sequence[TableChange],
                    expected_version: int | None = None) -> TableInfo:
        """Apply table changes in one commit (see :mod:`ushas_catalog.model.table_changes`).
        Column changes make one new schema id (the old schema is kept in history).
        ``expected_version``: fail with :class:`Conflict` if the table moved on."""
        tn = TableName.parse(name)
        check_expected(expected_version)
        changes = list(changes)
        if not changes:
            raise InvalidArgument("alter_table needs at least one change")
        for c in changes:
            change_to_json(c)  # validates the kind
        if self.caller().authorization:  # SET LOCATION on every surface (REST's metastore/call, the Python API)
            for c in changes:
                moved = c.location if isinstance(c, SetLocation) else \
                    c.value if isinstance(c, SetProperty) and c.key == "location" else None
                if moved:
                    check_str(moved, "location")
                    self.check_placement(moved, tn)  # type: ignore[attr-defined]  # catalog.locations

        def fn(tr: Transaction) -> TableInfo:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            old = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            state = SchemaState(struct_from_proto(old["TableSchema"].schema),
                                list(old["TableSchema"].partition_columns), (tn.catalog, tn.database, tn.name),
                                old["TableStorage"].format)
            storage = copy_record(old["TableStorage"])
            props = copy_record(old["TableProperties"])
            schema_changed = False
            for c in changes:
                if isinstance(c, COLUMN_CHANGES):
                    state.apply(c)  # type: ignore[arg-type]
                    schema_changed = True
                    continue
                if isinstance(c, SetProperty) and c.key in RESERVED_PROPERTIES:
                    c = _reserved_change(c.key, c.value)
                elif isinstance(c, RemoveProperty) and c.key in ("comment", "location"):
                    c = SetComment(None) if c.key == "comment" else SetLocation("")
                if isinstance(c, SetProperty):
                    check_props({c.key: c.value}, "table properties")
                    props.properties[c.key] = c.value
                elif isinstance(c, RemoveProperty):
                    props.properties.pop(c.key, None)
                elif isinstance(c, SetLocation):
                    check_str(c.location, "location")
                    storage.location = c.location
                elif isinstance(c, SetComment):
                    check_str(c.comment, "comment")
                    if c.comment is None:
                        props.ClearField("comment")
                    else:
                        props.comment = c.comment
                elif isinstance(c, SetOwner):
                    check_str(c.owner, "owner")
                    props.owner = c.owner
            if schema_changed and props.column_masks:  # a masked column stays while its mask does
                names = {f.name.lower() for f in state.schema.fields}
                gone = [m.column for m in props.column_masks if m.column.lower() not in names]
                if gone:
                    raise InvalidPolicy(f"column {', '.join(gone)} of {tn} has a mask: drop the mask first "
                                        f"(drop_column_mask)")
            previous: dict[str, Message] = {}
            new_schema = old["TableSchema"]
            ref = copy_record(t.ref)
            if schema_changed:
                new_schema = rec.TableSchema(schema_id=old["TableSchema"].schema_id + 1,
                                             schema=struct_to_proto(state.schema),
                                             partition_columns=state.partition_columns, created_at_micros=now_micros())
                kept = bucketing_of(old["TableSchema"])
                if kept is not None:  # the bucket spec stays; its columns must stay too
                    names = {f.name for f in state.schema.fields}
                    gone = [c for c in [*kept.columns, *kept.sort_columns] if c not in names]
                    if gone:
                        raise InvalidArgument(f"cannot drop or rename {', '.join(gone)} of {tn}: the table is "
                                              f"bucketed by it (CLUSTERED BY / SORTED BY)")
                    new_schema.num_buckets = kept.num_buckets
                    new_schema.bucket_columns.extend(kept.columns)
                    new_schema.sort_columns.extend(kept.sort_columns)
                if new_schema.schema != old["TableSchema"].schema or \
                        list(new_schema.partition_columns) != list(old["TableSchema"].partition_columns):
                    t.store("TableSchema").save(tr, (), new_schema)
                    previous["TableSchema"] = old["TableSchema"]
                    ref.schema_id = new_schema.schema_id
                else:
                    new_schema = old["TableSchema"]
            if storage != old["TableStorage"]:
                t.store("TableStorage").save(tr, (), storage)
                previous["TableStorage"] = old["TableStorage"]
            if props != old["TableProperties"]:
                t.store("TableProperties").save(tr, (), props)
                previous["TableProperties"] = old["TableProperties"]
            self._commit(tr, Mutation("table", str(tn), t.path, "ALTER TABLE", t.ref.version + 1, ref,
                                      previous=previous, changed=tuple(previous),
                                      detail={"changes": [change_to_json(c) for c in changes]}))
            return table_info(tn, t.id, ref, new_schema, storage, props)

        return self.run(fn)

    def rename_table(self, name: NameLike, new_name: NameLike, location: str | None = None, *,
                     expected_version: int | None = None) -> TableInfo:
        """Rename a table, possibly into another database of the same catalog (its keys
        then move, so the whole table must fit one transaction's 10 MB). ``location``: the
        table's new data location, in the same commit (a managed table's directory moves
        with its name; it must not overlap another table's location in the new database)."""
        src, dst = TableName.parse(name), new_table_name(new_name)
        check_expected(expected_version)
        if location is not None:
            check_str(location, "location")
            if self.caller().authorization and self.get_table(src).external:  # a managed one moves with its name
                self.check_placement(location, src)  # type: ignore[attr-defined]  # catalog.locations

        def fn(tr: Transaction) -> TableInfo:
            t = self.resolver.table(tr, src)
            expect_version("table", src, t.ref.version, expected_version)
            path = self._move_relation(tr, src, dst, t.id, t.path, rec.ObjectKind.TABLE)
            moved = ResolvedTable(dst, path.parent.parent, t.id, path, t.ref)  # type: ignore[union-attr]
            ref = copy_record(t.ref)
            previous: dict[str, Message] = {}
            if location is not None:
                self._check_location_free(tr, self.resolver.database(tr, dst.database_name, load=False), dst, location,
                                          skip=t.id)
                old_storage = moved.store("TableStorage").load(tr, ())
                storage = copy_record(old_storage)
                storage.location = location
                if storage != old_storage:
                    moved.store("TableStorage").save(tr, (), storage)
                    previous["TableStorage"] = old_storage
                    self._move_partition_locations(tr, moved, old_storage.location, location)
            self._commit(tr, Mutation("table", str(dst), path, "RENAME TABLE", t.ref.version + 1, ref,
                                      previous=previous, changed=tuple(previous),
                                      detail={"from": str(src), "to": str(dst)}))
            return table_info(dst, t.id, ref, *(moved.store(s).load(tr, ()) for s in
                                                ("TableSchema", "TableStorage", "TableProperties")))

        return self.run(fn)

    def _check_location_free(self, tr: Transaction, db: ResolvedObject, tn: TableName, location: str,
                             skip: uuid.UUID | None = None) -> None:
        """:class:`~ushas_catalog.errors.LocationInUse` when ``location`` (the default location
        of table ``tn``) equals, is inside or holds the location of another table of ``db``."""
        if not location:
            return
        for r in self.resolver.names(db.path.add(TABLE), "Table").scan(tr):
            tid = uuid.UUID(bytes=r.record.id)
            if r.record.kind != rec.ObjectKind.TABLE or tid == skip:
                continue
            other = RecordStore.at(Layout.table(db.path, tid).add(TABLE_STORAGE)).load(tr, ())
            if other is not None and overlaps(location, other.location):
                raise location_in_use((tn.catalog, tn.database, tn.name), location,
                                      f"table {tn.catalog}.{tn.database}.{r.key[0]} has its data at "
                                      f"{other.location}")

    def drop_table(self, name: NameLike, purge: bool = False, *, expected_version: int | None = None,
                   data_paths: list[str] | None = None) -> None:
        """Drop a table: its name moves to DroppedTableObjectName (undrop_table restores
        it, data and all: nothing is deleted until purge); with ``purge`` every key of the table
        goes, in one clear_range, and ``data_paths`` receives the data to delete (see :meth:`purge_table`)."""
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            found: list[str] = []
            self._drop_object(tr, t.database.add(TABLE), "Table", tn.name, t, purge, "DROP TABLE",
                              rec.ObjectKind.TABLE, found)
            give_paths(data_paths, found)

        self.run(fn)
        self.more_paths(data_paths)

    def undrop_table(self, name: NameLike, *, expected_version: int | None = None) -> TableInfo:
        """Restore the most recently dropped table of that name (``expected_version``: the
        dropped table's version, i.e. that of its DROP commit)."""
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> TableInfo:
            db = self.resolver.database(tr, tn.database_name, load=False)
            self._undrop_object(tr, db.path.add(TABLE), "Table", tn.name, str(tn), TableAlreadyExists, NoSuchTable)
            t = self.resolver.table(tr, tn)
            expect_version("dropped table", tn, t.ref.version, expected_version)
            ref = copy_record(t.ref)
            self._commit(tr, Mutation("table", str(tn), t.path, "UNDROP TABLE", t.ref.version + 1, ref))
            return table_info(tn, t.id, ref, *(t.store(s).load(tr, ()) for s in
                                               ("TableSchema", "TableStorage", "TableProperties")))

        return self.run(fn)

    def purge_table(self, name: NameLike, *, data_paths: list[str] | None = None,
                    older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped table of that name (dropped more than ``older_than`` ago when given),
        keys and all; returns how many. ``data_paths`` (a list) receives the paths of their data to
        delete once this committed: a managed table's location, or its recorded files when a live
        table shares that location, and the files its overwrites let go; nothing of an external table."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> int:
            db = self.resolver.database(tr, tn.database_name, load=False)
            tables = db.path.add(TABLE)
            found: list[str] = []
            n = self._purge_dropped(tr, tables, "Table", tn.name, str(tn),
                                    lambda i: tables.add(TABLE_ID, i), NoSuchTable, found, cutoff_micros(older_than))
            give_paths(data_paths, found)
            return n

        n = self.run(fn)
        self.more_paths(data_paths)
        return n

    def list_dropped_tables(self, database: NameLike, name: str | None = None) -> list[DroppedObject]:
        """The dropped tables of ``database`` (kept until purged); ``name``: those of that name only (a range
        read of that name's entries, not of every dropped table of the database)."""
        dn = DatabaseName.parse(database)

        def fn(tr: Transaction) -> list[DroppedObject]:
            db = self.resolver.database(tr, dn, load=False)
            return self._list_dropped(tr, db.path.add(TABLE), "Table",
                                      lambda n: str(TableName(dn.catalog, dn.database, n)), name=name)

        return self.run(fn)


def _reserved_change(key: str, value: str) -> TableChange:
    if key == "location":
        return SetLocation(value)
    if key == "comment":
        return SetComment(value)
    if key == "owner":
        return SetOwner(value)
    raise InvalidArgument(f"table property {key!r} is reserved and cannot be changed with SET TBLPROPERTIES")
