"""Change feed commands: ``changes`` (read / follow the feed), ``changes head`` (the newest
cursor), ``changes trim`` (retention).

``ushas changes [--since CURSOR] [--follow] [--json]`` prints one line per event, each with
its cursor; ``--json`` prints JSON Lines (one object per event, flushed as it comes), so a
consumer can pipe it and resume from the last ``cursor`` it processed.

With ``--user`` (authorization on), reading the feed needs SELECT on the project and trimming it MANAGE
on the project (docs/governance.md), checked in each transaction that reads or trims it.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..catalog.authorization import PROJECT, Requirement, requiring
from ..changes.feed import parse_duration
from ..errors import InvalidArgument
from ..governance.privileges import MANAGE, SELECT
from .context import Context
from .terminal import escape


def _reads(p: argparse.ArgumentParser) -> None:
    """``--json`` after the command as well as before it."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("changes", help="the change feed: every catalog mutation in commit order",
                       description="Print change events after --since (from the oldest retained without it). "
                                   "Subcommands: head (the newest cursor), trim (retention).")
    p.add_argument("--since", metavar="CURSOR", help="only events after this cursor (as printed by a previous run)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events (Ctrl-C stops)")
    p.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="with --follow: how often to look for new events (default 1)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N events")
    _reads(p)
    p.set_defaults(func=cmd_changes)
    actions = p.add_subparsers(dest="changes_action", metavar="ACTION")

    h = actions.add_parser("head", help="print the cursor of the newest event (to follow only what comes next)")
    _reads(h)
    h.set_defaults(func=cmd_head)

    t = actions.add_parser("trim", help="remove events older than a horizon (one range clear)")
    t.add_argument("--older-than", required=True, metavar="DURATION", help="e.g. 90s, 30m, 12h, 7d, 2w")
    _reads(t)
    t.set_defaults(func=cmd_trim)


#: what reading the feed needs (the feed's own reads are not Metastore methods: RULES does not cover them)
READ = Requirement(SELECT, PROJECT)


def cmd_changes(ctx: Context, args: argparse.Namespace) -> int:
    with requiring(READ):
        return _changes(ctx, args)


def _changes(ctx: Context, args: argparse.Namespace) -> int:
    if args.poll <= 0:
        raise InvalidArgument(f"--poll must be > 0 seconds, not {args.poll}")
    if args.limit is not None and args.limit < 0:
        raise InvalidArgument(f"--limit must be >= 0, not {args.limit}")
    feed = ctx.metastore.change_feed
    if args.since is not None:
        feed.read(args.since, limit=1)  # a bad or expired cursor fails here, before anything is printed
    printed = 0
    if args.limit == 0:
        return 0
    try:
        for change in feed.changes(args.since, follow=args.follow, poll_interval=args.poll):
            if ctx.json:
                sys.stdout.write(json.dumps(change.to_json(), default=str, ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(escape(change.summary()) + "\n")  # names may hold escape sequences
            sys.stdout.flush()
            printed += 1
            if args.limit is not None and printed >= args.limit:
                break
    except KeyboardInterrupt:
        return 0
    return 0


def cmd_head(ctx: Context, args: argparse.Namespace) -> int:
    with requiring(READ):
        cursor = ctx.metastore.change_feed.latest_cursor()
    ctx.emit({"cursor": cursor}, cursor or "(the change feed is empty)")
    return 0


def cmd_trim(ctx: Context, args: argparse.Namespace) -> int:
    horizon = parse_duration(args.older_than)
    with requiring(Requirement(MANAGE, PROJECT)):
        result = ctx.metastore.change_feed.trim(horizon)
    ctx.emit(result.to_json(), f"removed {result.removed} events"
             + (f" (up to {result.last_removed})" if result.last_removed else ""))
    return 0
