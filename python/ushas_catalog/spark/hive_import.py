"""Import a Hive metastore into an Ushas catalog: databases, tables (schema, format,
location, properties), their partitions, and views.

The Hive side is read through Spark's own Hive client (``enableHiveSupport()``), so every
metastore Spark can talk to works: the embedded Derby one pyspark creates (``metastore_db``)
or a metastore service (``thrift://host:9083``). Two ways in:

- :class:`SparkHiveSource` over a live ``SparkSession`` — use it when a session already has the
  metastore open (embedded Derby admits one JVM at a time);
- :func:`open_hive_session` builds such a session for the CLI (``ushas import-hive``), in the
  CLI's own process.

:func:`import_hive` walks the source and writes the catalog:

- a database is created once (``if_not_exists``), with its comment, location, properties, owner;
- a table is created with Hive's schema (partition columns included, last, as Spark has them),
  format, location, comment, owner and properties (Hive's bookkeeping properties dropped); every
  imported table is **external**: its files stay Hive's, dropping it in Ushas never deletes them.
  Then its partitions are added (``if_not_exists``) in one ``add_partitions`` call (a big table's
  staged in chunks and published at once: :mod:`ushas_catalog.bulk`);
- re-running is safe: an existing table with the same definition only gets the partitions it
  lacks; an existing table with a different definition is listed and left as it is;
- a table that cannot be imported (a format the catalog does not store, such as Hive text or
  Avro tables, a schema or partition value the catalog refuses, a table Hive cannot describe) is
  listed with the reason and the import goes on. A new table whose partitions fail is purged
  again, so no half-imported table stays behind.
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol
from urllib.parse import urlsplit

from ..errors import AlreadyExists, InvalidArgument, StoreUnavailable, UshasError
from ..model.partitions import Partition

#: Hive / Spark bookkeeping properties that are not the table's own
DROPPED_PROPERTIES = ("transient_lastDdlTime", "last_modified_by", "last_modified_time", "numFiles", "numRows",
                      "totalSize", "rawDataSize", "COLUMN_STATS_ACCURATE", "numFilesErasureCoded")
#: the property naming where an imported table came from
SOURCE_PROPERTY = "ushas.import.source"
#: the Hive table type (MANAGED / EXTERNAL) of an imported table
TYPE_PROPERTY = "ushas.import.hive_table_type"
#: log4j of the import's Spark driver: errors only, on stderr (no startup chatter)
QUIET_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
#: Hive provider / serde -> the catalog's format
_SERDE_FORMATS = (("parquet", "parquet"), ("orc", "orc"), ("jsonserde", "json"), ("opencsvserde", "csv"))


# ---- what is read from Hive -------------------------------------------------------------
@dataclass(frozen=True)
class HiveDatabase:
    name: str
    comment: str | None = None
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    owner: str | None = None


@dataclass(frozen=True)
class HivePartition:
    spec: dict[str, str]
    location: str | None = None
    files: int | None = None
    bytes: int | None = None
    rows: int | None = None


@dataclass(frozen=True)
class HiveTable:
    database: str
    name: str
    table_type: str  # MANAGED | EXTERNAL | VIEW
    schema: dict[str, Any]  # Spark StructType JSON, partition columns included
    partition_columns: list[str] = field(default_factory=list)
    provider: str | None = None
    input_format: str | None = None
    serde: str | None = None
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    owner: str | None = None
    view_text: str | None = None
    #: CLUSTERED BY ... INTO n BUCKETS: {"num_buckets", "columns", "sort_columns"} (None: not bucketed)
    bucketing: dict[str, Any] | None = None

    @property
    def qualified(self) -> str:
        return f"{self.database}.{self.name}"


class HiveSource(Protocol):
    """What the importer needs of a Hive metastore."""

    def databases(self) -> list[HiveDatabase]: ...

    def tables(self, database: str) -> list[str]: ...

    def table(self, database: str, name: str) -> HiveTable: ...

    def partitions(self, database: str, name: str) -> Iterator[HivePartition]: ...


def catalog_format(table: HiveTable) -> str | None:
    """The catalog format a Hive table's data is in, or None when the catalog cannot hold it."""
    provider = (table.provider or "").lower()
    if provider in ("parquet", "orc", "json", "csv"):
        return provider
    if provider not in ("", "hive"):
        return None  # delta, avro, jdbc, ...: a data source the catalog does not store
    described = f"{table.serde or ''} {table.input_format or ''}".lower()
    for needle, fmt in _SERDE_FORMATS:
        if needle in described:
            return fmt
    return None


def storage_name(table: HiveTable) -> str:
    """A short name of a Hive table's storage, for messages."""
    if table.provider and table.provider.lower() != "hive":
        return table.provider
    for text in (table.serde, table.input_format):
        if text:
            return text.rsplit(".", 1)[-1]
    return "unknown"


# ---- reading Hive through Spark --------------------------------------------------------------
class SparkHiveSource:
    """A Hive metastore read through a SparkSession's external catalog (Hive client)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._jvm = spark._jvm
        state = spark._jsparkSession.sessionState()
        self._external = state.catalog().externalCatalog()
        self._conv = self._jvm.scala.jdk.javaapi.CollectionConverters

    def _list(self, seq: Any) -> list[Any]:
        return list(self._conv.asJava(seq))

    def _map(self, m: Any) -> dict[str, str]:
        return {str(k): str(v) for k, v in dict(self._conv.asJava(m)).items()}

    @staticmethod
    def _opt(option: Any) -> Any:
        return option.get() if option.isDefined() else None

    def databases(self) -> list[HiveDatabase]:
        out = []
        for name in self._list(self._external.listDatabases()):
            db = self._external.getDatabase(name)
            props = self._map(db.properties())
            owner = props.pop("owner", None)
            out.append(HiveDatabase(str(name), str(db.description()) or None, str(db.locationUri().toString()),
                                    props, owner))
        return out

    def tables(self, database: str) -> list[str]:
        return sorted(str(t) for t in self._list(self._external.listTables(database)))

    def table(self, database: str, name: str) -> HiveTable:
        ct = self._external.getTable(database, name)
        storage = ct.storage()
        location = self._opt(storage.locationUri())
        comment = self._opt(ct.comment())
        view_text = self._opt(ct.viewText())
        return HiveTable(
            database=database, name=name, table_type=str(ct.tableType().name()),
            schema=json.loads(ct.schema().json()),
            partition_columns=[str(c) for c in self._list(ct.partitionColumnNames())],
            provider=_str_or_none(self._opt(ct.provider())),
            input_format=_str_or_none(self._opt(storage.inputFormat())),
            serde=_str_or_none(self._opt(storage.serde())),
            location=str(location.toString()) if location is not None else None,
            properties=self._map(ct.properties()), comment=_str_or_none(comment),
            owner=str(ct.owner()) or None, view_text=_str_or_none(view_text), bucketing=self._bucketing(ct))

    def _bucketing(self, ct: Any) -> dict[str, Any] | None:
        spec = self._opt(ct.bucketSpec())
        if spec is None:
            return None
        return {"num_buckets": int(spec.numBuckets()), "columns": [str(c) for c in self._list(spec.bucketColumnNames())],
                "sort_columns": [str(c) for c in self._list(spec.sortColumnNames())]}

    def partitions(self, database: str, name: str) -> Iterator[HivePartition]:
        parts = self._external.listPartitions(database, name, self._jvm.scala.Option.empty())
        for p in self._list(parts):
            params = self._map(p.parameters())
            location = self._opt(p.storage().locationUri())
            yield HivePartition(spec=self._map(p.spec()),
                                location=str(location.toString()) if location is not None else None,
                                files=_int_or_none(params.get("numFiles")),
                                bytes=_int_or_none(params.get("totalSize")),
                                rows=_int_or_none(params.get("numRows")))


def _str_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


def _int_or_none(text: str | None) -> int | None:
    try:
        value = int(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value >= 0 else None


# ---- opening a session for the CLI ------------------------------------------------------------
@dataclass(frozen=True)
class HiveConnection:
    """Where the CLI's Spark session finds the metastore: a Derby directory or a thrift URI."""

    metastore_db: Path | None = None
    thrift: str | None = None
    warehouse: Path | None = None

    def validate(self) -> None:
        if (self.metastore_db is None) == (self.thrift is None):
            raise InvalidArgument("give either --metastore-db PATH or --thrift URI")
        if self.thrift is not None:
            self.endpoints()
        if self.metastore_db is not None:
            db = self.metastore_db
            if not db.is_dir():
                raise InvalidArgument(f"no Hive metastore at {db}: not a directory")
            if not (db / "service.properties").is_file() or not (db / "seg0").is_dir():
                raise InvalidArgument(f"{db} is not a Derby database (pyspark's metastore_db directory)")

    def endpoints(self) -> list[tuple[str, int]]:
        """(host, port) of every service ``--thrift`` names: ``thrift://host:port``, or several
        of them comma-separated (as ``hive.metastore.uris`` takes them)."""
        out = []
        for uri in (self.thrift or "").split(","):
            uri = uri.strip()
            parsed = urlsplit(uri)
            try:
                port = parsed.port
            except ValueError:
                port = None
            if parsed.scheme != "thrift" or not parsed.hostname or port is None or parsed.path not in ("", "/"):
                raise InvalidArgument(f"--thrift takes thrift://host:port URIs (comma-separated), not {uri!r}")
            out.append((parsed.hostname, port))
        return out

    def check_reachable(self, timeout: float = 5.0) -> None:
        """Fail with one line, before any Spark starts, when no metastore service ``--thrift``
        names accepts a connection (Hive's own client would retry for a minute, then fail with
        a stack trace)."""
        if self.thrift is None:
            return
        reasons = []
        for host, port in self.endpoints():
            try:
                with socket.create_connection((host, port), timeout=timeout):
                    return
            except OSError as exc:
                reasons.append(f"{host}:{port}: {exc.strerror or type(exc).__name__}")
        raise StoreUnavailable(f"the Hive metastore service does not answer ({'; '.join(reasons)})")

    def spark_config(self, derby_home: Path) -> dict[str, str]:
        """Spark configuration of a session that reads this metastore (Hive support on)."""
        log4j = derby_home / "log4j2.properties"
        conf = {"spark.sql.catalogImplementation": "hive", "spark.ui.enabled": "false",
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={derby_home} "
                                                 f"-Dlog4j2.configurationFile={log4j.as_uri()}"}
        if self.metastore_db is not None:
            url = f"jdbc:derby:;databaseName={self.metastore_db.resolve()};create=false"
            conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = url
        if self.thrift is not None:
            conf["spark.hadoop.hive.metastore.uris"] = self.thrift
        warehouse = self.warehouse
        if warehouse is None and self.metastore_db is not None:
            warehouse = self.metastore_db.resolve().parent / "spark-warehouse"
        if warehouse is not None:
            conf["spark.sql.warehouse.dir"] = str(warehouse)
        return conf


def quiet_log4j(directory: Path) -> str:
    """Write :data:`QUIET_LOG4J` into ``directory``; the driver JVM option that selects it."""
    path = directory / "log4j2.properties"
    path.write_text(QUIET_LOG4J)
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


def open_hive_session(conn: HiveConnection) -> Any:
    """A local SparkSession reading ``conn``'s metastore. Fails with one clear line when the
    metastore cannot be opened (Derby held by another JVM, service unreachable)."""
    from pyspark.sql import SparkSession

    conn.validate()
    conn.check_reachable()
    derby_home = Path(tempfile.mkdtemp(prefix="ushas-hive-import-"))
    quiet_log4j(derby_home)  # errors only: the CLI prints its own lines
    builder = SparkSession.builder.master("local[1]").appName("ushas-import-hive")
    for key, value in conn.spark_config(derby_home).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark._jsparkSession.sessionState().catalog().externalCatalog().listDatabases()
    except Exception as exc:  # noqa: BLE001 - py4j's error carries the Java stack: reduce it to its cause
        spark.stop()
        raise StoreUnavailable(f"cannot open the Hive metastore: {_java_cause(exc)}") from None
    return spark


def _java_cause(exc: BaseException) -> str:
    text = str(exc)
    if "already booted" in text or "Another instance of Derby" in text:
        return "the Derby database is in use by another process (stop the Spark session that has it open)"
    if "Connection refused" in text or "Could not connect to meta store" in text:
        return "the metastore service does not answer"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    causes = [ln for ln in lines if ln.startswith("Caused by:")]
    return (causes[-1] if causes else lines[0] if lines else type(exc).__name__)[:300]


# ---- the import ------------------------------------------------------------------------------------
@dataclass
class Problem:
    """A table (or database) that was not imported, and why."""

    name: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


@dataclass
class ImportReport:
    catalog: str
    databases_created: list[str] = field(default_factory=list)
    databases_existing: list[str] = field(default_factory=list)
    tables_created: list[str] = field(default_factory=list)
    tables_existing: list[str] = field(default_factory=list)
    views_created: list[str] = field(default_factory=list)
    views_existing: list[str] = field(default_factory=list)
    partitions_added: int = 0
    partitions_existing: int = 0
    problems: list[Problem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog,
                "databases": {"created": self.databases_created, "existing": self.databases_existing},
                "tables": {"created": self.tables_created, "existing": self.tables_existing},
                "views": {"created": self.views_created, "existing": self.views_existing},
                "partitions": {"added": self.partitions_added, "existing": self.partitions_existing},
                "problems": [p.to_json() for p in self.problems]}

    def summary(self) -> str:
        lines = [f"imported into catalog {self.catalog!r}:",
                 f"  databases   {len(self.databases_created)} created, {len(self.databases_existing)} already there",
                 f"  tables      {len(self.tables_created)} created, {len(self.tables_existing)} already there",
                 f"  views       {len(self.views_created)} created, {len(self.views_existing)} already there",
                 f"  partitions  {self.partitions_added} added, {self.partitions_existing} already there"]
        if self.problems:
            lines.append(f"  not imported: {len(self.problems)}")
            lines += [f"    {p.name}: {p.reason}" for p in self.problems]
        return "\n".join(lines)


#: progress callback: (what was done, how many units) — the CLI draws a bar from it
Tick = Callable[[str], None]


def plan_size(source: HiveSource, databases: Iterable[HiveDatabase]) -> list[tuple[HiveDatabase, list[str]]]:
    """Every database with its table names (the unit of progress)."""
    return [(db, source.tables(db.name)) for db in databases]


def import_hive(metastore: Any, source: HiveSource, catalog: str = "hive", *,
                databases: Iterable[str] | None = None, tick: Tick | None = None,
                on_plan: Callable[[int], None] | None = None) -> ImportReport:
    """Import ``source`` into ``catalog`` of ``metastore``; returns what was done and what was not.

    ``databases`` limits the import to those Hive databases; ``on_plan(n)`` is told the number of
    tables once known and ``tick(name)`` after each table (progress)."""
    report = ImportReport(catalog)
    metastore.ensure_catalog(catalog)
    wanted = {d.lower() for d in databases} if databases is not None else None
    hive_dbs = [d for d in source.databases() if wanted is None or d.name.lower() in wanted]
    if wanted is not None:
        missing = sorted(wanted - {d.name.lower() for d in hive_dbs})
        for name in missing:
            report.problems.append(Problem(name, "no such database in the Hive metastore"))
    plan = plan_size(source, hive_dbs)
    if on_plan is not None:
        on_plan(sum(len(tables) for _, tables in plan))
    for db, tables in plan:
        if not _import_database(metastore, catalog, db, report):
            for name in tables:
                if tick is not None:
                    tick(f"{db.name}.{name}")
            continue
        for name in tables:
            try:
                table = source.table(db.name, name)
            except Exception as exc:  # noqa: BLE001 - Hive cannot describe it (missing serde class, corrupt entry, ...)
                report.problems.append(Problem(f"{db.name}.{name}", f"Hive cannot describe it: {_java_cause(exc)}"))
            else:
                if table.table_type == "VIEW":
                    _import_view(metastore, catalog, table, report)
                else:
                    _import_table(metastore, catalog, table, source, report)
            if tick is not None:
                tick(f"{db.name}.{name}")
    return report


def _import_database(metastore: Any, catalog: str, db: HiveDatabase, report: ImportReport) -> bool:
    full = f"{catalog}.{db.name}"
    try:
        if metastore.database_exists(full):
            report.databases_existing.append(db.name)
            return True
        metastore.create_database(full, comment=db.comment, location=db.location, properties=db.properties,
                                  owner=db.owner, if_not_exists=True)
    except UshasError as exc:
        report.problems.append(Problem(db.name, f"database not imported ({exc.type}: {exc.message}); "
                                                f"its tables were skipped"))
        return False
    report.databases_created.append(db.name)
    return True


#: the bucket spec of an imported Hive-format (serde) table, kept as a property (JSON): Spark reads such
#: tables without their buckets (Hive names bucket files its own way), so the catalog does too
HIVE_BUCKETING_PROPERTY = "ushas.import.hive_bucketing"


def table_bucketing(table: HiveTable) -> Any:
    """The bucketing an imported table gets: a Spark data source table's bucket spec (its files carry
    Spark's bucket file names), None for a Hive-format table (see :data:`HIVE_BUCKETING_PROPERTY`)."""
    from ..model.bucketing import Bucketing

    if table.bucketing is None or (table.provider or "hive").lower() == "hive":
        return None
    return Bucketing.from_json(table.bucketing)


def table_properties(table: HiveTable) -> dict[str, str]:
    """The properties an imported table gets: Hive's, less its bookkeeping, plus where it came from."""
    props = {k: v for k, v in table.properties.items()
             if k not in DROPPED_PROPERTIES and not k.startswith("spark.sql.statistics.")}
    for reserved in ("location", "comment", "owner", "provider", "external"):
        props.pop(reserved, None)
    props[SOURCE_PROPERTY] = f"hive:{table.qualified}"
    props[TYPE_PROPERTY] = table.table_type
    if table.bucketing is not None and (table.provider or "hive").lower() == "hive":
        props[HIVE_BUCKETING_PROPERTY] = json.dumps(table.bucketing, sort_keys=True)
    return props


def _import_table(metastore: Any, catalog: str, table: HiveTable, source: HiveSource,
                  report: ImportReport) -> None:
    name = f"{catalog}.{table.qualified}"
    fmt = catalog_format(table)
    if fmt is None:
        report.problems.append(Problem(table.qualified, f"unsupported storage {storage_name(table)} "
                                                        f"(the catalog stores parquet, orc, json and csv tables)"))
        return
    if not table.location:
        report.problems.append(Problem(table.qualified, "the table has no location"))
        return
    created = False
    try:
        if metastore.table_exists(name):
            existing = metastore.get_table(name)
            difference = _difference(existing, table, fmt)
            if difference:
                report.problems.append(Problem(table.qualified, f"already in the catalog with a different "
                                                                f"{difference}; left as it is"))
                return
        else:
            metastore.create_table(name, table.schema, partition_by=table.partition_columns, format=fmt,
                                   location=table.location, properties=table_properties(table),
                                   comment=table.comment, owner=table.owner, external=True,
                                   bucketing=table_bucketing(table))
            created = True
    except AlreadyExists:  # created meanwhile by someone else: compare on the next run
        report.problems.append(Problem(table.qualified, "created concurrently by another writer; run again"))
        return
    except UshasError as exc:
        report.problems.append(Problem(table.qualified, f"{exc.type}: {exc.message}"))
        return
    if table.partition_columns:
        try:
            added, existing_parts = _import_partitions(metastore, name, source.partitions(table.database, table.name))
        except Exception as exc:  # noqa: BLE001 - any failure (Hive, py4j, the store) is reported, the table undone
            reason = f"{exc.type}: {exc.message}" if isinstance(exc, UshasError) else _java_cause(exc)
            if created:
                metastore.drop_table(name, purge=True)  # no half-imported table stays behind
                report.problems.append(Problem(table.qualified, f"partitions not importable ({reason}); "
                                                                f"table not imported"))
            else:
                report.problems.append(Problem(table.qualified, f"some partitions not imported ({reason})"))
            return
        report.partitions_added += added
        report.partitions_existing += existing_parts
    (report.tables_created if created else report.tables_existing).append(table.qualified)


def _import_partitions(metastore: Any, name: str, partitions: Iterable[HivePartition]) -> tuple[int, int]:
    """Every partition of the table in ONE ``add_partitions`` call: a big table's are staged in
    bounded chunks and published together (:mod:`ushas_catalog.bulk`), so readers see none of them or
    all, and a crash leaves pending work that ``ushas repair --pending`` rolls back."""
    batch = [Partition(values=dict(p.spec), location=p.location, files=p.files, bytes=p.bytes, rows=p.rows)
             for p in partitions]
    if not batch:
        return 0, 0
    result = metastore.add_partitions(name, batch, if_not_exists=True)
    return result.added, result.skipped


def _difference(existing: Any, table: HiveTable, fmt: str) -> str | None:
    """What differs between a catalog table and the Hive table it would be imported from."""
    from ..model.schema import parse_schema

    if existing.schema.json_value() != parse_schema(table.schema).json_value():
        return "schema"
    if list(existing.partition_columns) != list(table.partition_columns):
        return "partitioning"
    if existing.format != fmt:
        return f"format ({existing.format}, Hive has {fmt})"
    if getattr(existing, "bucketing", None) != table_bucketing(table):
        return "bucketing"
    if (existing.location or "").rstrip("/") != (table.location or "").rstrip("/"):
        return f"location ({existing.location}, Hive has {table.location})"
    return None


def _view_columns(table: HiveTable) -> list[str]:
    count = _int_or_none(table.properties.get("view.query.out.numCols")) or 0
    return [table.properties.get(f"view.query.out.col.{i}", "") for i in range(count)]


def _import_view(metastore: Any, catalog: str, table: HiveTable, report: ImportReport) -> None:
    name = f"{catalog}.{table.qualified}"
    if not table.view_text:
        report.problems.append(Problem(table.qualified, "a view without SQL text"))
        return
    props = {k: v for k, v in table.properties.items()
             if not k.startswith("view.") and k not in DROPPED_PROPERTIES}
    props[SOURCE_PROPERTY] = f"hive:{table.qualified}"
    parts = _int_or_none(table.properties.get("view.catalogAndNamespace.numParts")) or 0
    namespace = [table.properties.get(f"view.catalogAndNamespace.part.{i}", "") for i in range(1, parts)]
    try:
        if metastore.view_exists(name):
            existing = metastore.get_view(name)
            if existing.sql != table.view_text:
                report.problems.append(Problem(table.qualified, "already in the catalog with different SQL; "
                                                                "left as it is"))
                return
            report.views_existing.append(table.qualified)
            return
        # names in the view text resolve in the import's catalog, where Hive's databases now are
        metastore.create_view(name, table.view_text, table.schema, comment=table.comment, properties=props,
                              current_catalog=catalog, current_namespace=namespace or ["default"],
                              query_column_names=_view_columns(table), owner=table.owner)
    except UshasError as exc:
        report.problems.append(Problem(table.qualified, f"{exc.type}: {exc.message}"))
        return
    report.views_created.append(table.qualified)


def default_derby_dir() -> Path:
    """``./metastore_db``: where pyspark creates its Derby metastore by default."""
    return Path(os.getcwd()) / "metastore_db"
