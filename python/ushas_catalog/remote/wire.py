"""The value codec of the remote metastore and remote lineage: Python values <-> JSON, both ways.

JSON carries what it can as it is; the rest is a one-key object: ``{"$tuple": [...]}``, ``{"$set": ...}``,
``{"$frozenset": ...}``, ``{"$dict": [[k, v], ...]}`` (keys that are not strings, or start with ``$``),
``{"$bytes": base64}``, ``{"$uuid": ...}``, ``{"$datetime"|"$date"|"$decimal": text}``, an enum member
``{"$enum": "module.Class", "name": ...}``, a dataclass instance ``{"$dc": "module.Class", "fields":
{...}}`` and a NamedTuple ``{"$nt": "module.Class", "fields": {...}}``. Decoding builds enums and dataclasses **only** of the packages of :func:`allowed` (the
project's values: names, infos, partitions, lineage runs): a peer cannot make any other class, call
anything, or read a file. Anything else (a function, a generator of a peer) cannot be encoded:
:class:`~ushas_catalog.errors.InvalidArgument`.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import importlib
import uuid
from typing import Any

from ..errors import InvalidArgument

#: the packages whose dataclasses and enums a decoded value may be
ALLOWED = ("ushas_catalog.model.", "ushas_catalog.catalog.", "ushas_catalog.changes.", "ushas_catalog.metadata.",
           "ushas_catalog.governance.", "ushas_catalog.data.", "ushas_catalog.bulk")


def allowed() -> tuple[str, ...]:
    """:data:`ALLOWED` and the packages the extensions exchange (``wire_packages``: the lineage extension's
    ``lineage.``, whose captured runs a remote-mode driver sends)."""
    from ..extensions import extensions

    return ALLOWED + tuple(extensions().wire_packages)
#: nesting deeper than this is refused (a hostile document cannot exhaust the stack)
MAX_DEPTH = 64


def encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidArgument("a value nested too deep to send")
    d = depth + 1
    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        return {"$enum": _name_of(type(value)), "name": value.name}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$dc": _name_of(type(value)),
                "fields": {f.name: encode(getattr(value, f.name), d) for f in dataclasses.fields(value)}}
    if isinstance(value, list):
        return [encode(v, d) for v in value]
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a NamedTuple: its type too
        names: tuple[str, ...] = getattr(type(value), "_fields")
        return {"$nt": _name_of(type(value)), "fields": {f: encode(getattr(value, f), d) for f in names}}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, d) for v in value]}
    if isinstance(value, frozenset):
        return {"$frozenset": [encode(v, d) for v in value]}
    if isinstance(value, set):
        return {"$set": [encode(v, d) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v, d) for k, v in value.items()}
        return {"$dict": [[encode(k, d), encode(v, d)] for k, v in value.items()]}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    raise InvalidArgument(f"a {type(value).__name__} cannot be sent to or from the catalog service")


def _name_of(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _class(name: Any) -> type:
    packages = allowed()
    if not isinstance(name, str) or not name.startswith(packages):
        raise InvalidArgument(f"the value type {name!r} is not one the catalog service exchanges")
    module, _, qual = name.rpartition(".")
    while module and module.startswith(packages):
        try:
            found: Any = importlib.import_module(module)
            for part in qual.split("."):
                found = getattr(found, part)
            if isinstance(found, type):
                return found
            break
        except ImportError:
            module, _, head = module.rpartition(".")
            qual = f"{head}.{qual}"
        except AttributeError:
            break
    raise InvalidArgument(f"unknown value type {name!r}")


def decode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidArgument("a value nested too deep")
    d = depth + 1
    if isinstance(value, list):
        return [decode(v, d) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 or "$enum" in value or "$dc" in value or "$nt" in value:
        (key, body), = list(value.items())[:1]
        if key == "$tuple":
            return tuple(decode(v, d) for v in body)
        if key == "$set":
            return {decode(v, d) for v in body}
        if key == "$frozenset":
            return frozenset(decode(v, d) for v in body)
        if key == "$dict":
            return {decode(k, d): decode(v, d) for k, v in body}
        if key == "$bytes":
            return base64.b64decode(body)
        if key == "$uuid":
            return uuid.UUID(str(body))
        if key == "$datetime":
            return dt.datetime.fromisoformat(str(body))
        if key == "$date":
            return dt.date.fromisoformat(str(body))
        if key == "$decimal":
            return decimal.Decimal(str(body))
        if key == "$enum":
            cls = _class(body)
            if not issubclass(cls, enum.Enum):
                raise InvalidArgument(f"{body!r} is not an enum")
            return cls[str(value.get("name"))]
        if key == "$dc":
            return _dataclass(_class(body), value.get("fields"), d)
        if key == "$nt":
            return _named_tuple(_class(body), value.get("fields"), d)
    return {k: decode(v, d) for k, v in value.items()}


def _named_tuple(cls: type, fields: Any, depth: int) -> Any:
    if not (issubclass(cls, tuple) and hasattr(cls, "_fields")) or not isinstance(fields, dict):
        raise InvalidArgument(f"{cls.__name__} is not a value the catalog service exchanges")
    unknown = set(fields) - set(getattr(cls, "_fields"))
    if unknown:
        raise InvalidArgument(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    try:
        return cls(**{k: decode(v, depth) for k, v in fields.items()})
    except TypeError as exc:
        raise InvalidArgument(f"{cls.__name__}: {exc}") from None


def _dataclass(cls: type, fields: Any, depth: int) -> Any:
    if not dataclasses.is_dataclass(cls) or not isinstance(fields, dict):
        raise InvalidArgument(f"{cls.__name__} is not a value the catalog service exchanges")
    init: dict[str, Any] = {}
    later: dict[str, Any] = {}
    declared = {f.name: f for f in dataclasses.fields(cls)}
    for name, raw in fields.items():
        f = declared.get(name)
        if f is None:
            raise InvalidArgument(f"{cls.__name__} has no field {name!r}")
        (init if f.init else later)[name] = decode(raw, depth)
    try:
        obj = cls(**init)
    except TypeError as exc:
        raise InvalidArgument(f"{cls.__name__}: {exc}") from None
    for name, v in later.items():
        object.__setattr__(obj, name, v)
    return obj


__all__ = ["ALLOWED", "allowed", "decode", "encode"]
