"""Spark's own DDL and catalog SQL tests under the session catalog and under ``ushas``, compared.

    python bench/spark_conformance.py SPARK [--files a.sql,b.sql] [--show N] [--json out.json]

(SPARK defaults to ``$USHAS_SPARK_SQL_TESTS``; without either the benchmark says so and is skipped.)

SPARK is where Spark's sql-tests ``inputs/`` files are: a Spark source checkout
(``sql/core/src/test/resources/sql-tests/inputs`` under it), that ``inputs`` directory itself, or
Spark's ``spark-sql`` test jar, which carries the same files, e.g.::

    mvn dependency:copy -Dartifact=org.apache.spark:spark-sql_2.13:4.1.0:jar:tests -DoutputDirectory=/tmp/spark
    python bench/spark_conformance.py /tmp/spark/spark-sql_2.13-4.1.0-tests.jar

(or ``git clone --depth 1 https://github.com/apache/spark`` and pass the checkout). The files are read
from there, never copied into this repository.

Each file (the DDL / catalog ones, :data:`FILES`) is split into statements the way Spark's
``SQLQueryTestSuite`` splits it (``--`` comment lines dropped, ``;`` ends a statement, ``--SET`` lines
applied as settings) and runs twice in one local Spark application with Hive support: once with the
session catalog current, once with ``spark.sql.defaultCatalog=ushas``, each time in a fresh session and
a fresh database of the same name. Each statement's result (rows, normalised for the catalog's name,
locations, times and sizes) or error class is compared (``ushas_catalog.spark.conformance``). Prints the
share of statements with the same outcome, the differences by kind and, for each difference, whether
``docs/spark-compatibility.md`` documents it (``ushas_catalog.spark.compatibility``).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: Spark's sql-tests ``inputs`` files about DDL and catalog commands
FILES = (
    "describe.sql", "describe-part-after-analyze.sql", "describe-query.sql",
    "describe-table-after-alter-table.sql", "show-create-table.sql", "show-tables.sql",
    "show-tblproperties.sql", "show-views.sql", "show_columns.sql", "change-column.sql", "charvarchar.sql",
    "view-conf.sql", "view-schema-binding-config.sql", "view-schema-binding.sql",
    "view-schema-compensation.sql", "view-schema-evolution.sql", "view-schema-type-evolution.sql",
    "view-with-default-collation.sql", "sql-on-files.sql", "columnresolution-views.sql", "cte-command.sql",
    "postgreSQL/create_view.sql",
)
_INPUTS = "sql-tests/inputs"


def read_inputs(source: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The text of each file ``names`` from a checkout, an ``inputs`` directory or the test jar."""
    if source.is_file():
        with zipfile.ZipFile(source) as z:
            return {n: z.read(f"{_INPUTS}/{n}").decode() for n in names}
    for base in (source / "sql/core/src/test/resources" / _INPUTS, source / _INPUTS, source):
        if (base / names[0]).is_file():
            return {n: (base / n).read_text() for n in names}
    raise SystemExit(f"no Spark sql-tests inputs under {source} (see --help)")


def split(text: str) -> tuple[list[str], dict[str, str]]:
    """Statements and ``--SET`` settings of one input file, as Spark's ``SQLQueryTestSuite`` reads it."""
    lines = text.split("\n")
    comments = [x.strip() for x in lines if x.strip().startswith("--") and not x.strip().startswith("--QUERY-DELIMITER")]
    code = [x for x in lines if not (x.strip().startswith("--") and not x.strip().startswith("--QUERY-DELIMITER"))]
    settings: dict[str, str] = {}
    for c in comments:
        if c.startswith("--SET "):
            for pair in c[6:].split(","):
                if "=" in pair:
                    key, value = pair.split("=", 1)
                    settings[key.strip()] = value.strip()
    statements: list[str] = []
    if any(x.strip().startswith("--QUERY-DELIMITER") for x in code):
        current: list[str] | None = None
        plain: list[str] = []
        for x in code:
            if x.strip().startswith("--QUERY-DELIMITER-START"):
                statements.extend(re.split(r"(?<=[^\\]);", "\n".join(plain)))
                plain, current = [], []
            elif x.strip().startswith("--QUERY-DELIMITER-END"):
                statements.append("\n".join(current or []))
                current = None
            elif current is not None:
                current.append(x)
            else:
                plain.append(x)
        statements.extend(re.split(r"(?<=[^\\]);", "\n".join(plain)))
    else:
        statements = re.split(r"(?<=[^\\]);", "\n".join(code))
    return [s.strip() for s in statements if s.strip()], settings


def command(statement: str) -> str:
    """The statement's command, for grouping: its first keywords (``DESC EXTENDED``, ``SHOW CREATE``)."""
    words = re.findall(r"[A-Za-z_]+", statement.split("(")[0])[:3]
    head = [w.upper() for w in words]
    if not head:
        return "?"
    if head[0] in ("DESC", "DESCRIBE"):
        return "DESCRIBE " + (head[1] if len(head) > 1 and head[1] in ("EXTENDED", "FORMATTED", "QUERY", "FUNCTION") else "")
    if head[0] in ("SHOW", "CREATE", "ALTER", "DROP") and len(head) > 1:
        if head[1] in ("OR", "TEMPORARY", "TEMP", "GLOBAL") and len(head) > 2:
            return f"{head[0]} {head[1]} {head[2]}"
        return f"{head[0]} {head[1]}"
    return head[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spark", type=Path, nargs="?", default=os.environ.get("USHAS_SPARK_SQL_TESTS"),
                        help="Spark checkout, its sql-tests inputs directory or the spark-sql test jar "
                             "(default: $USHAS_SPARK_SQL_TESTS)")
    parser.add_argument("--files", help="comma-separated input files (default: the DDL / catalog ones)")
    parser.add_argument("--show", type=int, default=0, help="print up to N differences in full")
    parser.add_argument("--json", type=Path, help="write every comparison to this file")
    args = parser.parse_args(argv)
    if args.spark is None:  # bench/run runs every benchmark without arguments
        print("skipped: no Spark sql-tests inputs given (a Spark checkout or the spark-sql test jar, or "
              "$USHAS_SPARK_SQL_TESTS; see docs/spark-compatibility.md)")
        return 0
    args.spark = Path(args.spark)

    from _spark import ushas_session

    from ushas_catalog.spark.compatibility import documented
    from ushas_catalog.spark.conformance import compare

    names = tuple(args.files.split(",")) if args.files else FILES
    texts = read_inputs(args.spark, names)
    root = Path(tempfile.mkdtemp(prefix="ushas-conformance-"))
    spark: Any = ushas_session("ushas-conformance", root, hive=True)
    started = time.perf_counter()
    results = []
    for name in names:
        statements, settings = split(texts[name])
        database = "conf_" + re.sub(r"\W", "_", Path(name).stem.lower())
        file_results = compare(spark, statements, database, confs=settings)
        same = sum(r.same for r in file_results)
        print(f"{name:45s} {same:4d} / {len(file_results):4d}", flush=True)
        results.extend((name, r) for r in file_results)
    spark.stop()
    total = len(results)
    same = sum(r.same for _, r in results)
    print(f"\n{same} of {total} statements give the same result or error class: {100.0 * same / max(total, 1):.1f}%"
          f"  ({time.perf_counter() - started:.0f} s)")
    kinds: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    for _, r in results:
        if not r.same:
            doc = documented(r.statement, r.spark.error, r.ushas.error)
            kinds[(r.kind, command(r.statement), r.ushas.error or r.spark.error or "",
                   doc.feature if doc else "NOT DOCUMENTED")] += 1
    print("\ndifferences by kind (count, kind, command, error class, documented as):")
    for (kind, cmd, err, doc), n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {kind:22s} {cmd:26s} {err:45s} {doc}")
    shown = 0
    for name, r in results:
        if not r.same and shown < args.show:
            shown += 1
            print(f"\n--- {name}: {r.kind}\n{r.statement}\n  spark: {r.spark.brief()}\n  ushas: {r.ushas.brief()}")
    if args.json:
        args.json.write_text(json.dumps([
            {"file": name, "statement": r.statement, "kind": r.kind, "spark": r.spark.brief(), "ushas": r.ushas.brief(),
             "spark_rows": r.spark.rows, "ushas_rows": r.ushas.rows}
            for name, r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
