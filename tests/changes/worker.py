"""A stress worker: ``python worker.py URI SEED N_OPS`` runs N_OPS random mixed
operations (create / alter / add, drop, replace partitions / drop / undrop) on the shared
tables ``main.db.t0..t{TABLES-1}``; expected refusals (missing / existing table, stale
expected version) count as refused. Prints ``done <changed> <unchanged> <refused>``
(unchanged: a partition operation that found nothing to do, so made no commit); any other
error exits non-zero. N_OPS = 0: run until killed."""
from __future__ import annotations

import random
import sys

from ushas_catalog.errors import Conflict, NoSuchTable, TableAlreadyExists
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.table_changes import SetProperty

TABLES = 4
PARTITION_VALUES = 12
DATABASE = "main.db"


def one(ms: Metastore, rnd: random.Random, worker: int, i: int) -> bool:
    """One random operation; whether it committed a change."""
    name = f"{DATABASE}.t{rnd.randrange(TABLES)}"
    op = rnd.random()
    if op < 0.28:
        return ms.add_partitions(name, [{"p": rnd.randrange(PARTITION_VALUES)} for _ in range(rnd.randint(1, 3))],
                                 if_not_exists=True).version is not None
    elif op < 0.46:
        return ms.drop_partitions(name, [{"p": rnd.randrange(PARTITION_VALUES)} for _ in range(rnd.randint(1, 2))],
                                  if_exists=True).version is not None
    elif op < 0.52:
        p = rnd.randrange(PARTITION_VALUES)
        other = (p + 1 + rnd.randrange(PARTITION_VALUES - 1)) % PARTITION_VALUES
        return ms.replace_partitions(name, [{"p": p}], [Partition({"p": p}, location=f"/x/w{worker}/{i}"),
                                                        {"p": other}]).version is not None
    elif op < 0.64:
        ms.alter_table(name, [SetProperty(f"w{worker}", str(i))])
    elif op < 0.72:
        version = ms.get_table(name).version
        ms.alter_table(name, [SetProperty("last", f"w{worker}-{i}")], expected_version=version)
    elif op < 0.82:
        ms.create_table(name, "x INT, p INT", partition_by=["p"])
    elif op < 0.91:
        ms.drop_table(name)
    else:
        ms.undrop_table(name)
    return True


def main() -> int:
    uri, seed, n_ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(seed)
    changed = unchanged = refused = 0
    with Metastore.open(uri, project="stress", user=f"w{seed}") as ms:
        i = 0
        while n_ops == 0 or i < n_ops:
            try:
                if one(ms, rnd, seed, i):
                    changed += 1
                else:
                    unchanged += 1
            except (NoSuchTable, TableAlreadyExists, Conflict):
                refused += 1
            i += 1
    print(f"done {changed} {unchanged} {refused}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
