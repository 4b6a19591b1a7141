"""Schema changes of a table while a stream writes into it or reads it (``ALTER TABLE`` meanwhile).

A stream fixes its schema when the query starts. What happens when the table's schema changes while it
runs, as Delta users expect it:

- **A sink** (``toTable``, ``format("ushas")``, foreachBatch's idempotent writes): each micro-batch's
  commit compares the schema its files carry with the table's schema then. Columns added to the table
  (nullable) are fine: the batch's files lack them and reads give NULL, as for any file written before an
  ``ADD COLUMNS``. A column dropped, renamed, retyped or made NOT NULL fails the batch with a
  ``WriteConflict`` naming the table, the version of the change and the change; nothing of the batch is
  committed (its files are removed), and the query stops; restarted from its checkpoint it runs that batch
  again with the table's new schema.
- **A source** (``readStream.table``): each trigger compares the schema the query reads with to the
  table's; any difference stops the query with an error naming the table, the version and the change
  (Delta's "schema changed, restart the query"). Restarted from its checkpoint, the query reads on from
  where it was, with the new schema.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidArgument, WriteConflict
from ..model.schema import StructType, parse_schema


def schema_changes(old: StructType, new: StructType) -> list[tuple[str, str]]:
    """What changed from schema ``old`` to ``new``, by column (names compared case-insensitively, as
    Spark does): ``(kind, text)`` with kind ``added`` (nullable), ``added NOT NULL``, ``dropped``,
    ``retyped`` or ``made NOT NULL``."""
    before = {f.name.lower(): f for f in old.fields}
    after = {f.name.lower(): f for f in new.fields}
    out: list[tuple[str, str]] = []
    for key, f in before.items():
        g = after.get(key)
        if g is None:
            out.append(("dropped", f"column {f.name} dropped"))
        elif _type(g) != _type(f):
            out.append(("retyped", f"column {f.name} retyped from {f.data_type.ddl()} to {g.data_type.ddl()}"))
        elif f.nullable and not g.nullable:
            out.append(("made NOT NULL", f"column {g.name} made NOT NULL"))
    for key, g in after.items():
        if key not in before:
            kind = "added" if g.nullable else "added NOT NULL"
            out.append((kind, f"column {g.name} {kind} ({g.data_type.ddl()})"))
    return out


def _type(f: Any) -> str:
    """A column's type as compared. CHAR / VARCHAR compare as STRING: Spark writes and reads them as strings
    (a write's schema may carry the mark or not), so only their length can differ unseen."""
    text = f.data_type.json_value()
    if not isinstance(text, str):
        return json.dumps(text, sort_keys=True)
    text = text.lower()
    return "string" if text.startswith(("char(", "varchar(")) else text


def _schema(text: Any, what: str) -> StructType:
    try:
        return parse_schema(json.loads(text) if isinstance(text, str) else text)
    except (ValueError, TypeError) as e:
        raise InvalidArgument(f"{what} is not a schema: {e}") from None


def _changed_at(ms: Any, name: tuple[str, str, str], info: Any) -> str:
    """The version (and operation) of the table's last schema change, as the error names it."""
    for item in ms.history(name, limit=1000):
        if "TableSchema" in (item.changed or []):
            return f"version {item.version} ({item.operation})"
    return f"a version before {info.version}"


def check_batch_schema(ms: Any, name: tuple[str, str, str], info: Any, batch: Any, data_schema: Any) -> None:
    """A micro-batch's files, written with ``data_schema``, fit the table's schema now (``info``): else
    :class:`WriteConflict` naming the table, the change and its version; nothing is committed."""
    written = _schema(data_schema, "the batch's data schema")
    changes = [(kind, text) for kind, text in schema_changes(written, info.schema) if kind != "added"]
    if not changes:
        return
    table = ".".join(name)
    raise WriteConflict(f"table {table} changed its schema at {_changed_at(ms, name, info)} while stream "
                        f"{batch.query_id} was writing into it: {'; '.join(t for _, t in changes)}. Micro-batch "
                        f"{batch.batch_id} was written with the schema the query started with and was not "
                        f"committed; restart the query (from its checkpoint) to write the table's new schema",
                        table=table)


def check_read_schema(ms: Any, name: tuple[str, str, str], info: Any, read_schema: Any) -> None:
    """A stream reading the table with ``read_schema`` (the table's when the query started) stops when
    the table's schema is another now: InvalidArgument naming the table, the change and its version."""
    if read_schema is None:
        return
    changes = schema_changes(_schema(read_schema, "the stream's schema"), info.schema)
    if not changes:
        return
    table = ".".join(name)
    raise InvalidArgument(f"table {table} changed its schema at {_changed_at(ms, name, info)} since this stream "
                          f"started reading it: {'; '.join(t for _, t in changes)}. The stream stops; restart the "
                          f"query (from its checkpoint: it reads on from where it was) to read the new schema",
                          table=table)
