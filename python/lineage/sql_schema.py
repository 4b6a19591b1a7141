"""Table schemas for SQL lineage without Spark.

:func:`lineage.sql.sql_lineage` needs the columns of every table a statement reads (to expand
``*`` and to know which table an unqualified column belongs to). They come from a
:class:`SchemaSource`:

- :class:`MappingSchema`: a plain mapping ``{table: {column: type}}``, nested by database and
  catalog if wanted (``{db: {table: {...}}}``, ``{catalog: {db: {table: {...}}}}``), or keyed by
  dotted names (``{"db.table": {...}}``); a table may also be given as Spark ``StructType`` JSON
  (``{"type": "struct", "fields": [...]}``);
- :class:`MetastoreSchema`: the Ushas metastore (``Metastore.get_table``), for three-part names;
- :class:`ChainedSchema`: the first source that knows a table wins.

Names are case-insensitive (Spark's default): keys are lower-cased.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

from ushas_catalog.errors import InvalidArgument, NotFound

#: a table name as written or qualified: (table,), (db, table) or (catalog, db, table)
TableName = tuple[str, ...]

#: Spark's JSON names of atomic types -> their SQL spelling
_ATOMIC_SQL: dict[str, str] = {
    "long": "bigint",
    "integer": "int",
    "short": "smallint",
    "byte": "tinyint",
    "null": "void",
}


@runtime_checkable
class SchemaSource(Protocol):
    """Something that knows the columns (name -> SQL type) of tables."""

    def columns(self, name: TableName) -> Mapping[str, str] | None:
        """The ordered columns of table ``name`` (lower-cased parts), or None if unknown."""


def spark_type_sql(data_type: Any) -> str:
    """The SQL spelling of a Spark ``DataType`` in its JSON form (``"long"``,
    ``{"type": "array", "elementType": ..., ...}``, ...)."""
    if isinstance(data_type, str):
        return _ATOMIC_SQL.get(data_type, data_type)
    if not isinstance(data_type, Mapping):
        raise InvalidArgument(f"not a Spark data type: {data_type!r}")
    kind = data_type.get("type")
    if kind == "struct":
        inner = ",".join(f"{_quote(f['name'])}:{spark_type_sql(f['type'])}" for f in data_type.get("fields", ()))
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{spark_type_sql(data_type['elementType'])}>"
    if kind == "map":
        return f"map<{spark_type_sql(data_type['keyType'])},{spark_type_sql(data_type['valueType'])}>"
    if kind == "udt":
        return spark_type_sql(data_type.get("sqlType", "binary"))
    raise InvalidArgument(f"not a Spark data type: {data_type!r}")


def struct_columns(struct: Mapping[str, Any] | str) -> dict[str, str]:
    """Columns of a Spark ``StructType`` given as JSON text or its parsed dict."""
    if isinstance(struct, str):
        try:
            struct = json.loads(struct)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"schema is not StructType JSON: {exc}") from None
    if not isinstance(struct, Mapping) or struct.get("type") != "struct":
        raise InvalidArgument("schema is not a Spark StructType (expected {\"type\": \"struct\", ...})")
    return {str(f["name"]).lower(): spark_type_sql(f["type"]) for f in struct.get("fields", ())}


def _quote(name: str) -> str:
    return name if name.replace("_", "").isalnum() else "`" + name.replace("`", "``") + "`"


def _is_struct_json(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "struct" and "fields" in value


@dataclass(frozen=True)
class MappingSchema:
    """Table columns from a mapping (see the module doc for the accepted shapes)."""

    tables: Mapping[TableName, Mapping[str, str]] = field(default_factory=dict)

    @staticmethod
    def of(mapping: Mapping[str, Any]) -> MappingSchema:
        tables: dict[TableName, dict[str, str]] = {}
        stack: list[tuple[TableName, Any]] = [((), mapping)]
        while stack:
            prefix, value = stack.pop()
            if not isinstance(value, Mapping):
                raise InvalidArgument(f"schema entry {'.'.join(prefix) or '<root>'}: expected a mapping, "
                                      f"got {type(value).__name__}")
            if prefix and _is_struct_json(value):
                tables[prefix] = struct_columns(value)
                continue
            if prefix and value and all(isinstance(v, str) for v in value.values()):
                tables[prefix] = {str(k).lower(): v for k, v in value.items()}
                continue
            for key, inner in value.items():
                parts = tuple(p.strip().lower() for p in str(key).split("."))
                if not all(parts):
                    raise InvalidArgument(f"schema key {key!r} is not a name")
                stack.append((prefix + parts, inner))
        for name in tables:
            if len(name) > 3:
                raise InvalidArgument(f"schema table {'.'.join(name)!r} has more than three name parts")
        return MappingSchema(tables)

    @staticmethod
    def load(path: str | Path) -> MappingSchema:
        """Read a JSON file holding one of the accepted mappings."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidArgument(f"cannot read schema file {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"schema file {path} is not JSON: {exc}") from None
        if not isinstance(data, Mapping):
            raise InvalidArgument(f"schema file {path}: expected a JSON object")
        return MappingSchema.of(data)

    def columns(self, name: TableName) -> Mapping[str, str] | None:
        return self.tables.get(name)


@dataclass(frozen=True)
class MetastoreSchema:
    """Columns of tables in the Ushas metastore: only three-part names (catalog.db.table)."""

    metastore: Any

    def columns(self, name: TableName) -> Mapping[str, str] | None:
        if len(name) != 3:
            return None
        try:
            info = self.metastore.get_table(name)  # names are parsed from parts: no quoting issue
        except NotFound:
            return None
        schema = info.get("schema") if isinstance(info, Mapping) else getattr(info, "schema", None)
        if schema is None:
            return None
        if hasattr(schema, "json_value"):  # ushas_catalog.model.schema.StructType
            schema = schema.json_value()
        return struct_columns(schema)


@dataclass(frozen=True)
class ChainedSchema:
    """The first source knowing a table answers."""

    sources: tuple[SchemaSource, ...]

    def columns(self, name: TableName) -> Mapping[str, str] | None:
        for source in self.sources:
            found = source.columns(name)
            if found is not None:
                return found
        return None


SchemaLike = SchemaSource | Mapping[str, Any] | None


def as_schema_source(schema: SchemaLike) -> SchemaSource:
    """A :class:`SchemaSource` for any accepted schema argument (None: no tables known)."""
    if schema is None:
        return MappingSchema()
    if isinstance(schema, SchemaSource) and not isinstance(schema, Mapping):
        return schema
    if isinstance(schema, Mapping):
        return MappingSchema.of(schema)
    if hasattr(schema, "get_table"):
        return MetastoreSchema(schema)
    raise InvalidArgument(f"unsupported schema argument of type {type(schema).__name__}")


def candidate_names(written: TableName, catalog: str | None, database: str | None) -> Iterable[TableName]:
    """Names to try, most specific as written first, then qualified with the session defaults."""
    yield written
    if len(written) == 1 and database:
        yield (database, written[0])
        if catalog:
            yield (catalog, database, written[0])
    elif len(written) == 2 and catalog:
        yield (catalog, *written)
