"""The ``ushas`` catalog against Spark's session catalog, statement by statement, in the one test session:
this project's own DDL and catalog statements (the kinds Spark's sql-tests ``inputs`` cover: CREATE /
ALTER / DROP, SHOW, DESCRIBE, SHOW CREATE TABLE, SQL on files, refusals) run once with each catalog as the
current one (``ushas_catalog.spark.conformance.compare``); every outcome, result rows or error class, must
be the same, and every documented difference must still be what ``docs/spark-compatibility.md`` says.
``bench/spark_conformance.py`` runs Spark's own files the same way."""
from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.spark.compatibility import DIFFERENCES, documented, render
from ushas_catalog.spark.conformance import compare

DOC = Path(__file__).resolve().parents[2] / "docs" / "spark-compatibility.md"

#: statements whose outcome must be the same under both catalogs, in order (one database)
SAME = """
CREATE TABLE plain (id INT, name STRING) USING parquet
CREATE TABLE parts (id INT, v STRING, dt STRING, h INT) USING parquet PARTITIONED BY (dt, h)
  COMMENT 'partitioned' TBLPROPERTIES ('owner.team' = 'data', 'k' = 'v')
CREATE TABLE opts (a INT, b STRING) USING csv OPTIONS (header 'true', sep ';')
CREATE TABLE both_opts (a INT) USING parquet OPTIONS (k1 '1', secret 's') TBLPROPERTIES (t 'x', secret 's')
DESC EXTENDED both_opts
SHOW TBLPROPERTIES both_opts
DESCRIBE EXTENDED both_opts AS JSON
CREATE TABLE defaults (a INT DEFAULT 42, b STRING DEFAULT 'x') USING parquet
CREATE TABLE first_part (p INT, a STRING, b INT) USING parquet PARTITIONED BY (p)
DESC first_part
SHOW CREATE TABLE first_part
CREATE TABLE plain (x INT) USING parquet
CREATE TABLE IF NOT EXISTS plain (x INT) USING parquet
INSERT INTO plain VALUES (1, 'a'), (2, 'b')
INSERT INTO parts PARTITION (dt = '2024-01-01', h = 1) VALUES (1, 'x')
ALTER TABLE parts ADD PARTITION (dt = '2024-01-02', h = 2)
ALTER TABLE parts ADD PARTITION (dt = '2024-01-02', h = 2)
ALTER TABLE parts ADD IF NOT EXISTS PARTITION (dt = '2024-01-02', h = 2)
ALTER TABLE parts DROP PARTITION (dt = '2024-01-09', h = 9)
SHOW PARTITIONS parts
SHOW PARTITIONS parts PARTITION (dt = '2024-01-02')
ALTER TABLE parts SET TBLPROPERTIES ('k' = 'v2', 'k2' = 'v')
ALTER TABLE parts UNSET TBLPROPERTIES ('k2')
SHOW TBLPROPERTIES parts
SHOW TBLPROPERTIES parts ('k')
SHOW TABLES
SHOW TABLES LIKE 'p*'
CREATE TEMPORARY VIEW ptemp AS SELECT 1 AS x
SHOW TABLES
SHOW TABLES LIKE 'p*'
SHOW VIEWS
SHOW TABLE EXTENDED LIKE 'p*'
SHOW TABLE EXTENDED LIKE 'parts' PARTITION (dt = '2024-01-02', h = 2)
SHOW COLUMNS IN parts
DESC plain
DESC EXTENDED plain
DESC FORMATTED parts
DESC EXTENDED parts PARTITION (dt = '2024-01-02', h = 2)
ANALYZE TABLE parts PARTITION (dt = '2024-01-01', h = 1) COMPUTE STATISTICS
DESC EXTENDED parts PARTITION (dt = '2024-01-01', h = 1)
INSERT INTO parts PARTITION (dt = '2024-01-03', h = 3) VALUES (3, 'z'), (4, 'w')
ANALYZE TABLE parts PARTITION (dt, h) COMPUTE STATISTICS
DESC EXTENDED parts PARTITION (dt = '2024-01-03', h = 3)
DESC FORMATTED plain id
DESC defaults
SHOW CREATE TABLE plain
SHOW CREATE TABLE parts
SHOW CREATE TABLE opts
ALTER TABLE opts SET SERDEPROPERTIES ('timestampFormat' = 'yyyy-MM-dd HH:mm')
DESC FORMATTED opts
SELECT * FROM plain
ALTER TABLE plain ADD COLUMNS (extra DOUBLE COMMENT 'added')
ALTER TABLE plain ALTER COLUMN name COMMENT 'the name'
DESC plain
ALTER TABLE plain ALTER COLUMN id TYPE STRING
ALTER TABLE plain RENAME COLUMN name TO label
ALTER TABLE plain CHANGE name FIRST
ALTER TABLE plain CHANGE extra AFTER id
DESC plain
ALTER TABLE missing SET TBLPROPERTIES ('k' = 'v')
DESC missing
DESC no_such_db.plain
SHOW TABLES IN no_such_db
USE no_such_db
DROP TABLE missing
DROP TABLE IF EXISTS missing
CREATE VIEW v AS SELECT id, name FROM plain
CREATE VIEW v AS SELECT id FROM plain
SELECT * FROM v
SHOW VIEWS
SHOW TABLE EXTENDED LIKE 'v'
CREATE VIEW Upper_V AS SELECT id FROM plain
SHOW CREATE TABLE UPPER_v
DROP VIEW upper_v
DROP VIEW v
TRUNCATE TABLE plain
SELECT count(*) FROM plain
ALTER TABLE plain RENAME TO plain2
SHOW TABLES
DROP TABLE plain2
DROP TABLE parts
"""

#: one documented difference per entry: the statement (after SAME's tables exist) and the class it names
DOCUMENTED = (
    "ALTER TABLE t ALTER COLUMN a TYPE BIGINT",
    "ALTER TABLE t SET SERDE 'org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe'",
)


def _statements(text: str) -> list[str]:
    """One statement per line; an indented line continues the one before."""
    out: list[str] = []
    for line in text.strip("\n").split("\n"):
        if line.startswith("  ") and out:
            out[-1] += "\n" + line
        elif line.strip():
            out.append(line.strip())
    return out


def _database() -> str:
    return "conf_" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def comparisons(spark: Any) -> list[Any]:
    return compare(spark, _statements(SAME), _database())


def test_the_statements_give_the_same_outcome_under_both_catalogs(comparisons: list[Any]) -> None:
    different = [f"{c.kind}: {c.statement}\n  spark: {c.spark.error or _only(c.spark.rows, c.ushas.rows)}"
                 f"\n  ushas: {c.ushas.error or _only(c.ushas.rows, c.spark.rows)}"
                 for c in comparisons if not c.same]
    assert different == []


def _only(rows: tuple[Any, ...], other: tuple[Any, ...]) -> str:
    """The rows of one outcome that the other does not have."""
    return repr([r for r in rows if r not in other])


def test_the_comparison_sees_results_and_refusals(comparisons: list[Any]) -> None:
    """Not vacuous: the statements both succeed with rows and fail with Spark's error classes."""
    errors = {c.spark.error for c in comparisons if c.spark.error}
    assert {"TABLE_OR_VIEW_ALREADY_EXISTS", "TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND",
            "PARTITIONS_ALREADY_EXIST", "NOT_SUPPORTED_CHANGE_COLUMN", "UNSUPPORTED_FEATURE.TABLE_OPERATION"} <= errors
    listed = [c for c in comparisons if c.statement == "SHOW TABLES"]
    assert ("", "ptemp", "True") in listed[1].ushas.rows  # the session's temporary view
    analyzed = next(c for c in comparisons if c.statement.startswith("DESC EXTENDED parts PARTITION (dt = '2024-01-01'"))
    assert ("Partition Statistics", "<n> bytes, 1 rows", "") in analyzed.ushas.rows
    assert [r[0] for r in next(c for c in comparisons if c.statement == "DESC first_part").ushas.rows[:3]] == \
        ["a", "b", "p"]  # the partition column last
    extended = next(c for c in comparisons if c.statement == "SHOW TABLE EXTENDED LIKE 'v'")
    assert "Type: VIEW" in extended.ushas.rows[0][3]
    assert "upper_v" in next(c for c in comparisons if c.statement == "SHOW CREATE TABLE UPPER_v").ushas.rows[0][0]
    described = next(c for c in comparisons if c.statement == "DESC FORMATTED parts")
    keys = {row[0] for row in described.ushas.rows}
    assert {"Owner", "Created Time", "Last Access", "Created By", "Provider", "Location",
            "Partition Provider"} <= keys
    shown = next(c for c in comparisons if c.statement == "SHOW CREATE TABLE plain")
    assert "LOCATION" not in shown.ushas.rows[0][0]


def test_sql_on_files_reads_the_same_with_ushas_current(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "files"
    spark.range(3).selectExpr("id", "cast(id AS string) AS s").write.parquet(str(path))
    results = compare(spark, [f"SELECT * FROM parquet.`{path}` ORDER BY id",
                              f"SELECT count(*) FROM parquet.`{tmp_path / 'nothing'}`"], _database())
    assert [c.kind for c in results] == ["same", "same"]
    assert results[0].ushas.rows == (("0", "0"), ("1", "1"), ("2", "2"))


def test_documented_differences_are_what_the_document_says(spark: Any) -> None:
    statements = ["CREATE TABLE t (a INT, dt STRING) USING parquet PARTITIONED BY (dt)",
                  "CREATE TEMPORARY VIEW tv AS SELECT 1 AS x", *DOCUMENTED]
    results = compare(spark, statements, _database())
    assert results[0].same and results[1].same
    for c in results[2:]:
        assert not c.same, f"no longer a difference: {c.statement}"
        difference = documented(c.statement, c.spark.error, c.ushas.error)
        assert difference is not None, f"undocumented: {c.statement}: {c.ushas.brief()}"
        assert (c.ushas.error or "") == difference.error


def test_the_compatibility_document_is_generated_from_the_table() -> None:
    """docs/spark-compatibility.md cannot drift: its table is rendered from DIFFERENCES
    (regenerate with ``python -m ushas_catalog.spark.compatibility``)."""
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text
    for d in DIFFERENCES:
        assert re.search(re.escape(d.feature), text)
