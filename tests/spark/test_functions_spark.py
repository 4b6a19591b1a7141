"""Persistent functions of ``ushas`` through Spark (issue 26): the same statements give the same results or
error classes as in Spark's session catalog (table-driven), class functions load from their USING JAR in
any session, SQL functions resolve to their body, and what Spark 4.3 refuses for every V2 catalog is named."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from pyspark.errors import PySparkException

pytestmark = pytest.mark.spark

UPPER = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"
#: statements run against ``spark_catalog.<db>`` and ``ushas.<db>`` ({ns}) in this order
STATEMENTS = [
    "CREATE FUNCTION {ns}.plus(x INT) RETURNS INT COMMENT 'adds one' RETURN x + 1",
    f"CREATE FUNCTION {{ns}}.up AS '{UPPER}'",
    "CREATE FUNCTION {ns}.area(w DOUBLE, h DOUBLE) RETURNS DOUBLE RETURN w * h",
    "SELECT {ns}.plus(1), {ns}.up('a'), {ns}.area(2, 3.5), {ns}.plus(NULL)",
    "SELECT {ns}.plus(id) AS p FROM range(3) ORDER BY p",
    "SELECT {ns}.plus('a')",
    "SELECT {ns}.plus(1, 2)",
    "SELECT {ns}.nope(1)",
    "CREATE FUNCTION {ns}.plus(x INT) RETURNS INT RETURN x + 1",
    "CREATE FUNCTION IF NOT EXISTS {ns}.plus(x INT) RETURNS INT RETURN x + 5",
    "SELECT {ns}.plus(1)",
    "CREATE FUNCTION {ns}.bad(x INT) RETURNS INT RETURN y + 1",
    "DESCRIBE FUNCTION {ns}.plus",
    "DESCRIBE FUNCTION EXTENDED {ns}.plus",
    "DESCRIBE FUNCTION {ns}.up",
    "DESCRIBE FUNCTION EXTENDED {ns}.up",
    "DESCRIBE FUNCTION {ns}.nope",
    "SHOW USER FUNCTIONS IN {ns}",
    "SHOW FUNCTIONS IN {ns} LIKE 'pl*|ar*'",
    "CREATE OR REPLACE FUNCTION {ns}.plus(x INT) RETURNS INT RETURN x + 2",
    "SELECT {ns}.plus(1)",
    "DROP FUNCTION {ns}.nope",
    "DROP FUNCTION IF EXISTS {ns}.nope",
    "DROP FUNCTION {ns}.plus",
    "SELECT {ns}.plus(1)",
    "SHOW USER FUNCTIONS IN {ns}",
    "CREATE FUNCTION {ns}.tf(x INT) RETURNS TABLE (y INT, z STRING) RETURN SELECT x, 'a' UNION ALL SELECT x + 1, 'b'",
    "DESCRIBE FUNCTION {ns}.tf",
    "CREATE FUNCTION {ns}.tc(x INT COMMENT 'px', `long name` DOUBLE) RETURNS TABLE (y INT COMMENT 'c', `z w` STRING) "
    "RETURN SELECT x, 'a'",
    "DESCRIBE FUNCTION {ns}.tc",
    "DESCRIBE FUNCTION EXTENDED {ns}.tc",
    "DESCRIBE FUNCTION EXTENDED {ns}.area",
    "SELECT * FROM {ns}.tf(3) ORDER BY y",
    "SELECT t.y FROM {ns}.tf(3) AS t WHERE z = 'b'",
    "SELECT v.a, f.y FROM VALUES (5) AS v(a), LATERAL {ns}.tf(v.a) AS f ORDER BY f.y",
    "SELECT * FROM {ns}.tf('q')",
    "SELECT * FROM {ns}.tf(1, 2)",
    "SELECT * FROM {ns}.nope(1)",
    "CREATE FUNCTION {ns}.tn() RETURNS TABLE (n BIGINT) RETURN SELECT id FROM range(2)",
    "SELECT * FROM {ns}.tn() ORDER BY n",
]


def _normal(text: str) -> str:
    return re.sub(r"\b(spark_catalog|ushas)\.t_[0-9a-f]{8}\.", "<ns>.", text)


def _outcome(spark: Any, sql: str) -> Any:
    try:
        rows = spark.sql(sql).collect()
    except PySparkException as e:
        return ("error", e.getCondition())
    out = []
    for r in rows:
        values = tuple(_normal(v) if isinstance(v, str) else v for v in r)
        # DESCRIBE FUNCTION EXTENDED: Spark lists the session's SQL configs it captured and the create time
        if values and isinstance(values[0], str) and re.match(r"(Configs:|Create Time:|\s+spark\.)", values[0]):
            continue
        out.append(values)
    if sql.lstrip().upper().startswith("SHOW"):
        # a sorted listing of qualified and temporary names: the catalog's own name moves the qualified
        # ones in the sort ("spark_catalog.d.f" < "tmp" < "ushas.d.f"), so compare the listed names
        out.sort()
    return ("rows", out)


@pytest.fixture
def both(spark: Any, db: str) -> Iterator[dict[str, str]]:
    spark.sql(f"CREATE DATABASE spark_catalog.{db}")
    yield {"spark_catalog": f"spark_catalog.{db}", "ushas": f"ushas.{db}"}
    spark.sql(f"DROP DATABASE IF EXISTS spark_catalog.{db} CASCADE")


def test_function_statements_behave_as_in_the_session_catalog(spark: Any, both: dict[str, str]) -> None:
    """Every statement against the session catalog (Hive metastore, embedded Derby) and against ``ushas``,
    in one session: same rows (names normalized) or same error class. A temporary function of the
    session is a user function of every namespace in SHOW USER FUNCTIONS, in both."""
    spark.sql("CREATE OR REPLACE TEMPORARY FUNCTION up_tmp(x STRING) RETURNS STRING RETURN upper(x)")
    try:
        expected = [_outcome(spark, s.format(ns=both["spark_catalog"])) for s in STATEMENTS]
        got = [_outcome(spark, s.format(ns=both["ushas"])) for s in STATEMENTS]
    finally:
        spark.sql("DROP TEMPORARY FUNCTION IF EXISTS up_tmp")
    assert any(kind == "rows" and ("up_tmp",) in rows for kind, rows in expected)
    assert [(s, g) for s, g, e in zip(STATEMENTS, got, expected) if g != e] == []
    assert expected[3] == ("rows", [(2, "A", 7.0, None)])  # the comparison compares something


def test_current_catalog_and_namespace_resolve_unqualified_names(spark: Any, db: str) -> None:
    spark.sql(f"USE ushas.{db}")
    try:
        spark.sql("CREATE FUNCTION twice(x INT) RETURNS INT RETURN x * 2")
        assert spark.sql("SELECT twice(21), abs(-1)").collect()[0] == (42, 1)
        listed = [r[0] for r in spark.sql("SHOW USER FUNCTIONS").collect()]
        # the session's temporary functions (other tests') are listed too, unqualified, as in the session catalog
        assert [n for n in listed if "." in n] == [f"ushas.{db}.twice"]
        assert spark.sql("DESCRIBE FUNCTION abs").collect()[0][0] == "Function: abs"  # builtins stay Spark's
        spark.sql("DROP FUNCTION twice")
    finally:
        spark.sql("USE spark_catalog.default")


@pytest.fixture(scope="module")
def udf_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A jar with a Hive UDF class that is on no class path: ``ushastest.Shout``."""
    import pyspark

    root = tmp_path_factory.mktemp("udfjar")
    src = root / "ushastest" / "Shout.java"
    src.parent.mkdir()
    src.write_text("package ushastest;\npublic class Shout extends org.apache.hadoop.hive.ql.exec.UDF {\n"
                   "  public String evaluate(String s) { return s == null ? null : s.toUpperCase() + \"!\"; }\n}\n")
    jars = Path(pyspark.__file__).parent / "jars"
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(root / "classes"), str(src)], check=True, timeout=120)
    jar = root / "shout.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(root / "classes"), "."], check=True, timeout=60)
    return jar


def test_a_class_function_loads_from_its_jar_in_any_session(spark: Any, db: str, udf_jar: Path, ms: Any) -> None:
    spark.sql(f"CREATE FUNCTION ushas.{db}.shout AS 'ushastest.Shout' USING JAR '{udf_jar}'")
    other = spark.newSession()  # a new session: its own catalog instance, nothing of the first
    assert other.sql(f"SELECT ushas.{db}.shout('hi')").collect()[0][0] == "HI!"
    assert spark.sql(f"SELECT ushas.{db}.shout(name) FROM VALUES ('a') AS v(name)").collect()[0][0] == "A!"
    f = ms.get_function(("ushas", db, "shout"))
    assert (f.kind, f.class_name, f.resources) == ("CLASS", "ushastest.Shout", [("jar", str(udf_jar))])


def test_a_spark_function_class_is_used_as_it_is(spark: Any, db: str) -> None:
    """A class implementing Spark's UnboundFunction (here from the test jar on the class path)."""
    spark.sql(f"CREATE FUNCTION ushas.{db}.plus_ten AS 'io.ushas.spark.PlusTen'")
    assert spark.sql(f"SELECT ushas.{db}.plus_ten(5)").collect()[0][0] == 15
    spark.sql(f"CREATE FUNCTION ushas.{db}.missing AS 'no.such.Klass'")
    with pytest.raises(PySparkException) as e:
        spark.sql(f"SELECT ushas.{db}.missing(5)").collect()
    assert e.value.getCondition() == "CANNOT_LOAD_FUNCTION_CLASS"


def test_functions_written_elsewhere_resolve(spark: Any, db: str, ms: Any) -> None:
    """A function created through the store (another process: the CLI, the API) resolves at once."""
    from ushas_catalog.model.functions import FunctionDefinition

    ms.create_function(("ushas", db, "cube"), FunctionDefinition(parameters="x BIGINT", return_type="BIGINT",
                                                                 body="x * x * x"))
    assert spark.sql(f"SELECT ushas.{db}.cube(3)").collect()[0][0] == 27
    ms.drop_function(("ushas", db, "cube"))
    with pytest.raises(PySparkException) as e:
        spark.sql(f"SELECT ushas.{db}.cube(3)").collect()
    assert e.value.getCondition() == "UNRESOLVED_ROUTINE"
    ms.undrop_function(("ushas", db, "cube"))
    assert spark.sql(f"SELECT ushas.{db}.cube(2)").collect()[0][0] == 8
    namespace = spark.sparkContext._gateway.new_array(spark._jvm.String, 1)
    namespace[0] = db
    assert [x.name() for x in spark._jsparkSession.sessionState().catalogManager().catalog("ushas")
            .listFunctions(namespace)] == ["cube"]


@pytest.mark.slow
def test_another_process_resolves_them(spark: Any, db: str, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    """~30 s: one spark-sql process (configuration only, its own bridge) is the proof that a function the
    shared session created resolves in another process, scalar and table function, and that one the
    process created is the shared session's at once."""
    from spark_processes import conf_args, run_spark, spark_bin

    spark.sql(f"CREATE FUNCTION ushas.{db}.plus(x INT) RETURNS INT RETURN x + 1")
    spark.sql(f"CREATE FUNCTION ushas.{db}.tf(x INT) RETURNS TABLE (y INT) RETURN SELECT x * 2")
    sql = (f"SELECT ushas.{db}.plus(41); SELECT * FROM ushas.{db}.tf(21); "
           f"CREATE FUNCTION ushas.{db}.made_there(s STRING) RETURNS STRING RETURN upper(s);")
    r = run_spark([spark_bin("spark-sql"), *conf_args(spark_dirs["store"], spark_dirs["warehouse"]), "-e", sql],
                  tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["42", "42"]
    assert spark.sql(f"SELECT ushas.{db}.made_there('x')").collect()[0][0] == "X"
