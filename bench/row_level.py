"""DELETE / UPDATE / MERGE INTO against the same change done by hand, in one run.

    python bench/row_level.py [--quick] [--rows N] [--partitions P]

Two identical partitioned parquet tables (filled by 5 appends: several files per partition) of the ``ushas`` catalog (N rows, default 1,000,000; 100,000
with --quick; P partitions ``dt``, default 20): on ``a`` each change is the row-level statement
(docs/row-level.md), on ``b`` the same change written by hand the way it is done without them: an
``INSERT OVERWRITE`` (dynamic partition overwrite) of the affected partitions with their new rows
computed by a query. The changes, in order, each timed once on both tables (alternating which goes
first), results checked equal:

- MERGE of 1% of the rows (updates of existing ids and as many new ids) into the two newest partitions
  (``ON t.id = s.id AND t.dt IN (…)``, the usual upsert of a late batch);
- DELETE of one whole partition (metadata-only here; by hand: ALTER TABLE DROP PARTITION, since an
  INSERT OVERWRITE of a partition with no rows leaves its rows in place here: see docs/benchmarks.md);
- DELETE of 10 ids, each in another partition (a GDPR request; by hand: INSERT OVERWRITE of the
  partitions holding them);
- DELETE of scattered rows (``id % 100 = 7``, every partition);
- UPDATE of 1% of the rows (``id % 100 = 3``, every partition).

Prints the seconds and the ratio row-level / by hand (goal <= 1x). The issue asks for 10 million rows;
the default is 1 million on the shared 2-core development machine (pass --rows 10000000 to run it).
Iceberg / Delta are not compared: no Iceberg build runs on Spark 4.3 (docs/row-level.md).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)


#: the appends that fill each table (each partition gets a file per append at least)
APPENDS = 5


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def changes(partitions: int, rows: int) -> list[tuple[str, str, str]]:
    """(name, row-level statement on {t}, the same change by hand on {t}); ``src``: the MERGE's rows."""
    last = [f"d{p:03d}" for p in (partitions - 2, partitions - 1)]
    inlist = ", ".join(f"'{d}'" for d in last)
    gdpr = ", ".join(str(rows * k // 10 + 11) for k in range(10))  # one id in each of 10 partitions
    return [
        ("MERGE 1% into 2 partitions",
         f"MERGE INTO {{t}} t USING src s ON t.id = s.id AND t.dt IN ({inlist}) "
         f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
         f"INSERT OVERWRITE {{t}} SELECT id, v, dt FROM (SELECT t.* FROM {{t}} t LEFT ANTI JOIN src s ON t.id = s.id "
         f"WHERE t.dt IN ({inlist}) UNION ALL SELECT * FROM src)"),
        ("DELETE one partition",
         "DELETE FROM {t} WHERE dt = 'd000'",
         "ALTER TABLE {t} DROP PARTITION (dt = 'd000')"),
        ("DELETE 10 ids (GDPR)",
         f"DELETE FROM {{t}} WHERE id IN ({gdpr})",
         f"INSERT OVERWRITE {{t}} SELECT id, v, dt FROM {{t}} "
         f"WHERE dt IN (SELECT DISTINCT dt FROM {{t}} WHERE id IN ({gdpr})) AND id NOT IN ({gdpr})"),
        ("DELETE scattered rows",
         "DELETE FROM {t} WHERE id % 100 = 7",
         "INSERT OVERWRITE {t} SELECT id, v, dt FROM {t} WHERE NOT (id % 100 = 7)"),
        ("UPDATE 1%",
         "UPDATE {t} SET v = v + 1 WHERE id % 100 = 3",
         "INSERT OVERWRITE {t} SELECT id, CASE WHEN id % 100 = 3 THEN v + 1 ELSE v END, dt FROM {t}"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--partitions", type=int, default=20)
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    parts = args.partitions
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-rowlevel-"))
    spark = ushas_session("ushas-bench-row-level", root,
                          conf={"spark.sql.sources.partitionOverwriteMode": "dynamic"})
    try:
        spark.sql("CREATE NAMESPACE ushas.bench")
        data = spark.range(rows).selectExpr("CAST(id AS INT) AS id", "CAST(id * 7 % 1000 AS BIGINT) AS v",
                                            f"format_string('d%03d', CAST(id * {parts} / {rows} AS INT)) AS dt")
        for t in ("a", "b"):
            spark.sql(f"CREATE TABLE ushas.bench.{t} (id INT, v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
            for k in range(APPENDS):  # several appends: every partition has several files, as tables do
                data.where(f"id % {APPENDS} = {k}").writeTo(f"ushas.bench.{t}").append()
        # the MERGE's source: 1% of the rows, half existing ids of the two newest partitions, half new ids
        n = max(rows // 100, 2)
        first = rows - rows * 2 // parts
        spark.range(n).selectExpr(
            f"CAST(CASE WHEN id % 2 = 0 THEN {first} + id ELSE {rows} + id END AS INT) AS id",
            "CAST(-1 AS BIGINT) AS v",
            f"CASE WHEN id % 2 = 0 THEN format_string('d%03d', CAST(({first} + id) * {parts} / {rows} AS INT)) "
            f"ELSE 'd{parts - 1:03d}' END AS dt").cache().createOrReplaceTempView("src")
        spark.table("src").count()
        print(f"row-level statements vs INSERT OVERWRITE by hand: {rows:,} rows, {parts} partitions, parquet, "
              f"local[2], Spark {spark.version}")
        print(f"{'change':<28} {'row-level s':>12} {'by hand s':>10} {'ratio':>7}")
        for i, (name, statement, by_hand) in enumerate(changes(parts, rows)):
            runs = [("a", statement), ("b", by_hand)]
            if i % 2:
                runs.reverse()
            took = {t: timed(lambda sql=sql, t=t: spark.sql(sql.format(t=f"ushas.bench.{t}"))) for t, sql in runs}
            same = spark.sql("SELECT * FROM ushas.bench.a EXCEPT ALL SELECT * FROM ushas.bench.b").count() == 0 and \
                spark.sql("SELECT * FROM ushas.bench.b EXCEPT ALL SELECT * FROM ushas.bench.a").count() == 0
            print(f"{name:<28} {took['a']:>12.2f} {took['b']:>10.2f} {took['a'] / took['b']:>6.2f}x"
                  + ("" if same else "  RESULTS DIFFER"))
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
