"""Ushas Catalog: a Spark catalog whose metadata lives in FoundationDB key paths.

The public API at the package top: ``Metastore`` and the table changes ``Metastore.alter_table`` takes
(``SetProperty``, ``AddColumn``, ...)::

    from ushas_catalog import Metastore, SetProperty, AddColumn
    ms = Metastore.open("sqlite:///path/ushas.db")
    ms.alter_table("c.db.t", [SetProperty("owner.team", "data"), AddColumn(("note",), "string")])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time the names load on first use
    from .metastore import Metastore
    from .model.table_changes import (AddColumn, ColumnPosition, DeleteColumn, RemoveProperty, RenameColumn,
                                      SetComment, SetLocation, SetOwner, SetProperty, TableChange,
                                      UpdateColumnComment, UpdateColumnNullability, UpdateColumnPosition,
                                      UpdateColumnType)

from .version import __version__

#: the table changes of ``Metastore.alter_table`` (``ushas_catalog.model.table_changes``), mirroring Spark's
TABLE_CHANGES = ("ColumnPosition", "AddColumn", "DeleteColumn", "RenameColumn", "UpdateColumnType",
                 "UpdateColumnComment", "UpdateColumnNullability", "UpdateColumnPosition", "SetProperty",
                 "RemoveProperty", "SetLocation", "SetComment", "SetOwner", "TableChange")

__all__ = ["Metastore", "__version__", "ColumnPosition", "AddColumn", "DeleteColumn", "RenameColumn",
           "UpdateColumnType", "UpdateColumnComment", "UpdateColumnNullability", "UpdateColumnPosition",
           "SetProperty", "RemoveProperty", "SetLocation", "SetComment", "SetOwner", "TableChange"]


def __getattr__(name: str) -> Any:  # lazy: importing the package must not import pyspark or protobuf
    if name == "Metastore":
        from .metastore import Metastore

        return Metastore
    if name in TABLE_CHANGES:
        from .model import table_changes

        return getattr(table_changes, name)
    raise AttributeError(name)
