"""Spark: the session helper (:func:`configure`, :func:`register`, ``df.lineage()``) and the Python side of
the Java shim (bridge, ops, reads, writes, tables, cache, jar).

    from ushas_catalog.spark import configure
"""
from .session import configure, register

__all__ = ["configure", "register"]
