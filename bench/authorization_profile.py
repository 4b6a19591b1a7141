"""Where the time of ``CREATE TABLE … LOCATION`` + ``DROP TABLE`` goes with authorization on vs off, inside Spark.

    python bench/authorization_profile.py [--rounds R] [--grants G]

The store, the grants and the two catalogs of ``bench/authorization.py`` (``ushas_off``; ``ushas_auth`` with
``authorization=true`` and ``user=bob``) in one session; the two sides alternate every round. Every bridge call
the shim makes is counted at the Python end of the bridge (``bridge.handle``: the op, its time in Python, its
request and answer sizes), so that each statement's wall time splits into the Python side of its calls and the
rest (the JVM, Spark, Py4J). Prints, per statement and side, the median wall time and number of calls, then each
op's median time in Python and count per statement, then each side's calls by op with their median request and answer sizes
(the same calls and sizes on both sides: the JVM sends and reads the same). A profile, not a goal: no lock needed for a
short run; its ratios are in bench/authorization.py.
"""
from __future__ import annotations

import argparse
import collections
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)
from authorization import setup  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--grants", type=int, default=2000)
    args = ap.parse_args()
    from ushas_catalog.spark import bridge

    calls: list[tuple[str, float]] = []
    shapes: dict[str, collections.Counter[tuple[str, int, int]]] = {"off": collections.Counter(),
                                                                     "on": collections.Counter()}
    side_now = ["off"]
    real = bridge.handle

    def handle(op: str, payload: str) -> str:
        t0 = time.perf_counter()
        out = real(op, payload)
        calls.append((op, time.perf_counter() - t0))
        shapes[side_now[0]][(op, len(payload), len(out))] += 1
        return out

    bridge.handle = handle  # Backend.call looks it up at every call
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-auth-profile-"))
    try:
        uri = f"sqlite:///{root / 'ushas.db'}"
        setup(uri, args.grants)
        conf: dict[str, str] = {}
        for name, auth in (("ushas_off", {}), ("ushas_auth", {"authorization": "true", "user": "bob"})):
            prefix = f"spark.sql.catalog.{name}"
            conf.update({prefix: "io.ushas.spark.UshasCatalog", f"{prefix}.uri": uri, f"{prefix}.catalog": "ushas",
                         f"{prefix}.warehouse": str(root / "warehouse")})
            conf.update({f"{prefix}.{k}": v for k, v in auth.items()})
        spark = ushas_session("ushas-bench-authorization-profile", root, conf=conf)
        wall: dict[str, dict[str, list[float]]] = {s: collections.defaultdict(list) for s in ("off", "on")}
        count: dict[str, dict[str, list[int]]] = {s: collections.defaultdict(list) for s in ("off", "on")}
        python: dict[str, dict[str, list[float]]] = {s: collections.defaultdict(list) for s in ("off", "on")}
        try:
            for c in ("ushas_off", "ushas_auth"):
                spark.table(f"{c}.db.t").schema
            warmup, made = 5, 0
            for r in range(args.rounds + warmup):
                order = (("off", "ushas_off"), ("on", "ushas_auth"))
                for side, cat in order if r % 2 else order[::-1]:
                    made += 1
                    n = f"e{made}"
                    loc = root / "external" / n
                    for stmt, sql in (("create", f"CREATE TABLE {cat}.db.{n} (a INT) USING parquet LOCATION '{loc}'"),
                                      ("drop", f"DROP TABLE {cat}.db.{n}")):
                        calls.clear()
                        side_now[0] = side
                        t0 = time.perf_counter()
                        spark.sql(sql)
                        took = time.perf_counter() - t0
                        if r < warmup:
                            continue
                        wall[side][stmt].append(took)
                        count[side][stmt].append(len(calls))
                        python[side][f"{stmt}: python, all calls"].append(sum(d for _, d in calls))
                        per_op: dict[str, float] = collections.defaultdict(float)
                        for op, d in calls:
                            per_op[op] += d
                        for op, d in per_op.items():
                            python[side][f"{stmt}: {op}"].append(d)
        finally:
            spark.stop()
        ms = 1000.0
        print(f"CREATE TABLE … LOCATION + DROP TABLE, {args.rounds} rounds per side, {args.grants} grants")
        print("| statement | off wall ms | on wall ms | calls off | calls on |\n| --- | --- | --- | --- | --- |")
        for stmt in ("create", "drop"):
            print(f"| {stmt} | {statistics.median(wall['off'][stmt]) * ms:.2f} | "
                  f"{statistics.median(wall['on'][stmt]) * ms:.2f} | {statistics.median(count['off'][stmt]):.0f} | "
                  f"{statistics.median(count['on'][stmt]):.0f} |")
        print("| Python side (per statement, all its calls of the op) | off ms | on ms |\n| --- | --- | --- |")
        for key in sorted(set(python["off"]) | set(python["on"])):
            off, on = python["off"].get(key), python["on"].get(key)
            print(f"| {key} | {statistics.median(off) * ms if off else 0:.3f} | "
                  f"{statistics.median(on) * ms if on else 0:.3f} |")
        for side in ("off", "on"):
            by_op: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
            for (op, req, ans), k in shapes[side].items():
                by_op[op].extend([(req, ans)] * k)
            print(f"{side}: " + ", ".join(f"{op} x{len(v)} ({statistics.median(q for q, _ in v):.0f} B -> "
                                            f"{statistics.median(a for _, a in v):.0f} B)" for op, v in sorted(by_op.items())))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
