"""View schema binding modes (issue 26): a view of ``ushas`` behaves as the same view of Spark's session
catalog when its base table changes, mode by mode (BINDING, COMPENSATION, TYPE EVOLUTION, EVOLUTION and the
default), and a view WITH SCHEMA [TYPE] EVOLUTION commits Spark's new schema as a new view version."""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from pyspark.errors import PySparkException

pytestmark = pytest.mark.spark

MODES = {"evolution": "WITH SCHEMA EVOLUTION", "type_evolution": "WITH SCHEMA TYPE EVOLUTION",
         "binding": "WITH SCHEMA BINDING", "compensation": "WITH SCHEMA COMPENSATION", "default": ""}
#: base-table change kind -> (the new table's columns, its row), or None: ALTER TABLE ADD COLUMNS
CHANGES: dict[str, tuple[str, str] | None] = {
    "add_column": None,
    "widen_type": ("a BIGINT, b INT", "(10, 20)"),
    "drop_column": ("a INT", "(10)"),
    "rename_column": ("a INT, z INT", "(10, 20)"),
    "incompatible_type": ("a STRING, b INT", "('x', 20)"),
    "nullable_reordered": ("b INT, a INT", "(20, 10)"),
}


def _outcome(spark: Any, sql: str) -> Any:
    try:
        return ("rows", [tuple(r) for r in spark.sql(sql).collect()])
    except PySparkException as e:
        return ("error", e.getCondition())


def _columns(spark: Any, view: str) -> list[tuple[str, str]]:
    return [(r.col_name, r.data_type) for r in spark.sql(f"DESCRIBE {view}").collect()]


@pytest.fixture
def both(spark: Any, db: str) -> Iterator[dict[str, str]]:
    """The same database name in ``spark_catalog`` and in ``ushas``."""
    spark.sql(f"CREATE DATABASE spark_catalog.{db}")
    yield {"spark_catalog": f"spark_catalog.{db}", "ushas": f"ushas.{db}"}
    spark.sql(f"DROP DATABASE IF EXISTS spark_catalog.{db} CASCADE")


def _scenario(spark: Any, ns: str, change: str, modes: dict[str, str] = MODES) -> dict[str, Any]:
    spark.sql(f"CREATE TABLE {ns}.t (a INT, b INT) USING parquet")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1, 2)")
    for mode, clause in modes.items():
        spark.sql(f"CREATE VIEW {ns}.v_{mode} {clause} AS SELECT * FROM {ns}.t")
    new = CHANGES[change]
    if new is None:
        spark.sql(f"ALTER TABLE {ns}.t ADD COLUMNS (c INT)")
    else:
        spark.sql(f"DROP TABLE {ns}.t")
        spark.sql(f"CREATE TABLE {ns}.t ({new[0]}) USING parquet")
        spark.sql(f"INSERT INTO {ns}.t VALUES {new[1]}")
    out: dict[str, Any] = {}
    for mode in modes:
        view = f"{ns}.v_{mode}"
        first = _outcome(spark, f"SELECT * FROM {view}")
        out[mode] = (first, _outcome(spark, f"SELECT * FROM {view}"), _columns(spark, view))
    return out


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_mode_behaves_as_in_the_session_catalog(spark: Any, both: dict[str, str], change: str) -> None:
    expected = _scenario(spark, both["spark_catalog"], change)
    got = _scenario(spark, both["ushas"], change)
    assert got == expected


@pytest.mark.parametrize("conf", ["spark.sql.legacy.viewSchemaBindingMode", "spark.sql.legacy.viewSchemaCompensation"])
@pytest.mark.parametrize("change", ["add_column", "widen_type", "incompatible_type"])
def test_the_default_mode_follows_spark_confs(spark: Any, both: dict[str, str], conf: str, change: str) -> None:
    """A view created without WITH SCHEMA under ``conf=false`` (no binding mode / BINDING by default)."""
    spark.conf.set(conf, "false")
    try:
        expected = _scenario(spark, both["spark_catalog"], change, {"default": ""})
        got = _scenario(spark, both["ushas"], change, {"default": ""})
    finally:
        spark.conf.unset(conf)
    assert got == expected


def test_evolution_commits_a_view_version(spark: Any, db: str, ms: Any) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.t (a INT) USING parquet")
    spark.sql(f"CREATE VIEW ushas.{db}.v WITH SCHEMA EVOLUTION AS SELECT * FROM ushas.{db}.t")
    spark.sql(f"CREATE VIEW ushas.{db}.w WITH SCHEMA TYPE EVOLUTION AS SELECT * FROM ushas.{db}.t")
    spark.sql(f"ALTER TABLE ushas.{db}.t ADD COLUMNS (b STRING)")
    spark.sql(f"SELECT * FROM ushas.{db}.v").collect()
    spark.sql(f"SELECT * FROM ushas.{db}.v").collect()  # in step: nothing more to commit
    view = ms.get_view(("ushas", db, "v"))
    assert (view.version, view.schema.names, view.query_column_names) == (2, ["a", "b"], ["a", "b"])
    assert view.properties["view.schemaMode"] == "EVOLUTION"
    assert [h.operation for h in ms.history(("ushas", db, "v"))][:2] == ["EVOLVE VIEW SCHEMA", "CREATE VIEW"]
    # TYPE EVOLUTION: the added column is not the view's; nothing to store
    spark.sql(f"SELECT * FROM ushas.{db}.w").collect()
    assert ms.get_view(("ushas", db, "w")).version == 1
    rows = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE EXTENDED ushas.{db}.v").collect()}
    assert rows["b"] == "string" and rows["View Schema Mode"] == "EVOLUTION"
    ddl = spark.sql(f"SHOW CREATE TABLE ushas.{db}.v").collect()[0][0]
    assert "WITH SCHEMA EVOLUTION" in ddl
    spark.sql(f"ALTER VIEW ushas.{db}.v WITH SCHEMA BINDING")
    assert ms.get_view(("ushas", db, "v")).properties["view.schemaMode"] == "BINDING"
    assert "WITH SCHEMA BINDING" in spark.sql(f"SHOW CREATE TABLE ushas.{db}.v").collect()[0][0]


def test_a_second_session_reads_the_evolved_view(spark: Any, db: str, ms: Any) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.t (a INT) USING parquet")
    spark.sql(f"CREATE VIEW ushas.{db}.v WITH SCHEMA EVOLUTION AS SELECT * FROM ushas.{db}.t")
    spark.sql(f"ALTER TABLE ushas.{db}.t ADD COLUMNS (b INT)")
    other = spark.newSession()
    assert other.sql(f"SELECT * FROM ushas.{db}.v").columns == ["a", "b"]
    assert spark.sql(f"SELECT * FROM ushas.{db}.v").columns == ["a", "b"]
    assert ms.get_view(("ushas", db, "v")).version == 2


def test_evolve_refused_for_a_binding_view(ms: Any, spark: Any, db: str) -> None:
    from ushas_catalog.errors import InvalidArgument

    spark.sql(f"CREATE TABLE ushas.{db}.t (a INT) USING parquet")
    spark.sql(f"CREATE VIEW ushas.{db}.v WITH SCHEMA BINDING AS SELECT * FROM ushas.{db}.t")
    with pytest.raises(InvalidArgument, match="not WITH SCHEMA EVOLUTION"):
        ms.evolve_view_schema(("ushas", db, "v"), '{"type":"struct","fields":[]}')
    assert ms.get_view(("ushas", db, "v")).version == 1


