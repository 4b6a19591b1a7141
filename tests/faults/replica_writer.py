"""A REST client of several ``ushas serve`` replicas: ``python replica_writer.py BASES TOKEN SEED SECONDS [MET]``.

BASES is a comma-separated list of ``http://127.0.0.1:PORT`` replicas; each call goes to the next one
(round robin). For SECONDS it changes the owner of one of the tables ``main.db.r0..r{R-1}`` (a new
table version) or tags one with a tag of its own (``w<SEED>_<i>``). Prints one JSON line: the tags
and owner changes acknowledged (200), and the calls whose outcome is unknown (the replica died). MET: a
file created at the first such call (so a test can keep a replica dead until a writer has met it).
"""
from __future__ import annotations

import json
import random
import sys
import time
import urllib.error
import urllib.request

TABLES = 3


def call(base: str, token: str, method: str, path: str, body: dict) -> int:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code


def main() -> int:
    bases, token, seed, seconds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    met = sys.argv[5] if len(sys.argv) > 5 else None
    rnd = random.Random(seed)
    acked_tags: list[list] = []
    owners = {f"r{t}": 0 for t in range(TABLES)}
    unknown = refused = 0
    i = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        base = bases[i % len(bases)]
        table = f"r{rnd.randrange(TABLES)}"
        where = f"/api/v1/metadata/{{}}?catalog=main&database=db&table={table}"
        try:
            if rnd.random() < 0.5:
                tag = f"w{seed}_{i}"
                status = call(base, token, "POST", where.format("tags"), {"tags": [tag]})
                if status == 200:
                    acked_tags.append([table, tag])
            else:
                status = call(base, token, "PUT", where.format("owner"), {"owner": f"w{seed}_{i}"})
                if status == 200:
                    owners[table] += 1
            if status != 200:
                refused += 1
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            unknown += 1          # the replica died or restarts: the call may or may not have happened
            if met is not None and unknown == 1:
                open(met, "w").close()
            time.sleep(0.05)
        i += 1
    print(json.dumps({"tags": acked_tags, "owners": owners, "unknown": unknown, "refused": refused, "calls": i}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
