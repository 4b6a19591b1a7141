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
import json
import shutil
import sys
import tempfile
import time
import urllib.request
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


class Profile:
    """With ``--profile``: the Spark jobs each statement ran (from the UI's REST API: name, tasks, seconds)
    and the rest of its time (the driver: planning, file listing, the catalog's commit)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"

    def run(self, group: str, sql: str) -> float:
        self.spark.sparkContext.setJobGroup(group, group)
        took = timed(lambda: self.spark.sql(sql))
        self.spark.sparkContext.setJobGroup("other", "other")
        return took

    def report(self, group: str, wall: float) -> str:
        with urllib.request.urlopen(f"{self.url}/jobs", timeout=30) as answer:
            jobs = [j for j in json.load(answer) if j.get("jobGroup") == group]
        parts, busy = [], 0.0
        for j in sorted(jobs, key=lambda j: j["jobId"]):
            s = (_when(j.get("completionTime")) - _when(j["submissionTime"]))
            busy += s
            stages = []
            for sid in sorted(j["stageIds"]):
                with urllib.request.urlopen(f"{self.url}/stages/{sid}", timeout=30) as answer:
                    for st in json.load(answer):
                        if st.get("status") == "COMPLETE":
                            stages.append(f"{st['numTasks']}t {st.get('executorRunTime', 0) / 1000:.1f}cpu-s "
                                          f"{_frame(st.get('details', ''))}")
            parts.append(f"job {s:.2f} s [{', '.join(stages)}]")
        return f"    {group}: {wall:.2f} s = jobs {busy:.2f} ({'; '.join(parts) or '-'}) + driver {wall - busy:.2f}"


def _frame(details: str) -> str:
    """The first frame of a stage's call site that is Spark SQL's or ours (what ran it)."""
    for line in details.splitlines():
        if "io.ushas" in line or "sql.execution" in line or "sql.classic" in line:
            return line.strip().split("(")[0].rsplit(".", 2)[-2]
    return "?"


def _when(stamp: str | None) -> float:
    from datetime import datetime

    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() if stamp else 0.0


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
    ap.add_argument("--profile", action="store_true",
                    help="print each statement's Spark jobs (tasks, seconds) and its driver time")
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    parts = args.partitions
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-rowlevel-"))
    conf = {"spark.sql.sources.partitionOverwriteMode": "dynamic"}
    if args.profile:
        conf.update({"spark.ui.enabled": "true", "spark.ui.port": "0"})
    spark = ushas_session("ushas-bench-row-level", root, conf=conf)
    profile = Profile(spark) if args.profile else None
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
        files = sum(1 for f in (root / "warehouse").rglob("*") if f.is_file() and not f.name.startswith((".", "_")))
        print(f"row-level statements vs INSERT OVERWRITE by hand: {rows:,} rows, {parts} partitions, parquet, "
              f"local[2], Spark {spark.version}, {files // 2} files per table")
        print(f"{'change':<28} {'row-level s':>12} {'by hand s':>10} {'ratio':>7}")
        for i, (name, statement, by_hand) in enumerate(changes(parts, rows)):
            runs = [("a", statement), ("b", by_hand)]
            if i % 2:
                runs.reverse()
            if profile is None:
                took = {t: timed(lambda sql=sql, t=t: spark.sql(sql.format(t=f"ushas.bench.{t}"))) for t, sql in runs}
            else:
                took = {t: profile.run(f"{i}{t}", sql.format(t=f"ushas.bench.{t}")) for t, sql in runs}
            same = spark.sql("SELECT * FROM ushas.bench.a EXCEPT ALL SELECT * FROM ushas.bench.b").count() == 0 and \
                spark.sql("SELECT * FROM ushas.bench.b EXCEPT ALL SELECT * FROM ushas.bench.a").count() == 0
            print(f"{name:<28} {took['a']:>12.2f} {took['b']:>10.2f} {took['a'] / took['b']:>6.2f}x"
                  + ("" if same else "  RESULTS DIFFER"), flush=True)
            if profile is not None:
                for t in ("a", "b"):
                    print(profile.report(f"{i}{t}", took[t]), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
