"""Authorization: the same catalog calls with authorization on and off, in one run.

    python bench/authorization.py [--quick] [--rounds R] [--grants G] [--blocks B]

One store, one project with G grants (200 with --quick; 2,000 by default) on other tables and roles, so
the policy a check reads is not trivial. The checked caller is ``bob``, who reads the table through a
role that holds SELECT on its database (a nested lookup: user -> role -> database grant -> table).

- Spark (one local[2] session, two catalog instances on the same store and metastore catalog:
  ``ushas_off`` without authorization, ``ushas_auth`` with ``authorization=true`` and ``user=bob``):
  the catalog call itself (``TableCatalog.loadTable`` called on the JVM catalog object: the shim, its
  bridge round trip and the Python side, without Spark's analysis around it), ``spark.table(t)`` (analysis with the catalog lookup: one bridge call, one transaction),
  ``SHOW PARTITIONS t``, ``DESCRIBE TABLE t`` and ``CREATE TABLE … LOCATION`` of a path in a declared
  external location (bob holds CREATE EXTERNAL TABLE on it) with its ``DROP TABLE`` (the location check on
  CREATE: docs/governance.md, "External locations"), alternating the two catalogs every round;
- a governed path read (``spark.read.parquet(path)`` of the same directory in the declared location, bob holds
  READ FILES). The check runs in every session whose application configuration deploys a catalog with
  ``authorization=true``, whether or not the session uses it (a session cannot opt out: that is the point), so
  the two sides cannot share one SparkContext: each is its own session of the same JVM with the same
  configuration but one flag, ``spark.sql.catalog.ushas_auth.authorization`` (``true`` on, ``false`` off;
  both catalogs initialized in both), in alternating blocks (on, off, off, on, on, off: ``--blocks``) whose
  samples are pooled, so that neither side is always the fresher JVM;
- the Python API alone (no Spark, no Py4J: the cost of the check relative to the smallest call):
  ``Metastore.get_table`` and ``Metastore.list_partitions`` with ``authorization=True`` vs off.

Prints medians and the on/off ratio of each (goal: <= 1.1x for a catalog call).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # else: the tree PYTHONPATH names

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def setup(uri: str, grants: int) -> None:
    from ushas_catalog.metastore import Metastore

    ms = Metastore.open(uri, project="default")
    ms.ensure_catalog("ushas")
    ms.create_database(("ushas", "db"), if_not_exists=True)
    ms.create_database(("ushas", "other"), if_not_exists=True)
    ms.create_table(("ushas", "db", "t"), schema="a INT, p STRING", partition_by=["p"])
    ms.add_partitions(("ushas", "db", "t"), [{"p": str(i)} for i in range(20)])
    ms.create_role("readers")
    ms.create_role("analysts")
    ms.grant_role("readers", "role:analysts")
    ms.grant_role("analysts", "user:bob")
    ms.grant("SELECT", ("ushas", "db"), "role:readers")
    ms.grant("CREATE", ("ushas", "db"), "user:bob")  # CREATE TABLE … LOCATION
    ms.create_location("lake", str(Path(uri.removeprefix("sqlite:///")).parent / "external"))
    ms.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    ms.grant("READ FILES", "location:lake", "user:bob")
    ms.grant("WRITE FILES", "location:lake", "user:bob")  # the files the path read reads are written by path
    for i in range(grants // 10):  # the rest of the policy: tables of another database, 10 grants each
        ms.create_table(("ushas", "other", f"x{i}"), schema="a INT")
        for j in range(10):
            ms.grant(("SELECT", "MODIFY")[j % 2], ("ushas", "other", f"x{i}"), f"user:u{j}_{i}")
    ms.close()


def rounds_of(fns: dict[str, Callable[[], Any]], rounds: int, warmup: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(rounds + warmup):
        for k, fn in fns.items():
            t = timed(fn)
            if r >= warmup:
                samples[k].append(t)
    return {k: statistics.median(v) for k, v in samples.items()}


def path_reads(root: Path, conf: dict[str, str], files: str, rounds: int, blocks: int) -> tuple[float, float]:
    """Medians (off, on) of ``spark.read.parquet(files).schema``: ``blocks`` sessions per side, alternating (on,
    off, off, on, ...), each warmed up (10 reads) and then timed ``rounds / blocks`` times; the sides' configurations differ
    in ``spark.sql.catalog.ushas_auth.authorization`` only."""
    samples: dict[str, list[float]] = {"off": [], "on": []}
    per = max(1, -(-rounds // blocks))
    order = [("on", "off") if b % 2 == 0 else ("off", "on") for b in range(blocks)]
    for side in (s for pair in order for s in pair):
        flag = "true" if side == "on" else "false"
        spark = ushas_session(f"ushas-bench-authorization-read-{side}", root,
                              conf={**conf, "spark.sql.catalog.ushas_auth.authorization": flag})
        try:
            for c in ("ushas_off", "ushas_auth"):  # both catalogs initialized on both sides
                spark.table(f"{c}.db.t").schema
            for r in range(10 + per):  # a new session's first reads load and compile its classes
                t = timed(lambda: spark.read.parquet(files).schema)
                if r >= 10:
                    samples[side].append(t)
        finally:
            spark.stop()
    return statistics.median(samples["off"]), statistics.median(samples["on"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--grants", type=int)
    ap.add_argument("--blocks", type=int, default=6, help="sessions per side of the path read row (default 6)")
    args = ap.parse_args()
    rounds = args.rounds or (15 if args.quick else 60)
    grants = args.grants or (200 if args.quick else 2000)
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-auth-"))
    try:
        uri = f"sqlite:///{root / 'ushas.db'}"
        setup(uri, grants)
        rows: list[tuple[str, float, float]] = []

        from ushas_catalog.metastore import Metastore

        off = Metastore.open(uri, user="bob")
        on = Metastore.open(uri, user="bob", authorization=True)
        t = ("ushas", "db", "t")
        py = rounds_of({"get_table off": lambda: off.get_table(t), "get_table on": lambda: on.get_table(t),
                        "list_partitions off": lambda: list(off.list_partitions(t)),
                        "list_partitions on": lambda: list(on.list_partitions(t))}, rounds * 5, 10)
        for call in ("get_table", "list_partitions"):
            rows.append((f"Python API: Metastore.{call}", py[f"{call} off"], py[f"{call} on"]))

        conf: dict[str, str] = {}
        for name, auth in (("ushas_off", {}), ("ushas_auth", {"authorization": "true", "user": "bob"})):
            prefix = f"spark.sql.catalog.{name}"
            conf.update({prefix: "io.ushas.spark.UshasCatalog", f"{prefix}.uri": uri, f"{prefix}.catalog": "ushas",
                         f"{prefix}.warehouse": str(root / "warehouse")})
            conf.update({f"{prefix}.{k}": v for k, v in auth.items()})
        spark = ushas_session("ushas-bench-authorization", root, conf=conf)
        try:
            catalogs = {c: spark._jsparkSession.sessionState().catalogManager().catalog(c)
                        for c in ("ushas_off", "ushas_auth")}
            namespace = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, 1)
            namespace[0] = "db"
            ident = spark._jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, "t")
            made = iter(range(10**9))

            def create_external(c: str) -> None:
                n = f"e{next(made)}"
                spark.sql(f"CREATE TABLE {c}.db.{n} (a INT) USING parquet LOCATION '{root / 'external' / n}'")
                spark.sql(f"DROP TABLE {c}.db.{n}")

            calls = {
                "TableCatalog.loadTable(t) (the JVM catalog call, its bridge round trip)":
                    lambda c: catalogs[c].loadTable(ident),
                "spark.table(t) (analysis, catalog lookup)": lambda c: spark.table(f"{c}.db.t").schema,
                "SHOW PARTITIONS t": lambda c: spark.sql(f"SHOW PARTITIONS {c}.db.t").collect(),
                "DESCRIBE TABLE t": lambda c: spark.sql(f"DESCRIBE TABLE {c}.db.t").collect(),
                "CREATE TABLE … LOCATION (external, checked) + DROP TABLE": create_external,
            }
            for label, call in calls.items():
                n = rounds * 5 if label.startswith("TableCatalog") else rounds  # a short call: more samples
                med = rounds_of({"off": lambda call=call: call("ushas_off"),
                                 "on": lambda call=call: call("ushas_auth")}, n, 5)
                rows.append((f"Spark: {label}", med["off"], med["on"]))
            files = str(root / "external" / "files")
            spark.range(100).write.parquet(files)
        finally:
            spark.stop()
        off_read, on_read = path_reads(root, conf, files, rounds, args.blocks)
        rows.append(("Spark: spark.read.parquet(path in a declared location) (governed path read; off: the same "
                     "configuration with authorization=false, sessions alternating)", off_read, on_read))
        print(f"authorization on vs off: {grants} grants in the project, medians of {rounds} rounds "
              f"(Python API and loadTable: {rounds * 5}; the path read: {args.blocks} sessions per side)")
        print("| call | off ms | on ms | on / off |\n| --- | --- | --- | --- |")
        for label, a, b in rows:
            print(f"| {label} | {a * 1000:.3f} | {b * 1000:.3f} | {b / a:.2f}x |")
        off.close()
        on.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
