"""Views: create or replace, get, list, alter, rename, drop (views share the tables' name space)."""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Mapping, Sequence

from .. import records as rec
from ..errors import Conflict, InvalidArgument, NoSuchCatalog, NoSuchNamespace, TableAlreadyExists, ViewAlreadyExists
from ..governance.privileges import MANAGE
from ..keyspace.layout import Layout
from ..kv import Transaction
from ..model.names import NameLike, TableName, new_table_name
from ..model.objects import RelationSummary, ViewInfo
from ..model.schema import parse_schema, struct_to_proto
from .base import MetastoreBase
from .commits import Mutation
from .infos import view_info
from .values import (UNSET, check_expected, check_props, check_str, copy_record, exists_message, expect_version,
                     now_micros)
from ..keyspace.layout import TABLE


class ViewOps(MetastoreBase):
    """Views (they share the tables' name space)."""

    def create_view(self, name: NameLike, sql: str, schema: Any, comment: str | None = None,
                    properties: Mapping[str, str] | None = None, current_catalog: str | None = None,
                    current_namespace: Sequence[str] | None = None, query_column_names: Sequence[str] = (),
                    replace: bool = False, owner: str | None = None, *,
                    expected_version: int | None = None) -> ViewInfo:
        """Create (``replace=True``: or replace) a view. Views share the tables' name
        space: a table of that name fails with TableAlreadyExists. ``expected_version``:
        the view must exist at that version (and is replaced)."""
        tn = new_table_name(name, "view")
        check_expected(expected_version)
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgument("a view needs its SQL text")
        struct = parse_schema(schema)
        record = rec.ViewRecord(sql=sql, schema=struct_to_proto(struct),
                                properties=check_props(properties, "view properties"),
                                current_catalog=check_str(current_catalog, "current_catalog") or "",
                                current_namespace=list(current_namespace or ()),
                                query_column_names=list(query_column_names),
                                owner=check_str(owner, "owner") or self.user)
        if comment is not None:
            record.comment = check_str(comment, "comment") or ""

        def fn(tr: Transaction) -> ViewInfo:
            db, entry = self.resolver.relation(tr, tn)
            now = now_micros()
            new = copy_record(record)
            if entry is not None:
                if entry.kind != rec.ObjectKind.VIEW:
                    raise TableAlreadyExists(exists_message(tn, entry), table=str(tn))
                if not replace:
                    raise ViewAlreadyExists(f"view {tn} already exists", view=str(tn))
                self.authorize(tr, MANAGE, "relation", tn)  # type: ignore[attr-defined]  # replacing it alters it
                view = self.resolver.view(tr, tn)
                expect_version("view", tn, view.record.version, expected_version)
                new.created_at_micros = view.record.created_at_micros
                self._commit(tr, Mutation("view", str(tn), view.path, "REPLACE VIEW", view.record.version + 1, new,
                                          previous_head=view.record, time_micros=now))
                return view_info(tn, view.id, new)
            if expected_version is not None:
                raise Conflict(f"view {tn} does not exist, not at the expected version {expected_version}",
                               view=str(tn), expected_version=expected_version)
            self.resolver.refuse_object_name(tr, db.path, tn)
            vid = uuid.uuid4()
            path = Layout.view(db.path, vid)
            self.resolver.names(db.path.add(TABLE), "Table").save(tr, (tn.name,), rec.ObjectName(
                id=vid.bytes, kind=rec.ObjectKind.VIEW, created_at_micros=now), new=True)
            new.created_at_micros = now
            self._commit(tr, Mutation("view", str(tn), path, "CREATE VIEW", 1, new, time_micros=now))
            return view_info(tn, vid, new)

        return self.run(fn)

    def get_view(self, name: NameLike) -> ViewInfo:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> ViewInfo:
            v = self.resolver.view(tr, tn)
            return view_info(tn, v.id, v.record)

        return self.run(fn)

    def view_exists(self, name: NameLike) -> bool:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                _, entry = self.resolver.relation(tr, tn)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return entry is not None and entry.kind == rec.ObjectKind.VIEW

        return self.run(fn)

    def list_views(self, database: NameLike) -> list[RelationSummary]:
        return self._list_relations(database, rec.ObjectKind.VIEW)

    def alter_view(self, name: NameLike, *, sql: str | None = None, schema: Any = None,
                   query_column_names: Sequence[str] | None = None, current_catalog: str | None = None,
                   current_namespace: Sequence[str] | None = None, set_properties: Mapping[str, str] | None = None,
                   remove_properties: Iterable[str] | None = None, comment: Any = UNSET,
                   owner: str | None = None, expected_version: int | None = None) -> ViewInfo:
        """ALTER VIEW ... AS (``sql`` with its ``schema``) and / or SET / UNSET TBLPROPERTIES."""
        tn = TableName.parse(name)
        check_expected(expected_version)
        if (sql is None) != (schema is None):
            raise InvalidArgument("alter_view: give the new sql and its schema together")
        struct = parse_schema(schema) if schema is not None else None
        sets = check_props(set_properties, "view properties")
        removes = list(remove_properties or ())

        def fn(tr: Transaction) -> ViewInfo:
            v = self.resolver.view(tr, tn)
            expect_version("view", tn, v.record.version, expected_version)
            new = copy_record(v.record)
            if sql is not None:
                if not isinstance(sql, str) or not sql.strip():
                    raise InvalidArgument("a view needs its SQL text")
                new.sql = sql
                new.schema.CopyFrom(struct_to_proto(struct))  # type: ignore[arg-type]
            if query_column_names is not None:
                del new.query_column_names[:]
                new.query_column_names.extend(query_column_names)
            if current_catalog is not None:
                new.current_catalog = current_catalog
            if current_namespace is not None:
                del new.current_namespace[:]
                new.current_namespace.extend(current_namespace)
            for k in removes:
                new.properties.pop(k, None)
            new.properties.update(sets)
            if comment is not UNSET:
                if comment is None:
                    new.ClearField("comment")
                else:
                    new.comment = check_str(comment, "comment") or ""
            if owner is not None:
                new.owner = owner
            self._commit(tr, Mutation("view", str(tn), v.path, "ALTER VIEW", v.record.version + 1, new,
                                      previous_head=v.record, detail={"set": sets, "remove": removes,
                                                                      "sql_changed": sql is not None}))
            return view_info(tn, v.id, new)

        return self.run(fn)

    def rename_view(self, name: NameLike, new_name: NameLike, *, expected_version: int | None = None) -> ViewInfo:
        src, dst = TableName.parse(name), new_table_name(new_name, "view")
        check_expected(expected_version)

        def fn(tr: Transaction) -> ViewInfo:
            v = self.resolver.view(tr, src)
            expect_version("view", src, v.record.version, expected_version)
            path = self._move_relation(tr, src, dst, v.id, v.path, rec.ObjectKind.VIEW)
            new = copy_record(v.record)
            self._commit(tr, Mutation("view", str(dst), path, "RENAME VIEW", v.record.version + 1, new,
                                      previous_head=v.record, detail={"from": str(src), "to": str(dst)}))
            return view_info(dst, v.id, new)

        return self.run(fn)

    def drop_view(self, name: NameLike, *, expected_version: int | None = None) -> None:
        """Drop a view: its name and every key of it go (views are not undroppable)."""
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            v = self.resolver.view(tr, tn)
            expect_version("view", tn, v.record.version, expected_version)
            db = self.resolver.database(tr, tn.database_name, load=False)
            self.resolver.names(db.path.add(TABLE), "Table").delete(tr, (tn.name,))
            self.hooks.purged(tr, v.path)
            tr.clear_range(*v.path.range())
            self.hooks.removed(tr, kind="view", name=str(tn), object_id=v.id, version=v.record.version,
                               operation="DROP VIEW", change=rec.ChangeEvent.DROPPED, before=v.record)

        self.run(fn)
