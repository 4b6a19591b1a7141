"""What a hook is told: the event types of the change feed, the kinds a hook subscribes to
(``--on partitions,schema,drop``), the table pattern (``--table``) and the payload JSON
(docs/hooks.md, "The event").

One change feed event (one commit) is one delivery. Its ``type``:

================================  =========================  ================================================
type                              kinds (``--on``)           feed change
================================  =========================  ================================================
``partitions_added``              partitions                 PARTITIONS_ADDED
``partitions_replaced``           partitions                 PARTITIONS_REPLACED (added and/or dropped)
``partitions_dropped``            partitions                 PARTITIONS_DROPPED
(the three above)                 partitions                 a Spark write into a partitioned table (APPEND,
                                                             OVERWRITE PARTITIONS ...): by its partition lists
``data_written``                  data                       a write into an unpartitioned table (APPEND,
                                                             OVERWRITE, WRITE, TRUNCATE)
``created``                       schema                     CREATED
``schema_changed``                schema                     ALTERED with a new schema (ALTER TABLE ADD
                                                             COLUMNS ..., type / view schema evolution)
``replaced``                      schema, partitions         REPLACED (CREATE OR REPLACE: partitions cleared)
``altered``                       alter                      any other ALTERED (properties, comment, owner)
``renamed``                       rename                     RENAMED
``dropped`` / ``purged``          drop                       DROPPED / PURGED
``undropped``                     undrop                     UNDROPPED
================================  =========================  ================================================
"""
from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import dataclass
from typing import Any, Iterable

from ..changes.feed import Change
from ..errors import InvalidArgument

#: the version of the payload format (``payload_version`` in every event)
PAYLOAD_VERSION = 1
#: the kinds ``--on`` takes (``all``: every event)
KINDS: tuple[str, ...] = ("partitions", "data", "schema", "alter", "rename", "drop", "undrop")
#: commit operations that write an unpartitioned table's data (``Metastore.write_table_files`` / ``touch_table``)
DATA_OPERATIONS = frozenset({"APPEND", "OVERWRITE", "WRITE", "TRUNCATE"})
#: commit operations that change a schema without a schema record of their own in the event
SCHEMA_OPERATIONS = frozenset({"EVOLUTION", "TYPE EVOLUTION", "EVOLVE VIEW SCHEMA"})

_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "PARTITIONS_ADDED": ("partitions_added", ("partitions",)),
    "PARTITIONS_REPLACED": ("partitions_replaced", ("partitions",)),
    "PARTITIONS_DROPPED": ("partitions_dropped", ("partitions",)),
    "CREATED": ("created", ("schema",)),
    "REPLACED": ("replaced", ("schema", "partitions")),
    "RENAMED": ("renamed", ("rename",)),
    "DROPPED": ("dropped", ("drop",)),
    "PURGED": ("purged", ("drop",)),
    "UNDROPPED": ("undropped", ("undrop",)),
}


def parse_kinds(text: str | Iterable[str]) -> tuple[str, ...]:
    """``"partitions,schema,drop"`` (or a list) as the sorted kinds; ``all`` is every kind."""
    items = text.split(",") if isinstance(text, str) else list(text)
    kinds = {k.strip().lower() for k in items if k.strip()}
    if not kinds:
        raise InvalidArgument(f"--on needs at least one of {', '.join(KINDS)} or all")
    unknown = sorted(kinds - set(KINDS) - {"all"})
    if unknown:
        raise InvalidArgument(f"unknown event kind {unknown[0]!r} in --on: expected {', '.join(KINDS)} or all")
    return KINDS if "all" in kinds else tuple(k for k in KINDS if k in kinds)


def classify(change: Change) -> tuple[str, tuple[str, ...]]:
    """The event type of a feed change and the kinds it belongs to."""
    if change.change in _TYPES:
        return _TYPES[change.change]
    if change.added or change.dropped:  # a Spark write into a partitioned table (APPEND, OVERWRITE ...)
        if change.added and change.dropped:
            return "partitions_replaced", ("partitions",)
        return ("partitions_added" if change.added else "partitions_dropped"), ("partitions",)
    if change.operation in DATA_OPERATIONS:
        return "data_written", ("data",)
    if change.operation in SCHEMA_OPERATIONS or _schema_changed(change):
        return "schema_changed", ("schema",)
    return "altered", ("alter",)


def _schema_changed(change: Change) -> bool:
    if change.kind == "table":
        before, after = change.before.get("schema_id"), change.after.get("schema_id")
        return "TableSchema" in change.after or (before is not None and before != after)
    if change.kind == "view":
        return change.before.get("schema") != change.after.get("schema")
    return False


def check_pattern(pattern: str) -> str:
    """A ``--table`` pattern: one to three dot-separated glob parts (``cat.db.t``, ``db.*``, ``orders``)."""
    p = pattern.strip()
    if not p or len(p) > 1000 or any(ord(c) < 32 for c in p):
        raise InvalidArgument(f"invalid --table pattern {pattern[:60]!r}: expected [catalog.][database.]table "
                              f"with * ? [...] wildcards")
    if not 1 <= len(p.split(".")) <= 3 or any(not part for part in p.split(".")):
        raise InvalidArgument(f"invalid --table pattern {pattern[:60]!r}: one to three dot-separated parts")
    return p


def name_matches(pattern: str, name: str) -> bool:
    """Whether qualified ``name`` (catalog.database.table) matches ``pattern``; a pattern of fewer
    parts matches the last parts of the name. Case-insensitive (names are stored lower-case)."""
    if not pattern:
        return True
    parts, pparts = name.lower().split("."), pattern.lower().split(".")
    if len(parts) < len(pparts):
        return False
    return all(fnmatch.fnmatchcase(n, p) for n, p in zip(parts[-len(pparts):], pparts))


@dataclass(frozen=True)
class Subscription:
    """What one hook wants: kinds and a table pattern."""

    kinds: tuple[str, ...]
    table_pattern: str = ""

    def matches(self, change: Change) -> bool:
        _, kinds = classify(change)
        if not set(kinds) & set(self.kinds):
            return False
        if not self.table_pattern:
            return True
        if change.kind not in ("table", "view", "function"):
            return False  # a pattern names tables: database and catalog events do not match it
        names = {change.name, str(change.detail.get("from", "")), str(change.detail.get("to", ""))}
        return any(n and name_matches(self.table_pattern, n) for n in names)


def delivery_id(hook_id: str, cursor: str) -> str:
    """The idempotency key of one event for one hook: the same on every redelivery."""
    return f"{hook_id}:{cursor}"


def payload(change: Change, *, hook: str, hook_id: str, project: str) -> dict[str, Any]:
    """The JSON body delivered for ``change`` (docs/hooks.md, "The event")."""
    kind, kinds = classify(change)
    dropped = {p.key: p for p in change.dropped}
    added_keys = {p.key for p in change.added}
    partitions = {  # a partition both dropped and added by one commit was replaced
        "added": [p.to_json() for p in change.added if p.key not in dropped],
        "replaced": [p.to_json() for p in change.added if p.key in dropped],
        "dropped": [p.to_json() for key, p in dropped.items() if key not in added_keys],
    }
    out: dict[str, Any] = {
        "payload_version": PAYLOAD_VERSION,
        "delivery_id": delivery_id(hook_id, change.cursor),
        "hook": hook,
        "project": project,
        "cursor": change.cursor,
        "type": kind,
        "kinds": list(kinds),
        "object": {"kind": change.kind, "name": change.name, "id": change.object_id, "version": change.version},
        "operation": change.operation,
        "user": change.user,
        "committed_at": change.committed_at.astimezone(dt.timezone.utc).isoformat(),
        "partitions": partitions,
        "partitions_cleared": change.partitions_cleared,
        "purged": change.purged,
        "before": change.before,
        "after": change.after,
        "detail": change.detail,
    }
    if kind == "renamed":
        out["renamed"] = {"from": change.detail.get("from"), "to": change.detail.get("to")}
    return out


__all__ = ["PAYLOAD_VERSION", "KINDS", "Subscription", "check_pattern", "classify", "delivery_id", "name_matches",
           "parse_kinds", "payload"]
