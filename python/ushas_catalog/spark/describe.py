"""``DESCRIBE EXTENDED / FORMATTED`` of an Ushas table, as Spark's session catalog describes its own
tables: the rows of the detailed section (``describe`` op; the JVM's ``DescribeStrategy`` puts them
after Spark's own column rows).

- a table: Catalog, Database, Table, Owner, Created Time, Last Access, Created By, Type, Provider,
  Comment, Row Filter, Column Masks (docs/governance.md), Table Properties, Statistics (once ``CALL ushas.system.analyze_table`` stored them), Location,
  Storage Properties (the ``OPTIONS``), Partition Provider;
- a partition (``DESC EXTENDED t PARTITION (…)``): Database, Table, Partition Values, Location, Storage
  Properties, Partition Parameters, Created Time, Last Access, Partition Statistics, then the table's
  storage information;
- a view: Catalog, Database, Table, Owner, Created Time, Last Access, Created By, Type, Comment,
  View Text, View Original Text, View Schema Mode, View Catalog and Namespace, View Query Output Columns,
  Table Properties;
- a column (``DESC FORMATTED t c``): min, max, num_nulls, distinct_count, avg_col_len, max_col_len,
  histogram, from the statistics ``analyze_table`` stored under Spark's own keys
  (``spark.sql.statistics.colStats.<column>.<stat>``), ``NULL`` before.

Values Spark redacts (keys or values matching ``secret|password|token|access.key|url``) are redacted
the same way.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ..catalog.row_policies import as_reader_sees
from .tables import OPTION_PREFIX, RESERVED, SparkCtx, location_of, table_name
from .writes import STATS_PROPERTIES

#: Spark's own property keys of table statistics (``spark.sql.statistics.*``), as ANALYZE stores them
STATISTICS_PREFIX = "spark.sql.statistics."
COLUMN_STATISTICS = STATISTICS_PREFIX + "colStats."
#: Spark's defaults of ``spark.redaction.regex`` and ``spark.sql.redaction.options.regex``
_REDACT = re.compile(r"(?i)secret|password|token|access[.]?key|url")
REDACTED = "*********(redacted)"
#: DESC FORMATTED t c: the statistics rows and the ``colStats`` key each comes from
_COLUMN_ROWS = (("min", "min"), ("max", "max"), ("num_nulls", "nullCount"), ("distinct_count", "distinctCount"),
                ("avg_col_len", "avgLen"), ("max_col_len", "maxLen"), ("histogram", "histogram"))


def describe(ms: Any, r: dict[str, Any]) -> dict[str, Any]:
    """The ``describe`` op: ``what`` is ``table`` (with ``partition``: that partition's values),
    ``column`` (``column``: its name) or ``json`` (``DESCRIBE … AS JSON``, with ``partition`` too). Answers ``rows``, each ``[name, value, comment]``
    (``[name, value]`` for a column)."""
    if r.get("what") == "json":
        return describe_json(ms, r)
    if r.get("what") == "view":
        ctx = SparkCtx.of(r)
        mode = shown_schema_mode(r.get("schema_mode"), r.get("schema_binding"))
        return {"rows": view_rows(ctx, ms.get_view(table_name(ctx, r)), str(r.get("spark_version") or ""), mode)}
    if r.get("what") == "show_extended":
        return show_extended(ms, r)
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = reader_info(ms, ms.get_table(name))
    if r.get("what") == "column":
        return {"rows": column_rows(reader_properties(ms, info), str(r.get("column")))}
    schema = info.schema.json_value()
    rows: list[list[Any]] = list(partitioning_rows(schema, list(info.partition_columns)))
    extended = r.get("extended", True)
    if r.get("partition") is not None:
        return {"rows": rows + (partition_rows(ctx, info, ms.get_partition(name, r["partition"])) if extended else [])}
    rows += table_rows(ctx, info, str(r.get("spark_version") or "")) if extended else []
    return {"rows": rows + default_rows(schema)}


def shown_schema_mode(mode: str | None, binding: Any) -> str | None:
    """The View Schema Mode the session catalog shows for a view stored with ``mode``."""
    if str(binding if binding is not None else "true").lower() == "false":
        return None  # spark.sql.legacy.viewSchemaBindingMode=false: Spark shows no mode
    if mode == "UNSUPPORTED":
        return "BINDING"  # a view created while binding was disabled binds its schema
    return mode


def show_extended(ms: Any, r: dict[str, Any]) -> dict[str, Any]:
    """``SHOW TABLE EXTENDED [IN db] LIKE pattern [PARTITION (…)]``: each table's and view's ``information``
    as the session catalog prints it (its DESC EXTENDED details as ``key: value`` lines, then Partition
    Columns; the shim adds ``Schema: <tree>``), or, with ``partition``, that partition's details."""
    ctx = SparkCtx.of(r)
    version = str(r.get("spark_version") or "")
    if r.get("partition") is not None:
        name = table_name(ctx, r)
        info = reader_info(ms, ms.get_table(name))
        by_lower = {c.lower(): c for c in info.partition_columns}
        p = ms.get_partition(name, {by_lower.get(k.lower(), k): v for k, v in r["partition"].items()})
        rows = partition_rows(ctx, info, p)
        rows = rows[:next((i for i, x in enumerate(rows) if x[0] == "# Storage Information"), len(rows))]
        lines = [x for x in _lines(rows) if x[0] not in ("Database", "Table")]
        return {"information": _text(lines)}
    from .tables import database_of

    db = (ctx.catalog, database_of(r["namespace"]))
    matches = _pattern(str(r.get("pattern") or "*"))
    out: list[dict[str, str]] = []
    for t in ms.list_tables(db):
        if getattr(t, "kind", "TABLE") != "TABLE" or not matches(t.name):
            continue
        info = reader_info(ms, ms.get_table((*db, t.name)))
        lines = _lines(table_rows(ctx, info, version))
        if info.partition_columns:
            lines.append(("Partition Columns", _names(list(info.partition_columns))))
        out.append({"name": t.name, "information": _text(lines), "schema": info.schema.json()})
    for v in ms.list_views(db):
        if not matches(v.name):
            continue
        view = ms.get_view((*db, v.name))
        mode = shown_schema_mode(view.properties.get("view.schemaMode"), r.get("schema_binding"))
        out.append({"name": v.name, "information": _text(_lines(view_rows(ctx, view, version, mode))),
                    "schema": view.schema.json()})
    return {"relations": out}


def _pattern(pattern: str) -> Any:
    """Spark's ``filterPattern``: ``|`` separates alternatives, ``*`` matches anything, case-insensitive."""
    alternatives = [re.compile(p.strip().replace("*", ".*"), re.IGNORECASE) for p in pattern.strip().split("|")]
    return lambda name: any(a.fullmatch(name) for a in alternatives)


def _lines(rows: list[list[str]]) -> list[tuple[str, str]]:
    """A detailed section's ``key: value`` rows (its title and blank rows left out)."""
    return [(row[0], row[1]) for row in rows if row[0] and not row[0].startswith("#")]


def _text(lines: list[tuple[str, str]]) -> str:
    return "".join(f"{k}: {v}\n" for k, v in lines)
def reader_info(ms: Any, info: Any) -> Any:
    """``info`` with the properties the caller may see (``catalog.row_policies.as_reader_sees``)."""
    return as_reader_sees(ms, info)


def reader_properties(ms: Any, info: Any) -> dict[str, str]:
    """The table's properties as the caller may see them: no statistics of a column masked for it, none
    computed over rows its row filter hides (docs/governance.md)."""
    return dict(as_reader_sees(ms, info).properties)


def partitioning_rows(schema: dict[str, Any], partition_by: list[str]) -> list[list[str | None]]:
    """``# Partition Information``: each partition column with its type and comment."""
    if not partition_by:
        return []
    fields = {f["name"]: f for f in schema.get("fields", [])}
    out: list[list[str | None]] = [["# Partition Information", "", ""], ["# col_name", "data_type", "comment"]]
    for c in partition_by:
        f = fields.get(c, {"type": "string"})
        meta = f.get("metadata") or {}
        declared = meta.get(_CHAR_VARCHAR)
        out.append([c, declared.lower() if isinstance(declared, str) else _simple(f["type"]), meta.get("comment")])
    return out


def default_rows(schema: dict[str, Any]) -> list[list[str]]:
    """The ``# Column Default Values`` section Spark adds for columns with a DEFAULT."""
    out = []
    for f in schema.get("fields", []):
        meta = f.get("metadata") or {}
        if meta.get("CURRENT_DEFAULT") is not None:
            declared = meta.get(_CHAR_VARCHAR)
            shown = declared.lower() if isinstance(declared, str) else _simple(f["type"])
            out.append([f["name"], shown, str(meta["CURRENT_DEFAULT"])])
    return [["", "", ""], ["# Column Default Values", "", ""], *out] if out else []


def _simple(t: Any) -> str:
    """Spark's ``simpleString`` of a nested type of the schema JSON."""
    if isinstance(t, str):
        return _SIMPLE.get(t, t) if t != "timestamp" else t
    kind = t.get("type")
    if kind == "array":
        return f"array<{_simple(t['elementType'])}>"
    if kind == "map":
        return f"map<{_simple(t['keyType'])},{_simple(t['valueType'])}>"
    return "struct<" + ",".join(f"{f['name']}:{_simple(f['type'])}" for f in t.get("fields", [])) + ">"


def spark_time(t: dt.datetime | None) -> str:
    """A time as Spark's DESCRIBE prints one (``java.util.Date#toString``, in UTC)."""
    if t is None:
        return "UNKNOWN"
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%a %b %d %H:%M:%S UTC %Y")


def redact(key: str, value: str) -> str:
    return REDACTED if _REDACT.search(key) or _REDACT.search(value) else value


def _listing(pairs: dict[str, str], sort: bool = True) -> str:
    items = sorted(pairs.items()) if sort else list(pairs.items())
    return "[" + ", ".join(f"{k}={redact(k, v)}" for k, v in items) + "]"


def options(info: Any) -> dict[str, str]:
    """The table's ``OPTIONS`` (kept as ``option.<key>`` properties)."""
    return {k[len(OPTION_PREFIX):]: v for k, v in info.properties.items() if k.startswith(OPTION_PREFIX)}


def table_properties(info: Any) -> dict[str, str]:
    """The properties Spark's session catalog lists as Table Properties: not the options (nor their
    un-prefixed copies Spark also passes), not statistics, not the catalog's write counters."""
    opts = options(info)
    hidden = set(STATS_PROPERTIES.values())
    # Spark's plain copies of the options are there unless the session extension told them apart at create
    # time (then an option without its plain copy shows it, and a plain key equal to an option is a property)
    copied = all(k in info.properties for k in opts)
    return {k: v for k, v in info.properties.items()
            if not k.startswith(OPTION_PREFIX) and not k.startswith(STATISTICS_PREFIX) and k not in hidden
            and not (copied and k in opts and opts[k] == v)}


def statistics(props: dict[str, str]) -> str | None:
    """Spark's ``Statistics`` row (``<bytes> bytes[, <rows> rows]``) once the table was analyzed."""
    size = props.get(STATISTICS_PREFIX + "totalSize")
    rows = props.get(STATISTICS_PREFIX + "numRows")
    if size is None and rows is None:
        return None
    text = f"{size or 0} bytes"
    return text + (f", {rows} rows" if rows is not None else "")


class _Detail:
    """The rows of a DESCRIBE detailed section: ``[key, value, ""]``, a key without a value left out."""

    def __init__(self, title: str) -> None:
        self.rows: list[list[str]] = [["", "", ""], [title, "", ""]]

    def row(self, key: str, value: str | None) -> None:
        if value is not None:
            self.rows.append([key, value, ""])

    def object_rows(self, ctx: SparkCtx, obj: Any, spark_version: str) -> None:
        """What a table's and a view's sections begin with: where it is, who made it and when."""
        self.row("Catalog", ctx.spark_catalog)
        self.row("Database", obj.database)
        self.row("Table", obj.name)
        self.row("Owner", obj.owner or None)
        self.row("Created Time", spark_time(obj.created_at))
        self.row("Last Access", "UNKNOWN")
        self.row("Created By", f"Spark {spark_version}" if spark_version else None)


def table_rows(ctx: SparkCtx, info: Any, spark_version: str) -> list[list[str]]:
    detail = _Detail("# Detailed Table Information")
    detail.object_rows(ctx, info, spark_version)
    row = detail.row
    row("Type", "EXTERNAL" if info.external else "MANAGED")
    row("Provider", info.format)
    bucketing = getattr(info, "bucketing", None)  # CLUSTERED BY … INTO n BUCKETS, where the catalog has it
    if bucketing is not None:
        row("Num Buckets", str(bucketing.num_buckets))
        row("Bucket Columns", _names(bucketing.columns))
        row("Sort Columns", _names(bucketing.sort_columns) if bucketing.sort_columns else None)
    row("Comment", info.comment)
    row("Row Filter", _policy(getattr(info, "row_filter", None)))  # docs/governance.md: row filters and masks
    masks = [f"{m.column}: {_policy(m)}" for m in getattr(info, "column_masks", ())]
    row("Column Masks", "; ".join(masks) if masks else None)
    props = table_properties(info)
    row("Table Properties", _listing(props) if props else None)
    row("Statistics", statistics(info.properties))
    row("Location", location_of(ctx, info))
    opts = options(info)
    row("Storage Properties", _listing(opts) if opts else None)
    row("Partition Provider", "Catalog" if info.partition_columns else None)
    return detail.rows


def _policy(p: Any) -> str | None:
    """A row filter or column mask as DESCRIBE shows it: its expression and exempt principal."""
    if p is None:
        return None
    return p.expression + (f" (exempt: {p.exempt})" if p.exempt else "")


def view_rows(ctx: SparkCtx, view: Any, spark_version: str, schema_mode: str | None) -> list[list[str]]:
    detail = _Detail("# Detailed Table Information")
    detail.object_rows(ctx, view, spark_version)
    row = detail.row
    row("Type", "VIEW")
    row("Comment", view.comment)
    row("View Text", view.sql)
    row("View Original Text", view.sql)
    row("View Schema Mode", schema_mode)
    if view.current_catalog:
        row("View Catalog and Namespace", ".".join([view.current_catalog, *view.current_namespace]))
    columns = list(view.query_column_names) or [f.name for f in view.schema.fields]  # EVOLUTION: its columns
    row("View Query Output Columns", _names(columns))
    props = {k: v for k, v in view.properties.items() if not k.startswith("view.") and k not in RESERVED}
    row("Table Properties", _listing(props) if props else None)
    return detail.rows


def _names(columns: list[str]) -> str:
    return "[" + ", ".join("`" + c.replace("`", "``") + "`" for c in columns) + "]"


def partition_rows(ctx: SparkCtx, info: Any, p: Any) -> list[list[str]]:
    detail = _Detail("# Detailed Partition Information")
    rows, row = detail.rows, detail.row
    row("Database", info.database)
    row("Table", info.name)
    spec = p.spec or {k: str(v) for k, v in p.values.items()}
    row("Partition Values", "[" + ", ".join(f"{k}={v}" for k, v in spec.items()) + "]")
    row("Location", p.location)
    opts = options(info)
    row("Storage Properties", _listing(opts) if opts else None)
    params = {k: v for k, v in p.properties.items() if k != "location" and not k.startswith(STATISTICS_PREFIX)}
    # the partition's files as a Hive metastore counts them after a write
    if p.files is not None:
        params[STATS_PROPERTIES["files"]] = str(p.files)
    if p.bytes is not None:
        params[STATS_PROPERTIES["bytes"]] = str(p.bytes)
    row("Partition Parameters", _listing(params, sort=False) if params else None)
    row("Created Time", spark_time(p.created_at))
    row("Last Access", "UNKNOWN")
    analyzed = info.properties.get(STATISTICS_PREFIX + "numRows") is not None \
        or p.properties.get(STATISTICS_PREFIX + "numRows") is not None
    if p.bytes is not None or (analyzed and p.rows is not None):
        row("Partition Statistics", f"{p.bytes or 0} bytes" + (f", {p.rows} rows" if analyzed and p.rows is not None
                                                               else ""))
    rows += [["", "", ""], ["# Storage Information", "", ""]]
    bucketing = getattr(info, "bucketing", None)
    if bucketing is not None:
        row("Num Buckets", str(bucketing.num_buckets))
        row("Bucket Columns", _names(bucketing.columns))
        row("Sort Columns", _names(bucketing.sort_columns) if bucketing.sort_columns else None)
    row("Location", location_of(ctx, info))
    row("Storage Properties", _listing(opts) if opts else None)
    return rows


def column_rows(props: dict[str, str], column: str) -> list[list[str]]:
    """Spark prints ``NULL`` for a statistic it does not have."""
    prefix = f"{COLUMN_STATISTICS}{column}."
    return [[row, props.get(prefix + key, "NULL")] for row, key in _COLUMN_ROWS]


# ---- DESCRIBE … AS JSON ------------------------------------------------------------------------------
_SIMPLE = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "timestamp": "timestamp_ltz"}
_CHAR_VARCHAR = "__CHAR_VARCHAR_TYPE_STRING"


def json_type(t: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A type of Spark's schema JSON as ``DESCRIBE … AS JSON`` shows it."""
    declared = (metadata or {}).get(_CHAR_VARCHAR)
    if isinstance(declared, str):
        m = re.fullmatch(r"(char|varchar)\((\d+)\)", declared.strip().lower())
        if m:
            return {"name": m.group(1), "length": int(m.group(2))}
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "array":
            return {"name": "array", "element_type": json_type(t["elementType"]),
                    "element_nullable": bool(t.get("containsNull", True))}
        if kind == "map":
            return {"name": "map", "key_type": json_type(t["keyType"]), "value_type": json_type(t["valueType"]),
                    "value_nullable": bool(t.get("valueContainsNull", True))}
        if kind == "struct":
            return {"name": "struct", "fields": [json_field(f) for f in t.get("fields", [])]}
        return {"name": str(kind)}
    text = str(t)
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", text)
    if m:
        return {"name": "decimal", "precision": int(m.group(1)), "scale": int(m.group(2))}
    if text == "string" or text.startswith("string collate "):
        collation = text[len("string collate "):] if text.startswith("string collate ") else "UTF8_BINARY"
        return {"name": "string", "collation": collation}
    return {"name": _SIMPLE.get(text, text)}


def json_field(f: dict[str, Any]) -> dict[str, Any]:
    meta = f.get("metadata") or {}
    out: dict[str, Any] = {"name": f["name"], "type": json_type(f["type"], meta), "nullable": bool(f.get("nullable", True))}
    if meta.get("comment") is not None:
        out["comment"] = meta["comment"]
    if meta.get("CURRENT_DEFAULT") is not None:
        out["default"] = meta["CURRENT_DEFAULT"]
    return out


def _iso(t: dt.datetime | None) -> str:
    if t is None:
        return "UNKNOWN"
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def describe_json(ms: Any, r: dict[str, Any]) -> dict[str, Any]:
    """``DESCRIBE EXTENDED t [PARTITION (…)] AS JSON``: the one JSON document, keys in Spark's order."""
    import json

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = reader_info(ms, ms.get_table(name))
    schema = info.schema.json_value()
    doc: dict[str, Any] = {"table_name": info.name, "catalog_name": ctx.spark_catalog, "namespace": [info.database],
                           "schema_name": info.database, "columns": [json_field(f) for f in schema["fields"]]}
    opts = {k: redact(k, v) for k, v in sorted(options(info).items())}
    bucketing = getattr(info, "bucketing", None)
    buckets = {} if bucketing is None else {"num_buckets": bucketing.num_buckets,
                                            "bucket_columns": list(bucketing.columns),
                                            "sort_columns": list(bucketing.sort_columns)}
    if r.get("partition") is None:
        doc.update(buckets)  # a table's bucket spec follows its columns; a partition's, its provider
    if r.get("partition") is not None:
        by_lower = {c.lower(): c for c in info.partition_columns}
        p = ms.get_partition(name, {by_lower.get(k.lower(), k): v for k, v in r["partition"].items()})
        doc["partition_values"] = p.spec or {k: str(v) for k, v in p.values.items()}
        if p.location:
            doc["location"] = p.location
        if opts:
            doc["storage_properties"] = opts
        params = {k: v for k, v in p.properties.items() if k != "location" and not k.startswith(STATISTICS_PREFIX)}
        if params:
            doc["partition_parameters"] = params
        doc["created_time"] = _iso(p.created_at)
        doc["last_access"] = "UNKNOWN"
    else:
        doc["location"] = location_of(ctx, info)
        if opts:
            doc["storage_properties"] = opts
    if info.owner:
        doc["owner"] = info.owner
    if r.get("partition") is None:
        doc["created_time"] = _iso(info.created_at)
        doc["last_access"] = "UNKNOWN"
    if r.get("spark_version"):
        doc["created_by"] = f"Spark {r['spark_version']}"
    doc["type"] = "EXTERNAL" if info.external else "MANAGED"
    doc["provider"] = info.format
    if r.get("partition") is not None:
        doc.update(buckets)
    if info.comment is not None:
        doc["comment"] = info.comment
    props = table_properties(info)
    if props:
        doc["table_properties"] = {k: redact(k, v) for k, v in sorted(props.items())}
    if info.partition_columns:
        doc["partition_provider"] = "Catalog"
        doc["partition_columns"] = list(info.partition_columns)
    doc["collation"] = "UTF8_BINARY"
    return {"rows": [[json.dumps(doc, separators=(",", ":"), ensure_ascii=False)]]}
