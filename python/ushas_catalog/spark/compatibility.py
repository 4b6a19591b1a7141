"""Where ``ushas`` behaves differently from Spark's session catalog, on purpose or because Spark
allows it only for its own catalog: one table, :data:`DIFFERENCES`, from which the table of
``docs/spark-compatibility.md`` is generated (``python -m ushas_catalog.spark.compatibility``
rewrites it; ``tests/spark/test_conformance.py`` fails when the two disagree), and which
``bench/spark_conformance.py`` uses to tell documented differences from the others.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Difference:
    """One documented difference. ``statement``: a regular expression (case-insensitive) the SQL
    matches; ``error``: the error class ``ushas`` answers with (Spark's own, for a V2 catalog),
    ``""`` when ``ushas`` does not fail; ``why``: ``v2`` (Spark refuses it for every V2 catalog),
    ``improvement`` (a deliberate difference) or ``gap`` (not the same yet); ``instead``: what ``ushas``
    offers instead."""

    feature: str
    statement: str
    error: str
    why: str
    spark: str
    instead: str

    def matches(self, statement: str, ushas_error: str | None) -> bool:
        if not re.search(self.statement, statement, re.IGNORECASE | re.DOTALL):
            return False
        return self.error == "*" or (ushas_error or "") == self.error


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "ANALYZE TABLE … COMPUTE STATISTICS [FOR COLUMNS …] without the session extension, ANALYZE TABLES IN db",
        r"^\s*ANALYZE\s+TABLES?\b", "NOT_SUPPORTED_COMMAND_FOR_V2_TABLE", "v2",
        "computes table, partition and column statistics",
        "the statement itself with `spark.sql.extensions=io.ushas.spark.UshasExtensions` (what `configure()` sets; "
        "NOSCAN counts the rows too), or `CALL ushas.system.analyze_table(table => 'db.t')` (optional `partition`, "
        "`columns`): table, partition and column statistics under Spark's own keys; `DESC EXTENDED` (Statistics, "
        "Partition Statistics), `DESC FORMATTED t col` and the optimizer use them"),
    Difference(
        "MSCK REPAIR TABLE / ALTER TABLE … RECOVER PARTITIONS without the session extension",
        r"^\s*(MSCK\s+REPAIR|ALTER\s+TABLE\s+\S+\s+RECOVER\s+PARTITIONS)", "NOT_SUPPORTED_COMMAND_FOR_V2_TABLE",
        "v2", "adds (and with SYNC drops) the partitions found under the table's location",
        "`CALL ushas.system.repair_table(table => 'db.t')`, `ushas repair ushas.db.t`, or the statement itself with "
        "`spark.sql.extensions=io.ushas.spark.UshasExtensions` (what `configure()` sets)"),
    Difference(
        "SHOW TABLES / SHOW VIEWS / SHOW TABLE EXTENDED with `ushas` current, without the session extension",
        r"^\s*SHOW\s+(TABLES|VIEWS|TABLE\s+EXTENDED)\b", "", "v2",
        "also lists the session's temporary views; SHOW TABLE EXTENDED lists views too, with DESC EXTENDED's details",
        "with `spark.sql.extensions=io.ushas.spark.UshasExtensions` (what `configure()` sets) the same rows; "
        "without it the catalog's own tables and views, as Spark lists them for every V2 catalog"),
    Difference(
        "`global_temp` under `ushas`", r"\bglobal_temp\b", "SCHEMA_NOT_FOUND", "v2",
        "`global_temp` is the session catalog's schema of global temporary views",
        "name them through the session catalog: `SHOW VIEWS IN spark_catalog.global_temp`, "
        "`SELECT * FROM spark_catalog.global_temp.v`"),
    Difference(
        "ALTER TABLE … SET SERDE 'class', ALTER TABLE … PARTITION (…) SET SERDEPROPERTIES; SET SERDEPROPERTIES "
        "without the session extension", r"^\s*ALTER\s+TABLE\s+.*\bSET\s+SERDE",
        "NOT_SUPPORTED_COMMAND_FOR_V2_TABLE", "v2", "sets Hive serde properties",
        "Ushas tables are Spark data source tables: with the session extension `ALTER TABLE t SET SERDEPROPERTIES "
        "(k = v)` sets the table's storage properties (its `OPTIONS`), as the session catalog does for its data "
        "source tables; `OPTIONS (…)` at CREATE TABLE"),
    Difference(
        "ALTER TABLE … PARTITION (…) SET LOCATION", r"^\s*ALTER\s+TABLE\s+\S+\s+PARTITION\s*\(.*SET\s+LOCATION",
        "_LEGACY_ERROR_TEMP_1045", "v2", "moves one partition",
        "`ALTER TABLE … DROP PARTITION (…)` then `ALTER TABLE … ADD PARTITION (…) LOCATION '…'` (metadata "
        "only: the data stays where it is)"),
    Difference(
        "ALTER TABLE … ALTER COLUMN … TYPE that widens the type (INT to BIGINT, FLOAT to DOUBLE)",
        r"^\s*ALTER\s+TABLE\s+\S+\s+(CHANGE|ALTER)\s+(COLUMN\s+)?\S+\s+TYPE", "", "improvement",
        "refuses every type change (`NOT_SUPPORTED_CHANGE_COLUMN`)",
        "does it, a new schema version in the table's history; a "
        "type change that could lose data is refused with Spark's `NOT_SUPPORTED_CHANGE_COLUMN`. RENAME COLUMN and "
        "CHANGE COLUMN … FIRST / AFTER are refused as the session catalog does (`UNSUPPORTED_FEATURE.TABLE_OPERATION`): "
        "data files keep each column's name, and CSV files their order"),
    Difference(
        "column order of a table made by CTAS / REPLACE … AS SELECT PARTITIONED BY columns that are not last",
        r"(?!)", "", "gap",
        "moves the partition columns to the end of the schema (DESC, SELECT *, SHOW CREATE TABLE)",
        "keeps the query's column order (CREATE TABLE without a query moves them to the end, as the session "
        "catalog)"),
    Difference(
        "a key set with the same value in both OPTIONS and TBLPROPERTIES, without the session extension or when "
        "every option is also a table property", r"(?!)", "", "v2",
        "lists it under Table Properties and Storage Properties",
        "Spark hands a V2 catalog the options also as plain properties; the session extension tells the catalog "
        "which keys the statement gave in TBLPROPERTIES, so it keeps those and drops the copies. Without it (or "
        "when no option is left to show the copies went) the key is shown once, under Storage Properties"),
    Difference(
        "ANALYZE TABLE … PARTITION (…) of a partition without data files", r"(?!)", "", "gap",
        "records 0 bytes for it (`Partition Parameters` numFiles=0, totalSize=0; `Partition Statistics` 0 bytes)",
        "leaves such a partition as it was (no statistics): it has no rows to count"),
    Difference(
        "Files a write into a partitioned table makes", r"(?!)", "", "improvement",
        "one file per task and partition (a 5,000-partition INSERT read by 200 tasks: up to a million files; "
        "`numFiles` in Partition Parameters counts them)",
        "clusters the rows by partition first, as Iceberg does by default: one file per partition and write "
        "(`TBLPROPERTIES ('write.distribution-mode' = 'none')` writes as Spark does); the comparison of "
        "`numFiles` is left out"),
    Difference(
        "Statistics after CTAS on a Hive metastore", r"(?!)", "", "improvement",
        "shows the byte and row counts Hive computed while writing (`Statistics`)",
        "shows Statistics once `analyze_table` computed them; the files and bytes each write registered are in "
        "`ushas partitions ushas.db.t` and the partitions' Partition Parameters"),
    Difference(
        "managed tables' files under `spark.sql.warehouse.dir`", r"\$\{spark\.sql\.warehouse\.dir\}",
        "PATH_NOT_FOUND", "improvement", "puts managed table `db.t` under `<spark.sql.warehouse.dir>/db.db/t`",
        "puts it under the catalog's warehouse (`spark.sql.catalog.ushas.warehouse`, default "
        "`<spark.sql.warehouse.dir>/ushas`): `DESC EXTENDED db.t` shows the location"),
    Difference(
        "a BINARY partition column written by CTAS / INSERT", r"(?!)", "USHAS_InvalidArgument", "gap",
        "writes the value's bytes as text into the partition directory name",
        "refuses it: the catalog keys BINARY partition values by their hex form; use a STRING partition column"),
    Difference(
        "DROP VIEW of a missing temporary data source view, SHOW TBLPROPERTIES v ('missing') of a view",
        r"^\s*(DROP\s+VIEW|SHOW\s+TBLPROPERTIES)\b", "*", "v2",
        "`TABLE_OR_VIEW_NOT_FOUND`; \"Table … does not have property\"",
        "Spark's V2 wording: `VIEW_NOT_FOUND`; \"View … does not have property\""),
    Difference(
        "EXPLAIN of a DESCRIBE", r"^\s*EXPLAIN\b.*\bDESC(RIBE)?\b", "", "v2",
        "plans Spark's V1 commands (`DescribeTableCommand`)",
        "the same rows, planned as a local relation (`LocalTableScan`) by the session extension"),
    Difference(
        "SQL on files with an empty path (`parquet.``…`` with nothing between the backquotes)",
        r"^\s*SELECT\b.*\b\w+\.``", "INVALID_EMPTY_LOCATION", "improvement",
        "on a Hive metastore: `_LEGACY_ERROR_TEMP_3065` (Hive's \"empty table creation??\")",
        "Spark's own `INVALID_EMPTY_LOCATION`, as with Spark's in-memory session catalog"),
)


def documented(statement: str, spark_error: str | None, ushas_error: str | None) -> Difference | None:
    """The documented difference ``statement`` (answered with ``ushas_error``) falls under, if any."""
    for d in DIFFERENCES:
        if d.matches(statement, ushas_error):
            return d
    return None


BEGIN = "<!-- BEGIN generated by python -m ushas_catalog.spark.compatibility -->"
END = "<!-- END generated -->"
_WHY = {"v2": "Spark's V2 limitation", "improvement": "deliberate", "gap": "not the same yet"}


def table_markdown() -> str:
    """The generated part of ``docs/spark-compatibility.md``."""
    lines = [BEGIN, "", "| statement | ushas answers | why | Spark's session catalog | what ushas offers instead |",
             "| --- | --- | --- | --- | --- |"]
    for d in DIFFERENCES:
        answer = f"`{d.error}`" if d.error not in ("", "*") else "a result"
        lines.append(f"| {d.feature} | {answer} | {_WHY[d.why]} | {d.spark} | {d.instead} |")
    return "\n".join([*lines, "", END])


def render(doc: str) -> str:
    """``doc`` with its generated part replaced by :func:`table_markdown`."""
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    return doc[:start] + table_markdown() + doc[end:]


def main(argv: list[str] | None = None) -> int:
    path = Path(argv[0] if argv else "docs/spark-compatibility.md")
    path.write_text(render(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
