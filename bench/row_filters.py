"""Row filters and column masks: a filtered / masked read against the plain read of the same rows, in one run.

    python bench/row_filters.py [--quick] [--rows N] [--rounds R]

One table of N rows (10,000,000 by default, 1,000,000 with --quick): ``id BIGINT, region STRING,
ssn STRING, v DOUBLE`` (a quarter of the rows in region 'EU'), with the row filter ``region = 'EU'`` and
the mask ``concat('***-', substr(ssn, -4, 4))`` on ``ssn``; the filter exempts ``role:exempt``, the mask
``role:exempt`` and ``role:unmasked``. Three catalog instances of one local[2] session on the same store:
``ushas`` (user admin, in ``exempt``: the plain read), ``fil`` (user fil, in ``unmasked``: the filter only)
and ``bob`` (the filter and the mask). Each round reads every column of every row to a noop sink
(``write.format("noop")``, the whole read and the mask evaluated, nothing collected), the reads in a
rotating order:

- ``filter only``: ``SELECT * FROM fil.db.t``;
- ``plain, same rows``: ``SELECT * FROM ushas.db.t WHERE region = 'EU'`` (the same rows, raw values);
- ``filter + mask``: ``SELECT * FROM bob.db.t`` (the catalog applies the filter and the mask);
- ``filter + mask by hand``: the exempt user writing the same filter and mask in the query.

Prints medians and the ratios (goal: <= 1.05x for what the catalog adds: filter only / plain, filter +
mask / by hand; filter + mask / plain also counts what the mask expression itself costs).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

FILTER = "region = 'EU'"
MASK = "concat('***-', substr(ssn, -4, 4))"


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--rounds", type=int)
    args = ap.parse_args()
    n = args.rows or (1_000_000 if args.quick else 10_000_000)
    rounds = args.rounds or (5 if args.quick else 7)
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-rowfilters-"))
    try:
        uri = f"sqlite:///{root / 'ushas.db'}"
        from ushas_catalog.metastore import Metastore

        ms = Metastore.open(uri, project="default")
        ms.ensure_catalog("ushas")
        for role, user in (("exempt", "admin"), ("unmasked", "fil")):
            ms.create_role(role)
            ms.grant_role(role, f"user:{user}")
        ms.grant_role("unmasked", "role:exempt")
        conf = {"spark.sql.catalog.ushas.user": "admin"}
        for user in ("bob", "fil"):
            conf.update({f"spark.sql.catalog.{user}": "io.ushas.spark.UshasCatalog",
                         f"spark.sql.catalog.{user}.uri": uri, f"spark.sql.catalog.{user}.catalog": "ushas",
                         f"spark.sql.catalog.{user}.user": user,
                         f"spark.sql.catalog.{user}.warehouse": str(root / "warehouse")})
        spark = ushas_session("ushas-bench-row-filters", root, conf=conf)
        try:
            spark.sql("CREATE NAMESPACE ushas.db")
            spark.sql("CREATE TABLE ushas.db.t (id BIGINT, region STRING, ssn STRING, v DOUBLE) USING parquet")
            spark.range(n).selectExpr(
                "id", "element_at(array('EU', 'US', 'APAC', 'LATAM'), CAST(id % 4 AS INT) + 1) AS region",
                "format_string('%03d-%02d-%04d', id % 1000, id % 100, id % 10000) AS ssn", "rand(7) AS v") \
                .writeTo("ushas.db.t").append()
            spark.sql(f"CALL ushas.system.set_row_filter('db.t', \"{FILTER}\", 'role:exempt')").collect()
            spark.sql(f"CALL ushas.system.set_column_mask('db.t', 'ssn', \"{MASK}\", 'role:unmasked')").collect()
            queries = {
                "filter only": "SELECT * FROM fil.db.t",
                "plain, same rows": f"SELECT * FROM ushas.db.t WHERE {FILTER}",
                "filter + mask": "SELECT * FROM bob.db.t",
                "filter + mask by hand": f"SELECT id, region, {MASK} AS ssn, v FROM ushas.db.t WHERE {FILTER}",
            }
            counts = {k: spark.sql(q).count() for k, q in queries.items()}
            assert len(set(counts.values())) == 1, counts  # the same rows
            sink: Callable[[str], Callable[[], Any]] = \
                lambda q: lambda: spark.sql(q).write.format("noop").mode("overwrite").save()  # noqa: E731
            samples: dict[str, list[float]] = {k: [] for k in queries}
            names = list(queries)
            for r in range(rounds + 1):  # the first round warms up
                for k in names[r % len(names):] + names[:r % len(names)]:
                    t = timed(sink(queries[k]))
                    if r:
                        samples[k].append(t)
            med = {k: statistics.median(v) for k, v in samples.items()}
        finally:
            spark.stop()
        ms.close()
        plain = med["plain, same rows"]
        print(f"row filter, column mask: {n:,} rows, {counts['plain, same rows']:,} read, medians of {rounds} rounds")
        print("| read | ms | / plain |\n| --- | --- | --- |")
        for k, v in med.items():
            print(f"| {k} | {v * 1000:.0f} | {v / plain:.2f}x |")
        print(f"filter only / plain: {med['filter only'] / plain:.2f}x; "
              f"filter + mask / by hand: {med['filter + mask'] / med['filter + mask by hand']:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
