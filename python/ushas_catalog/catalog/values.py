"""Argument checks and small helpers every catalog operation module shares."""
from __future__ import annotations

import datetime as dt
import getpass
import os
import time
from typing import Any, Mapping, TypeVar

from google.protobuf.message import Message

from .. import records as rec
from ..errors import Conflict, InvalidArgument
from ..model.value_limits import check_properties, check_text
from ..model.names import TableName

FORMATS = ("parquet", "orc", "json", "csv")
#: Spark's reserved table properties, kept in their own fields, never in ``properties``
RESERVED_PROPERTIES = ("location", "comment", "owner", "provider", "external")


class Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "leave unchanged" for optional arguments where ``None`` means "clear"
UNSET: Any = Unset()

M = TypeVar("M", bound=Message)


def version_answer(version: int) -> tuple[dict[str, Any], int | None]:
    return {"version": version}, version


def version_of(answer: dict[str, Any]) -> int:
    return int(answer["version"])


def now_micros() -> int:
    return time.time_ns() // 1000


def default_user() -> str:
    try:
        return os.environ.get("USHAS_USER") or getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database entry (containers)
        return "unknown"


def check_props(value: Mapping[str, Any] | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{what} must be a mapping of string -> string, not {type(value).__name__}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k:
            raise InvalidArgument(f"{what}: keys must be non-empty strings, not {k!r}")
        if not isinstance(v, str):
            raise InvalidArgument(f"{what}: the value of {k!r} must be a string, not {type(v).__name__}")
        if "\x00" in k or "\x00" in v:
            raise InvalidArgument(f"{what}: {k[:40]!r} contains a NUL character")
        out[k] = v
    check_properties(out, what)
    return out


def check_str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        check_text(value, what)
        return value
    raise InvalidArgument(f"{what} must be a string or None, not {type(value).__name__}")


def check_format(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in FORMATS:
        raise InvalidArgument(f"unknown table format {value!r}: expected one of {', '.join(FORMATS)}")
    return value.lower()


def check_count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"partition {what} must be an integer >= 0 or None, not {value!r}")
    return value


def copy_record(message: M) -> M:
    out = type(message)()
    out.CopyFrom(message)
    return out


def exists_message(tn: TableName, entry: rec.ObjectName) -> str:
    what = {rec.ObjectKind.VIEW: "a view", rec.ObjectKind.OBJECT: "a versioned object"}.get(entry.kind, "a table")
    return f"{tn} already exists as {what}"


def cutoff_micros(older_than: dt.timedelta | None) -> int | None:
    return None if older_than is None else now_micros() - int(older_than.total_seconds() * 1_000_000)


def give_paths(out: list[str] | None, found: list[str]) -> None:
    """Hands a transaction's findings to the caller's list (each retry starts it again)."""
    if out is not None:
        out[:] = found


def check_expected(expected: int | None) -> None:
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 1):
        raise InvalidArgument(f"expected_version must be an integer >= 1 or None, not {expected!r}")


def expect_version(what: str, name: Any, actual: int, expected: int | None) -> None:
    """Optimistic concurrency: the object must still be at ``expected`` (checked inside
    the transaction, so every retry checks again)."""
    if expected is not None and actual != expected:
        raise Conflict(f"{what} {name} is at version {actual}, not the expected {expected}",
                       object=str(name), expected_version=expected, actual_version=actual)
