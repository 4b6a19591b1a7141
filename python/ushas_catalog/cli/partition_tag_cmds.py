"""Partition tags: ``ushas partition-tags set TABLE SPEC KEY=VALUE...``, ``partition-tags unset TABLE
SPEC KEY...``, ``partition-tags stats TABLE [--key K]`` (``ushas partitions TABLE --tag K=V`` lists
the partitions of a tag). SPEC is ``col=value[/col=value]`` (any of the partition columns), a filter
(``"city IN ('Pune', 'Nagpur')"``) or ``''`` (every partition)."""
from __future__ import annotations

import argparse

from ..errors import InvalidArgument
from ..model.names import TableName
from ..model.partition_tags import parse_assignments
from ..model.partitions import Partition
from .context import Context

SPEC_HELP = ("the partitions: col=value[/col=value] (any of the partition columns), a filter such as "
             "\"city IN ('Pune', 'Nagpur') AND dt >= '2024-01-01'\", or '' for every partition")


def _reads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("partition-tags", help="user tags on partitions: set, unset, per-tag statistics",
                       description="Tag partitions (KEY=VALUE), remove tags, and summarise a table's partitions "
                                   "by tag. List the partitions of a tag with 'ushas partitions TABLE --tag K=V'.")
    actions = p.add_subparsers(dest="partition_tags_action", metavar="ACTION", required=True)
    s = actions.add_parser("set", help="tag partitions: KEY=VALUE... (one commit of the table)")
    s.add_argument("table", help="catalog.database.table")
    s.add_argument("spec", help=SPEC_HELP)
    s.add_argument("tags", nargs="+", metavar="KEY=VALUE")
    _reads(s)
    s.set_defaults(func=cmd_set)
    u = actions.add_parser("unset", help="remove tags (by key) from partitions (one commit of the table)")
    u.add_argument("table", help="catalog.database.table")
    u.add_argument("spec", help=SPEC_HELP)
    u.add_argument("keys", nargs="+", metavar="KEY")
    _reads(u)
    u.set_defaults(func=cmd_unset)
    st = actions.add_parser("stats", help="per tag: partitions, bytes, rows (read from the tag index)")
    st.add_argument("table", help="catalog.database.table")
    st.add_argument("--key", help="only this tag key")
    _reads(st)
    st.set_defaults(func=cmd_stats)


def _done(ctx: Context, result: object, what: str) -> int:
    data = result.to_json()  # type: ignore[attr-defined]
    version = data["version"]
    ctx.emit(data, f"{what} {data['changed']} of {data['matched']} partitions"
                   + (f" (version {version})" if version is not None else " (nothing changed)"))
    return 0


def cmd_set(ctx: Context, args: argparse.Namespace) -> int:
    tags = parse_assignments(args.tags)
    result = ctx.metastore.set_partition_tags(TableName.parse(args.table), args.spec, tags)
    return _done(ctx, result, "tagged")


def cmd_unset(ctx: Context, args: argparse.Namespace) -> int:
    keys = list(parse_assignments(args.keys, values=False))
    result = ctx.metastore.unset_partition_tags(TableName.parse(args.table), args.spec, keys)
    return _done(ctx, result, "untagged")


def cmd_stats(ctx: Context, args: argparse.Namespace) -> int:
    stats = ctx.metastore.partition_tag_stats(TableName.parse(args.table), args.key)
    ctx.table([s.to_json() for s in stats], ["key", "value", "partitions", "bytes", "rows"])
    return 0


def tagged_partitions(ctx: Context, table: TableName, tags: list[str], prefix: dict[str, str] | None,
                      limit: int | None) -> list[Partition]:
    """``ushas partitions TABLE --tag K=V [--tag ...] [--prefix C=V]``: the partitions of the first tag
    (from the index), then those carrying every other tag and matching the prefix."""
    wanted: list[tuple[str, str | None]] = []
    for item in tags:
        key, sep, value = item.partition("=")
        if not key:
            raise InvalidArgument(f"--tag {item!r} must be KEY=VALUE or KEY")
        wanted.append((key, value if sep else None))
    (first, first_value), rest = wanted[0], wanted[1:]
    out: list[Partition] = []
    for p in ctx.metastore.partitions_by_tag(table, first, first_value):
        if any(k not in p.tags or (v is not None and p.tags[k] != v) for k, v in rest):
            continue
        if prefix and any(p.spec.get(c) != v for c, v in prefix.items()):
            continue
        out.append(p)
        if limit is not None and len(out) >= limit:
            break
    return out
