"""Runs the ``python`` and ``sql`` blocks of the user docs (issue 36), for tests/app/test_doc_tours.py.

``python3 doc_snippets.py < blocks.json`` (a list of ``{"page", "line", "lang", "body"}``, pages in order):
one process, hence one Spark session, for every page. The README's first Python block makes the session
(``configure(SparkSession.builder, name="ushas").getOrCreate()`` on the default store, as a user does);
every page then runs in a namespace of its own that starts with

- ``spark``: that session (SQL blocks run through ``spark.sql``, statement by statement),
- ``uri``: the default store's URI, and ``ms``: ``Metastore.open(uri)`` (project ``default``).

The first block that fails stops the run with its page and line and exit status 1.
"""
from __future__ import annotations

import json
import sys
import traceback
from typing import Any


def statements(sql: str) -> list[str]:
    """The statements of a SQL block: split at ``;`` and without ``--`` comments, both outside quotes."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(sql):
        ch = sql[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif sql.startswith("--", i):
            while i < len(sql) and sql[i] != "\n":
                i += 1
            continue
        elif ch == ";":
            out.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    out.append("".join(current))
    return [s.strip() for s in out if s.strip()]


def run(blocks: list[dict[str, Any]]) -> int:
    from ushas_catalog import Metastore
    from ushas_catalog.store_location import default_uri

    uri = default_uri()
    spark: Any = None
    namespace: dict[str, Any] = {}
    page = ""
    for block in blocks:
        where = f"{block['page']}:{block['line']} ({block['lang']})"
        if block["page"] != page:
            page = block["page"]
            namespace = {"__name__": "__doc__", "spark": spark, "uri": uri, "ms": Metastore.open(uri)}
        try:
            if block["lang"] == "sql":
                for statement in statements(block["body"]):
                    where = f"{block['page']}:{block['line']}: {statement}"
                    namespace["spark"].sql(statement).collect()
            else:
                exec(compile(block["body"], where, "exec"), namespace)  # noqa: S102 - the docs' own code
        except Exception:
            print(f"{where}\nfailed; the block:\n{block['body']}", file=sys.stderr)
            traceback.print_exc()
            return 1
        spark = namespace.get("spark") or spark
        print(f"ran {block['page']}:{block['line']}", flush=True)
    if spark is not None:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run(json.load(sys.stdin)))
