"""``ushas lineage …``: column lineage commands.

A command group: each subcommand registers itself in :data:`SUBCOMMANDS` order through a
``register_<name>(sub)`` function below; further subcommands (upstream, downstream, impact, runs,
run, export, status) are added the same way.

- ``ushas lineage sql "SELECT …" [--dialect spark] [--schema FILE.json]``: lineage of SQL text
  without Spark (sqlglot). Tables named with three parts (``catalog.db.table``) take their schema
  from the metastore of ``--uri`` / ``--project``; others from ``--schema`` (a JSON mapping
  ``{table: {column: type}}``, optionally nested by database and catalog).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ushas_catalog.cli.context import Context

#: output formats of ``lineage sql`` (``--json`` prints the full result as JSON)
FORMATS: tuple[str, ...] = ("tree", "edges", "openlineage", "dot", "mermaid")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("lineage", help="column lineage: of SQL text, captured runs, ...",
                            description="Column-level lineage.")
    commands = parser.add_subparsers(dest="lineage_command", metavar="SUBCOMMAND",
                                     parser_class=type(parser))
    commands.required = True
    for register_command in SUBCOMMANDS:
        register_command(commands)


# ---- lineage sql ----------------------------------------------------------------------------
def register_sql(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("sql", help="lineage of a SQL statement, without Spark (sqlglot)",
                            description="Column lineage of one SQL statement (a query, INSERT … SELECT or "
                                        "CREATE TABLE … AS SELECT), computed with sqlglot.")
    p.add_argument("sql", help="the statement; '-' reads it from stdin")
    p.add_argument("--dialect", default="spark", help="SQL dialect (sqlglot's names; default spark)")
    p.add_argument("--schema", metavar="FILE.json",
                   help="table schemas: {table: {column: type}}, optionally nested by database / catalog")
    p.add_argument("--catalog", help="current catalog, for names written without one")
    p.add_argument("--database", help="current database, for names written without one")
    p.add_argument("--format", choices=FORMATS, default="tree",
                   help="tree (default): one tree per output column; edges: a table of leaf edges; "
                        "openlineage: the columnLineage facet; dot / mermaid: graphs")
    p.set_defaults(func=run_sql)


@dataclass
class _CatalogSchema:
    """Schemas of three-part names from the metastore, opened only when such a name is used."""

    ctx: Context

    def columns(self, name: tuple[str, ...]) -> Mapping[str, str] | None:
        from ..sql_schema import MetastoreSchema

        if len(name) != 3:
            return None
        try:
            metastore = self.ctx.metastore
        except ModuleNotFoundError as exc:  # a build without the metastore
            if exc.name != "ushas_catalog.metastore":
                raise
            return None
        return MetastoreSchema(metastore).columns(name)


def run_sql(ctx: Context, args: argparse.Namespace) -> int:
    from ..sql import sql_lineage
    from ..sql_schema import ChainedSchema, MappingSchema

    text = sys.stdin.read() if args.sql == "-" else args.sql
    sources: list[Any] = []
    if args.schema:
        sources.append(MappingSchema.load(args.schema))
    sources.append(_CatalogSchema(ctx))
    result = sql_lineage(text, ChainedSchema(tuple(sources)), dialect=args.dialect,
                         catalog=args.catalog, database=args.database)
    if ctx.json:
        ctx.emit(result.to_dict())
        return 0
    if args.format == "edges":
        ctx.table(({"target": e.target.label if e.target else "*", "source": e.source.label,
                    "kind": e.kind.value, "subtype": e.subtype.value, "expression": e.expression}
                   for e in result.edges), ["target", "source", "kind", "subtype", "expression"])
        return 0
    ctx.emit(result, _RENDERERS[args.format])
    return 0


def _openlineage(result: Any) -> str:
    import json

    from openlineage.client.serde import Serde

    return json.dumps(json.loads(Serde.to_json(result.to_openlineage())), indent=2)


_RENDERERS: dict[str, Callable[[Any], str]] = {
    "tree": str,
    "openlineage": _openlineage,
    "dot": lambda r: r.to_dot(),
    "mermaid": lambda r: r.to_mermaid(),
}

#: the subcommands of ``ushas lineage``, in help order
def register_captured(commands: argparse._SubParsersAction) -> None:
    """upstream, downstream, impact, runs, run, export, status: over captured runs (lineage.cli_capture)."""
    from ..cli_capture import register as register_capture

    register_capture(commands)


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (register_sql, register_captured)

__all__ = ["register", "register_sql", "run_sql", "SUBCOMMANDS", "FORMATS"]
