"""``ushas spark-conf``: print a ``spark-defaults.conf`` fragment that works when pasted: the real shim jar
path, this interpreter as the bridge's Python, the catalog and its store, the commit protocol, the session
extension and the lineage listener."""
from __future__ import annotations

import argparse
import os
import sys

from .context import Context

_HEADER = ("# Ushas Catalog (printed by `ushas spark-conf`): paste into $SPARK_HOME/conf/spark-defaults.conf,\n"
           "# or pass each line as --conf KEY=VALUE to spark-submit / spark-sql / pyspark.\n")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spark-conf", help="print a working spark-defaults.conf fragment for a catalog "
                                          "(jar path, interpreter, store, extension, listener)")
    p.add_argument("--uri", dest="conf_uri", default=None,
                   help="the store URI (default: the global --uri / USHAS_URI)")
    p.add_argument("--project", dest="conf_project", default=None,
                   help="the tenant project (default: the global --project)")
    p.add_argument("--warehouse", default=None, help="where managed tables' data goes "
                                                     "(default: <spark.sql.warehouse.dir>/<catalog>)")
    p.add_argument("--catalog", default="ushas", help="the Spark catalog name (default ushas)")
    p.add_argument("--metastore-catalog", default=None,
                   help="the metastore catalog when it differs from the Spark catalog name")
    p.add_argument("--branch", dest="conf_branch", default=None,
                   help="the branch of the metastore catalog the Spark catalog reads and writes (default: the "
                        "global --branch, main; docs/branches.md)")
    p.add_argument("--no-lineage", action="store_true", help="leave the lineage listener out")
    p.set_defaults(func=run)


def _local_path(value: str) -> str:
    """A warehouse without a scheme as an absolute path (a pasted conf must not depend on the cwd)."""
    return value if "://" in value or ":" in value.split("/", 1)[0] else os.path.abspath(value)


def run(ctx: Context, args: argparse.Namespace) -> int:
    from ..errors import InvalidArgument
    from ..catalog.branches import branch_name
    from ..spark.jar import jar_path
    from ..spark.options import SparkConfRequest, format_conf, spark_conf

    name = args.catalog
    if not name or not name.isascii() or not name.replace("_", "a").isalnum():
        raise InvalidArgument(f"--catalog {name!r}: a Spark catalog name is letters, digits and _")
    uri = args.conf_uri or ctx.uri
    if "://" not in uri:
        raise InvalidArgument(f"invalid store URI {uri!r}: expected sqlite:///path or fdb:///path/fdb.cluster")
    req = SparkConfRequest(uri=uri, name=name, project=args.conf_project or ctx.project,
                           warehouse=_local_path(args.warehouse) if args.warehouse else None,
                           catalog=args.metastore_catalog, lineage=not args.no_lineage,
                           branch=branch_name(args.conf_branch or ctx.branch or "main"))
    settings = spark_conf(req, jar=str(jar_path()), python=sys.executable)
    ctx.emit(dict(settings), _HEADER + format_conf(settings))
    return 0
