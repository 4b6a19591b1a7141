"""The Spark settings the JVM shim reads, in one list: the options of a catalog instance
(``spark.sql.catalog.<name>.<key>``) and the session-wide ``spark.ushas.*`` settings, with their defaults
as a ``spark-defaults.conf`` line would write them. ``ushas spark-conf`` prints a configuration from it;
a test compares it with the Java sources and with ``spark-defaults.conf.example`` and ``conf/``, so the
three never drift apart.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

CATALOG_CLASS = "io.ushas.spark.UshasCatalog"
COMMIT_PROTOCOL_CLASS = "io.ushas.spark.UshasCommitProtocol"
LISTENER_CLASS = "io.ushas.spark.UshasLineageListener"
EXTENSIONS_CLASS = "io.ushas.spark.UshasExtensions"
#: df.lineage() for Spark Connect clients: the server's relation plugin (lineage.connect)
CONNECT_LINEAGE_PLUGIN_CLASS = "io.ushas.spark.connect.LineageRelationPlugin"
CONNECT_RELATION_PLUGINS = "spark.connect.extensions.relation.classes"


@dataclass(frozen=True)
class SparkOption:
    """One setting: its key (relative to ``spark.sql.catalog.<name>.`` for a catalog option), its default
    as written in a conf file (``None``: required, or computed as ``help`` says) and what it does."""

    key: str
    default: str | None
    help: str


#: ``spark.sql.catalog.<name>.<key>`` options the shim reads (UshasCatalog.initialize, Bridge.BridgeOptions,
#: and the ``cache.*`` options it hands to Python's CacheSettings)
CATALOG_OPTIONS: tuple[SparkOption, ...] = (
    SparkOption("uri", None, "the store: sqlite:///path/ushas.db or fdb:///path/fdb.cluster, or the catalog "
                            "service: http(s)://host:port (required)"),
    SparkOption("token", None, "remote mode (an http(s):// uri): the service's token (default: .token-file, "
                               "then the USHAS_TOKEN environment variable; docs/service.md)"),
    SparkOption("token-file", None, "remote mode: a file holding the service's token"),
    SparkOption("direct", "true", "remote mode: the shim sends read ops to the service itself (false: every "
                                  "call through the driver's Python; docs/service.md)"),
    SparkOption("project", "default", "the tenant project"),
    SparkOption("create", "false", "create the store when it does not exist (else a missing store is an error "
                                   "naming the uri; configure() sets true)"),
    SparkOption("catalog", None, "the metastore catalog (default: the Spark catalog name)"),
    SparkOption("branch", "main", "the branch of the metastore catalog this Spark catalog reads and writes "
                                  "(docs/branches.md)"),
    SparkOption("warehouse", None, "where managed tables' data goes (default: <spark.sql.warehouse.dir>/<name>)"),
    SparkOption("python", None, "the interpreter of the bridge (default: spark.pyspark.python, PYSPARK_PYTHON, "
                                "python3)"),
    SparkOption("bridge", "auto", "auto: start a bridge process when no PySpark backend registered; pyspark: "
                                  "wait for the PySpark process to register"),
    SparkOption("bridge.timeout", "60", "seconds one catalog call may take before Spark gets an error"),
    SparkOption("bridge.startTimeout", "60", "seconds the bridge process may take to start"),
    SparkOption("bridge.livenessTimeout", "5", "seconds a liveness ping may take while a call waits"),
    SparkOption("cache.enabled", "true", "the lookup cache (coherent: one version read per cached lookup)"),
    SparkOption("cache.ttl", "10min", "idle expiry of a cached entry (0 = none)"),
    SparkOption("cache.size", "1000", "cached entries"),
    SparkOption("cache.check", "true", "check a cached entry's version on every lookup (false: TTL only, not "
                                       "coherent with other drivers)"),
)

#: older spellings the shim still reads: key -> the current key
LEGACY_CATALOG_OPTIONS: dict[str, str] = {"timeout": "bridge.timeout", "startTimeout": "bridge.startTimeout"}

#: session-wide settings (full keys) the shim reads
SESSION_OPTIONS: tuple[SparkOption, ...] = (
    SparkOption("spark.ushas.lineage.catalog", None, "the catalog whose store receives lineage (default: the "
                                                     "first Ushas catalog by name)"),
    SparkOption("spark.ushas.lineage.queueSize", "1000", "lineage executions queued before drops"),
    SparkOption("spark.ushas.lineage.inlinePlanChars", "3000", "plans larger than this go through a temp file"),
    SparkOption("spark.ushas.lineage.retryTimeout", "30", "seconds the listener retries an unreachable bridge"),
    SparkOption("spark.ushas.lineage.shutdownTimeout", "10", "seconds to drain lineage at application end"),
    SparkOption("spark.ushas.lineage.openlineage.url", None, "also send every run as OpenLineage events to this "
                                                             "http(s) URL (Marquez, DataHub, ushas serve)"),
    SparkOption("spark.ushas.lineage.openlineage.apiKey", None, "sent as Authorization: Bearer <apiKey>"),
    SparkOption("spark.ushas.lineage.openlineage.timeout", "5", "seconds one OpenLineage POST may take"),
    SparkOption("spark.ushas.lineage.openlineage.endpoint", "/api/v1/lineage", "the path events are POSTed to"),
    SparkOption("spark.ushas.repair.listingThreads", "16", "threads listing partition directories in MSCK REPAIR"),
)


def catalog_option(key: str) -> SparkOption | None:
    return next((o for o in CATALOG_OPTIONS if o.key == key), None)


def session_option(key: str) -> SparkOption | None:
    return next((o for o in SESSION_OPTIONS if o.key == key), None)


@dataclass(frozen=True)
class SparkConfRequest:
    """What ``ushas spark-conf`` is asked for."""

    uri: str
    name: str = "ushas"
    project: str = "default"
    warehouse: str | None = None
    catalog: str | None = None
    lineage: bool = True
    branch: str | None = None


def spark_conf(req: SparkConfRequest, jar: str, python: str = sys.executable) -> list[tuple[str, str]]:
    """The ``spark-defaults.conf`` settings of one Ushas catalog, in order: the shim jar, the bridge's
    interpreter, the catalog and its options, the commit protocol, the session extension and the listener."""
    prefix = f"spark.sql.catalog.{req.name}"
    out = [("spark.jars", jar), ("spark.pyspark.python", python), (prefix, CATALOG_CLASS),
           (f"{prefix}.uri", req.uri), (f"{prefix}.project", req.project)]
    if req.catalog:
        out.append((f"{prefix}.catalog", req.catalog))
    if req.branch and req.branch != "main":
        out.append((f"{prefix}.branch", req.branch))
    if req.warehouse:
        out.append((f"{prefix}.warehouse", req.warehouse))
    out += [("spark.sql.sources.commitProtocolClass", COMMIT_PROTOCOL_CLASS),
            ("spark.sql.extensions", EXTENSIONS_CLASS)]
    if req.lineage:
        out.append(("spark.sql.queryExecutionListeners", LISTENER_CLASS))
    return out


def format_conf(settings: list[tuple[str, str]]) -> str:
    """Settings as ``spark-defaults.conf`` lines (key, spaces, value)."""
    width = max((len(k) for k, _ in settings), default=0) + 2
    return "".join(f"{k.ljust(width)}{v}\n" for k, v in settings)
