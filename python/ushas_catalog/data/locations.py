"""Where tables' data lives, as paths: which locations overlap, and when a managed table's
default location is not free.

A table whose location the user did not give (a managed table at
``<database location>/<table>``) must have that location to itself: it is refused when the
location equals, lies inside or holds another table's location (:func:`overlaps`), and, like
Spark's own catalog (``LOCATION_ALREADY_EXISTS``), when the directory already exists and is
not empty (:func:`occupied`; checked for local paths, which Python can see) and no dropped
table of that name keeps its data there (until purge). A location the user gives explicitly
(``LOCATION '...'``, an external table) is taken as given.
"""
from __future__ import annotations

import os
from typing import Iterable
from urllib.parse import unquote, urlparse

from ..errors import LocationInUse, SparkError, spark_id


def normalized(location: str) -> str:
    """``location`` without trailing slashes, local paths as ``file:/abs/path``."""
    text = location.strip()
    if text.startswith("file:///"):
        text = "file:/" + text[len("file:///"):]
    elif text.startswith("file://localhost/"):
        text = "file:/" + text[len("file://localhost/"):]
    elif text.startswith("/"):
        text = "file:" + text
    while len(text) > 1 and text.endswith("/") and not text.endswith(":/"):
        text = text[:-1]
    return text


def overlaps(a: str, b: str) -> bool:
    """Whether locations ``a`` and ``b`` are the same directory or one is inside the other."""
    if not a or not b:
        return False
    x, y = normalized(a), normalized(b)
    return x == y or x.startswith(y.rstrip("/") + "/") or y.startswith(x.rstrip("/") + "/")


def dotted(path: str) -> bool:
    """Whether ``path`` has a ``.`` or ``..`` segment (a prefix check would misplace it: never a registered file)."""
    return "/../" in path or "/./" in path or path.endswith(("/..", "/."))


def outside(paths: Iterable[str], roots: Iterable[str]) -> list[str]:
    """The ``paths`` that lie under none of ``roots`` (a table's, a partition's location), or have a ``.`` /
    ``..`` segment: a prefix check per path, both sides :func:`normalized`."""
    exact = {normalized(r) for r in roots if r}
    prefixes = tuple(r.rstrip("/") + "/" for r in exact)
    out = []
    for p in paths:
        n = normalized(p)
        if not (n in exact or n.startswith(prefixes)) or dotted(n):
            out.append(p)
    return out


def local_path(location: str) -> str | None:
    """The local filesystem path of a ``file:`` (or bare absolute) location, else ``None``."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return unquote(parsed.path) or None
    if not parsed.scheme and location.startswith("/"):
        return location
    return None


def occupied(location: str) -> bool:
    """Whether a local ``location`` exists and is not an empty directory (unknown, so
    ``False``, for other filesystems)."""
    path = local_path(location)
    if path is None or not os.path.lexists(path):
        return False
    if not os.path.isdir(path):
        return True
    with os.scandir(path) as entries:
        return any(True for _ in entries)


def location_in_use(table: tuple[str, ...], location: str, why: str) -> LocationInUse:
    """The error for a managed table ``table`` (catalog, database, name) whose default
    ``location`` is not free (Spark's ``LOCATION_ALREADY_EXISTS``)."""
    return LocationInUse(f"managed table {'.'.join(table)} cannot have its default location {location}: {why}; "
                         f"pick another name, give the table a LOCATION, or remove what is there first",
                         spark=SparkError("LOCATION_ALREADY_EXISTS",
                                          {"identifier": spark_id(*table), "location": f"'{location}'"},
                                          runtime=True),
                         table=".".join(table), location=location)


def check_free(table: tuple[str, ...], location: str) -> None:
    """:func:`location_in_use` when ``location`` exists and is not empty (see :func:`occupied`)."""
    if occupied(location):
        raise location_in_use(table, location, "that location exists and is not empty")
