"""Spark: the session helper (:func:`configure`, :func:`register`, ``df.lineage()``) and the Python side of
the Java shim (bridge, ops, reads, writes, tables, cache, jar).

    from ushas_catalog.spark import configure
"""
from .dataframe_hook import install as _install_dataframe_lineage
from .options import CATALOG_CLASS, COMMIT_PROTOCOL_CLASS, EXTENSIONS_CLASS, LISTENER_CLASS
from .session import configure, register

_install_dataframe_lineage()  # df.lineage() for users of this helper, without loading pyspark here

__all__ = ["configure", "register", "CATALOG_CLASS", "COMMIT_PROTOCOL_CLASS", "EXTENSIONS_CLASS", "LISTENER_CLASS"]
