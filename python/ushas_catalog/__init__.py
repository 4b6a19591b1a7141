"""Ushas Catalog: a Spark catalog whose metadata lives in FoundationDB key paths."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Metastore", "__version__"]


def __getattr__(name: str):  # lazy: importing the package must not import pyspark or protobuf
    if name == "Metastore":
        from .metastore import Metastore

        return Metastore
    raise AttributeError(name)
