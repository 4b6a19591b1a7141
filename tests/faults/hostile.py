"""The hostile values and what each input slot must do with them (``tests/`` is on ``sys.path``).

An outcome is ``EXACT`` (stored and read back exactly), ``LOWER`` (an object name: stored and read
back lower-cased, as Spark does), ``NULL`` (a partition value: Hive's default partition is NULL) or
``Refused(text)`` (refused with an error whose message contains ``text``; nothing in the store changes).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Refused:
    text: str


EXACT, LOWER, NULL = "exact", "lower", "null"

VALUES: dict[str, str] = {
    "nul": "a\x00b",
    "slash": "a/b",
    "quotes": "a'b\"c`d",
    "newline": "a\nb",
    "rtl": "a\u202eb\u200f",
    "emoji": "a\U0001F600b",
    "10kB": "x" * 10_000,
    "100kB": "y" * 100_000,
    "nfc": "caf\u00e9",
    "nfd": "cafe\u0301",
    "hive_default": "__HIVE_DEFAULT_PARTITION__",
    "control": "a\x07b",
    "tab": "a\tb",
}

_CONTROL = Refused("control character")
#: catalog, database, table and view names
NAME = {"nul": _CONTROL, "slash": Refused("path separator"), "newline": _CONTROL, "control": _CONTROL,
        "tab": _CONTROL, "10kB": Refused("the maximum is 255"), "100kB": Refused("the maximum is 255"),
        "hive_default": LOWER}
#: ... as Spark reports the refusals: its own catalog's error class
SPARK_NAME = {k: (Refused("INVALID_SCHEMA_OR_RELATION_NAME") if isinstance(v, Refused) and "255" not in v.text else v)
              for k, v in NAME.items()}
#: top-level column names (a partition column is a directory name too)
COLUMN = {"nul": _CONTROL, "slash": Refused("path separator"), "newline": _CONTROL, "control": _CONTROL,
          "tab": _CONTROL, "10kB": Refused("the maximum is 3,000"), "100kB": Refused("the maximum is 3,000")}
#: object and column comments (also USER metadata ``comment``: at most 4096 bytes)
COMMENT = {"nul": Refused("NUL"), "10kB": Refused("comment_bytes"), "100kB": Refused("comment_bytes")}
#: a column comment is checked as a metadata value (the same 4,096-byte limit)
COLUMN_COMMENT = {"nul": Refused("NUL"), "10kB": Refused("the maximum is 4096"), "100kB": Refused("the maximum is 4096")}
#: property keys (catalog, database, table, view, partition): no NUL, at most 4,096 bytes
PROPERTY_KEY = {"nul": Refused("NUL"), "10kB": Refused("property_key_bytes"),
                "100kB": Refused("property_key_bytes")}
#: property values (the object's own record: any size, no NUL)
PROPERTY_VALUE = {"nul": Refused("NUL")}
#: string partition values
PARTITION_VALUE = {"10kB": Refused("the maximum is 4,000"), "100kB": Refused("the maximum is 4,000"),
                   "hive_default": NULL}
#: USER tags
TAG = {"nul": _CONTROL, "newline": _CONTROL, "control": _CONTROL, "tab": _CONTROL,
       "10kB": Refused("the maximum is 256"), "100kB": Refused("the maximum is 256")}
#: USER metadata values
META_VALUE = {"nul": Refused("NUL"), "10kB": Refused("the maximum is 4096"), "100kB": Refused("the maximum is 4096")}
#: search queries: answered (no hit is fine) or refused
SEARCH = {"nul": Refused("NUL")}


def expected(table: dict[str, object], value_id: str) -> object:
    return table.get(value_id, EXACT)


def cases(table: dict[str, object]) -> list[tuple[str, object]]:
    return [(v, expected(table, v)) for v in VALUES]
