"""PySpark helper: configure a ``SparkSession.builder`` for an Ushas catalog.

    from pyspark.sql import SparkSession
    from ushas_catalog.spark import configure

    spark = configure(SparkSession.builder, name="ushas", uri="sqlite:///tmp/ushas.db",
                      warehouse="/tmp/warehouse").getOrCreate()
    spark.sql("CREATE NAMESPACE ushas.sales")

``configure`` adds the shim jar to ``spark.jars``, declares the catalog
(``spark.sql.catalog.<name>=io.ushas.spark.UshasCatalog`` with ``.uri``, ``.project``,
``.warehouse``), the commit protocol that registers written partitions, the session extension
(``spark.sql.extensions=io.ushas.spark.UshasExtensions``: MSCK REPAIR TABLE and ALTER TABLE ...
RECOVER PARTITIONS on the catalog's tables) and, when the jar has it, the lineage listener. The
builder it returns registers this Python process as the catalog's backend right after
``getOrCreate()`` (over the session's own Py4J gateway), so no second Python process is started.
For a session built another way, call :func:`register` once; without it the shim starts
``python -m ushas_catalog.bridge`` itself.
"""
from __future__ import annotations

import functools
import zipfile
from typing import Any

from .options import (CATALOG_CLASS, COMMIT_PROTOCOL_CLASS, CONNECT_LINEAGE_PLUGIN_CLASS, CONNECT_RELATION_PLUGINS,
                      EXTENSIONS_CLASS, LISTENER_CLASS)


def _jar_has(jar: str, cls: str) -> bool:
    with zipfile.ZipFile(jar) as z:
        return cls.replace(".", "/") + ".class" in z.namelist()


def configure(builder: Any, name: str = "ushas", uri: str | None = None, project: str = "default",
              warehouse: str | None = None, catalog: str | None = None, lineage: bool | None = None,
              timeout: int | None = None, create: bool = True) -> Any:
    """Configure ``builder`` for the catalog ``name`` and return it.

    ``uri``: the store (``sqlite:///path/ushas.db``, ``fdb:///path/fdb.cluster``, ...; default ``USHAS_URI``,
    else ``sqlite:///$XDG_DATA_HOME/ushas/ushas.db``: :mod:`ushas_catalog.store_location`); ``create``: create
    the store when it does not exist (``spark.sql.catalog.<name>.create``; Spark logs it when it does);
    ``project``: the tenant; ``warehouse``: where managed tables' data goes (default:
    ``<spark.sql.warehouse.dir>/<name>``); ``catalog``: the metastore catalog (default ``name``);
    ``lineage``: add the lineage listener (default: when the jar has it); ``timeout``: seconds
    a catalog call may take before Spark gets an error (``bridge.timeout``, default 60)."""
    from ..errors import InvalidArgument
    from .jar import jar_path

    from ..store_location import default_uri

    uri = uri or default_uri()
    if "://" not in uri:
        raise InvalidArgument(f"configure(): invalid store uri {uri!r}, e.g. sqlite:///path/ushas.db")
    jar = str(jar_path())
    options: dict[str, Any] = getattr(builder, "_options", {})
    jars = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    if jar not in jars:
        jars.append(jar)
    builder = builder.config("spark.jars", ",".join(jars))
    prefix = f"spark.sql.catalog.{name}"
    builder = builder.config(prefix, CATALOG_CLASS).config(f"{prefix}.uri", uri).config(f"{prefix}.project", project)
    builder = builder.config(f"{prefix}.create", "true" if create else "false")
    if warehouse:
        builder = builder.config(f"{prefix}.warehouse", warehouse)
    if catalog:
        builder = builder.config(f"{prefix}.catalog", catalog)
    if timeout:
        builder = builder.config(f"{prefix}.bridge.timeout", str(int(timeout)))
    builder = builder.config("spark.sql.sources.commitProtocolClass", COMMIT_PROTOCOL_CLASS)
    builder = builder.config("spark.sql.extensions", _with(options.get("spark.sql.extensions"), EXTENSIONS_CLASS))
    if lineage is None:
        lineage = _jar_has(jar, LISTENER_CLASS)
    if lineage:
        builder = builder.config("spark.sql.queryExecutionListeners",
                                 _with(options.get("spark.sql.queryExecutionListeners"), LISTENER_CLASS))
        builder = builder.config(CONNECT_RELATION_PLUGINS, _with(options.get(CONNECT_RELATION_PLUGINS),
                                                                 CONNECT_LINEAGE_PLUGIN_CLASS))
    if not getattr(builder, "_ushas_registers", False):
        original = builder.getOrCreate
        builder.getOrCreate = functools.partial(_get_or_create, original)  # this builder only
        builder._ushas_registers = True
    return builder


def _with(classes: Any, cls: str) -> str:
    """A comma-separated class list (a Spark setting) with ``cls`` added once."""
    names = [x.strip() for x in str(classes or "").split(",") if x.strip()]
    if cls not in names:
        names.append(cls)
    return ",".join(names)


def _get_or_create(original: Any) -> Any:
    session = original()
    register(session)
    return session


def register(spark: Any) -> None:
    """Make this Python process the catalog backend of ``spark``'s JVM (idempotent). A Spark Connect
    session has a JVM here only when it is local (``spark.api.mode=connect``); a remote server's shim
    starts its own bridge."""
    from pyspark.java_gateway import ensure_callback_server_started

    from .bridge import Backend
    from .connect import local_gateway

    gateway = local_gateway(spark)
    if gateway is None:
        return
    ensure_callback_server_started(gateway)
    jvm_bridge = gateway.jvm.io.ushas.spark.Bridge
    jvm_bridge.register(Backend())
