"""Comparing the ``ushas`` catalog with Spark's session catalog statement by statement.

The same SQL runs twice in one Spark application, once with the session catalog as the current
catalog and once with ``ushas``, each in a fresh database of the same name; every statement's
outcome (:class:`Outcome`: its result rows, or its error class) is normalised for what legitimately
differs between two catalogs (the catalog's name, data locations, times, sizes) and compared.
``bench/spark_conformance.py`` runs Spark's own sql-tests ``inputs/`` files through it and
``tests/spark/test_conformance.py`` this project's own DDL statements.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

#: the session catalog's name, what ``ushas`` is shown as after normalisation
SESSION_CATALOG = "spark_catalog"

_ERROR_CLASS = re.compile(r"^\s*\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")
_LOCATION = re.compile(r"(?:file|hdfs|s3a?|gs|abfss?):/[^\s'\"`,)\]}]*")
_TIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d \S+ \d{4}\b"
                   r"|\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b|\bUNKNOWN\b")
#: sizes, and file counts (a write here makes one file per partition, Spark's one per task: compatibility.py)
_BYTES = re.compile(r"\b\d+ bytes\b|(?<=totalSize=)\d+|(?<=numFiles=)\d+")
_TIME_ROWS = {"Created Time", "Last Access", "Partition Created Time", "Partition Last Access"}
_LOCATION_ROWS = {"Location"}
#: what a Hive metastore adds to every object (its serde, a DDL time, storage details): the session
#: catalog on Hive shows them, Spark's in-memory session catalog and any V2 catalog do not
_HIVE_ROWS = {"Serde Library", "InputFormat", "OutputFormat"}
_HIVE_ITEMS = re.compile(r"(?:,\s*)?'?(?:transient_lastDdlTime|serialization\.format)'?\s*[=:]\s*'?\d+'?"
                         r"|(?:,\s*)?path=<location>")
_EMPTY_LISTING = re.compile(r"^\[\s*,?\s*\]$|^\{\s*,?\s*\}$")
_EMPTY_TBLPROPERTIES = re.compile(r"\nTBLPROPERTIES \(\s*,?\s*\)")
#: SHOW TABLE EXTENDED's information text: the Hive serde lines and the listings left empty once the Hive
#: items are gone (as the rows of DESCRIBE are normalised)
_HIVE_LINES = re.compile(r"^(?:(?:Serde Library|InputFormat|OutputFormat): .*|[A-Z][A-Za-z ]*: \[\])\n", re.MULTILINE)
_ORDERED = re.compile(r"^\s*(?:DESC|DESCRIBE|SHOW\s+CREATE|EXPLAIN)\b|\bORDER\s+BY\b", re.IGNORECASE)


@dataclass(frozen=True)
class Outcome:
    """What one statement gave: ``error`` (its error class, or the exception's type when it has
    none) or ``columns`` and ``rows`` (each row's values as normalised text)."""

    error: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def brief(self) -> str:
        if self.error is not None:
            return f"error {self.error}: {self.message[:200]}"
        shown = "; ".join(" | ".join(r) for r in self.rows[:6])
        return f"{len(self.rows)} row(s) {list(self.columns)}: {shown[:300]}"


@dataclass(frozen=True)
class Comparison:
    """One statement under both catalogs: ``same``, or ``kind`` names how they differ."""

    statement: str
    spark: Outcome
    ushas: Outcome

    @property
    def same(self) -> bool:
        return self.kind == "same"

    @property
    def kind(self) -> str:
        s, u = self.spark, self.ushas
        if s.ok and u.ok:
            return "same" if (s.columns, s.rows) == (u.columns, u.rows) else "different result"
        if not s.ok and not u.ok:
            return "same" if s.error == u.error else "different error class"
        return "only ushas fails" if s.ok else "only ushas succeeds"


@dataclass
class Runner:
    """Runs statements in one catalog of a Spark session: ``catalog`` is made the current one and
    ``database`` is created fresh in it (``start``) and dropped with everything in it (``stop``)."""

    spark: Any
    catalog: str
    database: str
    other_names: Sequence[str] = field(default_factory=tuple)

    def start(self) -> None:
        self.spark.conf.set("spark.sql.defaultCatalog", self.catalog)
        self.spark.sql(f"DROP DATABASE IF EXISTS {self.catalog}.{self.database} CASCADE")
        self.spark.sql(f"CREATE DATABASE {self.catalog}.{self.database}")
        self.spark.sql(f"USE {self.catalog}.{self.database}")

    def stop(self) -> None:
        try:
            self.spark.sql(f"USE {self.catalog}.{self.database}")
            self.spark.sql(f"DROP DATABASE IF EXISTS {self.catalog}.{self.database} CASCADE")
        except Exception:  # noqa: BLE001 - best effort: the statements may have left anything
            pass

    def run(self, statement: str) -> Outcome:
        ordered = bool(_ORDERED.search(statement))
        try:
            df = self.spark.sql(statement)
            columns = tuple(df.columns)
            rows = [tuple(self.normalise(v) for v in row) for row in df.collect()]
        except Exception as e:  # noqa: BLE001 - the outcome is the error
            return Outcome(error=error_class(e), message=self.normalise(error_message(e)))
        if not ordered:
            rows.sort()
        return Outcome(columns=columns, rows=tuple(_named_rows(rows)))

    def normalise(self, value: Any) -> str:
        text = "NULL" if value is None else str(value)
        if text.startswith("{") and '"table_name"' in text:
            text = _without_hive_json(text)
        if self.catalog != SESSION_CATALOG:
            text = re.sub(rf"\b{re.escape(self.catalog)}\b", SESSION_CATALOG, text)
        text = _LOCATION.sub("<location>", text)
        text = _TIME.sub("<time>", text)
        text = _HIVE_ITEMS.sub("", text).replace("[, ", "[").replace("(\n  ,", "(\n ")
        text = _EMPTY_TBLPROPERTIES.sub("", text)
        if "\n" in text and ": " in text:
            text = _HIVE_LINES.sub("", text)
        # the catalog's name where Spark prints it for one catalog and not for the other (views)
        text = text.replace(f"{SESSION_CATALOG}.", "")
        return _BYTES.sub(lambda m: "<n> bytes" if m.group(0).endswith("bytes") else "<n>", text)


def _without_hive_json(text: str) -> str:
    """``DESCRIBE … AS JSON`` without what the Hive metastore adds (serde, DDL time, storage details)."""
    import json

    try:
        doc = json.loads(text)
    except ValueError:
        return text
    for key in ("serde_library", "input_format", "output_format"):
        doc.pop(key, None)
    if isinstance(doc.get("storage_properties"), dict):  # a Hive hash map: its order means nothing
        doc["storage_properties"] = dict(sorted(doc["storage_properties"].items()))
    for key, drop in (("storage_properties", ("path", "serialization.format")),
                      ("partition_parameters", ("transient_lastDdlTime",)),
                      ("table_properties", ("transient_lastDdlTime",))):
        if isinstance(doc.get(key), dict):
            for k in drop:
                doc[key].pop(k, None)
            if not doc[key]:
                doc.pop(key)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _named_rows(rows: Iterable[tuple[str, ...]]) -> Iterable[tuple[str, ...]]:
    """DESCRIBE's key / value rows whose value is a time or a location: the value is normalised."""
    for row in rows:
        if row and row[0] in _HIVE_ROWS:
            continue
        if len(row) >= 2 and _EMPTY_LISTING.match(row[1]):
            continue
        if len(row) == 2 and row[0] == "transient_lastDdlTime":
            continue
        if len(row) >= 2 and row[0] in ("Partition Parameters", "Storage Properties") and row[1].startswith("["):
            # a Hive metastore's parameters (and serde properties) are a hash map: their order means nothing
            items = sorted(i for i in row[1][1:-1].split(", ") if i)
            yield (row[0], "[" + ", ".join(items) + "]", *row[2:])
            continue
        if len(row) >= 2 and row[0] in _TIME_ROWS:
            yield (row[0], "<time>", *row[2:])
        elif len(row) >= 2 and row[0] in _LOCATION_ROWS:
            yield (row[0], "<location>", *row[2:])
        else:
            yield row


def error_class(e: BaseException) -> str:
    """Spark's error class of ``e`` (``getCondition``), else the ``[CLASS]`` its message starts
    with, else the name of the JVM exception or of the Python one."""
    get = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    if get is not None:
        try:
            found = get()
        except Exception:  # noqa: BLE001
            found = None
        if found:
            return str(found)
    message = error_message(e)
    m = _ERROR_CLASS.match(message)
    if m:
        return m.group(1)
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            return str(java.getClass().getName())
        except Exception:  # noqa: BLE001
            pass
    return type(e).__name__


def error_message(e: BaseException) -> str:
    get = getattr(e, "getMessage", None)
    if get is not None:
        try:
            return str(get())
        except Exception:  # noqa: BLE001
            pass
    return str(e)


def compare(spark: Any, statements: Sequence[str], database: str, catalog: str = "ushas",
            confs: dict[str, str] | None = None) -> list[Comparison]:
    """Every statement of ``statements`` under the session catalog, then under ``catalog``, each in
    a fresh session of ``spark`` (temporary views and settings apart) with a fresh ``database``."""
    _quiet(spark)
    outcomes = []
    for name in (SESSION_CATALOG, catalog):
        session = spark.newSession()
        for key, value in (confs or {}).items():
            session.conf.set(key, value)
        runner = Runner(session, name, database)
        runner.start()
        try:
            outcomes.append([runner.run(s) for s in statements])
        finally:
            runner.stop()
    return [Comparison(s, a, b) for s, a, b in zip(statements, outcomes[0], outcomes[1])]


def _quiet(spark: Any) -> None:
    """PySpark logs every failed statement's error with its stack (its ``SQLQueryContextLogger``):
    the comparison expects failures and reports them itself."""
    import logging

    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - an older PySpark logs nothing of the kind
        return
    PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL + 1)
