"""Without Spark: what a stream does when its table's schema changes while it runs
(:mod:`ushas_catalog.spark.stream_schema`): a sink's micro-batch fits the table after columns were added
and is refused after a column was dropped or retyped, naming the table, the version and the change; a
source stops on any change."""
from __future__ import annotations

from typing import Any

import pytest

from ushas_catalog.changes.streams import StreamBatch
from ushas_catalog.errors import InvalidArgument, WriteConflict
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, DeleteColumn, RenameColumn, UpdateColumnType
from ushas_catalog.spark.stream_schema import check_batch_schema, check_read_schema, schema_changes

T = "main.sales.s"
NAME = ("main", "sales", "s")
BATCH = StreamBatch("q-1", 7)


@pytest.fixture
def started(sales: Metastore) -> tuple[Metastore, str]:
    """The table, and its schema (Spark's JSON) as a stream started with it."""
    sales.create_table(T, "v BIGINT, n INT, name VARCHAR(10), dt STRING", partition_by=["dt"], location="/wh/s")
    return sales, sales.get_table(T).schema.json()


@pytest.mark.parametrize("change, refused", [
    (AddColumn(("extra",), parse_type("int")), None),
    (AddColumn(("must",), parse_type("int"), nullable=False), "column must added NOT NULL"),
    (DeleteColumn(("name",)), "column name dropped"),
    (RenameColumn(("name",), "label"), "column name dropped"),
    (UpdateColumnType(("n",), parse_type("bigint")), "column n retyped from INT to BIGINT"),
], ids=["added", "added not null", "dropped", "renamed", "retyped"])
def test_a_sinks_batch_after_a_schema_change(started: Any, change: Any, refused: str | None) -> None:
    ms, schema = started
    ms.alter_table(T, [change])
    info = ms.get_table(T)
    if refused is None:
        check_batch_schema(ms, NAME, info, BATCH, schema)  # the batch's files lack the new column: NULL
    else:
        with pytest.raises(WriteConflict, match=rf"table main\.sales\.s changed its schema at version {info.version} "
                                                rf"\(ALTER TABLE\).*{refused}.*Micro-batch 7 .*not committed"):
            check_batch_schema(ms, NAME, info, BATCH, schema)
    # a source started before the change stops, whatever the change; one started after it reads on
    with pytest.raises(InvalidArgument, match=rf"main\.sales\.s changed its schema at version {info.version}.*restart"):
        check_read_schema(ms, NAME, info, schema)
    check_read_schema(ms, NAME, info, info.schema.json())


def test_unchanged_schemas_and_char_types_compare_equal(started: Any) -> None:
    ms, schema = started
    info = ms.get_table(T)
    check_batch_schema(ms, NAME, info, BATCH, schema)
    check_read_schema(ms, NAME, info, schema)
    as_spark_writes = schema.replace('"varchar(10)"', '"string"')  # Spark's write schema: a string column
    assert schema_changes(info.schema, ms.get_table(T).schema) == []
    check_batch_schema(ms, NAME, info, BATCH, as_spark_writes)
    with pytest.raises(InvalidArgument, match="not a schema"):
        check_read_schema(ms, NAME, info, "{nope")
