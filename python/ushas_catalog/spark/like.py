"""``CREATE TABLE t LIKE s [USING fmt] [LOCATION '…'] [TBLPROPERTIES (…)]`` into a catalog table.

Spark 4.3 plans it as ``CreateTableLikeExec``, which calls the target catalog's ``createTableLike`` with
the source's columns (with their comments) and partitioning (bucketing included), and the statement's own
properties (``provider`` when USING is given, ``location``, TBLPROPERTIES, the owner); ``TableCatalog``'s
default refuses (``<catalog> does not support CREATE TABLE LIKE``). What the new table takes from the
source is what Spark's session catalog takes (``CreateTableLikeCommand``): its format unless USING names
one (a view's: the default data source), the format's options; not its table properties nor its comment.
A location makes the table external, as there.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from .tables import FORMATS, OPTION_PREFIX

#: Hive serde / input format (lower case) -> the catalog's format
_HIVE_FORMATS = (("parquet", "parquet"), ("orc", "orc"), ("jsonserde", "json"), ("opencsvserde", "csv"),
                 ("avro", "avro"))
#: Spark's default data source (spark.sql.sources.default): the format of a table made LIKE a view
DEFAULT_FORMAT = "parquet"


def source_format(like: dict[str, Any]) -> str:
    """The format a table LIKE the source ``like`` (as the shim describes it) gets when USING is not given."""
    if like.get("type") == "VIEW":
        return DEFAULT_FORMAT
    props = like.get("properties") or {}
    provider = str(like.get("provider") or props.get("provider") or DEFAULT_FORMAT).lower()
    if provider == "hive":
        described = f"{like.get('serde') or ''} {like.get('input_format') or ''}".lower()
        for key, fmt in _HIVE_FORMATS:
            if key in described:
                return fmt
        raise InvalidArgument(f"cannot create a table LIKE the Hive table {like.get('name')}: its storage "
                              f"({like.get('serde') or like.get('input_format') or 'unknown'}) is no format of "
                              f"this catalog; add USING {' | '.join(sorted(FORMATS))}")
    if provider not in FORMATS:
        raise InvalidArgument(f"cannot create a table LIKE {like.get('name')}: its format {provider!r} is no format "
                              f"of this catalog; add USING {' | '.join(sorted(FORMATS))}")
    return provider


def like_request(r: dict[str, Any]) -> dict[str, Any]:
    """The ``create_table`` request of a ``create_table_like`` one."""
    like = dict(r.get("like") or {})
    props = dict(r.get("properties") or {})
    if not props.get("provider"):
        props["provider"] = source_format(like)
    hive = str(like.get("provider") or (like.get("properties") or {}).get("provider") or "").lower() == "hive"
    if like.get("type") != "VIEW" and not hive:  # a Hive table's serde properties are no options of a format
        options = {k: v for k, v in (like.get("properties") or {}).items() if k.startswith(OPTION_PREFIX)}
        options.update({OPTION_PREFIX + k: v for k, v in (like.get("storage_properties") or {}).items()})
        for key, value in options.items():
            props.setdefault(key, value)
    out = {k: v for k, v in r.items() if k != "like"}
    out["properties"] = props
    return out


__all__ = ["DEFAULT_FORMAT", "like_request", "source_format"]
