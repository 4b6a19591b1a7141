"""Hostile names and values through Spark SQL (the shared session): table names, comments, table
properties and partition values, each stored and read back exactly or refused with a Spark error
class and a clear message, the catalog's records unchanged (lineage and usage, written by the
listener after every statement, are left out of the comparison)."""
from __future__ import annotations

from typing import Any

import pytest

from faults import hostile as H

pytestmark = pytest.mark.spark


def literal(text: str) -> str:
    """``text`` as a Spark SQL string literal (control characters as \\uXXXX escapes)."""
    out = []
    for ch in text:
        if ch in "'\\":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def ident(text: str) -> str:
    return "`" + text.replace("`", "``") + "`"


def catalog_records(ms: Any) -> list[tuple[bytes, bytes]]:
    return ms.db.run(lambda tr: [(kv.key, kv.value) for kv in tr.get_range(*ms.project_path.add("Catalog").range())])


def _refused(spark: Any, ms: Any, sql: str, outcome: H.Refused) -> None:
    before = catalog_records(ms)
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    message = str(info.value)
    assert outcome.text in message, message[:600]
    assert "Traceback" not in message and "Py4J" not in message and len(message) < 2000, message[:600]
    assert catalog_records(ms) == before


#: values whose SQL form is checked (every value: the whole table)
SPARK_VALUES = list(H.VALUES)


@pytest.mark.parametrize("vid", SPARK_VALUES)
def test_table_names(spark: Any, db: str, ms: Any, vid: str) -> None:
    value = H.VALUES[vid]
    outcome = H.expected(H.SPARK_NAME, vid)
    sql = f"CREATE TABLE ushas.{db}.{ident(value)} (id INT) USING parquet"
    if isinstance(outcome, H.Refused):
        _refused(spark, ms, sql, outcome)
        return
    spark.sql(sql)
    name = value.lower()
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect() if not r.isTemporary] == [name]
    assert ms.get_table(("ushas", db, name)).name == name
    spark.sql(f"INSERT INTO ushas.{db}.{ident(value)} VALUES (1)")
    assert spark.sql(f"SELECT id FROM ushas.{db}.{ident(value)}").collect()[0].id == 1


@pytest.mark.parametrize("vid", SPARK_VALUES)
def test_comments_properties_and_partition_values(spark: Any, db: str, ms: Any, vid: str) -> None:
    value = H.VALUES[vid]
    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    comment = H.expected(H.COMMENT, vid)
    sql = f"ALTER TABLE {t} SET TBLPROPERTIES ('comment' = {literal(value)})"
    if isinstance(comment, H.Refused):
        _refused(spark, ms, sql, comment)
    else:
        spark.sql(sql)
        assert ms.get_table(("ushas", db, "t")).comment == value
    for outcome, sql, key, stored in (
            (H.expected(H.PROPERTY_VALUE, vid), f"ALTER TABLE {t} SET TBLPROPERTIES ('k' = {literal(value)})", "k",
             value),
            (H.expected(H.PROPERTY_KEY, vid), f"ALTER TABLE {t} SET TBLPROPERTIES ({literal(value)} = 'v')", value,
             "v")):
        if isinstance(outcome, H.Refused):
            _refused(spark, ms, sql, outcome)
        else:
            spark.sql(sql)
            assert ms.get_table(("ushas", db, "t")).properties[key] == stored
            assert spark.sql(f"SHOW TBLPROPERTIES {t}").where(f"key = {literal(key)}").collect()[0].value == stored
    part = H.expected(H.PARTITION_VALUE, vid)
    sql = f"ALTER TABLE {t} ADD PARTITION (dt = {literal(value)})"
    if isinstance(part, H.Refused):
        _refused(spark, ms, sql, part)
        return
    spark.sql(sql)
    assert [p.values["dt"] for p in ms.list_partitions(("ushas", db, "t"))] == [None if part == H.NULL else value]
    if vid == "nul":  # Spark's own path escaping leaves NUL alone: its writer cannot make the directory
        return
    spark.sql(f"INSERT INTO {t} PARTITION (dt = {literal(value)}) VALUES (7)")
    rows = spark.sql(f"SELECT id, dt FROM {t}").collect()
    assert [(r.id, r.dt) for r in rows] == [(7, None if part == H.NULL else value)]
