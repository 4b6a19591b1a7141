"""The ``ushas lineage`` subcommands over captured lineage: upstream, downstream, impact, runs,
run, export, status (registered by ``lineage.plugin.cli_cmds``)."""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from .query import parse_time


def _queries(ctx: Any) -> Any:
    from .query import LineageQueries
    from .tables import MetastoreTableIds
    from .store import LineageStore

    ms = ctx.metastore
    return LineageQueries(LineageStore(ms.db, ctx.project, layout=ms.layout, tables=MetastoreTableIds(ms)))


def _window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="only runs that ended at or after T (epoch ms or ISO 8601)")
    p.add_argument("--until", help="only runs that ended at or before T")


def register(commands: argparse._SubParsersAction) -> None:
    for name, help_text in (("upstream", "where a table or column comes from (captured runs)"),
                            ("downstream", "where a table or column flows to (captured runs)")):
        p = commands.add_parser(name, help=help_text)
        p.add_argument("name", metavar="TABLE[.COLUMN]")
        p.add_argument("--depth", type=int, help="at most N hops")
        p.add_argument("--explain", action="store_true", help="show the expression of each hop")
        p.add_argument("--flat", action="store_true", help="a list of columns by depth instead of the tree")
        _window(p)
        p.set_defaults(func=run_walk, direction=name)
    p = commands.add_parser("impact", help="every downstream column of a column, with the runs of each edge")
    p.add_argument("name", metavar="COLUMN")
    p.add_argument("--explain", action="store_true", help="show the expression of each hop")
    p.add_argument("--flat", action="store_true", help="the impacted columns by depth and the edges with their "
                                                       "runs, instead of the tree of paths")
    _window(p)
    p.set_defaults(func=run_walk, direction="impact", depth=None)
    p = commands.add_parser("runs", help="who read / wrote a table")
    p.add_argument("name", metavar="TABLE")
    _window(p)
    p.set_defaults(func=run_runs)
    p = commands.add_parser("run", help="one captured run: inputs, outputs, edges")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id or an unambiguous prefix")
    p.set_defaults(func=run_run)
    p = commands.add_parser("export", help="export captured runs")
    p.add_argument("--openlineage", action="store_true", required=True,
                   help="as OpenLineage RunEvents (JSON lines)")
    _window(p)
    p.set_defaults(func=run_export)
    p = commands.add_parser("status", help="captured / dropped / pending runs")
    p.set_defaults(func=run_status)


def run_walk(ctx: Any, args: argparse.Namespace) -> int:
    q = _queries(ctx)
    since, until = parse_time(args.since, "--since"), parse_time(args.until, "--until")
    if args.direction == "impact":
        answer = q.impact(args.name, since=since, until=until)
    elif args.direction == "upstream":
        answer = q.upstream(args.name, depth=args.depth, since=since, until=until)
    else:
        answer = q.downstream(args.name, depth=args.depth, since=since, until=until)
    data = q.answer_json(answer, explain=args.explain or ctx.json)

    def tree(d: dict[str, Any]) -> str:
        from .edge_tree import tree_lines

        upstream = d["direction"] == "upstream"
        starts = d["start"]
        ends = {e["target"] if upstream else e["source"] for e in d["edges"]}
        roots = sorted(n for n in ends if any(n == s or n.startswith(s + ".") for s in starts)) or starts
        expressions = {(h["target"], h["source"], h["subtype"]): h.get("expression", "")
                       for hops in d.get("paths", {}).values() for h in hops} if args.explain else None
        head = (f"{'impact' if args.direction == 'impact' else d['direction']} of {', '.join(starts)}"
                + (" (depth limit reached)" if d["truncated"] else ""))
        lines = [head, *tree_lines(d["edges"], roots, upstream=upstream, expressions=expressions, indent="  ",
                                   datasets=[x["name"] for x in d["datasets"]] + list(starts))]
        if not d["edges"]:
            lines.append(f"  (no {'upstream' if upstream else 'downstream'} lineage captured)")
        lines.append("datasets: " + ", ".join(x["name"] + (" (dropped)" if x.get("dropped") else "")
                                              for x in d["datasets"]))
        return "\n".join(lines)

    def text(d: dict[str, Any]) -> str:
        lines = [f"{d['direction']} of {', '.join(d['start'])}" + (" (depth limit reached)" if d["truncated"] else "")]
        for c in d["columns"]:
            lines.append(f"  {'  ' * (c['depth'] - 1)}{c['name']}")
            if args.explain:
                for h in d["paths"][c["name"]]:
                    lines.append(f"      {h['target']} <- {h['source']}  {h['subtype']}: {h.get('expression', '')}")
        if args.direction == "impact":
            lines.append("edges:")
            for e in d["edges"]:
                lines.append(f"  {e['target']} <- {e['source']}  {e['subtype']}  runs: {', '.join(e['runs'])}")
        lines.append("datasets: " + ", ".join(x["name"] + (" (dropped)" if x.get("dropped") else "")
                                              for x in d["datasets"]))
        return "\n".join(lines)

    ctx.emit(data, text if args.flat else tree)
    return 0


def run_runs(ctx: Any, args: argparse.Namespace) -> int:
    q = _queries(ctx)
    since, until = parse_time(args.since, "--since"), parse_time(args.until, "--until")
    rows = q.runs_json(q.runs(args.name, since=since, until=until))
    for r in rows:
        r["end"] = dt.datetime.fromtimestamp(r["end_ms"] / 1000, tz=dt.timezone.utc).isoformat(timespec="seconds")
    for r in rows:
        if not r.get("job"):  # runs stored before runs had names
            r["job"] = f"{r['application_name'] or r['application_id']}.execution_{r['execution_id']}"
    ctx.table(rows, ["access", "end", "status", "user", "session_id", "job", "kind", "run_id"])
    return 0


def run_run(ctx: Any, args: argparse.Namespace) -> int:
    q = _queries(ctx)
    data = q.run(args.run_id)

    def text(d: dict[str, Any]) -> str:
        r = d["run"]
        lines = [f"run {r['run_id']} ({r['status']}) {r.get('job') or ''} {r.get('kind') or ''}".rstrip(),
                 f"execution {r['execution_id']} of {r['application_name']} by {r['user']}"]
        if r.get("sql"):
            lines.append(f"sql: {r['sql']}")
        if r.get("error"):
            lines.append(f"error: {r['error']}")
        if r.get("table_level"):
            lines.append(f"table level only: {r['table_level']}")
        lines.append("inputs: " + ", ".join(x["name"] for x in d["inputs"]))
        lines.append("outputs: " + ", ".join(x["name"] for x in d["outputs"]))
        for e in d["edges"]:
            lines.append(f"  {e['target']} <- {e['source']}  {e['subtype']}: {e['expression']}")
        return "\n".join(lines)

    ctx.emit(data, text)
    return 0


def run_export(ctx: Any, args: argparse.Namespace) -> int:
    """Events on stdout, one JSON line each (as :func:`~lineage.openlineage.write_json_lines`
    writes them); a progress bar over the runs on stderr when it is a terminal (never with --json)."""
    from ushas_catalog.progress import progress_for

    from .openlineage import run_events
    from .openlineage_events import to_json

    q = _queries(ctx)
    runs = q.store.runs_between(parse_time(args.since, "--since"), parse_time(args.until, "--until"))
    with progress_for(ctx.json, "exporting runs", total=len(runs)) as bar:
        for run in runs:
            for event in run_events(q.store, run):
                sys.stdout.write(to_json(event))
                sys.stdout.write("\n")
            bar.advance(item=run.application_name or run.application_id)
    return 0


def run_status(ctx: Any, args: argparse.Namespace) -> int:
    data = _queries(ctx).store.status().to_dict()
    ctx.emit(data, lambda d: f"captured {d['captured']}  dropped {d['dropped']}  pending {d['pending']}")
    return 0
