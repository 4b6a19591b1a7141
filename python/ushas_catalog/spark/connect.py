"""Spark Connect sessions in the session helper: a Connect session has no JVM in this process,
except a local one (``spark.api.mode=connect``, ``master("local…")``), whose server pyspark runs
in a classic SparkContext of this process; the catalog's backend registers there."""
from __future__ import annotations

from typing import Any


def is_connect_session(spark: Any) -> bool:
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's dependencies are not installed: not a Connect session
        return False
    return isinstance(spark, ConnectSession)


def local_gateway(spark: Any) -> Any | None:
    """The Py4J gateway of ``spark``'s JVM when it runs in this process, else None (a remote server)."""
    if not is_connect_session(spark):
        return spark.sparkContext._gateway
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    return sc._gateway if sc is not None else None
