"""``ushas hooks``: change hooks (docs/hooks.md).

- ``ushas hooks add NAME --url URL | --python module:function [--on KINDS] [--table PATTERN]
  [--from now|beginning|CURSOR] [--max-attempts N] [--backoff S] [--max-backoff S] [--timeout S]``
- ``ushas hooks list``; ``ushas hooks status [NAME]`` (exit 1 when a hook's cursor expired);
  ``ushas hooks remove NAME``; ``ushas hooks pause|resume NAME``
- ``ushas hooks run [NAME] [--once] [--poll S] [--lease S]``: the delivery worker (Ctrl-C / SIGTERM stops it)
- ``ushas hooks deliveries NAME [--limit N]``; ``ushas hooks dead-letters NAME [--events]``;
  ``ushas hooks retry|skip NAME CURSOR... | --all``; ``ushas hooks reset NAME --to now|beginning|CURSOR``
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from ..errors import InvalidArgument
from .context import Context
from .terminal import escape


def _reads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hooks", help="change hooks: tell a downstream system about catalog changes",
                       description="Hooks deliver change feed events (partitions added / replaced / dropped, "
                                   "schema changes, drops ...) to an HTTP endpoint or a Python function, at least "
                                   "once, in commit order, with retries and a dead-letter list (docs/hooks.md).")
    commands = p.add_subparsers(dest="hooks_command", metavar="SUBCOMMAND", parser_class=type(p))
    commands.required = True

    a = commands.add_parser("add", help="define a hook")
    a.add_argument("name")
    target = a.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="POST each event as JSON to this http(s) URL")
    target.add_argument("--python", metavar="MODULE:FUNCTION",
                        help="call this function with each event (a dict); MODULE may be /path/file.py")
    a.add_argument("--on", default="partitions,data,schema,drop", metavar="KINDS",
                   help="event kinds, comma-separated: partitions, data, schema, alter, rename, drop, undrop, "
                        "all (default partitions,data,schema,drop)")
    a.add_argument("--table", metavar="PATTERN", help="only events of tables matching [catalog.][database.]table "
                                                      "(glob: * ? [...])")
    a.add_argument("--from", dest="start", default="now", metavar="now|beginning|CURSOR",
                   help="deliver the events after this point (default now: only what comes next)")
    a.add_argument("--max-attempts", type=int, help="refusals before an event is dead-lettered (default 10)")
    a.add_argument("--backoff", type=float, metavar="SECONDS", help="first retry delay, doubled per failure "
                                                                    "(default 1)")
    a.add_argument("--max-backoff", type=float, metavar="SECONDS", help="longest retry delay (default 300)")
    a.add_argument("--timeout", type=float, metavar="SECONDS", help="HTTP timeout per call (default 10)")
    _reads(a)
    a.set_defaults(func=cmd_add)

    ls = commands.add_parser("list", help="the hooks")
    _reads(ls)
    ls.set_defaults(func=cmd_list)

    st = commands.add_parser("status", help="lag (events behind, age), failures, dead letters, expiry")
    st.add_argument("name", nargs="?")
    _reads(st)
    st.set_defaults(func=cmd_status)

    r = commands.add_parser("run", help="the delivery worker (all hooks, or one)")
    r.add_argument("name", nargs="?")
    r.add_argument("--once", action="store_true", help="one pass: deliver what is due, then exit")
    r.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="how often to look for new events when idle (default 1)")
    r.add_argument("--lease", type=float, default=60.0, metavar="SECONDS",
                   help="how long this worker holds a hook after its last delivery; another worker takes "
                        "the hook over when it runs out (default 60; longer than your slowest delivery)")
    _reads(r)
    r.set_defaults(func=cmd_run)

    rm = commands.add_parser("remove", help="remove a hook with its progress, deliveries and dead letters")
    rm.add_argument("name")
    _reads(rm)
    rm.set_defaults(func=cmd_remove)

    for verb, paused in (("pause", True), ("resume", False)):
        pp = commands.add_parser(verb, help=f"{verb} deliveries of a hook (its cursor stays)")
        pp.add_argument("name")
        _reads(pp)
        pp.set_defaults(func=cmd_pause, paused=paused)

    d = commands.add_parser("deliveries", help="the newest delivery records of a hook")
    d.add_argument("name")
    d.add_argument("--limit", type=int, default=20)
    _reads(d)
    d.set_defaults(func=cmd_deliveries)

    dl = commands.add_parser("dead-letters", help="events that failed --max-attempts times")
    dl.add_argument("name")
    dl.add_argument("--events", action="store_true", help="with the event payloads (with --json)")
    _reads(dl)
    dl.set_defaults(func=cmd_dead)

    for verb, text in (("retry", "deliver dead letters again (out of commit order)"),
                       ("skip", "drop dead letters without delivering them")):
        x = commands.add_parser(verb, help=text)
        x.add_argument("name")
        x.add_argument("cursors", nargs="*", metavar="CURSOR")
        x.add_argument("--all", action="store_true", help="every dead letter of the hook")
        _reads(x)
        x.set_defaults(func=cmd_dead_action, verb=verb)

    rs = commands.add_parser("reset", help="move a hook's cursor (acknowledges an expired cursor; replays)")
    rs.add_argument("name")
    rs.add_argument("--to", required=True, metavar="now|beginning|CURSOR")
    _reads(rs)
    rs.set_defaults(func=cmd_reset)


def _store(ctx: Context) -> Any:
    from ..hooks.store import HookStore

    return HookStore(ctx.metastore)


def cmd_add(ctx: Context, args: argparse.Namespace) -> int:
    hook = _store(ctx).add(args.name, url=args.url, python=args.python, on=args.on, table=args.table,
                           start=args.start, max_attempts=args.max_attempts, backoff_s=args.backoff,
                           max_backoff_s=args.max_backoff, timeout_s=args.timeout)
    ctx.emit(hook.to_json(), f"added hook {hook.name} -> {hook.target} on {','.join(hook.on)}"
             + (f" for {hook.table_pattern}" if hook.table_pattern else "")
             + " (deliveries by ushas hooks run or ushas serve)")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    rows = [h.to_json() for h in _store(ctx).list()]
    if ctx.json:
        ctx.emit(rows)
        return 0
    for r in rows:
        r["target"] = r["url"] or f"python:{r['python']}"
        r["on"] = ",".join(r["on"])
        r["paused"] = "paused" if r["paused"] else ""
    ctx.table(rows, ["name", "target", "on", "table", "paused", "created_at"])
    return 0


def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    statuses = _store(ctx).status(args.name)
    if ctx.json:
        ctx.emit([s.to_json() for s in statuses])
    else:
        rows = [{"name": s.hook.name, "state": s.state, "lag": s.lag, "delivered": s.delivered,
                 "attempts": s.attempts + s.unavailable if (s.attempts or s.unavailable) else "",
                 "dead": s.dead_letters or "", "next_attempt": s.next_attempt_at or "",
                 "last_error": (s.last_error[:80] if s.last_error else "")} for s in statuses]
        ctx.table(rows, ["name", "state", "lag", "delivered", "attempts", "dead", "next_attempt", "last_error"])
    expired = [s for s in statuses if s.expired]
    for s in expired:
        print(f"ushas: HOOK {escape(s.hook.name)}: CURSOR EXPIRED: the change feed was trimmed past its cursor "
              f"{s.cursor} (events up to {s.expired} removed before delivery): events were LOST for this hook; "
              f"it delivers nothing until acknowledged: ushas hooks reset {escape(s.hook.name)} "
              f"--to now|beginning|CURSOR", file=sys.stderr)
    return 1 if expired else 0


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    from ..hooks.worker import HookWorker

    if not args.poll > 0:
        raise InvalidArgument(f"--poll must be > 0 seconds, not {args.poll}")
    if not 0 < args.lease <= 86400:
        raise InvalidArgument(f"--lease must be > 0 and at most 86400 seconds, not {args.lease}")
    store = _store(ctx)
    names = [args.name] if args.name else None
    if names:
        store.get(args.name)  # a missing hook: one line, before anything runs
    worker = HookWorker(ctx.metastore, lease_s=args.lease)
    if args.once:
        result = worker.run_once(names)
        ctx.emit(result.to_json(), f"delivered {result.delivered}, dead-lettered {result.dead_lettered}, "
                                   f"redelivered {result.redelivered}, failed attempts {result.failed}"
                 + (f"; held by another worker: {', '.join(result.busy)}" if result.busy else "")
                 + (f"; CURSOR EXPIRED: {', '.join(result.expired)}" if result.expired else ""))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    print(f"ushas hooks: worker {worker.name} delivering {args.name or 'every hook'} (Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    try:
        worker.run(names, stop=stop, poll_s=args.poll)
    except KeyboardInterrupt:
        stop.set()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def cmd_remove(ctx: Context, args: argparse.Namespace) -> int:
    hook = _store(ctx).remove(args.name)
    ctx.emit(hook.to_json(), f"removed hook {hook.name}")
    return 0


def cmd_pause(ctx: Context, args: argparse.Namespace) -> int:
    hook = _store(ctx).set_paused(args.name, args.paused)
    ctx.emit(hook.to_json(), f"hook {hook.name} {'paused' if hook.paused else 'resumed'}")
    return 0


def cmd_deliveries(ctx: Context, args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 100_000:
        raise InvalidArgument(f"--limit must be 1..100000, not {args.limit}")
    rows = [d.to_json() for d in _store(ctx).deliveries(args.name, args.limit)]
    ctx.table(rows, ["cursor", "status", "type", "object", "attempts", "at", "delivery_id"])
    return 0


def cmd_dead(ctx: Context, args: argparse.Namespace) -> int:
    rows = [d.to_json(with_payload=args.events) for d in _store(ctx).dead_letters(args.name)]
    ctx.table(rows, ["cursor", "attempts", "dead_at", "retry", "last_error"])
    return 0


def cmd_dead_action(ctx: Context, args: argparse.Namespace) -> int:
    store = _store(ctx)
    if args.cursors and args.all:
        raise InvalidArgument("give dead letter cursors or --all, not both")
    fn = store.retry if args.verb == "retry" else store.skip
    count = fn(args.name, args.cursors, all_=args.all)
    what = "marked for retry (the worker delivers them)" if args.verb == "retry" else "skipped"
    ctx.emit({"hook": args.name, args.verb: count}, f"{count} dead letters {what}")
    return 0


def cmd_reset(ctx: Context, args: argparse.Namespace) -> int:
    cursor = _store(ctx).reset(args.name, args.to)
    ctx.emit({"hook": args.name, "cursor": cursor}, f"hook {args.name}: cursor {cursor}")
    return 0


__all__ = ["register"]
