"""Table changes for ``Metastore.alter_table``, mirroring Spark's ``TableChange``, and
how schema changes are applied (schema evolution).

Field paths are tuples of names from the top level down; inside an array the element
is ``"element"``, inside a map ``"key"`` / ``"value"`` (Spark's convention). Names
match exactly first, else case-insensitively when unique.

Partition columns are fixed: renaming, dropping or changing the type of one is refused
(:class:`~ushas_catalog.errors.PartitionColumnChange`; Spark users see
``UNSUPPORTED_FEATURE.TABLE_OPERATION`` or ``CANNOT_ALTER_PARTITION_COLUMN`` as on Spark's
own catalog), since its name and value encoding are in every partition's key and directory.
A new or renamed top-level column must be usable in a directory name
(:func:`~ushas_catalog.model.names.check_column_name`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union

from ..errors import InvalidArgument, InvalidSchemaChange, PartitionColumnChange, SparkError, spark_id
from .names import check_column_name
from .schema import (ArrayType, DataType, MapType, StructField, StructType, parse_type, widening_error)


@dataclass(frozen=True)
class ColumnPosition:
    """``FIRST`` (``after is None``) or ``AFTER <column>``."""

    after: str | None = None

    @classmethod
    def first(cls) -> "ColumnPosition":
        return cls(None)

    def to_json(self) -> dict[str, Any]:
        return {"type": "first"} if self.after is None else {"type": "after", "column": self.after}


@dataclass(frozen=True)
class AddColumn:
    field_names: tuple[str, ...]
    data_type: DataType
    nullable: bool = True
    comment: str | None = None
    position: ColumnPosition | None = None


@dataclass(frozen=True)
class DeleteColumn:
    field_names: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class RenameColumn:
    field_names: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class UpdateColumnType:
    field_names: tuple[str, ...]
    new_data_type: DataType


@dataclass(frozen=True)
class UpdateColumnComment:
    field_names: tuple[str, ...]
    new_comment: str | None


@dataclass(frozen=True)
class UpdateColumnNullability:
    field_names: tuple[str, ...]
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnPosition:
    field_names: tuple[str, ...]
    position: ColumnPosition


@dataclass(frozen=True)
class SetProperty:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveProperty:
    key: str


@dataclass(frozen=True)
class SetLocation:
    location: str


@dataclass(frozen=True)
class SetComment:
    comment: str | None


@dataclass(frozen=True)
class SetOwner:
    owner: str


ColumnChange = Union[AddColumn, DeleteColumn, RenameColumn, UpdateColumnType, UpdateColumnComment,
                     UpdateColumnNullability, UpdateColumnPosition]
TableChange = Union[ColumnChange, SetProperty, RemoveProperty, SetLocation, SetComment, SetOwner]
COLUMN_CHANGES = (AddColumn, DeleteColumn, RenameColumn, UpdateColumnType, UpdateColumnComment,
                  UpdateColumnNullability, UpdateColumnPosition)


def change_to_json(change: TableChange) -> dict[str, Any]:
    """The JSON form :func:`changes_from_json` reads (also stored in commit details)."""
    name = type(change).__name__
    if isinstance(change, AddColumn):
        return {"type": name, "fieldNames": list(change.field_names), "dataType": change.data_type.json_value(),
                "nullable": change.nullable, "comment": change.comment,
                "position": change.position.to_json() if change.position else None}
    if isinstance(change, DeleteColumn):
        return {"type": name, "fieldNames": list(change.field_names), "ifExists": change.if_exists}
    if isinstance(change, RenameColumn):
        return {"type": name, "fieldNames": list(change.field_names), "newName": change.new_name}
    if isinstance(change, UpdateColumnType):
        return {"type": name, "fieldNames": list(change.field_names), "newDataType": change.new_data_type.json_value()}
    if isinstance(change, UpdateColumnComment):
        return {"type": name, "fieldNames": list(change.field_names), "newComment": change.new_comment}
    if isinstance(change, UpdateColumnNullability):
        return {"type": name, "fieldNames": list(change.field_names), "nullable": change.nullable}
    if isinstance(change, UpdateColumnPosition):
        return {"type": name, "fieldNames": list(change.field_names), "position": change.position.to_json()}
    if isinstance(change, SetProperty):
        return {"type": name, "property": change.key, "value": change.value}
    if isinstance(change, RemoveProperty):
        return {"type": name, "property": change.key}
    if isinstance(change, SetLocation):
        return {"type": name, "location": change.location}
    if isinstance(change, SetComment):
        return {"type": name, "comment": change.comment}
    if isinstance(change, SetOwner):
        return {"type": name, "owner": change.owner}
    raise InvalidArgument(f"not a table change: {change!r}")


def changes_from_json(items: list[dict[str, Any]]) -> list[TableChange]:
    """Parse table changes from JSON (what the JVM shim sends for ``alterTable``).

    A list of objects, each with a ``type`` and the fields of that change::

        {"type": "AddColumn", "fieldNames": ["point", "z"], "dataType": <Spark JSON type>,
         "nullable": true, "comment": "text" | null,
         "position": {"type": "first"} | {"type": "after", "column": "y"} | null,
         "default": SQL text | absent}  (a default is refused: column defaults are not supported)
        {"type": "DeleteColumn", "fieldNames": [...], "ifExists": false}
        {"type": "RenameColumn", "fieldNames": [...], "newName": "name"}
        {"type": "UpdateColumnType", "fieldNames": [...], "newDataType": <Spark JSON type>}
        {"type": "UpdateColumnComment", "fieldNames": [...], "newComment": "text" | null}
        {"type": "UpdateColumnNullability", "fieldNames": [...], "nullable": false}
        {"type": "UpdateColumnPosition", "fieldNames": [...], "position": {...}}
        {"type": "SetProperty", "property": "k", "value": "v"}
        {"type": "RemoveProperty", "property": "k"}
        {"type": "SetLocation", "location": "s3a://..."}
        {"type": "SetComment", "comment": "text" | null}
        {"type": "SetOwner", "owner": "name"}

    A Spark JSON type is what ``DataType.json()`` gives, parsed (``"long"``,
    ``{"type": "struct", ...}``); a DDL type string (``"BIGINT"``) is accepted too.
    ``SetProperty`` / ``RemoveProperty`` of Spark's reserved ``location``, ``comment``
    and ``owner`` properties act on those fields. Unknown types or missing fields raise
    :class:`~ushas_catalog.errors.InvalidArgument`.
    """
    if not isinstance(items, list):
        raise InvalidArgument(f"table changes must be a JSON list, not {type(items).__name__}")
    return [_change_from_json(i, item) for i, item in enumerate(items)]


def _change_from_json(i: int, item: Any) -> TableChange:
    if not isinstance(item, dict) or "type" not in item:
        raise InvalidArgument(f"table change #{i} must be an object with a 'type'")
    kind = item["type"]

    def get(key: str, *types: type) -> Any:
        if key not in item:
            raise InvalidArgument(f"table change #{i} ({kind}) lacks {key!r}")
        value = item[key]
        if types and not isinstance(value, types):
            raise InvalidArgument(f"table change #{i} ({kind}): {key!r} must be "
                                  f"{' or '.join(t.__name__ for t in types)}")
        return value

    def names() -> tuple[str, ...]:
        value = get("fieldNames", list)
        if not value or not all(isinstance(v, str) and v for v in value):
            raise InvalidArgument(f"table change #{i} ({kind}): fieldNames must be a non-empty list of names")
        return tuple(value)

    def optional_str(key: str) -> str | None:
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(f"table change #{i} ({kind}): {key!r} must be a string or null")
        return value

    def position(value: Any) -> ColumnPosition | None:
        if value is None:
            return None
        if isinstance(value, dict) and value.get("type") == "first":
            return ColumnPosition(None)
        if isinstance(value, dict) and value.get("type") == "after" and isinstance(value.get("column"), str):
            return ColumnPosition(value["column"])
        raise InvalidArgument(f"table change #{i} ({kind}): position must be "
                              f"{{'type': 'first'}} or {{'type': 'after', 'column': name}}")

    if kind == "AddColumn":
        if item.get("default") is not None:  # Spark refuses DEFAULT in CREATE TABLE for this catalog; so do we
            raise InvalidArgument(f"table change #{i} ({kind}): column default values are not supported "
                                  f"(DEFAULT {item['default']})")
        return AddColumn(names(), parse_type(get("dataType")), bool(item.get("nullable", True)),
                         optional_str("comment"), position(item.get("position")))
    if kind == "DeleteColumn":
        return DeleteColumn(names(), bool(item.get("ifExists", False)))
    if kind == "RenameColumn":
        return RenameColumn(names(), get("newName", str))
    if kind == "UpdateColumnType":
        return UpdateColumnType(names(), parse_type(get("newDataType")))
    if kind == "UpdateColumnComment":
        return UpdateColumnComment(names(), optional_str("newComment"))
    if kind == "UpdateColumnNullability":
        return UpdateColumnNullability(names(), bool(get("nullable", bool)))
    if kind == "UpdateColumnPosition":
        pos = position(get("position"))
        assert pos is not None
        return UpdateColumnPosition(names(), pos)
    if kind == "SetProperty":
        return SetProperty(get("property", str), get("value", str))
    if kind == "RemoveProperty":
        return RemoveProperty(get("property", str))
    if kind == "SetLocation":
        return SetLocation(get("location", str))
    if kind == "SetComment":
        return SetComment(optional_str("comment"))
    if kind == "SetOwner":
        return SetOwner(get("owner", str))
    raise InvalidArgument(f"table change #{i}: unknown type {kind!r}")


# --- applying column changes -----------------------------------------------------------
def _find(struct: StructType, name: str, path: tuple[str, ...]) -> int:
    try:
        return struct.index(name)
    except KeyError:
        raise InvalidSchemaChange(f"column {'.'.join(path)!r} does not exist", column=".".join(path)) from None


def _update_at(struct: StructType, path: tuple[str, ...], fn: Any, full: tuple[str, ...]) -> StructType:
    """Rebuild ``struct`` with ``fn(parent_struct, last_name)`` applied at the struct
    that holds ``path[-1]`` (walking through arrays' element and maps' key / value)."""
    if len(path) == 1:
        return fn(struct, path[0])
    i = _find(struct, path[0], full[:len(full) - len(path) + 1])
    f = struct.fields[i]
    new_type = _update_type(f.data_type, path[1:], fn, full)
    fields = list(struct.fields)
    fields[i] = StructField(f.name, new_type, f.nullable, f.metadata)
    return StructType(tuple(fields))


def _update_type(t: DataType, path: tuple[str, ...], fn: Any, full: tuple[str, ...]) -> DataType:
    if isinstance(t, StructType):
        return _update_at(t, path, fn, full)
    if isinstance(t, ArrayType) and path[0] == "element" and len(path) > 1:
        return ArrayType(_update_type(t.element_type, path[1:], fn, full), t.contains_null)
    if isinstance(t, MapType) and path[0] in ("key", "value") and len(path) > 1:
        if path[0] == "key":
            return MapType(_update_type(t.key_type, path[1:], fn, full), t.value_type, t.value_contains_null)
        return MapType(t.key_type, _update_type(t.value_type, path[1:], fn, full), t.value_contains_null)
    raise InvalidSchemaChange(f"column {'.'.join(full)!r}: {'.'.join(full[:len(full) - len(path)])!r} "
                              f"is not a struct (or array element / map value holding one)",
                              column=".".join(full))


def _exists(struct: StructType, path: tuple[str, ...]) -> bool:
    try:
        _update_at(struct, path, lambda s, n: (s, _find(s, n, path))[0], path)
        return True
    except InvalidSchemaChange:
        return False


def _placed(fields: list[StructField], f: StructField, position: ColumnPosition | None,
            path: tuple[str, ...]) -> list[StructField]:
    if position is None:
        return fields + [f]
    if position.after is None:
        return [f] + fields
    tmp = StructType(tuple(fields))
    try:
        i = tmp.index(position.after)
    except KeyError:
        raise InvalidSchemaChange(f"cannot place {'.'.join(path)!r} after {position.after!r}: no such column",
                                  column=".".join(path)) from None
    return fields[:i + 1] + [f] + fields[i + 1:]


@dataclass
class SchemaState:
    """A schema with its partition columns, being changed; ``table`` (catalog, database, name)
    and ``datasource`` (the table's format) only name things in errors."""

    schema: StructType
    partition_columns: list[str]
    table: tuple[str, ...] = ()
    datasource: str = "parquet"

    def _fixed(self, operation: str, column: str) -> PartitionColumnChange:
        shown = ".".join(self.table) or "the table"
        return PartitionColumnChange(
            f"cannot {operation.lower()} {column!r} of {shown}: it is a partition column, and partition columns "
            f"are fixed (their names and values are in every partition's key and directory)",
            spark=SparkError("UNSUPPORTED_FEATURE.TABLE_OPERATION",
                             {"tableName": spark_id(*self.table), "operation": f"{operation} of partition column "
                                                                               f"{spark_id(column)}"}),
            column=column)

    def apply(self, change: ColumnChange) -> None:
        path = change.field_names
        top_partition = len(path) == 1 and any(p.lower() == path[0].lower() for p in self.partition_columns)
        if isinstance(change, AddColumn):
            if not change.field_names[-1]:
                raise InvalidSchemaChange("a new column needs a name")
            if len(path) == 1:
                check_column_name(path[0], self.datasource)

            def add(s: StructType, name: str) -> StructType:
                if any(f.name.lower() == name.lower() for f in s.fields):
                    raise InvalidSchemaChange(f"column {'.'.join(path)!r} already exists", column=".".join(path))
                f = StructField(name, change.data_type, change.nullable,
                                {"comment": change.comment} if change.comment is not None else {})
                fields = list(s.fields)
                if change.position is None and len(path) == 1:
                    # like Hive: a new top-level column goes before the trailing partition columns,
                    # which Spark's file writes and positional INSERTs expect to come last
                    parts = {p.lower() for p in self.partition_columns}
                    tail = len(fields)
                    while tail and fields[tail - 1].name.lower() in parts:
                        tail -= 1
                    return StructType(tuple(fields[:tail] + [f] + fields[tail:]))
                return StructType(tuple(_placed(fields, f, change.position, path)))

            self.schema = _update_at(self.schema, path, add, path)
        elif isinstance(change, DeleteColumn):
            if not _exists(self.schema, path):
                if change.if_exists:
                    return
                raise InvalidSchemaChange(f"column {'.'.join(path)!r} does not exist", column=".".join(path))
            if top_partition:
                raise self._fixed("DROP COLUMN", path[0])

            def delete(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                if len(s.fields) == 1:
                    raise InvalidSchemaChange(f"cannot drop {'.'.join(path)!r}: it is the only field of its struct",
                                              column=".".join(path))
                return StructType(s.fields[:i] + s.fields[i + 1:])

            self.schema = _update_at(self.schema, path, delete, path)
        elif isinstance(change, RenameColumn):
            new = change.new_name
            if not isinstance(new, str) or not new:
                raise InvalidSchemaChange("a column's new name must be a non-empty string")
            if top_partition and _exists(self.schema, path):
                raise self._fixed("RENAME COLUMN", path[0])
            if len(path) == 1:
                check_column_name(new, self.datasource)

            def rename(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                old = s.fields[i]
                if any(j != i and f.name.lower() == new.lower() for j, f in enumerate(s.fields)):
                    raise InvalidSchemaChange(f"cannot rename {'.'.join(path)!r} to {new!r}: that column exists",
                                              column=".".join(path))
                fields = list(s.fields)
                fields[i] = StructField(new, old.data_type, old.nullable, old.metadata)
                return StructType(tuple(fields))

            self.schema = _update_at(self.schema, path, rename, path)
        elif isinstance(change, UpdateColumnType):
            def retype(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                old = s.fields[i]
                if top_partition and old.data_type != change.new_data_type:
                    raise PartitionColumnChange(
                        f"cannot change the type of {old.name!r} of {'.'.join(self.table) or 'the table'} from "
                        f"{old.data_type.ddl()} to {change.new_data_type.ddl()}: it is a partition column, and "
                        f"partition columns are fixed",
                        spark=SparkError("CANNOT_ALTER_PARTITION_COLUMN",
                                         {"tableName": spark_id(*self.table), "columnName": spark_id(old.name)}),
                        column=old.name)
                why = widening_error(old.data_type, change.new_data_type)
                if why is not None:
                    raise InvalidSchemaChange(f"cannot change the type of {'.'.join(path)!r}: {why}",
                                              spark=_not_supported_change(self.table, path, old.data_type,
                                                                          change.new_data_type),
                                              column=".".join(path))
                fields = list(s.fields)
                fields[i] = StructField(old.name, change.new_data_type, old.nullable, old.metadata)
                return StructType(tuple(fields))

            self.schema = _update_at(self.schema, path, retype, path)
        elif isinstance(change, UpdateColumnComment):
            def comment(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                fields = list(s.fields)
                fields[i] = fields[i].with_comment(change.new_comment)
                return StructType(tuple(fields))

            self.schema = _update_at(self.schema, path, comment, path)
        elif isinstance(change, UpdateColumnNullability):
            def nullability(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                old = s.fields[i]
                fields = list(s.fields)
                fields[i] = StructField(old.name, old.data_type, change.nullable, old.metadata)
                return StructType(tuple(fields))

            self.schema = _update_at(self.schema, path, nullability, path)
        elif isinstance(change, UpdateColumnPosition):
            def move(s: StructType, name: str) -> StructType:
                i = _find(s, name, path)
                f = s.fields[i]
                rest = list(s.fields[:i] + s.fields[i + 1:])
                if change.position.after is not None and change.position.after.lower() == f.name.lower():
                    raise InvalidSchemaChange(f"cannot move {'.'.join(path)!r} after itself", column=".".join(path))
                return StructType(tuple(_placed(rest, f, change.position, path)))

            self.schema = _update_at(self.schema, path, move, path)
        else:  # pragma: no cover - the union is closed
            raise InvalidArgument(f"not a column change: {change!r}")


def _not_supported_change(table: Sequence[str], path: Sequence[str], old: Any, new: Any) -> SparkError:
    """Spark's own refusal of a column type change (``NOT_SUPPORTED_CHANGE_COLUMN``), with its parameters."""
    def sql_type(t: Any) -> str:
        return '"' + t.ddl().upper() + '"'

    column = spark_id(*path)
    return SparkError("NOT_SUPPORTED_CHANGE_COLUMN", {"table": spark_id(*table), "originName": column,
                                                      "originType": sql_type(old), "newName": column,
                                                      "newType": sql_type(new)})
