"""``ushas write WRITE_ID`` and ``ushas writes``: what became of fenced writes (Spark jobs, API writers
that passed a write id): COMMITTED (with the version it made), ABORTED (why) or UNKNOWN (no outcome
recorded: nothing of it is committed, and once its deadline passed nothing ever will be). See
:mod:`ushas_catalog.data.write_fence`."""
from __future__ import annotations

import argparse
import time

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("write", help="what became of a write (COMMITTED / ABORTED / UNKNOWN)",
                       description="Show the recorded outcome of the write WRITE_ID (a Spark write's id, as its "
                                   "error message names it): COMMITTED with its table and version, ABORTED with "
                                   "the reason, or UNKNOWN when no outcome is recorded (nothing of it is "
                                   "committed).")
    p.add_argument("write_id", metavar="WRITE_ID", help="the write's id (a Spark job id)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_write)
    p = sub.add_parser("writes", help="recent fenced writes and their outcomes, newest first")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0: all)")
    p.add_argument("--trim-older-than", metavar="AGE", help="instead: remove the outcomes recorded more than AGE "
                                                            "ago (7d, 12h, 30m, 45s); a COMMITTED one is kept "
                                                            "for 24 h and while its staging directory exists")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_writes)


def cmd_write(ctx: Context, args: argparse.Namespace) -> int:
    from ..data.write_fence import get_outcome

    outcome = get_outcome(ctx.metastore, args.write_id)
    ctx.emit(outcome.to_json(), lambda _: outcome.summary())
    return 0


def cmd_writes(ctx: Context, args: argparse.Namespace) -> int:
    from ..errors import InvalidArgument
    from ..data.write_fence import list_outcomes

    if args.trim_older_than is not None:
        from ..data.purge import parse_age
        from ..data.write_fence import trim_outcomes

        age = parse_age(args.trim_older_than)
        removed = trim_outcomes(ctx.metastore, time.time_ns() // 1000 - int(age.total_seconds() * 1_000_000))
        ctx.emit({"trimmed": removed}, f"removed {removed} write outcome(s) older than {args.trim_older_than} "
                                       f"(COMMITTED ones are kept for 24 h, and while the write's staging "
                                       f"directory exists)")
        return 0
    if args.limit < 0:
        raise InvalidArgument(f"--limit must be >= 0, not {args.limit}")
    rows = [o.to_json() for o in list_outcomes(ctx.metastore, args.limit)]
    ctx.table(rows, ["write_id", "state", "table", "version", "time", "reason"])
    return 0
