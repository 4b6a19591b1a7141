"""``ushas jar``: print the path of the shim jar (for ``spark.jars``), building it if needed."""
from __future__ import annotations

import argparse

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jar", help="print the path of the JVM shim jar (builds it if needed)")
    p.set_defaults(func=run)


def run(ctx: Context, args: argparse.Namespace) -> int:
    from ..spark.jar import jar_path

    path = str(jar_path())
    ctx.emit({"jar": path}, path)
    return 0
